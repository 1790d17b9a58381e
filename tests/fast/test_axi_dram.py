"""AxiDram (sim/fastsim) against its references, in lockstep at every rising edge of the
250 MHz core clock: ddr4 mode against offnic_sim.host.ddr4_model.Ddr4Ram (NicTB's DRAM
tier), ideal mode against cocotbext-axi 0.1.28's AxiRam. A random master issues INCR
bursts (1..16 beats, random ids, strobes, addresses over rows and banks, some past the
memory's end) on AW/W/AR with random gaps, W running ahead of AW at times, and holds
bready/rready low at random; every cycle, every output of the slave (readies, B, R with
its data) must be the same, and at the end the memory. Then what the references refuse
(WRAP, narrow beats, 4 KiB crossings) is sent to AxiDram alone: SLVERR, no hang.
Randomised (OFFNIC_SEED replays); runs past two DDR4 refreshes."""
from __future__ import annotations

import ctypes
import os
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiRam

from fast_shim import HERE, AxiMaster, AxiSlave, load, run_sv_bench
from offnic_sim.harness.runner import bench_config
from offnic_sim.host.ddr4_model import Ddr4Ram

PERIOD_NS = 4.0
MEM = 1 << 20
LANES = 32
DEBUG = int(os.environ.get("FAST_AXI_DEBUG", "1"))  # mismatching cycles to show before failing


def _split(v: int) -> list[int]:
    return [(v >> (32 * k)) & 0xFFFFFFFF for k in range(8)]


def _burst(rng: random.Random, mem: int, any_kind: bool) -> tuple[int, int, int, int]:
    """(address, beats, size, burst): mostly a full-width INCR burst within 4 KiB (what the
    NIC issues), now and then past the memory's end; with any_kind (AxiRam takes them)
    also FIXED, WRAP and narrow bursts at unaligned addresses."""
    top = 2 * mem if rng.random() < 0.05 else mem
    if any_kind and rng.random() < 0.3:
        kind = rng.choice([0, 1, 2])
        size = rng.randint(0, 5)
        beats = rng.choice([2, 4, 8, 16]) if kind == 2 else rng.randint(1, 16)
        while True:
            addr = rng.randrange(0, top)
            if kind != 1 or 0x1000 - (addr >> size << size & 0xFFF) >= beats << size:
                return addr, beats, size, kind
    beats = rng.choice([1, 2, 4, 8, 16, rng.randint(1, 16)])
    while True:
        addr = rng.randrange(0, top, LANES)
        if 0x1000 - (addr & 0xFFF) >= beats * LANES:
            return addr, beats, 5, 1


class Master:
    """The NIC's side: bursts queued per channel, valid held until the handshake."""

    def __init__(self, dut, rng: random.Random, nwrites: int, nreads: int, any_kind: bool):
        self.dut, self.rng = dut, rng
        self.aws = [(rng.randrange(4), *_burst(rng, MEM, any_kind)) for _ in range(nwrites)]
        self.ws = []
        for _, _, beats, _, _ in self.aws:
            for n in range(beats):
                strb = (1 << 32) - 1 if rng.random() < 0.7 else rng.getrandbits(32)
                self.ws.append((rng.getrandbits(256), strb, n == beats - 1))
        self.ars = [(rng.randrange(4), *_burst(rng, MEM, any_kind)) for _ in range(nreads)]
        self.i_aw = self.i_w = self.i_ar = 0
        self.v = {"aw": 0, "w": 0, "ar": 0}
        self.bready = self.rready = 0
        self.b_seen = self.r_seen = 0
        self.p_gap = rng.choice([0.0, 0.3, 0.7])
        self.p_stall = rng.choice([0.0, 0.3, 0.6])

    def done(self) -> bool:
        return (self.i_aw == len(self.aws) and self.i_w == len(self.ws) and self.i_ar == len(self.ars)
                and self.b_seen == len(self.aws) and self.r_seen == sum(a[2] for a in self.ars))

    def step(self, s: dict) -> None:
        """At a rising edge: handshakes with the slave outputs `s` (as before the edge),
        then the next values."""
        d, rng = self.dut, self.rng
        if self.v["aw"] and s["awready"]:
            self.i_aw += 1
            self.v["aw"] = 0
        if self.v["w"] and s["wready"]:
            self.i_w += 1
            self.v["w"] = 0
        if self.v["ar"] and s["arready"]:
            self.i_ar += 1
            self.v["ar"] = 0
        if s["bvalid"] and self.bready:
            self.b_seen += 1
        if s["rvalid"] and self.rready:
            self.r_seen += 1
        # W may run ahead of AW, but only into bursts the list holds
        if not self.v["aw"] and self.i_aw < len(self.aws) and rng.random() >= self.p_gap:
            awid, addr, beats, size, burst = self.aws[self.i_aw]
            d.m_axi_awid.value, d.m_axi_awaddr.value, d.m_axi_awlen.value = awid, addr, beats - 1
            d.m_axi_awsize.value, d.m_axi_awburst.value = size, burst
            self.v["aw"] = 1
        if not self.v["w"] and self.i_w < len(self.ws) and rng.random() >= self.p_gap:
            data, strb, last = self.ws[self.i_w]
            d.m_axi_wdata.value, d.m_axi_wstrb.value, d.m_axi_wlast.value = data, strb, int(last)
            self.v["w"] = 1
        if not self.v["ar"] and self.i_ar < len(self.ars) and rng.random() >= self.p_gap:
            arid, addr, beats, size, burst = self.ars[self.i_ar]
            d.m_axi_arid.value, d.m_axi_araddr.value, d.m_axi_arlen.value = arid, addr, beats - 1
            d.m_axi_arsize.value, d.m_axi_arburst.value = size, burst
            self.v["ar"] = 1
        d.m_axi_awvalid.value, d.m_axi_wvalid.value, d.m_axi_arvalid.value = self.v["aw"], self.v["w"], self.v["ar"]
        self.bready = int(rng.random() >= self.p_stall)
        self.rready = int(rng.random() >= self.p_stall)
        d.m_axi_bready.value, d.m_axi_rready.value = self.bready, self.rready

    def as_struct(self) -> AxiMaster:
        """The master's outputs as driven now (what the slave samples at the next edge)."""
        m = AxiMaster()
        if self.i_aw < len(self.aws):
            m.awid, m.awaddr, beats, m.awsize, m.awburst = self.aws[self.i_aw]
            m.awlen = beats - 1
        m.awvalid = bool(self.v["aw"])
        if self.i_w < len(self.ws):
            data, m.wstrb, m.wlast = self.ws[self.i_w]
            m.wdata[:] = _split(data)
        m.wvalid, m.bready = bool(self.v["w"]), bool(self.bready)
        if self.i_ar < len(self.ars):
            m.arid, m.araddr, beats, m.arsize, m.arburst = self.ars[self.i_ar]
            m.arlen = beats - 1
        m.arvalid, m.rready = bool(self.v["ar"]), bool(self.rready)
        return m


