"""The board flow's commands: `constraints` (render every board's XDC and IP Tcl from
its facts, or check the committed ones are current), `vivado` (the batch build),
`program` and `flash` (JTAG)."""
from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from offnic_sim.board import facts, tops, vivado, xdc
from offnic_sim.harness import hw

BOARD_TOPS = {"k3pq": "offnic_k3pq", "as02mc04": "offnic_as02mc04"}


def rendered(board: str) -> dict[Path, str]:
    """Every generated file of one board: path -> text."""
    b = facts.load(board)
    bad = b.problems()
    if bad:
        raise SystemExit(f"constraints/{board}/board.toml: " + "; ".join(bad))
    d = facts.CONSTRAINTS / board
    out = {d / name: fn(b) for name, fn in xdc.RENDERERS.items()}
    out[d / "ip.tcl"] = vivado.ip_tcl(b)
    return out


def cmd_constraints(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="offnic constraints",
                                 description="render constraints/<board>/{pins,timing,config}.xdc and ip.tcl "
                                             "from constraints/<board>/board.toml")
    ap.add_argument("--check", action="store_true", help="only check that the committed files are current")
    a = ap.parse_args(args)
    stale = []
    for board in facts.BOARDS:
        for path, text in rendered(board).items():
            if path.exists() and path.read_text() == text:
                continue
            stale.append(path)
            if not a.check:
                path.write_text(text)
                print(f"[offnic] wrote {path.relative_to(hw.ROOT)}")
    if a.check and stale:
        print("stale (run ./offnic constraints): " + ", ".join(str(p.relative_to(hw.ROOT)) for p in stale))
        return 1
    return 0


def cmd_vivado(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="offnic vivado", description="Vivado non-project batch build of a board")
    ap.add_argument("--board", choices=facts.BOARDS, required=True)
    ap.add_argument("--step", choices=vivado.STEPS, default="bit")
    ap.add_argument("--sources", nargs="*", type=Path, default=None,
                    help="SystemVerilog of the board top (default: the elaborated board top)")
    a = ap.parse_args(args)
    if cmd_constraints(["--check"]):
        return 1
    b = facts.load(a.board)
    out_dir = hw.BUILD / "vivado" / a.board
    out_dir.mkdir(parents=True, exist_ok=True)
    if a.sources is not None:
        top, sources = BOARD_TOPS[a.board], a.sources
    else:  # the board top, elaborated from hw/configs/board-<board>.toml
        r = tops.rtl(a.board)
        top, sources = r.top_module, r.files
    run = out_dir / "run.tcl"
    run.write_text(vivado.run_tcl(b, top, [s.resolve() for s in sources], out_dir, a.step))
    print(f"[offnic] wrote {run.relative_to(hw.ROOT)}")
    if not sources:
        print(f"[offnic] no SystemVerilog given for {top}")
        return 1
    exe = vivado.vivado()
    if exe is None:
        print("[offnic] Vivado is not on PATH: the scripts are written (above); run them on a machine with "
              f"Vivado 2023.2 or later: vivado -mode batch -source {run}")
        return 1
    return subprocess.run([exe, "-mode", "batch", "-nojournal", "-log", str(out_dir / "vivado.log"),
                           "-source", str(run)], cwd=out_dir).returncode


def _jtag(script: str, board: str, extra: dict[str, str], hw_server: str) -> int:
    exe = vivado.vivado()
    if exe is None:
        print("[offnic] Vivado (its hardware manager) is not on PATH")
        return 1
    out_dir = hw.BUILD / "vivado" / board
    sets = "".join(f"set {k} {v}\n" for k, v in {**extra, "hw_server": hw_server}.items())
    run = out_dir / f"{script}_run.tcl"
    run.write_text(sets + f"source {facts.CONSTRAINTS / 'common' / (script + '.tcl')}\n")
    return subprocess.run([exe, "-mode", "batch", "-nojournal", "-nolog", "-source", str(run)]).returncode


def cmd_program(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="offnic program", description="load the bitstream over JTAG (volatile)")
    ap.add_argument("--board", choices=facts.BOARDS, required=True)
    ap.add_argument("--hw-server", default="localhost:3121")
    a = ap.parse_args(args)
    bit = hw.BUILD / "vivado" / a.board / f"{BOARD_TOPS[a.board]}.bit"
    return _jtag("program", a.board, {"bitfile": str(bit)}, a.hw_server)


def cmd_flash(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="offnic flash", description="write the flash image over JTAG")
    ap.add_argument("--board", choices=facts.BOARDS, required=True)
    ap.add_argument("--hw-server", default="localhost:3121")
    a = ap.parse_args(args)
    b = facts.load(a.board)
    mcs = hw.BUILD / "vivado" / a.board / f"{BOARD_TOPS[a.board]}.mcs"
    return _jtag("flash", a.board, {"mcsfile": str(mcs), "flash_part": b.flash["part"]}, a.hw_server)


COMMANDS = {"constraints": cmd_constraints, "vivado": cmd_vivado, "program": cmd_program, "flash": cmd_flash}
