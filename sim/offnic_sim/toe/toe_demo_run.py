"""`./offnic demo`'s TCP offload part, host side: runs toe_demo.py (cocotb) on the
`nic-toe` build on the fast harness and returns its results. The default demo's cases run
on the `nic` build, so this part is a second simulation. Its lines and plot panel are in
bench/report.py (toe_lines, toe_panel).
"""
from __future__ import annotations

import json
from pathlib import Path

from offnic_sim.harness import hw

CONFIG = "nic-toe"

# The demo's settings: 8 connections, 64-byte segments filling both ports beside the host
# frames (Table 1's case (c)), 4 KB the host wrote but had not sent in each send ring;
# simulated us per phase after `warm_us`. About 400 us of simulated time per mode. (All are
# reserved before any completes: the engine holds at most 8 reservations at once, ST_RESERVES_FULL
# beyond; more connections would need batches.)
DEFAULT = {"connections": 8, "payload": 64, "queued": 4096, "warm_us": 10.0, "before_us": 30.0,
           "freeze_us": 3.0, "during_us": 100.0, "after_us": 30.0}
# In miniature (tests/bench/test_toe_demo.py).
MINI = {"connections": 4, "payload": 64, "queued": 1024, "warm_us": 5.0, "before_us": 10.0,
        "freeze_us": 2.0, "during_us": 20.0, "after_us": 10.0}


def design() -> hw.Design:
    return hw.load_config(CONFIG)[0]


def simulate(out_dir: Path, seed: int, settings: dict | None = None) -> dict:
    """Run the part; its results (with `failures`, empty when every check passed). A failed
    check still returns what the simulation wrote (the report shows the failures); a run
    that wrote nothing raises."""
    from offnic_sim.harness.runner import run_cocotb
    out_dir.mkdir(parents=True, exist_ok=True)
    out = (out_dir / "toe.json").resolve()   # the simulator runs in its own directory
    out.unlink(missing_ok=True)
    cfg = {**(settings or DEFAULT), "out": str(out), "seed": seed}
    error = None
    try:
        run_cocotb(design(), "offnic_sim.toe.toe_demo", testcase="demo", bench=cfg, fast=True, seed=seed)
    except AssertionError as e:
        error = str(e)
    if not out.exists():
        raise SystemExit(f"[offnic] the TCP offload part's simulation failed (seed {seed}): {error}")
    res = json.loads(out.read_text())
    res["config"] = CONFIG
    if error and not res.get("failures"):
        res["failures"] = [error.splitlines()[0]]
    return res
