"""`./offnic bench cache`, host side: the seed's Fig. 3 from the directory model
(cache_study, full traces), then one cycle-accurate simulation of the NIC
(cache_bench.py: hit-path speed and latency per source, trace replay with and without
the cache), written to results/bench-cache.json and results/bench-cache.png."""
from __future__ import annotations

import argparse
import dataclasses
import json
import threading
import time
from pathlib import Path

import numpy as np

from offnic_sim.cache import cache_study
from offnic_sim.harness import hw
from offnic_sim.cache import webtrace
from offnic_sim.host.cachedir import CacheDir, content_reduction_pct
from offnic_sim.host import ddr4_model

ROOT = hw.ROOT
LINE_GBPS = 25.0
HIT_SIZES = [64, 128, 256, 512, 1024, 1518, 9000]
SIM_CACHE = 16 << 20
MSS = 1448


def trace_prefix(name: str, seed: int, max_requests: int, max_bytes: int, warm_bytes: int,
                 warm_max: int = 200_000) -> dict:
    """A window of a workload's synthetic trace for the simulation: after a warm-up (the first
    requests, until warm_bytes of content or warm_max requests, run through the directory
    alone), at most max_requests requests and no more than max_bytes of content (at
    least one request). The model's reduction: a 16 MiB directory replays the warm-up,
    resets its counters and replays the window."""
    tr = webtrace.generate(name, seed=seed)
    cum = np.cumsum(tr.file_size.astype(np.int64))
    warm = int(min(warm_max, np.searchsorted(cum, warm_bytes) + 1, len(tr) - max_requests))
    n, total = 0, 0
    for size in tr.file_size[warm:warm + max_requests]:
        if n >= 1 and total + int(size) > max_bytes:
            break
        n += 1
        total += int(size)
    w, s = tr.head(warm), tr.head(warm + n)
    sl = slice(warm, warm + n)
    with CacheDir(SIM_CACHE) as d:
        d.replay_trace(w.file_id, w.revision, w.file_size, MSS)
        d.reset_stats()
        d.replay_trace(s.file_id[sl], s.revision[sl], s.file_size[sl], MSS)
        st = d.stats()
    ints = lambda a: [int(x) for x in a]  # noqa: E731
    return {"workload": tr.workload.key, "label": tr.workload.label, "cache_bytes": SIM_CACHE,
            "file_id": ints(s.file_id[sl]), "file_size": ints(s.file_size[sl]), "revision": ints(s.revision[sl]),
            "warm_file_id": ints(w.file_id), "warm_file_size": ints(w.file_size), "warm_revision": ints(w.revision),
            "warm_content_bytes": int(cum[warm - 1]) if warm else 0, "model_stats": st,
            "model_content_reduction_pct": round(content_reduction_pct(st), 2)}


def served_records(prefixes: list[dict], run: dict) -> list[dict]:
    """Fig. 7b's analogue: per workload, the throughput the server gets out of the NIC
    (frames on the wire, with FCS, first frame's end to last's) with and without the
    cache, on the link of that run (`pcie_lanes`)."""
    by = {}
    for t in run["trace"]:
        by.setdefault(t["workload"], {})[t["mode"]] = t
    out = []
    for p in prefixes:
        c, nc = by[p["workload"]]["cache"], by[p["workload"]]["nocache"]
        out.append({
            "case": "served_throughput", "workload": p["workload"], "label": p["label"],
            "cache_bytes": p["cache_bytes"], "pcie_lanes": run.get("pcie_lanes", 8),
            "requests": c["requests"], "content_bytes": c["content_bytes"],
            "model_content_reduction_pct": p["model_content_reduction_pct"],
            "served_gbps_cache": c["served_gbps"], "served_gbps_nocache": nc["served_gbps"],
            "line_rate_pct_cache": c["served_line_rate_pct"], "line_rate_pct_nocache": nc["served_line_rate_pct"],
            "throughput_gain_pct": round(100.0 * (c["served_gbps"] / nc["served_gbps"] - 1), 2),
            "sim_pcie_reduction_pct": round(100.0 * (1 - c["pcie_bytes"] / nc["pcie_bytes"]), 2),
        })
    return out


