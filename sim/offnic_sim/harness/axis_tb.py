"""Shared pieces for AXI-Stream benches: traffic, back-pressure and a scoreboard.

Randomness comes from Python's `random`, which cocotb seeds from the run's seed, so a
failing run replays exactly with OFFNIC_SEED (see harness.py).
"""
from __future__ import annotations

import itertools
import logging
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

JUMBO = 9 * 1024

# (source idle, sink stall) fractions every stream bench runs through: free flow, an
# idling source, a stalling sink, and both at once.
BACK_PRESSURE = [(0.0, 0.0), (0.5, 0.0), (0.0, 0.6), (0.4, 0.7)]


def frame_sizes(count: int, max_len: int = JUMBO) -> list[int]:
    """Frame lengths from 1 byte to `max_len`: every edge case around the common beat
    widths first, then a mix weighted towards small frames, with jumbos included."""
    edges = [1, 2, 7, 8, 9, 31, 32, 33, 63, 64, 65, 60, 1514, 1518, max_len - 1, max_len]
    sizes = [s for s in edges if s <= max_len]
    bands = [(0.5, 1, 128), (0.85, 129, 1518), (1.0, 1519, max_len)]
    while len(sizes) < count:
        r = random.random()
        _, lo, hi = next(b for b in bands if r < b[0])
        sizes.append(random.randint(min(lo, max_len), min(hi, max_len)))
    random.shuffle(sizes)
    return sizes


def random_payload(n: int) -> bytes:
    return random.randbytes(n)


def pause_pattern(busy: float) -> Iterator[int]:
    """Back-pressure/idle pattern for set_pause_generator: paused about `busy` of the
    time, in bursts of random length so that both short and long stalls occur."""
    while True:
        paused = random.random() < busy
        for _ in range(random.randint(1, 12)):
            yield int(paused)


def set_pauses(drivers, busy: float) -> None:
    """Apply pause_pattern(busy) to cocotbext-axi sources/sinks, or stop pausing them.
    Removing a generator leaves `pause` as it last was, so clear it explicitly."""
    for d in drivers:
        d.set_pause_generator(pause_pattern(busy) if busy else None)
        if not busy:
            d.pause = False


def quiet(*drivers: object) -> None:
    """cocotbext-axi logs every frame at INFO; at 9 KB frames that drowns the log."""
    for d in drivers:
        d.log.setLevel(logging.WARNING)


@dataclass
class Expected:
    data: bytes
    tuser: int = 0
    tid: int | None = None
    tdest: int | None = None


@dataclass
class Scoreboard:
    """Checks that a stream delivers exactly the expected frames, in order: nothing lost,
    duplicated, reordered or corrupted. `check_user`: compare the frame-end tuser value."""

    name: str
    check_user: bool = True
    pending: deque = field(default_factory=deque)
    received: int = 0
    received_bytes: int = 0

    def expect(self, data: bytes, tuser: int = 0, tid: int | None = None, tdest: int | None = None) -> None:
        self.pending.append(Expected(bytes(data), tuser, tid, tdest))

    def check(self, frame: AxiStreamFrame) -> None:
        got = bytes(frame.tdata)
        assert self.pending, f"{self.name}: unexpected frame #{self.received} of {len(got)} B (nothing outstanding)"
        exp = self.pending.popleft()
        if got != exp.data:
            first = next((i for i, (a, b) in enumerate(zip(got, exp.data)) if a != b), min(len(got), len(exp.data)))
            raise AssertionError(
                f"{self.name}: frame #{self.received} corrupted: got {len(got)} B, expected {len(exp.data)} B, "
                f"first difference at byte {first}")
        if self.check_user:
            user = frame.tuser[-1] if isinstance(frame.tuser, list) else (frame.tuser or 0)
            assert user == exp.tuser, f"{self.name}: frame #{self.received} tuser {user} != {exp.tuser}"
        for name in ("tid", "tdest"):
            want = getattr(exp, name)
            if want is None:
                continue
            val = getattr(frame, name)
            vals = set(val) if isinstance(val, list) else {val}
            assert vals == {want}, f"{self.name}: frame #{self.received} {name} {vals} != {want}"
        self.received += 1
        self.received_bytes += len(got)

    def done(self) -> bool:
        return not self.pending


class StreamTB:
    """Clock, reset, and cocotbext-axi source/sink for a block with one `clock`/`reset`
    and `s_axis`/`m_axis` style ports (any prefixes)."""

    def __init__(self, dut, period_ns: float = 4.0, sources=("s_axis",), sinks=("m_axis",)):
        from cocotb.clock import Clock

        self.dut = dut
        self.clock = dut.clock
        self.reset = dut.reset
        cocotb.start_soon(Clock(self.clock, period_ns, unit="ns").start())
        self.sources = [AxiStreamSource(AxiStreamBus.from_prefix(dut, p), self.clock, self.reset) for p in sources]
        self.sinks = [AxiStreamSink(AxiStreamBus.from_prefix(dut, p), self.clock, self.reset) for p in sinks]
        quiet(*self.sources, *self.sinks)

    @property
    def source(self) -> AxiStreamSource:
        return self.sources[0]

    @property
    def sink(self) -> AxiStreamSink:
        return self.sinks[0]

    def back_pressure(self, source_idle: float, sink_stall: float) -> None:
        set_pauses(self.sources, source_idle)
        set_pauses(self.sinks, sink_stall)

    async def do_reset(self, cycles: int = 4) -> None:
        self.reset.value = 1
        await ClockCycles(self.clock, cycles)
        self.reset.value = 0
        await ClockCycles(self.clock, 2)

    async def cycles(self, n: int) -> None:
        await ClockCycles(self.clock, n)


