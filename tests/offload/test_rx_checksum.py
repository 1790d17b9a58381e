"""Bench: RxChecksum (CHECKSUM_COMPLETE sums) against the Python model in checksum_ref.py.

- random frames of 1 B to 9 KB (tuser marks included, random bytes in the unused lanes
  of the last beat) with cfg_start at 14 and at odd,
  beat-edge and beyond-the-frame values, random back-pressure on all three streams: the
  frames come out unchanged and every sum equals the model, in frame order (frames no
  longer than the start give 0);
- cfg_start is taken from a frame's first beat (changing it mid-frame has no effect);
- real packets (IPv4/IPv6, UDP/TCP, with and without VLAN): the sum equals the model
  and, used as Linux uses CHECKSUM_COMPLETE, validates the L4 checksum;
- full throughput with exactly one cycle of latency on the frame path;
- a stalled sum consumer holds frames back after `results` frames, and loses nothing.
"""
import random

import cocotb
import pytest
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamFrame

from checksum_ref import linux_complete_ok, linux_packets, ones_sum
from checksum_tb import gaps, stream_frame
from offnic_sim.harness.axis_tb import (BACK_PRESSURE, JUMBO, BeatTap, HoldCheck, Scoreboard, StreamTB, drain, frame_sizes,
                                user_marks)
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design

PERIOD_NS = 4.0
DRAIN_MAX = 200_000  # cycles a phase may take before the bench calls it a hang (~6x the slowest seen)


async def setup(dut, start: int = 14):
    tb = StreamTB(dut, period_ns=PERIOD_NS, sources=("s_axis",), sinks=("m_axis", "m_axis_csum"))
    dut.cfg_start.value = start
    await tb.do_reset()
    return tb


def sum_bytes(s: int) -> bytes:
    """A 16-bit result as the csum sink delivers it (lane 0 = tdata[7:0])."""
    return s.to_bytes(2, "little")


class Boards:
    """The frame scoreboard and the sum scoreboard of one phase."""

    def __init__(self, tb, name: str, user: bool):
        self.tb = tb
        self.frames = Scoreboard(f"{name} frames", check_user=user)
        self.sums = Scoreboard(f"{name} sums", check_user=False)

    def send(self, data: bytes, start: int, mark: int = 0, sum_at: int | None = None) -> int:
        width = len(self.tb.dut.s_axis_tkeep)
        garbage = random.random() < 0.5  # random bytes in the last beat's unused lanes
        self.tb.source.send_nowait(stream_frame(data, width, user_marks(len(data), mark, width), garbage))
        self.frames.expect(data, tuser=mark)
        s = ones_sum(data, start if sum_at is None else sum_at)
        self.sums.expect(sum_bytes(s))
        return s

    async def drain(self, **kw) -> None:
        kw.setdefault("max_cycles", DRAIN_MAX)
        t = cocotb.start_soon(drain(self.tb.sinks[1], self.sums, self.tb.clock, **kw))
        await drain(self.tb.sinks[0], self.frames, self.tb.clock, **kw)
        await t


