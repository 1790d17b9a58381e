"""Linux -> NIC: the RX reassembly offload against real Linux senders and Linux's own
reassembly (issue 6). Needs root (network namespaces, TAP); skips otherwise.

- linux_to_nic: eight UDP sockets in a namespace send datagrams of 1 B to 65,507 B to the
  simulated NIC (192.0.2.2) over a TAP of MTU 1500, then 9000; Linux fragments them. The
  bridge moves every frame from the TAP into port 0, reordering and duplicating some
  (linuxnet.Impair: netem is not available here). The driver model must get every
  datagram exactly once, byte-exact: from the NIC's reassembly, or, for fragments the NIC
  left to the host, from the host stack (`ipfrag.Reassembler`, Linux's rules).
- differential: the same fragment sequences (hostile ones and random traffic with
  duplicates, all addressed to the namespace's UDP socket) go to Linux through a TAP and
  to the NIC; the UDP payloads Linux's socket receives equal, in order, the payloads of
  the datagrams the NIC delivers that Linux's UDP would accept (`ipfrag.udp_payload`).
"""
from __future__ import annotations

import random
import socket
import sys
from pathlib import Path

import cocotb
import pytest
from cocotb.triggers import Timer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "frag"))

from offnic_sim.net import ipfrag  # noqa: E402
from offnic_sim.linux import linuxnet  # noqa: E402
from offnic_sim.harness.runner import run_cocotb  # noqa: E402
from offnic_sim.harness.hw import Design  # noqa: E402

REASON = linuxnet.unavailable_reason()
NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
PORT = 5000
SIZES = [1, 1472, 1473, 2961, 8972, 8973, 20000, 65507]


async def nic_setup(dut):
    from offnic_sim.host.nic_tb import NicTB
    tb = NicTB(dut)
    await tb.init()
    drv = tb.drv
    for b in drv.blocks["eth_port"]:
        await b.write("max_frame_len", 9022)
    await drv.set_rss(enable=False)
    await drv.set_default_queue(port=0, q=0)
    await drv.open_rx_queue(0, size=1024, buf_size=9216)
    await drv.enable_reasm(64, timeout_us=100_000)
    await Timer(40, "us")  # the bitmaps clear after reset
    return tb


class HostSide:
    """The driver's packets through the host stack: reassembled datagrams as they come,
    other frames through Linux's rules (ipfrag.Reassembler)."""

    def __init__(self, drv):
        self.drv = drv
        self.stack = ipfrag.Reassembler(max_dist=0)
        self.datagrams: list[bytes] = []
        self.by_nic = 0

    def _one(self, p) -> None:
        ip = p.data[14:]
        if p.reassembled:
            self.by_nic += 1
            self.datagrams.append(ip)
        elif p.data[12:14] == b"\x08\x00":
            self.datagrams += self.stack.push(ip)

    async def drain(self, idle_us: float = 8.0) -> None:
        quiet = 0.0
        while quiet < idle_us:
            await Timer(1, "us")
            n = 0
            while self.drv.rx_pending(0):
                self._one(await self.drv.recv(0))
                n += 1
            quiet = 0.0 if n else quiet + 1.0


