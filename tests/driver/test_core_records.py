"""The driver core's records and ring arithmetic (sw-driver/core/offnic_records.*, the C
the Linux module runs) against the driver model's (offnic_sim.host.rings, checked on its
own against docs/queues.md by tests/host/test_driver_records.py), with random fields;
the multicast hash against the spec's binascii.crc32 >> 26; the reassembled datagram's
header fix-up against offnic_sim.host.reasm_fixup. Plain pytest, no simulator."""
import binascii
import ctypes

from offnic_sim.host import drvcore, reasm_fixup, rings
from offnic_sim.net import ipfrag

N = 3000


def lib():
    return drvcore.load()


def test_descriptors(rng):
    c = lib()
    for _ in range(N):
        d = rings.Desc(rng.getrandbits(64), rng.getrandbits(16), rng.getrandbits(8), rng.getrandbits(8),
                       rng.getrandbits(16), rng.getrandbits(16))
        out = ctypes.create_string_buffer(16)
        c.offnic_desc_pack(out, ctypes.byref(drvcore.Desc(*d.__dict__.values())))
        assert out.raw == rings.pack_desc(d), f"seed {rng.seed_value}: {d}"
        raw = rng.randbytes(16)
        got = drvcore.Desc()
        c.offnic_desc_unpack(raw, ctypes.byref(got))
        want = rings.unpack_desc(raw)
        assert (got.addr, got.len, got.opcode, got.flags, got.csum_start, got.csum_insert) == \
            (want.addr, want.len, want.opcode, want.flags, want.csum_start, want.csum_insert), raw.hex()


def test_completions(rng):
    c = lib()
    for _ in range(N):
        raw = rng.randbytes(16)
        got = drvcore.Cpl()
        c.offnic_cpl_unpack(raw, ctypes.byref(got))
        w = rings.unpack_cpl(raw)
        assert (got.queue, got.index, got.len, got.status, got.flags, got.rss_hash, got.csum, got.rss_type,
                got.byte15_hi) == (w.queue, w.index, w.len, w.status, w.flags, w.rss_hash, w.csum, w.rss_type,
                                   w.reserved), f"seed {rng.seed_value}: {raw.hex()}"
        # the fields the driver reads for reassembled datagrams
        assert got.byte15_hi >> 1 == w.reasm_start and bool(got.flags & 8) == w.reassembled
        out = ctypes.create_string_buffer(16)
        c.offnic_cpl_pack(out, ctypes.byref(got))
        assert out.raw == rings.pack_cpl(w) == raw


def test_events(rng):
    c = lib()
    for _ in range(N):
        e = rings.Event(rng.getrandbits(16), rng.getrandbits(8), rng.getrandbits(8))
        out = ctypes.create_string_buffer(16)
        c.offnic_event_pack(out, ctypes.byref(drvcore.Event(e.source, e.type, e.flags)))
        assert out.raw == rings.pack_event(e)
        raw = rng.randbytes(16)
        got = drvcore.Event()
        c.offnic_event_unpack(raw, ctypes.byref(got))
        w = rings.unpack_event(raw)
        assert (got.source, got.type, got.flags) == (w.source, w.type, w.flags), raw.hex()


def test_ring_arithmetic(rng):
    c = lib()
    for _ in range(20 * N):
        log = rng.randint(rings.MIN_LOG_SIZE, rings.MAX_LOG_SIZE)
        cons = rng.getrandbits(16)
        # producers anywhere, and near the interesting edges: empty, full, wrapped
        prod = rng.choice([rng.getrandbits(16), cons, rings.idx_add(cons, 1 << log),
                           rings.idx_add(cons, rng.randint(0, 1 << log))])
        n = rng.getrandbits(rng.choice([4, 16, 32]))
        assert c.offnic_user_idx_add(cons, n) == rings.idx_add(cons, n)
        assert c.offnic_user_used(prod, cons) == rings.used(prod, cons)
        assert bool(c.offnic_user_is_empty(prod, cons)) == rings.is_empty(prod, cons)
        assert bool(c.offnic_user_is_full(prod, cons, log)) == rings.is_full(prod, cons, log)
        if rings.used(prod, cons) <= 1 << log:  # free is only defined for a consistent ring
            assert c.offnic_user_free(prod, cons, log) == rings.free(prod, cons, log)
        assert c.offnic_user_slot(cons, log) == rings.slot(cons, log)
        assert c.offnic_user_record_offset(cons, log) == rings.record_offset(cons, log)
        assert c.offnic_user_phase_of(cons, log) == rings.phase_of(cons, log)
        rec = rng.randbytes(16)
        assert bool(c.offnic_user_is_new(rec, cons, log)) == rings.is_new(rec, cons, log), \
            f"seed {rng.seed_value}: cons {cons} log {log} {rec.hex()}"


