"""The seed paper's Fig. 3 with the directory model alone: how much HTTP content traffic
NIC payload caches of 64 KB ... 16 MB (4 KB blocks, LRU) keep off the I/O bus, for the
six synthetic web traces of `webtrace`, replayed whole through the driver core's cache
directory (sw-driver/cache, via `cachedir`).

Each response is the whole file, sent in packets of at most MSS payload bytes, each
planned as the driver would (inserts of missing blocks, then appends); files larger than
the cache are sent from host memory. Content traffic = bytes inserted into the cache +
bytes appended from host memory; the reduction is 1 - traffic / content bytes.

Two models per point, as in the seed's figure:
- single: one NIC with a cache of S (the figure's solid lines);
- dual: two NICs with a cache of S each, requests dealt to them alternately (the dashed
  lines, "two caches of the same size ... with the trace split evenly across the two").
  The seed quotes the dual 16 MB points in its text; those are the numbers in SEED_FIG3.

    PYTHONPATH=sim .venv/bin/python -m offnic_sim.cache.cache_study [--workloads rice,nasa]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from offnic_sim.cache import webtrace
from offnic_sim.host.cachedir import ROOT, CacheDir, content_reduction_pct

KIB, MIB = 1 << 10, 1 << 20
SIZES = [(64 * KIB) << k for k in range(9)]   # 64 KB .. 16 MB, as in the seed's Fig. 3
BLOCK = 4096
MSS = 1448          # TCP payload of a 1500-byte MTU frame with timestamps
NICS_DUAL = 2

# What the seed's text says of Fig. 3 (dual 16 MB caches), and Fig. 7a's measurement.
SEED_FIG3 = {
    "berkeley": {"dual_16mb_pct": 12.0, "says": "about 12 percent"},
    "ibm": {"dual_16mb_pct": None, "says": "more than 50 percent; 55-89 measured (Fig. 7a)"},
    "nasa": {"dual_16mb_pct": None, "says": "more than 50 percent; 55-89 measured (Fig. 7a)"},
    "rice": {"dual_16mb_pct": None, "says": "more than 50 percent; 55-89 measured (Fig. 7a)"},
    "spec": {"dual_16mb_pct": 25.0, "says": "about 25 percent (static content)"},
    "worldcup": {"dual_16mb_pct": 89.0, "says": "more than 50 percent; 89 measured (Fig. 7a)"},
}
SEED_MIN_PCT = 50.0  # "more than 50 percent" for IBM, NASA, Rice and World Cup

DEFAULT_JSON = ROOT / "build" / "bench" / "cache-fig3.json"
DEFAULT_PNG = ROOT / "build" / "bench" / "cache-fig3.png"


def replay(parts: list[webtrace.Trace], cache_bytes: int, block_bytes: int = BLOCK,
           mss: int = MSS) -> dict[str, int]:
    """Counters summed over one cache directory per part (one NIC each)."""
    total: dict[str, int] = {}
    for part in parts:
        with CacheDir(cache_bytes, block_bytes) as d:
            d.replay_trace(part.file_id, part.revision, part.file_size, mss)
            for name, value in d.stats().items():
                total[name] = total.get(name, 0) + value
    return total


def study_workload(trace: webtrace.Trace, sizes: list[int], block_bytes: int = BLOCK,
                   mss: int = MSS) -> list[dict]:
    """Records of one trace for each cache size: single and dual models."""
    w = trace.workload
    halves = trace.split(NICS_DUAL)
    seed = SEED_FIG3.get(w.key, {})
    records = []
    for size in sizes:
        single = replay([trace], size, block_bytes, mss)
        dual = replay(halves, size, block_bytes, mss)
        records.append({
            "workload": w.key,
            "label": w.label,
            "cache_bytes": size,
            "block_bytes": block_bytes,
            "mss": mss,
            "requests": len(trace),
            "content_bytes": single["content_bytes"],
            "model_content_reduction_pct": round(content_reduction_pct(single), 2),
            "model_dual_content_reduction_pct": round(content_reduction_pct(dual), 2),
            "model_hit_pct": round(100.0 * single["hits"] / max(1, single["hits"] + single["misses"]), 2),
            "model_uncacheable_pct": round(100.0 * single["uncacheable_bytes"] / max(1, single["content_bytes"]), 2),
            "model_stats": single,
            "model_dual_stats": dual,
            "seed_dual_16mb_pct": seed.get("dual_16mb_pct") if size == 16 * MIB else None,
            "seed_says": seed.get("says") if size == 16 * MIB else None,
        })
    return records


def run(workloads: list[str] | None = None, sizes: list[int] | None = None, seed: int = 1,
        log=print) -> list[dict]:
    """Every (workload, cache size) record; `log` gets one progress line per workload."""
    records = []
    for name in workloads or list(webtrace.WORKLOADS):
        t0 = time.perf_counter()
        trace = webtrace.generate(name, seed=seed)
        t1 = time.perf_counter()
        rows = study_workload(trace, sizes or SIZES)
        t2 = time.perf_counter()
        for r in rows:
            r["seconds_generate"] = round(t1 - t0, 2)
            r["seconds_replay"] = round(t2 - t1, 2)
        records += rows
        top = rows[-1]
        log(f"  {trace.workload.label:<10} {len(trace):>10,} requests  "
            f"{top['cache_bytes'] // KIB:>6} KB: single {top['model_content_reduction_pct']:5.1f}%  "
            f"dual {top['model_dual_content_reduction_pct']:5.1f}%   "
            f"(generate {t1 - t0:.1f} s, replay {t2 - t1:.1f} s)")
    return records


def size_label(nbytes: int) -> str:
    return f"{nbytes // MIB} MB" if nbytes >= MIB else f"{nbytes // KIB} KB"


def plot(records: list[dict], out_png: Path) -> None:
    """Reduction vs cache size in the seed's style: solid single, dashed dual."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    markers = "os^vDx"
    for k, key in enumerate(dict.fromkeys(r["workload"] for r in records)):
        rows = sorted((r for r in records if r["workload"] == key), key=lambda r: r["cache_bytes"])
        x = [r["cache_bytes"] for r in rows]
        line, = ax.plot(x, [r["model_content_reduction_pct"] for r in rows],
                        marker=markers[k % len(markers)], ms=4, label=rows[0]["label"])
        ax.plot(x, [r["model_dual_content_reduction_pct"] for r in rows], ls="--",
                color=line.get_color(), marker=markers[k % len(markers)], ms=3, mfc="none")
        seed = SEED_FIG3.get(key, {}).get("dual_16mb_pct")
        if seed is not None and 16 * MIB in x:
            ax.plot([16 * MIB], [seed], marker="*", ms=11, color=line.get_color(), mec="black", ls="none")
    ax.set_xscale("log", base=2)
    sizes = sorted({r["cache_bytes"] for r in records})
    ax.set_xticks(sizes, [size_label(s) for s in sizes], rotation=45)
    ax.set_ylim(0, 100)
    ax.set_xlabel("cache size per NIC (4 KB blocks, LRU)")
    ax.set_ylabel("HTTP content traffic removed (%)")
    ax.set_title("Potential reduction in content traffic (directory model, synthetic traces)",
                 fontsize=10)
    ax.axhline(SEED_MIN_PCT, color="grey", lw=0.6, ls=":")
    ax.grid(True, which="major", alpha=0.3)
    from matplotlib.lines import Line2D
    handles, labels = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="black"), Line2D([], [], color="black", ls="--"),
                Line2D([], [], marker="*", color="grey", mec="black", ls="none", ms=10)]
    labels += ["single NIC", "two NICs (dual)", "seed, dual 16 MB"]
    ax.legend(handles, labels, fontsize=8, ncol=2, loc="upper left")
    fig.tight_layout()
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=120)
    plt.close(fig)


