"""Bench: toe.NicPacketQueue, the bounded queue of frames for the TCP engine (issue 17).

It never back-pressures its input; frames that find it at its frame limit or out of beats
are dropped whole and counted. Checked with cocotbext-axi's source and sink:
 - every frame that comes out is one that was sent, byte-exact, in order, never a part of
   one (the scoreboard takes the delivered frames as an in-order subsequence of the sent
   ones); delivered + dropped (stat_drop) = sent; stat_frame = delivered;
 - Qlen (status_qlen) never exceeds the limit, equals frames queued minus frames whose
   last beat has left at every cycle, and is 0 when all is out;
 - the input is never back-pressured;
 - no drops when the sink keeps up; with the sink stopped, exactly `limit` frames kept
   (register limit, then the build's maximum) and every later one dropped, the kept ones
   delivered when the sink resumes; a frame longer than the queue always dropped;
 - random frame sizes, source idling and sink stalls.

Replay a run: OFFNIC_SEED=N.
"""
import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamFrame

from offnic_sim.harness.axis_tb import StreamTB, random_payload
from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb

BYTES, DEPTH, MAX_FRAMES = 32, 128, 16
DESIGN = Design.of("toe.NicPacketQueue", bytes=BYTES, user=1, depth=DEPTH, max_frames=MAX_FRAMES)


class Watch:
    """Per cycle: the input is always ready, Qlen within the limit and equal to frames
    queued (stat_frame) minus frames out; counts pulses."""

    def __init__(self, dut):
        self.dut, self.limit = dut, MAX_FRAMES
        self.queued = self.dropped = self.out = 0
        self.max_qlen = 0
        cocotb.start_soon(self._run())

    async def _run(self):
        d = self.dut
        while True:
            await RisingEdge(d.clock)
            if d.reset.value == 1:
                continue
            assert d.s_axis_tready.value == 1, "the NIC-packet queue back-pressured its input"
            q = int(d.status_qlen.value)
            assert q == self.queued - self.out, f"Qlen {q}, expected {self.queued - self.out}"
            assert q <= self.limit, f"Qlen {q} over the limit {self.limit}"
            self.max_qlen = max(self.max_qlen, q)
            self.queued += int(d.stat_frame.value)
            self.dropped += int(d.stat_drop.value)
            if d.m_axis_tvalid.value == 1 and d.m_axis_tready.value == 1 and d.m_axis_tlast.value == 1:
                self.out += 1


async def send_and_check(tb: StreamTB, w: Watch, frames: list[bytes], settle: int = 400) -> list[bool]:
    """Send `frames`, wait until all is out; return, per frame, whether it was delivered."""
    q0, d0, o0 = w.queued, w.dropped, w.out
    for f in frames:
        tb.source.send_nowait(AxiStreamFrame(f))
    await tb.source.wait()
    got = []
    quiet = 0
    # until the queue is empty (a stalled sink drains a long frame slower than `settle`
    # quiet cycles: seed 1086821327 stopped with 15 frames still queued), then `settle` more
    while quiet < settle or int(tb.dut.status_qlen.value) != 0:
        await RisingEdge(tb.clock)
        quiet += 1
        while not tb.sink.empty():
            got.append(bytes(tb.sink.recv_nowait().tdata))
            quiet = 0
    delivered, k = [], 0
    for f in frames:
        hit = k < len(got) and got[k] == f
        delivered.append(hit)
        k += hit
    assert k == len(got), f"frame {k} delivered is no sent frame in order ({len(got[k])} B)"
    assert w.dropped - d0 == len(frames) - len(got), \
        f"stat_drop counted {w.dropped - d0}, {len(frames) - len(got)} frames missing"
    assert w.queued - q0 == len(got) and w.out - o0 == len(got)
    assert int(tb.dut.status_qlen.value) == 0
    return delivered


def sizes(n: int, max_beats: int) -> list[int]:
    return [random.choice([random.randint(1, 64), random.randint(40, 1518), random.randint(1, max_beats * BYTES)])
            for _ in range(n)]


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def nic_packet_queue(dut):
    tb = StreamTB(dut)
    dut.cfg_max_frames.value = 0
    await tb.do_reset()
    w = Watch(dut)

    # The sink keeps up, the source idles a little: nothing may be dropped.
    tb.back_pressure(0.5, 0.0)
    frames = [random_payload(n) for n in sizes(150, DEPTH // 4)]
    assert all(await send_and_check(tb, w, frames)), "frames dropped while the sink kept up"

    # The sink stopped: exactly `limit` small frames kept, in order, the rest dropped.
    for limit, reg in ((5, 5), (MAX_FRAMES, 0), (MAX_FRAMES, 1000)):
        dut.cfg_max_frames.value = reg
        w.limit = limit
        tb.back_pressure(0.0, 0.0)
        tb.sink.pause = True
        d_start = w.dropped
        frames = [random_payload(random.randint(1, 4 * BYTES)) for _ in range(limit + 10)]
        for f in frames:
            tb.source.send_nowait(AxiStreamFrame(f))
        await tb.source.wait()
        await ClockCycles(tb.clock, 20)
        assert w.dropped - d_start == 10, f"{w.dropped - d_start} frames dropped, expected 10"
        assert int(dut.status_qlen.value) == limit, f"Qlen {int(dut.status_qlen.value)} with the sink stopped, " \
                                                    f"limit {limit}"
        d0 = w.dropped
        tb.sink.pause = False
        got = []
        for _ in range(2000):
            await RisingEdge(tb.clock)
            while not tb.sink.empty():
                got.append(bytes(tb.sink.recv_nowait().tdata))
        assert got == frames[:limit], f"with the sink stopped: {len(got)} frames kept, expected the first {limit}"
        assert w.dropped == d0 and int(dut.status_qlen.value) == 0
        w.limit = MAX_FRAMES
    dut.cfg_max_frames.value = 0

    # Longer than the queue: always dropped, the next frame fine.
    big, small = random_payload(DEPTH * BYTES + 1), random_payload(100)
    assert await send_and_check(tb, w, [big, small]) == [False, True]

    # Random sizes, idling and stalls: whatever is delivered is whole and in order.
    total = kept = 0
    for idle, stall in ((0.0, 0.5), (0.3, 0.8), (0.0, 0.95)):
        tb.back_pressure(idle, stall)
        frames = [random_payload(n) for n in sizes(200, DEPTH // 2)]
        d = await send_and_check(tb, w, frames)
        total += len(d)
        kept += sum(d)
    dut._log.info("random: %d of %d frames delivered, %d dropped in all, Qlen at most %d", kept, total,
                  w.dropped, w.max_qlen)
    assert kept < total, "the random phase never filled the queue"
    assert w.max_qlen == MAX_FRAMES


def test_nic_packet_queue():
    run_cocotb(DESIGN, __name__)
