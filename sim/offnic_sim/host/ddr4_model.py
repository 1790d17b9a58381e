"""The payload cache's DRAM as the Nexus K3P-Q has it: DDR4 behind the Xilinx DDR4 memory
controller's (PG150) 512-bit AXI4 port, seen from the NIC's 256-bit, 250 MHz `m_axi`
through an AXI clock converter and width converter. A cocotb AXI4 slave (cocotbext-axi's
AxiRam read and write halves, with the timing added) whose answers take as long as that
memory system would; the bytes are an ordinary cocotbext-axi Memory (backdoor `read`,
`write`, as AxiRam).

What it models, per 64-byte DRAM burst (BL8 on the 64-bit data bus; ECC's 8 bits carry no
data), in order of arrival (first come, first served):
- the address map of the board's DDR4-enabled build (corundum fpga_app_dma_bench:
  ROW_COLUMN_BANK): byte address [5:0] one burst, [7:6] bank group, [9:8] bank,
  [16:10] column[9:3], [32:17] row; so a 512-byte cache burst spreads over 8 banks and
  each bank's row (one per 128 KiB) holds 8 KiB of the rank;
- per bank, the open row (open-page policy: a row stays open until another row of the
  bank is needed or a refresh closes it): row hit = CL; row closed = tRCD + CL; row
  conflict = precharge (not before tRAS after the activate) + tRP + tRCD + CL;
- refresh every tREFI: all banks precharged (tRP) and busy for tRFC, rows closed;
- the data bus: one burst per 4 tCK (19.4 GB/s), shared by reads and writes;
- a fixed controller pipeline each way and the clock/width converters' latency (both
  ASSUMPTIONS, see Ddr4Params);
- read data returned to the NIC at most one 256-bit beat per NIC clock (the width
  converter splits each 512-bit word in two), writes answered (B) once their last burst
  is written.
What it leaves out: command-bus conflicts, tRRD/tFAW/tCCD_L (consecutive bursts go to
different bank groups under this address map), read/write turnaround (tWTR, tRTW), the
controller's reordering across banks and its write buffer limit (writes never push back),
ZQ calibration, ECC scrubbing, and temperature-doubled refresh above 85 C.

Parameters and their sources are in Ddr4Params; `Ddr4Timing` is the scheduler (no cocotb,
so tests can check it directly), `Ddr4Ram` the AXI4 slave.
"""
from __future__ import annotations

import collections
import logging
import math
from dataclasses import dataclass, field

import cocotb
from cocotb.triggers import ClockCycles, Event
from cocotb.utils import get_sim_time
from cocotbext.axi.axi_ram import AxiRamRead, AxiRamWrite
from cocotbext.axi.constants import AxiBurstType, AxiResp
from cocotbext.axi.memory import Memory