def records(fig3: list[dict], prefixes: list[dict], run: dict, narrow: dict | None = None,
            sens: list[dict] | None = None) -> list[dict]:
    recs = [dict(r, case="fig3_model") for r in fig3] + list(sens or [])
    for r in run["hit"]:
        lat = {x["frame_bytes"]: x for x in run["latency"] if x["source"] == r["source"]}
        recs.append(dict(r, latency_ns=lat.get(r["frame_bytes"], {}).get("latency_ns")))
    for r in run["latency"]:
        recs.append(dict(r))
    by = {}
    for t in run["trace"]:
        by.setdefault(t["workload"], {})[t["mode"]] = t
    for p in prefixes:
        c, nc = by[p["workload"]]["cache"], by[p["workload"]]["nocache"]
        sim_content = 100.0 * (1 - c["content_crossed_bytes"] / c["content_bytes"])
        nocache_content = 100.0 * (1 - nc["content_crossed_bytes"] / nc["content_bytes"])
        dir_sim = round(content_reduction_pct(c["dir_stats"]), 2)
        recs.append({
            "case": "trace_replay", "workload": p["workload"], "label": p["label"], "cache_bytes": p["cache_bytes"],
            "requests": c["requests"], "packets": c["packets"], "warm_requests": c["warm_requests"],
            "warm_content_bytes": p["warm_content_bytes"], "warm_inserted_bytes": c["warm_inserted_bytes"], "content_bytes": c["content_bytes"],
            "model_content_reduction_pct": p["model_content_reduction_pct"],
            "sim_dir_content_reduction_pct": dir_sim,
            "sim_content_reduction_pct": round(sim_content, 2),
            "sim_nocache_content_reduction_pct": round(nocache_content, 2),
            "sim_pcie_reduction_pct": round(100.0 * (1 - c["pcie_bytes"] / nc["pcie_bytes"]), 2),
            "pcie_bytes_cache": c["pcie_bytes"], "pcie_bytes_nocache": nc["pcie_bytes"],
            "pcie_down_bytes_cache": c["pcie_down_bytes"], "pcie_down_bytes_nocache": nc["pcie_down_bytes"],
            "content_crossed_cache": c["content_crossed_bytes"], "content_crossed_nocache": nc["content_crossed_bytes"],
            "inserts": c["inserts"], "nic_cache_bytes": c["nic_cache_bytes"],
            "sim_us_cache": c["sim_us"], "sim_us_nocache": nc["sim_us"],
            "model_agrees": abs(sim_content - p["model_content_reduction_pct"]) < 0.01,
        })
    recs += served_records(prefixes, run)
    if narrow is not None:
        recs += served_records(prefixes, narrow)
    return recs


