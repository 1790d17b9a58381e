"""Bench: toe.NicSegQueue, the NIC-packet queue as the engine takes it in the NIC (issue 17):
frames from TcpSteer with their SteerSeg (the lookup's description) beside them.

Checked against a model (the frames and their SteerSegs, in order, each SteerSeg naming its
frame: `info_seq` carries the frame's number, which is also in its first bytes):
 - every frame that comes out is one that was sent, byte-exact, in order, never a part of
   one; the SteerSegs that come out are exactly those of the delivered frames, in the same
   order (a dropped frame takes its SteerSeg with it, whether it was refused at its start or
   ran out of beats part-way); delivered + dropped (stat_drop) = sent; stat_frame = delivered;
 - a SteerSeg never runs more than one frame ahead of its frame on the output;
 - host first, with TcpSteer's timing (the SteerSeg offered the cycle after the frame's first
   beat, so a one-beat frame ends before its SteerSeg comes): the input is never
   back-pressured, 64-byte frames back to back included (with the SteerSeg as two prefix
   beats in the frame queue they took 4 cycles for 2 beats: docs/toe.md, "The engine in the
   NIC: figures"); frames the queue cannot take are dropped and counted, never waited for;
 - FCFS: `status_fcfs_full` is set while Qlen (counting the frame coming in) is at its
   limit; a sender that honours it, as TcpSteer does (no frame started while it is set, nor
   in the cycle after a frame's last beat, when TcpSteer cannot decide the next), never has
   a frame dropped that fits, and all is delivered when the output resumes; the input itself
   never waits for Qlen (so a table answer is never held behind it: the FCFS deadlock);
 - SteerSegs late or early by random amounts, random gaps between beats, output and m_seg
   back-pressure at random, a frame queue small enough to run out of beats mid-frame.

Replay a run: OFFNIC_SEED=N.
"""
import random
from collections import deque

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from offnic_sim.harness.axis_tb import StreamTB, random_payload, set_pauses
from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb

BYTES, DEPTH, MAX_FRAMES, ID_BITS = 32, 64, 8, 6
DESIGN = Design.of("toe.NicSegQueue", id_bits=ID_BITS, depth=DEPTH, max_frames=MAX_FRAMES)
# SteerSeg's fields (m_seg_bits_* / s_seg_bits_*) and their widths (TcpSteer.scala, TcpParser.scala)
FIELDS = {"id": ID_BITS, "info_kind": 2, "info_bad": 3, "info_key": 96, "info_seq": 32, "info_ack": 32,
          "info_flags": 8, "info_window": 16, "info_tsPresent": 1, "info_tsVal": 32, "info_tsEcr": 32,
          "info_dataStart": 7, "info_dataLen": 16}


def make_seg(n: int) -> dict:
    s = {k: random.getrandbits(w) for k, w in FIELDS.items()}
    s["info_seq"] = n
    return s


def make_frame(n: int, size: int) -> bytes:
    f = n.to_bytes(4, "little") + random_payload(max(size, 4) - 4)
    return f[:size] if size < 4 else f


