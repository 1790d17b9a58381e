"""The reference models of sim/offnic_sim/net/ipfrag.py against the real kernel, through a TAP
port into a network namespace (sim/offnic_sim/linux/linuxnet.py). Needs root, iproute2 and
/dev/net/tun; skips otherwise. No hardware build involved.

- Linux -> bridge: a UDP socket in the namespace sends 1 B ... 65,507 B datagrams over
  a TAP of MTU 1500 and 9000 (and with IP options, and many sockets at once); the
  fragments read off the TAP equal `fragment()` of the datagram `Reassembler` rebuilds
  from them, byte for byte, and the payload is what was sent.
- bridge -> Linux: `fragment()`'s fragments written in forward, reverse and random
  order, interleaved with other datagrams, duplicated and reordered by an `Impair`
  stage: a UDP socket in the namespace receives every datagram byte-exact.
- Differential: hostile fragment sequences go to Linux and to `Reassembler`; the
  datagrams the socket receives (in order, with source and bytes) equal the model's,
  and so do the kernel's reassembly MIB counters (ReasmReqds/OKs/Fails/Overlaps/
  Timeout, header and checksum errors, UDP checksum errors). Named cases first, then
  seeded random fuzz.

Seed: OFFNIC_SEED or 6006, printed. Runs in about 10 s.
"""
from __future__ import annotations

import asyncio
import ipaddress
import os
import random
import socket
import struct
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import pytest

from offnic_sim.linux import linuxnet
from offnic_sim.net.ipfrag import (IP_MF, PROTO_UDP, Reassembler, fragment, ipv4_header, ones_sum16, parse,
                               udp_datagram, udp_payload, with_checksum)
from offnic_sim.linux.linuxnet import Impair, ImpairConfig, Namespace, TapPort, ip_of

REASON = linuxnet.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"real Linux networking unavailable: {REASON}")

SEED = int(os.environ.get("OFFNIC_SEED") or 6006)
LINUX_IP = "192.0.2.1"
SIM_IPS = tuple(f"192.0.2.{i}" for i in range(2, 10))
SIM_IP = SIM_IPS[0]
PORT = 5000
SO_RCVBUFFORCE = 33
MIB_KEYS = {"ReasmReqds": "Ip", "ReasmOKs": "Ip", "ReasmFails": "Ip", "ReasmTimeout": "Ip",
            "InHdrErrors": "Ip", "ReasmOverlaps": "IpExt", "InCsumErrors": "IpExt", "InTruncatedPkts": "IpExt"}


def packed(ip: str) -> bytes:
    return ipaddress.IPv4Address(ip).packed


def rng_for(name: str) -> random.Random:
    return random.Random(f"{SEED}/{name}")


def print_seed(name: str) -> None:
    print(f"[{name}] seed {SEED} (replay: OFFNIC_SEED={SEED} ./offnic test -n 0 tests/linux/test_linuxnet.py)")


@pytest.fixture(scope="module", autouse=True)
def announce_seed():
    print_seed("test_linuxnet")


def receiver(ns: Namespace, tap: TapPort) -> socket.socket:
    s = ns.socket()
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    s.bind((tap.ip, PORT))
    s.setblocking(False)
    return s


def recv_all(sock: socket.socket) -> list[tuple[str, int, bytes]]:
    out = []
    while True:
        try:
            data, (ip, port) = sock.recvfrom(70000)
        except BlockingIOError:
            return out
        out.append((ip, port, data))


MARKER = b"--marker--"


def drain(tap: TapPort, sock: socket.socket, marker_id: int) -> list[tuple[str, int, bytes]]:
    """Everything the socket received, up to a marker datagram sent after the case (so no
    reliance on the kernel having finished; it is synchronous, but this proves it)."""
    tap.send_ip(udp_datagram(packed(SIM_IP), packed(tap.ip), 9, PORT, MARKER, marker_id))
    got: list[tuple[str, int, bytes]] = []
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        got += recv_all(sock)
        if got and got[-1][2] == MARKER:
            tap.read_frames()   # ICMP errors Linux sent meanwhile (unreachable, time exceeded)
            return got[:-1]
        time.sleep(0.001)
    raise AssertionError(f"marker datagram never arrived; got {len(got)} datagrams")


# ============================================================================ plumbing