@cocotb.test(timeout_time=60, timeout_unit="ms")
async def linux_to_nic(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await nic_setup(dut)
    drv = tb.drv
    host = HostSide(drv)
    with linuxnet.Namespace() as ns, \
            linuxnet.TapPort(ns, mtu=1500, addr="192.0.2.1/24", sim_ips=("192.0.2.2",), static_neigh=True) as tap:
        await drv.set_mac(0, linuxnet.mac_bytes(tap.sim_mac))  # Linux sends to the simulated side's address
        socks = []
        for k in range(8):
            s = ns.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            s.bind((tap.ip, 40000 + k))
            socks.append(s)
        impair = linuxnet.Impair(linuxnet.ImpairConfig(duplicate=0.02, reorder=0.05, reorder_by=4),
                                 seed=rng.randrange(1 << 30))
        sent: list[bytes] = []
        for mtu in (1500, 9000):
            ns.ip("link", "set", "dev", tap.name, "mtu", str(mtu))
            sizes = SIZES + [rng.randrange(1, 65508) for _ in range(8)]
            rng.shuffle(sizes)
            for i, n in enumerate(sizes):
                payload = rng.randbytes(n)
                socks[i % len(socks)].sendto(payload, ("192.0.2.2", PORT))
                sent.append(payload)
                for f in tap.read_frames():
                    for g in impair.push(f):
                        await tb.ports[0].send(g)
                await Timer(2, "us")
            for f in tap.read_frames():
                for g in impair.push(f):
                    await tb.ports[0].send(g)
            for g in impair.flush():
                await tb.ports[0].send(g)
            await tb.ports[0].source.wait()
            await host.drain()
        got = [ipfrag.udp_payload(d) for d in host.datagrams]
        payloads = [g[2] for g in got if g is not None and g[1] == PORT]
        # Every datagram once; a datagram sent whole (not fragmented) may come twice when the
        # bridge duplicated its frame: UDP delivers both, as Linux would.
        extra = list(payloads)
        for x in sent:
            assert x in extra, (f"a datagram of {len(x)} B missing ({len(payloads)} delivered of {len(sent)}); "
                                f"reasm {await drv.counters('reasm')}")
            extra.remove(x)
        assert all(x in sent and len(x) <= 8972 for x in extra), (
            f"extra datagrams that are no duplicate of an unfragmented one: {[len(x) for x in extra]}")
        c = await drv.counters("reasm")
        assert host.by_nic > 0 and c["cpl_dropped"] == 0, c
        dut._log.info(f"linux_to_nic: {len(sent)} datagrams from Linux, {host.by_nic} reassembled by the NIC; "
                      f"impair {dict(impair.counters) if hasattr(impair, 'counters') else ''}; reasm {c}")


@cocotb.test(timeout_time=60, timeout_unit="ms")
async def differential(dut):
    from reasm_frames import hostile, random_traffic
    rng = random.Random(random.getrandbits(64))
    tb = await nic_setup(dut)
    drv = tb.drv
    host = HostSide(drv)
    with linuxnet.Namespace() as ns, \
            linuxnet.TapPort(ns, mtu=9000, addr="192.0.2.1/24", sim_ips=("192.0.2.2",), static_neigh=True) as tap:
        rx = ns.socket()
        rx.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)   # SO_RCVBUFFORCE
        rx.bind(("0.0.0.0", 9))
        rx.setblocking(False)
        mac = linuxnet.mac_bytes(tap.mac) + linuxnet.mac_bytes(tap.sim_mac)
        await drv.set_mac(0, linuxnet.mac_bytes(tap.mac))  # the same frames go to Linux and to the NIC
        frames = [mac + f[12:] for f in hostile(rng, dst=bytes([192, 0, 2, 1])) +
                  random_traffic(rng, 12, 16_000, dst=bytes([192, 0, 2, 1]), vlan=0.0)]
        for f in frames:
            tap.write_frame(f)
            await tb.ports[0].send(f)
        await tb.ports[0].source.wait()
        await host.drain()
        linux = []
        while True:
            try:
                linux.append(rx.recv(70000))
            except BlockingIOError:
                break
        nic = [g[2] for g in (ipfrag.udp_payload(d) for d in host.datagrams) if g is not None and g[1] == 9]
        assert nic == linux, f"NIC delivered {len(nic)} datagrams, Linux {len(linux)}; reasm {await drv.counters('reasm')}"
        assert host.by_nic > 0
        dut._log.info(f"differential: {len(frames)} frames, {len(linux)} datagrams delivered by both, "
                      f"{host.by_nic} by the NIC's reassembly; Linux {ns.mib()}")


@pytest.mark.skipif(REASON is not None, reason=f"real Linux networking unavailable: {REASON}")
def test_nic_reasm_linux():
    run_cocotb(NIC, __name__)
