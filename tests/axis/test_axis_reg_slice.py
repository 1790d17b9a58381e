"""Bench: AxisRegSlice (skid-buffer register slice, 1 or more stages).

Random frames of 1 B to 9 KB under every combination of source idling and sink
back-pressure, checked frame by frame (data, end-of-frame tuser, tid/tdest) and beat by
beat (the slice must hand on exactly the beats it took, unchanged); full throughput
(a long frame and a burst of back-to-back frames pass at one beat per cycle) and a
latency of exactly `stages` cycles; and that no combinational path runs through the
slice in either direction (ready, valid or data).
"""
import random

import cocotb
import pytest
from cocotbext.axi import AxiStreamFrame

from offnic_sim.harness.axis_tb import (BACK_PRESSURE, JUMBO, BeatTap, HoldCheck, Scoreboard, StreamTB, drain, frame_sizes, probe_comb_paths,
                                random_payload, user_marks)
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design

PERIOD_NS = 4.0



def sideband(c: dict) -> tuple[int | None, int | None]:
    """Random per-frame tid/tdest for the widths the design has (None: not present)."""
    tid = random.randrange(1 << c["id"]) if c["id"] else None
    tdest = random.randrange(1 << c["dest"]) if c["dest"] else None
    return tid, tdest


def new_frame(c: dict, board: Scoreboard, n: int) -> AxiStreamFrame:
    data = random_payload(n)
    mark = random.randrange(1, 1 << c["user"]) if c["user"] and random.random() < 0.3 else 0
    tid, tdest = sideband(c)
    board.expect(data, tuser=mark, tid=tid, tdest=tdest)
    return AxiStreamFrame(data, tuser=user_marks(n, mark, c["bytes"]), tid=tid, tdest=tdest)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def random_frames(dut):
    c = bench_config()
    tb = StreamTB(dut, period_ns=PERIOD_NS)
    await tb.do_reset()
    tap_in = BeatTap(dut, "s_axis", tb.clock)
    tap_out = BeatTap(dut, "m_axis", tb.clock)
    hold = HoldCheck(dut, "m_axis", tb.clock)
    for idle, stall in BACK_PRESSURE:
        tb.back_pressure(idle, stall)
        board = Scoreboard(f"reg slice idle={idle} stall={stall}", check_user=bool(c["user"]))
        for n in frame_sizes(c["frames"]):
            tb.source.send_nowait(new_frame(c, board, n))
        await drain(tb.sink, board, tb.clock)
        assert tb.source.empty()
        beats_in, beats_out = tap_in.take(), tap_out.take()
        assert len(beats_out) == len(beats_in), f"{board.name}: {len(beats_in)} beats in, {len(beats_out)} out"
        for i, (a, b) in enumerate(zip(beats_in, beats_out)):
            assert (a.data, a.keep, a.last, a.user, a.id, a.dest) == (b.data, b.keep, b.last, b.user, b.id, b.dest), \
                f"{board.name}: beat {i} changed: in {a}, out {b}"
            assert b.time_ps > a.time_ps, f"{board.name}: beat {i} left before it arrived"
        dut._log.info("%s: %d frames, %d bytes, %d beats", board.name, board.received, board.received_bytes,
                      len(beats_out))
    assert hold.stalls > 100, "the output was hardly ever stalled: hold check not exercised"


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def full_throughput(dut):
    """No back-pressure: a 9 KB frame of N beats leaves in N cycles, a burst of frames
    back to back without bubbles, and every beat `stages` cycles after it entered."""
    c = bench_config()
    width, stages = c["bytes"], c["stages"]
    tb = StreamTB(dut, period_ns=PERIOD_NS)
    await tb.do_reset()
    tap_in = BeatTap(dut, "s_axis", tb.clock)
    tap_out = BeatTap(dut, "m_axis", tb.clock)
    period_ps = int(PERIOD_NS * 1000)

    for sizes in ([JUMBO], [random.randint(1, 600) for _ in range(40)]):
        board = Scoreboard(f"throughput {len(sizes)} frames", check_user=bool(c["user"]))
        for n in sizes:
            tb.source.send_nowait(new_frame(c, board, n))
        await drain(tb.sink, board, tb.clock, idle_cycles=20)
        beats_in, beats_out = tap_in.take(), tap_out.take()
        want = sum(-(-n // width) for n in sizes)
        assert len(beats_out) == want, f"{board.name}: {len(beats_out)} beats out, expected {want}"
        span = (beats_out[-1].time_ps - beats_out[0].time_ps) // period_ps + 1
        dut._log.info("%s: %d beats in %d cycles", board.name, want, span)
        assert span <= want + 1, f"{board.name}: {want} beats took {span} cycles (expected {want})"
        for i, (a, b) in enumerate(zip(beats_in, beats_out)):
            lat = (b.time_ps - a.time_ps) // period_ps
            assert lat == stages, f"{board.name}: beat {i} took {lat} cycles, expected {stages}"


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def no_comb_paths(dut):
    """Glitch every input mid-cycle under random traffic: no output may follow."""
    c = bench_config()
    tb = StreamTB(dut, period_ns=PERIOD_NS)
    await tb.do_reset()
    tb.back_pressure(0.3, 0.5)
    board = Scoreboard("comb paths", check_user=bool(c["user"]))
    for n in [random.randint(1, 600) for _ in range(30)]:
        tb.source.send_nowait(new_frame(c, board, n))
    ins = [getattr(dut, f"s_axis_{s}") for s in ("tvalid", "tdata", "tkeep", "tlast")] + [dut.m_axis_tready]
    outs = [dut.s_axis_tready] + [getattr(dut, f"m_axis_{s}") for s in ("tvalid", "tdata", "tkeep", "tlast")]
    bad = await probe_comb_paths(tb.clock, PERIOD_NS, ins, outs, 1500)
    assert bad == 0, f"an output followed a mid-cycle input change in {bad} cycles: combinational path"
    await drain(tb.sink, board, tb.clock)


CONFIGS = {
    "64b_1stage": dict(bytes=8, user=1, id=0, dest=0, stages=1, frames=40),
    "256b_3stage_sideband": dict(bytes=32, user=2, id=3, dest=2, stages=3, frames=40),
    "8b_2stage": dict(bytes=1, user=1, id=0, dest=0, stages=2, frames=12),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_axis_reg_slice(name):
    c = CONFIGS[name]
    design = Design.of("axis.AxisRegSlice", bytes=c["bytes"], user=c["user"], id=c["id"], dest=c["dest"],
                       stages=c["stages"])
    run_cocotb(design, __name__, bench=c)