def table(records: list[dict]) -> str:
    """Workload x cache size, 'single / dual' percentages."""
    sizes = sorted({r["cache_bytes"] for r in records})
    keys = list(dict.fromkeys(r["workload"] for r in records))
    cell = {(r["workload"], r["cache_bytes"]): r for r in records}
    lines = ["| workload | " + " | ".join(size_label(s) for s in sizes) + " | seed, dual 16 MB |",
             "|---|" + "---|" * (len(sizes) + 1)]
    for key in keys:
        row = [f"{cell[key, s]['model_content_reduction_pct']:.1f} / "
               f"{cell[key, s]['model_dual_content_reduction_pct']:.1f}" for s in sizes]
        label = cell[key, sizes[0]]["label"]
        lines.append(f"| {label} | " + " | ".join(row) + f" | {SEED_FIG3.get(key, {}).get('says', '')} |")
    return "\n".join(lines)


def run_fig3(out_json: Path | str = DEFAULT_JSON, out_png: Path | str = DEFAULT_PNG,
             workloads: list[str] | None = None, sizes: list[int] | None = None,
             seed: int = 1, log=print) -> list[dict]:
    """Run the study, write the records (JSON list) and the plot; return the records."""
    t0 = time.perf_counter()
    records = run(workloads, sizes, seed, log)
    elapsed = time.perf_counter() - t0
    for r in records:
        r["seconds_study"] = round(elapsed, 1)
    out_json, out_png = Path(out_json), Path(out_png)
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(records, indent=1) + "\n")
    plot(records, out_png)
    log(table(records))
    log(f"[cache_study] {len(records)} points in {elapsed:.1f} s -> {out_json}, {out_png}")
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m offnic_sim.cache.cache_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", help=f"comma-separated ({','.join(webtrace.WORKLOADS)}); default all")
    ap.add_argument("--sizes-kb", help="comma-separated cache sizes in KB; default 64..16384")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out-json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--out-png", type=Path, default=DEFAULT_PNG)
    a = ap.parse_args(argv)
    workloads = a.workloads.split(",") if a.workloads else None
    sizes = [int(s) * KIB for s in a.sizes_kb.split(",")] if a.sizes_kb else None
    run_fig3(a.out_json, a.out_png, workloads, sizes, a.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
