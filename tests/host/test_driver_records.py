"""Ring records and index arithmetic of the driver model (offnic_sim.host.rings) against the
byte layouts and rules of docs/queues.md. Plain pytest, no simulator."""
import random

import pytest

from offnic_sim.host import regs
from offnic_sim.host import rings
from offnic_sim.host.rings import Completion, Desc, Event


# ---------------------------------------------------------------- records, byte for byte

def test_descriptor_layout():
    d = Desc(addr=0x1122_3344_5566_7788, len=0x99AA, opcode=0x10, flags=0x03, csum_start=0x0E22, csum_insert=0x0032)
    b = rings.pack_desc(d)
    assert b == bytes([0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  # 0-7 addr
                       0xAA, 0x99,                                      # 8-9 len
                       0x10,                                            # 10 opcode
                       0x03,                                            # 11 flags: MORE | CSUM
                       0x22, 0x0E,                                      # 12-13 csum_start
                       0x32, 0x00])                                     # 14-15 csum_insert
    assert rings.unpack_desc(b) == d
    assert d.more
    assert rings.DESC_MORE == 1 and rings.DESC_CSUM == 2


def test_descriptor_opcode_argument():
    # bytes 12-15 carry one 32-bit argument for other opcodes (cache offset, MTU)
    d = Desc.with_arg(0x1000, 64, rings.OP_FRAGMENT, 0xAABB_CCDD)
    assert rings.pack_desc(d)[12:16] == bytes([0xDD, 0xCC, 0xBB, 0xAA])
    assert rings.unpack_desc(rings.pack_desc(d)).arg == 0xAABB_CCDD
    assert (rings.OP_CACHE_INSERT, rings.OP_CACHE_APPEND, rings.OP_FRAGMENT) == (0x01, 0x02, 0x10)


def test_rx_buffer_descriptor():
    b = rings.pack_desc(Desc(0x8000_1000, 2048, rings.OP_BUFFER))
    assert b == (0x8000_1000).to_bytes(8, "little") + (2048).to_bytes(2, "little") + bytes(6)


def test_completion_layout():
    b = bytes([0x02, 0x01,              # 0-1 queue
               0x04, 0x03,              # 2-3 index
               0x06, 0x05,              # 4-5 len
               0x03,                    # 6 status TOO_LONG
               0x87,                    # 7 flags: phase, RSS valid, csum valid, port 1
               0x0D, 0x0C, 0x0B, 0x0A,  # 8-11 rss_hash
               0x0F, 0x0E,              # 12-13 csum
               0x0A,                    # 14 rss_type IPv6+UDP (mask 2 | 8)
               0x00])                   # 15 reserved
    c = rings.unpack_cpl(b)
    assert (c.queue, c.index, c.len, c.status) == (0x0102, 0x0304, 0x0506, rings.TOO_LONG)
    assert (c.rss_hash, c.csum, c.rss_type) == (0x0A0B0C0D, 0x0E0F, 0x0A)
    assert c.port == 1 and c.csum_valid and c.rss_valid and c.phase == 1
    assert c.status_name == "too_long" and {n for b, n in rings.RSS_TYPE_BITS.items() if c.rss_type & b} == {"ipv6", "udp"}
    assert rings.pack_cpl(c) == b
    plain = rings.unpack_cpl(rings.pack_cpl(Completion(1, 2, 60, rings.OK, 0)))
    assert plain.port == 0 and not plain.csum_valid and not plain.rss_valid and plain.phase == 0
    assert (rings.OK, rings.DMA_ERROR, rings.BAD_DESC, rings.TOO_LONG) == (0, 1, 2, 3)


def test_event_layout():
    e = Event(source=0x0102, type=rings.EV_RX_CQ, flags=rings.PHASE)
    b = rings.pack_event(e)
    assert b == bytes([0x02, 0x01, 0x01, 0, 0, 0, 0, 0x80]) + bytes(8)
    assert rings.unpack_event(b) == e and e.phase == 1
    # reserved bytes are ignored on the way in
    assert rings.unpack_event(bytes([5, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0]) + b"\xff" * 8) == Event(5, rings.EV_TX_CQ, 0)


def test_with_phase():
    c = rings.pack_cpl(Completion(1, 2, 3, 0, rings.CPL_PORT | rings.CPL_RSS_VALID))
    assert rings.unpack_cpl(rings.with_phase(c, 1)).flags == 0x85
    assert rings.with_phase(rings.with_phase(c, 1), 0) == c


# ---------------------------------------------------------------- indexes and phase

def test_sizes():
    assert [rings.log_size_of(1 << k) for k in range(1, 16)] == list(range(1, 16))
    for bad in (0, 1, 3, 96, 1 << 16):
        with pytest.raises(ValueError):
            rings.log_size_of(bad)


