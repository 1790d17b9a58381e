"""Fragment traffic for the reassembly benches (block and whole NIC): random UDP datagrams
cut by `ipfrag.fragment` in forward, reverse and random order, interleaved, with
duplicates and VLAN tags; and the hostile sequences Linux's rules are about."""
from __future__ import annotations

import random
import struct

from offnic_sim.net import ipfrag

ETH = bytes.fromhex("020000000001" "020000000002")  # to the driver model's station address (DEFAULT_MAC)


def eth(packet: bytes, vlan: bool = False) -> bytes:
    return ETH + (struct.pack(">HH", 0x8100, 5) if vlan else b"") + b"\x08\x00" + packet


def addr(rng: random.Random, net: int = 10) -> bytes:
    return bytes([net, rng.randrange(4), rng.randrange(4), rng.randrange(1, 250)])


def _datagram(rng: random.Random, size: int, ident: int | None = None, src: bytes | None = None,
             dst: bytes | None = None, tos: int = 0, net: int = 10) -> bytes:
    return ipfrag.udp_datagram(src or addr(rng, net), dst or addr(rng),  rng.randrange(1024, 65535), 9,
                               rng.randbytes(size), rng.randrange(65536) if ident is None else ident, tos=tos)


def shuffled(rng: random.Random, frags: list[bytes]) -> list[bytes]:
    how = rng.choice(["forward", "reverse", "random", "random"])
    if how == "reverse":
        return frags[::-1]
    if how == "random":
        return rng.sample(frags, len(frags))
    return list(frags)


def interleave(rng: random.Random, streams: list[list[bytes]]) -> list[bytes]:
    out = []
    streams = [list(s) for s in streams if s]
    while streams:
        s = rng.choice(streams)
        out.append(s.pop(0))
        if not s:
            streams.remove(s)
    return out


def random_traffic(rng: random.Random, n: int, max_size: int = 20_000, dups: float = 0.3,
                   mtus: tuple[int, ...] = (576, 1500, 1500, 9000), net: int = 10, dst: bytes | None = None,
                   vlan: float = 0.2) -> list[bytes]:
    streams = []
    for _ in range(n):
        size = rng.choice([rng.randrange(0, 2000), rng.randrange(0, max_size), rng.randrange(0, max_size)])
        mtu = rng.choice(mtus)
        frags = shuffled(rng, ipfrag.fragment(datagram(rng, size, net=net, dst=dst), mtu))
        if rng.random() < dups:
            frags = frags + [rng.choice(frags)] * rng.randrange(1, 3) if len(frags) > 1 else frags
        tagged = rng.random() < vlan
        streams.append([eth(f, tagged) for f in frags])
    return interleave(rng, streams)


def frag(d: bytes, off: int, n: int, mf: bool, *, ident: int | None = None, csum_ok: bool = True,
         tos: int | None = None) -> bytes:
    """A raw fragment of datagram `d`: its payload bytes [off, off+n) (padded with random-ish
    bytes if past the end), offset `off` (a multiple of 8), MF as given."""
    ip = ipfrag.parse(d)
    body = d[ip.ihl:]
    data = (body + bytes(range(256)) * 300)[off:off + n]
    flags = (ipfrag.IP_MF if mf else 0) | (off >> 3)
    h = ipfrag.ipv4_header(ip.src, ip.dst, ip.proto, n, ip.ident if ident is None else ident,
                           frag_off=flags, tos=ip.tos if tos is None else tos)
    if not csum_ok:
        h = h[:10] + bytes([h[10] ^ 0x5A, h[11]]) + h[12:]
    return h + data


datagram = _datagram


def hostile(rng: random.Random, dst: bytes | None = None) -> list[bytes]:
    """Linux's rules at work; `dst`: every datagram's destination (default random)."""
    def datagram(rng, size, **kw):
        return _datagram(rng, size, dst=dst, **kw)
    out: list[bytes] = []
    d = datagram(rng, 3000)
    # teardrop: the second fragment starts inside the first
    out += [eth(frag(d, 0, 1480, True)), eth(frag(d, 1000, 1480, True)), eth(frag(d, 2480, 528, False))]
    d = datagram(rng, 3000)
    # exact duplicate kept, then completion
    fs = ipfrag.fragment(d, 1500)
    out += [eth(fs[0]), eth(fs[0]), eth(fs[1]), eth(fs[2])]
    # ping of death: offset 65528, 100 bytes
    d = datagram(rng, 100)
    out += [eth(frag(d, 0, 104, True)), eth(frag(d, 65528, 100, False))]
    # tiny and empty fragments
    d = datagram(rng, 100)
    out += [eth(frag(d, 0, 8, True)), eth(frag(d, 8, 0, True)), eth(frag(d, 8, 100, False))]
    # second last fragment with another end; data past a known end
    d = datagram(rng, 2000)
    out += [eth(frag(d, 1480, 528, False)), eth(frag(d, 1480, 520, False))]
    d = datagram(rng, 2000)
    out += [eth(frag(d, 800, 200, False)), eth(frag(d, 0, 1480, True))]
    # non-last payload not a multiple of 8: trimmed (Linux), then the rest fills in
    d = datagram(rng, 1000)
    out += [eth(frag(d, 0, 500, True)), eth(frag(d, 496, 512, False))]
    # ID collision across sources: two datagrams with one id, interleaved
    a, b = datagram(rng, 4000, ident=77), datagram(rng, 4000, ident=77)
    out += [eth(f) for f in interleave(rng, [ipfrag.fragment(a, 1500), ipfrag.fragment(b, 1500)])]
    # bad header checksum (dropped alone; the good copy completes), truncated
    d = datagram(rng, 2000)
    fs = ipfrag.fragment(d, 1500)
    out += [eth(frag(d, 0, 1480, True, csum_ok=False)), eth(fs[1]), eth(fs[0])]
    d = datagram(rng, 2000)
    out += [eth(ipfrag.fragment(d, 1500)[0])[:-100]]
    # ECN: Not-ECT mixed with ECT(0) drops; CE with ECT(0) reassembles with CE
    d = datagram(rng, 2000)
    out += [eth(frag(d, 0, 1480, True, tos=0)), eth(frag(d, 1480, 528, False, tos=2))]
    d = datagram(rng, 2000, tos=2)
    out += [eth(frag(d, 0, 1480, True, tos=3)), eth(frag(d, 1480, 528, False, tos=2))]
    # overlap across two runs (Linux: the runs rule) and a duplicate inside one run
    d = datagram(rng, 4000)
    out += [eth(frag(d, 1480, 1480, True)), eth(frag(d, 0, 1480, True)), eth(frag(d, 1000, 1000, True))]
    d = datagram(rng, 4000)
    out += [eth(frag(d, 0, 1480, True)), eth(frag(d, 1480, 1480, True)), eth(frag(d, 1000, 1000, True)),
            eth(frag(d, 2960, 1048, False))]
    # non-fragments and a non-IP frame in between
    out += [eth(datagram(rng, 100)), ETH + b"\x86\xdd" + bytes(60)]
    return out
