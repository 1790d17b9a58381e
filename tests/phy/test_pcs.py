"""Bench: the BASE-R PCS (phy.PcsTestTop: BaseRPcs + its register block) against the Python
reference of sim/offnic_sim/phy (written from IEEE 802.3 clause 49, not from the RTL), at
the 10G and 25G parameterisations (the same logic; the BER window differs: 125 us in each
clock).

- tx_words: every block type, frames, ordered sets and words that fit no block or come
  out of sequence, driven on the XGMII honouring `xgmii_tx_ready` (32 of 33 cycles); the
  serdes output decoded by the model (gearbox, block lock, descrambler, coder) must be
  exactly the model's encode-then-decode of the words the PCS took, /E/ where due;
  tx_error_blocks counts the error blocks the model sent.
- rx_words: the model sends the same kind of stream into the serdes input, with blocks
  corrupted on the way (bad sync headers, unknown block types, invalid codes, flipped
  payload bits); every word out of the XGMII must be the model's decode of the blocks
  sent; rx_error_blocks and rx_bad_sync_headers as the model counts them.
- loopback: cocotbext-eth's XgmiiSource -> TX -> serdes loop -> RX -> XgmiiSink: frames of
  every size (60..1518 bytes without FCS at 10G, a random subset at 25G) and jumbo
  frames, random gaps, sequence ordered sets; every frame arrives exactly; the model
  decodes the TX stream alongside and sees the same frames.
- model_loop: the same through the model instead of a wire: the model decodes the PCS's
  TX and its encoder feeds the PCS's RX.
- bit_errors: the loop flips bits at random; every frame that arrives is the one sent,
  or is marked (/E/ inside) or fails its FCS: none corrupted silently.
- slips: the loop loses or gains a bit; block lock goes, slips and comes back (counted),
  and the traffic after it arrives intact.
- hi_ber_and_lock: 31 invalid sync headers in 155 blocks (lock kept, hi_ber raised,
  local fault out, cleared after one clean window: within one to two windows), 15 in a
  window (no hi_ber), then noise on the line (lock lost, local fault), then lock again.
"""
import collections
import random
import zlib

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp
from cocotbext.eth import XgmiiFrame, XgmiiSink, XgmiiSource

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.host import regs
from offnic_sim.phy import baser
from offnic_sim.phy.serdes import (BaseRSerdesSink, BaseRSerdesSource, SerdesLoop, with_fcs, word_from_lanes,
                                   xgmii_frame_words)

PCS = regs.PCS.regs


class PcsTB:
    def __init__(self, dut, loop: bool, sink: bool = False):
        self.dut = dut
        c = bench_config()
        self.window = c["ber_window_cycles"]
        cocotb.start_soon(Clock(dut.clock, c["period_ps"], unit="ps").start())
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clock, dut.reset)
        self.rx_words: list[tuple[int, int]] = []
        self.tx_model = baser.RxPcs()
        if loop:
            self.loop = SerdesLoop(dut.serdes_tx_data, dut.serdes_rx_data, dut.clock, model=self.tx_model)
        else:
            self.source = BaseRSerdesSource(dut.serdes_rx_data, dut.clock)
            if sink:  # the model decoding the TX output (costs Python time every cycle)
                self.tx_model = BaseRSerdesSink(dut.serdes_tx_data, dut.clock).pcs
        dut.xgmii_txd.value, dut.xgmii_txc.value = baser.IDLE_WORD
        cocotb.start_soon(self._monitor_rx())

    async def reset(self):
        self.dut.reset.value = 1
        await ClockCycles(self.dut.clock, 5)
        self.dut.reset.value = 0
        await ClockCycles(self.dut.clock, 2)

    async def _monitor_rx(self):
        d = self.dut
        while True:
            await RisingEdge(d.clock)
            if d.xgmii_rx_valid.value == 1:
                self.rx_words.append((int(d.xgmii_rxd.value), int(d.xgmii_rxc.value)))

    async def reg(self, name: str) -> int:
        r = await self.axil.read(PCS[name].offset, 4)
        assert r.resp == AxiResp.OKAY
        return int.from_bytes(r.data, "little")

    async def counters(self) -> dict[str, int]:
        return {n: await self.reg(n) for n in ("rx_bad_sync_headers", "rx_error_blocks", "rx_slips",
                                               "rx_lock_losses", "rx_hi_ber_events", "tx_error_blocks")}

    async def wait_lock(self, limit: int = 5000) -> None:
        for _ in range(limit):
            await RisingEdge(self.dut.clock)
            if self.dut.status_rx_block_lock.value == 1 and self.dut.status_rx_hi_ber.value == 0:
                return
        raise AssertionError("no block lock")


