"""Reference model of receive-side scaling (RssHash): the Microsoft RSS Toeplitz hash, the
frame parsing rules, and the indirection table lookup. Written from the definitions, byte
by byte, to be read against them, not against the RTL's structure.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

# The key and vectors of "Verifying the RSS Hash Calculation" (Microsoft Windows driver docs).
MS_KEY = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")

# (source, source port, destination, destination port, 2-tuple hash, 4-tuple hash)
MS_IPV4_VECTORS = [
    ("66.9.149.187", 2794, "161.142.100.80", 1766, 0x323E8FC2, 0x51CCC178),
    ("199.92.111.2", 14230, "65.69.140.83", 4739, 0xD718262A, 0xC626B0EA),
    ("24.19.198.95", 12898, "12.22.207.184", 38024, 0xD2D0A5DE, 0x5C2B394A),
    ("38.27.205.30", 48228, "209.142.163.6", 2217, 0x82989176, 0xAFC7327F),
    ("153.39.163.191", 44251, "202.188.127.2", 1303, 0x5D1809C5, 0x10E828A2),
]
MS_IPV6_VECTORS = [
    ("3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766, 0x2CC18CD5, 0x40207D3D),
    ("3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739, 0x0F0C461C, 0xDDE51BBF),
    ("3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251, "fe80::200:f8ff:fe21:67cf", 38024, 0x4B61E985, 0x02D1FEEF),
]

# hash_type flags, as RssHashType in RssParser.scala
NONE, IPV4, IPV6, TCP, UDP = 0, 1, 2, 4, 8
TYPE_NAMES = {NONE: "none", IPV4: "ipv4", IPV6: "ipv6", IPV4 | TCP: "tcp/ipv4", IPV4 | UDP: "udp/ipv4",
              IPV6 | TCP: "tcp/ipv6", IPV6 | UDP: "udp/ipv6"}


def toeplitz(key: bytes, data: bytes) -> int:
    """Microsoft RSS Toeplitz hash: for every set bit of the input, first bit first (the
    MSB of the first byte), XOR the 32-bit window of the key starting at that bit position
    into the result."""
    key_bits = len(key) * 8
    assert len(data) * 8 + 32 <= key_bits, "key too short for the input"
    k = int.from_bytes(key, "big")
    h = 0
    for i in range(len(data) * 8):
        if (data[i // 8] >> (7 - i % 8)) & 1:
            h ^= (k >> (key_bits - 32 - i)) & 0xFFFFFFFF
    return h


def tuple_bytes(src: str, dst: str, sport: int | None = None, dport: int | None = None) -> bytes:
    """The RSS input: source address, destination address, then (4-tuple) source port and
    destination port, all in network order."""
    b = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed
    if sport is not None:
        b += sport.to_bytes(2, "big") + dport.to_bytes(2, "big")
    return b


@dataclass(frozen=True)
class Enables:
    ipv4: bool = True
    ipv6: bool = True
    tcp: bool = True
    udp: bool = True


def rss_input(frame: bytes, en: Enables = Enables()) -> tuple[int, bytes]:
    """(hash_type, Toeplitz input) for an Ethernet frame (no FCS), by the rules RssParser
    documents: optional single 802.1Q tag; IPv4 needs version 4, IHL >= 5 and its whole
    header in the frame; IPv6 version 6 and its 40-byte header; ports for TCP/UDP when
    enabled, in the frame, and (IPv4) not a fragment; otherwise the 2-tuple. The frame's
    length counts, never the IP length fields. Anything else: (NONE, b"")."""
    n = len(frame)
    if n < 14:
        return NONE, b""
    l3 = 14
    etype = int.from_bytes(frame[12:14], "big")
    if etype == 0x8100:
        if n < 18:
            return NONE, b""
        etype = int.from_bytes(frame[16:18], "big")
        l3 = 18

    def l4_ok(proto: int) -> bool:
        return (proto == 6 and en.tcp) or (proto == 17 and en.udp)

    def l4_flag(proto: int) -> int:
        return TCP if proto == 6 else UDP

    if etype == 0x0800 and en.ipv4:
        if n <= l3:
            return NONE, b""
        version, ihl = frame[l3] >> 4, frame[l3] & 0xF
        if version != 4 or ihl < 5 or n < l3 + 4 * ihl:
            return NONE, b""
        more_fragments = frame[l3 + 6] & 0x20
        offset = ((frame[l3 + 6] & 0x1F) << 8) | frame[l3 + 7]
        proto = frame[l3 + 9]
        addrs = frame[l3 + 12:l3 + 20]
        l4 = l3 + 4 * ihl
        if not more_fragments and offset == 0 and n >= l4 + 4 and l4_ok(proto):
            return IPV4 | l4_flag(proto), addrs + frame[l4:l4 + 4]
        return IPV4, addrs
    if etype == 0x86DD and en.ipv6:
        if n < l3 + 40 or frame[l3] >> 4 != 6:
            return NONE, b""
        next_header = frame[l3 + 6]
        addrs = frame[l3 + 8:l3 + 40]
        if n >= l3 + 44 and l4_ok(next_header):
            return IPV6 | l4_flag(next_header), addrs + frame[l3 + 40:l3 + 44]
        return IPV6, addrs
    return NONE, b""


@dataclass(frozen=True)
class RssResult:
    queue: int
    hash: int
    hash_type: int

    def __str__(self) -> str:
        return f"queue {self.queue} hash {self.hash:#010x} type {TYPE_NAMES.get(self.hash_type, self.hash_type)}"


def rss_result(frame: bytes, key: bytes, table: list[int], en: Enables = Enables()) -> RssResult:
    """What RssHash must report for `frame`: queue = table[hash mod len(table)]."""
    t, data = rss_input(frame, en)
    h = toeplitz(key, data)
    return RssResult(table[h % len(table)], h, t)


# The m_axis_rss tdata layout: {queue, hash[31:0], hash_type[3:0]}, zero-padded to bytes.
def result_bytes(queue_bits: int) -> int:
    return (queue_bits + 36 + 7) // 8


def pack_result(r: RssResult) -> int:
    return (r.queue << 36) | (r.hash << 4) | r.hash_type


def unpack_result(v: int, queue_bits: int) -> RssResult:
    assert v >> (36 + queue_bits) == 0, f"result {v:#x}: padding bits set"
    return RssResult(v >> 36, (v >> 4) & 0xFFFFFFFF, v & 0xF)
