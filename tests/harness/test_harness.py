"""The test harness itself: seeds replay, failures fail with the seed in the message,
waveforms appear when asked for, and models are reused rather than rebuilt."""
import json
import random
from pathlib import Path

import cocotb
import pytest
from cocotb.triggers import ClockCycles
from cocotb.clock import Clock

from offnic_sim.harness import runner
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design

TINY = Design.of("axis.AxisRegSlice", bytes=1, user=0)


@cocotb.test()
async def record_randoms(dut):
    cocotb.start_soon(Clock(dut.clock, 4, unit="ns").start())
    await ClockCycles(dut.clock, 3)
    Path(bench_config()["out"]).write_text(json.dumps([random.getrandbits(32) for _ in range(8)]))


@cocotb.test()
async def always_fails(dut):
    assert bench_config().get("fail") is not True, "failing on purpose"


def test_same_seed_same_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFNIC_SEED", "12345")
    runs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        run_cocotb(TINY, __name__, testcase="record_randoms", bench={"out": str(out)})
        runs.append(json.loads(out.read_text()))
    assert runs[0] == runs[1]
    monkeypatch.setenv("OFFNIC_SEED", "54321")
    out = tmp_path / "r2.json"
    run_cocotb(TINY, __name__, testcase="record_randoms", bench={"out": str(out)})
    assert json.loads(out.read_text()) != runs[0]


def test_failure_reports_seed(monkeypatch):
    monkeypatch.setenv("OFFNIC_SEED", "777")
    with pytest.raises(AssertionError, match=r"OFFNIC_SEED=777"):
        run_cocotb(TINY, __name__, testcase="always_fails", bench={"fail": True})


def test_model_is_cached():
    first = runner.model(TINY)
    stamp = (first.dir / "built").stat().st_mtime_ns
    again = runner.model(TINY)
    assert again.dir == first.dir and (again.dir / "built").stat().st_mtime_ns == stamp


def test_waves_on_request(monkeypatch):
    monkeypatch.setenv("OFFNIC_WAVES", "1")
    run_cocotb(TINY, __name__, testcase="record_randoms", bench={"out": "/dev/null"})
    runs = sorted(runner.RUNS.glob("*test_waves_on_request*"))
    assert runs and (runs[-1] / "dump.fst").stat().st_size > 0
