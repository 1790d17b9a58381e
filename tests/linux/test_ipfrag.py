"""The reference models of sim/offnic_sim/net/ipfrag.py on their own: pure Python, no kernel.
(test_linuxnet.py proves them against Linux; this file pins each rule down by itself, and
covers what Linux cannot: the NIC caps.)

- fragment(): sizes, offsets, MF, checksums; byte-identical to scapy's fragment() for
  datagrams without options (an independent implementation); re-fragmenting fragments;
  options in Linux and RFC 791 modes; the error codes;
- Reassembler: round trips in random orders, then one test per rule of its docstring,
  then the caps a NIC adds (max_frags, max_contexts with evict or bypass, max_bytes).
"""
from __future__ import annotations

import random

import pytest
from scapy.all import IP, raw
from scapy.all import fragment as scapy_fragment

from offnic_sim.net import ipfrag
from offnic_sim.net.ipfrag import (IP_DF, IP_MF, FragError, FragErrorCode, Reassembler, fragment, header_ok, parse,
                               udp_datagram, udp_payload, with_checksum)

SEED = 4242
SRC, DST, SRC2 = bytes([192, 0, 2, 2]), bytes([192, 0, 2, 1]), bytes([192, 0, 2, 3])
OPTS = bytes([0x94, 4, 0, 0, 0x44, 12, 5, 0]) + bytes(8)     # Router Alert (copied) + Timestamp (not)


def dgram(size: int, ident: int = 1, src: bytes = SRC, **kw) -> bytes:
    return udp_datagram(src, DST, 1000, 2000, random.Random(size + ident).randbytes(size), ident, **kw)