def test_full_and_empty_across_the_16_bit_wrap():
    log = 3  # 8 records
    assert rings.is_empty(0xFFFE, 0xFFFE)
    assert rings.used(0x0002, 0xFFFE) == 4 and rings.free(0x0002, 0xFFFE, log) == 4
    assert rings.is_full(0x0006, 0xFFFE, log) and rings.free(0x0006, 0xFFFE, log) == 0
    assert not rings.is_full(0x0005, 0xFFFE, log)
    assert rings.idx_add(0xFFFF, 1) == 0 and rings.idx_add(0xFFF0, 0x20) == 0x10
    # a full 2^15 ring: prod - cons == size, also across the wrap
    assert rings.is_full(0x4000, 0xC000, 15) and rings.used(0x4000, 0xC000) == 0x8000


def test_record_offsets():
    assert [rings.record_offset(i, 2) for i in (0, 1, 3, 4, 5, 0xFFFF)] == [0, 16, 48, 0, 16, 48]
    assert rings.slot(0x1234, 8) == 0x34


def test_phase_is_inverse_of_index_bit_log_size():
    log = 2
    assert [rings.phase_of(i, log) for i in range(12)] == [1] * 4 + [0] * 4 + [1] * 4
    assert rings.phase_of(0x8000, 15) == 0 and rings.phase_of(0x7FFF, 15) == 1
    assert rings.phase_of(0xFFFF, 15) == 0 and rings.phase_of(0, 15) == 1


@pytest.mark.parametrize("log", [1, 2, 3, 7, 15])
def test_producer_and_consumer_through_wrap(log):
    """A NIC writing completions (phase_of its index) and a host consuming by phase, from
    three passes before the 16-bit wrap to three after, with the host polling at random
    moments: the host sees every record exactly once, in order, and never an old one."""
    size = 1 << log
    start = (0x10000 - 3 * size) & 0xFFFF
    ring = bytearray(rings.initial_ring(log, start))
    prod = cons = start
    seen = []
    rng = random.Random(log)
    total = 6 * size
    written = 0
    while len(seen) < total:
        # the NIC writes while there is room
        for _ in range(rng.randint(0, size)):
            if written == total or rings.is_full(prod, cons, log):
                break
            rec = rings.pack_cpl(Completion(0, prod, written & 0xFFFF, 0, 0))
            off = rings.record_offset(prod, log)
            ring[off:off + 16] = rings.with_phase(rec, rings.phase_of(prod, log))
            prod = rings.idx_add(prod, 1)
            written += 1
        # the host takes what is new
        for _ in range(rng.randint(0, size)):
            off = rings.record_offset(cons, log)
            rec = bytes(ring[off:off + 16])
            if not rings.is_new(rec, cons, log):
                assert cons == prod, f"record {cons} not new while {rings.used(prod, cons)} are pending"
                break
            c = rings.unpack_cpl(rec)
            assert c.index == cons and c.len == len(seen) & 0xFFFF
            seen.append(c.index)
            cons = rings.idx_add(cons, 1)
    assert len(seen) == total and cons == prod
    assert seen[0] == start and seen[-1] == (start + total - 1) & 0xFFFF


@pytest.mark.parametrize("log,start", [(3, 0), (3, 5), (3, 8), (3, 11), (3, 0xFFFD), (1, 3), (15, 0x8000), (15, 0x7FFF)])
def test_initial_ring(log, start):
    """A fresh ring for a producer starting at `start`: nothing looks new until written."""
    size = 1 << log
    ring = rings.initial_ring(log, start)
    assert len(ring) == size * 16
    for i in (rings.idx_add(start, k) for k in range(size)):
        rec = ring[rings.record_offset(i, log):][:16]
        assert not rings.is_new(rec, i, log), f"slot of index {i} looks new"
        assert rings.is_new(rings.with_phase(rec, rings.phase_of(i, log)), i, log)
    if rings.phase_of(start, log) == 1 and rings.slot(start, log) == 0:
        assert not any(ring)  # the spec's "the host zeroes the ring once"


def test_zeroed_ring_is_the_spec_start():
    assert rings.initial_ring(4, 0) == bytes(16 * 16)
    assert rings.initial_ring(4, 32) == bytes(16 * 16)  # the start of the third pass
    # starting mid-pass: slots before the start next see the following pass (phase 0),
    # so they hold phase 1
    r = rings.initial_ring(4, 7)
    assert [r[s * 16 + 7] for s in range(16)] == [0x80] * 7 + [0] * 9
    assert sum(r) == 7 * 0x80


# ---------------------------------------------------------------- TX packets

def test_split_frame():
    f = bytes(range(100))
    assert rings.split_frame(f) == [f]
    assert rings.split_frame(f, [10, 50]) == [f[:10], f[10:50], f[50:]]
    assert rings.split_frame(f, [0, 0, 100]) == [b"", b"", f, b""]  # empty segments are allowed
    for bad in ([50, 10], [101], [-1]):
        with pytest.raises(ValueError):
            rings.split_frame(f, bad)


