"""The receive address filter of each port (docs/queues.md, "Receive filter"), through the
whole NIC: XGMII ports, PCIe, the driver model's `set_mac` / `set_rx_mode`.

Each port gets its own station address and its own settings; random frames (scapy UDP
over IPv4, non-IP frames, IPv4 fragments of UDP datagrams) go to that address, to the
other port's, to random stations, to broadcast, to multicast groups in the hash filter,
to groups that only share a hash bit with one, and to groups outside it. An independent
reference model of the filter (below: a bit-serial CRC-32 from the polynomial, checked
against zlib) decides each frame's fate: accepted (this station's: delivered, its
fragments reassembled by the NIC), foreign (promiscuous mode: delivered as a plain frame,
never reassembled), or dropped and counted. Rounds: promiscuous off and on, all-multicast,
broadcast off; the host's queues must receive exactly the model's frames and datagrams,
in order, byte-exact, and `rx_filter_drops`, `rx_foreign` and the reassembler's counters
must equal the model's.
"""
import random
import zlib
from dataclasses import dataclass, field

import cocotb
from cocotb.triggers import Timer
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.fast.fast_tb import FastNicTB
from offnic_sim.net import ipfrag

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
BCAST = b"\xff" * 6


# ---------------------------------------------------------------------------- reference model

