"""The DDR4 timing model the payload cache's DRAM tier runs against
(sim/offnic_sim/host/ddr4_model.py), on its own: cocotbext-axi's AxiMaster on one side of a
wire-only fixture (tests/host/axi4_wire.sv: 256-bit, 250 MHz, as the NIC's m_axi), the
model on the other. Checked against a simple reference written from the parameters here
(not the model's scheduler):
- an idle read costs the controller's and converters' pipeline plus CL when its row is
  open, plus tRCD when its bank is closed, plus tRP + tRCD when another row is open;
- a read that meets a refresh waits for it (tRP + tRFC), and finds its row closed;
- sequential reads never beat the port (32 bytes per 4 ns clock) and come near it;
  reads that each open another row of one bank never beat one per tRAS + tRP;
- random writes and reads (unaligned, any length, strobes, back-pressure on every
  channel) return exactly the bytes a plain byte array holds.
"""
from __future__ import annotations

import itertools
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiBus, AxiMaster

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host.ddr4_model import K3P_Q_DDR4, Ddr4Ram

PERIOD_NS = 4.0
MEM = 16 << 20
P = K3P_Q_DDR4
ROW = 1 << 17       # ROW_COLUMN_BANK: one row of every bank per 128 KiB
BANK0 = 0           # byte address bits [9:6] select the bank


def now() -> float:
    return get_sim_time("ns")


async def setup(dut, seed_note: str = ""):
    cocotb.start_soon(Clock(dut.clock, PERIOD_NS, unit="ns").start())
    dut.reset.value = 1
    ram = Ddr4Ram(AxiBus.from_prefix(dut, "m_axi"), dut.clock, dut.reset, size=MEM, period_ns=PERIOD_NS)
    master = AxiMaster(AxiBus.from_prefix(dut, "s_axi"), dut.clock, dut.reset)
    master.write_if.log.setLevel("WARNING")
    master.read_if.log.setLevel("WARNING")
    await ClockCycles(dut.clock, 4)
    dut.reset.value = 0
    await ClockCycles(dut.clock, 4)
    return ram, master


class Handshakes:
    """Times of AR and R handshakes on the slave side (the model's own port)."""

    def __init__(self, dut):
        self.dut, self.ar, self.r = dut, [], []
        cocotb.start_soon(self._watch())

    async def _watch(self):
        d = self.dut
        while True:
            await RisingEdge(d.clock)
            if d.m_axi_arvalid.value and d.m_axi_arready.value:
                self.ar.append(now())
            if d.m_axi_rvalid.value and d.m_axi_rready.value:
                self.r.append(now())


def reference_read_ns(row_state: str) -> float:
    """Idle read: AXI address at the model to first data at the model, by the row's state."""
    row = {"hit": 0.0, "closed": P.trcd, "conflict": P.trp + P.trcd}[row_state]
    pipeline = P.to_mc + (P.mc_cmd_cycles + P.mc_rdata_cycles) * P.ui_ratio * P.tck + P.to_nic
    return pipeline + row + P.cl_cycles * P.tck + P.burst_cycles * P.tck


@cocotb.test(timeout_time=200, timeout_unit="us")
async def latency_by_row_state_and_refresh(dut):
    ram, master = await setup(dut)
    hs = Handshakes(dut)
    cases = [("closed", BANK0 + 5 * ROW), ("hit", BANK0 + 5 * ROW + 1024), ("conflict", BANK0 + 6 * ROW),
             ("closed", 64 + 6 * ROW), ("hit", 64 + 6 * ROW + 2048)]    # bank 1 (bits [9:6] = 1)
    for kind, addr in cases:
        n = len(hs.r)
        await master.read(addr, 32)
        await ClockCycles(dut.clock, 50)    # idle again
        got = hs.r[n] - hs.ar[n]
        want = reference_read_ns(kind)
        dut._log.info("read %s at %#x: %.1f ns (reference %.1f ns)", kind, addr, got, want)
        # the answer goes out on the first clock edge after the data is there (+1 for the R source's register)
        assert want <= got <= want + 2 * PERIOD_NS + 1e-6, (kind, got, want)
    assert reference_read_ns("hit") < reference_read_ns("closed") < reference_read_ns("conflict")

    # A read whose command falls inside the first refresh (at tREFI) waits for it, row closed.
    t_cmd = P.trefi + 100.0                 # 100 ns into the refresh
    issue = t_cmd - P.to_mc - P.mc_cmd_cycles * P.ui_ratio * P.tck
    await Timer(round(issue - now()), "ns")
    n = len(hs.r)
    await master.read(BANK0 + 5 * ROW, 32)  # its row was open before the refresh
    got = hs.r[n] - hs.ar[n]
    refresh_end = P.trefi + P.trp + P.trfc
    want = reference_read_ns("closed") + (refresh_end - (hs.ar[n] + P.to_mc + P.mc_cmd_cycles * P.ui_ratio * P.tck))
    dut._log.info("read during refresh: %.1f ns (reference %.1f ns)", got, want)
    assert want <= got <= want + 2 * PERIOD_NS + 1e-6, (got, want)
    assert got > reference_read_ns("conflict") + 200, got
    assert ram.timing.counts["refresh"] == 1 and ram.timing.counts["read_closed"] >= 3, ram.timing.counts


