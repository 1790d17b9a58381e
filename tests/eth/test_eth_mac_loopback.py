"""Bench: EthMac (the TX and RX halves in one clock domain) with its XGMII looped back,
TX to RX, on the 25G clock (390.625 MHz; the logic is the same as at 10G).

AXI-Stream frames of 1..9000 bytes go in, the source idling between frames at random
and, in a later phase, inside frames (underruns); some frames are aborted with tuser.
What comes out of m_axis must be, frame for frame: the payload padded to 60 bytes, good
(tuser 0) for a frame sent whole; a bad-marked prefix for a frame the transmitter ended
with /E/ (counted as an XGMII error by the receiver); oversize when the receiver's limit
is lowered below the frame. The two halves' statistics must agree: every TX pulse has
its RX verdict, with consistent byte counts. The XGMII in between obeys the wire rules.
"""
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from eth_tb import (PERIOD_25G_NS, RX_STATS, TX_STATS, StatRecorder, XgmiiRecorder, check_gaps, effective_ifg,
                    random_payload, rx_model, tx_body)
from offnic_sim.harness.axis_tb import frame_sizes, quiet, set_pauses, user_marks
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.clock = dut.clock
        cocotb.start_soon(Clock(dut.clock, PERIOD_25G_NS, unit="ns").start())
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clock, dut.reset)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clock, dut.reset)
        quiet(self.source, self.sink)
        self.wire = XgmiiRecorder(dut.clock, dut.xgmii_txd, dut.xgmii_txc)
        self.tx_stats = StatRecorder(dut, dut.clock, TX_STATS, "stat_tx_bytes")
        self.rx_stats = StatRecorder(dut, dut.clock, RX_STATS, "stat_rx_bytes")
        cocotb.start_soon(self._loop())

    async def _loop(self) -> None:
        """The cable: each cycle's TX word becomes the RX word (one cycle later)."""
        d = self.dut
        edge = RisingEdge(self.clock)
        while True:
            await edge
            d.xgmii_rxd.value = d.xgmii_txd.value
            d.xgmii_rxc.value = d.xgmii_txc.value

    async def reset(self, ifg: int, max_len: int) -> None:
        self.dut.cfg_ifg.value = ifg
        self.dut.cfg_max_frame_len.value = max_len
        self.dut.reset.value = 1
        await ClockCycles(self.clock, 4)
        self.dut.reset.value = 0
        await ClockCycles(self.clock, 4)
        self.wire.words.clear()
        self.tx_stats.take()
        self.rx_stats.take()

    async def run(self, payloads: list[bytes], aborts: list[bool], idle_between: float) -> None:
        for p, a in zip(payloads, aborts):
            self.source.send_nowait(AxiStreamFrame(p, tuser=user_marks(len(p), int(a), 8)))
            if random.random() < idle_between:
                await self.source.wait()
                await ClockCycles(self.clock, random.randint(0, 40))
        await self.source.wait()

    async def settle(self, frames: int, max_cycles: int = 200_000) -> None:
        for _ in range(max_cycles // 32):
            await ClockCycles(self.clock, 32)
            if len(self.rx_stats.events) >= frames:
                await ClockCycles(self.clock, 64)
                return
        raise AssertionError(f"{len(self.rx_stats.events)} of {frames} frames received after {max_cycles} cycles")


def check_round(tb: TB, payloads: list[bytes], aborts: list[bool], max_len: int, ifg: int, label: str) -> dict:
    """Frame by frame: TX pulse, RX verdict, m_axis content; the wire's gaps."""
    assert not tb.tx_stats.problems and not tb.rx_stats.problems, tb.tx_stats.problems + tb.rx_stats.problems
    tx, rx = tb.tx_stats.take(), tb.rx_stats.take()
    assert len(tx) == len(payloads), f"{label}: {len(tx)} TX pulses for {len(payloads)} frames"
    assert len(rx) == len(payloads), f"{label}: {len(rx)} RX verdicts for {len(payloads)} frames"
    counts: dict[str, int] = {}
    for i, (p, a, (tkind, tbytes), (verdict, rbytes)) in enumerate(zip(payloads, aborts, tx, rx)):
        body = tx_body(p)
        if tkind == "frame":
            assert not a, f"{label}: frame {i} aborted but sent whole"
            assert tbytes == len(body), f"{label}: frame {i} TX bytes {tbytes}, expected {len(body)}"
            want = rx_model(body, "T", max_len)
        else:
            # /E/-ended: tbytes counts the four /E/; the receiver saw the bytes before them.
            sent = tbytes - 4
            assert 0 <= sent <= len(body) - 4 and (a or sent % 8 == 0), f"{label}: frame {i} TX error bytes {tbytes}"
            want = rx_model(body[:sent], "E", max_len)
        assert (verdict, rbytes) == (want.verdict, want.length), \
            f"{label}: frame {i} ({len(p)} B, TX {tkind}): RX {verdict}/{rbytes}, expected {want.verdict}/{want.length}"
        counts[verdict] = counts.get(verdict, 0) + 1
        if want.delivered is not None:
            assert not tb.sink.empty(), f"{label}: frame {i} missing on m_axis"
            f = tb.sink.recv_nowait()
            user = f.tuser[-1] if isinstance(f.tuser, list) else (f.tuser or 0)
            assert bytes(f.tdata) == want.delivered, f"{label}: frame {i} ({verdict}) corrupted on m_axis"
            assert user == int(verdict != "good"), f"{label}: frame {i} ({verdict}) tuser {user}"
    assert tb.sink.empty(), f"{label}: extra frames on m_axis"
    frames, problems = tb.wire.take()
    assert not problems, f"{label}: XGMII violations {problems[:5]}"
    assert len(frames) == len(payloads)
    check_gaps(frames, effective_ifg(ifg), back_to_back=False)
    tb.dut._log.info("%s: %d frames, RX verdicts %s", label, len(payloads), counts)
    return counts


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def loopback(dut):
    c = bench_config()
    tb = TB(dut)
    ifg = random.choice([12, 12, 9, 16])
    await tb.reset(ifg, 9018)

    # Jumbo limit: everything up to 9000 bytes is good unless aborted.
    payloads = [random_payload(n) for n in frame_sizes(c["frames"], 9000)]
    aborts = [random.random() < 0.15 for _ in payloads]
    await tb.run(payloads, aborts, idle_between=0.3)
    await tb.settle(len(payloads))
    counts = check_round(tb, payloads, aborts, 9018, ifg, "jumbo")
    assert counts.get("xgmii", 0) == sum(aborts) and counts["good"] == len(payloads) - sum(aborts)

    # Standard limit: frames around 1518 bytes, the longer ones oversize at the receiver.
    dut.cfg_max_frame_len.value = 1518
    payloads = [random_payload(random.randint(1500, 1530)) for _ in range(16)]
    aborts = [False] * len(payloads)
    await tb.run(payloads, aborts, idle_between=0.0)
    await tb.settle(len(payloads))
    counts = check_round(tb, payloads, aborts, 1518, ifg, "1518 limit")
    assert counts.get("oversize", 0) == sum(len(p) > 1514 for p in payloads)

    # Underruns: the AXI-Stream source pauses inside frames too.
    dut.cfg_max_frame_len.value = 9018
    set_pauses([tb.source], 0.3)
    payloads = [random_payload(n) for n in frame_sizes(c["frames"] // 2, 3000)]
    aborts = [random.random() < 0.1 for _ in payloads]
    await tb.run(payloads, aborts, idle_between=0.0)
    set_pauses([tb.source], 0)
    await tb.settle(len(payloads))
    counts = check_round(tb, payloads, aborts, 9018, ifg, "underruns")
    assert counts.get("xgmii", 0) > sum(aborts), "no underrun happened"


CONFIGS = {"loopback": dict(frames=120)}


@pytest.mark.parametrize("name", CONFIGS)
def test_eth_mac_loopback(name):
    run_cocotb(Design.of("eth.EthMac", cfg_ports=True), __name__, bench=CONFIGS[name])
