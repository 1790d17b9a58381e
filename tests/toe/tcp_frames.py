"""TCP traffic for the TCP engine's block tests: segments with every option layout stacks
send (and some none does), bad and foreign variants, VLAN tags and Ethernet padding."""
from __future__ import annotations

import random
import struct

from offnic_sim.net.ipfrag import with_checksum
from offnic_sim.net.tcppeer import build_packet, tcp_options

MACS = bytes.fromhex("020000000002" "020000000001")


def options(rng: random.Random) -> bytes:
    ts = (rng.getrandbits(32), rng.getrandbits(32))
    tsopt = struct.pack("!BBII", 8, 10, *ts)
    sack = b"\x01\x01\x05" + bytes([2 + 8 * (n := rng.randrange(1, 4))]) + rng.randbytes(8 * n)
    return rng.choice([
        b"", b"\x01\x01" + tsopt, b"\x01\x01" + tsopt, b"\x01\x01" + tsopt + sack,
        tcp_options(mss=rng.randrange(536, 9000), wscale=rng.randrange(15), ts=ts, sack_perm=True),
        tsopt + b"\0\0", b"\x01\x01" + tsopt + b"\x01\x01" + struct.pack("!BBII", 8, 10, 1, 2),
        rng.randbytes(4 * rng.randrange(1, 11)), b"\x08\x00" + rng.randbytes(10), b"\x01\x01\x08\x28" + tsopt,
        b"\x00\x01" + tsopt, b"\x02\x04\x05\xb4" + b"\x01\x01" + tsopt, tcp_options(mss=1460),
    ])


def segment(rng: random.Random, conn: tuple[bytes, bytes, int, int] | None = None) -> bytes:
    """A good segment, random or of `conn` = (source IP, destination IP, source port,
    destination port) as it arrives."""
    src, dst, sport, dport = conn or (rng.randbytes(4), rng.randbytes(4), rng.randrange(65536), rng.randrange(65536))
    payload = rng.randbytes(rng.choice([0, 0, 1, rng.randrange(1, 200), rng.randrange(1, 1461)]))
    return build_packet(src, dst, sport, dport, rng.getrandbits(32), rng.getrandbits(32), rng.randrange(256),
                        rng.randrange(65536), payload, options=options(rng)[:40], ident=rng.randrange(65536))


def conn_key(conn: tuple[bytes, bytes, int, int]) -> int:
    """The ConnTable key of a connection's arriving segments (local = destination)."""
    src, dst, sport, dport = conn
    return int.from_bytes(dst + src, "big") << 32 | dport << 16 | sport


def eth(packet: bytes, rng: random.Random, etype: bytes = b"\x08\x00") -> bytes:
    f = MACS + (b"\x81\x00\x00\x05" if rng.random() < 0.25 else b"") + etype + packet
    return f + bytes(max(0, 60 - len(f)))  # Ethernet padding


def spoil(p: bytearray, rng: random.Random) -> bytes:
    """A bad or not-for-the-engine variant of IPv4/TCP packet `p`."""
    how = rng.randrange(9)
    if how == 0:                                   # TCP checksum
        p[36] ^= 1 << rng.randrange(8)
    elif how == 1:                                 # IP checksum
        p[10] ^= 0x40
    elif how in (2, 3):                            # data offset below 5, or past the segment
        p[32] = (rng.randrange(5) if how == 2 else 15) << 4 | (p[32] & 15)
    elif how == 4:                                 # total length below 20 or past the frame
        p[2:4] = struct.pack("!H", rng.choice([rng.randrange(20), len(p) + rng.randrange(1, 100)]))
        p[:20] = with_checksum(bytes(p[:10]) + b"\0\0" + bytes(p[12:20]))
    elif how == 5:                                 # IP options: the host's
        p[:] = with_checksum(bytes([0x46]) + bytes(p[1:2]) + struct.pack("!H", len(p) + 4) + bytes(p[4:10]) + b"\0\0"
                             + bytes(p[12:20]) + b"\x01\x01\x01\x00") + p[20:]
    elif how == 6:                                 # a fragment
        p[6:8] = struct.pack("!H", 0x2000 | rng.randrange(2))
        p[:20] = with_checksum(bytes(p[:10]) + b"\0\0" + bytes(p[12:20]))
    elif how == 7:                                 # UDP
        p[9] = 17
        p[:20] = with_checksum(bytes(p[:10]) + b"\0\0" + bytes(p[12:20]))
    else:                                          # truncated in the TCP header
        return bytes(p[:rng.randrange(20, 40)])
    return bytes(p)


def traffic(rng: random.Random, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.7:
            out.append(eth(segment(rng), rng))
        elif r < 0.93:
            out.append(eth(spoil(bytearray(segment(rng)), rng), rng))
        else:
            out.append(eth(rng.randbytes(rng.randrange(28, 100)), rng, rng.choice([b"\x08\x06", b"\x86\xdd"])))
    return out