@cocotb.test(timeout_time=400, timeout_unit="us")
async def bandwidth_ceilings(dut):
    ram, master = await setup(dut)
    # Sequential: 256 KiB in 4 KiB bursts, several in flight.
    nbytes = 256 << 10
    t0 = now()
    await master.read(0, nbytes)
    gbps = nbytes * 8 / (now() - t0)
    port = 256 / PERIOD_NS
    dut._log.info("sequential reads: %.2f Gb/s (port %.0f Gb/s, DRAM peak %.1f Gb/s; refreshes %d)",
                  gbps, port, P.peak_gbps, ram.timing.counts["refresh"])
    assert gbps <= port and gbps <= P.peak_gbps
    assert gbps >= 0.85 * port, gbps   # the DRAM is not the limit of one 256-bit port
    # Every read in another row of bank 0: one per tRAS + tRP at best (tRC).
    ops = [cocotb.start_soon(master.read(BANK0 + (10 + k) * ROW, 64)) for k in range(40)]
    t0 = now()
    for op in ops:
        await op
    per = (now() - t0) / len(ops)
    dut._log.info("row conflicts in one bank: %.1f ns per read (tRAS + tRP = %.2f ns)", per, P.tras + P.trp)
    assert per >= (P.tras + P.trp) * (len(ops) - 1) / len(ops), per
    assert ram.timing.counts["read_conflict"] >= len(ops) - 1, ram.timing.counts


@cocotb.test(timeout_time=3000, timeout_unit="us")
async def random_traffic_data_intact(dut):
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    dut._log.info("random_traffic: rng seed %d", seed)
    ram, master = await setup(dut)
    for ch in (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
               ram.read_if.ar_channel, ram.read_if.r_channel):
        ch.set_pause_generator(itertools.cycle([rng.random() < 0.3 for _ in range(89)]))
    ref = bytearray(MEM)
    init = rng.randbytes(1 << 20)
    ram.write(0, init)                                      # backdoor, as the bench's warm-up does
    ref[:len(init)] = init
    regions = [(k * (256 << 10), 256 << 10) for k in range(4)]   # one per task: no races between tasks
    checked = [0]

    async def task(base: int, size: int, r: random.Random):
        for _ in range(60):
            off = r.randrange(size - 1)
            n = r.randint(1, min(size - off, r.choice([32, 300, 2048, 9000])))
            if r.random() < 0.5:
                data = r.randbytes(n)
                await master.write(base + off, data)        # done = B received
                ref[base + off:base + off + n] = data
            else:
                got = await master.read(base + off, n)
                assert got.data == bytes(ref[base + off:base + off + n]), f"read {n} at {base + off:#x} differs"
                checked[0] += n
    tasks = [cocotb.start_soon(task(b, s, random.Random(rng.getrandbits(32)))) for b, s in regions]
    for t in tasks:
        await t
    assert bytes(ref[:4 << 20]) == ram.read(0, 4 << 20), "memory differs from the reference"
    c = ram.timing.counts
    dut._log.info("random_traffic: %d bytes read back; %s", checked[0], dict(c))
    assert checked[0] > 0 and c["write_hit"] + c["write_closed"] + c["write_conflict"] > 0


def test_ddr4_model():
    run_cocotb(Design.of("sv:tests/host/axi4_wire.sv"), __name__)