@dataclass(frozen=True)
class Ddr4Params:
    """The K3P-Q's DDR4 and its controller. Times in ns unless the name says cycles."""
    # Board (../shared/boards/Nexus_K3P_Q.md, from corundum's ip/ddr4_0.tcl): nine
    # MT40A1G8SA-075 (8 Gb x8) components, memory clock period 825 ps, CAS latency 19,
    # CAS write latency 14, 4:1 controller (UI clock = 4 tCK = 3.3 ns, ~303 MHz), AXI 512 bits.
    tck: float = 0.825
    cl_cycles: int = 19
    cwl_cycles: int = 14
    ui_ratio: int = 4
    # JEDEC DDR4-2666 speed bin 19-19-19 (the -075 grade, Micron MT40A1G8 data sheet;
    # JESD79-4): tRCD = tRP = 14.25 ns, tRAS = 32 ns.
    trcd: float = 14.25
    trp: float = 14.25
    tras: float = 32.0
    # 8 Gb DDR4 refresh (JESD79-4, Micron MT40A1G8): tRFC1 = 350 ns every tREFI = 7.8 us
    # (0..85 C, 1x refresh mode).
    trfc: float = 350.0
    trefi: float = 7800.0
    # BL8 on the 64-bit data bus: 64 bytes per burst, 4 tCK on the bus.
    burst_bytes: int = 64
    burst_cycles: int = 4
    # Geometry (MT40A1G8: 4 bank groups x 4 banks, 64K rows, 1K columns); ROW_COLUMN_BANK
    # address bits (PG150's address map for that option, byte addresses of a 64-bit bus).
    bank_shift: int = 6      # [7:6] bank group, [9:8] bank: 16 banks
    bank_bits: int = 4
    row_shift: int = 17      # [16:10] column[9:3], [32:17] row
    dram_bytes: int = 8 << 30
    # ASSUMPTION (PG150 describes the pipeline's stages but gives no cycle counts): UI
    # cycles from an AXI address to the DRAM command (AXI shim, user-interface FIFO, group
    # FSM, arbiter) and from read data at the pins to the AXI R beat (PHY capture, ECC
    # check, read reorder buffer, AXI shim); and from a write's last burst to its B.
    mc_cmd_cycles: int = 8
    mc_rdata_cycles: int = 8
    mc_wresp_cycles: int = 4
    # ASSUMPTION: the AXI clock converter (250 <-> ~303 MHz, asynchronous FIFOs: a write,
    # a two-flop synchroniser, a read) and the 256 <-> 512-bit width converter (one
    # register) cost 3 destination cycles plus one register each way.
    to_mc: float = 3 * 3.3 + 4.0
    to_nic: float = 3 * 4.0 + 3.3

    @property
    def ui(self) -> float:
        return self.ui_ratio * self.tck

    @property
    def cl(self) -> float:
        return self.cl_cycles * self.tck

    @property
    def cwl(self) -> float:
        return self.cwl_cycles * self.tck

    @property
    def burst(self) -> float:
        return self.burst_cycles * self.tck

    @property
    def peak_gbps(self) -> float:
        return self.burst_bytes * 8 / self.burst

    def read_latency(self, kind: str) -> float:
        """Unloaded AXI address (at the NIC) to the first data beat (at the NIC), by row state."""
        row = {"hit": 0.0, "closed": self.trcd, "conflict": self.trp + self.trcd}[kind]
        return (self.to_mc + self.mc_cmd_cycles * self.ui + row + self.cl + self.burst
                + self.mc_rdata_cycles * self.ui + self.to_nic)


K3P_Q_DDR4 = Ddr4Params()


@dataclass
class _Bank:
    row: int | None = None
    ready: float = 0.0      # earliest next column command
    activated: float = -1e18


@dataclass
class Ddr4Timing:
    """Open-page, first-come-first-served schedule of 64-byte bursts on one DDR4 rank.
    Times are absolute ns; `access` returns when each burst's data has crossed the bus."""
    p: Ddr4Params = K3P_Q_DDR4
    banks: list[_Bank] = field(default_factory=list)
    bus_free: float = 0.0
    next_refresh: float | None = None
    counts: collections.Counter = field(default_factory=collections.Counter)

    def __post_init__(self):
        self.banks = [_Bank() for _ in range(1 << self.p.bank_bits)]

    def where(self, addr: int) -> tuple[int, int]:
        a = addr % self.p.dram_bytes
        return (a >> self.p.bank_shift) & ((1 << self.p.bank_bits) - 1), a >> self.p.row_shift

    def _refresh(self, t: float) -> float:
        """Refreshes due by t (all banks precharged, then tRFC); the time a command may go."""
        p = self.p
        if self.next_refresh is None:
            self.next_refresh = p.trefi   # the first refresh one interval after time 0
        while self.next_refresh <= t:
            start = max(self.next_refresh, max(b.ready for b in self.banks), self.bus_free - p.burst)
            end = start + p.trp + p.trfc
            for b in self.banks:
                b.row, b.ready = None, end
            self.counts["refresh"] += 1
            self.counts["refresh_ns"] += end - start
            self.next_refresh += p.trefi
            t = max(t, end)
        return t

    def access(self, addr: int, t: float, write: bool) -> float:
        """One 64-byte burst whose command may go at t: the end of its data on the bus."""
        p = self.p
        bank_no, row = self.where(addr)
        b = self.banks[bank_no]
        t = self._refresh(max(t, b.ready))
        if b.row == row:
            kind, cas = "hit", t
        elif b.row is None:
            kind, cas = "closed", t + p.trcd
            b.activated = t
        else:
            pre = max(t, b.activated + p.tras)
            kind, cas = "conflict", pre + p.trp + p.trcd
            b.activated = pre + p.trp
        lat = p.cwl if write else p.cl
        data = max(cas + lat, self.bus_free)   # the bus may be busy: the CAS waits
        self.bus_free = data + p.burst
        b.row, b.ready = row, data - lat + p.burst
        self.counts[("write_" if write else "read_") + kind] += 1
        return self.bus_free

    def read(self, addr: int, nbytes: int, t_nic: float) -> list[float]:
        """A read of nbytes at addr (64-byte aligned bursts) whose address reached the
        converter at t_nic: when each 64-byte burst's data is at the NIC side."""
        p = self.p
        t = t_nic + p.to_mc + p.mc_cmd_cycles * p.ui
        first = addr - addr % p.burst_bytes
        return [self.access(a, t, False) + p.mc_rdata_cycles * p.ui + p.to_nic
                for a in range(first, addr + nbytes, p.burst_bytes)]

    def write(self, addr: int, nbytes: int, t_nic: float) -> float:
        """A write whose last data beat reached the converter at t_nic: when its B is back."""
        p = self.p
        t = t_nic + p.to_mc + p.mc_cmd_cycles * p.ui
        first = addr - addr % p.burst_bytes
        end = max(self.access(a, t, True) for a in range(first, addr + nbytes, p.burst_bytes))
        return end + p.mc_wresp_cycles * p.ui + p.to_nic