def test_cleanup_guarantees():
    """What a crashed run left is removed; a failing test still cleans up; a TAP goes with
    its descriptor; the namespace sees no IPv6 noise."""
    dead = int(open("/proc/sys/kernel/pid_max").read()) + 1      # a pid no process can have
    subprocess.run(["ip", "netns", "add", f"ofn{dead}n1"], check=True)
    subprocess.run(["ip", "link", "add", f"ofn{dead}v1", "type", "veth", "peer", "name", f"ofn{dead}v2"], check=True)
    gone = linuxnet.cleanup_stale()
    assert f"ofn{dead}n1" in gone and {f"ofn{dead}v1", f"ofn{dead}v2"} & set(gone)
    assert f"ofn{dead}n1" not in os.listdir(linuxnet.NETNS_DIR)
    assert f"ofn{dead}v" not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout

    with pytest.raises(RuntimeError, match="boom"):
        with Namespace() as ns, TapPort(ns) as tap:
            names = (ns.name, tap.name)
            raise RuntimeError("boom")
    assert names[0] not in os.listdir(linuxnet.NETNS_DIR)

    with Namespace() as ns:
        tap = TapPort(ns, sim_ips=SIM_IPS).__enter__()
        assert tap.name in ns.ip("-o", "link", "show")
        assert ns.sysctl(f"net/ipv6/conf/{tap.name}/disable_ipv6") == "1"
        time.sleep(0.2)
        assert tap.read_frames() == []            # no router solicitation, DAD or MLD
        tap.close()
        assert tap.name not in ns.ip("-o", "link", "show")


def test_asyncio_reader():
    """TapPort.arecv_frame on an asyncio loop (add_reader), ARP answered on the way."""
    with Namespace() as ns, TapPort(ns, sim_ips=SIM_IPS) as tap:
        s = ns.socket()
        s.bind((tap.ip, 0))

        async def main() -> bytes:
            s.sendto(b"ping", (SIM_IP, PORT))
            return await asyncio.wait_for(tap.arecv_frame(), 2.0)

        frame = asyncio.run(main())
        assert udp_payload(ip_of(frame))[2] == b"ping" and tap.counters["arp_answered"] == 1


# ============================================================================ Linux -> bridge

SIZES_FIXED = [1, 7, 8, 9, 1471, 1472, 1473, 1480, 2952, 2953, 4000, 8971, 8972, 8973, 8980, 17944, 32768,
               50000, 65506, 65507]


def capture_datagram(tap: TapPort, model: Reassembler) -> tuple[list[bytes], bytes]:
    """Fragments off the TAP until the model completes a datagram: (fragments, datagram)."""
    frags = []
    while True:
        frame = tap.wait_frame(2.0)
        assert frame is not None, f"Linux stopped after {len(frags)} fragments"
        pkt = ip_of(frame)
        assert pkt is not None, f"unexpected non-IPv4 frame {frame[:14].hex()}"
        frags.append(pkt)
        done = model.push(pkt)
        if done:
            return frags, done[0]


@pytest.mark.parametrize("mtu", [1500, 9000])
def test_linux_to_bridge_sizes(mtu):
    """Linux fragments exactly as fragment() does, for 1 B ... 65,507 B of UDP payload."""
    rng = rng_for(f"l2b{mtu}")
    sizes = SIZES_FIXED + sorted(rng.randrange(1, 65508) for _ in range(8))
    with Namespace() as ns, TapPort(ns, mtu=mtu, sim_ips=SIM_IPS) as tap:
        s = ns.socket()
        s.bind((tap.ip, 0))
        model = Reassembler()
        for size in sizes:
            payload = rng.randbytes(size)
            s.sendto(payload, (SIM_IP, PORT))
            frags, dgram = capture_datagram(tap, model)
            ip = parse(dgram)
            assert (ip.src, ip.dst) == (packed(tap.ip), packed(SIM_IP))
            assert udp_payload(dgram) == (s.getsockname()[1], PORT, payload), f"{size} B: payload differs"
            assert frags == fragment(dgram, mtu), f"{size} B at MTU {mtu}: fragments differ from fragment()"
            expect_n = 1 if size + 28 <= mtu else -(-(size + 8) // ((mtu - 20) & ~7))
            assert len(frags) == expect_n
        assert tap.read_frames() == []
        assert model.pending == 0 and model.counters["overlap"] == 0


def test_linux_to_bridge_options():
    """With IP options, Linux keeps every fragment's header length and overwrites the
    options without the copied flag with NOPs after the first fragment, as fragment()."""
    # Router Alert (0x94, copied) + Timestamp (0x44, not copied) with room for 2 stamps.
    opts = bytes([0x94, 4, 0, 0]) + bytes([0x44, 12, 5, 0]) + bytes(8)
    rng = rng_for("l2b-options")
    with Namespace() as ns, TapPort(ns, mtu=1500, sim_ips=SIM_IPS) as tap:
        s = ns.socket()
        s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, opts)
        s.bind((tap.ip, 0))
        model = Reassembler()
        for size in (100, 3000, 20000, 65507 - len(opts)):
            payload = rng.randbytes(size)
            s.sendto(payload, (SIM_IP, PORT))
            frags, dgram = capture_datagram(tap, model)
            assert parse(dgram).ihl == 20 + len(opts)
            assert udp_payload(dgram)[2] == payload
            assert frags == fragment(dgram, 1500), f"{size} B with options: fragments differ"
            if len(frags) > 1:
                assert frags[1][20:24] == opts[:4] and frags[1][24:36] == bytes([1]) * 12
            assert fragment(dgram, 1500, options="rfc791") != frags or len(frags) == 1


