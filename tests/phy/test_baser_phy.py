"""Bench: one port's PHY as a board has it (phy.BaseRPhy): the MAC's XGMII in its own clock
-> rate adapter -> PCS TX half (transceiver TX clock) -> serdes loop -> PCS RX half (the
recovered clock, here the same as TX: a loopback) -> rate adapter -> MAC XGMII. The MAC
side is cocotbext-eth's XgmiiSource/XgmiiSink (DIC gaps, as a MAC sends), unpaced: the
MAC has no clock enable. The MAC clock is 955 ppm slower than the transceiver's word rate
(2562 ps against 2482 ps x 33/32), beyond the 200 ppm two +-100 ppm clocks can be apart,
so that the TX adapter inserts and the RX adapter deletes many times in a short run.
(At 6,000 ppm a 9,000-byte frame drifts by more than the buffer holds below its low
mark: the TX side underflowed inside it, counted, and the frame arrived cut and marked.)

Checked: block lock; every frame (random sizes 60..1514 bytes of payload, jumbo ones,
back-to-back) arrives intact, in order, with a good FCS; the adapters adapted the way the
clocks require (TX inserts, RX deletes) and never overflowed or underflowed.
"""
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotbext.eth import XgmiiFrame, XgmiiSink, XgmiiSource

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.phy.serdes import SerdesLoop

MAC_PS, GT_PS = 2562, 2482


@cocotb.test(timeout_time=3, timeout_unit="ms")
async def loopback(dut):
    rng = random.Random(random.getrandbits(32))
    cocotb.start_soon(Clock(dut.tx_clk, GT_PS, unit="ps", period_high=GT_PS // 2).start())
    cocotb.start_soon(Clock(dut.rx_clk, GT_PS, unit="ps", period_high=GT_PS // 2).start())
    await Timer(rng.randrange(1, 2000), unit="ps")
    cocotb.start_soon(Clock(dut.mac_clk, MAC_PS, unit="ps", period_high=MAC_PS // 2).start())
    for r in (dut.mac_tx_rst, dut.mac_rx_rst, dut.tx_rst, dut.rx_rst):
        r.value = 1
    src = XgmiiSource(dut.xgmii_txd, dut.xgmii_txc, dut.mac_clk, dut.mac_tx_rst)
    sink = XgmiiSink(dut.xgmii_rxd, dut.xgmii_rxc, dut.mac_clk, dut.mac_rx_rst)
    SerdesLoop(dut.serdes_tx_data, dut.serdes_rx_data, dut.tx_clk)
    await ClockCycles(dut.mac_clk, 8)
    for r in (dut.mac_tx_rst, dut.mac_rx_rst, dut.tx_rst, dut.rx_rst):
        r.value = 0
    for _ in range(5000):
        await RisingEdge(dut.rx_clk)
        if dut.status_rx_block_lock.value == 1 and dut.status_rx_hi_ber.value == 0:
            break
    else:
        raise AssertionError("no block lock")
    await ClockCycles(dut.mac_clk, 100)
    while not sink.empty():  # whatever the start-up left
        sink.recv_nowait()

    frames = [rng.randbytes(rng.choice([60, 61, 1514, 9000]) if rng.random() < 0.15 else rng.randrange(60, 1515))
              for _ in range(300)]
    for f in frames:
        await src.send(XgmiiFrame.from_payload(f))
    got = []
    for _ in range(400000):
        await RisingEdge(dut.mac_clk)
        while not sink.empty():
            got.append(sink.recv_nowait())
        if len(got) >= len(frames):
            break
    await ClockCycles(dut.mac_clk, 200)
    st = {f"{side}_{k}": int(getattr(dut, f"{side}_adapter_{k}").value)
          for side in ("tx", "rx") for k in ("deleted", "overflows", "inserted", "underflows")}
    cocotb.log.info("%d frames through; adapters %s", len(got), st)
    assert sink.empty(), "more frames than were sent"
    payloads = [bytes(g.get_payload()) for g in got]
    bad = [(i, len(f), len(payloads[i]) if i < len(payloads) else None) for i, f in enumerate(frames)
           if i >= len(payloads) or payloads[i] != f]
    assert not bad, f"{len(got)} of {len(frames)} frames; differing (index, sent length, got length): {bad[:10]}"
    assert all(g.check_fcs() for g in got)
    assert st["tx_overflows"] == st["tx_underflows"] == st["rx_overflows"] == st["rx_underflows"] == 0, st
    # The MAC is slower: the PCS side reads faster (TX inserts) and writes faster (RX deletes).
    assert st["tx_inserted"] > 20 and st["tx_deleted"] == 0, st
    assert st["rx_deleted"] > 20, st


def test_baser_phy():
    run_cocotb(Design.of("phy.BaseRPhy", label="baser_phy", ber_window_cycles=50354), __name__)
