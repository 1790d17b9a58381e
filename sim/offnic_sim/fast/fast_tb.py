"""The whole NIC on the fast harness (issue 21): `FastNicTB` takes NicTB's constructor
arguments and has its attributes (`ports[k].send/recv`, `drv`, `hostmem`, `dram`, `cycle`,
`init()`, `snapshot()`), so a workload written for NicTB runs on either.

Every per-cycle partner of the NIC is C++ (sim/fastsim: the PCIe host with host memory,
the XGMII port ends, the DRAM) called from the Verilator model through DPI-C; Python only
wakes when the C++ side has news (an MMIO read completed, an MSI-X message, a frame out of
a port: one dispatcher coroutine awaits the model's `fast_events` counter) or when a
test's own timer fires. The clocks: made by the model itself (nic_fast_clocks.sv, the
default build: faster) or cocotb's Clocks in their C++ (GPI) form (the gpi-clocks build,
for ports other than 25G); no Python runs per edge either way.

The driver model (host/driver.py) runs unchanged on `rc`, a stand-in for the subset of
cocotbext-pcie's RootComplex and Function it uses; configuration space is not simulated
(enumeration finds the NIC at once, capability reads answer what the hard IP would).
"""
from __future__ import annotations

import logging
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.queue import QueueEmpty
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, Event, ReadOnly, RisingEdge, Timer
from cocotbext.eth import XgmiiFrame
from cocotbext.pcie.core.caps import PciCapId

from offnic_sim.fast.fastlib import EV_MMIO_READ, EV_MSI, EV_PORT, EV_PORT_SENT, FastLib
from offnic_sim.host.driver import OffnicDriver
from offnic_sim.host.hostmem import DEFAULT_READ_LATENCY_NS, PAGE, HostBuffer
from offnic_sim.host.nic_tb import CORE_PERIOD_NS, DRAM_BYTES, DRAM_MODELS, MAC_PERIOD_NS, snapshot

HOST_BYTES = 1 << 30      # host memory at bus address 0 (pages cost nothing until touched)
RESET_CYCLES = 16         # core clock cycles of reset before the harness starts
SV_CLOCKS_TOP = "nic_fast_clocks"  # the model variant whose clocks SystemVerilog makes

def sv_clocks(dut) -> bool:
    """Does the model make its own clocks (nic_fast_clocks.sv) or does cocotb?"""
    return dut._name == SV_CLOCKS_TOP