def test_log_size(rng):
    c = lib()
    for size in [0, 1, 2, 3, 4, 32768, 65536, *[rng.getrandbits(17) for _ in range(500)],
                 *[1 << rng.randint(0, 20) for _ in range(100)]]:
        try:
            want = rings.log_size_of(size)
        except ValueError:
            want = -1
        assert c.offnic_log_size_of(size) == want, size


def test_initial_ring_images(rng):
    c = lib()
    for _ in range(300):
        log = rng.randint(1, 10)
        start = rng.choice([0, rng.getrandbits(16), (1 << log) * rng.randint(0, 7), rng.getrandbits(log + 1)])
        buf = ctypes.create_string_buffer(16 << log)
        ctypes.memset(buf, 0x5A, len(buf))  # the core must write every byte
        c.offnic_ring_init(buf, log, start)
        assert buf.raw == rings.initial_ring(log, start), f"seed {rng.seed_value}: log {log} start {start}"


def test_multicast_hash(rng):
    c = lib()
    for _ in range(N):
        addr = bytes([rng.getrandbits(8) | 1]) + rng.randbytes(5)
        assert c.offnic_mc_hash(addr) == binascii.crc32(addr) >> 26, addr.hex()


def test_rss_key_words(rng):
    c = lib()
    for _ in range(200):
        key = rng.randbytes(40)
        assert [c.offnic_rss_key_word(key, i) for i in range(10)] == rings.rss_key_words(key)


def _reassembled_frame(rng) -> tuple[bytes, int, int]:
    """A reassembled datagram as the NIC leaves it: headers of its first fragment (MF set,
    a fragment field, the first fragment's total length and checksum), then the payload."""
    vlan = rng.random() < 0.3
    eth = rng.randbytes(12) + (b"\x81\x00" + rng.randbytes(2) + b"\x08\x00" if vlan else b"\x08\x00")
    ihl = rng.randint(5, 15)
    payload = rng.randbytes(rng.randint(0, 3000))
    hdr = bytearray(rng.randbytes(ihl * 4))
    hdr[0] = 0x40 | ihl
    hdr[1] &= 0xFC | rng.getrandbits(2)
    hdr[2:4] = rng.getrandbits(16).to_bytes(2, "big")
    hdr[6:8] = (0x2000 | rng.getrandbits(13)).to_bytes(2, "big")
    hdr = ipfrag.with_checksum(hdr)
    return eth + hdr + payload, len(eth), ihl * 4


def test_reassembly_fixup(rng):
    c = lib()
    for _ in range(N):
        frame, h, ihl = _reassembled_frame(rng)
        ecn, df = rng.getrandbits(2), rng.random() < 0.5
        start = rng.randint(0, 64)
        buf = bytes(rng.randbytes(start)) + frame
        want = reasm_fixup.rebuild(buf, start, len(frame), ecn, df)
        got = ctypes.create_string_buffer(frame, len(frame))
        assert c.offnic_reasm_fixup(got, len(frame), ecn, int(df)) == h
        assert got.raw == want, f"seed {rng.seed_value}: {frame[:h + ihl].hex()} ecn {ecn} df {df}"


def test_reassembly_fixup_refuses_short_frames():
    c = lib()
    for n in (0, 13, 14, 33):
        assert c.offnic_reasm_fixup(ctypes.create_string_buffer(b"\x45" * 40), n, 0, 0) == -1
    bad_ihl = bytearray(64)
    bad_ihl[12:15] = b"\x08\x00\x44"   # IHL 4: below the minimum
    assert c.offnic_reasm_fixup(ctypes.create_string_buffer(bytes(bad_ihl)), 64, 0, 0) == -1
