"""The whole NIC in simulation: the core (`nic.Nic`) behind cocotbext-pcie's UltraScale+
PCIe model and a root complex with host memory (1 us read latency by default), both
Ethernet ports attached to cocotbext-eth XGMII sources and sinks in their own MAC clock
domains, and the driver model (`OffnicDriver`) bound to it.

The reference harness: the agreement test (tests/fast/test_fast_agreement.py) holds the fast
harness (offnic_sim/fast, FastNicTB, on which the system tests run) to it, and the tests that
need cocotbext's own models use it. Also used by `./offnic demo` and `./offnic bench base`.
"""
from __future__ import annotations

import logging

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiRam, AxiStreamBus
from cocotbext.eth import XgmiiFrame, XgmiiSink, XgmiiSource
from cocotbext.pcie.core import RootComplex
from cocotbext.pcie.xilinx.us import UltraScalePlusPcieDevice

from offnic_sim.host.ddr4_model import Ddr4Ram
from offnic_sim.host.driver import OffnicDriver
from offnic_sim.host.hostmem import DEFAULT_READ_LATENCY_NS, HostMemory

BAR0_BYTES = 16 << 20
CORE_PERIOD_NS = 4.0                  # 250 MHz
MAC_PERIOD_NS = {25: 2.56, 10: 6.4}   # 390.625 MHz and 156.25 MHz, 64-bit XGMII
LINE_GBPS = {25: 25.0, 10: 10.0}


def quiet(*loggers) -> None:
    for lg in loggers:
        lg.setLevel(logging.WARNING)


async def nic_counters(drv: OffnicDriver) -> dict:
    """The NIC's counters by block (engines, DMA, event queues, each port)."""
    out = {}
    for name in ("tx_engine", "rx_engine", "dma", "eqs", "cache"):
        out[name] = await drv.counters(name)
    for k in range(2):
        out[f"port{k}"] = await drv.port_counters(k)
    return out


async def snapshot(drv: OffnicDriver) -> dict:
    """Every counter and every open queue's indexes (NicTB.snapshot, FastNicTB.snapshot)."""
    out = await nic_counters(drv)
    for kind in ("tx", "rx"):
        for q in drv.queues[kind]:
            e = drv.entry(f"{kind}_queues", q)
            c = drv.entry(f"{kind}_cqs", q)
            out[f"{kind}q{q}"] = {"prod": await e.read("prod"), "cons": await e.read("cons"),
                                  "status": await e.read("status"), "cq_prod": await c.read("prod"),
                                  "cq_cons": await c.read("cons")}
    out["driver"] = dict(drv.stats)
    return out


class Port:
    """One Ethernet port's far end: frames into the NIC (XgmiiSource on its RX XGMII) and
    out of it (XgmiiSink on its TX XGMII), in the port's MAC clock domain."""

    def __init__(self, dut, k: int, gbps: int):
        self.k = k
        self.gbps = gbps
        self.clk = getattr(dut, f"port_mac_clk_{k}")
        self.rst = getattr(dut, f"port_mac_rst_{k}")
        cocotb.start_soon(Clock(self.clk, MAC_PERIOD_NS[gbps], unit="ns").start())
        self.rst.value = 1
        self.source = XgmiiSource(getattr(dut, f"port_xgmii_rxd_{k}"), getattr(dut, f"port_xgmii_rxc_{k}"),
                                  self.clk, self.rst)
        self.sink = XgmiiSink(getattr(dut, f"port_xgmii_txd_{k}"), getattr(dut, f"port_xgmii_txc_{k}"),
                              self.clk, self.rst)
        quiet(self.source.log, self.sink.log)

    async def reset(self) -> None:
        self.rst.value = 1
        await ClockCycles(self.clk, 8)
        self.rst.value = 0

    async def send(self, frame: bytes, bad_fcs: bool = False, pad: bool = True) -> None:
        """A frame (without FCS) into the NIC; XgmiiFrame adds preamble and FCS, and pads
        to 60 bytes unless `pad` is False (a runt)."""
        f = XgmiiFrame.from_payload(frame, min_len=60 if pad else 0)
        if bad_fcs:
            data = bytearray(f.data)
            data[-1] ^= 0xFF
            f.data = data
        await self.source.send(f)

    async def recv(self) -> bytes:
        """The next frame the NIC sent, without FCS (its FCS checked)."""
        f = await self.sink.recv()
        assert f.check_fcs(), f"port {self.k}: frame with a bad FCS"
        return bytes(f.get_payload())


