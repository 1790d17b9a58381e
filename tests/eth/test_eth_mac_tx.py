"""Bench: EthMacTx (AXI-Stream -> 64-bit XGMII) against a Python model.

- every frame, byte for byte: /S/ in lane 0 or 4, preamble and SFD, payload, zero
  padding to 60 bytes, FCS (zlib.crc32), /T/, only idles between frames
  (XgmiiSink cross-checks the content; our own recorder checks positions);
- back to back (the source always has the next frame waiting): every start exactly where
  the DIC rule puts it, so the line rate is the theoretical one; minimum, maximum and
  average gap; frames per cycle against 8 / (8 + max(L, 60) + 4 + ifg);
- random idle time between frames: every gap still obeys the DIC rule;
- aborted frames (tuser) and underruns (the source pausing mid-frame): the frame ends in
  /E/ /E/ /E/ /E/ /T/ after a prefix of its payload, the rest of it is dropped, the next
  frame is intact, and the stat pulses count each frame once, with its byte count.
"""
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSource
from cocotbext.eth import XgmiiSink

from eth_tb import (PERIOD_10G_NS, TX_STATS, StatRecorder, WireFrame, XgmiiRecorder, check_gaps,
                    effective_ifg, random_payload, tx_body, wire_bytes)
from offnic_sim.harness.axis_tb import frame_sizes, quiet, set_pauses, user_marks
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design

MAX_PAYLOAD = 9000


