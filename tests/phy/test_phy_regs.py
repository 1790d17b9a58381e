"""Bench: a board port's pcs register block (phy.PhyRegsTestTop: BaseRPhy + PhyPortRegs, as
BoardCore builds them) read over AXI-Lite in the core clock while the PHY runs in its own
three: core 250 MHz, MAC 390.625 MHz, transceiver TX 402.83 MHz, RX (a recovered clock of
its own, 150 ppm off the TX one, random phase). Faults are injected on both sides and every
counter read over the register bus is checked against what was injected:

- RX (BaseRSerdesSource on the RX clock, the reference model of sim/offnic_sim/phy):
  bad sync headers few enough to keep lock and corrupted block types: rx_bad_sync_headers
  and rx_error_blocks exactly as the model counts them; then 20 bad headers five blocks
  apart: hi_ber rises once (rx_hi_ber_events, status reads lock + hi_ber); then noise:
  block lock lost once (rx_lock_losses), slips (rx_slips), lock again (status).
- TX: the MAC sends words no block carries among idles; the model decodes the serdes
  output (BaseRSerdesSink): tx_error_blocks rises by exactly the /E/ blocks it decoded.
- Rate adapters: the MAC clock stops for a while, a jumbo frame half sent: the TX adapter
  runs empty inside it (underflows), the RX adapter fills (overflows); before that both
  read 0. Every adapter counter read equals the adapter's own counter (design ports),
  which cannot move between two samples of it around the read.
While traffic flows, reads are checked to lie between the source counter's values around
them (a value the counter really held, never torn or ahead).
"""
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge, Timer, with_timeout
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host import regs
from offnic_sim.phy import baser
from offnic_sim.phy.serdes import BaseRSerdesSink, BaseRSerdesSource, word_from_lanes, xgmii_frame_words, with_fcs

PCS = regs.PCS.regs
CORE_PS, MAC_PS, TX_PS, RX_PS = 4000, 2560, 2482, 2482 + 1  # RX: 400 ppm slower (1 ps in 2482)
ADAPTER = [f"{d}_adapter_{k}" for d in ("tx", "rx") for k in ("inserted", "deleted", "overflows", "underflows")]
BAD_WORD = word_from_lanes([(0x12, 1)] * 8)  # no such control character: the encoder's /E/


