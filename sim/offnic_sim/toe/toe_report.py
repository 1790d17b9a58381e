"""`./offnic bench toe`, host side: runs toe_bench.py on each TCP-offload block's design
and writes results/bench-toe.json and .png (docs/toe.md).

What exists is measured: the connection table (load factor reached, inserts and deletes
per second, lookups per cycle), the parser and the receive front (frames per second
against 25G line rate) and the timer wheel (arms and expiries per second), with the Yosys resources of the toe
configuration when `./offnic synth --config toe` has been run. The engine's own rows
(goodput of one connection at MSS 1460/8960, 1..4,096 connections, arrival-to-ACK cycles,
installs and restores per second of whole connections) come with the engine: every
receive case counts only the bytes the engine notified and checks every ring against
what was sent, every transmit case checks every frame on the wire, and the engine's
counters (read over its register bus) must show no drop; and `offload_many`: hundreds of
random connections at once against TcpPeers through a lossy link
(sim/offnic_sim/toe/toe_many.py), every stream checked, its rate given in the workload's
time base (1 engine clock = 1 us), not the engine's. `--only CASES` runs a subset
(written to build/bench/ unless --out says otherwise).
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from offnic_sim.harness import hw

ROOT = hw.ROOT
CLOCK_MHZ = 250.0
TABLES = [(1024, 256), (4096, 1024)]  # (connections the NIC config gives, buckets per table)
CASES = ("table", "parser", "steer", "header", "wheel", "decide", "offload", "offload_many")
MANY = 768                            # offload_many's connections: about 4 minutes on 2 cores


def plot(recs: list[dict], png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.2))
    tab = [r for r in recs if r.get("block") == "conn_table"]
    ax = axes[0]
    ax.bar([f"{r['slots']} slots\n(for {r['connections_nic']} conns)" for r in tab], [r["load_factor"] for r in tab])
    ax.axhline(0.85, color="C3", ls=":", label="issue 5's floor (0.85)")
    for i, r in enumerate(tab):
        ax.annotate(f"{r['load_factor']:.3f}\n{r['installs_per_s'] / 1e6:.1f}M inserts/s\n"
                    f"{r['lookups_per_s'] / 1e6:.0f}M lookups/s", (i, r["load_factor"]), ha="center", va="bottom",
                    fontsize=7)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("load factor at the first failed insert")
    ax.set_title("Connection table: 2 x 4-way buckets, cuckoo walks <= 64 moves", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1]
    par = [r for r in recs if r.get("block") == "tcp_parser"]
    x = range(len(par))
    ax.bar([i - 0.2 for i in x], [r["mpps"] for r in par], width=0.4, label="parser, Mpps at 250 MHz")
    ax.bar([i + 0.2 for i in x], [r["line_rate_mpps_25g"] for r in par], width=0.4, label="one 25G port's line rate")
    ax.set_xticks(list(x), [f"{r['case'].removeprefix('parser_')}\n{r['frame_bytes']} B" for r in par], fontsize=7)
    ax.set_ylabel("frames per second, millions")
    ax.set_yscale("log")
    ax.set_title("TCP parser: frames per second", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[2]
    eng = [r for r in recs if r.get("block") == "tcp_offload" and r.get("gbps") is not None]
    x = range(len(eng))
    ax.bar([i - 0.2 for i in x], [r["gbps"] for r in eng], width=0.4, label="engine, Gb/s of payload delivered (checked), 250 MHz")
    ax.bar([i + 0.2 for i in x], [r["line_rate_gbps"] for r in eng], width=0.4, label="25G line rate's goodput")
    ax.set_xticks(list(x), [f"{r['case'].split('_')[0]} MSS {r['mss'] or 'mixed'}\n{r['connections']} conn"
                            for r in eng],
                  fontsize=7)
    ax.set_ylabel("Gb/s")
    ack = next((r for r in recs if r.get("case") == "arrival_to_ack"), None)
    ins = next((r for r in recs if r.get("case") == "install_restore"), None)
    sub = (f"; arrival to ACK {ack['cycles_mean']:.0f} cycles" if ack else "") + \
        (f"; {ins['installs_per_s'] / 1e6:.1f} M installs/s" if ins else "")
    ax.set_title(f"Whole engine (TcpOffload){sub}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main(args: list[str], rel=str) -> int:
    """`--part blocks` (the default: the engine's blocks, results/bench-toe.json) or `--part
    nic` (the engine inside the whole NIC, toe_nic_report.py: results/bench-toe-nic.json)."""
    part, rest = "blocks", list(args)
    if "--part" in rest:
        i = rest.index("--part")
        part = rest[i + 1] if i + 1 < len(rest) else ""
        del rest[i:i + 2]
    if part == "nic":
        from offnic_sim.toe import toe_nic_report
        return toe_nic_report.main(rest, rel=rel)
    if part != "blocks":
        raise SystemExit(f"offnic bench toe: --part is blocks or nic, not {part!r}")
    args = rest
    from offnic_sim.harness.runner import run_cocotb
    from offnic_sim.harness.hw import Design
    ap = argparse.ArgumentParser(prog="offnic bench toe", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=None, help="JSON (default results/bench-toe.json; with --only "
                    "build/bench/bench-toe.json)")
    ap.add_argument("--only", default=None, help="comma-separated cases to run, of " + ",".join(CASES))
    ap.add_argument("--many", type=int, default=MANY, help=f"connections of offload_many (default {MANY})")
    a = ap.parse_args(args)
    t0 = time.monotonic()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    only = set(a.only.split(",")) if a.only else set(CASES)
    many = a.many
    if only - set(CASES):
        ap.error(f"unknown cases {sorted(only - set(CASES))}; cases: {','.join(CASES)}")
    out = Path(a.out) if a.out else (hw.BUILD / "bench" if a.only else ROOT / "results") / "bench-toe.json"
    out = out if out.is_absolute() else Path.cwd() / out
    work = hw.BUILD / "bench-toe"
    work.mkdir(parents=True, exist_ok=True)

    measured: list[Design] = []

    def run(label: str, design, testcase: str, **cfg) -> dict:
        if design not in measured:
            measured.append(design)
        f = work / f"{label}.json"
        f.unlink(missing_ok=True)
        print(f"[offnic] bench toe: {label}", flush=True)
        run_cocotb(design, "offnic_sim.toe.toe_bench", testcase=testcase, bench={"out": str(f), "seed": seed, **cfg})
        return json.loads(f.read_text())

    recs: list[dict] = [{"command": " ".join(["./offnic", "bench", "toe", *args]), "seed": seed,
                         "replay": f"./offnic bench toe --seed {seed}" + (f" --only {a.only}" if a.only else "")
                         + (f" --many {many}" if many != MANY else ""), "clock_mhz": CLOCK_MHZ,
                         "hw_sources_sha256": hw.hw_sources_digest()}]
    for conns, buckets in TABLES if "table" in only else ():
        # Ids as many as slots: the table, not the id pool, decides when an insert fails.
        slots = 8 * buckets
        r = run(f"table_{slots}", Design.of("toe.ConnTable", connections=slots, buckets=buckets, max_kicks=64),
                "table", connections=slots, buckets=buckets, max_kicks=64)
        recs.append({"case": f"table_{slots}_slots", "block": "conn_table", "connections": r["placed_before_first_failure"],
                     "connections_nic": conns, "mss": None, "gbps": None, "line_rate_pct": None,
                     "load_factor": r["load_factor"],
                     "installs_per_s": round(CLOCK_MHZ * 1e6 / r["cycles_per_insert_to_0.85"]),
                     "restores_per_s": round(CLOCK_MHZ * 1e6 / r["cycles_per_delete"]),
                     "lookups_per_s": round(CLOCK_MHZ * 1e6 * r["lookups_per_cycle"]), **r})
    r = run("parser", Design.of("toe.TcpParser"), "parser") if "parser" in only else {}
    for kind, v in r.items():
        recs.append({"case": f"parser_{kind}", "block": "tcp_parser", "connections": None, "mss": None,
                     "gbps": None, "line_rate_pct": round(100 * v["mpps"] / v["line_rate_mpps_25g"], 1), **v})
    r = run("steer", Design.of("toe.TcpSteer", connections=4096, buckets=1024, fifo_beats=512), "steer") \
        if "steer" in only else {}
    for kind, v in r.items():
        recs.append({"case": f"steer_{kind}", "block": "tcp_steer", "connections": 8, "mss": None, "gbps": None,
                     "line_rate_pct": round(100 * v["mpps"] / v["line_rate_mpps_25g"], 1), **v})
    r = run("header", Design.of("toe.TcpHeaderBuild"), "header") if "header" in only else {}
    for kind, v in r.items():
        recs.append({"case": f"header_{kind}", "block": "tcp_header_build", "connections": None, "mss": None,
                     "gbps": None, "line_rate_pct": round(100 * v["mpps"] / v["line_rate_mpps_25g"], 1), **v})
    if "wheel" in only:
        r = run("wheel", Design.of("toe.TimerWheel", connections=4096, slots=1024), "wheel", connections=4096,
                slots=1024)
        recs.append({"case": "timer_wheel_4096", "block": "timer_wheel", "mss": None, "gbps": None,
                     "line_rate_pct": None, **r})
    r = run("decide", Design.of("toe.TcpDecide", connections=4096), "decide") if "decide" in only else {}
    for kind, v in r.items():
        recs.append({"case": f"decide_{kind}", "block": "tcp_decide", "connections": None, "mss": None,
                     "gbps": None, "line_rate_pct": None, **v})
    engine = Design.of("toe.TcpOffload", connections=4096, buckets=1024, slots=1024, fifo_beats=512)
    if "offload" in only:
        r = run("offload", engine, "offload", installs=512)
        i = r.pop("install")
        recs.append({"case": "install_restore", "block": "tcp_offload", "connections": i["commands"], "mss": None,
                     "gbps": None, "line_rate_pct": None,
                     "installs_per_s": round(CLOCK_MHZ * 1e6 / i["cycles_per_install"]),
                     "restores_per_s": round(CLOCK_MHZ * 1e6 / i["cycles_per_restore"]), **i})
        a = r.pop("arrival_to_ack")
        recs.append({"case": "arrival_to_ack", "block": "tcp_offload", "connections": 1, "mss": 1448, "gbps": None,
                     "line_rate_pct": None, "added_latency_ns": a["ns_mean"], **a})
        for case, v in r.items():
            recs.append({"case": case, "block": "tcp_offload", **v})
    if "offload_many" in only:
        # hundreds of random connections against TcpPeers through a lossy link: the goodput is
        # what the peers, the link's latencies and losses and the timers allow, not the engine's
        r = run("offload_many", engine, "offload_many", connections=many)
        recs.append({"case": "offload_many", "block": "tcp_offload", "mss": None,
                     "limited_by": "link, peers and timers (the workload's time base, not the engine's clock)", **r})
    synth = hw.ROOT / "results" / "synth-toe.json"  # ./offnic synth --config toe
    if synth.exists():
        recs.append({"case": "resources", "block": "synth", "source": rel(synth),
                     "designs": json.loads(synth.read_text())})
    recs[0]["wall_s"] = round(time.monotonic() - t0, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    recs[0]["rtl_designs"] = hw.rtl_record(measured)
    out.write_text(json.dumps(recs, indent=1) + "\n")
    png = out.with_suffix(".png")
    plot(recs, png)
    has = {r.get("block") for r in recs}
    if "conn_table" in has:
        print("\n| table slots | for connections | load factor at first failure | moves/insert | inserts/s (to 0.85) | deletes/s | lookups/cycle |")
        print("|---|---|---|---|---|---|---|")
    for r in recs:
        if r.get("block") == "conn_table":
            print(f"| {r['slots']} | {r['connections_nic']} | {r['load_factor']:.3f} | {r['moves_per_insert']} | "
                  f"{r['installs_per_s'] / 1e6:.1f} M | {r['restores_per_s'] / 1e6:.1f} M | {r['lookups_per_cycle']} |")
    for block, name in (("tcp_parser", "parser"), ("tcp_steer", "steer")):
        if block not in has:
            continue
        print(f"\n| {name} case | frame B | cycles/frame | Mpps | 25G line Mpps | % of one port's line |")
        print("|---|---|---|---|---|---|")
        for r in recs:
            if r.get("block") == block:
                print(f"| {r['case']} | {r['frame_bytes']} | {r['cycles_per_frame']} | {r['mpps']} | "
                      f"{r['line_rate_mpps_25g']} | {r['line_rate_pct']} |")
    for r in recs:
        if r.get("block") == "tcp_header_build":
            print(f"header builder, {r['case']}: {r['cycles_per_frame']} cycles per segment, {r['mpps']} Mpps "
                  f"({r['line_rate_pct']}% of one 25G port's rate for {r['frame_bytes']} B frames)")
    if "tcp_decide" in has:
        print("\n| decision kind | decisions | cycles mean | cycles max | decisions/s |")
        print("|---|---|---|---|---|")
    for r in recs:
        if r.get("block") == "tcp_decide":
            print(f"| {r['case'][7:]} | {r['decisions']} | {r['cycles_mean']} | {r['cycles_max']} | "
                  f"{r['decisions_per_s'] / 1e6:.1f} M |")
    if "tcp_offload" in has:
        print("\n| engine case | connections (installed at once) | MSS | bytes sent / delivered, checked | "
              "Gb/s at 250 MHz | 25G goodput Gb/s | % of line rate |")
        print("|---|---|---|---|---|---|---|")
    for r in recs:
        if r.get("block") == "tcp_offload" and r.get("gbps") is not None:
            moved = (f"{r['bytes_sent']} / {r['bytes_delivered']}" if "bytes_sent" in r
                     else f"{r.get('bytes_queued')} / {r.get('payload_bytes')}")
            print(f"| {r['case']} | {r['connections']} ({r.get('installed_at_once', 1)}) | {r['mss'] or 'mixed'} | "
                  f"{moved} | {r['gbps']} | {r['line_rate_gbps']} | {r['line_rate_pct']} |")
    for r in recs:
        if r.get("case") == "install_restore":
            print(f"installs: {r['cycles_per_install']} cycles each ({r['installs_per_s'] / 1e6:.2f} M/s), restores: "
                  f"{r['cycles_per_restore']} cycles ({r['restores_per_s'] / 1e6:.2f} M/s)")
        if r.get("case") == "arrival_to_ack":
            print(f"segment arrival to its ACK leaving: {r['cycles_mean']} cycles mean, {r['cycles_max']} max "
                  f"({r['ns_mean']} ns at 250 MHz)")
    for r in recs:
        if r.get("case") == "offload_many":
            ln = r["link"]
            print(f"\nmany connections at once: {r['connections']} random connections (seed {r['seed']}), up to "
                  f"{r['peak_installed']} installed at once (the engine's connections_peak register: "
                  f"{r['peak_installed_register']}), every stream exact, all closed; {r['cycles']} cycles = "
                  f"{r['workload_s']} s of the workload's time (1 clock = 1 us); {r['bytes_engine_to_peer']} B out, "
                  f"{r['bytes_peer_to_engine']} B in: {r['workload_gbps']} Gb/s in that time base, set by the link, "
                  f"peers and timers, not the engine; segments resent: engine {ln['engine'].get('retransmits', 0)} "
                  f"of {ln['engine'].get('data_frames', 0)}, peers {ln['peer'].get('retransmits', 0)} of "
                  f"{ln['peer'].get('data_frames', 0)}; {r['wall_s']} s wall")
    w = next((r for r in recs if r.get("block") == "timer_wheel"), None)
    if w:
        print(f"\ntimer wheel ({w['connections']} timers, {w['slots']} slots): {w['cycles_per_arm']} cycles per arm "
              f"({w['arms_per_s'] / 1e6:.1f} M/s), {w['cycles_per_expiry']} per expiry "
              f"({w['expiries_per_s'] / 1e6:.1f} M/s)")
    print(f"[offnic] wrote {rel(out)} and {rel(png)} in {time.monotonic() - t0:.0f} s")
    return 0
