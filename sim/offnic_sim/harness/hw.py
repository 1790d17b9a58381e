"""Chisel elaboration: from a generator name and parameters to SystemVerilog files.

Everything here is cached by content: the Chisel jar is rebuilt only when the hardware
sources change, and a (generator, parameters) pair is elaborated once per source
version. Safe to call from many pytest-xdist workers at once (file locks).
"""
from __future__ import annotations

import hashlib
import os
import json
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "build"
LOCKS = BUILD / "locks"
MILL = ROOT / ".tools" / "mill"
JAR = ROOT / "out" / "hw" / "assembly.dest" / "out.jar"
CONFIGS = ROOT / "hw" / "configs"


def _lock(name: str) -> FileLock:
    LOCKS.mkdir(parents=True, exist_ok=True)
    return FileLock(str(LOCKS / f"{name}.lock"))


def digest(*parts: object) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()


def hw_sources_digest() -> str:
    """Hash of everything that determines the generated RTL: the Chisel sources, build.sc,
    and the Chisel, Mill and PicoRV32 pins (not the rest of pins.toml: a new tool for the driver or
    the firmware does not change the hardware, nor stale what was measured on it)."""
    files = sorted((ROOT / "hw" / "src").rglob("*.scala")) + [ROOT / "build.sc"]
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    with open(ROOT / "pins.toml", "rb") as f:
        pins = tomllib.load(f)
    h.update(b"pins.toml")
    h.update(repr({k: pins[k] for k in ("chisel", "mill")}).encode())
    # The control processor's Verilog comes from this package (hw/src/offnic/cpu/PicoRv32.scala).
    h.update(repr([p for p in pins["python"]["packages"] if p.startswith("pythondata-cpu-picorv32")]).encode())
    return h.hexdigest()


def picorv32_verilog() -> Path:
    """picorv32.v of the pinned PyPI package, which the control processor's BlackBox wraps."""
    import pythondata_cpu_picorv32
    return Path(pythondata_cpu_picorv32.data_location) / "picorv32.v"


def ensure_jar() -> Path:
    """Compile the Chisel sources into one jar (mill hw.assembly) if they changed."""
    stamp = BUILD / "hw-jar.stamp"
    with _lock("jar"):
        want = hw_sources_digest()
        if JAR.exists() and stamp.exists() and stamp.read_text() == want:
            return JAR
        print("[offnic] compiling Chisel sources (mill hw.assembly)", flush=True)
        subprocess.run([str(MILL), "--no-server", "--ticker", "false", "hw.assembly"],
                       cwd=ROOT, check=True)
        if hw_sources_digest() != want:
            # A source changed while Mill compiled: its incremental state cannot be
            # trusted for that file, so start the module's compile afresh.
            shutil.rmtree(ROOT / "out" / "hw", ignore_errors=True)
            subprocess.run([str(MILL), "--no-server", "--ticker", "false", "hw.assembly"],
                           cwd=ROOT, check=True)
            want = hw_sources_digest()
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(want)
    return JAR


# A Design whose top is "sv:<path>" is a SystemVerilog test fixture (no Chisel), such as
# tests/host/axi4_wire.sv, the wires a bus model's unit test puts between master and slave.
SV_FIXTURE = "sv:"


@dataclass(frozen=True)
class Design:
    """A generator (`package.Object` under offnic, e.g. "axis.AxisFifo") with parameters."""

    top: str
    params: tuple[tuple[str, str], ...] = ()
    label: str = field(default="", compare=False)

    @staticmethod
    def of(top: str, label: str = "", **params: object) -> "Design":
        def text(v: object) -> str:
            return str(v).lower() if isinstance(v, bool) else str(v)
        return Design(top, tuple(sorted((k, text(v)) for k, v in params.items())), label)

    @property
    def name(self) -> str:
        return self.label or self.top.rsplit(".", 1)[-1]

    def key(self) -> str:
        if self.top.startswith(SV_FIXTURE):  # a hand-written test fixture: its own text
            return digest(self.top, self.params, (ROOT / self.top[len(SV_FIXTURE):]).read_bytes())[:16]
        return digest(self.top, self.params, hw_sources_digest())[:16]

    def describe(self) -> str:
        return self.top + "(" + ", ".join(f"{k}={v}" for k, v in self.params) + ")"