def plot(recs: list[dict], png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 5, figsize=(26, 4.8))
    ax = axs[0]
    f3 = [r for r in recs if r.get("case") == "fig3_model"]
    tr = {r["workload"]: r for r in recs if r.get("case") == "trace_replay"}
    markers = "os^vDx"
    for k, key in enumerate(dict.fromkeys(r["workload"] for r in f3)):
        rows = sorted((r for r in f3 if r["workload"] == key), key=lambda r: r["cache_bytes"])
        x = [r["cache_bytes"] for r in rows]
        line, = ax.plot(x, [r["model_content_reduction_pct"] for r in rows], marker=markers[k % 6], ms=4,
                        label=rows[0]["label"])
        ax.plot(x, [r["model_dual_content_reduction_pct"] for r in rows], ls="--", color=line.get_color(),
                marker=markers[k % 6], ms=3, mfc="none")
        if key in tr:
            ax.plot([tr[key]["cache_bytes"] * 1.15], [tr[key]["sim_pcie_reduction_pct"]], marker="P", ms=9,
                    color=line.get_color(), mec="black", ls="none")
        paper = cache_study.SEED_FIG3.get(key, {}).get("paper_pct")
        if paper is not None and 16 * 2**20 in x:
            ax.plot([16 * 2**20], [paper], marker="*", ms=11, color=line.get_color(), mec="black", ls="none")
    if f3:
        ax.axhline(cache_study.SEED_MIN_PCT, color="grey", lw=0.6, ls=":")
    ax.set_xscale("log", base=2)
    sizes = sorted({r["cache_bytes"] for r in f3})
    if sizes:
        ax.set_xticks(sizes, [cache_study.size_label(s) for s in sizes], rotation=45)
    ax.set_ylim(0, 100)
    ax.set_xlabel("cache size (4 KB blocks, LRU)")
    ax.set_ylabel("content traffic removed (%)")
    ax.set_title("Fig. 3, synthetic traces with the logs' published parameters: model (solid single,\n"
                 "dashed dual); * = the paper (dual 16 MB); + = simulated PCIe reduction, 16 MB", fontsize=9)
    ax.grid(True, alpha=0.3)
    if f3:
        ax.legend(fontsize=7)
    ax = axs[1]
    hit = [r for r in recs if r.get("case") == "hit_path"]
    for src in dict.fromkeys(r["source"] for r in hit):
        rows = sorted((r for r in hit if r["source"] == src), key=lambda r: r["frame_bytes"])
        ax.plot([r["frame_bytes"] for r in rows], [r["line_rate_pct"] for r in rows], marker="o", label=src)
    ax.axhline(100, color="grey", ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("frame size (bytes, with FCS)")
    ax.set_ylabel("% of 25G line rate (with preamble + IFG)")
    ax.set_title("Hit path: one 25G port, TX, payload source", fontsize=9)
    ax.set_ylim(0, 110)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax = axs[2]
    lat = [r for r in recs if r.get("case") == "latency"]
    srcs = list(dict.fromkeys(r["source"] for r in lat))
    szs = sorted({r["frame_bytes"] for r in lat})
    w = 0.8 / max(1, len(srcs))
    for k, s in enumerate(srcs):
        ys = [next((r["latency_ns"] for r in lat if r["source"] == s and r["frame_bytes"] == z), 0) for z in szs]
        ax.bar([i + k * w for i in range(len(szs))], ys, w, label=s)
    ax.set_xticks([i + w * (len(srcs) - 1) / 2 for i in range(len(szs))], [f"{z} B" for z in szs])
    ax.set_ylabel("doorbell to end of frame on the wire (ns, median)")
    ax.set_title("Unloaded descriptor-to-wire latency", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    ax = axs[3]
    sv = [r for r in recs if r.get("case") == "served_throughput"]
    lanes = sorted({r["pcie_lanes"] for r in sv})
    labels = list(dict.fromkeys(r["label"] for r in sv))
    w = 0.8 / max(1, 2 * len(lanes))
    for k, ln in enumerate(lanes):
        for m, (key, hatch) in enumerate((("served_gbps_nocache", ""), ("served_gbps_cache", "//"))):
            ys = [next((r[key] for r in sv if r["label"] == lb and r["pcie_lanes"] == ln), 0) for lb in labels]
            ax.bar([i + (2 * k + m) * w for i in range(len(labels))], ys, w, hatch=hatch,
                   label=f"Gen3 x{ln} {'with' if m else 'without'} cache", color=f"C{k}", alpha=0.55 + 0.45 * m)
    ax.axhline(LINE_GBPS, color="grey", ls=":")
    ax.set_xticks([i + w * (2 * len(lanes) - 1) / 2 for i in range(len(labels))], labels, fontsize=8)
    ax.set_ylabel("served Gb/s on the wire (25G port)")
    ax.set_title("Fig. 7b analogue: served throughput, trace windows", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    cache_study.plot_sensitivity(axs[4], recs)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def tables(recs: list[dict]) -> str:
    out = []
    f3 = [r for r in recs if r.get("case") == "fig3_model"]
    if f3:
        out += [cache_study.comparison_table(f3), ""]
    sens = cache_study.sensitivity_table(recs)
    if sens:
        out += [sens, ""]
    hit = [r for r in recs if r.get("case") == "hit_path"]
    if hit:
        out += ["| source | frame B | Gb/s | % line | Mpps | latency ns | PCIe down B/frame | PCIe up B/frame |",
                "|---|---|---|---|---|---|---|---|"]
        for r in hit:
            out.append(f"| {r['source']} | {r['frame_bytes']} | {r['gbps']:.2f} | {r['line_rate_pct']:.1f} | "
                       f"{r['mpps']:.2f} | {r['latency_ns'] if r['latency_ns'] is not None else '-'} | "
                       f"{r['pcie_rd_bytes_per_frame']:.0f} | {r['pcie_wr_bytes_per_frame']:.0f} |")
    lat = [r for r in recs if r.get("case") == "latency"]
    if lat:
        out += ["", "| source | frame B | median ns | min | max | n |", "|---|---|---|---|---|---|"]
        out += [f"| {r['source']} | {r['frame_bytes']} | {r['latency_ns']} | {r['latency_min_ns']} | "
                f"{r['latency_max_ns']} | {r['samples']} |" for r in lat]
    tr = [r for r in recs if r.get("case") == "trace_replay"]
    if tr:
        out += ["", "| workload | warm-up req | requests | packets | content KB | model content % | sim content % | "
                "sim PCIe % | agree |", "|---|---|---|---|---|---|---|---|---|"]
        out += [f"| {r['label']} | {r['warm_requests']} | {r['requests']} | {r['packets']} | {r['content_bytes'] / 1000:.0f} | "
                f"{r['model_content_reduction_pct']:.2f} | {r['sim_content_reduction_pct']:.2f} | "
                f"{r['sim_pcie_reduction_pct']:.2f} | {r['model_agrees']} |" for r in tr]
    sv = [r for r in recs if r.get("case") == "served_throughput"]
    if sv:
        out += ["", "| workload | PCIe link | served Gb/s without | with cache | gain % | PCIe bytes % |",
                "|---|---|---|---|---|---|"]
        out += [f"| {r['label']} | Gen3 x{r['pcie_lanes']} | {r['served_gbps_nocache']:.2f} | {r['served_gbps_cache']:.2f} | "
                f"{r['throughput_gain_pct']:+.1f} | {-r['sim_pcie_reduction_pct']:+.1f} |" for r in sv]
    return "\n".join(out)


def main(args: list[str], simulate, rel=str) -> int:
    ap = argparse.ArgumentParser(prog="offnic bench cache", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None, help="simulation seed (default: new; OFFNIC_SEED also)")
    ap.add_argument("--trace-seed", type=int, default=1, help="web trace generator seed (default 1)")
    ap.add_argument("--sizes", default=",".join(map(str, HIT_SIZES)), help="hit-path frame sizes with FCS")
    ap.add_argument("--sources", default="host,onchip,dram,host1,onchip_all,dram_all",
                    help="hit-path payload sources (host, onchip, dram: header from host + payload; host1: one DATA descriptor; onchip_all, dram_all: the whole frame from the cache, where the DRAM tier's latency shows)")
    ap.add_argument("--window-us", type=float, default=20.0)
    ap.add_argument("--latency-sizes", default="64,1518")
    ap.add_argument("--latency-frames", type=int, default=20)
    ap.add_argument("--requests", type=int, default=300, help="at most this many requests per workload")
    ap.add_argument("--trace-kb", type=int, default=400, help="content budget per workload prefix, KB")
    ap.add_argument("--warm-mb", type=int, default=128, help="warm-up content per workload, MB (directory only)")
    ap.add_argument("--workloads", default=",".join(webtrace.WORKLOADS))
    ap.add_argument("--no-fig3", action="store_true", help="skip the full-trace Fig. 3 study")
    ap.add_argument("--no-sensitivity", action="store_true",
                    help="skip the sweep of the assumed trace parameters (alpha, burst) at dual 16 MB")
    ap.add_argument("--dram-model", choices=["ddr4", "ideal"], default="ddr4",
                    help="the DRAM tier: the K3P-Q's DDR4 timing model (default) or an ideal memory")
    ap.add_argument("--narrow-lanes", type=int, default=2,
                    help="Fig. 7b: replay the windows again with the PCIe link trained down to this many lanes "
                         "(0: skip; default 2)")
    ap.add_argument("--inserts-within-response", action="store_true",
                    help="the replay's inserts run ahead only within their own response (the plan before "
                         "cache-why), not into earlier responses' packets")
    ap.add_argument("--timeline", action="store_true",
                    help="diagnosis: record each replay's commands, frame times and the cache's AXI4 handshakes "
                         "in build/bench-cache/raw.json")
    ap.add_argument("--out", default=None, help="JSON (default results/bench-cache.json)")
    a = ap.parse_args(args)
    t0 = time.monotonic()
    out = Path(a.out) if a.out else ROOT / "results" / "bench-cache.json"
    out = out if out.is_absolute() else Path.cwd() / out
    names = [w for w in a.workloads.split(",") if w]
    print(f"[offnic] bench cache: windows of the synthetic traces ({', '.join(names)}), at most {a.requests} requests / "
          f"{a.trace_kb} KB each", flush=True)
    prefixes = [trace_prefix(n, a.trace_seed, a.requests, a.trace_kb * 1000, a.warm_mb * 10**6) for n in names]
    for p in prefixes:
        print(f"  {p['label']:<10} warm-up {len(p['warm_file_id']):>7,} requests ({p['warm_content_bytes'] / 1e6:.0f} MB), "
              f"then {len(p['file_id'])} requests ({sum(p['file_size']) / 1e3:.0f} KB) simulated; model "
              f"{p['model_content_reduction_pct']:.1f}%", flush=True)
    fig3, fig3_log, sens = [], [], []
    th = None
    if not (a.no_fig3 and a.no_sensitivity):
        print("[offnic] Fig. 3 (directory model, full synthetic traces) and the sensitivity to the assumed "
              "trace parameters, in the background", flush=True)

        def study():
            if not a.no_fig3:
                fig3.extend(cache_study.run_fig3(hw.BUILD / "bench" / "cache-fig3.json",
                                                 hw.BUILD / "bench" / "cache-fig3.png",
                                                 seed=a.trace_seed, log=fig3_log.append))
            if not a.no_sensitivity:
                sens.extend(cache_study.sensitivity(seed=a.trace_seed, log=fig3_log.append))
        th = threading.Thread(target=study, daemon=True)
        th.start()
    cfg = {"dram_model": a.dram_model, "timeline": a.timeline, "insert_across": not a.inserts_within_response,
           "hit": {"sources": [x for x in a.sources.split(",") if x],
                   "sizes": [int(x) for x in a.sizes.split(",") if x], "window_us": a.window_us,
                   "settle_us": 8.0, "latency_sizes": [int(x) for x in a.latency_sizes.split(",") if x],
                   "latency_frames": a.latency_frames},
           # the requests go through a file: an environment variable cannot hold them
           "trace_file": str(hw.BUILD / "bench-cache" / "trace-input.json")}
    Path(cfg["trace_file"]).parent.mkdir(parents=True, exist_ok=True)
    Path(cfg["trace_file"]).write_text(json.dumps(
        [{k: p[k] for k in ("workload", "cache_bytes", "file_id", "file_size", "revision",
                            "warm_file_id", "warm_file_size", "warm_revision")} for p in prefixes]))
    last = {"phase": None}

    def show(rec: dict) -> None:
        if rec.get("phase") != last["phase"]:
            last["phase"] = rec.get("phase")
            print(f"[offnic] sim {rec.get('t_us', 0):9.1f} us  wall {rec.get('wall_s', 0):6.1f} s  {rec.get('phase')}",
                  flush=True)

    t_sim = time.monotonic()
    narrow, nth = {}, None
    if a.narrow_lanes:
        # a second simulation at the same time: the same windows over a narrow host link
        ncfg = {"pcie_lanes": a.narrow_lanes, "dram_model": a.dram_model, "insert_across": not a.inserts_within_response, "hit": {"sizes": [], "latency_sizes": []},
                "trace_file": cfg["trace_file"]}
        seed = a.seed

        def narrow_sim():
            narrow.update(simulate([], hw.BUILD / "bench-cache-narrow", seed, None,
                                   test_module="offnic_sim.cache.cache_bench", extra=ncfg))
        print(f"[offnic] Fig. 7b: the windows again over a Gen3 x{a.narrow_lanes} link, a second simulation "
              f"in the background", flush=True)
        nth = threading.Thread(target=narrow_sim, daemon=True)
        nth.start()
        time.sleep(2)
    run = simulate([], hw.BUILD / "bench-cache", a.seed, show, test_module="offnic_sim.cache.cache_bench", extra=cfg)
    if nth is not None:
        nth.join()
        if not narrow:
            raise SystemExit("[offnic] the narrow-link simulation failed; see build/bench-cache-narrow/sim.log")
    sim_wall = time.monotonic() - t_sim
    if th is not None:
        th.join()
        print("\n".join(fig3_log), flush=True)
    recs = records(fig3, prefixes, run, narrow or None, sens)
    head = {"command": " ".join(["./offnic", "bench", "cache", *args]), "seed": run["seed"],
            "trace_seed": a.trace_seed, "replay": " ".join([f"OFFNIC_SEED={run['seed']}", "./offnic", "bench", "cache", *args]),
            "hw_sources_sha256": run.get("hw_sources_sha256"), "rtl_designs": run.get("rtl_designs"), "sim_wall_s": round(sim_wall, 1),
            "sim_us": round(run["sim_ns"] / 1000, 1), "wall_s": round(time.monotonic() - t0, 1),
            "host_latency_ns": run.get("host_latency_ns"),
            "dram_model": run.get("dram_model"), "dram_counts": run.get("dram_counts"),
            "dram_params": dataclasses.asdict(ddr4_model.K3P_Q_DDR4) if run.get("dram_model") == "ddr4" else None,
            "dram_idle_read_ns": {k: round(ddr4_model.K3P_Q_DDR4.read_latency(k), 1) for k in ("hit", "closed", "conflict")}
            if run.get("dram_model") == "ddr4" else None,
            "traces": "synthetic, with the logs' published parameters (webtrace.PARAMETER_SOURCES)",
            "trace_parameter_sources": webtrace.PARAMETER_SOURCES,
            "narrow_seed": narrow.get("seed"), "narrow_sim_us": round(narrow["sim_ns"] / 1000, 1) if narrow else None}
    recs[0] = {**head, **recs[0]}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(recs, indent=1) + "\n")
    png = out.with_suffix(".png")
    plot(recs, png)
    print()
    print(tables(recs))
    print(f"\n[offnic] wrote {rel(out)} and {rel(png)} in {time.monotonic() - t0:.0f} s "
          f"(simulation {sim_wall:.0f} s wall, {run['sim_ns'] / 1000:.0f} us simulated; seed {run['seed']})")
    bad = [r["workload"] for r in recs if r.get("case") == "trace_replay" and not r["model_agrees"]]
    if bad:
        print(f"[offnic] the simulation's content reduction differs from the model for {', '.join(bad)}")
    return 1 if run.get("driver_errors") or narrow.get("driver_errors") or bad else 0