# --- word streams -------------------------------------------------------------------------------

def marker(rng) -> tuple[int, int]:
    """A sequence ordered set in both halves with random data: where a comparison starts."""
    lanes = [(baser.X_SEQ, 1)] + [(rng.randrange(256), 0) for _ in range(3)]
    lanes += [(baser.X_SEQ, 1)] + [(rng.randrange(256), 0) for _ in range(3)]
    return word_from_lanes(lanes)


def control_words(rng) -> list[tuple[int, int]]:
    """One valid word of every control block type, ordered sets included, between idles."""
    ctl = [baser.X_IDLE, baser.X_LPI, baser.X_ERROR, 0x1C, 0x3C, 0x7C, 0xBC, 0xDC, 0xF7]
    c = lambda: (rng.choice([x for x in ctl if x != baser.X_ERROR]), 1)  # noqa: E731
    ce = lambda: (rng.choice(ctl), 1)  # noqa: E731  (/E/ allowed: C of an O block, after /T/)
    o = lambda: (rng.choice([baser.X_SEQ, baser.X_SIG]), 1)  # noqa: E731
    d = lambda: (rng.randrange(256), 0)  # noqa: E731
    s = (baser.X_START, 1)
    out = [word_from_lanes([c() for _ in range(8)]),
           word_from_lanes([o(), d(), d(), d(), ce(), ce(), ce(), ce()]),
           word_from_lanes([ce(), ce(), ce(), ce(), o(), d(), d(), d()]),
           word_from_lanes([o(), d(), d(), d(), o(), d(), d(), d()])]
    # Frames started by each start block type, ended in each lane.
    for start in ([s] + [d() for _ in range(7)], [ce(), ce(), ce(), ce(), s, d(), d(), d()],
                  [o(), d(), d(), d(), s, d(), d(), d()]):
        for k in range(8):
            out += [word_from_lanes(start), word_from_lanes([d() for _ in range(8)]),
                    word_from_lanes([d() for _ in range(k)] + [(baser.X_TERM, 1)] + [ce() for _ in range(7 - k)])]
            out.append(word_from_lanes([c() for _ in range(8)]))
    return out


def bad_words(rng) -> list[tuple[int, int]]:
    """Words no block carries or out of sequence, each followed by idles (recovery)."""
    i = (baser.X_IDLE, 1)
    d = lambda: (rng.randrange(256), 0)  # noqa: E731
    start = word_from_lanes([(baser.X_START, 1)] + [d() for _ in range(7)])
    cases = [
        [word_from_lanes([i, (baser.X_ERROR, 1)] + [i] * 6)],           # /E/ among idles
        [word_from_lanes([d() for _ in range(8)])],                      # data outside a frame
        [word_from_lanes([i, (baser.X_START, 1)] + [d() for _ in range(6)])],  # start in lane 1
        [word_from_lanes([i] * 3 + [d()] + [i] * 4)],                    # data among idles
        [start, word_from_lanes([d(), (baser.X_TERM, 1), d()] + [i] * 5)],  # data after /T/
        [start, start, word_from_lanes([(baser.X_TERM, 1)] + [i] * 7)],  # start inside a frame
        [start, word_from_lanes([i] * 8)],                                # frame without /T/
        [word_from_lanes([(0x12, 1)] + [i] * 7)],                         # no such character
    ]
    out = []
    for case in cases:
        out += case + [baser.IDLE_WORD] * 2
    return out


def frame_words(rng, n: int) -> list[tuple[int, int]]:
    out = []
    for _ in range(n):
        out += xgmii_frame_words(with_fcs(rng.randbytes(rng.randrange(60, 300))), lane4=rng.random() < 0.5,
                                 gap=rng.randrange(5, 20))
    return out


