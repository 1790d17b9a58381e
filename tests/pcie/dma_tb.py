"""Bench pieces for the DMA engine (pcie.DmaTestTop): the UltraScale+ PCIe model and a
root complex with host memory, drivers for the descriptor and status streams, a
statistics monitor, and a tap on the completion path that can reorder, poison or lose
completions the way a real host (or a broken one) would.

Randomness comes from Python's `random` (seeded by cocotb from the run's seed).
"""
from __future__ import annotations

import logging
import random
from collections import deque
from dataclasses import dataclass

import cocotb
from cocotb.triggers import ClockCycles, Event, RisingEdge
from cocotbext.axi import AxiStreamBus
from cocotbext.pcie.core import RootComplex
from cocotbext.pcie.core.caps import PciCapId
from cocotbext.pcie.core.tlp import TlpType
from cocotbext.pcie.xilinx.us import UltraScalePlusPcieDevice
from cocotbext.pcie.xilinx.us.tlp import ErrorCode, Tlp_us

from offnic_sim.harness.axis_tb import HoldCheck, pause_pattern

RAM_BYTES = 64 * 1024
CLOCK_NS = 4.0  # user_clk, 250 MHz

# DmaError codes (hw/src/offnic/pcie/DmaIO.scala)
OK, UNSUPPORTED, ABORT, POISONED, TIMEOUT, MALFORMED, BAD_DESC = range(7)
ERROR_NAMES = {OK: "ok", UNSUPPORTED: "UR", ABORT: "CA", POISONED: "poisoned", TIMEOUT: "timeout",
               MALFORMED: "malformed", BAD_DESC: "bad descriptor"}

STATS = ["stat_rd_req", "stat_rd_cpl", "stat_rd_err_status", "stat_rd_err_poisoned", "stat_rd_err_timeout",
         "stat_rd_err_malformed", "stat_rd_unexpected", "stat_rd_done", "stat_rd_done_error",
         "stat_wr_req", "stat_wr_done", "stat_wr_done_error"]