def test_linux_to_bridge_many_sockets():
    """Several sockets send at once before anything is read: every datagram is rebuilt."""
    rng = rng_for("l2b-many")
    with Namespace() as ns, TapPort(ns, mtu=1500, sim_ips=SIM_IPS) as tap:
        socks = []
        for _ in range(6):
            s = ns.socket()
            s.bind((tap.ip, 0))
            socks.append(s)
        socks[0].sendto(b"arp", (SIM_IP, PORT))     # resolve the neighbour first
        capture_datagram(tap, Reassembler())
        sent = set()
        for _ in range(3):
            for s in socks:
                payload = rng.randbytes(rng.randrange(1, 30000))
                s.sendto(payload, (SIM_IP, PORT))
                sent.add((s.getsockname()[1], payload))
        model = Reassembler()
        got = set()
        while len(got) < len(sent):
            frame = tap.wait_frame(2.0)
            assert frame is not None, f"{len(got)} of {len(sent)} datagrams"
            for d in model.push(ip_of(frame)):
                sport, _, payload = udp_payload(d)
                got.add((sport, payload))
        assert got == sent and model.pending == 0


# ============================================================================ bridge -> Linux

def is_fragment(packet: bytes) -> bool:
    return parse(packet).is_fragment


def run_to_linux(tap: TapPort, sock: socket.socket, model: Reassembler, packets: list[bytes],
                 marker_id: int) -> tuple[list, list]:
    """Write packets to Linux and to the model: (what the socket got, what the model says)."""
    expected = []
    for p in packets:
        for d in model.push(p, time.monotonic()):
            u = udp_payload(d)
            if u is not None and u[1] == PORT:
                expected.append((str(ipaddress.IPv4Address(d[12:16])), u[0], u[2]))
        tap.send_ip(p)
    return drain(tap, sock, marker_id), expected


@pytest.mark.parametrize("mtu", [1500, 9000])
def test_bridge_to_linux(mtu):
    """fragment()'s fragments, in every order, reach a socket in the namespace whole."""
    rng = rng_for(f"b2l{mtu}")
    print_seed(f"bridge->linux mtu {mtu}")
    ident = 1000
    with Namespace() as ns, TapPort(ns, mtu=mtu, sim_ips=SIM_IPS) as tap:
        sock = receiver(ns, tap)
        sizes = SIZES_FIXED + [rng.randrange(1, 65508) for _ in range(6)]

        def batch(n_src: int = 1):
            nonlocal ident
            out = []
            for size in sizes:
                ident += 1
                src = SIM_IPS[ident % n_src]
                payload = rng.randbytes(size)
                d = udp_datagram(packed(src), packed(tap.ip), 4000 + ident % 1000, PORT, payload, ident)
                out.append(((src, 4000 + ident % 1000, payload), fragment(d, mtu)))
            return out

        orders: dict[str, Callable[[list], list[bytes]]] = {
            "forward": lambda b: [f for _, fs in b for f in fs],
            "reverse": lambda b: [f for _, fs in b for f in reversed(fs)],
            "random": lambda b: [f for _, fs in b for f in rng.sample(fs, len(fs))],
            # four datagrams at a time, fragments shuffled together (well within Linux's
            # 64-fragment ipfrag_max_dist per source)
            "interleaved": lambda b: [f for i in range(0, len(b), 4)
                                      for f in rng.sample([f for _, fs in b[i:i + 4] for f in fs],
                                                          sum(len(fs) for _, fs in b[i:i + 4]))],
            # every fragment twice, all reversed (a whole datagram sent twice would
            # rightly arrive twice, so those go once)
            "duplicated": lambda b: [f for _, fs in b for f in fs for _ in range(2 if len(fs) > 1 else 1)][::-1],
        }
        for name, order in orders.items():
            b = batch(n_src=3 if name == "interleaved" else 1)
            ident += 1
            got, expected = run_to_linux(tap, sock, Reassembler(), order(b), ident)
            assert sorted(got) == sorted(want for want, _ in b), f"{name}: datagrams lost or damaged"
            assert got == expected, f"{name}: delivery order differs from the model"

        # Impair between the fragments and Linux: duplicates and reordering by up to 8 frames.
        b = batch(n_src=2)
        impair = Impair(ImpairConfig(duplicate=0.3, reorder=0.3, reorder_by=8, select=is_fragment), seed=SEED)
        frames = []
        for p in (f for _, fs in b for f in fs):
            frames += impair.push(p)
        frames += impair.flush()
        ident += 1
        got, expected = run_to_linux(tap, sock, Reassembler(), frames, ident)
        print(f"  impair: {dict(impair.counters)}")
        assert impair.counters["duplicated"] and impair.counters["reordered"]
        # A datagram all of whose fragments are duplicated after it completed is rightly
        # delivered again (Linux keeps no memory of finished datagrams): compare as sets
        # here, exactly against the model.
        assert set(got) == {want for want, _ in b}
        assert got == expected


