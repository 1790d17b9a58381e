"""Frames for the whole-NIC offload tests (test_nic_offloads.py), built with scapy from a
`random.Random` the test passes in (so a seed replays them):

- `ip_packet`: Ethernet / [802.1Q] / IPv4 (maybe with options) or IPv6 / TCP (maybe with
  options) or UDP / payload, about `size` bytes long, random addresses and ports;
- `linux_partial`: such a packet as Linux hands it to a driver with CHECKSUM_PARTIAL (the
  L4 checksum field holds the folded pseudo-header sum), with csum_start and the field's
  offset; optionally with a payload that makes the checksum compute to 0;
- `non_ip_frame`: an Ethernet frame of another EtherType (or an 802.3 length);
- `pad60`: what the MAC puts on the wire (and the NIC's parsers see) for a short frame.

The checksum and RSS references themselves are in tests/offload (checksum_ref.py,
rss_model.py), used unchanged.
"""
from __future__ import annotations

import ipaddress
import logging
import random
from dataclasses import dataclass

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.layers.inet import IP, TCP, UDP, IPOption  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import Dot1Q, Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402

from checksum_ref import force_zero_result, pseudo_header_sum  # noqa: E402

KINDS = ("ipv4_tcp", "ipv4_udp", "ipv6_tcp", "ipv6_udp")


def mac(rng: random.Random) -> str:
    b = bytearray(rng.randbytes(6))
    b[0] &= 0xFE  # unicast
    return ":".join(f"{x:02x}" for x in b)


def ip4(rng: random.Random) -> str:
    return str(ipaddress.IPv4Address(rng.getrandbits(32)))


def ip6(rng: random.Random) -> str:
    return str(ipaddress.IPv6Address(rng.getrandbits(128)))


def ip_packet(rng: random.Random, kind: str, size: int, vlan: bool = False, l4_csum: int | None = None,
              ip_options: bool | None = None, tcp_options: bool | None = None):
    """A scapy packet of `kind` (KINDS), `size` bytes long if the headers fit (else just
    the headers). `l4_csum`: the L4 checksum field (None: scapy computes the right one)."""
    l2 = Ether(src=mac(rng), dst=mac(rng))
    if vlan:
        l2 = l2 / Dot1Q(vlan=rng.randrange(1, 4095), prio=rng.randrange(8))
    if kind.startswith("ipv4"):
        kw = dict(src=ip4(rng), dst=ip4(rng), ttl=rng.randint(1, 255), id=rng.randrange(1 << 16))
        if ip_options if ip_options is not None else rng.random() < 0.15:
            kw["options"] = IPOption(b"\x01" * (4 * rng.randint(1, 10)))  # NOPs
        if rng.random() < 0.3:
            kw["flags"] = "DF"
        l3 = IP(**kw)
    else:
        l3 = IPv6(src=ip6(rng), dst=ip6(rng), hlim=rng.randint(1, 255), fl=rng.randrange(1 << 20))
    ports = dict(sport=rng.randrange(1 << 16), dport=rng.randrange(1 << 16))
    if kind.endswith("tcp"):
        opts = []
        if tcp_options if tcp_options is not None else rng.random() < 0.3:
            opts = [("NOP", None), ("NOP", None), ("Timestamp", (rng.getrandbits(32), rng.getrandbits(32)))]
        l4 = TCP(**ports, seq=rng.getrandbits(32), ack=rng.getrandbits(32), flags="PA",
                 window=rng.randrange(1 << 16), options=opts, chksum=l4_csum)
    else:
        l4 = UDP(**ports, chksum=l4_csum)
    hdr = l2 / l3 / l4
    payload = rng.randbytes(max(0, size - len(hdr)))
    return Ether(bytes(hdr / Raw(payload)))


@dataclass
class PartialPacket:
    """A frame with CHECKSUM_PARTIAL: `csum_start` (the L4 header) and `csum_insert`
    (the checksum field, csum_start + csum_offset), as the driver passes them."""
    data: bytes
    csum_start: int
    csum_insert: int
    desc: str


def l4_offset(pkt) -> tuple[int, int, int]:
    """(offset of the L4 header, IP protocol, checksum field offset within it)."""
    raw = bytes(pkt)
    if TCP in pkt:
        return len(raw) - len(bytes(pkt[TCP])), 6, 16
    return len(raw) - len(bytes(pkt[UDP])), 17, 6


def linux_partial(rng: random.Random, kind: str, size: int, vlan: bool = False, zero: bool = False) -> PartialPacket:
    """A packet as Linux hands it over with CHECKSUM_PARTIAL. `zero`: two payload bytes
    chosen so that the checksum computes to 0 (it must go out as 0xFFFF)."""
    pkt = ip_packet(rng, kind, size, vlan, l4_csum=0)
    raw = bytearray(bytes(pkt))
    start, proto, field = l4_offset(pkt)
    seed = pseudo_header_sum(pkt, len(raw) - start, proto)
    raw[start + field:start + field + 2] = seed.to_bytes(2, "big")
    hdr_end = start + (8 if proto == 17 else len(bytes(pkt[TCP])) - len(bytes(pkt[TCP].payload)))
    desc = f"{kind}{' vlan' if vlan else ''} {len(raw)} B"
    if zero and len(raw) - hdr_end >= 2:
        raw = bytearray(force_zero_result(bytes(raw), start, rng.randint(hdr_end, len(raw) - 2)))
        desc += " (checksum computes to 0)"
    return PartialPacket(bytes(raw), start, start + field, desc)


def non_ip_frame(rng: random.Random, size: int, vlan: bool = False) -> bytes:
    """A frame no RSS rule hashes: another EtherType, or an 802.3 length field."""
    etype = rng.choice([0x88B5, 0x88CC, 0x8847, 0x0806, 0x86DC, 0x0801, 0x88A8, 0x05DC, 0x0040])
    hdr = bytes.fromhex(mac(rng).replace(":", "")) + bytes.fromhex(mac(rng).replace(":", ""))
    if vlan:
        hdr += b"\x81\x00" + rng.randrange(1 << 16).to_bytes(2, "big")
    hdr += etype.to_bytes(2, "big")
    return hdr + rng.randbytes(max(0, size - len(hdr)))


def pad60(frame: bytes) -> bytes:
    """A frame as it is on the wire (without FCS): zero-padded to the 60-byte minimum."""
    return frame + bytes(max(0, 60 - len(frame)))
