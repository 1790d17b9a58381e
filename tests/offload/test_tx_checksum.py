"""Bench: TxChecksum (CHECKSUM_PARTIAL insertion) against the Python model in
checksum_ref.py.

- random frames of 1 B to 9 KB with random commands (odd starts, fields at the frame end
  and across beat boundaries, sums that come out 0 and must be sent as 0xFFFF, disabled
  and bad commands), under every source-idle / sink-stall pattern: every output byte is
  compared, bad commands are counted on stat_tx_csum_bad_cmd and leave the frame alone;
  tuser after a frame's first beat is sometimes garbage (the command comes from the first),
  and so are the unused lanes of the last beat (tkeep low);
- real packets (IPv4/IPv6, UDP/TCP, with and without VLAN) seeded with the pseudo-header
  sum as Linux does: the output equals the model and scapy finds the L4 checksum valid;
- directed bad commands at the edges (start at the end, field one byte past it ...);
- full throughput: the input never stalls under back-to-back traffic, and frames leave
  without gaps once their sums are known;
- frames longer than the packet FIFO are discarded with their result (counted), the
  frames around them still get their checksums.
"""
import random

import cocotb
import pytest
from cocotbext.axi import AxiStreamFrame

from checksum_ref import TxCase, linux_packets, l4_checksum_ok, random_tx_case
from checksum_tb import PulseCounter, frame_ends, gaps, stream_frame
from offnic_sim.harness.axis_tb import BACK_PRESSURE, JUMBO, BeatTap, HoldCheck, Scoreboard, StreamTB, drain, frame_sizes
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design

PERIOD_NS = 4.0
DRAIN_MAX = 200_000  # cycles a phase may take before the bench calls it a hang (~6x the slowest seen)


async def setup(dut):
    tb = StreamTB(dut, period_ns=PERIOD_NS)
    await tb.do_reset()
    return tb


def send(tb, board: Scoreboard, case: TxCase, width: int = 0) -> None:
    """Send a frame with its command; with `width`, sometimes put garbage in tuser after
    the first beat (the command is read from the first beat only) and in the unused
    lanes of the last beat."""
    user = case.cmd
    if width and len(case.data) > width and random.random() < 0.2:
        user = [case.cmd] * width + [random.randrange(1 << 33)] * (len(case.data) - width)
    tb.source.send_nowait(stream_frame(case.data, width or 1, user, garbage=bool(width) and random.random() < 0.5))
    board.expect(case.expected())


async def drain_cases(tb, board: Scoreboard, cases: list[TxCase], **kw) -> None:
    """drain(), naming the command of a frame that comes out wrong."""
    try:
        await drain(tb.sink, board, tb.clock, **{"max_cycles": DRAIN_MAX, **kw})
    except AssertionError as e:
        i = board.received
        if i < len(cases):
            c = cases[i]
            raise AssertionError(f"{e}; frame {i}: {len(c.data)} B, enable={c.enable} start={c.start} "
                                 f"offset={c.offset} bad={c.bad}") from None
        raise