def test_tx_descriptors_of_a_packet():
    ds = rings.tx_descs([(0x1000, 14), (0x2000, 20), (0x3000, 66)], csum=(34, 50))
    assert [d.flags for d in ds] == [rings.DESC_MORE | rings.DESC_CSUM, rings.DESC_MORE, 0]
    assert (ds[0].csum_start, ds[0].csum_insert) == (34, 50)
    assert all((d.csum_start, d.csum_insert) == (0, 0) for d in ds[1:])
    assert [(d.addr, d.len, d.opcode) for d in ds] == [(0x1000, 14, 0), (0x2000, 20, 0), (0x3000, 66, 0)]
    one = rings.tx_descs([(0x1000, 60)])
    assert len(one) == 1 and one[0].flags == 0
    assert rings.chain_lengths(ds + one + ds) == [3, 1, 3]
    assert rings.chain_lengths(ds[:2]) == [2]  # an unterminated chain
    with pytest.raises(ValueError):
        rings.tx_descs([])


# ---------------------------------------------------------------- registers

def layout(reg) -> dict[str, tuple[int, int]]:
    return {f.name: (f.lsb, f.width) for f in reg.fields}


def test_register_fields_the_driver_relies_on():
    """The register map (regs.py) has the records and fields the driver writes, where
    docs/queues.md and the driver expect them."""
    for btype in (regs.TX_QUEUES, regs.RX_QUEUES):
        assert set(btype.array.regs) >= {"base_lo", "base_hi", "control", "prod", "cons", "status"}
        assert btype.array.regs["cons"].access == "ro"
    assert layout(regs.TX_QUEUES.array.regs["control"]) == {"log_size": (0, 4), "enable": (8, 1), "port": (16, 1)}
    assert layout(regs.RX_QUEUES.array.regs["control"]) == {"log_size": (0, 4), "enable": (8, 1)}
    for btype in (regs.TX_CQS, regs.RX_CQS):
        r = btype.array.regs
        assert set(r) >= {"base_lo", "base_hi", "control", "cons", "arm", "prod", "mod_count", "mod_time_us"}
        assert layout(r["control"]) == {"log_size": (0, 4), "enable": (8, 1), "eq": (16, 8)}
        assert r["arm"].access == "wstrobe" and r["prod"].access == "ro"
    r = regs.EQS.array.regs
    assert set(r) >= {"base_lo", "base_hi", "control", "cons", "arm", "prod"}
    assert layout(r["control"]) == {"log_size": (0, 4), "enable": (8, 1)}
    r = regs.MSIX.array.regs
    assert [(n, r[n].offset) for n in ("addr_lo", "addr_hi", "data", "control")] == \
        [("addr_lo", 0), ("addr_hi", 4), ("data", 8), ("control", 12)]  # the PCI table layout
    assert regs.MSIX.array.stride == 16 and layout(r["control"]) == {"mask": (0, 1)}
    assert layout(regs.RX_ENGINE.regs["default_queue"]) == {"port0": (0, 8), "port1": (8, 8)}
    assert layout(regs.RSS.regs["indir_write"]) == {"index": (0, 16), "queue": (16, 8)}
    assert [f"key_{i}" in regs.RSS.regs for i in range(10)] == [True] * 10
    for btype in (regs.TX_QUEUES, regs.RX_QUEUES, regs.TX_CQS, regs.RX_CQS, regs.EQS, regs.MSIX):
        assert "count" in btype.regs


def test_control_fields():
    q = layout(regs.TX_QUEUES.array.regs["control"])
    assert rings.pack_fields(q, log_size=10, enable=1, port=1) == 0x1_010A
    cq = layout(regs.TX_CQS.array.regs["control"])
    v = rings.pack_fields(cq, log_size=8, enable=0, eq=0x25)
    assert v == 0x25_0008
    assert rings.pack_fields(cq, v, enable=1) == 0x25_0108
    assert rings.unpack_fields(cq, 0x25_0108) == {"log_size": 8, "enable": 1, "eq": 0x25}
    assert rings.pack_fields(layout(regs.RSS.regs["indir_write"]), index=127, queue=5) == 0x05_007F
    assert rings.pack_fields(layout(regs.RX_ENGINE.regs["default_queue"]), 0x0302, port1=7) == 0x0702
    with pytest.raises(ValueError):
        rings.pack_fields(q, log_size=16)
    with pytest.raises(KeyError):
        rings.pack_fields(q, bogus=1)


def test_rss_key_matches_the_register_reset_values():
    # the map documents key_i as bytes 4i..4i+3, byte 4i in bits 31:24; its reset values
    # are Microsoft's verification key
    key = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
    assert rings.rss_key_words(key) == [regs.RSS.regs[f"key_{i}"].reset for i in range(10)]


def test_rss_key_words():
    # Microsoft's verification key
    key = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
    w = rings.rss_key_words(key)
    assert len(w) == 10 and w[0] == 0x6D5A56DA and w[9] == 0xBEAC01FA
    assert b"".join(x.to_bytes(4, "big") for x in w) == key
    with pytest.raises(ValueError):
        rings.rss_key_words(key[:39])


def test_summarize():
    assert rings.summarize([]) == {"count": 0}
    s = rings.summarize([float(x) for x in range(1, 101)])
    assert (s["count"], s["min"], s["max"], s["mean"]) == (100, 1, 100, 50.5)
    assert s["p50"] == 51 and s["p99"] == 100