def crc32_bitwise(data: bytes) -> int:
    """IEEE 802.3 CRC-32, bit by bit from the reflected polynomial (as the FCS)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def group_hash(addr: bytes) -> int:
    h = crc32_bitwise(addr)
    assert h == zlib.crc32(addr)
    return h >> 26


@dataclass
class FilterModel:
    mac: bytes
    promisc: bool = False
    allmulti: bool = False
    broadcast: bool = True
    groups: list = field(default_factory=list)

    def fate(self, dst: bytes) -> str:
        """'accept' (this station's), 'foreign' (promiscuous only) or 'drop'."""
        table = {group_hash(g) for g in self.groups}
        if dst == self.mac:
            return "accept"
        if dst == BCAST:
            ok = self.broadcast
        elif dst[0] & 1:
            ok = self.allmulti or group_hash(dst) in table
        else:
            ok = False
        return "accept" if ok else ("foreign" if self.promisc else "drop")


# ---------------------------------------------------------------------------- traffic

def unicast(rng: random.Random) -> bytes:
    return bytes([rng.randrange(256) & 0xFE | 0x02]) + rng.randbytes(5)


def multicast(rng: random.Random) -> bytes:
    while True:
        if rng.random() < 0.5:
            a = bytes([0x01, 0x00, 0x5E, rng.randrange(128)]) + rng.randbytes(2)  # IPv4 groups
        else:
            a = bytes([rng.randrange(256) | 0x01]) + rng.randbytes(5)
        if a != BCAST:
            return a


def sharing_bit(rng: random.Random, groups: list) -> bytes:
    """A group address outside `groups` whose hash bit one of them sets (imperfect filter)."""
    bits = {group_hash(g) for g in groups}
    while True:
        a = multicast(rng)
        if a not in groups and a != BCAST and group_hash(a) in bits:
            return a


def ip4(rng: random.Random) -> str:
    return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


def udp_frame(rng: random.Random, dst: bytes, n: int) -> bytes:
    p = Ether(dst=dst.hex(":"), src=unicast(rng).hex(":")) / IP(src=ip4(rng), dst=ip4(rng), id=rng.randrange(65536)) \
        / UDP(sport=rng.randrange(1024, 65535), dport=rng.randrange(1, 65535)) / Raw(rng.randbytes(n))
    return bytes(p)


def other_frame(rng: random.Random, dst: bytes, n: int) -> bytes:
    return dst + unicast(rng) + b"\x88\xb5" + rng.randbytes(n)


def fragments(rng: random.Random, dst: bytes, ident: int) -> tuple[bytes, list[bytes]]:
    """A UDP datagram of 2..4 fragments at MTU 1500 (shuffled), each with Ethernet header."""
    d = ipfrag.udp_datagram(bytes([10, 1, rng.randrange(256), rng.randrange(1, 255)]),
                            bytes([10, 2, rng.randrange(256), rng.randrange(1, 255)]),
                            rng.randrange(1024, 65535), 9, rng.randbytes(rng.randrange(1500, 5500)), ident)
    frags = ipfrag.fragment(d, 1500)
    rng.shuffle(frags)
    hdr = dst + unicast(rng) + b"\x08\x00"
    return d, [hdr + f for f in frags]


def pad60(f: bytes) -> bytes:
    return f + bytes(max(0, 60 - len(f)))


def ip_of(frame: bytes) -> bytes:
    return frame[14:]


# ---------------------------------------------------------------------------- the bench

async def configure(drv, port: int, m: FilterModel) -> None:
    await drv.set_mac(port, m.mac)
    await drv.set_rx_mode(port, promisc=m.promisc, allmulti=m.allmulti, broadcast=m.broadcast, mc_list=m.groups)


def traffic(rng: random.Random, m: FilterModel, other_mac: bytes, count: int, ident0: int):
    """Frames for one port and what the host must get for them, by the model: a list of
    (frames to send, expected items) with items ('frame', bytes) or ('datagram', bytes);
    and the model's counts."""
    out, counts = [], {"drop": 0, "foreign": 0, "fragments": 0}
    for k in range(count):
        r = rng.random()
        dst = (m.mac if r < 0.3 else other_mac if r < 0.4 else unicast(rng) if r < 0.5 else BCAST if r < 0.6
               else rng.choice(m.groups) if r < 0.75 else sharing_bit(rng, m.groups) if r < 0.82 else multicast(rng))
        fate = m.fate(dst)
        if rng.random() < 0.25:  # an IPv4 datagram in fragments
            d, frames = fragments(rng, dst, ident0 + k)
            counts["fragments" if fate == "accept" else fate] += len(frames)
            if fate == "accept":
                want = [("datagram", d)]
            elif fate == "foreign":
                want = [("frame", pad60(f)) for f in frames]  # never reassembled
            else:
                want = []
            out.append((frames, want))
            continue
        n = rng.randrange(18, 1400)
        f = udp_frame(rng, dst, n) if rng.random() < 0.7 else other_frame(rng, dst, n)
        if fate != "accept":
            counts[fate] += 1
        out.append(([f], [("frame", pad60(f))] if fate != "drop" else []))
    return out, counts


async def run_round(tb: FastNicTB, rng: random.Random, models: list, label: str, count: int, ident0: int) -> dict:
    drv = tb.drv
    for p in range(2):
        await configure(drv, p, models[p])
    before = {p: await drv.port_counters(p) for p in range(2)}
    reasm_before = await drv.counters("reasm")
    plan = {p: traffic(rng, models[p], models[1 - p].mac, count, ident0 + 1000 * p) for p in range(2)}

    async def send(p):
        for frames, _ in plan[p][0]:
            for f in frames:
                await tb.ports[p].send(f)
    t = cocotb.start_soon(send(0))
    await send(1)
    await t
    for p in range(2):
        await tb.ports[p].source.wait()
    want = {p: [w for _, ws in plan[p][0] for w in ws] for p in range(2)}
    got = {0: [], 1: []}
    waited = 0
    while any(len(got[p]) < len(want[p]) for p in range(2)) and waited < 2000:
        await Timer(5, "us")
        waited += 5
        for p in range(2):
            while drv.rx_pending(p):
                got[p].append(await drv.recv(p))
    await Timer(10, "us")
    for p in range(2):
        while drv.rx_pending(p):
            got[p].append(await drv.recv(p))
    for p in range(2):
        where = f"{label}, port {p} ({models[p]})"
        kinds = [("datagram" if g.reassembled else "frame") for g in got[p]]
        assert kinds == [w[0] for w in want[p]], (
            f"{where}: got {len(got[p])} {kinds[:20]}..., model {len(want[p])} {[w[0] for w in want[p]][:20]}...; "
            f"port {await drv.port_counters(p)}; reasm {await drv.counters('reasm')}")
        for k, (g, (kind, data)) in enumerate(zip(got[p], want[p])):
            assert g.ok and g.port == p, f"{where}: item {k} status {g.status} port {g.port}"
            if kind == "datagram":
                assert ip_of(g.data) == data, f"{where}: datagram {k} differs"
            else:
                assert g.data == data, f"{where}: frame {k} differs"
        c = await drv.port_counters(p)
        m = plan[p][1]
        assert c["rx_filter_drops"] - before[p]["rx_filter_drops"] == m["drop"], (where, c, m)
        assert c["rx_foreign"] - before[p]["rx_foreign"] == m["foreign"], (where, c, m)
    r = await drv.counters("reasm")
    fr = sum(plan[p][1]["fragments"] for p in range(2))
    assert r["fragments"] - reasm_before["fragments"] == fr, ("only this station's fragments reach the reassembler",
                                                              r, fr)
    assert r["bypassed"] == reasm_before["bypassed"], r
    return {p: plan[p][1] for p in range(2)}


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def rx_filter(dut):
    rng = random.Random(random.getrandbits(64))
    assert all(group_hash(a) == zlib.crc32(a) >> 26 for a in (BCAST, bytes(6), b"\x01\x00\x5e\x00\x00\x01"))
    tb = FastNicTB(dut)
    await tb.init()
    drv = tb.drv
    await drv.set_rss(enable=False)
    for p in range(2):
        await drv.open_rx_queue(p, size=512, buf_size=2048)
        await drv.set_default_queue(port=p, q=p)
    await drv.enable_reasm(128, timeout_us=100_000)
    await Timer(40, "us")  # the reassembler clears its bitmaps after reset
    b0 = drv.block("eth_port", 0)
    assert await b0.read("rx_filter") == 0b100, "after init: broadcast on, promiscuous and all-multicast off"

    macs = [unicast(rng), unicast(rng)]
    groups = [[multicast(rng) for _ in range(rng.randint(1, 4))] for _ in range(2)]
    rounds = [
        ("filter", [FilterModel(macs[p], groups=groups[p]) for p in range(2)]),
        ("promiscuous", [FilterModel(macs[p], promisc=True, groups=groups[p]) for p in range(2)]),
        ("mixed", [FilterModel(macs[0], allmulti=True, broadcast=False, groups=groups[0]),
                   FilterModel(macs[1], promisc=True, broadcast=False, groups=groups[1])]),
        ("promiscuous off again", [FilterModel(macs[p], groups=groups[p][:1]) for p in range(2)]),
    ]
    totals = {"drop": 0, "foreign": 0, "fragments": 0}
    for i, (label, models) in enumerate(rounds):
        counts = await run_round(tb, rng, models, label, 60, 5000 * i)
        for p in range(2):
            for k in totals:
                totals[k] += counts[p][k]
    assert totals["drop"] and totals["foreign"] and totals["fragments"], totals
    v = int.from_bytes(macs[1], "big")
    b1 = drv.block("eth_port", 1)
    assert (await b1.read("mac_hi"), await b1.read("mac_lo")) == (v >> 32, v & 0xFFFF_FFFF)
    assert not drv.errors, drv.errors
    dut._log.info("rx_filter: %s over 4 rounds of 2 x 60 items", totals)


def test_nic_filter():
    run_cocotb(NIC, __name__, fast=True)