def piece(d: bytes, start: int, end: int, mf: bool | None = None, tos: int | None = None, df: bool = False) -> bytes:
    """Hand-cut fragment of datagram d carrying IP payload [start, end)."""
    ihl = (d[0] & 15) * 4
    body = d[ihl + start:ihl + end]
    h = bytearray(d[:ihl])
    h[2:4] = (ihl + len(body)).to_bytes(2, "big")
    more = end < len(d) - ihl if mf is None else mf
    h[6:8] = (start // 8 | (IP_MF if more else 0) | (IP_DF if df else 0)).to_bytes(2, "big")
    if tos is not None:
        h[1] = tos
    return with_checksum(h) + body


def feed(r: Reassembler, packets, now: float = 0.0) -> list[bytes]:
    out = []
    for p in packets:
        out += r.push(p, now)
    return out


# ----------------------------------------------------------------------------- fragment()

@pytest.mark.parametrize("mtu", [68, 576, 1500, 9000])
def test_fragment_geometry(mtu):
    rng = random.Random(SEED + mtu)
    for size in [1, mtu - 28, mtu - 27, 5000, 65507] + [rng.randrange(1, 65508) for _ in range(5)]:
        d = dgram(size)
        fs = fragment(d, mtu)
        if len(d) <= mtu:
            assert fs == [d]
            continue
        room = (mtu - 20) & ~7
        off = 0
        for i, f in enumerate(fs):
            ip = parse(f)
            last = i == len(fs) - 1
            assert header_ok(f[:20]) and len(f) == ip.tot_len <= mtu
            assert ip.offset == off and ip.mf == (not last) and not ip.df and ip.ident == 1
            assert len(f) - 20 == (room if not last else len(d) - 20 - off)
            assert f[20:] == d[20 + off:20 + off + len(f) - 20]
            off += len(f) - 20
        assert off == len(d) - 20


@pytest.mark.parametrize("mtu", [576, 1500, 9000])
def test_fragment_matches_scapy(mtu):
    for size in (mtu, 3000, 20000, 65507):
        d = dgram(size)
        assert fragment(d, mtu) == [raw(p) for p in scapy_fragment(IP(d), fragsize=(mtu - 20) & ~7)]


def test_refragment_keeps_offsets_and_mf():
    d = dgram(8000)
    firsts = fragment(d, 1500)
    pieces = [g for f in firsts for g in fragment(f, 576)]
    assert all(len(p) <= 576 for p in pieces)
    middle = fragment(firsts[1], 576)
    assert parse(middle[0]).offset == parse(firsts[1]).offset and all(parse(p).mf for p in middle)
    last = fragment(firsts[-1], 576)
    assert [parse(p).mf for p in last] == [True] * (len(last) - 1) + [False]
    r = Reassembler()
    assert feed(r, random.Random(SEED).sample(pieces, len(pieces))) == [d]


def test_fragment_options_linux_and_rfc791():
    d = dgram(5000, options=OPTS)
    linux = fragment(d, 1500)
    assert all(parse(f).ihl == 36 for f in linux)
    assert linux[0][20:36] == OPTS
    assert all(f[20:36] == OPTS[:4] + bytes([1]) * 12 for f in linux[1:])
    rfc = fragment(d, 1500, options="rfc791")
    assert parse(rfc[0]).ihl == 36 and all(parse(f).ihl == 24 and f[20:24] == OPTS[:4] for f in rfc[1:])
    for fs in (linux, rfc):
        assert feed(Reassembler(), fs[::-1]) == [d]
    # re-fragmenting a non-first fragment copies its header as it is (Linux: first_frag only)
    assert all(p[20:36] == linux[1][20:36] for p in fragment(linux[1], 576))


def test_fragment_errors_and_padding():
    d = dgram(3000)
    with pytest.raises(FragError) as e:
        fragment(dgram(3000, df=True), 1500)
    assert e.value.code is FragErrorCode.DF_SET
    assert fragment(dgram(1000, df=True), 1500) == [dgram(1000, df=True)]
    with pytest.raises(FragError) as e:
        fragment(d, 67)
    assert e.value.code is FragErrorCode.MTU_TOO_SMALL
    for bad in (b"\x45" + bytes(10), b"\x65" + d[1:], d[:100]):
        with pytest.raises(FragError) as e:
            fragment(bad, 1500)
        assert e.value.code is FragErrorCode.MALFORMED
    assert fragment(d + bytes(30), 1500) == fragment(d, 1500)


# ----------------------------------------------------------------------------- Reassembler

def test_round_trip_random_orders_and_interleaving():
    # max_dist=0: twenty datagrams from two sources shuffled together put far more than 64
    # of a source's fragments between two of one datagram; Linux's rule (on by default,
    # test_max_dist) would restart those contexts and lose the datagrams.
    rng = random.Random(SEED)
    r = Reassembler(max_dist=0)
    dgs = [dgram(rng.randrange(1, 65508), ident=i, src=(SRC, SRC2)[i % 2]) for i in range(20)]
    stream = [f for d in dgs for f in fragment(d, rng.choice((576, 1500, 9000)))]
    got = feed(r, rng.sample(stream, len(stream)))
    assert sorted(got) == sorted(dgs) and r.pending == 0 and r.bytes_held == 0
    assert all(udp_payload(d) is not None for d in got)


def test_duplicates_and_runs():
    d = dgram(92)                     # IP payload 100
    r = Reassembler()
    assert feed(r, [piece(d, 0, 16), piece(d, 16, 32), piece(d, 8, 24)]) == []
    assert r.last == ipfrag.DUPLICATE           # inside one run (arrived in order)
    assert feed(r, [piece(d, 32, 100)]) == [d]
    r = Reassembler()
    feed(r, [piece(d, 16, 32), piece(d, 0, 16), piece(d, 8, 24)])
    assert r.last == ipfrag.OVERLAP and r.pending == 0   # same bytes, two runs: overlap


def test_duplicate_content_ignored_first_wins():
    d = dgram(92)
    fake = bytearray(piece(d, 0, 48))
    fake[30] ^= 0xFF
    r = Reassembler()
    out = feed(r, [bytes(fake), piece(d, 0, 48), piece(d, 48, 100)])
    assert len(out) == 1 and out[0] != d and udp_payload(out[0]) is None


@pytest.mark.parametrize("seq,outcome", [
    ([(0, 48), (40, 100)], ipfrag.OVERLAP),
    ([(40, 100), (0, 48)], ipfrag.OVERLAP),
    ([(16, 32), (0, 48)], ipfrag.OVERLAP),
    ([(0, 48), (16, 32, False)], ipfrag.BAD_LAST),
    ([(48, 100), (48, 80, False)], ipfrag.BAD_LAST),
    ([(48, 80, False), (48, 100, False)], ipfrag.BAD_LAST),
    ([(48, 80, False), (80, 96, True)], ipfrag.BEYOND_END),
    ([(0, 48), (48, 53, True)], ipfrag.EMPTY),
    ([(0, 48), (48, 48, True)], ipfrag.EMPTY),
    ([(0, 48), (48, 48, False)], ipfrag.EMPTY),      # an empty last fragment is EMPTY, like any other
])
def test_drop_rules(seq, outcome):
    d = dgram(92)
    r = Reassembler()
    feed(r, [piece(d, *s) for s in seq])
    assert r.last == outcome and r.pending == 0


def test_trim_and_refill():
    d = dgram(92)
    r = Reassembler()
    assert feed(r, [piece(d, 0, 13), piece(d, 16, 100)]) == []
    assert r.counters[ipfrag.TRIMMED] == 1 and r.pending == 1
    assert feed(r, [piece(d, 8, 16)]) == [d]


def test_key_freed_after_drop_and_completion():
    d = dgram(92)
    r = Reassembler()
    feed(r, [piece(d, 0, 48), piece(d, 40, 100)])
    assert feed(r, fragment(d, 68)) == [d]
    assert feed(r, fragment(d, 68)) == [d]       # no memory of finished datagrams


def test_key_includes_source_and_protocol():
    a, b = dgram(3000, ident=9), dgram(3000, ident=9, src=SRC2)
    c = bytearray(dgram(3000, ident=9))
    c[9] = 253
    c = with_checksum(c[:20]) + bytes(c[20:])
    fa, fb, fc = fragment(a, 1500), fragment(b, 1500), fragment(c, 1500)
    out = feed(Reassembler(), [x for trio in zip(fa, fb, fc) for x in trio])
    assert sorted(out) == sorted([a, b, c])


def test_header_checks():
    d = dgram(3000)
    fs = fragment(d, 1500)
    r = Reassembler()
    bad = bytearray(fs[1])
    bad[11] ^= 1
    for p, why in ((bytes(bad), ipfrag.BAD_CHECKSUM), (fs[1][:1000], ipfrag.TRUNCATED), (b"\x46" + fs[1][1:], ipfrag.BAD_CHECKSUM),
                   (fs[1][:10], ipfrag.BAD_HEADER)):
        r.push(p)
        assert r.last == why
    assert feed(r, [fs[0], fs[2] + bytes(20), fs[1]]) == [d]
    mib = r.linux_mib()
    assert mib["InCsumErrors"] == 2 and mib["InHdrErrors"] == 3 and mib["InTruncatedPkts"] == 1
    assert mib["ReasmReqds"] == 3 and mib["ReasmOKs"] == 1 and mib["ReasmFails"] == 0


def test_whole_datagram_passes_next_to_pending_key():
    d = dgram(3000, ident=5)
    w = dgram(100, ident=5)
    r = Reassembler()
    fs = fragment(d, 1500)
    assert feed(r, [fs[0], w]) == [w] and r.last == ipfrag.NOT_FRAGMENT and r.pending == 1
    assert feed(r, fs[1:]) == [d]


def test_oversize_and_exact_maximum():
    r = Reassembler()
    big = dgram(65507)
    assert feed(r, fragment(big, 1500)[::-1]) == [big]
    hdr = bytearray(big[:20])
    body = bytes(65516)
    pieces = []
    for o in range(0, 65516, 1480):
        n = min(1480, 65516 - o)
        h = bytearray(hdr)
        h[2:4] = (20 + n).to_bytes(2, "big")
        h[6:8] = (o // 8 | (IP_MF if o + n < 65516 else 0)).to_bytes(2, "big")
        h[4:6] = (77).to_bytes(2, "big")
        pieces.append(with_checksum(h) + body[o:o + n])
    assert feed(r, pieces) == [] and r.last == ipfrag.OVERSIZE


@pytest.mark.parametrize("tos_a,tos_b,delivered,ce", [(0, 2, False, 0), (0, 3, False, 0), (2, 3, True, 3), (1, 3, True, 3),
                                                     (2, 1, True, 0), (3, 3, True, 3), (0, 0, True, 0)])
def test_ecn(tos_a, tos_b, delivered, ce):
    d = dgram(92)
    out = feed(Reassembler(), [piece(d, 0, 48, tos=tos_a), piece(d, 48, 100, tos=tos_b)])
    assert bool(out) == delivered
    if out:
        assert out[0][1] & 3 == (tos_a | ce) & 3 and header_ok(out[0][:20])


def test_reassembled_header():
    d = dgram(3000, options=OPTS)
    fs = fragment(d, 1500)
    out = feed(Reassembler(), fs[::-1])[0]
    assert out == d and header_ok(out[:36])
    dfd = [piece(d, 0, 1480, df=True), piece(d, 1480, 3008, df=True)]
    assert parse(feed(Reassembler(), dfd)[0]).df        # largest fragment had DF
    mixed = [piece(d, 0, 1528, df=False), piece(d, 1528, 3008, df=True)]   # largest without DF
    assert not parse(feed(Reassembler(), mixed)[0]).df
    mixed = [piece(d, 0, 1480, df=False), piece(d, 1480, 3008, df=True)]   # largest with DF
    assert parse(feed(Reassembler(), mixed)[0]).df


def test_timeout_from_first_fragment():
    d = dgram(5000)
    fs = fragment(d, 1500)
    r = Reassembler(timeout=30)
    r.push(fs[0], now=0)
    r.push(fs[1], now=29)          # does not extend the timer
    r.push(fs[2], now=30)
    assert r.counters[ipfrag.TIMEOUT] == 1 and r.pending == 1
    assert feed(r, [fs[0], fs[1], fs[3]], now=31) == [d]


@pytest.mark.parametrize("others,delivered", [(63, True), (64, False)])
def test_max_dist(others, delivered):
    a = dgram(3000, ident=1)
    b = dgram(8 * (others + 2), ident=2)
    fa = fragment(a, 1500)
    r = Reassembler()
    out = feed(r, [fa[0]] + [piece(b, 8 * k, 8 * k + 8) for k in range(1, others + 1)] + fa[1:])
    assert (out == [a]) == delivered and r.counters[ipfrag.TOO_FAR] == (0 if delivered else 1)
    assert feed(Reassembler(max_dist=0), [fa[0]] + [piece(b, 8 * k, 8 * k + 8) for k in range(1, 80)] + fa[1:]) == [a]


# ----------------------------------------------------------------------------- NIC caps

def test_max_frags():
    d = dgram(300)
    tiny = [piece(d, o, min(o + 8, 308)) for o in range(0, 308, 8)]
    r = Reassembler(max_frags=38)
    assert feed(r, tiny) == [] and r.last == ipfrag.TOO_MANY_FRAGS and r.pending == 0
    assert feed(Reassembler(max_frags=39), tiny) == [d]


def test_max_contexts_evict_oldest():
    dgs = [dgram(3000, ident=i) for i in range(4)]
    fs = [fragment(d, 1500) for d in dgs]
    r = Reassembler(max_contexts=3)
    feed(r, [fs[0][0], fs[1][0], fs[2][0], fs[3][0]])
    assert r.pending == 3 and r.counters[ipfrag.EVICTED] == 1
    assert feed(r, fs[0][1:]) == []             # datagram 0 was the oldest: gone
    assert r.counters[ipfrag.EVICTED] == 2      # and its late fragments evicted datagram 1
    assert feed(r, fs[3][1:] + fs[2][1:]) == [dgs[3], dgs[2]]


def test_max_contexts_bypass():
    dgs = [dgram(3000, ident=i) for i in range(3)]
    fs = [fragment(d, 1500) for d in dgs]
    r = Reassembler(max_contexts=2, when_full="bypass", timeout=30)
    stream = [f for trio in zip(*fs) for f in trio]   # datagram 2's last fragment comes after 0 completed
    out = feed(r, stream)
    assert sorted(out) == sorted(dgs[:2])
    assert r.bypassed == fs[2] and r.counters[ipfrag.BYPASSED] == 3 and r.pending == 0
    host = Reassembler()
    assert feed(host, r.bypassed) == [dgs[2]]   # the host stack still gets it whole
    r.push(fs[2][0], now=30)                    # the bypass memory lasts one timeout
    assert r.last == ipfrag.QUEUED


def test_max_bytes_evicts_oldest_first():
    dgs = [dgram(3000, ident=i) for i in range(3)]
    fs = [fragment(d, 1500) for d in dgs]
    r = Reassembler(max_bytes=4000)
    feed(r, [fs[0][0], fs[1][0]])                 # 2 x 1480 held
    feed(r, [fs[2][0]])                           # 4440 > 4000: datagram 0 goes
    assert r.counters[ipfrag.EVICTED] == 1 and r.bytes_held == 2960
    assert feed(r, fs[2][1:]) == [dgs[2]]         # datagram 1 makes room for the newest
    assert r.counters[ipfrag.EVICTED] == 2 and r.pending == 0
    r = Reassembler(max_bytes=2000)
    feed(r, fs[0][:2])                            # its own context is the oldest
    assert r.last == ipfrag.EVICTED and r.pending == 0


def test_bad_options():
    with pytest.raises(ValueError):
        fragment(dgram(3000), 1500, options="bsd")
    with pytest.raises(ValueError):
        Reassembler(when_full="panic")
