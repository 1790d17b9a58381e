"""Bench: AxisAsyncFifo (AXI-Stream across two clock domains).

Clock pairs taken from the real design (MAC 156.25 / 390.625 MHz, core 250 MHz) in both
directions, source faster and sink faster, with unrelated clock phases. Random frames of
1 B to 9 KB with sideband under every combination of source idling and sink
back-pressure, checked frame by frame and beat by beat (nothing lost, duplicated,
reordered or corrupted); full rate (the slower clock sets the pace) with deep enough
FIFOs; and both resets asserted together, at random moments mid-traffic and with the
FIFO full: afterwards nothing stale may come out and new traffic must pass intact.
"""
import logging
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from offnic_sim.harness.axis_tb import (BACK_PRESSURE, JUMBO, BeatTap, HoldCheck, Scoreboard, drain, frame_sizes, quiet, random_payload,
                                set_pauses, user_marks)
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design




class AsyncStreamTB:
    """Two clock domains: the source on s_clk/s_rst, the sink on m_clk/m_rst. The sink
    clock starts at a random phase offset so edges do not line up."""

    def __init__(self, dut, s_period_ns: float, m_period_ns: float):
        self.dut = dut
        self.s_period, self.m_period = s_period_ns, m_period_ns
        self.slow_ns = max(s_period_ns, m_period_ns)
        dut.s_rst.value = 1
        dut.m_rst.value = 1
        Clock(dut.s_clk, s_period_ns, unit="ns").start()
        cocotb.start_soon(self._start_late(dut.m_clk, m_period_ns, random.randint(1, int(m_period_ns * 1000) - 1)))
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.s_clk, dut.s_rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.m_clk, dut.m_rst)
        quiet(self.source, self.sink)

    @staticmethod
    async def _start_late(clk, period_ns: float, offset_ps: int) -> None:
        clk.value = 0
        await Timer(offset_ps, unit="ps")
        Clock(clk, period_ns, unit="ns").start()

    def back_pressure(self, source_idle: float, sink_stall: float) -> None:
        set_pauses([self.source], source_idle)
        set_pauses([self.sink], sink_stall)

    async def do_reset(self, hold_slow_cycles: int = 4, during=None) -> None:
        """Assert both resets at the same moment, hold them for a few cycles of the slower
        clock, then release each at an edge of its own clock, in random order (each is
        synchronised into its domain separately, so release times differ in hardware).
        `during()` runs once both resets are asserted."""
        self.dut.s_rst.value = 1
        self.dut.m_rst.value = 1
        await Timer(1, unit="ps")
        if during is not None:
            during()
        await Timer(int(self.slow_ns * 1000) * hold_slow_cycles, unit="ps")
        order = [(self.dut.s_clk, self.dut.s_rst), (self.dut.m_clk, self.dut.m_rst)]
        random.shuffle(order)
        for clk, rst in order:
            await ClockCycles(clk, random.randint(1, 3))
            rst.value = 0
        await ClockCycles(self.dut.m_clk, 2)


def new_frame(c: dict, board: Scoreboard, n: int) -> AxiStreamFrame:
    data = random_payload(n)
    mark = random.randrange(1, 1 << c["user"]) if c["user"] and random.random() < 0.3 else 0
    tid = random.randrange(1 << c["id"]) if c["id"] else None
    tdest = random.randrange(1 << c["dest"]) if c["dest"] else None
    board.expect(data, tuser=mark, tid=tid, tdest=tdest)
    return AxiStreamFrame(data, tuser=user_marks(n, mark, c["bytes"]), tid=tid, tdest=tdest)


def same_beats(name: str, beats_in: list, beats_out: list) -> None:
    assert len(beats_out) == len(beats_in), f"{name}: {len(beats_in)} beats in, {len(beats_out)} out"
    for i, (a, b) in enumerate(zip(beats_in, beats_out)):
        assert (a.data, a.keep, a.last, a.user, a.id, a.dest) == (b.data, b.keep, b.last, b.user, b.id, b.dest), \
            f"{name}: beat {i} changed crossing: in {a}, out {b}"
        assert b.time_ps > a.time_ps, f"{name}: beat {i} left before it arrived"


