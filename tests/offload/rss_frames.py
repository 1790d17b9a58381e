"""Frames for the RSS benches, built with scapy: IPv4 (with options, fragments, every
protocol kind), IPv6 (TCP, UDP, ICMPv6, extension headers), 802.1Q tags, non-IP, malformed
headers, truncated frames and MAC-style padding. Randomness from Python's `random` (seeded
by cocotb from the run's seed)."""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption  # noqa: E402
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop  # noqa: E402
from scapy.layers.l2 import ARP, Dot1Q, Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402

from rss_model import MS_IPV4_VECTORS, MS_IPV6_VECTORS  # noqa: E402


@dataclass
class Frame:
    data: bytes
    desc: str
    intact: bool = True  # headers as built: neither truncated nor mangled

    def __str__(self) -> str:
        return f"{self.desc} ({len(self.data)} B: {self.data[:96].hex()})"


def _mac() -> str:
    return ":".join(f"{b:02x}" for b in random.randbytes(6))


def _ip4() -> str:
    return ".".join(str(random.randrange(256)) for _ in range(4))


def _ip6() -> str:
    return ":".join(f"{random.randrange(1 << 16):x}" for _ in range(8))


def _ports() -> dict:
    return dict(sport=random.randrange(1 << 16), dport=random.randrange(1 << 16))


def _l2(vlan: bool):
    eth = Ether(src=_mac(), dst=_mac())
    return eth / Dot1Q(vlan=random.randrange(4096), prio=random.randrange(8)) if vlan else eth


def _payload() -> bytes:
    r = random.random()
    n = random.randint(0, 40) if r < 0.6 else random.randint(41, 300) if r < 0.95 else random.randint(301, 1500)
    return random.randbytes(n)


def ipv4_packet(proto: str | None = None, options_words: int | None = None, frag: str | None = None):
    """An IPv4 packet (no L2) of the given kind; None picks at random."""
    proto = proto or random.choice(["tcp", "tcp", "udp", "udp", "icmp", "other"])
    words = options_words if options_words is not None else (random.randint(1, 10) if random.random() < 0.3 else 0)
    frag = frag or random.choices(["none", "df", "mf", "offset", "mf+offset"], [55, 15, 10, 10, 10])[0]
    kw: dict = dict(src=_ip4(), dst=_ip4(), ttl=random.randrange(1, 256), id=random.randrange(1 << 16))
    if words:
        kw["options"] = IPOption(b"\x01" * (4 * words))  # NOPs: IHL = 5 + words
    if frag == "df":
        kw["flags"] = "DF"
    if frag in ("mf", "mf+offset"):
        kw["flags"] = "MF"
    if frag in ("offset", "mf+offset"):
        kw["frag"] = random.randint(1, 8191)
    if proto == "tcp":
        l4 = TCP(**_ports(), seq=random.randrange(1 << 32), flags="PA")
    elif proto == "udp":
        l4 = UDP(**_ports())
    elif proto == "icmp":
        l4 = ICMP(id=random.randrange(1 << 16))
    else:
        kw["proto"] = random.choice([0, 1, 2, 4, 41, 47, 50, 132, 255])
        l4 = Raw(random.randbytes(8))
    return IP(**kw) / l4, f"ipv4/{proto} ihl={5 + words} frag={frag}"


def ipv6_packet(kind: str | None = None):
    kind = kind or random.choice(["tcp", "tcp", "udp", "udp", "icmpv6", "hopbyhop+tcp", "fragment+udp", "nonext"])
    ip = IPv6(src=_ip6(), dst=_ip6(), hlim=random.randrange(256), fl=random.randrange(1 << 20))
    if kind == "tcp":
        pkt = ip / TCP(**_ports(), flags="S")
    elif kind == "udp":
        pkt = ip / UDP(**_ports())
    elif kind == "icmpv6":
        pkt = ip / ICMPv6EchoRequest(id=random.randrange(1 << 16))
    elif kind == "hopbyhop+tcp":
        pkt = ip / IPv6ExtHdrHopByHop() / TCP(**_ports())
    elif kind == "fragment+udp":
        pkt = ip / IPv6ExtHdrFragment(offset=0, m=1, id=random.randrange(1 << 32)) / UDP(**_ports())
    else:
        ip.nh = 59
        pkt = ip / Raw(random.randbytes(8))
    return pkt, f"ipv6/{kind}"


