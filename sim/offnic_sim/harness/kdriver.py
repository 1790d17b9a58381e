"""Building and checking the Linux driver (sw-driver/linux + sw-driver/core): what
`./offnic driver` and tests/driver/test_kmod_build.py run.

- `kernel_dir()`: the headers `linux-headers-amd64` points at (`./offnic setup` installs
  it; KDIR in the environment overrides).
- `build_module()`: a clean build of offnic.ko into build/sw/linux with `W=1` and
  `C=2` (sparse on every file); returns the compiler's and sparse's findings.
- `build_ctl()`: the user-space library and tool (sw-driver/ctl: liboffnic_ctl.a,
  offnic-ctl) into build/sw/ctl, warnings as errors (kernel style, not checkpatch's:
  it is user space, with stdint types).
- `checkpatch()`: the kernel's checkpatch.pl (setup extracts it from the pinned
  linux-source package into .tools/) with `--strict --no-tree` over every source file
  of the module; returns every ERROR, WARNING and CHECK.
"""
from __future__ import annotations

import os
import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from offnic_sim.harness import hw

ROOT = hw.ROOT
SW = ROOT / "sw-driver"
LINUX_SRC = SW / "linux"
CORE_SRC = SW / "core"
BUILD = ROOT / "build" / "sw" / "linux"
MODULE = BUILD / "offnic.ko"
CTL_SRC = SW / "ctl"
CTL_BUILD = ROOT / "build" / "sw" / "ctl"
CTL = CTL_BUILD / "offnic-ctl"
HEADERS_PACKAGE = "linux-headers-amd64"

# compiler and sparse diagnostics look like "file:line:col: warning: ..."
_DIAG = re.compile(r"(warning|error):", re.IGNORECASE)
_CHECKPATCH = re.compile(r"^(\S+):(\d+): (ERROR|WARNING|CHECK):")


@dataclass
class BuildResult:
    ok: bool                         # make succeeded and offnic.ko exists
    findings: list[str] = field(default_factory=list)  # compiler and sparse warnings/errors
    files_checked: int = 0           # files sparse checked (lines "CHECK ...")
    log: str = ""


def kernel_dir() -> Path:
    """The kernel build tree: $KDIR, else /usr/src/<the package linux-headers-amd64 depends on>."""
    if os.environ.get("KDIR"):
        return Path(os.environ["KDIR"])
    dep = subprocess.run(["dpkg-query", "-W", "-f", "${Depends}", HEADERS_PACKAGE],
                         capture_output=True, text=True)
    m = re.search(r"(linux-headers-[\w.+-]+)", dep.stdout)
    if dep.returncode or not m:
        raise RuntimeError(f"{HEADERS_PACKAGE} is not installed (./offnic setup installs it)")
    kdir = Path("/usr/src") / m.group(1)
    if not (kdir / "Makefile").exists():
        raise RuntimeError(f"{kdir} has no Makefile: the kernel headers are incomplete")
    return kdir


def checkpatch_script() -> Path:
    """checkpatch.pl as `./offnic setup` extracted it (pins.toml [checkpatch])."""
    with open(ROOT / "pins.toml", "rb") as f:
        version = tomllib.load(f)["checkpatch"]["version"]
    path = ROOT / ".tools" / f"checkpatch-{version}" / "checkpatch.pl"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run ./offnic setup")
    return path


def source_files() -> list[Path]:
    """Every source file of the module and the core (the user-space host included)."""
    files = sorted(LINUX_SRC.glob("*.[ch]")) + sorted(CORE_SRC.rglob("*.[ch]")) + [SW / "include" / "offnic_uapi.h"]
    return files + [LINUX_SRC / "Kbuild", LINUX_SRC / "Makefile"]


def build_module(jobs: int = 2) -> BuildResult:
    """A clean `make W=1 C=2` of offnic.ko; warnings and sparse findings are failures."""
    kdir = kernel_dir()
    subprocess.run(["make", "-s", "-C", str(LINUX_SRC), f"O_BUILD={BUILD}", "clean"], check=True)
    p = subprocess.run(["make", "-C", str(LINUX_SRC), f"KDIR={kdir}", f"O_BUILD={BUILD}", "W=1", "C=2",
                        f"-j{jobs}"], capture_output=True, text=True)
    log = p.stdout + p.stderr
    findings = [line for line in log.splitlines() if _DIAG.search(line) and "Skipping BTF" not in line]
    checked = sum(1 for line in log.splitlines() if line.strip().startswith("CHECK "))
    return BuildResult(ok=p.returncode == 0 and MODULE.exists(), findings=findings,
                       files_checked=checked, log=log)


def build_ctl() -> BuildResult:
    """liboffnic_ctl.a and offnic-ctl (user space, static, -Wall -Wextra -Werror): a clean build."""
    subprocess.run(["make", "-s", "-C", str(CTL_SRC), f"O={CTL_BUILD}", "clean"], check=True)
    p = subprocess.run(["make", "-C", str(CTL_SRC), f"O={CTL_BUILD}"], capture_output=True, text=True)
    log = p.stdout + p.stderr
    findings = [line for line in log.splitlines() if _DIAG.search(line)]
    return BuildResult(ok=p.returncode == 0 and CTL.exists(), findings=findings, log=log)


def checkpatch(files: list[Path] | None = None) -> tuple[list[str], int]:
    """checkpatch.pl --strict --no-tree over `files` (default: every source file);
    returns (every ERROR/WARNING/CHECK line, files checked)."""
    files = source_files() if files is None else files
    p = subprocess.run(["perl", str(checkpatch_script()), "--strict", "--no-tree", "--terse",
                        "--show-types", "--no-summary", "-f", *map(str, files)],
                       capture_output=True, text=True, cwd=ROOT)
    findings = [line for line in (p.stdout + p.stderr).splitlines() if _CHECKPATCH.match(line)]
    if p.returncode and not findings:  # failed without saying why: report its output
        findings = [f"checkpatch.pl exited {p.returncode}: {(p.stdout + p.stderr).strip()[:2000]}"]
    return findings, len(files)