async def drain(sink: AxiStreamSink, board: Scoreboard, clock, idle_cycles: int = 200,
                max_cycles: int = 1_000_000) -> int:
    """Check frames from `sink` against `board` until everything expected has arrived and
    the stream has been quiet for `idle_cycles` (so late duplicates are caught too).
    Returns the cycles it took; fails instead of hanging."""
    quiet_for = 0
    for cycle in itertools.count():
        await RisingEdge(clock)
        got_any = False
        while not sink.empty():
            board.check(sink.recv_nowait())
            got_any = True
        quiet_for = 0 if got_any or not board.done() else quiet_for + 1
        if board.done() and quiet_for >= idle_cycles:
            return cycle
        assert cycle < max_cycles, (f"{board.name}: {len(board.pending)} frames still missing after {cycle} "
                                    f"cycles ({board.received} arrived)")
    raise AssertionError("unreachable")


def user_marks(length: int, last: int, bytes_per_beat: int) -> list[int] | int:
    """A per-byte tuser list whose value on the frame's last beat is `last` (0 elsewhere),
    which is how a MAC marks a bad frame at its end."""
    if not last:
        return 0
    last_beat_start = (length - 1) // bytes_per_beat * bytes_per_beat
    return [0] * last_beat_start + [last] * (length - last_beat_start)


@dataclass(frozen=True)
class Beat:
    """One transfer seen on a port: when (sim time, ps) and what."""

    time_ps: int
    data: int
    keep: int
    last: bool
    user: int = 0
    id: int = 0
    dest: int = 0


class BeatTap:
    """Records every transfer (tvalid && tready at a rising edge of `clock`) on one
    AXI-Stream port, beat by beat, for checks a frame-level sink cannot make: beat
    boundaries, tkeep shape, sideband per beat, timing. Passive: drives nothing."""

    FIELDS = ("tdata", "tkeep", "tlast", "tuser", "tid", "tdest")

    def __init__(self, dut, prefix: str, clock):
        self.clock = clock
        self.valid = getattr(dut, f"{prefix}_tvalid")
        self.ready = getattr(dut, f"{prefix}_tready")
        self.sigs = {f: getattr(dut, f"{prefix}_{f}") for f in self.FIELDS if hasattr(dut, f"{prefix}_{f}")}
        self.beats: list[Beat] = []
        self._task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        s = self.sigs
        while True:
            await RisingEdge(self.clock)
            if self.valid.value == 1 and self.ready.value == 1:
                def val(f: str) -> int:
                    return int(s[f].value) if f in s else 0
                self.beats.append(Beat(int(get_sim_time("ps")), val("tdata"), val("tkeep"), bool(val("tlast")),
                                       val("tuser"), val("tid"), val("tdest")))

    def take(self) -> list[Beat]:
        """The beats recorded so far (and forget them)."""
        got, self.beats = self.beats, []
        return got

    def stop(self) -> None:
        self._task.cancel()


async def probe_comb_paths(clock, period_ns: float, drive: list, watch: list, cycles: int) -> int:
    """Look for combinational paths from the `drive` inputs to the `watch` outputs: in
    the middle of each of `cycles` clock periods, flip every driven input, see whether any
    watched output moves, then put the inputs back before the next edge (so whatever
    drives them normally never notices). Returns how many cycles showed a path."""
    bad = 0
    for _ in range(cycles):
        await RisingEdge(clock)
        await Timer(period_ns / 2, unit="ns")
        before_out = [w.value for w in watch]
        saved = [d.value for d in drive]
        for d, v in zip(drive, saved):
            d.value = ~int(v) & ((1 << len(d)) - 1)
        await Timer(1, unit="ps")
        if [w.value for w in watch] != before_out:
            bad += 1
        for d, v in zip(drive, saved):
            d.value = v
        await Timer(1, unit="ps")
    return bad


class HoldCheck:
    """AXI-Stream source rule on one port (usually a block's output), checked every
    cycle: once tvalid is up it stays up, with the beat unchanged, until tready takes
    it. Cycles with `reset` (if given) asserted are not checked. Fails the test at the
    first violation; `stalls` counts the stalled cycles checked (to show it ran)."""

    def __init__(self, dut, prefix: str, clock, reset=None):
        self.prefix, self.clock, self.reset = prefix, clock, reset
        self.valid = getattr(dut, f"{prefix}_tvalid")
        self.ready = getattr(dut, f"{prefix}_tready")
        self.sigs = [getattr(dut, f"{prefix}_{f}") for f in BeatTap.FIELDS if hasattr(dut, f"{prefix}_{f}")]
        self.stalls = 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        held = None
        while True:
            await RisingEdge(self.clock)
            if self.reset is not None and self.reset.value == 1:
                held = None
                continue
            valid = self.valid.value == 1
            beat = tuple(int(s.value) for s in self.sigs)
            if held is not None:
                self.stalls += 1
                assert valid, f"{self.prefix}: tvalid dropped before tready took the beat"
                assert beat == held, f"{self.prefix}: beat changed while stalled: {held} -> {beat}"
            held = beat if valid and self.ready.value != 1 else None

    def stop(self) -> None:
        self._task.cancel()
