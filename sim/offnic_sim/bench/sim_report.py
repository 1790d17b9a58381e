"""`./offnic bench sim`: how fast the whole NIC simulates (issue 21), into
results/bench-sim.json and .png.

Per harness, core clock cycles (250 MHz) per second, idle (driver up, nothing to do) and
under full traffic (both 25G ports at line rate both ways: 1514 B frames from the driver's
TX rings and into the ports, every frame taken at the far end and by the driver; PCIe
Gen3 x8, 1 us host reads; sim/offnic_sim/fast/speed.py):
- `bare`: the NIC's Verilator model alone in a C++ loop, ports and PCIe idle
  (sim/fastsim/bare_loop.cpp; single-threaded and with `--threads 2`): the limit;
- `fast`: the fast harness (sim/fastsim: the partners in C++ behind DPI-C, Python woken
  per event; FastNicTB);
- `nic`: NicTB (cocotbext-pcie's device model and root complex, cocotbext-eth's XGMII
  source and sink, the DRAM model, all in Python per clock edge), with only the NIC's
  ports visible to cocotb, as the suite builds it since issue 21;
- `nic-public`: NicTB with every signal public, as every model was built before.
Each figure is given per wall second and per CPU second of the simulator process (on a
loaded machine the CPU figure is the one that does not depend on the other jobs).
Two more workloads run on `fast` and `nic`: the demo's cases (`./offnic demo`: IMIX both
ways on both ports, a latency probe, the web server with the payload cache, 64 KB
datagrams cut by the NIC) and `bench base`'s cases (a probe, then each frame size x 1
and 2 ports x tx, rx, bidir), each case's speed recorded as it ran (bench/workload.py).
Then where the time goes: on `fast` and `nic` under traffic, perf samples of the
simulator process by component (model evaluation, Verilator runtime, the fast
harness's C++, cocotb's GPI, the Python interpreter, libraries); and inside the bare
model, perf samples by RTL module (`--prof-cfuncs`, GCC not inlining generated functions).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from offnic_sim.bench import sim_speed
from offnic_sim.harness import hw

ROOT = hw.ROOT
NIC = hw.Design.of("nic.Nic", addr_bits=24, board_id=0)
HARNESSES = ("fast", "nic", "nic-public")
GOAL_CYCLES_PER_S = 100_000  # issue 21's goal, whole NIC under full traffic


def rate(v: dict, key: str = "wall_s") -> float | None:
    return round(v["cycles"] / v[key]) if v.get(key) else None


def plot(recs: list[dict], png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in recs if r.get("kind") == "speed"]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    labels = [f"{r['harness']}\n{r['workload']}" for r in rows]
    ax.bar(range(len(rows)), [r["cycles_per_cpu_s"] or 0 for r in rows], label="per CPU second", color="C0")
    ax.bar(range(len(rows)), [r["cycles_per_s"] or 0 for r in rows], label="per wall second", color="C1", alpha=0.6,
           width=0.5)
    ax.axhline(GOAL_CYCLES_PER_S, color="grey", ls=":", label="goal under traffic (issue 21)")
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set_ylabel("NIC core cycles (250 MHz) per second")
    ax.set_title("Whole-NIC simulation speed (./offnic bench sim)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def workload_speed(simulate, name: str, cases: list[dict], harness: str, run_dir: Path) -> dict:
    """Runs the workload `name` (its `cases`) on `harness` with tasks.simulate; the speed of
    the whole run and of each case."""
    run = simulate(cases, run_dir, seed=1, harness=harness)
    per_case = [{"case": c["name"], **r["speed"]} for c, r in zip(cases, run["cases"])]
    tot = {k: sum(c[k] for c in per_case) for k in ("cycles", "wall_s", "cpu_s", "sim_us")}
    return {"kind": "speed", "harness": harness, "workload": name, **tot,
            "cycles_per_s": rate(tot), "cycles_per_cpu_s": rate(tot, "cpu_s"),
            "cases": [{**c, "cycles_per_cpu_s": rate(c, "cpu_s")} for c in per_case]}


def main(args: list[str], rel=str, simulate=None, workload_cases: dict | None = None) -> int:
    """`simulate` (tasks.simulate) and `workload_cases` (name -> the cases `./offnic demo`
    or `bench base` run by default) come from tasks.py, the layer that knows them."""
    ap = argparse.ArgumentParser(prog="offnic bench sim", description=__doc__.split("\n\n")[0])
    ap.add_argument("--bare-cycles", type=int, default=200_000)
    ap.add_argument("--idle-us", type=float, default=200.0, help="simulated us idle per harness (default 200)")
    ap.add_argument("--traffic-us", type=float, default=100.0,
                    help="simulated us under traffic per harness (default 100; NicTB takes minutes)")
    ap.add_argument("--harness", default=",".join(HARNESSES), help=f"comma separated, of {', '.join(HARNESSES)}")
    ap.add_argument("--workloads", default="idle,traffic,demo,base",
                    help="comma separated: idle and traffic (speed.py), demo and base (on fast and nic only)")
    ap.add_argument("--no-profile", action="store_true", help="skip the profiles (perf)")
    ap.add_argument("--out", default=None, help="JSON (default results/bench-sim.json; build/bench-sim-quick.json with --quick)")
    ap.add_argument("--bare-threads", default="1,2", help="the bare model's --threads, comma separated (default 1,2)")
    ap.add_argument("--quick", action="store_true",
                    help="a before/after check of a model change: the bare model single-threaded and the fast "
                         "harness idle and under traffic, no profiles, into build/ (the options given override)")
    a = ap.parse_args(args)
    if a.quick:  # defaults of the quick subset, unless given
        given = set(x.split("=")[0] for x in args)
        a.bare_threads = a.bare_threads if "--bare-threads" in given else "1"
        a.harness = a.harness if "--harness" in given else "fast"
        a.workloads = a.workloads if "--workloads" in given else "idle,traffic"
        a.no_profile = True
    t0 = time.monotonic()
    out = Path(a.out) if a.out else (hw.BUILD / "bench-sim-quick.json" if a.quick else ROOT / "results" / "bench-sim.json")
    out = out if out.is_absolute() else Path.cwd() / out
    from offnic_sim.fast import speed

    recs: list[dict] = [{"command": " ".join(["./offnic", "bench", "sim", *args]),
                         "hw_sources_sha256": hw.hw_sources_digest(), "rtl_designs": hw.rtl_record([NIC]),
                         "cpus": os.cpu_count(),
                         "load_avg_at_start": os.getloadavg()[0],
                         "workloads": {"idle": "driver up, ports idle", "traffic": speed.__doc__.split("\n\n")[0]},
                         "goal_cycles_per_s": GOAL_CYCLES_PER_S}]
    for threads in (int(t) for t in a.bare_threads.split(",") if t):
        print(f"[offnic] bench sim: the bare model, {threads} thread(s) (built once)", flush=True)
        r = sim_speed.bare_speed(NIC, a.bare_cycles, threads)
        recs.append({"kind": "speed", "harness": "bare" if threads == 1 else "bare, --threads 2", "workload": "idle",
                     "cycles": r["cycles"], "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
                     "cycles_per_s": round(r["cycles_per_s"]), "cycles_per_cpu_s": round(r["cycles_per_cpu_s"]),
                     "build": {"verilator": r["verilator_args"], "cxx": r["cxx"]}})
    workloads = a.workloads.split(",")
    harnesses = a.harness.split(",")
    for h in harnesses:
        if "idle" not in workloads and "traffic" not in workloads:
            break
        print(f"[offnic] bench sim: {h}, {a.idle_us:g} us idle and {a.traffic_us:g} us of traffic", flush=True)
        r = speed.measure(h, a.idle_us, a.traffic_us)
        for w, v in r.items():
            if w in workloads:
                recs.append({"kind": "speed", "harness": h, "workload": w, **v,
                             "cycles_per_s": rate(v), "cycles_per_cpu_s": rate(v, "cpu_s")})
    for w in ("demo", "base"):
        for h in (h for h in harnesses if h in ("fast", "nic") and w in workloads):
            print(f"[offnic] bench sim: {h}, the {w} workload's cases", flush=True)
            recs.append(workload_speed(simulate, w, workload_cases[w](), h, hw.BUILD / "bench-sim" / f"{w}-{h}"))
    if not a.no_profile:
        for h in (h for h in harnesses if h in ("fast", "nic")):
            print(f"[offnic] bench sim: where {h}'s time goes under traffic (perf)", flush=True)
            recs.append({"kind": "split", **speed.where_time_goes(h, min(a.traffic_us, 50.0))})
        print("[offnic] bench sim: profile of the bare model (perf, --prof-cfuncs, no inlining of generated functions; built once)", flush=True)
        recs.append({"kind": "profile", "of": "bare model, idle", **sim_speed.bare_profile(NIC, a.bare_cycles // 4)})
    recs[0]["wall_s"] = round(time.monotonic() - t0, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(recs, indent=1) + "\n")
    png = out.with_suffix(".png")
    plot(recs, png)
    print("\n| harness | workload | core cycles/s (wall) | per CPU second | frames out/in |")
    print("|---|---|---|---|---|")
    for r in recs:
        if r.get("kind") == "speed":
            fr = f"{r['frames_out']}/{r['frames_in']}" if "frames_out" in r else "-"
            print(f"| {r['harness']} | {r['workload']} | {r['cycles_per_s']:,} | {r['cycles_per_cpu_s']:,} | {fr} |")
    for r in recs:
        if r.get("kind") == "split":
            print(f"\n{r['harness']} under traffic, by component: "
                  + ", ".join(f"{k} {v}%" for k, v in r["by_component_pct"].items()))
    prof = [r for r in recs if r.get("kind") == "profile"]
    if prof:
        top = list(prof[0]["by_module_pct"].items())[:12]
        print("\nbare model, samples by RTL module: " + ", ".join(f"{m} {p}%" for m, p in top))
    print(f"[offnic] wrote {rel(out)} and {rel(png)} in {time.monotonic() - t0:.0f} s")
    return 0
