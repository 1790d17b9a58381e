"""NIC -> Linux: the TX fragmentation offload against a real Linux receiver (issue 6).

The whole NIC (driver model, PCIe, XGMII) sends UDP datagrams of 1 B to 65,507 B to a
Linux network namespace; every frame the simulated port puts on the wire is written into
a TAP device whose Linux end holds 192.0.2.1 and a UDP socket. At link MTU 1500 and 9000
(the NIC's `tx_engine.mtu`), with and without checksum offload (the NIC computes the UDP
checksum over the whole datagram and puts it in the first fragment, which it sends last),
Linux's own reassembly and UDP checksum check must hand the socket every datagram,
byte-exact. Needs root (network namespaces, TAP); skips otherwise.
"""
from __future__ import annotations

import random
import socket
import struct

import cocotb
import pytest
from cocotb.triggers import Timer

from offnic_sim.net import ipfrag
from offnic_sim.linux import linuxnet
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

REASON = linuxnet.unavailable_reason()
NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
SIZES = [1, 1472, 1473, 8972, 8973, 20000, 65507]
PORT = 5000
SIM_IP, LINUX_IP = bytes([192, 0, 2, 2]), bytes([192, 0, 2, 1])


def frame_for(tap, rng: random.Random, payload: bytes, csum: bool) -> bytes:
    """The frame the host hands the NIC: Ethernet to the TAP's MAC, IPv4/UDP to its socket;
    with `csum` the UDP checksum field holds the pseudo-header sum (CHECKSUM_PARTIAL)."""
    d = ipfrag.udp_datagram(SIM_IP, LINUX_IP, 40000, PORT, payload, rng.randrange(65536))
    if csum:
        seed = ipfrag.ones_sum16(SIM_IP + LINUX_IP + struct.pack("!BBH", 0, ipfrag.PROTO_UDP, 8 + len(payload)))
        d = d[:26] + seed.to_bytes(2, "big") + d[28:]
    return linuxnet.mac_bytes(tap.mac) + linuxnet.mac_bytes(tap.sim_mac) + b"\x08\x00" + d


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def nic_to_linux(dut):
    from offnic_sim.host.nic_tb import NicTB
    rng = random.Random(random.getrandbits(64))
    tb = NicTB(dut)
    await tb.init()
    drv = tb.drv
    await drv.open_tx_queue(0, size=64, port=0, buf_size=16384)
    for b in drv.blocks["eth_port"]:
        await b.write("max_frame_len", 9018)
    with linuxnet.Namespace() as ns, \
            linuxnet.TapPort(ns, mtu=9000, addr="192.0.2.1/24", sim_ips=("192.0.2.2",), static_neigh=True) as tap:
        rx = ns.socket()
        rx.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)   # SO_RCVBUFFORCE
        rx.bind((tap.ip, PORT))
        rx.setblocking(False)
        wired = []

        async def to_linux():
            while True:
                f = await tb.ports[0].recv()
                wired.append(len(f))
                tap.write_frame(f)   # Linux takes it synchronously (reassembly, UDP, the socket)
        cocotb.start_soon(to_linux())
        for mtu in (1500, 9000):
            await drv.block("tx_engine").write("mtu", mtu | mtu << 16)
            sizes = SIZES + [rng.randrange(1, 65508) for _ in range(3)]
            for csum in (False, True):
                for n in sizes:
                    payload = rng.randbytes(n)
                    f = frame_for(tap, rng, payload, csum)
                    tok = await drv.send(0, f, segments=list(range(16000, len(f), 16000)) or None,
                                         csum=(34, 40) if csum else None)
                    assert (await tok.wait(500)).status == 0
                    got = None
                    for _ in range(400):
                        try:
                            got = rx.recv(70000)
                            break
                        except BlockingIOError:
                            await Timer(1, "us")
                    assert got == payload, (f"MTU {mtu}, {n} B, csum {csum}: Linux delivered "
                                            f"{None if got is None else len(got)} B; frames {wired[-50:]}")
        dut._log.info(f"{len(wired)} frames to Linux; tap {dict(tap.counters)}; Linux {ns.mib()}")


@pytest.mark.skipif(REASON is not None, reason=f"real Linux networking unavailable: {REASON}")
def test_nic_frag_linux():
    run_cocotb(NIC, __name__)