# DRAM behind the cache's AXI4 port (the tier uses its first cache_dram_mib MiB).
DRAM_BYTES = 32 << 20
# What answers on m_axi: "ddr4", the K3P-Q's DDR4 and controller with their timing
# (ddr4_model.Ddr4Ram, the default), or "ideal", cocotbext-axi's AxiRam (no DRAM timing:
# every read answered at once), for tests that want the NIC's own behaviour only.
DRAM_MODELS = ("ddr4", "ideal")


class NicTB:
    """The NIC with its PCIe host, ports and driver. `await init()` before use."""

    def __init__(self, dut, *, host_latency_ns: float = DEFAULT_READ_LATENCY_NS, port_gbps: int = 25,
                 mode: str = "irq", mps: int = 256, mrrs: int = 512, strict: bool = True,
                 pcie_lanes: int = 8, dram: str = "ddr4"):
        self.dut = dut
        self.clock = dut.clock
        self.mps, self.mrrs = mps, mrrs
        self.dev = UltraScalePlusPcieDevice(
            pcie_generation=3, pcie_link_width=8, user_clk_frequency=250e6, alignment="dword",
            cq_straddle=False, cc_straddle=False, rq_straddle=False, rc_straddle=False,
            rc_4tlp_straddle=False, max_payload_size=1024, enable_client_tag=True, enable_extended_tag=True,
            user_clk=dut.clock, user_reset=dut.reset,
            cq_bus=AxiStreamBus.from_prefix(dut, "s_axis_cq"),
            cc_bus=AxiStreamBus.from_prefix(dut, "m_axis_cc"),
            rq_bus=AxiStreamBus.from_prefix(dut, "m_axis_rq"),
            rc_bus=AxiStreamBus.from_prefix(dut, "s_axis_rc"),
            cfg_max_payload=dut.cfg_max_payload,
            cfg_max_read_req=dut.cfg_max_read_req,
        )
        self.dev.functions[0].configure_bar(0, BAR0_BYTES, ext=True, prefetch=True)
        # pcie_lanes < 8: the x8 hard IP trained down to a narrower link (an x8 card in an
        # x2 slot): the user interface stays 256 bits at 250 MHz, the link serialises
        # TLPs at Gen3 rate over fewer lanes: a host link that is the bottleneck.
        self.pcie_lanes = pcie_lanes
        self.dev.upstream_port.max_link_width = pcie_lanes
        self.rc = RootComplex()
        self.rc.make_port().connect(self.dev)
        quiet(self.dev.log, self.dev.functions[0].log, logging.getLogger("cocotb.pcie"))
        self.rc.log.setLevel(logging.ERROR)  # enumeration probes empty slots: harmless warnings
        for s in (self.dev.rq_sink, self.dev.rc_source, self.dev.cq_source, self.dev.cc_sink):
            quiet(s.log)
        self.hostmem = HostMemory(self.rc, host_latency_ns)
        # The payload cache's DRAM tier: the board's DDR4 behind its controller's AXI4 slave.
        assert dram in DRAM_MODELS, f"dram: one of {DRAM_MODELS}"
        self.dram_model = dram
        if dram == "ideal":
            self.dram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clock, dut.reset, size=DRAM_BYTES)
        else:
            self.dram = Ddr4Ram(AxiBus.from_prefix(dut, "m_axi"), dut.clock, dut.reset, size=DRAM_BYTES,
                                period_ns=CORE_PERIOD_NS)
        quiet(self.dram.write_if.log, self.dram.read_if.log)
        self.ports = [Port(dut, k, port_gbps) for k in range(2)]
        self.drv = OffnicDriver(dut, self.rc, mode=mode, hostmem=self.hostmem, strict=strict)
        self._cycle = 0
        cocotb.start_soon(self._count())

    @property
    def cycle(self) -> int:
        return self._cycle

    async def _count(self) -> None:
        while True:
            await RisingEdge(self.clock)
            self._cycle += 1

    async def init(self) -> None:
        for p in self.ports:
            await p.reset()
        await self.drv.init(mps=self.mps, mrrs=self.mrrs)
        await ClockCycles(self.clock, 10)

    async def snapshot(self) -> dict:
        """Every counter and every open queue's indexes, for a report or a failure message."""
        return await snapshot(self.drv)
