"""Frames for the fragmentation benches (block and whole NIC): UDP over IPv4 datagrams
with a correct checksum, and the same as Linux hands them over for CHECKSUM_PARTIAL."""
from __future__ import annotations

import random
import struct

from checksum_ref import ones_sum
from offnic_sim.net import ipfrag

ETH = bytes.fromhex("020000000002" "020000000001")


def eth_header(vlan: bool, etype: int) -> bytes:
    return ETH + (struct.pack(">HH", 0x8100, 7) if vlan else b"") + struct.pack(">H", etype)


def udp_datagram(rng: random.Random, payload: int, *, df=False, mf=False, offset=0, ident=None,
                 reserved=False) -> tuple[bytes, bytes]:
    """(datagram with a correct UDP checksum, the same with the checksum field holding the
    pseudo-header sum as Linux leaves it for CHECKSUM_PARTIAL)."""
    src, dst = bytes([10, 0, 0, rng.randrange(1, 250)]), bytes([10, 0, 1, rng.randrange(1, 250)])
    data = rng.randbytes(payload)
    ulen = 8 + payload
    udp = struct.pack(">HHHH", rng.randrange(1024, 65535), rng.randrange(1, 65535), ulen & 0xFFFF, 0) + data
    pseudo = src + dst + struct.pack(">BBH", 0, 17, ulen & 0xFFFF)
    c = (~ones_sum(pseudo + udp)) & 0xFFFF
    full_udp = udp[:6] + struct.pack(">H", c or 0xFFFF) + udp[8:]
    seeded_udp = udp[:6] + struct.pack(">H", ones_sum(pseudo)) + udp[8:]
    flags = (0x4000 if df else 0) | (0x2000 if mf else 0) | (0x8000 if reserved else 0) | (offset >> 3)
    ident = rng.randrange(65536) if ident is None else ident

    def ip(body):
        h = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(body), ident, flags, 64, 17, 0, src, dst))
        return ipfrag.with_checksum(h) + body
    return ip(full_udp), ip(seeded_udp)
