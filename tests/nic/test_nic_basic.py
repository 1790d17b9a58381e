"""The whole NIC through PCIe and both XGMII ports: single frames each way, the first
thing that must work. Driver model in interrupt mode, host reads answered after 1 us.
"""
import random

import cocotb
from cocotb.triggers import Timer, with_timeout

from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.fast.fast_tb import FastNicTB

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)


def frame(n: int, rng: random.Random, dst: bytes = b"\x02\x00\x00\x00\x00\x01") -> bytes:
    """An Ethernet frame of n bytes (without FCS): an IPv4-less ethertype and random payload."""
    return dst + b"\x02\x00\x00\x00\x00\x02" + b"\x88\xb5" + rng.randbytes(n - 14)


@cocotb.test(timeout_time=200, timeout_unit="us")
async def single_frames(dut):
    rng = random.Random(random.getrandbits(64))  # cocotb seeds `random` with the run seed
    tb = FastNicTB(dut)
    await tb.init()
    drv = tb.drv
    await drv.open_queue_per_port()

    # TX: one frame per port, sizes at the edges.
    for port in range(2):
        for n in (60, 61, 64, 65, 1514):
            f = frame(n, rng)
            tok = await drv.send(port, f)
            got = await with_timeout(tb.ports[port].recv(), 50, "us")
            assert got[:n] == f, f"port {port}: TX frame of {n} bytes differs"
            cpl = await tok.wait()
            assert cpl.status == 0, cpl
    # RX: one frame per port.
    for port in range(2):
        for n in (60, 64, 65, 1514):
            f = frame(n, rng)
            await tb.ports[port].send(f)
            pkt = await drv.recv(port, timeout_us=50)
            assert pkt.ok, pkt
            assert pkt.data == f, f"port {port}: RX frame of {n} bytes differs"
            assert pkt.port == port
    await Timer(1, "us")


def test_nic_basic():
    run_cocotb(NIC, __name__, fast=True)
