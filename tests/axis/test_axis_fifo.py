"""Bench: AxisFifo (plain and packet mode) against a Python model.

Random frames of 1 B to 9 KB under every combination of source idling and sink
back-pressure; in packet mode also frames marked bad and frames larger than the FIFO,
which must be dropped and counted while every good frame comes through intact, and a
check that no frame starts leaving before its last beat has arrived.
"""
import random

import cocotb
import pytest
from cocotb.triggers import RisingEdge

from offnic_sim.harness.axis_tb import BACK_PRESSURE, JUMBO, Scoreboard, StreamTB, drain, frame_sizes, random_payload, user_marks
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design
from cocotbext.axi import AxiStreamFrame




async def count_pulses(clock, signal, box: list) -> None:
    while True:
        await RisingEdge(clock)
        if signal.value:
            box[0] += 1


async def whole_frames_only(dut, box: list) -> None:
    """Packet mode: a frame may start at the output only after the input has delivered a
    committed (good, whole) frame for it."""
    committed = started = 0
    in_frame = False
    while True:
        await RisingEdge(dut.clock)
        if dut.stat_frame.value:
            committed += 1
        if dut.m_axis_tvalid.value and dut.m_axis_tready.value:
            if not in_frame:
                started += 1
                assert started <= committed, "packet FIFO released a frame before its last beat arrived"
            in_frame = not dut.m_axis_tlast.value
        box[0] = committed


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def random_frames(dut):
    c = bench_config()
    width, depth, packet, drop_bad = c["bytes"], c["depth"], c["packet"], c["drop_bad"]
    capacity = depth * width
    tb = StreamTB(dut)
    drops_bad, drops_big, frames_seen = [0], [0], [0]
    await tb.do_reset()
    cocotb.start_soon(count_pulses(tb.clock, dut.stat_drop_bad, drops_bad))
    cocotb.start_soon(count_pulses(tb.clock, dut.stat_drop_oversize, drops_big))
    if packet:
        cocotb.start_soon(whole_frames_only(dut, frames_seen))

    want_bad = want_big = 0
    for idle, stall in BACK_PRESSURE:
        tb.back_pressure(idle, stall)
        board = Scoreboard(f"fifo idle={idle} stall={stall}")
        for n in frame_sizes(c["frames"], JUMBO if packet else 2048):
            data = random_payload(n)
            bad = drop_bad and random.random() < 0.2
            big = packet and n > capacity
            tb.source.send_nowait(AxiStreamFrame(data, tuser=user_marks(n, int(bad), width)))
            if big:
                want_big += 1
            elif bad:
                want_bad += 1
            else:
                board.expect(data, tuser=0)
        # Dropped frames give no output, so wait until the source has sent everything
        # before judging that nothing more will come out.
        await tb.source.wait()
        await drain(tb.sink, board, tb.clock)
        dut._log.info("%s: %d frames, %d bytes", board.name, board.received, board.received_bytes)

    assert drops_bad[0] == want_bad, f"stat_drop_bad counted {drops_bad[0]}, expected {want_bad}"
    assert drops_big[0] == want_big, f"stat_drop_oversize counted {drops_big[0]}, expected {want_big}"
    assert int(dut.status_occupancy.value) == 0


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def fill_and_hold(dut):
    """A stalled sink lets the FIFO fill: tready must fall exactly at capacity, nothing
    accepted may be lost, and occupancy must report the fill level."""
    c = bench_config()
    width, depth = c["bytes"], c["depth"]
    tb = StreamTB(dut)
    await tb.do_reset()
    tb.sink.pause = True
    # One frame per beat (plain mode) or one frame filling the FIFO (packet mode).
    frames = [random_payload(width) for _ in range(depth + 8)] if not c["packet"] else [random_payload(width * depth)]
    board = Scoreboard("fill")
    for f in frames:
        tb.source.send_nowait(AxiStreamFrame(f))
        board.expect(f)
    await tb.cycles(depth * 2 + 50)
    held = int(dut.status_occupancy.value)
    if c["packet"]:
        assert held == depth + 0 or held == depth + 1, f"packet FIFO holds {held} beats, expected the whole frame"
    else:
        assert held == depth + 1, f"FIFO holds {held} beats, expected {depth} + 1 (output register)"
        assert not dut.s_axis_tready.value, "tready still high with the FIFO full"
    tb.sink.pause = False
    await drain(tb.sink, board, tb.clock)


CONFIGS = {
    "plain_64b_d16": dict(bytes=8, user=1, depth=16, packet=False, drop_bad=False, frames=60),
    "packet_256b_d512_dropbad": dict(bytes=32, user=1, depth=512, packet=True, drop_bad=True, frames=60),
    "packet_64b_d64_oversize": dict(bytes=8, user=1, depth=64, packet=True, drop_bad=True, frames=50),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_axis_fifo(name):
    c = CONFIGS[name]
    design = Design.of("axis.AxisFifo", bytes=c["bytes"], user=c["user"], depth=c["depth"],
                       packet=c["packet"], drop_bad=c["drop_bad"])
    run_cocotb(design, __name__, bench=c)
