"""Testbench pieces for RssHash: clock/reset and stream drivers (StreamTB), configuration
(key, enables, indirection table), expected-result bookkeeping through the Python model,
and a result scoreboard that reports decoded fields."""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamMonitor, AxiStreamSink

from offnic_sim.harness.axis_tb import Scoreboard, StreamTB, drain, quiet, user_marks
from rss_frames import Frame
from rss_model import Enables, RssResult, pack_result, result_bytes, rss_result, unpack_result


@dataclass
class ResultBoard(Scoreboard):
    """Scoreboard for m_axis_rss: one transfer per frame, in frame order; a mismatch names
    the frame and both results field by field."""

    queue_bits: int = 8
    notes: deque = field(default_factory=deque)

    def expect_result(self, r: RssResult, frame: Frame) -> None:
        self.expect(pack_result(r).to_bytes(result_bytes(self.queue_bits), "little"))
        self.notes.append((r, frame))

    def check(self, frame: AxiStreamFrame) -> None:
        got_bytes = bytes(frame.tdata)
        assert self.pending, f"{self.name}: unexpected result #{self.received} {got_bytes.hex()} (nothing outstanding)"
        assert len(got_bytes) == result_bytes(self.queue_bits), f"{self.name}: result of {len(got_bytes)} B"
        got = unpack_result(int.from_bytes(got_bytes, "little"), self.queue_bits)
        self.pending.popleft()
        want, src = self.notes.popleft()
        assert got == want, f"{self.name}: result #{self.received}: got {got}, expected {want}, for frame {src}"
        self.received += 1


class RssTB(StreamTB):
    """RssHash with cocotbext-axi drivers. `monitors`: watch m_axis and m_axis_rss passively
    instead of sinking them (the test then drives both tready signals itself)."""

    def __init__(self, dut, monitors: bool = False):
        super().__init__(dut, sinks=() if monitors else ("m_axis",))
        self.width = len(dut.s_axis_tkeep)
        self.queue_bits = len(dut.cfg_indir_data)
        self.table_size = 1 << len(dut.cfg_indir_addr)
        assert len(dut.m_axis_rss_tdata) == 8 * result_bytes(self.queue_bits)
        if monitors:
            self.data_out = AxiStreamMonitor(AxiStreamBus.from_prefix(dut, "m_axis"), self.clock, self.reset)
            self.rss = AxiStreamMonitor(AxiStreamBus.from_prefix(dut, "m_axis_rss"), self.clock, self.reset)
            quiet(self.data_out, self.rss)
            dut.m_axis_tready.value = 0
            dut.m_axis_rss_tready.value = 0
        else:
            self.data_out = self.sink
            self.rss = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_rss"), self.clock, self.reset)
            quiet(self.rss)
            self.sinks.append(self.rss)  # back_pressure() then stalls it too
        self.key = bytes(40)
        self.table = [0] * self.table_size
        self.enables = Enables()
        dut.cfg_key.value = 0
        dut.cfg_indir_wr_en.value = 0
        dut.cfg_indir_addr.value = 0
        dut.cfg_indir_data.value = 0
        self.set_enables(self.enables)
        self.new_boards("start")

    def new_boards(self, name: str) -> None:
        self.data_board = Scoreboard(f"{name} m_axis")
        self.result_board = ResultBoard(f"{name} m_axis_rss", check_user=False, queue_bits=self.queue_bits)

    def set_enables(self, en: Enables) -> None:
        self.enables = en
        self.dut.cfg_enable_ipv4.value = int(en.ipv4)
        self.dut.cfg_enable_ipv6.value = int(en.ipv6)
        self.dut.cfg_enable_tcp.value = int(en.tcp)
        self.dut.cfg_enable_udp.value = int(en.udp)

    def set_key(self, key: bytes) -> None:
        assert len(key) == 40
        self.key = key
        self.dut.cfg_key.value = int.from_bytes(key, "big")  # key byte 0 in bits 319:312

    async def write_table(self, table: list[int]) -> None:
        """Write every entry through the cfg_indir port, one per cycle."""
        assert len(table) == self.table_size
        for addr, q in enumerate(table):
            self.dut.cfg_indir_wr_en.value = 1
            self.dut.cfg_indir_addr.value = addr
            self.dut.cfg_indir_data.value = q
            await RisingEdge(self.clock)
        self.dut.cfg_indir_wr_en.value = 0
        self.table = list(table)

    def random_table(self) -> list[int]:
        return [random.randrange(1 << self.queue_bits) for _ in range(self.table_size)]

    async def configure(self, key: bytes, table: list[int], en: Enables) -> None:
        """Change the configuration (only while no frame is in the block)."""
        self.set_key(key)
        self.set_enables(en)
        await self.write_table(table)
        await self.cycles(2)

    def expected(self, frame: Frame) -> RssResult:
        return rss_result(frame.data, self.key, self.table, self.enables)

    def send(self, frame: Frame, bad: bool = False, result: RssResult | None = None) -> None:
        """Queue a frame; expect it unchanged on m_axis (with its frame-end tuser mark) and
        `result` (default: the model's) on m_axis_rss."""
        tuser = user_marks(len(frame.data), int(bad), self.width)
        self.source.send_nowait(AxiStreamFrame(frame.data, tuser=tuser))
        self.data_board.expect(frame.data, tuser=int(bad))
        self.result_board.expect_result(result or self.expected(frame), frame)

    async def drain(self, max_cycles: int = 200_000) -> None:
        """Wait for every expected frame and result (and a quiet spell for late extras)."""
        await drain(self.data_out, self.data_board, self.clock, max_cycles=max_cycles)
        await drain(self.rss, self.result_board, self.clock, idle_cycles=20, max_cycles=max_cycles)
        assert self.source.empty()
