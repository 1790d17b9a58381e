"""Reference models for the checksum offload benches (TxChecksum, RxChecksum), and real
packets built with scapy the way the Linux stack hands them to a NIC.

Everything here is plain Python, independent of the RTL: the one's complement sum is
written straight from RFC 1071 (16-bit big-endian words from the start offset, an odd
tail padded with a zero byte, end-around carry).
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass

# TxChecksum command in s_axis_tuser: {offset[15:0], start[15:0], enable} (bit 0 = enable).
CMD_WIDTH = 33


def pack_cmd(enable: bool, start: int, offset: int) -> int:
    assert 0 <= start < 1 << 16 and 0 <= offset < 1 << 16
    return int(enable) | start << 1 | offset << 17


def ones_sum(data: bytes, start: int = 0) -> int:
    """Folded 16-bit one's complement sum (not complemented) of data[start:], words in
    network byte order aligned to `start`. 0 when there is nothing to sum."""
    seg = bytes(data[start:])
    if len(seg) % 2:
        seg += b"\0"
    s = sum(struct.unpack(f">{len(seg) // 2}H", seg))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def ones_sum_bytewise(data: bytes, start: int = 0) -> int:
    """The same sum by a different route (each byte weighted 256 or 1 by its distance from
    `start`), to cross-check ones_sum itself."""
    s = 0
    for i, b in enumerate(data[start:]):
        s += b << 8 if i % 2 == 0 else b
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def ones_add(a: int, b: int) -> int:
    s = a + b
    return (s & 0xFFFF) + (s >> 16)


def ones_sub(a: int, b: int) -> int:
    return ones_add(a, ~b & 0xFFFF)


@dataclass
class TxCase:
    """One frame for TxChecksum: what goes in and what must come out."""

    data: bytes
    enable: bool
    start: int
    offset: int

    @property
    def cmd(self) -> int:
        return pack_cmd(self.enable, self.start, self.offset)

    @property
    def bad(self) -> bool:
        n = len(self.data)
        return self.enable and (self.start >= n or self.offset + 2 > n)

    def expected(self) -> bytes:
        """CHECKSUM_PARTIAL: the complement of the sum from `start` to the end of the frame
        (the field holds the pseudo-header seed and is included), written big-endian at
        `offset`; 0 goes out as 0xFFFF. Disabled or bad commands: the frame unchanged."""
        if not self.enable or self.bad:
            return self.data
        c = ~ones_sum(self.data, self.start) & 0xFFFF
        out = bytearray(self.data)
        out[self.offset:self.offset + 2] = (c or 0xFFFF).to_bytes(2, "big")
        return bytes(out)


def force_zero_result(data: bytes, start: int, offset: int) -> bytes:
    """Rewrite the two bytes at `offset` (inside the summed range) so that the sum from
    `start` becomes 0xFFFF, i.e. the checksum computes to 0 and must go out as 0xFFFF."""
    assert start <= offset and offset + 2 <= len(data)
    buf = bytearray(data)
    buf[offset:offset + 2] = b"\0\0"
    rest = ones_sum(bytes(buf), start)
    need = (0xFFFF - rest) or 0xFFFF  # the field's value as it counts in the sum
    if (offset - start) % 2:  # the field straddles two words: its bytes count swapped
        need = ((need & 0xFF) << 8) | (need >> 8)
    buf[offset:offset + 2] = need.to_bytes(2, "big")
    assert ones_sum(bytes(buf), start) == 0xFFFF
    return bytes(buf)


def random_tx_case(n: int, width: int, kinds: dict[str, float] | None = None) -> TxCase:
    """A random frame of `n` bytes with a random command: mostly good ones (odd starts,
    offsets near the end and across beat boundaries, sometimes a field that makes the sum
    0), some disabled, some bad."""
    kinds = kinds or {"good": 0.72, "zero": 0.06, "off": 0.1, "bad": 0.12}
    data = random.randbytes(n)
    kind = random.choices(list(kinds), weights=list(kinds.values()))[0]
    if kind == "off":
        return TxCase(data, False, random.randrange(1 << 16), random.randrange(1 << 16))
    if kind == "bad" or n < 2:  # a 1-byte frame cannot hold a 2-byte field: always bad
        if random.random() < 0.5:  # start at or beyond the end
            start = random.choice([n, n + 1, random.randint(n, 0xFFFF), 0xFFFF])
            offset = random.choice([0, random.randrange(max(1, n - 1)), random.randrange(1 << 16)])
        else:  # the field runs past the end
            start = random.randrange(n)
            offset = random.choice([n - 1, n, n + 1, random.randint(n - 1, 0xFFFF), 0xFFFF])
        case = TxCase(data, True, start, offset)
        assert case.bad
        return case
    # Good: start anywhere in the frame (weighted to odd values, the first and last beat),
    # the field anywhere it fits (weighted to the end, beat boundaries, right at start).
    start = random.choice([
        random.randrange(n), random.randrange(n) | 1 if n > 1 else 0, random.randrange(min(n, width)),
        max(0, n - 1 - random.randrange(min(n, 2 * width))), 0, 14 if n > 14 else 0,
    ])
    start = min(start, n - 1)
    hi = n - 2
    if kind == "zero":  # the field must lie in the summed range
        if start > hi:
            start = random.randrange(hi + 1)
        lo = start
    else:
        lo = 0
    edge = [v for v in (hi, hi - 1, start, start + 1, width - 1, 2 * width - 1, (hi // width) * width - 1) if lo <= v <= hi]
    offset = random.choice([random.randint(lo, hi), random.randint(lo, hi), random.choice(edge or [hi])])
    if kind == "zero":
        data = force_zero_result(data, start, offset)
    case = TxCase(data, True, start, offset)
    assert not case.bad
    return case


# ---- real packets ---------------------------------------------------------------------


@dataclass
class Packet:
    """A frame as Linux hands it to the driver with CHECKSUM_PARTIAL: the L4 checksum
    field holds the folded pseudo-header sum (`~csum_tcpudp_magic(..., 0)`), csum_start
    is the L4 header's offset and csum_offset the field's offset within it."""

    name: str
    data: bytes
    csum_start: int
    csum_field: int  # absolute: csum_start + csum_offset

    def tx_case(self) -> TxCase:
        return TxCase(self.data, True, self.csum_start, self.csum_field)


def pseudo_header_sum(pkt, l4_len: int, proto: int) -> int:
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6, inet_pton
    import socket

    if IP in pkt:
        ip = pkt[IP]
        ph = socket.inet_aton(ip.src) + socket.inet_aton(ip.dst) + struct.pack(">BBH", 0, proto, l4_len)
    else:
        ip6 = pkt[IPv6]
        ph = (inet_pton(socket.AF_INET6, ip6.src) + inet_pton(socket.AF_INET6, ip6.dst)
              + struct.pack(">I3xB", l4_len, proto))
    return ones_sum(ph)


def linux_packets(count: int, max_payload: int = 9000 - 60) -> list[Packet]:
    """Random IPv4 UDP/TCP and IPv6 UDP/TCP packets, with and without an 802.1Q tag,
    payloads from empty to jumbo, seeded as Linux does for CHECKSUM_PARTIAL."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1Q, Ether

    kinds = ["ipv4_udp", "ipv4_tcp", "ipv6_udp", "ipv6_tcp"]
    out = []
    for i in range(count):
        kind = kinds[i % len(kinds)]
        vlan = (i // len(kinds)) % 2 == 1
        size = random.choice([0, 1, random.randint(2, 64), random.randint(65, 1460), random.randint(1461, max_payload)])
        payload = random.randbytes(size)
        l2 = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        if vlan:
            l2 = l2 / Dot1Q(vlan=random.randint(1, 4094), prio=random.randrange(8))
        if kind.startswith("ipv4"):
            l3 = IP(src=f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randint(1, 254)}",
                    dst=f"192.168.{random.randrange(256)}.{random.randint(1, 254)}", ttl=64, id=random.randrange(1 << 16))
        else:
            l3 = IPv6(src=f"fd00::{random.randrange(1 << 16):x}:{random.randrange(1 << 16):x}",
                      dst=f"2001:db8::{random.randrange(1 << 16):x}", hlim=64)
        if kind.endswith("udp"):
            l4 = UDP(sport=random.randint(1024, 65535), dport=random.choice([53, 4789, 9999]), chksum=0)
            proto, field = 17, 6
        else:
            l4 = TCP(sport=random.randint(1024, 65535), dport=random.choice([80, 443]), seq=random.randrange(1 << 32),
                     ack=random.randrange(1 << 32), flags="PA", window=random.randrange(1 << 16), chksum=0,
                     options=random.choice([[], [("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]]))
            proto, field = 6, 16
        pkt = Ether(bytes(l2 / l3 / l4 / payload))
        raw = bytearray(bytes(pkt))
        l4_layer = pkt[UDP] if proto == 17 else pkt[TCP]
        start = len(raw) - len(bytes(l4_layer))
        seed = pseudo_header_sum(pkt, len(raw) - start, proto)
        raw[start + field:start + field + 2] = seed.to_bytes(2, "big")
        out.append(Packet(f"{kind}{'_vlan' if vlan else ''}_{size}B", bytes(raw), start, start + field))
    return out


def l4_checksum_ok(frame: bytes) -> tuple[bool, str]:
    """Does scapy find the L4 checksum of this Ethernet frame valid? Two ways: scapy's
    in4_chksum/in6_chksum over the segment as sent (pseudo-header included) must give 0,
    and scapy's own recomputation (field cleared, packet rebuilt) must equal the field,
    up to the one's complement zero (0x0000 and 0xFFFF are the same TCP checksum)."""
    from scapy.layers.inet import IP, TCP, UDP, in4_chksum
    from scapy.layers.inet6 import IPv6, in6_chksum
    from scapy.layers.l2 import Ether

    pkt = Ether(frame)
    l4 = pkt[UDP] if UDP in pkt else pkt[TCP]
    proto = 17 if UDP in pkt else 6
    seg = bytes(l4)
    if IP in pkt:
        verify = in4_chksum(proto, pkt[IP], seg)
    else:
        verify = in6_chksum(proto, pkt[IPv6], seg)
    got = l4.chksum
    fresh = pkt.copy()
    (fresh[UDP] if proto == 17 else fresh[TCP]).chksum = None
    want = (Ether(bytes(fresh))[UDP] if proto == 17 else Ether(bytes(fresh))[TCP]).chksum
    same = got == want or (proto == 6 and {got, want} <= {0, 0xFFFF})
    if proto == 17 and got == 0:
        return False, "UDP checksum 0 (means 'none')"
    return verify == 0 and same, f"field {got:#06x}, scapy computes {want:#06x}, in_chksum over segment {verify:#06x}"


def linux_complete_ok(frame: bytes, csum: int) -> bool:
    """Use an RX CHECKSUM_COMPLETE value (sum from byte 14) the way Linux does: pull the
    VLAN tag and the IP header out of it (skb_postpull_rcsum), add the pseudo-header, and
    the L4 checksum is good when the result is 0xFFFF."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether

    pkt = Ether(frame)
    proto = 17 if UDP in pkt else 6
    l4 = pkt[UDP] if proto == 17 else pkt[TCP]
    start = len(frame) - len(bytes(l4))
    s = ones_sub(csum, ones_sum(frame[14:start]))  # pulled: the VLAN tag, the IP header
    s = ones_add(s, pseudo_header_sum(pkt, len(frame) - start, proto))
    return s == 0xFFFF and (IP in pkt or IPv6 in pkt)
