"""`./offnic bench frag`, host side: runs frag_bench.py on the whole NIC and writes
results/bench-frag.json and .png: the Fragmenter in the TX path and the Reassembler in the
RX path (docs/frag.md)."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from offnic_sim.harness import hw

ROOT = hw.ROOT
CASES = [(1500, 65507, True), (1500, 65507, False), (9000, 65507, True), (9000, 65507, False),
         (1500, 8972, True), (576, 65507, True)]
# (MTU, UDP payload, offload on, a flood fragment after every N good frames or 0, latency probe)
# (the flood last: its never-completed contexts live for the 1 ms timeout)
RX_CASES = [(1500, 65507, True, 0, False), (1500, 65507, False, 0, False), (9000, 65507, True, 0, False),
            (9000, 65507, False, 0, False), (1500, 8972, True, 0, False), (1500, 65507, True, 0, True),
            (9000, 65507, True, 0, True), (1500, 65507, True, 2, False)]
# Per case, the measured datagrams fill this much wire time at line rate (at least 10 of
# them), after a warm-up that is not counted. The RX window also holds the last
# datagram's latency once (a few us: NIC, DMA, moderation), so its goodput is below the
# line by about tail / window: ~2% at 250 us (12 datagrams of 64 KB).
MEASURE_US, WARMUP_US = 250.0, 40.0


def plot(recs: list[dict], png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tx = [r for r in recs if r.get("direction") == "tx"]
    rx = [r for r in recs if r.get("direction") == "rx" and r.get("gbps") is not None]
    fig, axes = plt.subplots(1, 2 if rx else 1, figsize=(13 if rx else 8, 4.4), squeeze=False)
    ax = axes[0][0]
    labels = [f"MTU {r['mtu']}\n{r['datagram_size']} B\n{'csum' if r['csum_offload'] else 'no csum'}" for r in tx]
    ax.bar(range(len(tx)), [r["gbps"] for r in tx], label="UDP goodput")
    ax.bar(range(len(tx)), [r["wire_gbps"] - r["gbps"] for r in tx], bottom=[r["gbps"] for r in tx],
           label="headers on the wire (Ethernet + IP + UDP per fragment)", alpha=0.5)
    ax.axhline(25, color="grey", ls=":")
    ax.set_xticks(range(len(tx)), labels, fontsize=7)
    ax.set_ylabel("Gb/s, one 25G port")
    ax.set_title("TX fragmentation offload: datagrams cut on the NIC", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    if rx:
        ax = axes[0][1]
        labels = [f"MTU {r['mtu']}\n{r['datagram_size']} B\n{'NIC' if r['offload'] else 'host'}"
                  f"{' flood' if r.get('flood_fragments') else ''}" for r in rx]
        bars = ax.bar(range(len(rx)), [r["gbps"] for r in rx], color=["C2" if r["offload"] else "C3" for r in rx])
        for b, r in zip(bars, rx):
            cpm = r.get("completions_per_mb_offload", r.get("completions_per_mb_host"))
            ax.annotate(f"{cpm:.0f} cpl/MB\n{r['interrupts_per_mb']:.0f} irq/MB", (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=6)
        ax.axhline(25, color="grey", ls=":")
        ax.set_xticks(range(len(rx)), labels, fontsize=7)
        ax.set_ylabel("UDP goodput delivered to the host, Gb/s")
        ax.set_title("RX reassembly: NIC (green) vs host stack (red: its CPU cost not modelled); completions, interrupts per MB",
                     fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main(args: list[str], simulate, rel=str) -> int:
    ap = argparse.ArgumentParser(prog="offnic bench frag", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--measure-us", type=float, default=MEASURE_US,
                    help=f"line-rate wire time of the measured datagrams per case, simulated us (default {MEASURE_US:g})")
    ap.add_argument("--warmup-us", type=float, default=WARMUP_US,
                    help=f"the same for the warm-up datagrams before them, not counted (default {WARMUP_US:g})")
    ap.add_argument("--out", default=None, help="JSON (default results/bench-frag.json)")
    a = ap.parse_args(args)
    t0 = time.monotonic()
    out = Path(a.out) if a.out else ROOT / "results" / "bench-frag.json"
    out = out if out.is_absolute() else Path.cwd() / out
    span = {"measure_us": a.measure_us, "warmup_us": a.warmup_us}
    cfg = {"cases": [{"mtu": m, "payload": p, "csum": c, **span} for m, p, c in CASES],
           "rx_cases": [{"mtu": m, "payload": p, "offload": o, "flood": fl, "latency": lat, **span}
                        for m, p, o, fl, lat in RX_CASES]}

    def show(rec: dict) -> None:
        if rec.get("phase"):
            print(f"[offnic] sim {rec.get('t_us', 0):8.1f} us  wall {rec.get('wall_s', 0):6.1f} s  {rec['phase']}", flush=True)
    run = simulate([], hw.BUILD / "bench-frag", a.seed, show, test_module="offnic_sim.frag.frag_bench", extra=cfg)
    recs = list(run["tx"]) + list(run.get("rx", []))
    recs[0] = {"command": " ".join(["./offnic", "bench", "frag", *args]), "seed": run["seed"],
               "replay": f"OFFNIC_SEED={run['seed']} ./offnic bench frag {' '.join(args)}".strip(),
               "hw_sources_sha256": run.get("hw_sources_sha256"), "rtl_designs": run.get("rtl_designs"), "sim_us": round(run["sim_ns"] / 1000, 1),
               **recs[0]}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(recs, indent=1) + "\n")
    png = out.with_suffix(".png")
    plot(recs, png)
    print("\n| case | MTU | datagram B | fragments | datagrams | window us | UDP goodput Gb/s | wire Gb/s | % of 25G line |"
          " datagrams/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in recs:
        if r.get("direction") == "tx":
            print(f"| {r['case']} | {r['mtu']} | {r['datagram_size']} | {r['fragments_per_datagram']} | {r['datagrams']} | "
                  f"{r['window_us']} | {r['gbps']:.2f} | {r['wire_gbps']:.2f} | {r['line_rate_pct']:.2f} | "
                  f"{r['datagrams_per_s']:,} |")
    print("\n| RX case | MTU | datagram B | datagrams | window us | tail us | goodput Gb/s | % of line | completions/MB |"
          " interrupts/MB | by NIC | bypassed | latency ns |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in recs:
        if r.get("direction") == "rx":
            cpm = r.get("completions_per_mb_offload", r.get("completions_per_mb_host"))
            print(f"| {r['case']} | {r['mtu']} | {r['datagram_size']} | {r.get('datagrams', '-')} | "
                  f"{r.get('window_us', '-')} | {r.get('tail_us', '-')} | {r['gbps'] or '-'} | {r['line_rate_pct'] or '-'} | "
                  f"{cpm if cpm is not None else '-'} | {r.get('interrupts_per_mb', '-')} | {r.get('reassembled_by_nic', '-')} | "
                  f"{r.get('bypassed', '-')} | {r.get('latency_ns', '-')} |")
    print(f"\n[offnic] wrote {rel(out)} and {rel(png)} in {time.monotonic() - t0:.0f} s (seed {run['seed']})")
    return 1 if run.get("driver_errors") else 0