@dataclass(frozen=True)
class Rtl:
    """Generated SystemVerilog for one design."""

    dir: Path
    top_module: str

    @property
    def files(self) -> list[Path]:
        listed = (self.dir / "filelist.f").read_text().split()
        return [self.dir / f for f in listed]


def _job_line(design: Design, out: Path) -> str:
    return "\t".join([design.top, str(out)] + [f"{k}={v}" for k, v in design.params])


def elaborate(designs: list[Design], root: Path | None = None) -> list[Rtl]:
    """Elaborate designs (one JVM for all that are not cached) and return their RTL."""
    root = root or BUILD / "rtl"
    outs = [root / f"{d.name}-{d.key()}" for d in designs]
    with _lock("elaborate"):
        todo = [(d, o) for d, o in zip(designs, outs) if not (o / "top_module").exists()]
        for d, o in [t for t in todo if t[0].top.startswith(SV_FIXTURE)]:
            src = ROOT / d.top[len(SV_FIXTURE):]
            o.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, o / src.name)
            (o / "filelist.f").write_text(src.name + "\n")
            (o / "top_module").write_text(src.stem + "\n")
        todo = [(d, o) for d, o in todo if not d.top.startswith(SV_FIXTURE)]
        if todo:
            ensure_jar()
            jobs = BUILD / "elaborate-jobs.tsv"
            jobs.write_text("".join(_job_line(d, o) + "\n" for d, o in todo))
            env = dict(os.environ, OFFNIC_PICORV32=str(picorv32_verilog()))
            subprocess.run(["java", "-cp", str(JAR), "offnic.Elaborate", str(jobs)], cwd=ROOT, check=True, env=env)
            for d, o in todo:
                (o / "design.json").write_text(json.dumps({"top": d.top, "params": dict(d.params)}, indent=1))
    return [Rtl(o, (o / "top_module").read_text().strip()) for o in outs]


def rtl_digest(rtl: Rtl) -> str:
    """Hash of a design's generated SystemVerilog (its files' names and text): exactly the
    hardware a bench measured. Unlike `hw_sources_digest`, a change elsewhere in hw/src
    (another block, a board top level) leaves it alone."""
    h = hashlib.sha256()
    for f in sorted(rtl.files, key=lambda p: p.name):
        h.update(f.name.encode())
        h.update(b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


def rtl_record(designs: list[Design], rtls: list[Rtl] | None = None) -> list[dict]:
    """What a results file records of the designs it measured (`./offnic results` compares
    it with today's): generator, parameters and `rtl_digest`. `rtls`: their RTL if already
    elaborated (elsewhere than build/rtl), else they are elaborated here (cached)."""
    rtls = rtls if rtls is not None else elaborate(designs)
    return [{"top": d.top, "params": dict(d.params), "rtl_sha256": rtl_digest(r)} for d, r in zip(designs, rtls)]


def load_config(name: str) -> list[Design]:
    """The designs of a named configuration, hw/configs/NAME.toml."""
    path = CONFIGS / f"{name}.toml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in CONFIGS.glob("*.toml")))
        raise SystemExit(f"no configuration '{name}' (known: {known})")
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return [Design.of(d["top"], label=d["label"], **d.get("params", {})) for d in data["design"]]


def config_names() -> list[str]:
    return sorted(p.stem for p in CONFIGS.glob("*.toml"))


def build_config(name: str) -> dict[str, Rtl]:
    """Elaborate a configuration into build/NAME/ with one folder and file list per design."""
    designs = load_config(name)
    rtls = elaborate(designs, BUILD / "configs" / name)
    index = {d.name: r for d, r in zip(designs, rtls)}
    lines = [f"{label}\t{r.top_module}\t{r.dir / 'filelist.f'}" for label, r in index.items()]
    (BUILD / "configs" / name / "designs.tsv").write_text("\n".join(lines) + "\n")
    return index