class Input:
    """Drives s_axis and s_seg together, one cycle at a time. `seg_delay(k)` gives the cycles
    after the frame's first beat is first offered at which its SteerSeg is first offered
    (1 is TcpSteer's timing); the SteerSegs stay in order whatever the delays."""

    def __init__(self, dut):
        self.dut = dut
        self.frames: deque = deque()          # (n, bytes)
        self.segs: deque = deque()            # (n, seg, offer-at cycle or None)
        self.cycle = 0
        self.idle = 0.0
        self.seg_delay = lambda k: 1
        self.no_wait = False                  # assert the input is never back-pressured
        self.honour_full = False              # start no frame while status_fcfs_full (TcpSteer's rule)
        self.waited = 0
        self.sent = 0
        dut.s_axis_tvalid.value = 0
        dut.s_seg_valid.value = 0
        cocotb.start_soon(self._run())

    def send(self, n: int, frame: bytes, seg: dict) -> None:
        self.frames.append((n, frame))
        self.segs.append([n, seg, None])

    def busy(self) -> bool:
        return bool(self.frames or self.segs)

    async def _run(self):
        d = self.dut
        beats: list = []
        cur = None
        beat = 0
        while True:
            await RisingEdge(d.clock)
            self.cycle += 1
            if d.reset.value == 1:
                continue
            tv, tr = int(d.s_axis_tvalid.value), int(d.s_axis_tready.value)
            if tv and not tr:
                self.waited += 1
                assert not self.no_wait, f"host first: the input waited (frame {cur}, beat {beat})"
            ended = False
            if tv and tr:
                beat += 1
                if beat == len(beats):
                    ended = True
                    self.frames.popleft()
                    self.sent += 1
                    cur = None
            if int(d.s_seg_valid.value) and int(d.s_seg_ready.value):
                self.segs.popleft()
            # next cycle's drive
            held = self.honour_full and (ended or int(d.status_fcfs_full.value) == 1)
            if cur is None and self.frames and held:
                self.waited += 1
            if cur is None and self.frames and not held and (tv == 0 or random.random() >= self.idle):
                cur, f = self.frames[0]
                beats = [f[i:i + BYTES] for i in range(0, len(f), BYTES)]
                beat = 0
                for s in self.segs:
                    if s[0] == cur and s[2] is None:
                        s[2] = self.cycle + self.seg_delay(cur)
            if cur is not None and (beat > 0 and tv and tr and random.random() < self.idle):
                d.s_axis_tvalid.value = 0       # a gap between beats (never inside a TcpSteer frame, but legal)
            elif cur is not None:
                b = beats[beat]
                d.s_axis_tdata.value = int.from_bytes(b.ljust(BYTES, b"\0"), "little")
                d.s_axis_tkeep.value = (1 << len(b)) - 1
                d.s_axis_tlast.value = int(beat == len(beats) - 1)
                d.s_axis_tvalid.value = 1
            else:
                d.s_axis_tvalid.value = 0
            if self.segs and self.segs[0][2] is not None and self.cycle >= self.segs[0][2]:
                for k, v in self.segs[0][1].items():
                    getattr(d, f"s_seg_bits_{k}").value = v
                d.s_seg_valid.value = 1
            else:
                d.s_seg_valid.value = 0


class Output:
    """Takes m_seg (ready at random) and checks each SteerSeg runs at most one frame ahead;
    counts the queue's pulses."""

    def __init__(self, dut, tb: StreamTB):
        self.dut, self.tb = dut, tb
        self.segs: list[dict] = []
        self.frames: list[bytes] = []
        self.stall = 0.0
        self.queued = self.dropped = 0
        self.fates: list[bool] = []           # per frame in, in order: kept (stat_frame) or dropped
        dut.m_seg_ready.value = 0
        cocotb.start_soon(self._run())

    async def _run(self):
        d = self.dut
        while True:
            await RisingEdge(d.clock)
            if d.reset.value == 1:
                continue
            self.queued += int(d.stat_frame.value)
            self.dropped += int(d.stat_drop.value)
            if int(d.stat_frame.value) or int(d.stat_drop.value):
                self.fates.append(bool(int(d.stat_frame.value)))
            while not self.tb.sink.empty():
                self.frames.append(bytes(self.tb.sink.recv_nowait().tdata))
            if int(d.m_seg_valid.value) and int(d.m_seg_ready.value):
                self.segs.append({k: int(getattr(d, f"m_seg_bits_{k}").value) for k in FIELDS})
                assert len(self.segs) <= len(self.frames) + 1, \
                    f"SteerSeg {len(self.segs)} out with only {len(self.frames)} frames out"
            d.m_seg_ready.value = int(random.random() >= self.stall)


class Mark:
    """Where the counts stood before a batch."""

    def __init__(self, out: Output):
        self.f, self.s, self.q, self.d = len(out.frames), len(out.segs), out.queued, out.dropped
        self.fates = len(out.fates)


