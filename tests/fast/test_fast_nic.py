"""The fast harness's host side on the whole NIC (FastNicTB, sim/fastsim): the driver's
bring-up through BAR0 (CQ requests, CC completions), DMA reads and writes of host memory
(RQ, RC split at the completion boundary), MSI-X interrupts, and frames through the C++
port ends. Each check could fail: values read back are compared with what was written,
frames byte for byte, and the driver's strict mode raises on any protocol error.
"""
import random

import cocotb
from cocotb.triggers import Timer, with_timeout

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.fast.fast_tb import FastNicTB
from offnic_sim.host.nic_tb import DRAM_BYTES

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)


def frame(n: int, rng: random.Random, dst: bytes = b"\x02\x00\x00\x00\x00\x01") -> bytes:
    return dst + b"\x02\x00\x00\x00\x00\x02" + b"\x88\xb5" + rng.randbytes(n - 14)


@cocotb.test(timeout_time=100, timeout_unit="us")
async def mmio(dut):
    """BAR0 reads and writes: the register chain discovered, a rw register written and
    read back (CQ write, CQ read, CC completion), an unmapped word reads all ones."""
    tb = FastNicTB(dut)
    await tb.init()
    drv = tb.drv
    assert drv.counts["eqs"] >= 1 and drv.counts["tx_queues"] >= 1, drv.counts
    r = drv.entry("rx_cqs", 1)
    for v in (0x0, 0xA5, 0x3C):
        await r.write("mod_count", v)
        assert await r.read("mod_count") == v
    bar = drv.bar
    await bar.write_dword(0xFF_FFF0, 0x1234_5678)
    assert await bar.read_dword(0xFF_FFF0) == 0xFFFF_FFFF
    st = tb.lib.host_stats()
    assert st["cq_tlps"] > 0 and st["cc_tlps"] > 0 and st["bad_requests"] == 0, st
    # The DRAM model is there, as NicTB's: bytes written by the host read back.
    tb.dram.write(0x1000, b"offnic")
    assert tb.dram.read(0x1000, 6) == b"offnic" and len(tb.dram.mem) == DRAM_BYTES


@cocotb.test(timeout_time=300, timeout_unit="us")
async def dma_and_interrupts(dut):
    """Frames out of and into both ports: TX is a DMA read of descriptors and data
    (completions split at the RCB and max payload size), RX a DMA write of data and
    completions, each batch announced by an MSI-X message."""
    rng = random.Random(random.getrandbits(64))
    tb = FastNicTB(dut)
    await tb.init()
    drv = tb.drv
    await drv.open_queue_per_port()
    irqs = drv.stats["irq"]
    for port in range(2):
        for n in (60, 61, 64, 65, 1514):
            f = frame(n, rng)
            tok = await drv.send(port, f)
            got = await with_timeout(tb.ports[port].recv(), 50, "us")
            assert got[:n] == f, f"port {port}: TX frame of {n} bytes differs"
            cpl = await tok.wait()
            assert cpl.status == 0, cpl
    for port in range(2):
        for n in (60, 64, 65, 1514):
            f = frame(n, rng)
            await tb.ports[port].send(f)
            pkt = await drv.recv(port, timeout_us=50)
            assert pkt.ok and pkt.port == port, pkt
            assert pkt.data == f, f"port {port}: RX frame of {n} bytes differs"
    assert drv.stats["irq"] > irqs, drv.stats
    st = tb.lib.host_stats()
    assert st["reads"] > 0 and st["msi"] > 0 and st["bad_requests"] == 0, st
    await Timer(1, "us")


def test_fast_nic():
    run_cocotb(NIC, __name__, fast=True)
