"""What the TCP engine's parser (hw/src/offnic/toe/TcpParser.scala) must say about a
received frame, from the bytes: the reference for its block test.

Linux's rules: ip_rcv_core's header checks, tcp_v4_rcv's (data offset, checksum over
the pseudo-header and segment), tcp_fast_parse_options / tcp_parse_options for the
timestamp. IPv4 with options, fragments and non-TCP frames are the host's ("other").
"""
from __future__ import annotations

import struct

from offnic_sim.net.ipfrag import ones_sum16

OTHER, TCP, BAD = 0, 1, 2
BAD_IP_HEADER, BAD_IP_CSUM, BAD_TCP_HEADER, BAD_TCP_CSUM = range(4)


def parse_options(opts: bytes) -> tuple[int, int] | None:
    """tcp_parse_options: the (last) timestamp option, or None."""
    ts, i = None, 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        left = len(opts) - i
        if left < 2:
            break
        size = opts[i + 1]
        if size < 2 or size > left:
            break
        if kind == 8 and size == 10:
            ts = struct.unpack("!II", opts[i + 2:i + 10])
        i += size
    return ts


def expected(frame: bytes) -> dict:
    """The parser's TcpInfo for `frame` (Ethernet, no FCS), as a dict of its fields;
    fields that do not apply are absent."""
    vlan = frame[12:14] == b"\x81\x00"
    ip = 18 if vlan else 14
    n = len(frame)
    if frame[ip - 2:ip] != b"\x08\x00" or n < ip + 40:
        return {"kind": OTHER}
    ver_ihl, tot, frag, proto = frame[ip], *struct.unpack("!H", frame[ip + 2:ip + 4]), \
        struct.unpack("!H", frame[ip + 6:ip + 8])[0], frame[ip + 9]
    if ver_ihl != 0x45 or proto != 6 or frag & 0x3FFF:
        return {"kind": OTHER}
    src, dst = frame[ip + 12:ip + 16], frame[ip + 16:ip + 20]
    t = ip + 20
    sport, dport, seq, ack, doff_b, flags, window = struct.unpack("!HHIIBBH", frame[t:t + 16])
    doff = doff_b >> 4
    out = {"key": int.from_bytes(dst + src, "big") << 32 | dport << 16 | sport, "seq": seq, "ack": ack,
           "flags": flags, "window": window}
    bad = None
    if tot < 20 or n < ip + tot:
        bad = BAD_IP_HEADER
    elif ones_sum16(frame[ip:ip + 20]) != 0xFFFF:
        bad = BAD_IP_CSUM
    elif doff < 5 or tot - 20 < doff * 4:
        bad = BAD_TCP_HEADER
    else:
        seg = frame[t:ip + tot]
        if ones_sum16(src + dst + struct.pack("!BBH", 0, 6, len(seg)) + seg) != 0xFFFF:
            bad = BAD_TCP_CSUM
    if bad is not None:
        return {"kind": BAD, "bad": bad, **out}
    opts = frame[t + 20:t + doff * 4]
    if doff == 8 and opts[:4] == b"\x01\x01\x08\x0a":
        ts = struct.unpack("!II", opts[4:12])
    else:
        ts = parse_options(opts)
    out.update(kind=TCP, data_start=t + doff * 4, data_len=tot - 20 - doff * 4, ts=ts)
    return out