def expected_tx(words):
    """The model's transmit then receive of `words`: what the far end's XGMII shows."""
    tx, rx = baser.TxCoder(), baser.RxCoder()
    out = [rx.step(tx.step(*w)) for w in words + [baser.IDLE_WORD]]
    return out[1:], tx.errors


def compare_from(got, want, what):
    """`got` from the first occurrence of want[0] must start with all of `want`."""
    assert want[0] in got, f"{what}: the marker never arrived ({len(got)} words)"
    i = got.index(want[0])
    seg = got[i:i + len(want)]
    assert len(seg) == len(want), f"{what}: {len(seg)} of {len(want)} words arrived"
    for k, (g, w) in enumerate(zip(seg, want)):
        assert g == w, f"{what}: word {k}: got {g[0]:016x}/{g[1]:02x}, want {w[0]:016x}/{w[1]:02x}"


# --- tests -------------------------------------------------------------------------------------

@cocotb.test(timeout_time=200, timeout_unit="us")
async def tx_words(dut):
    """XGMII words in (taken when xgmii_tx_ready), decoded by the model from the serdes output."""
    rng = random.Random(random.getrandbits(32))
    tb = PcsTB(dut, loop=False, sink=True)
    await tb.reset()
    words = [baser.IDLE_WORD] * 200 + [marker(rng)]
    for _ in range(3):
        words += control_words(rng) + bad_words(rng) + frame_words(rng, 6)
    mixed = control_words(rng) + frame_words(rng, 3)
    rng.shuffle(mixed)  # out of sequence on purpose: whatever the order, the model decides
    words += mixed
    words += [baser.IDLE_WORD] * 20
    queue = collections.deque(words)
    taken = []
    stalls = 0
    dut.xgmii_txd.value, dut.xgmii_txc.value = cur = queue.popleft()
    while queue or cur != baser.IDLE_WORD:
        await RisingEdge(dut.clock)
        if dut.xgmii_tx_ready.value == 1:
            taken.append(cur)
            cur = queue.popleft() if queue else baser.IDLE_WORD
            dut.xgmii_txd.value, dut.xgmii_txc.value = cur
        else:
            stalls += 1
    await ClockCycles(dut.clock, 100)
    cycles = len(taken) + stalls
    assert stalls in range(cycles // 33 - 1, cycles // 33 + 2), f"{stalls} stalls in {cycles} cycles: not 1 in 33"
    i = taken.index(words[200])
    want, errors = expected_tx(taken)
    compare_from(tb.tx_model.words, want[i:-2], "TX")
    assert tb.tx_model.lock.losses == 0 and tb.tx_model.lock.lock
    c = await tb.counters()
    assert c["tx_error_blocks"] == errors, (c, errors)
    assert errors > 20


@cocotb.test(timeout_time=200, timeout_unit="us")
async def rx_words(dut):
    """Blocks from the model, some corrupted, into the serdes input: the XGMII output is the
    model's decode of exactly the blocks sent."""
    rng = random.Random(random.getrandbits(32))
    tb = PcsTB(dut, loop=False)
    await tb.reset()
    tb.source.send([baser.IDLE_WORD] * 300)
    await tb.wait_lock()
    while not tb.source.idle():  # the idles queued for lock are out
        await RisingEdge(dut.clock)
    start = len(tb.source.sent) + 100  # after the marker (block ~41 from here): it must arrive intact
    bad_headers = 0

    def corrupt(i, block):
        nonlocal bad_headers
        if i < start:
            return block
        header, payload = block
        forced = (i - start) % 200 == 100
        if not forced and rng.random() > 0.03:
            return block
        kind = 0 if forced else rng.randrange(4)
        if kind == 0 and (forced or (i % 64) < 8):  # a bad sync header, few enough to keep lock
            bad_headers += 1
            return header ^ rng.choice([1, 2]), payload
        if kind == 1 and header == baser.SYNC_CTRL:  # another block type (maybe none)
            return header, payload ^ rng.getrandbits(8)
        return header, payload ^ (1 << rng.randrange(64))  # one payload bit (three after descrambling)
    tb.source.corrupt = corrupt
    mark = marker(rng)
    words = [baser.IDLE_WORD] * 40 + [mark]
    for _ in range(3):
        words += control_words(rng) + bad_words(rng) + frame_words(rng, 6)
    tb.source.send(words + [baser.IDLE_WORD] * 40)
    while not tb.source.idle():
        await RisingEdge(dut.clock)
    tb.source.corrupt = None  # what was corrupted is on its way; counted once it arrived
    await ClockCycles(dut.clock, 60)
    # The model's receive side over every block sent.
    desc, coder = baser.Descrambler(), baser.RxCoder()
    want = []
    for h, p in tb.source.sent:
        w = coder.step((h, desc.step(p)))
        want.append(w)
    want = want[1:]
    # Compare from the marker (blocks before `start` are clean, so the marker is intact).
    i = want.index(mark)
    compare_from(tb.rx_words, want[i:len(want) - 20], "RX")
    assert dut.status_rx_block_lock.value == 1
    c = await tb.counters()
    assert c["rx_lock_losses"] == 0 and c["rx_hi_ber_events"] == 0
    assert c["rx_bad_sync_headers"] == bad_headers
    assert c["rx_error_blocks"] == coder.errors, (c, coder.errors)
    assert bad_headers > 0 and coder.errors > 20


async def loopback_run(tb, frames, gaps, rng):
    dut = tb.dut
    src = XgmiiSource(dut.xgmii_txd, dut.xgmii_txc, dut.clock, dut.reset, enable=dut.xgmii_tx_ready)
    sink = XgmiiSink(dut.xgmii_rxd, dut.xgmii_rxc, dut.clock, dut.reset, enable=dut.xgmii_rx_valid)
    await tb.reset()
    await tb.wait_lock()
    for f in frames:
        await src.send(XgmiiFrame.from_payload(f))
        if gaps and rng.random() < 0.2:
            await src.wait()
            await ClockCycles(dut.clock, rng.randrange(1, 40))
    return src, sink


async def receive_all(sink, n, clock, limit):
    got = []
    for _ in range(limit):
        while not sink.empty():
            got.append(sink.recv_nowait())
        if len(got) >= n:
            break
        await RisingEdge(clock)
    return got


@cocotb.test(timeout_time=3000, timeout_unit="us")
async def loopback(dut):
    """XgmiiSource -> PCS TX -> serdes loop -> PCS RX -> XgmiiSink, every frame size."""
    c = bench_config()
    rng = random.Random(random.getrandbits(32))
    tb = PcsTB(dut, loop=True)
    sizes = list(range(60, 1519)) if c["all_sizes"] else sorted(rng.sample(range(60, 1519), 120))
    sizes += [9000, 9014]
    frames = [rng.randbytes(n) for n in sizes]
    src, sink = await loopback_run(tb, frames, gaps=True, rng=rng)
    # XgmiiSource drives data (0) during reset: the PCS's first words after it are /E/ blocks.
    base = await tb.counters()
    got = await receive_all(sink, len(frames), dut.clock, 40 * sum(len(f) + 20 for f in frames) // 8)
    assert len(got) == len(frames), f"{len(got)} of {len(frames)} frames"
    for k, (g, f) in enumerate(zip(got, frames)):
        assert g.ctrl is None and g.check_fcs() and bytes(g.get_payload()) == f, f"frame {k} ({len(f)} B)"
    # The model decoding the TX serdes stream saw the same frames.
    model_frames = split_frames(tb.tx_model.words)
    assert [f for f in model_frames] == [with_fcs(f) for f in frames]
    cnt = await tb.counters()
    assert cnt == base, f"counted in traffic: {cnt}, after lock {base}"


@cocotb.test(timeout_time=500, timeout_unit="us")
async def model_loop(dut):
    """XgmiiSource -> PCS TX -> the model's receive side -> XGMII words -> the model's
    transmit side -> PCS RX -> XgmiiSink: the RTL and the model each decode what the other
    encoded."""
    rng = random.Random(random.getrandbits(32))
    tb = PcsTB(dut, loop=False)
    model = BaseRSerdesSink(dut.serdes_tx_data, dut.clock, forward=tb.source)
    frames = [rng.randbytes(rng.randrange(60, 1519)) for _ in range(20)] + [rng.randbytes(9000)]
    src, sink = await loopback_run(tb, [], gaps=False, rng=rng)
    while not model.pcs.lock.lock:  # the model's block lock on the PCS's TX
        await RisingEdge(dut.clock)
    for f in frames:
        await src.send(XgmiiFrame.from_payload(f))
    got = await receive_all(sink, len(frames), dut.clock, 10 * sum(len(f) + 20 for f in frames) // 8)
    assert [bytes(g.get_payload()) for g in got] == frames and all(g.ctrl is None and g.check_fcs() for g in got)


def split_frames(words):
    """Frames (FCS included, preamble stripped) in a stream of XGMII words; lanes after /S/
    up to /T/; frames with a control character inside are returned as None."""
    out, cur = [], None
    for d, c in words:
        for k in range(8):
            b, ctl = (d >> (8 * k)) & 0xFF, (c >> k) & 1
            if cur is None:
                if ctl and b == baser.X_START:
                    cur = bytearray()
            elif ctl:
                out.append(bytes(cur[7:]) if b == baser.X_TERM else None)
                cur = None
            else:
                cur.append(b)
    return out


def judge(got, sent):
    """Each received frame: exactly one sent (in order), or marked bad / failing its FCS."""
    verdicts = collections.Counter()
    sent_set = {bytes(f) for f in sent}
    for g in got:
        # The MAC frame is what follows the 8 bytes of /S/, preamble and SFD (a flipped bit
        # there is no harm to the data; the MAC's preamble check is its own business).
        data = bytes(g.data[8:])
        if g.ctrl is not None:
            verdicts["marked"] += 1
        elif len(data) < 4 or zlib.crc32(data[:-4]).to_bytes(4, "little") != data[-4:]:
            verdicts["fcs"] += 1
        else:
            assert data[:-4] in sent_set, "a frame with a good FCS that was never sent"
            verdicts["good"] += 1
    return verdicts


@cocotb.test(timeout_time=500, timeout_unit="us")
async def bit_errors(dut):
    """Random bit flips on the line: no frame is corrupted silently."""
    rng = random.Random(random.getrandbits(32))
    tb = PcsTB(dut, loop=True)
    frames = [rng.randbytes(rng.randrange(60, 1519)) for _ in range(60)]
    tb.loop.flip_rate = 5e-5
    src, sink = await loopback_run(tb, frames, gaps=False, rng=rng)
    await src.wait()
    await ClockCycles(dut.clock, 300)
    got = [sink.recv_nowait() for _ in range(sink.count())]
    v = judge(got, frames)
    assert tb.loop.flips > 5 and v["good"] > 20, (tb.loop.flips, v)
    assert v["marked"] + v["fcs"] > 0, v
    c = await tb.counters()
    # A frame marked bad got its /E/ from an error block, which was counted (a flipped
    # data bit alone only breaks the FCS: no block error to count).
    assert c["rx_error_blocks"] >= (1 if v["marked"] else 0), (c, v)
    cocotb.log.info("bit errors: %d flips, frames %s, counters %s", tb.loop.flips, dict(v), c)


@cocotb.test(timeout_time=500, timeout_unit="us")
async def slips(dut):
    """A bit lost and a bit gained on the line: lock lost, slips, lock again, traffic intact."""
    rng = random.Random(random.getrandbits(32))
    tb = PcsTB(dut, loop=True)
    frames = [rng.randbytes(rng.randrange(60, 600)) for _ in range(30)]
    src, sink = await loopback_run(tb, frames, gaps=False, rng=rng)
    for n, (sl, expect_losses) in enumerate(((1, 1), (-1, 2))):
        await ClockCycles(dut.clock, 200)
        tb.loop.slip(sl)
        for _ in range(3000):
            await RisingEdge(dut.clock)
            if dut.status_rx_block_lock.value == 0:
                break
        else:
            raise AssertionError("lock not lost after a slip")
        await tb.wait_lock(limit=20000)
        c = await tb.counters()
        assert c["rx_lock_losses"] == expect_losses and c["rx_slips"] >= n + 1, c
        # After lock again: a fresh batch arrives intact.
        await src.wait()
        await ClockCycles(dut.clock, 100)
        before = [sink.recv_nowait() for _ in range(sink.count())]
        judge(before, frames)  # nothing corrupted silently around the slip
        fresh = [rng.randbytes(rng.randrange(60, 1519)) for _ in range(10)]
        for f in fresh:
            await src.send(XgmiiFrame.from_payload(f))
        got = await receive_all(sink, len(fresh), dut.clock, 5000)
        assert [bytes(g.get_payload()) for g in got] == fresh and all(g.check_fcs() for g in got)
        frames += fresh
    cocotb.log.info("slips: %s", await tb.counters())


@cocotb.test(timeout_time=2000, timeout_unit="us")
async def hi_ber_and_lock(dut):
    """Invalid sync headers (hi_ber, local fault, recovery), noise (lock lost), relock."""
    tb = PcsTB(dut, loop=False)
    period = bench_config()["period_ps"]
    await tb.reset()
    await tb.wait_lock()
    lf = baser.LOCAL_FAULT_WORD

    def bad_headers(first: int, blocks: int, every: int):
        tb.source.corrupt = lambda i, b: (b[0] ^ 1, b[1]) if first <= i < first + blocks and i % every == 0 else b

    # 31 in 155 blocks (at most 13 in a run of 64, so lock stays): one window holds 16 at least.
    bad_headers(len(tb.source.sent) + 10, 155, 5)
    await with_timeout(RisingEdge(dut.status_rx_hi_ber), 400 * period, "ps")
    rise = get_sim_time("ps") // period
    assert dut.status_rx_block_lock.value == 1
    status = await tb.reg("status")
    assert status & 7 == 0b011, hex(status)  # lock, hi_ber, no link
    await ClockCycles(dut.clock, 5)
    n = len(tb.rx_words)
    await ClockCycles(dut.clock, 50)
    assert set(tb.rx_words[n:]) == {lf}, "local fault while hi_ber"
    # Clears at the end of the first clean window: within one to two windows.
    await with_timeout(FallingEdge(dut.status_rx_hi_ber), (2 * tb.window + 400) * period, "ps")
    held = get_sim_time("ps") // period - rise
    assert tb.window - 400 <= held <= 2 * tb.window + 400, f"hi_ber held {held} cycles, window {tb.window}"
    await ClockCycles(dut.clock, 10)
    assert tb.rx_words[-1] == baser.IDLE_WORD
    c = await tb.counters()
    assert c["rx_hi_ber_events"] == 1 and c["rx_lock_losses"] == 0 and c["rx_bad_sync_headers"] == 31, c
    # 15 in the window that just began: no hi_ber.
    bad_headers(len(tb.source.sent) + 5, 60, 4)
    await ClockCycles(dut.clock, 120)
    assert dut.status_rx_hi_ber.value == 0 and dut.status_rx_block_lock.value == 1
    c = await tb.counters()
    assert c["rx_bad_sync_headers"] == 31 + 15 and c["rx_hi_ber_events"] == 1, c
    # Noise on the line: lock lost, local fault; then lock again.
    tb.source.noise_cycles = 300
    await with_timeout(FallingEdge(dut.status_rx_block_lock), 300 * period, "ps")
    await ClockCycles(dut.clock, 5)
    n = len(tb.rx_words)
    await ClockCycles(dut.clock, 20)
    assert set(tb.rx_words[n:]) == {lf}
    await tb.wait_lock(limit=20000)
    await ClockCycles(dut.clock, 10)
    assert tb.rx_words[-1] == baser.IDLE_WORD
    c = await tb.counters()
    assert c["rx_lock_losses"] == 1 and c["rx_slips"] >= 1, c
    assert (await tb.reg("status")) & 7 == 0b101


# 10GBASE-R: 10.3125 Gb/s / 64 = 161.13 MHz (6206 ps); 25GBASE-R: 25.78125 Gb/s / 64 = 402.83 MHz
# (2482 ps). The BER window is 125 us (IEEE 802.3 49.2.14.2) in each clock.
RATES = {
    "10g": dict(label="pcs_10g", ber_window_cycles=20142, period_ps=6206, all_sizes=True),
    "25g": dict(label="pcs_25g", ber_window_cycles=50354, period_ps=2482, all_sizes=False),
}


@pytest.mark.parametrize("rate", RATES)
def test_pcs(rate):
    c = RATES[rate]
    design = Design.of("phy.PcsTestTop", label=c["label"], ber_window_cycles=c["ber_window_cycles"], addr_bits=8)
    run_cocotb(design, __name__, bench=c)

