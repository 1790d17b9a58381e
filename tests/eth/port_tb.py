"""Test bench pieces for eth.EthPort (tests/eth/test_eth_port.py): two clock domains, the
cocotbext-eth XGMII models on the MAC side, cocotbext-axi on the core side, and a Python
model of everything the port must do: frames out on the wire, frames delivered on
m_axis (an in-order subsequence of the good frames: drops are whole and counted), and
every statistics counter.

Randomness comes from Python's `random`, seeded by cocotb from the run's seed (see
offnic_sim.harness.runner), so any failure replays with OFFNIC_SEED.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from cocotbext.eth import XgmiiSink, XgmiiSource

from eth_tb import MIN_PAYLOAD, RxItem, XgmiiRecorder, check_gaps, rx_model, tx_body
from offnic_sim.harness.axis_tb import quiet, set_pauses

CORE_NS = 4.0  # 250 MHz
PREAMBLE = b"\x55" * 7 + b"\xd5"

COUNTERS = ("tx_frames", "tx_errors", "tx_bytes", "rx_frames", "rx_fcs_errors", "rx_runts", "rx_oversize",
            "rx_xgmii_errors", "rx_fifo_drops", "rx_bytes")
VERDICT_COUNTER = {"good": "rx_frames", "fcs": "rx_fcs_errors", "runt": "rx_runts", "oversize": "rx_oversize",
                   "xgmii": "rx_xgmii_errors"}
WIDTH = {name: (64 if name.endswith("bytes") else 32) for name in COUNTERS}


def wire_frame_bytes(payload_len: int, ifg: int) -> int:
    """Average wire bytes per back-to-back frame: preamble/SFD, padded payload, FCS, gap."""
    return 8 + max(payload_len, MIN_PAYLOAD) + 4 + ifg


class WireWatch:
    """Exact frame positions on the transmit XGMII while it runs (eth_tb.XgmiiRecorder,
    a coroutine per MAC cycle, so only for the phases that measure gaps or rates;
    XgmiiSink's own timestamps drift after idle words)."""

    def __init__(self, dut):
        self.rec = XgmiiRecorder(dut.mac_clk, dut.xgmii_txd, dut.xgmii_txc)
        self.frames: list = []

    def take(self) -> list:
        got, problems = self.rec.take()
        assert not problems, f"XGMII violations: {problems[:5]}"
        self.frames += got
        return self.frames

    def back_to_back(self, ifg: int, skip: int) -> list[int]:
        """Gaps between the frames seen, the first `skip` only within the DIC rule, every
        later one exactly where the DIC rule puts a frame that is waiting (line rate).
        Returns the later gaps."""
        frames = self.take()
        _, deficit = check_gaps(frames[:skip + 1], ifg, back_to_back=False)
        gaps, _ = check_gaps(frames[skip:], ifg, back_to_back=True, deficit=deficit)
        return gaps

    def stop(self) -> None:
        self.rec.stop()


@dataclass
class Model:
    """What the port's counters must read, and what must come out of each side."""

    counts: dict = field(default_factory=lambda: {name: 0 for name in COUNTERS})
    tx_pending: list = field(default_factory=list)  # wire bodies still to appear on XGMII
    rx_pending: list = field(default_factory=list)  # good frames that may still appear on m_axis

    def tx(self, payload: bytes, fits: bool = True) -> None:
        if fits:
            body = tx_body(payload)
            self.tx_pending.append(body)
            self.counts["tx_frames"] += 1
            self.counts["tx_bytes"] += len(body)
        else:
            self.counts["tx_errors"] += 1

    def rx(self, item: RxItem, max_len: int) -> None:
        for region, term in item.expect:
            v = rx_model(region, term, max_len)
            self.counts[VERDICT_COUNTER[v.verdict]] += 1
            if v.verdict == "good":
                self.counts["rx_bytes"] += v.length
                self.rx_pending.append(v.delivered)


class PortTB:
    def __init__(self, dut, mac_ns: float, ifg: int = 12, max_len: int = 9018):
        self.dut = dut
        self.mac_ns = mac_ns
        self.ifg, self.max_len = ifg, max_len
        dut.reset.value = 1
        dut.mac_rst.value = 1
        dut.cfg_ifg.value = ifg
        dut.cfg_max_frame_len.value = max_len
        dut.xgmii_rxd.value = int.from_bytes(bytes([0x07] * 8), "little")
        dut.xgmii_rxc.value = 0xFF
        Clock(dut.clock, CORE_NS, unit="ns").start()
        # The MAC clock at a random phase: edges of the two domains do not line up.
        cocotb.start_soon(self._start_late(dut.mac_clk, mac_ns, random.randint(1, int(mac_ns * 1000) - 1)))
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clock, dut.reset)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clock, dut.reset)
        self.xsource = XgmiiSource(dut.xgmii_rxd, dut.xgmii_rxc, dut.mac_clk, dut.mac_rst)
        self.xsink = XgmiiSink(dut.xgmii_txd, dut.xgmii_txc, dut.mac_clk, dut.mac_rst)
        quiet(self.source, self.sink, self.xsource, self.xsink)
        self.model = Model()
        self.tx_done = 0  # frames checked on the wire
        self.rx_done = 0  # frames checked on m_axis
        self.rx_dropped = 0  # good frames the port was allowed to drop and did
        self.rx_cross_full = 0  # times the receive crossing refused a beat (must never happen)
        cocotb.start_soon(self._watch_rx_cross())

    @staticmethod
    async def _start_late(clk, period_ns: float, offset_ps: int) -> None:
        clk.value = 0
        await Timer(offset_ps, unit="ps")
        Clock(clk, period_ns, unit="ns").start()

    async def _watch_rx_cross(self) -> None:
        """The MAC side must never stall: the receive crossing's input is always ready
        (EthMacRx has no tready; a refused beat would be lost). Event-driven, no cost per
        cycle."""
        ready = self.dut.rxCross.s_axis_tready
        while True:
            await FallingEdge(ready)
            if int(self.dut.mac_rst.value) == 0:
                self.rx_cross_full += 1

    async def reset(self) -> None:
        """Both resets together (as the port requires), each released at an edge of its
        own clock, in random order."""
        d = self.dut
        d.reset.value = 1
        d.mac_rst.value = 1
        await Timer(int(max(CORE_NS, self.mac_ns) * 1000) * 6, unit="ps")
        order = [(d.clock, d.reset), (d.mac_clk, d.mac_rst)]
        random.shuffle(order)
        for clk, rst in order:
            await ClockCycles(clk, random.randint(1, 3))
            rst.value = 0
        await ClockCycles(d.clock, 20)  # the configuration crosses

    async def set_cfg(self, ifg: int | None = None, max_len: int | None = None) -> None:
        """Change the configuration while the port is idle, and give it time to cross."""
        if ifg is not None:
            self.ifg = ifg
            self.dut.cfg_ifg.value = ifg
        if max_len is not None:
            self.max_len = max_len
            self.dut.cfg_max_frame_len.value = max_len
        await ClockCycles(self.dut.clock, 20)

    # ------------------------------------------------------------------ traffic

    def send_tx(self, payload: bytes, fits: bool = True) -> None:
        self.source.send_nowait(AxiStreamFrame(payload))
        self.model.tx(payload, fits)

    def send_rx(self, item: RxItem) -> None:
        self.xsource.send_nowait(item.frame)
        self.model.rx(item, self.max_len)

    # ------------------------------------------------------------------- checks

    def stats(self) -> dict:
        return {name: int(getattr(self.dut, f"stats_{name}").value) for name in COUNTERS}

    def check_wire(self) -> int:
        """Every frame the MAC sent so far, in order, byte for byte: preamble, padded
        payload, right FCS, no control character (so no /E/: no underrun)."""
        n = 0
        while not self.xsink.empty():
            self.check_wire_frame(self.xsink.recv_nowait())
            n += 1
        return n

    def check_wire_frame(self, f) -> None:
        """One frame from the XgmiiSink against the next one the model expects."""
        i = self.tx_done
        assert self.model.tx_pending, f"TX: unexpected frame #{i} on the wire ({len(f.data)} B)"
        want = self.model.tx_pending.pop(0)
        assert f.ctrl is None, f"TX: frame #{i} carries control characters (an /E/: underrun?)"
        assert f.get_preamble() == PREAMBLE, f"TX: frame #{i} preamble {f.get_preamble().hex()}"
        got = bytes(f.get_payload(strip_fcs=False))
        if got != want:
            first = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            raise AssertionError(f"TX: frame #{i}: {len(got)} B on the wire, expected {len(want)} B, "
                                 f"first difference at byte {first}")
        assert f.check_fcs()
        self.tx_done += 1

    def check_m_axis(self, allow_drops: bool) -> int:
        """Frames on m_axis so far: packed beats, and in order a subsequence of the good
        frames sent (nothing corrupted, truncated, duplicated or reordered); frames skipped
        over are drops, allowed only with `allow_drops`. Returns the frames checked."""
        n = 0
        while not self.sink.empty():
            f = self.sink.recv_nowait(compact=False)
            i = self.rx_done
            keep = list(f.tkeep)
            k = keep.count(1)
            assert keep == [1] * k + [0] * (len(keep) - k) and len(keep) - k < 32, \
                f"RX: frame #{i} not packed (tkeep holes or an empty beat)"
            got = bytes(f.tdata[:k])
            skipped = 0
            while self.model.rx_pending and self.model.rx_pending[0] != got:
                self.model.rx_pending.pop(0)
                skipped += 1
            assert self.model.rx_pending, (f"RX: frame #{i} on m_axis ({len(got)} B) is none of the good frames "
                                           f"still expected: corrupted, truncated, duplicated or reordered")
            self.model.rx_pending.pop(0)
            assert allow_drops or not skipped, f"RX: {skipped} good frame(s) lost before frame #{i} without back-pressure"
            self.rx_dropped += skipped
            self.rx_done += 1
            n += 1
        return n

    async def settle(self, label: str, allow_drops: bool = False, max_us: float = 2000.0) -> dict:
        """Wait until both directions are done (or fail: no hang), then check everything:
        wire frames, m_axis frames and every counter against the model."""
        d = self.dut
        polls = int(max_us * 1000 / CORE_NS / 64)
        for _ in range(polls):
            await ClockCycles(d.clock, 64)
            self.check_wire()
            self.check_m_axis(allow_drops)
            s = self.stats()
            rx_verdicts = sum(s[c] for c in VERDICT_COUNTER.values())
            rx_want = sum(self.model.counts[c] for c in VERDICT_COUNTER.values())
            if (not self.model.tx_pending and self.source.empty() and not self.source.active
                    and self.xsource.idle() and rx_verdicts == rx_want
                    and self.rx_done + s["rx_fifo_drops"] == s["rx_frames"] and int(d.m_axis_tvalid.value) == 0):
                break
        else:
            raise AssertionError(f"{label}: not done after {max_us} us: {len(self.model.tx_pending)} TX frames "
                                 f"missing, RX counters {self.stats()}, model {self.model.counts}")
        await ClockCycles(d.clock, 100)  # late duplicates, late counts
        assert self.rx_cross_full == 0, f"{label}: the receive crossing filled {self.rx_cross_full} times (MAC stalled)"
        self.check_wire()
        self.check_m_axis(allow_drops)
        assert not self.model.tx_pending
        # Good frames still expected never came: dropped (the counter must say so).
        self.rx_dropped += len(self.model.rx_pending)
        assert allow_drops or not self.model.rx_pending, f"{label}: {len(self.model.rx_pending)} good frames lost"
        self.model.rx_pending.clear()
        self.model.counts["rx_fifo_drops"] = self.rx_dropped
        got, want = self.stats(), {k: v % (1 << WIDTH[k]) for k, v in self.model.counts.items()}
        assert got == want, f"{label}: counters differ: " + ", ".join(
            f"{k} {got[k]} (model {want[k]})" for k in COUNTERS if got[k] != want[k])
        d._log.info("%s: counters %s", label, got)
        return got

    def back_pressure(self, tx_idle: float, rx_stall: float) -> None:
        """s_axis idles (also inside frames) and m_axis stalls, each a fraction of cycles."""
        set_pauses([self.source], tx_idle)
        set_pauses([self.sink], rx_stall)
