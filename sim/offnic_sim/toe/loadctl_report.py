"""`./offnic bench loadctl`, host side: seed 004's Figure 6 on our hardware. Runs
loadctl_bench.py twice on the `nic-toe` build (the NIC with the TCP engine at 64
connections and the control processor running the default firmware image), load control
on and off, and writes results/bench-loadctl.json and .png (docs/toe.md, "Load control:
seed 004's Figure 6").
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from offnic_sim.bench import results_file
from offnic_sim.harness import hw
from offnic_sim.toe.toe_nic_report import CONFIG, design

ROOT = hw.ROOT

# The offered load. Per connection one 64-byte segment every 4 us (0.25 M/s): 64
# connections offer 16 M segments/s, above the engine's ~11-13 M decisions/s measured by
# bench toe --part nic (docs/toe.md), 24 offer 6 M/s, well inside it.
FULL = dict(phases=[["low", 300, 24], ["high", 1500, 96], ["low again", 700, 24]], life_segments=[40, 160])
QUICK = dict(phases=[["low", 60, 24], ["high", 360, 96], ["low again", 120, 24]], life_segments=[16, 48])
COMMON = dict(segment_period_us=4, stall_us=30)

# Seed 004 (shared/seeds/004_*), §5.1 and Figure 6 (W-4096-P-L-FCFS-400): a NIC holding up
# to 4096 connections, 2048 handed off at first; load control brings Cnum down to about
# 1000 to keep the receive queue under its threshold of 1024.
SEED_FIG6 = {"hard_limit": 4096, "offered_at_first": 2048, "settles_near": 1000, "queue_threshold": 1024,
             "configuration": "W-4096-P-L-FCFS-400 (host first, load control, FCFS selection)"}

LEAVES_OUT = [
    "the peers are a Python packet generator: one 64-byte segment every 4 us per connection, go-back-N from the "
    "engine's last cumulative ACK after 30 us without progress; no congestion control, no loss on the wire but "
    "the NIC's own drops; the data flows one way (peer to NIC); the engine sends only ACKs",
    "connections end by the peer's exact RST once the engine has acknowledged its last byte (the engine closes and "
    "deletes them: Cnum falls); a FIN exchange with the host's close is not modelled",
    "connection lives are scaled: 40-160 segments (160-640 us) rather than the seed's seconds; the delayed ACK is "
    "20 us (Linux: 40 ms) so the last odd segment is acknowledged within a life; the engine's clock is real "
    "time (cycles_per_us 250)",
    "connections on the host (not offered, or refused) send nothing through the NIC here: the host's traffic is "
    "the probe frames (one 512-byte tagged frame per port per microsecond, Table 1's probe), so host-packet "
    "delay is the probe's RX delay (last byte on the wire to its completion record on PCIe); no host TCP stack, "
    "no host CPU",
    "the driver hears of Soft_limit changes by polling the firmware's event register every 10 us (firmware "
    "events do not raise event-queue interrupts yet); the engine's notifications arrive as events",
    "commands through the interim register window, one at a time; host memory ideal behind a fixed 1 us read "
    "latency (the fast harness's C++ host); host-first packet processing in both runs, as the seed's "
    "Figure 6",
    "64 connections (nic-toe's Hard_limit) and a 64-frame NIC-packet queue, against the seed's 4096 and 1024+; "
    "the firmware's default watermarks (Hiwat 48, Lowat 16) and steps (1 connection), not tuned",
]


def plot(doc: dict, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = {r["load_control"]: r for r in doc["runs"]}
    fig, axes = plt.subplots(4, 1, figsize=(11, 11), sharex=True)
    style = {True: dict(color="tab:blue", label="load control on"), False: dict(color="tab:red", label="load control off")}
    for on, r in runs.items():
        ws = r["windows"]
        t = [w["t_us"] / 1000 for w in ws]
        st = style[on]
        axes[0].plot(t, [w["soft_limit"] for w in ws], color=st["color"], lw=2, label=f"Soft_limit ({st['label']})")
        axes[0].plot(t, [w["cnum"] for w in ws], color=st["color"], lw=1, ls="--", label=f"Cnum ({st['label']})")
        axes[1].plot(t, [w["qlen_max"] for w in ws], color=st["color"], lw=1, label=f"max ({st['label']})")
        axes[1].plot(t, [w["qlen_mean"] for w in ws], color=st["color"], lw=1, ls=":", label=f"mean ({st['label']})")
        axes[2].plot(t, [w["nic_drops"] for w in ws], color=st["color"], label=st["label"])
        axes[3].plot(t, [(w["host_rx_median_ns"] or 0) / 1000 for w in ws], color=st["color"], lw=1,
                     label=f"median ({st['label']})")
        axes[3].plot(t, [(w["host_rx_p99_ns"] or 0) / 1000 for w in ws], color=st["color"], lw=1, ls=":",
                      label=f"p99 ({st['label']})")
    r0 = next(iter(runs.values()))
    xs, ys, a = [], [], 0.0
    for ph in r0["phases"]:
        xs += [a / 1000, (a + ph["us"]) / 1000]
        ys += [ph["population"], ph["population"]]
        a += ph["us"]
    axes[0].plot(xs, ys, color="grey", lw=1, label="connections alive (the population)")
    lc = runs.get(True, r0)["lc_settings"]
    axes[1].axhline(lc["hiwat"], color="grey", ls="--", lw=0.8, label=f"Hiwat {lc['hiwat']} (on)")
    axes[1].axhline(lc["lowat"], color="grey", ls=":", lw=0.8, label=f"Lowat {lc['lowat']} (on)")
    axes[0].set_ylabel("connections")
    axes[0].set_title(f"Seed 004 Figure 6 on {CONFIG}: Soft_limit and Cnum (Hard_limit {lc['hard_limit']})", fontsize=9)
    axes[1].set_ylabel("Qlen (NIC packets)")
    axes[1].set_title(f"NIC-packet queue ({lc['queue_size']} frames), sampled every 2 us; per 20 us window", fontsize=9)
    axes[2].set_ylabel("drops / 20 us")
    axes[2].set_title("NIC packets dropped (queue full)", fontsize=9)
    axes[3].set_ylabel("us")
    axes[3].set_title("Host probe frames' RX delay (last byte on the wire to completion record), per 20 us window",
                      fontsize=9)
    axes[3].set_xlabel("simulated time (ms)")
    for ax in axes:
        a = 0.0
        for ph in r0["phases"]:
            if ph["name"] == "high":
                ax.axvspan(a / 1000, (a + ph["us"]) / 1000, color="orange", alpha=0.08)
            a += ph["us"]
        ax.legend(fontsize=6, loc="upper right", ncol=2)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def summary(r: dict) -> dict:
    """The overload phase's figures of one run, whole and its second half (where load
    control has settled: its first half is the descent, one connection per close)."""
    hi = next(p for p in r["phases"] if p["name"] == "high")
    a = sum(p["us"] for p in r["phases"][:r["phases"].index(hi)])
    mid, z = a + hi["us"] / 2, a + hi["us"]
    late = [w for w in r["windows"] if mid + 20 <= w["t_us"] <= z]
    med = sorted(w["host_rx_median_ns"] for w in late if w["host_rx_median_ns"] is not None)
    steady = {"from_us": mid, "to_us": z, "windows": len(late), "nic_drops": sum(w["nic_drops"] for w in late),
              "qlen_mean": round(sum(w["qlen_mean"] for w in late) / len(late), 2) if late else None,
              "qlen_max": max((w["qlen_max"] for w in late), default=None),
              "cnum_mean": round(sum(w["cnum"] for w in late) / len(late), 1) if late else None,
              "soft_limit_mean": round(sum(w["soft_limit"] for w in late) / len(late), 1) if late else None,
              "host_rx_window_median_ns_median": med[len(med) // 2] if med else None,
              "offload_goodput_gbps": round(sum(w["stored_bytes"] for w in late) * 8
                                            / (1000 * sum(w["window_us"] for w in late)), 3) if late else None}
    return {"load_control": r["load_control"], "qlen_peak": r["qlen_max"], "qlen_mean_overload": hi["qlen_mean"],
            "nic_drops_overload": hi["nic_drops"], "nic_drops_total": sum(p["nic_drops"] for p in r["phases"]),
            "host_rx_median_ns_overload": hi["host_rx_median_ns"], "host_rx_p99_ns_overload": hi["host_rx_p99_ns"],
            "soft_limit_min": r["soft_limit_min"], "cnum_mean_overload": hi["cnum_mean"], "cnum_max": r["cnum_max"],
            "offload_goodput_gbps_overload": hi["offload_goodput_gbps"], "go_back": r["stats"]["go_back"],
            "host_rx_lost": r["host_rx"]["lost"], "bytes_checked": r["stats"]["bytes_checked"],
            "connections_ended_on_nic": r["stats"]["ended_on_nic"], "installs": r["stats"]["installs"],
            "refused_over_limit": r["stats"]["refused_over_limit"], "overload_second_half": steady}


def table(doc: dict) -> str:
    def us(v):
        return "-" if v is None else f"{v / 1000:.2f}"
    lines = ["| load control | peak Qlen | mean Qlen (overload) | NIC drops (overload / run) | host RX median / p99 us "
             "(overload) | min Soft_limit | mean Cnum (overload) | offload goodput Gb/s (overload, stored) | "
             "go-back-N | installs (refused at Soft_limit) | second half of overload: NIC drops, mean Qlen, mean Cnum, goodput Gb/s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in doc["summary"]:
        lines.append(f"| {'on' if s['load_control'] else 'off'} | {s['qlen_peak']} | {s['qlen_mean_overload']} | "
                     f"{s['nic_drops_overload']} / {s['nic_drops_total']} | {us(s['host_rx_median_ns_overload'])} / "
                     f"{us(s['host_rx_p99_ns_overload'])} | {s['soft_limit_min']} | {s['cnum_mean_overload']} | "
                     f"{s['offload_goodput_gbps_overload']} | {s['go_back']} | {s['installs']} "
                     f"({s['refused_over_limit']}) | {s['overload_second_half']['nic_drops']}, "
                     f"{s['overload_second_half']['qlen_mean']}, {s['overload_second_half']['cnum_mean']}, "
                     f"{s['overload_second_half']['offload_goodput_gbps']} |")
    return "\n".join(lines)


def simulate(settings: dict, seed: int, work: Path) -> list[dict]:
    """Both runs (load control on, then off), each its own simulation of the NIC from reset."""
    from offnic_sim.harness.runner import run_cocotb
    runs = []
    for on in (True, False):
        raw = work / f"run-{'on' if on else 'off'}.json"
        raw.unlink(missing_ok=True)
        cfg = {"out": str(raw), "seed": seed, "load_control": on, **settings}
        run_cocotb(design(), "offnic_sim.toe.loadctl_bench", testcase="loadctl", bench=cfg, fast=True, seed=seed)
        runs.append(json.loads(raw.read_text()))
    return runs


def _without_seed(args: list[str]) -> list[str]:
    out, skip = [], False
    for x in args:
        if skip:
            skip = False
        elif x == "--seed":
            skip = True
        elif not x.startswith("--seed="):
            out.append(x)
    return out


def main(args: list[str], rel=str) -> int:
    ap = argparse.ArgumentParser(prog="offnic bench loadctl", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=None, help="JSON (default results/bench-loadctl.json; with --quick "
                    "build/bench/bench-loadctl.json)")
    ap.add_argument("--quick", action="store_true", help="short phases and lives (a smoke run)")
    a = ap.parse_args(args)
    t0 = time.monotonic()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    out = Path(a.out) if a.out else (hw.BUILD / "bench" if a.quick else ROOT / "results") / "bench-loadctl.json"
    out = out if out.is_absolute() else Path.cwd() / out
    work = hw.BUILD / "bench-loadctl"
    work.mkdir(parents=True, exist_ok=True)
    d = design()
    settings = {**(QUICK if a.quick else FULL), **COMMON}
    print(f"[offnic] bench loadctl on {CONFIG} (fast harness), seed {seed}: load control on, then off", flush=True)
    runs = simulate(settings, seed, work)
    doc = {"command": " ".join(["./offnic", "bench", "loadctl", *args]), "seed": seed,
           "replay": " ".join(["./offnic", "bench", "loadctl", *_without_seed(args), "--seed", str(seed)]),
           "config": CONFIG, "harness": "fast", "settings": settings,
           "hw_sources_sha256": hw.hw_sources_digest(), "leaves_out": LEAVES_OUT, "seed_004_figure6": SEED_FIG6,
           "summary": [summary(r) for r in runs], "runs": runs}
    results_file.write(doc, out, [d], plot, table, rel, t0)
    return 0
