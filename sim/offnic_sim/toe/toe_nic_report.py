"""`./offnic bench toe --part nic`, host side: runs toe_nic_bench.py on the `nic-toe` build
(the whole NIC with the TCP engine inside, 64 connections) on the fast harness and writes
results/bench-toe-nic.json and .png (docs/toe.md, "The engine in the NIC: figures").
The block-level part (`--part blocks`, results/bench-toe.json) is toe_report.py.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from offnic_sim.bench import results_file
from offnic_sim.harness import hw

ROOT = hw.ROOT
CASES = ("table1", "one_conn", "handoffs")
CONFIG = "nic-toe"

# Seed 004 (the connection-handoff policies paper, shared/seeds/004_*), Table 1: median
# host-packet delay on the NIC for a simulated web server with 2048 connections.
SEED_TABLE1 = [
    {"offloaded": 0, "priority": "no handoff", "send_us": 2, "receive_us": 2, "nic_idle_pct": 62},
    {"offloaded": 256, "priority": "FCFS", "send_us": 3, "receive_us": 3, "nic_idle_pct": 49},
    {"offloaded": 1024, "priority": "FCFS", "send_us": 679, "receive_us": 301, "nic_idle_pct": 3},
    {"offloaded": 1024, "priority": "Host first", "send_us": 10, "receive_us": 6, "nic_idle_pct": 5},
]
GOAL = ("host-first at saturation (and under a flood of handoff commands): median host-packet delay at most +10% "
        "over (a) nothing offloaded")

LEAVES_OUT = [
    "the peers are a Python packet generator (go-back-N from the engine's last cumulative ACK after 10 us "
    "without progress; the one-connection transmit case ACKs every second segment), not TcpPeer or Linux: no "
    "congestion control, no loss on the wire",
    "host memory is ideal behind a fixed 1 us read latency (the fast harness's C++ host), PCIe Gen3 x8 with "
    "MPS 256 / MRRS 512; no IOMMU, no cache effects, no DLLPs counted (the fast tap's arithmetic)",
    "host packets are tagged frames of a local EtherType (the engine's lookup parses them as 'other'), one "
    "512-byte frame per port and direction per microsecond; no host TCP stack",
    "commands and notifications go through the interim register window: a poller pops notifications over "
    "MMIO every 2 us (counted as 'toe:window' PCIe bytes); the issue's path (completions and events, "
    "aggregated) is not built, so the offload's PCIe figure is given with and without that traffic",
    "the engine's clock is real time (cycles_per_us 250); delayed ACK 200 us instead of Linux's 40 ms",
    "host-path comparison: frames of the same size (66 B of headers + MSS) through TX/RX queues and one 66-byte "
    "ACK frame per two segments the other way, with no host stack (no CPU cost, no socket copies)",
    "goodput is measured event to event inside the window (first to last delivery in it), so no figure can "
    "run ahead of the deliveries; Table 1's offload goodput counts the engine's cumulative ACKs on the wire "
    "over the window, and every receive ring is compared byte for byte up to the last ACK",
]


LOAD_LABEL = {"none": "(a) nothing offloaded", "moderate": "(b) moderate", "saturated": "(c) saturated",
              "saturated_128": "(c2) saturated, 128-byte segments", "saturated_port0": "(c') saturated, port 0 only",
              "commands": "(d) handoff commands flooding"}
LOADS = ["none", "moderate", "saturated", "saturated_128", "saturated_port0", "commands"]


def design() -> hw.Design:
    return hw.load_config(CONFIG)[0]


def plot(doc: dict, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(22, 4.4), gridspec_kw={"width_ratios": [3, 3, 3, 1.6]})
    t1 = doc.get("table1") or []
    for ax, way in zip(axes[:2], ("host_rx", "host_tx")):
        labels = [f"{LOAD_LABEL[r['load']].split(')')[0]})\n{'host 1st' if r['mode'] == 'host_first' else 'FCFS'}"
                  for r in t1]
        x = range(len(t1))
        med = [(r[way]["median_ns"] or 0) / 1000 for r in t1]
        p99 = [(r[way]["p99_ns"] or 0) / 1000 for r in t1]
        ax.bar([i - 0.2 for i in x], med, width=0.4, label="median")
        ax.bar([i + 0.2 for i in x], p99, width=0.4, label="p99")
        ax.set_xticks(list(x), labels, fontsize=7)
        if way == "host_rx":
            ax.set_yscale("log")
        ax.set_ylabel("us")
        ax.set_xlabel("(a) nothing offloaded, (b) moderate, (c) saturated (64-byte segments), (c2) with 128-byte "
                      "ones, (c') port 0 only, (d) installs and restores back to back", fontsize=7)
        what = "RX: last byte on the wire to completion record" if way == "host_rx" else "TX: doorbell to first byte on the wire"
        ax.set_title(f"Host packets crossing the NIC ({what})", fontsize=8)
        ax.legend(fontsize=7)
    ax = axes[2]
    oc = doc.get("one_conn") or []
    x = range(len(oc))
    ax.bar([i - 0.2 for i in x], [r["gbps"] for r in oc], width=0.4, label="goodput Gb/s (checked)")
    ax.bar([i + 0.2 for i in x], [r["line_goodput_gbps"] for r in oc], width=0.4, label="25G line goodput")
    for i, r in enumerate(oc):
        ax.annotate(f"{r['pcie_bytes_per_payload_byte']:.2f}\nPCIe B/B", (i, r["gbps"]), ha="center", va="bottom",
                    fontsize=6)
    ax.set_xticks(list(x), [f"{r['path']} {r['direction']}\nMSS {r['mss']}" for r in oc], fontsize=6)
    ax.set_ylabel("Gb/s")
    ax.set_ylim(0, 30)
    ax.set_title("One connection, rings in host memory (1 us reads) vs the host path", fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    ax = axes[3]
    h = doc.get("handoffs")
    if h:
        seq, pipe = h["sequential"], h["pipelined"]
        bars = [("one at a time\n(reserve, complete,\nrestore)", seq["handoffs_per_s"]),
                ("pipelined\ninstalls", pipe["installs_per_s"]), ("pipelined\nrestores", pipe["restores_per_s"]),
                ("pipelined\nhandoffs", pipe["handoffs_per_s"])]
        ax.bar(range(len(bars)), [v / 1000 for _, v in bars])
        for i, (_, v) in enumerate(bars):
            ax.annotate(f"{v / 1000:.0f}k", (i, v / 1000), ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(bars)), [n for n, _ in bars], fontsize=6)
        ax.set_ylabel("thousands per second")
        ax.set_title("Handoffs through the TX queues (idle NIC)", fontsize=8)
    else:
        ax.axis("off")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def table(doc: dict) -> str:
    lines = []
    t1 = doc.get("table1") or []
    if t1:
        lines += ["| load | mode | offloaded | host RX median / p99 us | host TX median / p99 us | Qlen max / mean | "
                  "NIC-packet drops | port FIFO drops | offload goodput / offered Gb/s (checked) | host frames lost |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in t1:
            rx, tx = r["host_rx"], r["host_tx"]

            def us(v):
                return "-" if v is None else f"{v / 1000:.2f}"
            lines.append(f"| {LOAD_LABEL[r['load']]} | {r['mode']} | "
                         f"{r['offloaded_connections']} | {us(rx['median_ns'])} / {us(rx['p99_ns'])} | "
                         f"{us(tx['median_ns'])} / {us(tx['p99_ns'])} | {r['qlen_max']} / {r['qlen_mean']} | "
                         f"{r['nic_packet_drops']} | {r['port_fifo_drops']} | {r['offload_goodput_gbps']} / "
                         f"{r['offload_offered_gbps']} | "
                         f"{rx['lost']} of {rx['frames']} RX, {tx['missing_or_wrong_port']} of {tx['frames']} TX |")
        for r in t1:
            if r.get("commands_flooded"):
                f = r["commands_flooded"]
                lines.append(f"\n{LOAD_LABEL[r['load']]}, {r['mode']}: {f['commands']} commands ({f['per_s']} per s, "
                             f"installs and restores, every answer checked); engine DMA descriptors admitted while a "
                             f"host one waited: {r['counters'].get('dma_eng_over_host', 0)}")
        for load, g in (doc.get("goal") or {}).items():
            lines.append(f"\ngoal ({GOAL}), {LOAD_LABEL[load]}: {g['verdict']} (RX {g['rx_rise_pct']:+}%, "
                         f"TX {g['tx_rise_pct']:+}%)")
    oc = doc.get("one_conn") or []
    if oc:
        lines += ["", "| path | direction | MSS | goodput Gb/s (checked) | 25G line goodput | % of line | "
                  "PCIe B per payload B | without the window's MMIO |", "|---|---|---|---|---|---|---|---|"]
        for r in oc:
            lines.append(f"| {r['path']} | {r['direction']} | {r['mss']} | {r['gbps']} | {r['line_goodput_gbps']} | "
                         f"{r['line_rate_pct']} | {r['pcie_bytes_per_payload_byte']} | "
                         f"{r.get('pcie_bytes_per_payload_byte_without_window', '-')} |")
    h = doc.get("handoffs")
    if h:
        seq, pipe = h["sequential"], h["pipelined"]
        lines += ["", "| handoffs through the TX queues | median / p99 us | per second |", "|---|---|---|"]
        for k in ("reserve", "complete", "restore", "handoff_cycle"):
            lines.append(f"| {k.replace('_', ' ')} (one at a time, {seq['connections']} connections) | "
                         f"{seq[k]['median_us']} / {seq[k]['p99_us']} | "
                         f"{seq['handoffs_per_s'] if k == 'handoff_cycle' else '-'} |")
        lines.append(f"| {pipe['connections']} installs, one doorbell | {pipe['install_batch_us']} (batch) | "
                     f"{pipe['installs_per_s']} |")
        lines.append(f"| their restores, one doorbell | {pipe['restore_batch_us']} (batch) | {pipe['restores_per_s']} |")
        lines.append(f"| install + restore, pipelined | - | {pipe['handoffs_per_s']} |")
        lines.append(f"\nPCIe bytes per command (descriptor, block read, answer write, completion, event): "
                     f"{h['pcie_bytes_per_command']}")
    return "\n".join(lines)


def goal(t1: list[dict]) -> dict | None:
    """The issue's goal per saturated load: host first's median host delay against (a)'s."""
    a = next((r for r in t1 if r["load"] == "none" and r["mode"] == "host_first"), None)
    if not a or a["host_rx"]["median_ns"] is None:
        return None
    out = {}
    for c in t1:
        if c["load"] not in ("saturated", "saturated_128", "saturated_port0", "commands") or c["mode"] != "host_first" \
                or c["host_rx"]["median_ns"] is None:
            continue
        rx = 100 * (c["host_rx"]["median_ns"] / a["host_rx"]["median_ns"] - 1)
        tx = 100 * (c["host_tx"]["median_ns"] / a["host_tx"]["median_ns"] - 1)
        out[c["load"]] = {"rx_rise_pct": round(rx, 1), "tx_rise_pct": round(tx, 1),
                          "verdict": "met" if rx <= 10 and tx <= 10 else "NOT met"}
    return out or None