async def finish(tb: StreamTB, inp: Input, out: Output, batch: list[tuple[int, bytes, dict]], m: Mark,
                 settle: int = 300) -> list[bool]:
    """Wait until everything of `batch` (sent since `m`) is out; check it against the model;
    return, per frame, whether it was delivered."""
    quiet = waited = 0
    while quiet < settle:     # everything in and out, then `settle` quiet cycles
        await RisingEdge(tb.clock)
        quiet = 0 if inp.busy() or int(tb.dut.status_busy.value) else quiet + 1
        waited += 1
        assert waited < 200_000, "the queue never emptied"
    got_f, got_s = out.frames[m.f:], out.segs[m.s:]
    delivered, k = [], 0
    for n, f, s in batch:
        hit = k < len(got_f) and got_f[k] == f
        delivered.append(hit)
        k += hit
    assert k == len(got_f), f"frame {k} delivered is no sent frame in order"
    assert out.fates[m.fates:] == delivered, "the frames delivered are not those the queue kept: " + \
        str([(n, len(f), kept, hit) for (n, f, s), kept, hit in zip(batch, out.fates[m.fates:], delivered) if kept != hit]) + \
        f" out: {[(int.from_bytes(g[:4], 'little'), len(g)) for g in got_f]} qlen {int(tb.dut.status_qlen.value)} " \
        f"busy {int(tb.dut.status_busy.value)} cycle {inp.cycle} sink queue {tb.sink.count()}"
    want_s = [s for (n, f, s), hit in zip(batch, delivered) if hit]
    assert got_s == want_s, (f"SteerSegs out {[g['info_seq'] for g in got_s]}, "
                             f"expected those of the delivered frames {[w['info_seq'] for w in want_s]}")
    assert out.dropped - m.d == len(batch) - len(got_f), \
        f"stat_drop counted {out.dropped - m.d}, {len(batch) - len(got_f)} frames missing"
    assert out.queued - m.q == len(got_f)
    assert int(tb.dut.status_qlen.value) == 0
    return delivered


async def run_batch(tb: StreamTB, inp: Input, out: Output, batch: list[tuple[int, bytes, dict]]) -> list[bool]:
    m = Mark(out)
    for n, f, s in batch:
        inp.send(n, f, s)
    return await finish(tb, inp, out, batch, m)