@cocotb.test(timeout_time=30, timeout_unit="ms")
async def random_frames(dut):
    c = bench_config()
    tb = AsyncStreamTB(dut, c["s_ns"], c["m_ns"])
    await tb.do_reset()
    tap_in = BeatTap(dut, "s_axis", dut.s_clk)
    tap_out = BeatTap(dut, "m_axis", dut.m_clk)
    hold = HoldCheck(dut, "m_axis", dut.m_clk)
    for idle, stall in BACK_PRESSURE:
        tb.back_pressure(idle, stall)
        board = Scoreboard(f"{c['s_ns']}ns->{c['m_ns']}ns idle={idle} stall={stall}", check_user=bool(c["user"]))
        for n in frame_sizes(c["frames"]):
            tb.source.send_nowait(new_frame(c, board, n))
        await drain(tb.sink, board, dut.m_clk)
        assert tb.source.empty()
        beats_in, beats_out = tap_in.take(), tap_out.take()
        same_beats(board.name, beats_in, beats_out)
        dut._log.info("%s: %d frames, %d bytes, %d beats", board.name, board.received, board.received_bytes,
                      len(beats_out))
    assert hold.stalls > 100, "the output was hardly ever stalled: hold check not exercised"


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def full_rate(dut):
    """No back-pressure: a 9 KB frame crosses at the pace of the slower clock."""
    c = bench_config()
    if c["depth"] < 16:
        dut._log.info("depth %d cannot cover the pointer round trip: full rate not promised", c["depth"])
        return
    tb = AsyncStreamTB(dut, c["s_ns"], c["m_ns"])
    await tb.do_reset()
    tap_out = BeatTap(dut, "m_axis", dut.m_clk)
    board = Scoreboard("full rate", check_user=bool(c["user"]))
    tb.source.send_nowait(new_frame(c, board, JUMBO))
    await drain(tb.sink, board, dut.m_clk, idle_cycles=20)
    beats = tap_out.take()
    span_ns = (beats[-1].time_ps - beats[0].time_ps) / 1000
    ideal_ns = (len(beats) - 1) * tb.slow_ns
    dut._log.info("%d beats in %.1f ns, ideal %.1f ns", len(beats), span_ns, ideal_ns)
    assert span_ns <= ideal_ns + 4 * tb.slow_ns, f"{len(beats)} beats took {span_ns:.1f} ns, ideal {ideal_ns:.1f} ns"


@cocotb.test(timeout_time=30, timeout_unit="ms")
async def reset_together(dut):
    """Reset both sides together with the FIFO full and then mid-traffic, at random
    moments: nothing from before the reset may come out, the input must become ready
    again, and the next frames must pass intact. In every other round the next frames
    are already queued while the resets are held, so traffic starts as soon as the
    source side leaves reset, possibly before the sink side has."""
    c = bench_config()
    tb = AsyncStreamTB(dut, c["s_ns"], c["m_ns"])
    tb.source.log.setLevel(logging.ERROR)  # each cut frame is reported, in full, as a warning
    await tb.do_reset()
    HoldCheck(dut, "m_axis", dut.m_clk, dut.m_rst)
    for round_ in range(6):
        # Traffic that the reset will cut: round 0 with the sink stalled (FIFO full).
        tb.back_pressure(0.3, 1.0 if round_ == 0 else 0.5)
        doomed = Scoreboard("before reset")
        first = [2 * c["depth"] * c["bytes"]] if round_ == 0 else []  # more than the FIFO holds
        for n in first + [random.randint(1, 3000) for _ in range(5)]:
            tb.source.send_nowait(new_frame(c, doomed, n))
        if round_ == 0:
            await ClockCycles(dut.s_clk, 3 * c["depth"] + 100)
            assert not dut.s_axis_tready.value, "FIFO not full with the sink stalled"
        else:
            await Timer(random.randint(50, 2000) * int(tb.slow_ns * 1000) // 4, unit="ps")
        tb.source.clear()
        tb.back_pressure(0.0, 1.0)
        early = round_ % 2 == 1
        board = Scoreboard(f"after reset {round_}", check_user=bool(c["user"]))

        def in_reset() -> None:
            tb.sink.clear()  # whatever arrived before the reset
            if early:
                tb.back_pressure(0.3, 0.3)
                for n in frame_sizes(8, 3000):
                    tb.source.send_nowait(new_frame(c, board, n))

        await tb.do_reset(hold_slow_cycles=random.randint(2, 6), during=in_reset)

        if not early:
            # Straight after reset: empty, ready, quiet even with the sink willing.
            tb.back_pressure(0.0, 0.0)
            for _ in range(100):
                await RisingEdge(dut.m_clk)
                assert not dut.m_axis_tvalid.value, f"round {round_}: output valid after reset with nothing sent"
            assert dut.s_axis_tready.value, f"round {round_}: input not ready after reset"
            assert tb.sink.empty(), f"round {round_}: a frame came out after reset"
            tb.back_pressure(0.3, 0.3)
            for n in frame_sizes(8, 3000):
                tb.source.send_nowait(new_frame(c, board, n))
        await drain(tb.sink, board, dut.m_clk)


CONFIGS = {
    # MAC 10G (156.25 MHz, 64-bit) into the 250 MHz core: sink faster.
    "mac156_to_core250": dict(bytes=8, user=1, id=0, dest=0, depth=16, s_ns=6.4, m_ns=4.0, frames=30),
    # 25G MAC clock (390.625 MHz) into the core: source faster.
    "mac390_to_core250": dict(bytes=8, user=1, id=0, dest=0, depth=32, s_ns=2.56, m_ns=4.0, frames=30),
    # Core out to the 25G MAC with sideband: sink faster, wide.
    "core250_to_mac390_sideband": dict(bytes=32, user=2, id=2, dest=3, depth=64, s_ns=4.0, m_ns=2.56, frames=30),
    # Smallest FIFO, large ratio, source much faster: full/empty all the time.
    "d4_mac390_to_mac156": dict(bytes=8, user=1, id=0, dest=0, depth=4, s_ns=2.56, m_ns=6.4, frames=20),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_axis_async_fifo(name):
    c = CONFIGS[name]
    design = Design.of("axis.AxisAsyncFifo", bytes=c["bytes"], user=c["user"], id=c["id"], dest=c["dest"],
                       depth=c["depth"])
    run_cocotb(design, __name__, bench=c)