def main(args: list[str], rel=str) -> int:
    from offnic_sim.harness.runner import run_cocotb
    ap = argparse.ArgumentParser(prog="offnic bench toe --part nic", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=None, help="JSON (default results/bench-toe-nic.json; with --only or "
                    "--quick build/bench/bench-toe-nic.json)")
    ap.add_argument("--only", default=None, help="comma-separated cases of " + ",".join(CASES))
    ap.add_argument("--window-us", type=float, default=300.0, help="Table 1's measured window per phase after a "
                    "20 us warm-up (default 300)")
    ap.add_argument("--one-window-us", type=float, default=300.0,
                    help="the one-connection cases' window after a 20 us warm-up (default 300)")
    ap.add_argument("--quick", action="store_true", help="short windows, MSS 1448 only (a smoke run)")
    a = ap.parse_args(args)
    t0 = time.monotonic()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    only = a.only.split(",") if a.only else list(CASES)
    if set(only) - set(CASES):
        ap.error(f"unknown cases {sorted(set(only) - set(CASES))}; cases: {','.join(CASES)}")
    partial = bool(a.only) or a.quick
    out = Path(a.out) if a.out else (hw.BUILD / "bench" if partial else ROOT / "results") / "bench-toe-nic.json"
    out = out if out.is_absolute() else Path.cwd() / out
    work = hw.BUILD / "bench-toe"
    work.mkdir(parents=True, exist_ok=True)
    raw = work / "nic.json"
    raw.unlink(missing_ok=True)
    cfg = {"out": str(raw), "seed": seed, "cases": only, "warm_us": 20.0,
           "window_us": 40.0 if a.quick else a.window_us, "one_warm_us": 20.0,
           "one_window_us": 40.0 if a.quick else a.one_window_us, "mss": [1448] if a.quick else [1448, 8948],
           "handoff_seq": 8 if a.quick else 32, "handoff_pipe": 16 if a.quick else 48}
    cfg["loads"] = ["none", "saturated"] if a.quick else LOADS
    d = design()
    print(f"[offnic] bench toe --part nic: {', '.join(only)} on {CONFIG} (fast harness), seed {seed}", flush=True)
    run_cocotb(d, "offnic_sim.toe.toe_nic_bench", testcase="nic", bench=cfg, fast=True)
    res = json.loads(raw.read_text())
    doc = {"command": " ".join(["./offnic", "bench", "toe", "--part", "nic", *args]), "seed": seed,
           "replay": f"./offnic bench toe --part nic --seed {seed}" + "".join(f" {x}" for x in args
                                                                            if not x.startswith("--seed")),
           "config": CONFIG, "harness": "fast", "host_latency_ns": res["host_latency_ns"], "settings": cfg,
           "sim_us": res["sim_us"], "hw_sources_sha256": hw.hw_sources_digest(),
           "leaves_out": LEAVES_OUT, "seed_004_table1": SEED_TABLE1, "goal": None}
    if "table1" in res:
        doc["table1"] = res["table1"]
        doc["goal"] = goal(res["table1"])
    if "one_conn" in res:
        doc["one_conn"] = res["one_conn"]
    if "handoffs" in res:
        doc["handoffs"] = res["handoffs"]
    results_file.write(doc, out, [d], plot, table, rel, t0)
    return 0