class TB:
    def __init__(self, dut, ifg: int):
        self.dut = dut
        self.clock = dut.clock
        cocotb.start_soon(Clock(dut.clock, PERIOD_10G_NS, unit="ns").start())
        dut.cfg_ifg.value = ifg
        self.ifg = effective_ifg(ifg)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clock, dut.reset)
        self.sink = XgmiiSink(dut.xgmii_txd, dut.xgmii_txc, dut.clock, dut.reset)
        quiet(self.source, self.sink)
        self.wire = XgmiiRecorder(dut.clock, dut.xgmii_txd, dut.xgmii_txc)
        self.stats = StatRecorder(dut, dut.clock, TX_STATS, "stat_tx_bytes")

    async def reset(self) -> None:
        self.dut.reset.value = 1
        await ClockCycles(self.clock, 4)
        self.dut.reset.value = 0
        await ClockCycles(self.clock, 2)
        self.wire.words.clear()  # whatever the registers held before reset
        self.stats.take()

    def send(self, payload: bytes, abort: bool = False) -> None:
        self.source.send_nowait(AxiStreamFrame(payload, tuser=user_marks(len(payload), int(abort), 8)))

    async def wait_sent(self, count: int, max_cycles: int) -> list[WireFrame]:
        """All `count` frames off the wire (and the pipeline quiet), or fail: no hangs."""
        frames: list[WireFrame] = []
        for _ in range(max_cycles // 16):
            await ClockCycles(self.clock, 16)
            got, problems = self.wire.take()
            assert not problems, f"XGMII violations: {problems[:5]}"
            frames += got
            if len(frames) >= count and self.source.empty() and not self.source.active:
                await ClockCycles(self.clock, 40)
                got, problems = self.wire.take()
                assert not problems, f"XGMII violations: {problems[:5]}"
                frames += got
                assert len(frames) == count, f"{len(frames)} frames on the wire, expected {count}"
                return frames
        raise AssertionError(f"only {len(frames)} of {count} frames sent after {max_cycles} cycles")

    def check_sink(self, expected: list[bytes]) -> None:
        """XgmiiSink's view: the same frames, preamble and FCS right."""
        for i, body in enumerate(expected):
            assert not self.sink.empty(), f"XgmiiSink missed frame {i}"
            f = self.sink.recv_nowait()
            assert f.get_preamble() == b"\x55" * 7 + b"\xd5" and f.ctrl is None
            assert f.check_fcs(), f"XgmiiSink: frame {i} FCS wrong"
            assert bytes(f.get_payload(strip_fcs=False)) == body, f"XgmiiSink: frame {i} differs"


def check_frame(i: int, f: WireFrame, payload: bytes) -> None:
    assert f.preamble == b"\x55" * 6 + b"\xd5", f"frame {i}: preamble {f.preamble.hex()}"
    assert not f.errors, f"frame {i}: /E/ in a frame that should be good"
    want = tx_body(payload)
    if f.body != want:
        first = next((k for k, (a, b) in enumerate(zip(f.body, want)) if a != b), min(len(f.body), len(want)))
        raise AssertionError(f"frame {i} ({len(payload)} B payload): {len(f.body)} B on the wire, "
                             f"expected {len(want)}, first difference at byte {first}")


def check_stats(tb: TB, expect: list[tuple[str, int]]) -> None:
    assert not tb.stats.problems, tb.stats.problems[:5]
    got = tb.stats.take()
    assert len(got) == len(expect), f"{len(got)} stat pulses, expected {len(expect)}"
    for i, (g, e) in enumerate(zip(got, expect)):
        assert g == e, f"frame {i}: stat pulse {g}, expected {e}"


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def back_to_back(dut):
    """Line rate and exact DIC placement, random sizes 1..9000 bytes, then fixed-size runs
    whose frames per cycle are compared with the theory."""
    tb = TB(dut, bench_config().get("ifg", 12))
    await tb.reset()
    ifg = tb.ifg

    payloads = [random_payload(n) for n in frame_sizes(bench_config().get("frames", 60), MAX_PAYLOAD)]
    for p in payloads:
        tb.send(p)
    frames = await tb.wait_sent(len(payloads), 400_000)
    for i, (f, p) in enumerate(zip(frames, payloads)):
        check_frame(i, f, p)
    gaps, _ = check_gaps(frames, ifg, back_to_back=True)
    lanes = {f.lane for f in frames}
    total = sum(gaps)
    assert (len(gaps)) * ifg - 3 <= total <= len(gaps) * ifg, f"gaps sum {total} for {len(gaps)} gaps of {ifg}"
    dut._log.info("random sizes: %d frames, gaps min %d max %d average %.3f (ifg %d), start lanes %s",
                  len(frames), min(gaps), max(gaps), total / len(gaps), ifg, sorted(lanes))
    tb.check_sink([tx_body(p) for p in payloads])
    check_stats(tb, [("frame", len(tx_body(p))) for p in payloads])

    # Fixed sizes: frames per cycle, measured from the first /S/ to the last.
    for size in (1, 60, 61, 64, 65, 67, 100, 1500):
        n = 40
        run = [random_payload(size) for _ in range(n)]
        for p in run:
            tb.send(p)
        frames = await tb.wait_sent(n, 50_000)
        for i, (f, p) in enumerate(zip(frames, run)):
            check_frame(i, f, p)
        gaps, _ = check_gaps(frames, ifg, back_to_back=True)
        # The n-1 frames before the last span (n-1) * W bytes less the final deficit (0..3).
        span = frames[-1].start - frames[0].start
        w = wire_bytes(size, ifg)
        assert (n - 1) * w - 3 <= span <= (n - 1) * w, f"{size} B frames: {span} bytes for {n - 1} frames of {w}"
        measured, theory = (n - 1) * 8 / span, 8 / w
        dut._log.info("%5d B payload: %.5f frames/cycle (theory %.5f), gaps %d..%d, lanes %s",
                      size, measured, theory, min(gaps), max(gaps), sorted({f.lane for f in frames}))
        tb.stats.take()
        for _ in range(n):
            tb.sink.recv_nowait()


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def idle_between_frames(dut):
    """The source idles at random between frames (never inside one): every frame intact,
    every gap within the DIC rule, starts only in lanes 0 and 4."""
    tb = TB(dut, bench_config().get("ifg", 12))
    await tb.reset()
    payloads = [random_payload(n) for n in frame_sizes(bench_config().get("frames", 60) // 2, 2000)]
    sent = 0
    for p in payloads:
        tb.send(p)
        sent += 1
        if random.random() < 0.6:
            await tb.source.wait()
            await ClockCycles(tb.clock, random.choice([0, 1, 2, 3, 5, 8, 13, 30]))
    frames = await tb.wait_sent(len(payloads), 200_000)
    for i, (f, p) in enumerate(zip(frames, payloads)):
        check_frame(i, f, p)
    gaps, _ = check_gaps(frames, tb.ifg, back_to_back=False)
    dut._log.info("idle source: %d frames, gaps %d..%d, lanes %s", len(frames), min(gaps), max(gaps),
                  sorted({f.lane for f in frames}))
    tb.check_sink([tx_body(p) for p in payloads])
    check_stats(tb, [("frame", len(tx_body(p))) for p in payloads])


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def abort_and_underrun(dut):
    """tuser aborts, then a source that pauses inside frames: each frame is either intact
    or a prefix of itself ended by four /E/ and /T/; aborted frames never come out good;
    the next frame after an underrun is intact; counts and bytes exact."""
    tb = TB(dut, bench_config().get("ifg", 12))
    await tb.reset()

    # Aborts, source never pausing: every aborted frame is whole up to its /E/s.
    payloads = [random_payload(n) for n in frame_sizes(30, 3000)]
    aborts = [random.random() < 0.4 for _ in payloads]
    for p, a in zip(payloads, aborts):
        tb.send(p, abort=a)
    frames = await tb.wait_sent(len(payloads), 200_000)
    expect_stats = []
    for i, (f, p, a) in enumerate(zip(frames, payloads, aborts)):
        if not a:
            check_frame(i, f, p)
            expect_stats.append(("frame", len(tx_body(p))))
        else:
            body = tx_body(p)[:-4]
            assert f.body == body + bytes([0xFE] * 4), f"aborted frame {i}: not its padded payload + 4 x /E/"
            assert f.errors == [len(f.data) - 4 + k for k in range(4)]
            expect_stats.append(("error", len(body) + 4))
    check_gaps(frames, tb.ifg, back_to_back=True)
    check_stats(tb, expect_stats)
    tb.sink.clear()

    # Underruns: the source pauses at random, also inside frames.
    for busy in (0.2, 0.5):
        set_pauses([tb.source], busy)
        payloads = [random_payload(n) for n in frame_sizes(40, 3000)]
        aborts = [random.random() < 0.2 for _ in payloads]
        for p, a in zip(payloads, aborts):
            tb.send(p, abort=a)
        frames = await tb.wait_sent(len(payloads), 400_000)
        set_pauses([tb.source], 0)
        expect_stats = []
        errors = 0
        for i, (f, p, a) in enumerate(zip(frames, payloads, aborts)):
            if not f.errors:
                assert not a, f"frame {i} was aborted but went out without /E/"
                check_frame(i, f, p)
                expect_stats.append(("frame", len(tx_body(p))))
                continue
            errors += 1
            assert f.errors == [len(f.data) - 4 + k for k in range(4)], f"frame {i}: /E/ not at its end"
            sent = f.body[:-4]
            full = tx_body(p)[:-4]
            if sent != full:  # underrun: whole beats of the payload, then /E/
                assert len(sent) % 8 == 0 and len(sent) < len(p) and sent == p[:len(sent)], \
                    f"frame {i}: {len(sent)} bytes before /E/ are not a beat-aligned prefix of its payload"
            expect_stats.append(("error", len(sent) + 4))
        check_gaps(frames, tb.ifg, back_to_back=False)
        check_stats(tb, expect_stats)
        tb.sink.clear()
        assert errors > sum(aborts), f"busy {busy}: no underrun happened ({errors} /E/ frames, {sum(aborts)} aborts)"
        dut._log.info("source busy %.1f: %d frames, %d ended by /E/ (%d aborted)", busy, len(frames), errors,
                      sum(aborts))

    # After all that, a clean frame still goes out intact.
    p = random_payload(100)
    tb.send(p)
    frames = await tb.wait_sent(1, 1000)
    check_frame(0, frames[0], p)


CONFIGS = {
    "ifg12": dict(ifg=12, frames=150, tests="back_to_back"),
    "ifg12_errors": dict(ifg=12, frames=100, tests="idle_between_frames,abort_and_underrun"),
    "ifg13": dict(ifg=13, frames=80, tests="back_to_back"),
    "ifg5_as_8": dict(ifg=5, frames=80, tests="back_to_back,idle_between_frames"),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_eth_mac_tx(name):
    c = CONFIGS[name]
    run_cocotb(Design.of("eth.EthMacTx"), __name__, testcase=c["tests"].split(","), bench=c)