# ============================================================================ differential

@dataclass
class Dg:
    """A datagram to cut by hand: its header template and its IP payload."""

    hdr: bytes
    payload: bytes

    @property
    def src(self) -> str:
        return str(ipaddress.IPv4Address(self.hdr[12:16]))

    def whole(self) -> bytes:
        return bytes(self.hdr) + self.payload

    def piece(self, start: int, end: int, *, mf: bool | None = None, tos: int | None = None,
              data: bytes | None = None, bad_csum: bool = False, pad: bytes = b"", cut: int = 0) -> bytes:
        """The fragment carrying payload[start:end] (start a multiple of 8). `data`
        replaces its bytes, `pad` adds bytes past the total length, `cut` removes bytes
        from the end of the packet (leaving the total length as is)."""
        assert start % 8 == 0 and 0 <= start <= end
        body = self.payload[start:end] if data is None else data
        h = bytearray(self.hdr)
        h[2:4] = (len(h) + len(body)).to_bytes(2, "big")
        more = end < len(self.payload) if mf is None else mf
        h[6:8] = (start // 8 | (IP_MF if more else 0)).to_bytes(2, "big")
        if tos is not None:
            h[1] = tos
        h = bytearray(with_checksum(h))
        if bad_csum:
            h[10] ^= 0x5A
        pkt = bytes(h) + body + pad
        return pkt[:len(pkt) - cut]

    def frags(self, mtu: int = 1500) -> list[bytes]:
        return fragment(self.whole(), mtu)


class Env:
    def __init__(self, ns: Namespace, tap: TapPort, sock: socket.socket, rng: random.Random):
        self.ns, self.tap, self.sock, self.rng = ns, tap, sock, rng
        self.ident = 20000

    def next_id(self) -> int:
        self.ident += 1
        return self.ident

    def dg(self, size: int, *, src: str = SIM_IP, ident: int | None = None, tos: int = 0, proto: int = PROTO_UDP,
           options: bytes = b"", payload: bytes | None = None) -> Dg:
        """A UDP datagram to the namespace's socket with `size` bytes of UDP payload
        (proto != UDP keeps the bytes, changes the protocol field)."""
        ident = self.next_id() if ident is None else ident
        payload = self.rng.randbytes(size) if payload is None else payload
        d = bytearray(udp_datagram(packed(src), packed(self.tap.ip), 3000 + ident % 1000, PORT, payload, ident,
                                   tos=tos, options=options))
        ihl = (d[0] & 15) * 4
        d[9] = proto
        return Dg(with_checksum(d[:ihl]), bytes(d[ihl:]))

    def pod(self, ip_payload_len: int) -> Dg:
        """A UDP datagram whose IP payload is `ip_payload_len` bytes: above 65,515 it
        cannot exist whole (ping of death), so only its fragments are ever built."""
        ident = self.next_id()
        src, dst = packed(SIM_IP), packed(self.tap.ip)
        seg = struct.pack("!HHHH", 3000, PORT, ip_payload_len, 0) + self.rng.randbytes(ip_payload_len - 8)
        csum = ~ones_sum16(src + dst + struct.pack("!BBH", 0, PROTO_UDP, ip_payload_len) + seg) & 0xFFFF
        seg = seg[:6] + csum.to_bytes(2, "big") + seg[8:]
        return Dg(ipv4_header(src, dst, PROTO_UDP, 0, ident), seg)


Step = bytes | tuple


def udp_class(d: bytes) -> str:
    """What Linux's UDP does with a whole datagram: 'other' protocol, 'short' (IP payload
    under 8 bytes or UDP length outside 8..payload: UDP InErrors), 'csum' (bad checksum:
    InCsumErrors and InErrors, counted when the socket reads it) or 'ok'."""
    ip = parse(d)
    if ip.proto != PROTO_UDP:
        return "other"
    seg = d[ip.ihl:ip.tot_len]
    if len(seg) < 8 or not 8 <= struct.unpack("!H", seg[4:6])[0] <= len(seg):
        return "short"
    return "ok" if udp_payload(d) is not None else "csum"


def case_max_dist(others: int) -> Callable[[Env], list[Step]]:
    """A's first fragment, then `others` fragments of an unfinished datagram B from the
    same source, then the rest of A."""
    def build(env: Env) -> list[Step]:
        a = env.dg(3000)
        b = env.dg(8 * (others + 2))
        fa = a.frags()
        return [fa[0]] + [b.piece(8 * k, 8 * k + 8) for k in range(1, others + 1)] + fa[1:]
    return build


def case_timeout(env: Env) -> list[Step]:
    a = env.dg(3000)
    fa = a.frags()
    return [("ipfrag_time", 1), fa[0], ("ipfrag_time", 600), ("sleep", 1.4)] + fa[1:]


def refragmented(env: Env, options: bytes = b"") -> list[Step]:
    a = env.dg(5000, options=options)
    return [g for f in a.frags(1500) for g in fragment(f, 576)]


def interleave(*lists: list[bytes]) -> list[bytes]:
    out = []
    for i in range(max(map(len, lists))):
        out += [lst[i] for lst in lists if i < len(lst)]
    return out


def pod_pieces(env: Env) -> list[Step]:
    """Ping of death: fragments of a 65,536-byte datagram (20 + 65,516), each legal."""
    a = env.pod(65516)
    return [a.piece(o, min(o + 1480, 65516)) for o in range(0, 65516, 1480)]


def two_lasts(env: Env) -> list[Step]:
    """A forged short last fragment, then the real last fragment (different end), then
    the first: dropped at the second last, and the first alone starts a new context."""
    a = env.dg(1992)                       # IP payload 2000
    return [a.piece(1480, 1800, mf=False), a.piece(1480, 2000), a.piece(0, 1480)]


def same_key_sizes(env: Env) -> list[Step]:
    a = env.dg(3000)
    b = env.dg(4000, ident=env.ident)      # same source, destination, protocol and id as a
    return interleave(a.frags(), b.frags())


CASES: dict[str, Callable[[Env], list[Step]]] = {
    "in-order": lambda e: e.dg(6000).frags(),
    "reverse": lambda e: e.dg(6000).frags()[::-1],
    "overlap-tail": lambda e: (lambda a: [a.piece(0, 48), a.piece(40, 108)])(e.dg(100)),
    "overlap-reverse": lambda e: (lambda a: [a.piece(40, 108), a.piece(0, 48)])(e.dg(100)),
    "overlap-cover": lambda e: (lambda a: [a.piece(16, 32), a.piece(0, 48), a.piece(48, 108)])(e.dg(100)),
    "teardrop-inside-last": lambda e: (lambda a: [a.piece(0, 48), a.piece(16, 32, mf=False)])(e.dg(100)),
    "overlap-then-resend": lambda e: (lambda a: [a.piece(0, 48), a.piece(40, 108)] + a.frags(68))(e.dg(100)),
    "dup-exact": lambda e: (lambda f: [f[0], f[1], f[1], f[2], f[3]])(e.dg(5000).frags()),
    "dup-flood": lambda e: [g for g in e.dg(4000).frags() for _ in range(5)],
    "dup-flood-random": lambda e: (lambda f: e.rng.sample(f * 5, len(f) * 5))(e.dg(4000).frags()),
    "dup-after-complete": lambda e: (lambda f: f + f[::-1])(e.dg(4000).frags()),
    "dup-last": lambda e: (lambda f: [f[-1], f[-1]] + f[:-1][::-1] + [f[-1]])(e.dg(4000).frags()),
    "inside-run": lambda e: (lambda a: [a.piece(0, 16), a.piece(16, 32), a.piece(8, 24), a.piece(32, 108)])(e.dg(100)),
    "across-runs": lambda e: (lambda a: [a.piece(16, 32), a.piece(0, 16), a.piece(8, 24), a.piece(32, 108)])(e.dg(100)),
    "dup-different-bytes": lambda e: (lambda a: [a.piece(0, 16), a.piece(16, 32), a.piece(8, 24, data=bytes(16)),
                                                 a.piece(32, 108)])(e.dg(100)),
    "dup-different-first": lambda e: (lambda a: [a.piece(0, 1480, data=bytes(1480)), a.piece(0, 1480),
                                                 a.piece(1480, 3008)])(e.dg(3000)),
    "ping-of-death": lambda e: pod_pieces(e),
    "ping-of-death-reverse": lambda e: pod_pieces(e)[::-1],
    "max-size-65535": lambda e: e.rng.sample(e.dg(65507).frags(), 45),
    "two-lasts": two_lasts,
    "last-short": lambda e: (lambda a: [a.piece(1480, 2960), a.piece(1480, 2000, mf=False)])(e.dg(3000)),
    "beyond-end": lambda e: (lambda a: [a.piece(1480, 2000, mf=False), a.piece(2000, 2960, mf=True)])(e.dg(3000)),
    "bad-checksum": lambda e: (lambda f: [f[0], bytes(f[1][:10]) + bytes([f[1][10] ^ 1]) + f[1][11:], f[2], f[1]])(
        e.dg(4000).frags()),
    "bad-checksum-only": lambda e: (lambda a: [a.piece(0, 1480), a.piece(1480, 3008, bad_csum=True)])(e.dg(3000)),
    "tiny-first": lambda e: (lambda a: [a.piece(0, 8), a.piece(8, 1488), a.piece(1488, 1508)])(e.dg(1500)),
    "tiny-all": lambda e: (lambda a: [a.piece(o, min(o + 8, 308)) for o in range(0, 308, 8)])(e.dg(300)),
    "tiny-all-reverse": lambda e: (lambda a: [a.piece(o, min(o + 8, 308)) for o in range(0, 308, 8)][::-1])(e.dg(300)),
    "odd-trim-fill": lambda e: (lambda a: [a.piece(0, 13), a.piece(8, 108)])(e.dg(100)),
    "odd-trim-gap": lambda e: (lambda a: [a.piece(0, 13), a.piece(16, 108), a.piece(8, 16)])(e.dg(100)),
    "odd-trim-chain": lambda e: (lambda a: [a.piece(0, 13), a.piece(8, 21), a.piece(16, 108)])(e.dg(100)),
    "short-nonlast": lambda e: (lambda a: [a.piece(0, 1480), a.piece(1480, 1485), a.piece(1480, 3008),
                                           a.piece(0, 1480)])(e.dg(3000)),
    "zero-length": lambda e: (lambda a: [a.piece(0, 1480), a.piece(1480, 1480, mf=True), a.piece(1480, 3008)])(
        e.dg(3000)),
    "zero-length-last": lambda e: (lambda a: [a.piece(0, 1480), a.piece(1480, 1480, mf=False)])(e.dg(3000)),
    "id-collision-sources": lambda e: (lambda i: interleave(e.dg(5000, ident=i).frags(),
                                                            e.dg(5000, src=SIM_IPS[1], ident=i).frags()))(e.next_id()),
    "id-collision-protocols": lambda e: (lambda i: interleave(e.dg(5000, ident=i, proto=253).frags(),
                                                              e.dg(5000, ident=i).frags()))(e.next_id()),
    "id-collision-same-key": lambda e: (lambda i: interleave(e.dg(5000, ident=i).frags(),
                                                             e.dg(5000, ident=i).frags()))(e.next_id()),
    "id-collision-same-key-sizes": same_key_sizes,
    "ecn-not-ect-with-ect0": lambda e: (lambda a: [a.piece(0, 1480, tos=0), a.piece(1480, 3008, tos=2)])(e.dg(3000)),
    "ecn-ect0-with-ce": lambda e: (lambda a: [a.piece(0, 1480, tos=2), a.piece(1480, 3008, tos=3)])(e.dg(3000)),
    "ecn-ect0-with-ect1": lambda e: (lambda a: [a.piece(0, 1480, tos=2), a.piece(1480, 3008, tos=1)])(e.dg(3000)),
    "max-dist-63": case_max_dist(63),
    "max-dist-64": case_max_dist(64),
    "refragmented": refragmented,
    "refragmented-options": lambda e: refragmented(e, bytes([0x94, 4, 0, 0, 0x44, 12, 5, 0]) + bytes(8)),
    "options-random-order": lambda e: (lambda f: e.rng.sample(f, len(f)))(
        e.dg(9000, options=bytes([0x94, 4, 0, 0, 0x44, 12, 5, 0]) + bytes(8)).frags()),
    "padded-tiny-last": lambda e: (lambda a: [a.piece(0, 8), a.piece(8, 10, pad=bytes(38))])(e.dg(2)),
    "truncated": lambda e: (lambda a: [a.piece(0, 1480, cut=100), a.piece(1480, 3008), a.piece(0, 1480)])(e.dg(3000)),
    "whole-datagram-same-key": lambda e: (lambda i: (lambda f, w: [f[0], w] + f[1:])(
        e.dg(3000, ident=i).frags(), e.dg(500, ident=i).whole()))(e.next_id()),
    "many-interleaved-impaired": lambda e: impaired_mix(e),
    "timeout": case_timeout,
}


def impaired_mix(env: Env) -> list[Step]:
    dgs = [env.dg(env.rng.randrange(1, 20000), src=SIM_IPS[i % 3]) for i in range(6)]
    impair = Impair(ImpairConfig(duplicate=0.2, reorder=0.4, reorder_by=6), seed=env.rng.randrange(1 << 30))
    out = []
    for f in interleave(*(d.frags() for d in dgs)):
        out += impair.push(f)
    return out + impair.flush()


FUZZ_SEQUENCES = 400


def fuzz_case(env: Env, rng: random.Random) -> list[Step]:
    """Random hostile pieces of one or two small datagrams: random offsets (8-aligned),
    random lengths (often not multiples of 8), stray MF, altered bytes, duplicates; half
    the time the proper fragments follow in random order, so that some complete."""
    size = rng.randrange(8, 300)
    dgs = [env.dg(size)]
    if rng.random() < 0.3:
        dgs.append(env.dg(rng.randrange(8, 300), ident=env.ident))   # same key, other bytes
    out = []
    for d in dgs:
        n = len(d.payload)
        for _ in range(rng.randrange(1, 7)):
            start = 8 * rng.randrange(0, n // 8 + 1)
            end = start + (8 * rng.randrange(1, 6) if rng.random() < 0.5 else rng.randrange(0, 50))
            end = min(end, n) if rng.random() < 0.9 else end
            if end > n:
                data = d.payload[start:] + rng.randbytes(end - max(start, n))
            else:
                data = d.payload[start:end] if rng.random() < 0.8 else rng.randbytes(end - start)
            mf = end < n if rng.random() < 0.85 else not end < n
            tos = rng.choice((0, 1, 2, 3)) if rng.random() < 0.1 else None
            out.append(d.piece(start, end, mf=mf, data=data[:end - start], tos=tos, bad_csum=rng.random() < 0.05))
        if rng.random() < 0.5:
            proper = [d.piece(o, min(o + 48, n)) for o in range(0, n, 48)]
            out += rng.sample(proper, len(proper))
    rng.shuffle(out)
    return out


@pytest.fixture(scope="module")
def diff_env():
    rng = rng_for("differential")
    with Namespace() as ns, TapPort(ns, mtu=9000, sim_ips=SIM_IPS) as tap:
        ns.sysctl("net/ipv4/ipfrag_time", 600)   # no stray timeouts while the cases run
        yield Env(ns, tap, receiver(ns, tap), rng)


def run_differential(env: Env, name: str, steps: list[Step]) -> dict:
    """Feed steps to Linux and a fresh model; compare deliveries and MIB deltas."""
    model = Reassembler(timeout=600)
    before = env.ns.mib()
    expected = []
    udp = Counter()
    for step in steps:
        if isinstance(step, tuple):
            what, value = step
            if what == "sleep":
                time.sleep(value)
            elif what == "ipfrag_time":
                env.ns.sysctl("net/ipv4/ipfrag_time", value)
                model.timeout = value
            continue
        for d in model.push(step, time.monotonic()):
            verdict = udp_class(d)
            udp[verdict] += 1
            u = udp_payload(d)
            if verdict == "ok" and u[1] == PORT:
                expected.append((str(ipaddress.IPv4Address(d[12:16])), u[0], u[2]))
        env.tap.send_ip(step)
    got = drain(env.tap, env.sock, env.next_id())
    model.expire(time.monotonic())
    after = env.ns.mib()
    linux = {k: after[f"{g}.{k}"] - before[f"{g}.{k}"] for k, g in MIB_KEYS.items()}
    for k in ("InCsumErrors", "InErrors"):
        linux[f"Udp.{k}"] = after[f"Udp.{k}"] - before[f"Udp.{k}"]
    mine = model.linux_mib()
    mine["Udp.InCsumErrors"] = udp["csum"]
    mine["Udp.InErrors"] = udp["csum"] + udp["short"]
    outcome = {k: v for k, v in sorted(model.counters.items()) if v}
    assert got == expected, (f"{name}: Linux delivered {[(s, len(p)) for s, _, p in got]}, model "
                             f"{[(s, len(p)) for s, _, p in expected]}; model counters {outcome}")
    assert linux == mine, f"{name}: Linux MIB deltas {linux} != model {mine}; model counters {outcome}"
    return {"delivered": len(got), **outcome}


@pytest.mark.parametrize("name", list(CASES))
def test_differential(diff_env, name):
    """Linux and Reassembler deliver the same datagrams from the same hostile sequence."""
    result = run_differential(diff_env, name, CASES[name](diff_env))
    print(f"  {name}: {result}")


EXPECTED_DELIVERIES = {
    # what each named case must do (guards against both sides being wrong the same way)
    "in-order": 1, "reverse": 1, "overlap-tail": 0, "overlap-reverse": 0, "overlap-cover": 0,
    "teardrop-inside-last": 0, "overlap-then-resend": 1, "dup-exact": 1, "dup-flood": 1, "dup-last": 1,
    "inside-run": 1, "across-runs": 0, "dup-different-bytes": 1, "dup-different-first": 0, "ping-of-death": 0,
    "ping-of-death-reverse": 0, "max-size-65535": 1, "two-lasts": 0, "last-short": 0, "beyond-end": 0,
    "bad-checksum": 1, "bad-checksum-only": 0, "tiny-first": 1, "tiny-all": 1, "tiny-all-reverse": 1,
    "odd-trim-fill": 1, "odd-trim-gap": 1, "odd-trim-chain": 1, "short-nonlast": 1, "zero-length": 0,
    "zero-length-last": 0, "id-collision-sources": 2, "id-collision-protocols": 1, "ecn-not-ect-with-ect0": 0,
    "ecn-ect0-with-ce": 1, "ecn-ect0-with-ect1": 1, "max-dist-63": 1, "max-dist-64": 0, "refragmented": 1,
    "refragmented-options": 1, "options-random-order": 1, "padded-tiny-last": 1, "truncated": 1,
    "whole-datagram-same-key": 2, "many-interleaved-impaired": None, "timeout": 0, "dup-flood-random": None,
    "dup-after-complete": 2, "id-collision-same-key": 1,
    "id-collision-same-key-sizes": 1,
}


def test_differential_expectations(diff_env):
    """The named cases also do what the rules say (model alone, no kernel)."""
    assert set(EXPECTED_DELIVERIES) == set(CASES)
    for name, want in EXPECTED_DELIVERIES.items():
        if want is None:        # random sequence: only the differential decides
            continue
        model = Reassembler()
        now, n = 0.0, 0
        for step in CASES[name](diff_env):
            if isinstance(step, tuple):
                if step[0] == "ipfrag_time":
                    model.timeout = step[1]
                elif step[0] == "sleep":
                    now += step[1]
                continue
            n += sum(udp_class(d) == "ok" for d in model.push(step, now))
        assert n == want, f"{name}: model delivers {n}, rules say {want}; {dict(model.counters)}"


def test_differential_fuzz(diff_env):
    """Seeded random hostile sequences: Linux and the model agree on every one."""
    rng = rng_for("fuzz")
    totals = {}
    for i in range(FUZZ_SEQUENCES):
        result = run_differential(diff_env, f"fuzz {i}", fuzz_case(diff_env, rng))
        for k, v in result.items():
            totals[k] = totals.get(k, 0) + v
    print(f"  fuzz totals over {FUZZ_SEQUENCES} sequences: {totals}")
    assert totals.get("overlap") and totals.get("duplicate") and totals.get("reassembled")