@cocotb.test(timeout_time=3, timeout_unit="ms")
async def random_frames(dut):
    c = bench_config()
    tb = await setup(dut)
    hold = HoldCheck(dut, "m_axis", tb.clock, tb.reset)
    hold_sum = HoldCheck(dut, "m_axis_csum", tb.clock, tb.reset)
    width = c["bytes"]
    starts = [14, 14, 0, 1, width - 1, width, width + 1, 2 * random.randrange(7, 800) + 1, random.randint(1600, 9300),
              0xFFFF]
    random.shuffle(starts)
    zeros = 0
    for i, start in enumerate(starts):
        idle, stall = BACK_PRESSURE[i % len(BACK_PRESSURE)]
        tb.back_pressure(idle, stall)
        dut.cfg_start.value = start
        b = Boards(tb, f"rx start={start} idle={idle} stall={stall}", user=True)
        for n in frame_sizes(c["frames"]):
            mark = random.randrange(2) if random.random() < 0.3 else 0
            zeros += b.send(random.randbytes(n), start, mark) == 0
        await b.drain()
        dut._log.info("%s: %d frames, %d bytes", b.frames.name, b.frames.received, b.frames.received_bytes)
    assert zeros > 0, "no frame shorter than the start: the zero case was not exercised"
    assert hold.stalls > 100 and hold_sum.stalls > 20, "outputs hardly stalled: hold checks not exercised"


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def start_sampled_per_frame(dut):
    """cfg_start changed while a frame is entering applies from the next frame on."""
    c = bench_config()
    tb = await setup(dut, start=14)
    b = Boards(tb, "rx start change", user=False)
    for old, new in ((14, 15), (15, 40), (40, 0), (0, 14)):
        dut.cfg_start.value = old
        await tb.cycles(2)
        b.send(random.randbytes(random.randint(2 * c["bytes"] + 1, 3000)), old)
        while True:  # wait for the first beat to be taken, then change the start
            await RisingEdge(tb.clock)
            if dut.s_axis_tvalid.value == 1 and dut.s_axis_tready.value == 1:
                break
        dut.cfg_start.value = new
        b.send(random.randbytes(random.randint(1, 200)), new)
        await b.drain(idle_cycles=20)


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def linux_frames(dut):
    """Real packets with valid L4 checksums: the sum from byte 14 equals the model and,
    used the way Linux uses CHECKSUM_COMPLETE, validates the L4 checksum."""
    c = bench_config()
    tb = await setup(dut, start=14)
    tb.back_pressure(0.3, 0.3)
    packets = linux_packets(c["packets"])
    frames = [p.tx_case().expected() for p in packets]  # checksummed as TxChecksum would
    board = Scoreboard("rx linux frames", check_user=False)
    for f in frames:
        tb.source.send_nowait(AxiStreamFrame(f))
        board.expect(f)
    for p, f in zip(packets, frames):
        s = int.from_bytes(bytes((await tb.sinks[1].recv()).tdata), "little")
        assert s == ones_sum(f, 14), f"{p.name}: sum {s:#06x} != model {ones_sum(f, 14):#06x}"
        assert linux_complete_ok(f, s), f"{p.name}: CHECKSUM_COMPLETE {s:#06x} does not validate the packet"
        assert not linux_complete_ok(f, s ^ 0x0100), f"{p.name}: the validation accepts a wrong sum"
    await drain(tb.sinks[0], board, tb.clock, max_cycles=DRAIN_MAX)
    assert tb.sinks[1].empty()
    dut._log.info("%d packets validated through CHECKSUM_COMPLETE", len(packets))


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def full_throughput(dut):
    """No back-pressure: one beat per cycle in, every beat out exactly one cycle later,
    and the sum a fixed number of cycles after the frame's last beat."""
    c = bench_config()
    width = c["bytes"]
    tb = await setup(dut, start=14)
    tap_in = BeatTap(dut, "s_axis", tb.clock)
    tap_out = BeatTap(dut, "m_axis", tb.clock)
    tap_sum = BeatTap(dut, "m_axis_csum", tb.clock)
    period_ps = int(PERIOD_NS * 1000)
    bursts = {
        "64 one-beat frames": [random.randint(1, width) for _ in range(64)],
        "3 jumbo frames": [JUMBO] * 3,
        "mixed sizes": [random.randint(1, 1600) for _ in range(40)],
    }
    for name, sizes in bursts.items():
        b = Boards(tb, f"rx throughput {name}", user=False)
        for n in sizes:
            b.send(random.randbytes(n), 14)
        await b.drain(idle_cycles=20)
        beats_in, beats_out, sums = tap_in.take(), tap_out.take(), tap_sum.take()
        assert gaps(beats_in, period_ps) == 0, f"{name}: input stalled {gaps(beats_in, period_ps)} cycles"
        assert len(beats_out) == len(beats_in)
        for i, (a, o) in enumerate(zip(beats_in, beats_out)):
            assert (o.time_ps - a.time_ps) == period_ps, f"{name}: beat {i} took {(o.time_ps - a.time_ps) / period_ps} cycles"
            assert (a.data, a.keep, a.last, a.user) == (o.data, o.keep, o.last, o.user), f"{name}: beat {i} changed"
        ends = [a.time_ps for a in beats_in if a.last]
        lat = {(s.time_ps - e) // period_ps for s, e in zip(sums, ends)}
        assert len(lat) == 1, f"{name}: sum latency varies: {sorted(lat)}"
        dut._log.info("%s: %d beats without a gap; sum %d cycles after the last beat", name, len(beats_in), lat.pop())


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def stalled_sums(dut):
    """Nobody takes the sums: the block lets `results` frames through, then holds the
    input; once the sums are taken, everything follows, nothing lost."""
    c = bench_config()
    tb = await setup(dut, start=14)
    tap_out = BeatTap(dut, "m_axis", tb.clock)
    tb.sinks[1].pause = True
    b = Boards(tb, "rx stalled sums", user=False)
    for _ in range(3 * c["results"]):
        b.send(random.randbytes(random.randint(1, 100)), 14)
    await tb.cycles(400)
    passed = sum(x.last for x in tap_out.take())
    assert passed == c["results"], f"{passed} frames passed with the sums stalled, expected {c['results']}"
    assert dut.s_axis_tready.value == 0 or dut.s_axis_tvalid.value == 0
    tb.sinks[1].pause = False
    await b.drain()


CONFIG = dict(bytes=32, user=1, results=32)  # as in hw/configs/checksum.toml
SMALL = dict(bytes=32, user=1, results=2)  # frames wait for sum credits all the time
# Groups of cocotb tests, one pytest item each, so that -n 2 runs them in parallel.
GROUPS = {
    "random": (CONFIG, "random_frames", dict(frames=50)),
    "directed": (CONFIG, "start_sampled_per_frame,linux_frames,full_throughput,stalled_sums", dict(packets=64)),
    "few_results": (SMALL, "random_frames,stalled_sums", dict(frames=24)),
}


@pytest.mark.parametrize("group", GROUPS)
def test_rx_checksum(group):
    config, testcase, extra = GROUPS[group]
    design = Design.of("offload.RxChecksum", **config)
    run_cocotb(design, __name__, testcase=testcase, bench=dict(config, **extra))