def batch_of(sizes: list[int], first: int) -> list[tuple[int, bytes, dict]]:
    return [(first + i, make_frame(first + i, n), make_seg(first + i)) for i, n in enumerate(sizes)]


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def nic_seg_queue(dut):
    tb = StreamTB(dut, sources=())
    dut.cfg_max_frames.value = 0
    dut.cfg_fcfs.value = 0
    await tb.do_reset()
    inp, out = Input(dut), Output(dut, tb)
    n = 0

    # Host first, TcpSteer's timing, 64-byte frames back to back, the output keeping up:
    # never a wait, nothing dropped.
    inp.no_wait = True
    b = batch_of([64] * 300, n)
    n += len(b)
    mk, t0 = Mark(out), inp.cycle
    for m, f, s in b:
        inp.send(m, f, s)
    while inp.busy():
        await RisingEdge(tb.clock)
    dut._log.info("300 64-byte frames taken in %d cycles (their beats: 600)", inp.cycle - t0)
    assert all(await finish(tb, inp, out, b, mk)), "64-byte frames dropped while the output kept up"

    # Host first, TcpSteer's timing, one-beat frames among others (their SteerSeg comes a cycle
    # after their last beat), output and m_seg stalled at random: never a wait; drops counted.
    for stall in (0.0, 0.5, 0.9):
        set_pauses([tb.sink], stall)
        out.stall = stall
        sizes = [random.choice([random.randint(4, BYTES), 64, random.randint(54, 300),
                                random.randint(300, DEPTH * BYTES + 40)]) for _ in range(200)]
        b = batch_of(sizes, n)
        n += len(b)
        d = await run_batch(tb, inp, out, b)
        dut._log.info("host first, stall %.1f: %d of %d delivered", stall, sum(d), len(d))
        if stall >= 0.9:
            assert not all(d), "the stalled output never filled the queue"

    # The output stopped: exactly MAX_FRAMES small frames kept, the rest dropped at once.
    set_pauses([tb.sink], 0.0)
    out.stall = 0.0
    tb.sink.pause = True
    b = batch_of([64] * (MAX_FRAMES + 7), n)
    n += len(b)
    mk = Mark(out)
    for m, f, s in b:
        inp.send(m, f, s)
    while inp.busy():
        await RisingEdge(tb.clock)
    await ClockCycles(tb.clock, 20)
    assert out.dropped - mk.d == 7 and int(dut.status_qlen.value) == MAX_FRAMES
    tb.sink.pause = False
    d = await finish(tb, inp, out, b, mk)
    assert d == [True] * MAX_FRAMES + [False] * 7, "not the first MAX_FRAMES frames kept"

    # Late and early SteerSegs, gaps between beats (the input may wait now: a SteerSeg more
    # than a frame late), both modes, back-pressure everywhere.
    inp.no_wait = False
    for fcfs in (0, 1):
        dut.cfg_fcfs.value = fcfs
        inp.honour_full = bool(fcfs)
        for idle, stall in ((0.3, 0.3), (0.0, 0.8), (0.5, 0.95)):
            inp.idle = idle
            inp.seg_delay = lambda k: random.choice([0, 1, 1, 2, random.randint(0, 40)])
            set_pauses([tb.sink], stall)
            out.stall = stall
            # (FCFS: frames the queue always has beats for, MAX_FRAMES of them at most)
            top = DEPTH * BYTES // MAX_FRAMES if fcfs else DEPTH * BYTES // 2
            sizes = [random.choice([random.randint(4, BYTES), 64, random.randint(54, top),
                                    random.randint(top // 2, top)]) for _ in range(150)]
            b = batch_of(sizes, n)
            n += len(b)
            d = await run_batch(tb, inp, out, b)
            dut._log.info("fcfs %d idle %.1f stall %.1f: %d of %d delivered, input waited %d cycles",
                          fcfs, idle, stall, sum(d), len(d), inp.waited)
            if fcfs:
                assert all(d), "FCFS dropped a frame the queue had beats for"
    inp.idle = 0.0
    inp.seg_delay = lambda k: 1

    # FCFS at the limit: the flag stands, the sender waits, nothing dropped, all delivered when
    # the output resumes.
    dut.cfg_fcfs.value = 1
    inp.honour_full = True
    dut.cfg_max_frames.value = 3
    set_pauses([tb.sink], 0.0)
    out.stall = 0.0
    tb.sink.pause = True
    b = batch_of([64] * 10, n)
    n += len(b)
    w0, mk = inp.waited, Mark(out)
    for m, f, s in b:
        inp.send(m, f, s)
    await ClockCycles(tb.clock, 100)
    assert int(dut.status_qlen.value) == 3 and inp.waited > w0, "FCFS did not wait at its limit"
    assert int(dut.status_fcfs_full.value) == 1 and int(dut.s_axis_tready.value) == 1
    tb.sink.pause = False
    assert all(await finish(tb, inp, out, b, mk)), "FCFS dropped a frame at its limit"
    assert int(dut.status_fcfs_full.value) == 0

    # FCFS, a sender that ignores the flag: the input still never waits; the frames past the
    # limit are dropped and counted, never a hang.
    inp.honour_full = False
    inp.no_wait = True
    tb.sink.pause = True
    b = batch_of([64] * 10, n)
    n += len(b)
    mk = Mark(out)
    for m, f, s in b:
        inp.send(m, f, s)
    while inp.busy():
        await RisingEdge(tb.clock)
    tb.sink.pause = False
    assert await finish(tb, inp, out, b, mk) == [True] * 3 + [False] * 7

    # Host first at the same limit: dropped at once, never waited for.
    dut.cfg_fcfs.value = 0
    inp.no_wait = True
    tb.sink.pause = True
    b = batch_of([64] * 10, n)
    mk = Mark(out)
    for m, f, s in b:
        inp.send(m, f, s)
    while inp.busy():
        await RisingEdge(tb.clock)
    tb.sink.pause = False
    assert await finish(tb, inp, out, b, mk) == [True] * 3 + [False] * 7
    dut._log.info("all: %d frames sent, %d delivered, %d dropped", inp.sent, len(out.frames), out.dropped)


def test_nic_seg_queue():
    run_cocotb(DESIGN, __name__)