def _slave_outputs(dut) -> dict:
    names = ["awready", "wready", "arready", "bvalid", "bid", "bresp", "rvalid", "rid", "rresp", "rlast", "rdata"]
    return {n: int(getattr(dut, f"m_axi_{n}").value) for n in names}


def _visible(o: dict) -> dict:
    """What the master can see: payload fields only with their valid."""
    v = {k: o[k] for k in ("awready", "wready", "arready", "bvalid", "rvalid")}
    if o["bvalid"]:
        v.update(bid=o["bid"], bresp=o["bresp"])
    if o["rvalid"]:
        v.update(rid=o["rid"], rresp=o["rresp"], rlast=o["rlast"], rdata=o["rdata"])
    return v


@cocotb.test()
async def lockstep(dut):
    mode = bench_config()["mode"]
    rng = random.Random(cocotb.RANDOM_SEED)
    lib = load()
    dram = lib.ax_new(MEM, int(mode == "ddr4"), PERIOD_NS)
    cocotb.start_soon(Clock(dut.clk, PERIOD_NS, unit="ns").start())
    dut.rst.value = 0
    for sig in ("awvalid", "wvalid", "arvalid", "bready", "rready"):
        getattr(dut, f"m_axi_{sig}").value = 0
    dut.m_axi_awsize.value = dut.m_axi_arsize.value = 5
    dut.m_axi_awburst.value = dut.m_axi_arburst.value = 1
    bus = AxiBus.from_prefix(dut, "m_axi")
    if mode == "ddr4":
        ref = Ddr4Ram(bus, dut.clk, dut.rst, size=MEM, period_ns=PERIOD_NS)
    else:
        ref = AxiRam(bus, dut.clk, dut.rst, size=MEM)
        for half in (ref.write_if, ref.read_if):
            half.log.setLevel("WARNING")
    # reset as NicTB's core domain sees it: the models exist, then reset pulses
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 5)
    dut.rst.value = 0
    # ddr4: long enough for two refreshes (tREFI 7.8 us) at the busiest pace
    n = 500 if mode == "ddr4" else 250
    master = Master(dut, rng, nwrites=rng.randint(n, n + 100), nreads=rng.randint(n, n + 100),
                    any_kind=mode == "ideal")
    s_prev = _slave_outputs(dut)
    cs = AxiSlave()
    m_prev = master.as_struct()
    first = True
    cycles = 0
    bad: list[str] = []
    while not master.done():
        await RisingEdge(dut.clk)
        if first:
            lib.ax_set_now_ns(dram, cocotb.utils.get_sim_time("ns"))
            first = False
        master.step(s_prev)
        m_now = master.as_struct()
        await ReadOnly()
        lib.ax_tick(dram, ctypes.byref(m_prev), ctypes.byref(cs))
        s_prev = _slave_outputs(dut)
        mine = {"awready": cs.awready, "wready": cs.wready, "arready": cs.arready, "bvalid": cs.bvalid,
                "bid": cs.bid, "bresp": cs.bresp, "rvalid": cs.rvalid, "rid": cs.rid, "rresp": cs.rresp,
                "rlast": cs.rlast, "rdata": sum(w << (32 * k) for k, w in enumerate(cs.rdata))}
        if _visible({k: int(v) for k, v in mine.items()}) != _visible(s_prev):
            bad.append(f"cycle {cycles} ({mode}): reference {_visible(s_prev)} AxiDram {_visible(mine)}")
            if len(bad) >= DEBUG:
                break
        m_prev = m_now
        cycles += 1
        assert cycles < 200_000, "no progress"
    assert not bad, "\n".join(bad)
    mem = ctypes.string_at(lib.ax_mem(dram), MEM)
    assert mem == bytes(ref.read(0, MEM)), "memory contents differ"
    cnt = (ctypes.c_uint64 * 5)()
    lib.ax_counters(dram, cnt)
    dut._log.info("%s: %d cycles identical, %d writes, %d reads (%d beats), %d SLVERR", mode, cycles,
                  cnt[1], cnt[0], cnt[2], cnt[4])
    if mode == "ddr4":
        assert ref.timing.counts["refresh"] >= 2
    lib.ax_free(dram)


@pytest.mark.parametrize("mode", ["ddr4", "ideal"])
def test_axi_dram_lockstep(mode):
    run_sv_bench(HERE / "axi_bench.sv", "axi_bench", __name__, bench={"mode": mode})