class PhyRegsTB:
    def __init__(self, dut, rng):
        self.dut, self.rng = dut, rng
        cocotb.start_soon(Clock(dut.clock, CORE_PS, unit="ps").start())
        cocotb.start_soon(Clock(dut.tx_clk, TX_PS, unit="ps", period_high=TX_PS // 2).start())
        self.mac = Clock(dut.mac_clk, MAC_PS, unit="ps", period_high=MAC_PS // 2)
        self.rx = Clock(dut.rx_clk, RX_PS, unit="ps", period_high=RX_PS // 2)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clock, dut.reset)
        self.source = BaseRSerdesSource(dut.serdes_rx_data, dut.rx_clk)
        self.sink = BaseRSerdesSink(dut.serdes_tx_data, dut.tx_clk)
        self.mac_words: list[tuple[int, int]] = []
        dut.xgmii_txd.value, dut.xgmii_txc.value = baser.IDLE_WORD

    async def start(self):
        d = self.dut
        await Timer(self.rng.randrange(1, 2000), unit="ps")
        self.mac.start()
        await Timer(self.rng.randrange(1, 2000), unit="ps")
        self.rx.start()
        rsts = (d.reset, d.mac_tx_rst, d.mac_rx_rst, d.tx_rst, d.rx_rst)
        for r in rsts:
            r.value = 1
        await ClockCycles(d.clock, 8)
        for r in rsts:
            r.value = 0
        cocotb.start_soon(self._mac_driver())

    async def _mac_driver(self):
        """The MAC's XGMII: queued words, else idles; one a MAC clock (none while it stops)."""
        d = self.dut
        while True:
            await RisingEdge(d.mac_clk)
            w = self.mac_words.pop(0) if self.mac_words else baser.IDLE_WORD
            d.xgmii_txd.value, d.xgmii_txc.value = w

    async def mac_idle(self):
        while self.mac_words:
            await RisingEdge(self.dut.mac_clk)

    async def reg(self, name: str) -> int:
        r = await self.axil.read(PCS[name].offset, 4)
        assert r.resp == AxiResp.OKAY
        return int.from_bytes(r.data, "little")

    def raw(self, name: str) -> int:
        """An adapter's own counter (its design port, in its own clock)."""
        return int(getattr(self.dut, name).value)

    async def adapter_regs(self) -> dict[str, int]:
        """Each adapter register, checked to lie between the adapter's own count 20 core
        cycles before the read and right after it: a value the counter really held."""
        out = {}
        for n in ADAPTER:
            before = self.raw(n)
            await ClockCycles(self.dut.clock, 20)
            v = await self.reg(n)
            after = self.raw(n)
            assert before <= v <= after, f"{n}: register {v}, counter {before}..{after}"
            out[n] = v
        return out

    async def wait_status(self, lock: int, limit: int = 20000):
        for _ in range(limit):
            await RisingEdge(self.dut.rx_clk)
            if self.dut.status_rx_block_lock.value == lock and self.dut.status_rx_hi_ber.value == 0:
                return
        raise AssertionError(f"block lock not {lock}")

    async def rx_drain(self):
        while not self.source.idle():
            await RisingEdge(self.dut.rx_clk)
        await ClockCycles(self.dut.clock, 40)  # through the PCS and the crossing


@cocotb.test(timeout_time=1500, timeout_unit="us")
async def counters_across_clocks(dut):
    rng = random.Random(random.getrandbits(32))
    tb = PhyRegsTB(dut, rng)
    await tb.start()
    tb.source.send([baser.IDLE_WORD] * 400)
    await tb.wait_status(lock=1)
    await tb.rx_drain()
    for _ in range(2000):  # the model at the far end of TX locks too
        await RisingEdge(dut.tx_clk)
        if tb.sink.pcs.lock.lock:
            break
    else:
        raise AssertionError("the model never locked on the TX output")
    assert (await tb.reg("port")) == 0
    assert (await tb.reg("status")) & 7 == 0b101  # lock, no hi_ber, link ok
    c0 = {n: await tb.reg(n) for n in ("rx_bad_sync_headers", "rx_error_blocks", "rx_lock_losses",
                                       "rx_hi_ber_events", "tx_error_blocks")}
    assert c0["rx_bad_sync_headers"] == c0["rx_error_blocks"] == c0["rx_lock_losses"] == c0["rx_hi_ber_events"] == 0, c0
    a0 = await tb.adapter_regs()
    assert a0["tx_adapter_overflows"] == a0["tx_adapter_underflows"] == 0, a0
    assert a0["rx_adapter_overflows"] == a0["rx_adapter_underflows"] == 0, a0

    # --- RX errors in lock and TX /E/ blocks at once, counted exactly.
    start = len(tb.source.sent) + 20
    bad_headers = 0

    def corrupt(i, block):
        nonlocal bad_headers
        header, payload = block
        if i < start or (i - start) % 37:
            return block
        if (i - start) % 74 == 0 and bad_headers < 10:  # a bad sync header (10 in the window: no hi_ber)
            bad_headers += 1
            return header ^ rng.choice([1, 2]), payload
        return header, payload ^ rng.getrandbits(8) if header == baser.SYNC_CTRL else payload ^ (1 << rng.randrange(64))
    tb.source.corrupt = corrupt
    tb.source.send(([baser.IDLE_WORD] * 20 + xgmii_frame_words(with_fcs(rng.randbytes(rng.randrange(60, 300))))) * 30)
    errors_before = sum(w == baser.ERROR_WORD for w in tb.sink.pcs.words)
    bad_words = rng.randrange(20, 40)
    for _ in range(bad_words):
        tb.mac_words += [BAD_WORD] + [baser.IDLE_WORD] * rng.randrange(2, 9)
    await tb.mac_idle()
    await tb.rx_drain()
    tb.source.corrupt = None
    await ClockCycles(dut.tx_clk, 100)
    desc, coder = baser.Descrambler(), baser.RxCoder()
    for h, p in tb.source.sent:
        coder.step((h, desc.step(p)))
    tx_errors = sum(w == baser.ERROR_WORD for w in tb.sink.pcs.words) - errors_before
    c = {n: await tb.reg(n) for n in c0}
    cocotb.log.info("in lock: %d bad headers, %d error blocks (model), %d TX /E/ blocks for %d bad words; registers %s",
                    bad_headers, coder.errors, tx_errors, bad_words, c)
    assert c["rx_bad_sync_headers"] == bad_headers == 10, c
    assert c["rx_error_blocks"] == coder.errors > bad_headers, (c, coder.errors)  # headers and corrupted types
    assert c["rx_lock_losses"] == c["rx_hi_ber_events"] == 0, c
    assert c["tx_error_blocks"] - c0["tx_error_blocks"] == tx_errors >= bad_words, (c, tx_errors)

    # --- 20 bad headers 5 blocks apart (at most 13 in 64: lock kept): hi_ber rises once.
    first = len(tb.source.sent) + 10
    tb.source.corrupt = lambda i, b: (b[0] ^ 1, b[1]) if first <= i < first + 100 and (i - first) % 5 == 0 else b
    tb.source.send([baser.IDLE_WORD] * 150)
    await with_timeout(RisingEdge(dut.status_rx_hi_ber), 400 * RX_PS, "ps")
    await tb.rx_drain()
    tb.source.corrupt = None
    assert dut.status_rx_block_lock.value == 1
    assert (await tb.reg("status")) & 7 == 0b011  # lock, hi_ber, no link
    c2 = {n: await tb.reg(n) for n in c0}
    assert c2["rx_bad_sync_headers"] == 10 + 20 and c2["rx_hi_ber_events"] == 1 and c2["rx_lock_losses"] == 0, c2

    # --- Noise on the line: lock lost once, slips while hunting, lock again.
    slips0 = await tb.reg("rx_slips")
    tb.source.noise_cycles = 300
    await with_timeout(FallingEdge(dut.status_rx_block_lock), 300 * RX_PS, "ps")
    tb.source.send([baser.IDLE_WORD] * 2000)
    for _ in range(20000):
        await RisingEdge(dut.rx_clk)
        if dut.status_rx_block_lock.value == 1:
            break
    else:
        raise AssertionError("no lock after the noise")
    await ClockCycles(dut.clock, 20)
    c3 = {n: await tb.reg(n) for n in ("rx_lock_losses", "rx_slips", "rx_hi_ber_events", "status")}
    assert c3["rx_lock_losses"] == 1 and c3["rx_slips"] > slips0, (c3, slips0)
    assert c3["status"] & 1 == 1, c3

    # --- The MAC clock stops with a jumbo frame half sent: TX adapter underflows, RX overflows.
    a1 = await tb.adapter_regs()
    assert a1["tx_adapter_overflows"] == a1["tx_adapter_underflows"] == a1["rx_adapter_overflows"] == 0, a1
    frame = xgmii_frame_words(with_fcs(rng.randbytes(9000)))
    tb.mac_words += frame
    while len(tb.mac_words) > len(frame) // 2:
        await RisingEdge(dut.mac_clk)
    tb.mac.stop()
    await ClockCycles(dut.tx_clk, 300)
    tb.mac.start()
    await tb.mac_idle()
    await ClockCycles(dut.mac_clk, 200)
    a2 = await tb.adapter_regs()
    cocotb.log.info("adapters before the stall %s, after %s", a1, a2)
    assert a2["tx_adapter_underflows"] > 0 and a2["rx_adapter_overflows"] > 0, a2
    for n in ADAPTER:
        assert a2[n] >= a1[n], (n, a1, a2)
    # Now quiet (no frame under way, no overflow): the two bad-case counters are exact.
    for n in ("tx_adapter_underflows", "rx_adapter_overflows", "tx_adapter_overflows", "rx_adapter_underflows"):
        assert await tb.reg(n) == tb.raw(n), n


def test_phy_regs():
    run_cocotb(Design.of("phy.PhyRegsTestTop", label="baser_phy_regs", ber_window_cycles=50354, addr_bits=8),
               __name__)