def size_code(nbytes: int) -> int:
    """PCIe max payload / max read request encoding: 128 << code."""
    code = (nbytes // 128).bit_length() - 1
    assert 128 << code == nbytes, nbytes
    return code


@dataclass
class Desc:
    host: int
    ram: int
    length: int
    tag: int


class DescSource:
    """Drives one descriptor stream (s_rd_desc / s_wr_desc: valid/ready + bits_*), idling
    a fraction `idle` of the cycles it could send. `accepted[tag]` is the cycle it went in."""

    def __init__(self, dut, prefix: str, clock, cycle_counter):
        self.clock = clock
        self.cycle = cycle_counter
        self.valid = getattr(dut, f"{prefix}_valid")
        self.ready = getattr(dut, f"{prefix}_ready")
        self.f = {n: getattr(dut, f"{prefix}_bits_{n}") for n in ("host_addr", "ram_addr", "len", "tag")}
        self.queue: deque[Desc] = deque()
        self.idle = 0.0
        self.current: Desc | None = None
        self.accepted: dict[int, int] = {}
        self.valid.value = 0
        cocotb.start_soon(self._run())

    def send(self, d: Desc) -> None:
        self.queue.append(d)

    def busy(self) -> bool:
        return bool(self.queue) or self.current is not None

    async def _run(self) -> None:
        while True:
            await RisingEdge(self.clock)
            if self.current is not None and self.valid.value == 1 and self.ready.value == 1:
                self.accepted[self.current.tag] = self.cycle()
                self.current = None
            if self.current is None:
                if self.queue and random.random() >= self.idle:
                    d = self.current = self.queue.popleft()
                    self.f["host_addr"].value = d.host
                    self.f["ram_addr"].value = d.ram % RAM_BYTES
                    self.f["len"].value = d.length
                    self.f["tag"].value = d.tag
                    self.valid.value = 1
                else:
                    self.valid.value = 0
                    # junk on the bus while not valid: the DUT must not look at it
                    self.f["host_addr"].value = random.getrandbits(64)
                    self.f["len"].value = random.getrandbits(17)


class StatusSink:
    """Takes one status stream (m_rd_status / m_wr_status), holding ready low a fraction
    `stall` of the cycles. Checks that valid is held until taken, with the same status."""

    def __init__(self, dut, prefix: str, clock, cycle_counter):
        self.clock = clock
        self.cycle = cycle_counter
        self.valid = getattr(dut, f"{prefix}_valid")
        self.ready = getattr(dut, f"{prefix}_ready")
        self.tag = getattr(dut, f"{prefix}_bits_tag")
        self.error = getattr(dut, f"{prefix}_bits_error")
        self.stall = 0.0
        self.got: dict[int, tuple[int, int]] = {}  # tag -> (error, cycle)
        self.order: list[int] = []
        self.last_cycle: dict[int, int] = {}
        self.event = Event()
        self.ready.value = 0
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        held = None
        while True:
            await RisingEdge(self.clock)
            if self.valid.value == 1:
                st = (int(self.tag.value), int(self.error.value))
                if held is not None:
                    assert st == held, f"status changed while stalled: {held} -> {st}"
                if self.ready.value == 1:
                    tag, err = st
                    assert tag not in self.got, f"second status for tag {tag}"
                    self.got[tag] = (err, self.cycle())
                    self.order.append(tag)
                    self.event.set()
                    held = None
                else:
                    held = st
            else:
                assert held is None, "status valid dropped before it was taken"
            self.ready.value = int(random.random() >= self.stall)

    async def wait_for(self, tags, timeout_cycles: int = 200_000) -> dict[int, int]:
        """Errors of every tag in `tags`, waiting until all are in; fails instead of hanging."""
        tags = list(tags)
        start = self.cycle()
        while not all(t in self.got for t in tags):
            assert self.cycle() - start < timeout_cycles, \
                f"statuses missing after {timeout_cycles} cycles: {[t for t in tags if t not in self.got][:10]}"
            self.event.clear()
            await cocotb.triggers.First(self.event.wait(), ClockCycles(self.clock, 1000))
        out = {}
        for t in tags:
            out[t], self.last_cycle[t] = self.got.pop(t)
        return out


class CompletionTap:
    """Sits on the model's completion path. At the link side (completions as the host
    sends them) it can poison completions, by the address of the request they answer; at
    the RC interface side (after the IP's own bookkeeping) it can lose completions (a host
    that never answers), give them an impossible byte count, and reorder them across tags
    (never within a tag, as PCIe requires). Also checks every request TLP the DMA engine
    sends on RQ."""

    def __init__(self, dev, clock):
        self.dev = dev
        self.clock = clock
        self.poison_ranges: list[tuple[int, int]] = []
        self.drop_ranges: list[tuple[int, int]] = []
        self.bad_count_ranges: list[tuple[int, int]] = []
        self.reorder = 0.0  # chance per cycle of holding completions back
        self.poisoned = self.dropped = self.reordered = 0
        self._drop_tags: set[int] = set()
        self._bad_count_tags: set[int] = set()
        self._held: list = []
        self._orig_recv = dev.upstream_recv
        self._orig_send = dev.rc_source.send
        dev.upstream_port.rx_handler = self._link_recv
        dev.rc_source.send = self._rc_send
        cocotb.start_soon(self._release())
        # request checks: set by DmaTB.set_sizes
        self.mps = self.mrrs = 4096
        self.reads = self.writes = 0
        self.in_flight = self.max_in_flight = 0  # read requests the host has not finished
        self._orig_rq_recv = dev.rq_sink.recv
        dev.rq_sink.recv = self._rq_recv

    async def _rq_recv(self):
        """Every RQ TLP the engine sends: a memory read or write within the size limits,
        not crossing 4 KiB, with byte enables and payload matching its length."""
        frame = await self._orig_rq_recv()
        d = frame.data
        dw = d[2] & 0x7FF
        req_type = (d[2] >> 11) & 0xF
        addr = (d[1] << 32) | (d[0] & ~3)
        fb, lb = frame.first_be, frame.last_be
        assert dw >= 1 and fb != 0, f"RQ: empty request {frame!r}"
        assert (lb == 0) == (dw == 1), f"RQ: last BE {lb:#x} with {dw} dwords"
        assert (addr & 0xFFF) + 4 * dw <= 0x1000, f"RQ: request crosses 4 KiB: {addr:#x} + {dw} dwords"
        first_skip = (fb & -fb).bit_length() - 1
        if dw == 1:
            nbytes = fb.bit_length() - first_skip
        else:
            assert fb >> first_skip == 0xF >> first_skip, f"RQ: first BE {fb:#x} has holes"
            assert lb in (1, 3, 7, 15), f"RQ: last BE {lb:#x}"
            nbytes = 4 * dw - first_skip - (4 - lb.bit_length())
        if req_type == 0:  # memory read
            assert len(d) == 4, f"RQ: read request with payload {frame!r}"
            assert nbytes <= self.mrrs, f"RQ: read of {nbytes} B > max read request {self.mrrs}"
            assert (d[3] & 0xFF) < 32, "RQ: tag above 31 without extended tags"
            self.reads += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        elif req_type == 1:  # memory write
            assert len(d) == 4 + dw, f"RQ: write of {dw} dwords carries {len(d) - 4}"
            assert nbytes <= self.mps, f"RQ: write of {nbytes} B > max payload {self.mps}"
            self.writes += 1
        else:
            raise AssertionError(f"RQ: request type {req_type}")
        return frame

    @staticmethod
    def _hit(ranges, addr):
        return any(lo <= addr < hi for lo, hi in ranges)

    async def _link_recv(self, tlp):
        if tlp.fmt_type in {TlpType.CPL, TlpType.CPL_DATA}:
            req = self.dev.active_request[tlp.tag]
            if req is not None:
                if self._hit(self.poison_ranges, req.address):
                    tlp.ep = True
                    self.poisoned += 1
                elif self._hit(self.drop_ranges, req.address):
                    self._drop_tags.add(tlp.tag)
                elif self._hit(self.bad_count_ranges, req.address):
                    self._bad_count_tags.add(tlp.tag)
        await self._orig_recv(tlp)

    async def _rc_send(self, frame):
        tag = frame.data[2] & 0xFF
        if frame.data[0] & (1 << 30):  # the request's last completion
            self.in_flight -= 1
        if tag in self._drop_tags:
            self.dropped += 1
            if frame.data[0] & (1 << 30):  # request completed: the IP forgot the tag
                self._drop_tags.discard(tag)
            return
        if tag in self._bad_count_tags:
            if frame.data[0] & (1 << 30):
                self._bad_count_tags.discard(tag)
            frame.data[0] |= 0xFFF << 16  # byte count 4095+: more than the request asked for
        if self.reorder:
            self._held.append(frame)
            return
        await self._orig_send(frame)

    async def _release(self) -> None:
        while True:
            await RisingEdge(self.clock)
            if not self._held:
                continue
            if len(self._held) < 8 and random.random() < self.reorder:
                continue
            # any tag's oldest held completion may go next
            firsts, seen = [], set()
            for i, f in enumerate(self._held):
                t = f.data[2] & 0xFF
                if t not in seen:
                    seen.add(t)
                    firsts.append(i)
            i = random.choice(firsts)
            if i != 0:
                self.reordered += 1
            await self._orig_send(self._held.pop(i))

    def idle(self) -> bool:
        return not self._held

    async def inject(self, tag: int, nbytes: int = 16, ip_says_invalid: bool = True) -> None:
        """A completion nobody asked for (tag `tag`), straight onto the RC interface, with
        or without the IP's own "invalid tag" error code."""
        t = Tlp_us()
        t.fmt_type = TlpType.CPL_DATA
        t.tag = tag
        t.byte_count = nbytes
        t.lower_address = 0
        t.set_data(random.randbytes(nbytes))
        t.error_code = ErrorCode.INVALID_TAG if ip_says_invalid else ErrorCode.NORMAL_TERMINATION
        await self._orig_send(t.pack_us_rc())


class DmaTB:
    """DmaTestTop behind the UltraScale+ PCIe model and a root complex."""

    def __init__(self, dut):
        self.dut = dut
        self.clock = dut.clock
        self.dev = UltraScalePlusPcieDevice(
            pcie_generation=3, pcie_link_width=8, user_clk_frequency=250e6, alignment="dword",
            rq_straddle=False, rc_straddle=False, rc_4tlp_straddle=False,
            max_payload_size=1024, enable_client_tag=True,
            user_clk=dut.clock, user_reset=dut.reset,
            rq_bus=AxiStreamBus.from_prefix(dut, "m_axis_rq"),
            rc_bus=AxiStreamBus.from_prefix(dut, "s_axis_rc"),
            cfg_max_payload=dut.cfg_max_payload,
            cfg_max_read_req=dut.cfg_max_read_req,
        )
        self.dev.log.setLevel(logging.ERROR)
        self.dev.functions[0].log.setLevel(logging.WARNING)
        for s in (self.dev.rq_sink, self.dev.rc_source):
            s.log.setLevel(logging.WARNING)
        self.rc = RootComplex()
        self.rc.log.setLevel(logging.ERROR)
        logging.getLogger("cocotb.pcie").setLevel(logging.WARNING)
        self.rc.make_port().connect(self.dev)
        self.tap = CompletionTap(self.dev, self.clock)

        self._cycle = 0
        cocotb.start_soon(self._count())
        self.rd = DescSource(dut, "s_rd_desc", self.clock, self.cycle)
        self.wr = DescSource(dut, "s_wr_desc", self.clock, self.cycle)
        self.rd_st = StatusSink(dut, "m_rd_status", self.clock, self.cycle)
        self.wr_st = StatusSink(dut, "m_wr_status", self.clock, self.cycle)
        self.stats = {n: 0 for n in STATS}
        self._stat_sigs = [(n, getattr(dut, n)) for n in STATS]
        cocotb.start_soon(self._count_stats())
        self.rq_hold = HoldCheck(dut, "m_axis_rq", self.clock, dut.reset)
        self._next_tag = 0

    def cycle(self) -> int:
        return self._cycle

    async def _count(self) -> None:
        while True:
            await RisingEdge(self.clock)
            self._cycle += 1

    async def _count_stats(self) -> None:
        while True:
            await RisingEdge(self.clock)
            for n, s in self._stat_sigs:
                if s.value == 1:
                    self.stats[n] += 1

    async def init(self) -> None:
        await self.rc.enumerate()
        self.fn = self.rc.find_device(self.dev.functions[0].pcie_id)
        await self.fn.enable_device()
        await self.fn.set_master()
        await ClockCycles(self.clock, 10)

    async def set_sizes(self, mps: int, mrrs: int, host_mps: int | None = None, rcb_split: bool = False) -> None:
        """Program max payload / max read request size in the device's PCIe capability (as a
        driver does; the IP shows them on cfg_max_payload / cfg_max_read_req), and how the
        host answers reads: completions of up to host_mps bytes, or one per 64-byte RCB."""
        ctl = await self.fn.capability_read_word(PciCapId.EXP, 8)
        ctl = (ctl & ~(7 << 5) & ~(7 << 12)) | size_code(mps) << 5 | size_code(mrrs) << 12
        await self.fn.capability_write_word(PciCapId.EXP, 8, ctl)
        self.rc.max_payload_size = size_code(host_mps or mps)
        self.rc.split_on_all_rcb = rcb_split
        self.tap.mps, self.tap.mrrs = mps, mrrs
        await ClockCycles(self.clock, 4)
        assert int(self.dut.cfg_max_payload.value) == size_code(mps)
        assert int(self.dut.cfg_max_read_req.value) == size_code(mrrs)

    def back_pressure(self, desc_idle: float, status_stall: float, rc_idle: float = 0.0,
                      rq_stall: float = 0.0) -> None:
        """Idle cycles on the descriptor inputs and on RC (gaps inside completions too),
        stalls on the status outputs and on RQ."""
        for s in (self.rd, self.wr):
            s.idle = desc_idle
        for s in (self.rd_st, self.wr_st):
            s.stall = status_stall
        for drv, busy in ((self.dev.rc_source, rc_idle), (self.dev.rq_sink, rq_stall)):
            drv.set_pause_generator(pause_pattern(busy) if busy else None)
            if not busy:
                drv.pause = False

    def alloc(self, size: int, fill: bool = True) -> tuple[int, object]:
        addr, mem = self.rc.alloc_region(size)
        if fill:
            mem[:] = random.randbytes(size)
        return addr, mem

    def rd_st_cycles(self, tag: int) -> int:
        """Cycles from a read descriptor's acceptance to its status (just taken)."""
        return self.rd_st.last_cycle[tag] - self.rd.accepted[tag]

    def wr_st_cycles(self, tag: int) -> int:
        return self.wr_st.last_cycle[tag] - self.wr.accepted[tag]

    def tag(self) -> int:
        t = self._next_tag
        self._next_tag = (self._next_tag + 1) & 0xFF
        return t

    async def read(self, host: int, ram: int, length: int) -> int:
        """One read descriptor, waited for; returns its error code."""
        t = self.tag()
        self.rd.send(Desc(host, ram, length, t))
        return (await self.rd_st.wait_for([t]))[t]

    async def write(self, host: int, ram: int, length: int) -> int:
        t = self.tag()
        self.wr.send(Desc(host, ram, length, t))
        return (await self.wr_st.wait_for([t]))[t]

    async def flush_writes(self, scratch_host: int, scratch_ram: int) -> None:
        """Posted writes are done once a later read has completed (PCIe ordering: a read
        does not pass the writes before it)."""
        assert await self.read(scratch_host, scratch_ram, 4) == OK

    async def quiesce(self, cycles: int = 200) -> None:
        """Wait until nothing moves: no descriptors queued, no completions held."""
        while self.rd.busy() or self.wr.busy() or not self.tap.idle():
            await ClockCycles(self.clock, 50)
        await ClockCycles(self.clock, cycles)