@cocotb.test(timeout_time=3, timeout_unit="ms")
async def random_commands(dut):
    c = bench_config()
    tb = await setup(dut)
    bad = PulseCounter(tb.clock, dut.stat_tx_csum_bad_cmd)
    hold = HoldCheck(dut, "m_axis", tb.clock, tb.reset)
    drops = PulseCounter(tb.clock, dut.stat_tx_csum_drop_oversize)
    capacity = c["depth"] * c["bytes"]  # longer frames are dropped
    want_bad = want_drop = 0
    kinds = {"odd start": 0, "zero sum": 0, "field in last 2 B": 0, "field across beats": 0}
    for idle, stall in BACK_PRESSURE:
        tb.back_pressure(idle, stall)
        board = Scoreboard(f"tx idle={idle} stall={stall}", check_user=False)
        cases = []
        for n in frame_sizes(c["frames"]):
            case = random_tx_case(n, c["bytes"])
            if n > capacity:
                tb.source.send_nowait(AxiStreamFrame(case.data, tuser=case.cmd))
                want_drop += 1
                continue
            cases.append(case)
            send(tb, board, case, c["bytes"])
            want_bad += case.bad
            if case.enable and not case.bad:
                kinds["odd start"] += case.start % 2
                kinds["zero sum"] += case.expected()[case.offset:case.offset + 2] == b"\xff\xff"
                kinds["field in last 2 B"] += case.offset == len(case.data) - 2
                kinds["field across beats"] += case.offset % c["bytes"] == c["bytes"] - 1
        await drain_cases(tb, board, cases)
        await tb.source.wait()
        dut._log.info("%s: %d frames, %d bytes", board.name, board.received, board.received_bytes)
    await tb.cycles(20)
    dut._log.info("covered: %s, bad commands %d, oversize frames %d", kinds, want_bad, want_drop)
    assert all(kinds.values()), f"random commands missed a case: {kinds}"
    assert bad.count == want_bad, f"stat_tx_csum_bad_cmd pulsed {bad.count} times, expected {want_bad}"
    assert drops.count == want_drop, f"stat_tx_csum_drop_oversize pulsed {drops.count} times, expected {want_drop}"
    assert hold.stalls > 100, "the output was hardly ever stalled: hold check not exercised"


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def linux_frames(dut):
    """Real packets as the Linux stack sends them: scapy must find every L4 checksum valid."""
    c = bench_config()
    tb = await setup(dut)
    bad = PulseCounter(tb.clock, dut.stat_tx_csum_bad_cmd)
    tb.back_pressure(0.3, 0.3)
    packets = linux_packets(c["packets"])
    for p in packets:
        tb.source.send_nowait(AxiStreamFrame(p.data, tuser=p.tx_case().cmd))
    for i, p in enumerate(packets):
        frame = await tb.sink.recv()
        got = bytes(frame.tdata)
        assert got == p.tx_case().expected(), f"{p.name}: output differs from the model"
        ok, why = l4_checksum_ok(got)
        assert ok, f"{p.name}: scapy finds the L4 checksum invalid: {why}"
        assert not l4_checksum_ok(p.data)[0] or got == p.data, f"{p.name}: input was already valid"
    await tb.cycles(50)
    assert tb.sink.empty() and bad.count == 0
    dut._log.info("%d packets valid after TxChecksum: %s", len(packets), sorted({p.name.rsplit('_', 1)[0] for p in packets}))


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def bad_commands(dut):
    """The edges of a good command, one byte either side: bad ones leave the frame
    unchanged and pulse stat_tx_csum_bad_cmd once each."""
    c = bench_config()
    tb = await setup(dut)
    bad = PulseCounter(tb.clock, dut.stat_tx_csum_bad_cmd)
    tb.back_pressure(0.2, 0.2)
    board = Scoreboard("tx bad commands", check_user=False)
    cases = []
    for n in (1, 2, 3, c["bytes"] - 1, c["bytes"], c["bytes"] + 1, 2 * c["bytes"] + 1, 1514, JUMBO):
        data = random.randbytes(n)
        for start, offset in ((n, 0), (n + 1, 0), (0xFFFF, 0), (0, n - 1), (0, n), (0, 0xFFFF), (n - 1, n - 1),
                              (n - 1, n - 2), (0, n - 2), (n - 1, 0)):
            if start > 0xFFFF or not 0 <= offset <= 0xFFFF:
                continue
            cases.append(TxCase(data, True, start, offset))
            cases.append(TxCase(data, False, start, offset))
    for case in cases:
        send(tb, board, case)
    await drain_cases(tb, board, cases)
    want = sum(case.bad for case in cases)
    assert bad.count == want, f"stat_tx_csum_bad_cmd pulsed {bad.count} times, expected {want}"
    dut._log.info("%d frames, %d bad commands", len(cases), want)


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def full_throughput(dut):
    """No back-pressure: the input takes a beat every cycle through every burst, and a
    burst of equal frames leaves without a gap once the first has left."""
    c = bench_config()
    width = c["bytes"]
    tb = await setup(dut)
    tap_in = BeatTap(dut, "s_axis", tb.clock)
    tap_out = BeatTap(dut, "m_axis", tb.clock)
    period_ps = int(PERIOD_NS * 1000)
    bursts = {
        "64 one-beat frames": [random.randint(1, width) for _ in range(64)],
        "24 frames of 8 beats": [8 * width] * 24,
        "6 jumbo frames": [JUMBO] * 6,
        "mixed sizes": [random.randint(1, 1600) for _ in range(40)],
    }
    for name, sizes in bursts.items():
        board = Scoreboard(f"throughput {name}", check_user=False)
        cases = [random_tx_case(n, width, {"good": 1.0}) for n in sizes]
        for case in cases:
            send(tb, board, case)
        await drain_cases(tb, board, cases, idle_cycles=20)
        beats_in, beats_out = tap_in.take(), tap_out.take()
        assert gaps(beats_in, period_ps) == 0, f"{name}: input stalled {gaps(beats_in, period_ps)} cycles"
        latency = (beats_out[0].time_ps - beats_in[0].time_ps) // period_ps
        if len(set(sizes)) == 1 or max(sizes) <= width:
            assert gaps(beats_out, period_ps) == 0, f"{name}: {gaps(beats_out, period_ps)} idle cycles at the output"
        else:  # store and forward: a long frame after a short one waits for its own end
            span = (beats_out[-1].time_ps - beats_out[0].time_ps) // period_ps + 1
            bound = len(beats_out) + max(sizes) // width + 8
            assert span <= bound, f"{name}: output took {span} cycles for {len(beats_out)} beats (bound {bound})"
        ends_in, ends_out = frame_ends(beats_in, period_ps), frame_ends(beats_out, period_ps)
        dut._log.info("%s: %d beats, first beat out after %d cycles, gaps out %d, last beat of first frame "
                      "in at %d, out at %d", name, len(beats_in), latency, gaps(beats_out, period_ps), ends_in[0],
                      ends_out[0] + latency)


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def oversize_frames(dut):
    """Frames longer than the packet FIFO are dropped (and counted) together with their
    result; the frames between them keep the right checksums."""
    c = bench_config()
    width, depth = c["bytes"], c["depth"]
    tb = await setup(dut)
    drops = PulseCounter(tb.clock, dut.stat_tx_csum_drop_oversize)
    bad = PulseCounter(tb.clock, dut.stat_tx_csum_bad_cmd)
    tb.back_pressure(0.2, 0.3)
    board = Scoreboard("tx oversize", check_user=False)
    cases, sizes, want_drop, want_bad = [], [], 0, 0
    for i in range(12):
        n = random.choice([depth * width, depth * width + 1, depth * width + random.randint(2, 3000)]) \
            if i % 2 else random.randint(1, 600)
        sizes.append(n)
        case = random_tx_case(n, width, {"good": 0.8, "bad": 0.2})
        tb.source.send_nowait(AxiStreamFrame(case.data, tuser=case.cmd))
        if n > depth * width:
            want_drop += 1
        else:
            board.expect(case.expected())
            cases.append(case)
            want_bad += case.bad
    await drain_cases(tb, board, cases)
    await tb.source.wait()  # the last frames may be dropped ones: the board does not wait for them
    await tb.cycles(20)
    dut._log.info("frame sizes %s", sizes)
    assert drops.count == want_drop, f"stat_tx_csum_drop_oversize pulsed {drops.count} times, expected {want_drop}"
    assert bad.count == want_bad, f"stat_tx_csum_bad_cmd pulsed {bad.count} times, expected {want_bad}"


CONFIG = dict(bytes=32, depth=512, results=32)  # as in hw/configs/checksum.toml
SMALL = dict(bytes=32, depth=64, results=4)  # 2 KB FIFO, 4 results: drops and credit stalls
# Groups of cocotb tests, one pytest item each, so that -n 2 runs them in parallel.
GROUPS = {
    "random": (CONFIG, "random_commands", dict(frames=110)),
    "directed": (CONFIG, "linux_frames,bad_commands,full_throughput,oversize_frames", dict(packets=64)),
    "small_fifo": (SMALL, "random_commands,oversize_frames", dict(frames=50)),
}


@pytest.mark.parametrize("group", GROUPS)
def test_tx_checksum(group):
    config, testcase, extra = GROUPS[group]
    design = Design.of("offload.TxChecksum", **config)
    run_cocotb(design, __name__, testcase=testcase, bench=dict(config, **extra))