def random_frame() -> Frame:
    """One frame of a random kind, possibly truncated, mangled or padded."""
    vlan = random.random() < 0.3
    kind = random.choices(["ipv4", "ipv6", "arp", "other", "qinq"], [45, 35, 5, 10, 5])[0]
    tag = " vlan" if vlan else ""
    if kind == "ipv4":
        pkt, desc = ipv4_packet()
        p = _l2(vlan) / pkt / Raw(_payload())
    elif kind == "ipv6":
        pkt, desc = ipv6_packet()
        p = _l2(vlan) / pkt / Raw(_payload())
    elif kind == "arp":
        p, desc = _l2(vlan) / ARP(psrc=_ip4(), pdst=_ip4()), "arp"
    elif kind == "qinq":  # two tags: the inner EtherType is 0x8100, not IP
        p = Ether(src=_mac(), dst=_mac()) / Dot1Q(vlan=1) / Dot1Q(vlan=2) / ipv4_packet("tcp")[0]
        desc, tag = "ipv4/tcp behind two vlan tags", ""
    else:
        etype = random.choice([0x88CC, 0x8847, 0x88A8, 0x0806, 0x86DC, 0x0801, 0x0000, 0xFFFF, 0x05DC])
        p = _l2(vlan)
        (p[Dot1Q] if vlan else p).type = etype
        p = p / Raw(random.randbytes(random.randint(0, 120)))
        desc = f"ethertype {etype:#06x}"
    data = bytearray(bytes(p))
    f = Frame(bytes(data), desc + tag)
    r = random.random()
    l3 = 18 if vlan else 14
    if r < 0.05 and kind in ("ipv4", "ipv6"):  # mangled version or IHL
        if random.random() < 0.5:
            data[l3] = (random.choice([0, 4, 5, 6, 7, 15]) << 4) | (data[l3] & 0xF)
            f = Frame(bytes(data), f"{f.desc} version={data[l3] >> 4}", intact=False)
        elif kind == "ipv4":
            data[l3] = 0x40 | random.randint(0, 4)
            f = Frame(bytes(data), f"{f.desc} ihl={data[l3] & 15}", intact=False)
    elif r < 0.25:  # truncated, mostly inside the headers
        n = random.randint(1, min(len(data), 100))
        if n < len(data):
            f = Frame(bytes(data[:n]), f"{f.desc} cut to {n} B", intact=False)
    elif r < 0.45 and len(data) < 60:  # MAC minimum-size padding
        f = Frame(bytes(data) + bytes(60 - len(data)), f"{f.desc} padded")
    return f


def ms_vector_frames() -> list[tuple[Frame, int, int]]:
    """Frames carrying Microsoft's verification tuples, each with its published 2-tuple and
    4-tuple hash (Microsoft key): as TCP, UDP and ICMP frames, untagged and behind a VLAN
    tag. With ports enabled, TCP and UDP frames must get the 4-tuple value, ICMP the 2-tuple."""
    out = []
    for vlan in (False, True):
        tag = " vlan" if vlan else ""
        for src, sport, dst, dport, h2, h4 in MS_IPV4_VECTORS:
            for name, l4 in (("tcp", TCP(sport=sport, dport=dport)), ("udp", UDP(sport=sport, dport=dport)),
                             ("icmp", ICMP())):
                out.append((Frame(bytes(_l2(vlan) / IP(src=src, dst=dst) / l4), f"ms ipv4/{name}{tag}"), h2, h4))
        for src, sport, dst, dport, h2, h4 in MS_IPV6_VECTORS:
            for name, l4 in (("tcp", TCP(sport=sport, dport=dport)), ("udp", UDP(sport=sport, dport=dport)),
                             ("icmpv6", ICMPv6EchoRequest())):
                out.append((Frame(bytes(_l2(vlan) / IPv6(src=src, dst=dst) / l4), f"ms ipv6/{name}{tag}"), h2, h4))
    return out


def truncation_templates() -> list[Frame]:
    """Frames whose every prefix the truncation sweep sends: the longest headers (IPv4 with
    60-byte header behind a VLAN tag), plain ones, and an IPv4 fragment."""
    out = []
    for vlan in (False, True):
        tag = " vlan" if vlan else ""
        for words in (0, 3, 10):
            pkt, desc = ipv4_packet("tcp", words, "none")
            out.append(Frame(bytes(_l2(vlan) / pkt / Raw(b"\xa5" * 4)), desc + tag))
        pkt, desc = ipv4_packet("udp", 1, "mf")
        out.append(Frame(bytes(_l2(vlan) / pkt), desc + tag))
        for kind in ("tcp", "udp"):
            pkt, desc = ipv6_packet(kind)
            out.append(Frame(bytes(_l2(vlan) / pkt / Raw(b"\x5a" * 4)), desc + tag))
    return out


def scapy_view(data: bytes) -> tuple[str, tuple]:
    """What scapy's dissector finds in an intact frame, as (ip version, fields) with the RSS
    rules applied: ports only for TCP/UDP right behind the IP header and (IPv4) not in a
    fragment. An independent second reading of the frame for the model's parser."""
    if data[12:14] == b"\x81\x00" and data[16:18] == b"\x81\x00":
        return "none", ()  # the parser takes one tag only
    if len(data) >= 14 and int.from_bytes(data[12:14], "big") <= 1500:
        return "none", ()  # an 802.3 length, not an EtherType (scapy reads it as Dot3)
    p = Ether(data)
    if IP in p and p[IP].version == 4:
        ip = p[IP]
        frag = bool(ip.flags.MF) or ip.frag != 0
        if not frag and ip.proto in (6, 17) and isinstance(ip.payload, (TCP, UDP)):
            return "ipv4", (ip.src, ip.dst, ip.payload.sport, ip.payload.dport)
        return "ipv4", (ip.src, ip.dst)
    if IPv6 in p:
        ip = p[IPv6]
        if ip.nh in (6, 17) and isinstance(ip.payload, (TCP, UDP)):
            return "ipv6", (ip.src, ip.dst, ip.payload.sport, ip.payload.dport)
        return "ipv6", (ip.src, ip.dst)
    return "none", ()