def _now() -> float:
    return get_sim_time("ns")


async def _until(clock, period_ns: float, t: float) -> None:
    """Wait so that a transaction sent now is driven from the first rising edge at or after
    t (a cocotbext-axi source drives on the edge after the one it was handed the item in)."""
    wait = t - period_ns - _now()
    if wait > 0:
        await ClockCycles(clock, max(1, math.ceil(wait / period_ns - 1e-9)))


class Ddr4RamRead(AxiRamRead):
    """AxiRam's read half answering at the times `timing` gives: bursts in order of arrival,
    each beat when its DRAM burst is at the NIC side, at most one beat per clock. The
    address side (`_process_read`, restarted by every reset) and the data side (one task
    for the model's life) share a queue, which a reset empties."""

    def __init__(self, bus, clock, reset, timing: Ddr4Timing, period_ns: float, mem, size: int):
        self.timing, self.period_ns = timing, period_ns
        self._pending: collections.deque = collections.deque()
        self._arrived = Event()
        super().__init__(bus, clock, reset, size=size, mem=mem)
        cocotb.start_soon(self._send_data())

    def _handle_reset(self, state):
        super()._handle_reset(state)
        if state:
            self._pending.clear()

    async def _process_read(self):
        while True:
            ar = await self.ar_channel.recv()
            addr, beats = int(ar.araddr), int(getattr(ar, "arlen", 0)) + 1
            size = int(getattr(ar, "arsize", self.max_burst_size))
            burst = AxiBurstType(int(getattr(ar, "arburst", AxiBurstType.INCR)))
            assert burst == AxiBurstType.INCR and size == self.max_burst_size, \
                f"DDR4 model: only full-width INCR bursts (addr {addr:#x} size {size} burst {burst})"
            nbytes = beats * self.byte_lanes
            first = addr - addr % self.byte_lanes
            assert 0x1000 - (first & 0xFFF) >= nbytes, f"DDR4 model: burst at {addr:#x} crosses 4 KiB"
            ready = self.timing.read(first, nbytes, _now())
            step = self.timing.p.burst_bytes
            per_beat = [ready[(first + n * self.byte_lanes) // step - first // step] for n in range(beats)]
            self._pending.append((int(getattr(ar, "arid", 0)), first, per_beat))
            self._arrived.set()

    async def _send_data(self):
        while True:
            while not self._pending:
                self._arrived.clear()
                await self._arrived.wait()
            arid, first, per_beat = self._pending[0]
            for n, t in enumerate(per_beat):
                await _until(self.clock, self.period_ns, t)
                r = self.r_channel._transaction_obj()
                r.rid, r.rlast, r.rresp = arid, n == len(per_beat) - 1, AxiResp.OKAY
                try:
                    data = self.read((first + n * self.byte_lanes) % self.size, self.byte_lanes)
                except Exception:  # outside the memory: SLVERR with zero data, as AxiRam
                    data, r.rresp = bytes(self.byte_lanes), AxiResp.SLVERR
                r.rdata = int.from_bytes(data, "little")
                await self.r_channel.send(r)
            if self._pending and self._pending[0][2] is per_beat:
                self._pending.popleft()


class Ddr4RamWrite(AxiRamWrite):
    """AxiRam's write half: data lands in memory as its beats arrive (the NIC reads a range
    only after the write's B, so nothing can tell); the B answers when `timing` has
    written the last burst, in order of arrival (one task for the model's life)."""

    def __init__(self, bus, clock, reset, timing: Ddr4Timing, period_ns: float, mem, size: int):
        self.timing, self.period_ns = timing, period_ns
        self._answers: collections.deque = collections.deque()
        self._arrived = Event()
        super().__init__(bus, clock, reset, size=size, mem=mem)
        cocotb.start_soon(self._respond())

    def _handle_reset(self, state):
        super()._handle_reset(state)
        if state:
            self._answers.clear()

    async def _respond(self):
        while True:
            while not self._answers:
                self._arrived.clear()
                await self._arrived.wait()
            t, b = self._answers.popleft()
            await _until(self.clock, self.period_ns, t)
            await self.b_channel.send(b)

    async def _process_write(self):
        while True:
            aw = await self.aw_channel.recv()
            addr, beats = int(aw.awaddr), int(getattr(aw, "awlen", 0)) + 1
            size = int(getattr(aw, "awsize", self.max_burst_size))
            burst = AxiBurstType(int(getattr(aw, "awburst", AxiBurstType.INCR)))
            assert burst == AxiBurstType.INCR and size == self.max_burst_size, \
                f"DDR4 model: only full-width INCR bursts (addr {addr:#x} size {size} burst {burst})"
            first = addr - addr % self.byte_lanes
            assert 0x1000 - (first & 0xFFF) >= beats * self.byte_lanes, f"DDR4 model: burst at {addr:#x} crosses 4 KiB"
            b = self.b_channel._transaction_obj()
            b.bid, b.bresp = int(getattr(aw, "awid", 0)), AxiResp.OKAY
            for n in range(beats):
                w = await self.w_channel.recv()
                data = int(w.wdata).to_bytes(self.byte_lanes, "little")
                strb = int(getattr(w, "wstrb", self.strb_mask)) if self.wstrb_present else self.strb_mask
                assert int(w.wlast) == (n == beats - 1), "DDR4 model: WLAST in the wrong place"
                at = first + n * self.byte_lanes
                k = 0
                while k < self.byte_lanes:   # runs of enabled bytes
                    if not strb >> k & 1:
                        k += 1
                        continue
                    j = k
                    while j < self.byte_lanes and strb >> j & 1:
                        j += 1
                    if at + j > self.size:   # outside the memory: refused, as AxiRam
                        b.bresp = AxiResp.SLVERR
                    else:
                        self.write(at + k, data[k:j])
                    k = j
            self._answers.append((self.timing.write(first, beats * self.byte_lanes, _now()), b))
            self._arrived.set()


class Ddr4Ram(Memory):
    """The DDR4 memory system as an AXI4 slave on `bus` (drop-in for cocotbext-axi's AxiRam:
    `read`/`write` backdoor, `write_if`/`read_if` halves with their channels)."""

    def __init__(self, bus, clock, reset=None, size: int = 2**33, period_ns: float = 4.0,
                 params: Ddr4Params = K3P_Q_DDR4, mem=None):
        super().__init__(size, mem)
        self.timing = Ddr4Timing(params)
        self.write_if = Ddr4RamWrite(bus.write, clock, reset, self.timing, period_ns, mem=self.mem, size=size)
        self.read_if = Ddr4RamRead(bus.read, clock, reset, self.timing, period_ns, mem=self.mem, size=size)
        for half in (self.write_if, self.read_if):
            half.log.setLevel(logging.WARNING)