class FastHostMemory:
    """HostMemory's API over the C++ host memory: `alloc`, `read_latency_ns`, `jitter_ns`,
    `reads`, `in_flight`, `max_in_flight`."""

    def __init__(self, lib: FastLib, read_latency_ns: float, jitter_ns: float = 0.0):
        self._lib = lib
        self._mem = lib.host_mem()
        self._next = PAGE            # bus address 0 stays unused, as a null pointer would
        self._latency, self._jitter = read_latency_ns, jitter_ns
        self._push()

    def _push(self) -> None:
        self._lib.lib.fastsim_set_read_latency(self._latency, self._jitter)

    @property
    def read_latency_ns(self) -> float:
        return self._latency

    @read_latency_ns.setter
    def read_latency_ns(self, v: float) -> None:
        self._latency = v
        self._push()

    @property
    def jitter_ns(self) -> float:
        return self._jitter

    @jitter_ns.setter
    def jitter_ns(self, v: float) -> None:
        self._jitter = v
        self._push()

    @property
    def reads(self) -> int:
        return self._lib.host_stats()["reads"]

    @property
    def in_flight(self) -> int:
        return self._lib.host_stats()["in_flight"]

    @property
    def max_in_flight(self) -> int:
        return self._lib.host_stats()["max_in_flight"]

    def alloc(self, size: int, align: int = PAGE) -> HostBuffer:
        """Zeroed host memory, as HostMemory.alloc: blocks rounded up to a power of two
        and aligned to their size."""
        if size <= 0 or align & (align - 1):
            raise ValueError(f"bad allocation: {size} bytes aligned to {align}")
        block = 1 << (max(size, align) - 1).bit_length()
        addr = -(-self._next // block) * block
        if addr + block > len(self._mem):
            raise MemoryError(f"host memory exhausted ({len(self._mem):#x} bytes)")
        self._next = addr + block
        return HostBuffer(addr, size, self._mem[addr:addr + block])

class FastMsiVector:
    def __init__(self, addr: int, data: int):
        self.addr, self.data = addr, data
        self.event = Event()
        self.cb = []

class FastBar:
    """BAR0 as cocotbext-pcie's bar_window: reads wait for the NIC's completion."""

    def __init__(self, tb: "FastNicTB"):
        self._tb = tb

    async def read(self, addr: int, length: int) -> bytes:
        return await self._tb._mmio_read(addr, length)

    async def write(self, addr: int, data: bytes) -> None:
        self._tb.lib.lib.fastsim_mmio_write(addr, bytes(data), len(data))

    async def read_dword(self, addr: int) -> int:
        return int.from_bytes(await self.read(addr, 4), "little")

    async def write_dword(self, addr: int, value: int) -> None:
        await self.write(addr, (value & 0xFFFF_FFFF).to_bytes(4, "little"))

class FastFunction:
    """The NIC's PCIe function as the driver sees it: enabling, the device capabilities
    and control it reads and writes (extended tags, MPS, MRRS), MSI-X enable, BAR0."""

    hdr_type = 0
    class_code = 0x020000        # network controller
    DEVCAP = 1 << 5 | 3          # extended tags; max payload 1024 (as NicTB configures the IP)

    def __init__(self, tb: "FastNicTB"):
        self._tb = tb
        self.pcie_id = (1, 0, 0)
        self.devctl = 2 << 12    # reset value: MPS 128, MRRS 512
        self.bar_window = [FastBar(tb)]
        self.bar_addr = [tb.lib.lib.fastsim_bar0_addr()]   # bus addresses, as enumeration assigns them
        self.msix_enabled = False

    async def enable_device(self) -> None:
        pass

    async def set_master(self) -> None:
        pass

    def get_capability_offset(self, cap_id) -> int | None:
        return {PciCapId.EXP: 0x70, PciCapId.MSIX: 0xB0}.get(cap_id)

    async def capability_read_dword(self, cap_id, offset: int) -> int:
        assert cap_id == PciCapId.EXP and offset == 4, f"capability {cap_id} +{offset} is not simulated"
        return self.DEVCAP

    async def capability_read_word(self, cap_id, offset: int) -> int:
        assert cap_id == PciCapId.EXP and offset == 8, f"capability {cap_id} +{offset} is not simulated"
        return self.devctl

    async def capability_write_word(self, cap_id, offset: int, value: int) -> None:
        assert cap_id == PciCapId.EXP and offset == 8, f"capability {cap_id} +{offset} is not simulated"
        self.devctl = value
        self._tb.lib.lib.fastsim_set_sizes(value >> 5 & 7, value >> 12 & 7)

    async def msix_set_enable(self, enable: bool) -> None:
        self.msix_enabled = enable

class _Bus:
    def __init__(self, devices):
        self.devices = devices
        self.children = []

class _HostBridge:
    def __init__(self, fn):
        self.bus = _Bus([fn])

class FastRootComplex:
    """The subset of cocotbext-pcie's RootComplex the driver model uses."""

    def __init__(self, tb: "FastNicTB"):
        self._tb = tb
        self.fn = FastFunction(tb)
        self.host_bridge = _HostBridge(self.fn)
        self._mps = 0
        self.vectors: dict[int, FastMsiVector] = {}

    @property
    def max_payload_size(self) -> int:
        return self._mps

    @max_payload_size.setter
    def max_payload_size(self, code: int) -> None:
        self._mps = code
        self._tb.lib.lib.fastsim_set_host_mps(code)

    async def enumerate(self) -> None:
        pass

    def find_device(self, pcie_id):
        return self.fn

    def msi_alloc_vectors(self, n: int) -> list[FastMsiVector]:
        addr = self._tb.lib.lib.fastsim_msi_addr()
        out = []
        for _ in range(n):
            v = FastMsiVector(addr, len(self.vectors))
            self.vectors[v.data] = v
            out.append(v)
        return out

class _SourceView:
    """The subset of cocotbext-eth's XgmiiSource the workloads use, over the C++ port:
    send/send_nowait (an XgmiiFrame: preamble and FCS taken off, a bad FCS kept as bad;
    when it has gone whole into the NIC, its sim_time_end set as XgmiiSource sets it and
    its tx_complete called), count, idle, wait."""

    def __init__(self, port: "FastPort"):
        self._port = port
        self.log = logging.getLogger(f"offnic.fast.port{port.k}.source")
        self._sending: deque = deque()   # every frame sent, in order, until the port reports it gone

    def send_nowait(self, frame) -> None:
        data = bytes(frame.data) if hasattr(frame, "data") else bytes(frame)
        if hasattr(frame, "check_fcs"):  # an XgmiiFrame: preamble + SFD + frame + FCS
            self._port._send(data[8:-4], pad=False, bad_fcs=not frame.check_fcs(), frame=frame)
        else:
            self._port._send(data, pad=True, bad_fcs=False)

    def _sent(self) -> None:
        """The frames the C++ port has sent whole since the last call (the dispatcher's
        EV_PORT_SENT): their end times and callbacks."""
        port = self._port
        while (d := port._tb.lib.port_sent(port.k)) is not None:
            cycle, lane = d
            frame = self._sending.popleft()
            if frame is not None:
                # XgmiiSource: the edge that drives the TERMINATE + lane x period / 8
                frame.sim_time_end = port._cycle_time_ps(cycle) + port._period_ps // 8 * lane
                frame.handle_tx_complete()

    async def send(self, frame) -> None:
        self.send_nowait(frame)

    def count(self) -> int:
        """Frames queued, not yet started (XgmiiSource.count: the frame on the wire is not counted)."""
        port = self._port
        return port._tb.lib.lib.fastsim_port_tx_queued(port.k) if port._tb.lib.have_ports else 0

    def empty(self) -> bool:
        return self.count() == 0

    def idle(self) -> bool:
        """Nothing queued and nothing on the wire."""
        return self._port.tx_pending() == 0

    async def wait(self) -> None:
        """Until idle, as XgmiiSource.wait."""
        while not self.idle():
            await Timer(100, "ns")

class _SinkView:
    """The subset of cocotbext-eth's XgmiiSink the workloads use: recv/recv_nowait (an
    XgmiiFrame rebuilt from the frame; sim_time_start/end from the port's cycle counts,
    to the MAC clock edge), empty, count, clear; no back-pressure (XGMII has none)."""

    def __init__(self, port: "FastPort"):
        self._port = port
        self.log = logging.getLogger(f"offnic.fast.port{port.k}.sink")

    def _frame(self, f):
        """Called right after the port_recv that returned `f` (its lanes are the last recv's)."""
        data, fcs_ok, start, end = f
        xf = XgmiiFrame.from_payload(data, min_len=0)
        if not fcs_ok:
            d = bytearray(xf.data)
            d[-1] ^= 0xFF
            xf.data = d
        port = self._port
        lane0, lane1 = port._tb.lib.port_recv_lanes(port.k)
        # XgmiiSink: the edge + lane x period / 8, of the START and of the ending character
        xf.sim_time_start = port._cycle_time_ps(start) + port._period_ps // 8 * lane0
        xf.sim_time_end = port._cycle_time_ps(end) + port._period_ps // 8 * lane1
        return xf

    def recv_nowait(self):
        f = self._port._tb.lib.port_recv(self._port.k)
        if f is None:
            raise QueueEmpty()
        return self._frame(f)

    async def recv(self):
        return self._frame(await self._port._recv_raw())

    def count(self) -> int:
        return self._port._tb.lib.lib.fastsim_port_rx_pending(self._port.k)

    def empty(self) -> bool:
        return self.count() == 0

    def clear(self) -> None:
        while self._port._tb.lib.port_recv(self._port.k) is not None:
            pass

    def set_pause_generator(self, generator=None) -> None:
        pass

class FastPort:
    """One Ethernet port's far end (nic_tb.Port's API): frames into the NIC and out of it,
    through the C++ XgmiiPort in the port's MAC clock domain; `source` and `sink` offer the
    subset of cocotbext-eth's XgmiiSource and XgmiiSink that workloads use."""

    def __init__(self, tb: "FastNicTB", k: int, gbps: int):
        self.k = k
        self.gbps = gbps
        self._tb = tb
        self.clk = getattr(tb.dut, f"port_mac_clk_{k}")
        self.rst = getattr(tb.dut, f"port_mac_rst_{k}")
        if sv_clocks(tb.dut):
            assert gbps == 25, "the model's own MAC clocks are 25G: run on the gpi-clocks build (runner.FAST_GPI_CLOCKS)"
        else:
            cocotb.start_soon(Clock(self.clk, MAC_PERIOD_NS[gbps], unit="ns", impl="gpi").start())
        self.rst.value = 1
        self._rx = Event()
        self._period_ps = round(MAC_PERIOD_NS[gbps] * 1000)
        self._t_reset_ps = 0
        self.source = _SourceView(self)
        self.sink = _SinkView(self)

    async def reset(self) -> None:
        self.rst.value = 1
        await ClockCycles(self.clk, 8)
        if self._tb.lib.have_ports:
            self._tb.lib.lib.fastsim_port_reset(self.k)
            self.source._sending.clear()   # the C++ port dropped what it had queued
        self.rst.value = 0
        self._t_reset_ps = get_sim_time("ps")
        self._edge = None
        self._calibrated = cocotb.start_soon(self._calibrate())

    async def _calibrate(self) -> None:
        """The sim time of one MAC clock edge with the C++ port's cycle count after it: which
        edge a port cycle is, measured rather than assumed (the first tick after reset)."""
        await RisingEdge(self.clk)
        await ReadOnly()
        if self._tb.lib.have_ports:
            self._edge = (get_sim_time("ps"), self._tb.lib.lib.fastsim_port_cycle(self.k) - 1)

    def _cycle_time_ps(self, cycle: int) -> int:
        """The sim time of the MAC clock edge at which the C++ port's `cycle` ticked."""
        if self._edge is None:
            return self._t_reset_ps + cycle * self._period_ps
        t, c = self._edge
        return t + (cycle - c) * self._period_ps

    def _send(self, data: bytes, pad: bool, bad_fcs: bool, frame=None) -> None:
        """Into the C++ port; `frame`: the XgmiiFrame to tell when it has gone whole."""
        self._need_ports()
        self._tb.lib.lib.fastsim_port_send(self.k, bytes(data), len(data), int(pad), int(bad_fcs))
        self.source._sending.append(frame)

    async def _recv_raw(self):
        self._need_ports()
        while True:
            f = self._tb.lib.port_recv(self.k)
            if f is not None:
                return f
            self._rx.clear()
            await self._rx.wait()

    async def send(self, frame: bytes, bad_fcs: bool = False, pad: bool = True) -> None:
        """A frame (without FCS) into the NIC: preamble and FCS added, padded to 60 bytes
        unless `pad` is False (a runt)."""
        self._send(frame, pad, bad_fcs)

    async def recv(self) -> bytes:
        """The next frame the NIC sent, without FCS (its FCS checked)."""
        data, fcs_ok, _, _ = await self._recv_raw()
        assert fcs_ok, f"port {self.k}: frame with a bad FCS"
        return data

    def recv_nowait(self) -> bytes | None:
        f = self._tb.lib.port_recv(self.k)
        if f is None:
            return None
        assert f[1], f"port {self.k}: frame with a bad FCS"
        return f[0]

    def tx_pending(self) -> int:
        """Frames queued into the NIC or on the wire."""
        return self._tb.lib.lib.fastsim_port_tx_pending(self.k) if self._tb.lib.have_ports else 0

    def _need_ports(self) -> None:
        if not self._tb.lib.have_ports:
            raise RuntimeError("this libfastsim has no port model (sim/fastsim/xgmii_port.cpp)")

class FastDram:
    """The DRAM behind the cache's m_axi (sim/fastsim/axi_dram.cpp): `mem`, its bytes, and
    AxiRam's `read`/`write` (the host's view, no simulated time)."""

    def __init__(self, lib: FastLib, model: str):
        self.model = model
        self.mem = lib.dram_mem()

    def write(self, address: int, data: bytes) -> None:
        self.mem[address:address + len(data)] = bytes(data)

    def read(self, address: int, length: int) -> bytes:
        return bytes(self.mem[address:address + length])

class FastNicTB:
    """The NIC with its PCIe host, ports and driver on the fast harness. `await init()`
    before use. Arguments as NicTB's."""

    def __init__(self, dut, *, host_latency_ns: float = DEFAULT_READ_LATENCY_NS, port_gbps: int = 25,
                 mode: str = "irq", mps: int = 256, mrrs: int = 512, strict: bool = True,
                 pcie_lanes: int = 8, dram: str = "ddr4"):
        assert dram in DRAM_MODELS, f"dram: one of {DRAM_MODELS}"
        self.dut = dut
        self.clock = dut.clock
        self.mps, self.mrrs = mps, mrrs
        self.pcie_lanes = pcie_lanes
        self.dram_model = dram
        self.lib = FastLib()
        self.lib.init(HOST_BYTES, CORE_PERIOD_NS, DRAM_BYTES, dram == "ddr4")
        self.lib.lib.fastsim_set_link(pcie_lanes)
        self.lib.lib.fastsim_set_seed(random.getrandbits(64))
        self.rc = FastRootComplex(self)
        self.hostmem = FastHostMemory(self.lib, host_latency_ns)
        self.dram = FastDram(self.lib, dram)
        self._reads: dict[int, tuple[Event, list]] = {}
        self._read_id = 0
        dut.reset.value = 1
        if not sv_clocks(dut):
            cocotb.start_soon(Clock(dut.clock, CORE_PERIOD_NS, unit="ns", impl="gpi").start())
        self.ports = [FastPort(self, k, port_gbps) for k in range(2)]
        self.drv = OffnicDriver(dut, self.rc, mode=mode, hostmem=self.hostmem, strict=strict)
        self._t0_ps = get_sim_time("ps")
        self._out_of_reset = cocotb.start_soon(self._reset())
        cocotb.start_soon(self._dispatch())

    @property
    def cycle(self) -> int:
        """Core clock cycles since the harness was made (as NicTB counts them)."""
        return int((get_sim_time("ps") - self._t0_ps) // round(CORE_PERIOD_NS * 1000))

    async def _reset(self) -> None:
        await ClockCycles(self.clock, RESET_CYCLES)
        self.dut.reset.value = 0

    async def _dispatch(self) -> None:
        """Drain the C++ side's news each time it has some."""
        lib = self.lib
        changed = self.dut.fast_events.value_change
        while True:
            await changed
            while (ev := lib.next_event()) is not None:
                kind, ident, status, data = ev
                if kind == EV_MMIO_READ:
                    waiter = self._reads.pop(ident, None)  # None: its reader was cancelled
                    if waiter is not None:
                        waiter[1].extend((status, data))
                        waiter[0].set()
                elif kind == EV_MSI:
                    v = self.rc.vectors.get(ident)
                    if v is not None:
                        v.event.set()
                        for cb in v.cb:
                            cb()
                elif kind == EV_PORT:
                    self.ports[ident]._rx.set()
                elif kind == EV_PORT_SENT:
                    self.ports[ident].source._sent()

    async def _mmio_read(self, addr: int, length: int) -> bytes:
        self._read_id += 1
        done, box = Event(), []
        self._reads[self._read_id] = (done, box)
        self.lib.lib.fastsim_mmio_read(addr, length, self._read_id)
        await done.wait()
        status, data = box
        if status != 0:
            return b"\xff" * length  # what a root complex returns for a failed read
        return data

    def make_pcie_tap(self):
        """The workloads' PCIe tap (bench/pcie_tap.PcieTap's interface) over the C++ host's counts."""
        from offnic_sim.fast.fast_tap import FastPcieTap
        return FastPcieTap(self)

    async def init(self) -> None:
        await self._out_of_reset
        for p in self.ports:
            await p.reset()
        await self.drv.init(mps=self.mps, mrrs=self.mrrs)
        await ClockCycles(self.clock, 10)

    async def snapshot(self) -> dict:
        """Every counter and every open queue's indexes, for a report or a failure message."""
        return await snapshot(self.drv)
