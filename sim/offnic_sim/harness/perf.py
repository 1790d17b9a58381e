"""`perf report` read back as numbers: the share of samples per shared object and symbol,
for the simulation's profiles (bench/sim_speed.py, fast/speed.py)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

_LINE = re.compile(r"^\s*([\d.]+)%\s+(?:(\S+)\s+)?\[[.k]\]\s+(.*)$")


def samples(data: Path) -> list[tuple[float, str, str]]:
    """(percent of samples, shared object, symbol) for every symbol in `data`."""
    report = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children", "-q",
                             "--sort", "dso,sym", "--percent-limit", "0"],
                            capture_output=True, text=True, check=True).stdout
    return [(float(m.group(1)), m.group(2) or "", m.group(3)) for m in map(_LINE.match, report.splitlines()) if m]
