"""The driver core's TCP engine commands (sw-driver/core/offnic_toe.*, the C the Linux
module runs) against the Python driver layer (offnic_sim.toe.toe_cmdq, toe_window) and the
engine model's install (toe_model.handoff_tcb): the Tcb layout field by field, command
blocks of random handoffs byte-exact, answer blocks, descriptors, completions and
notification events with random fields. Plain pytest, no simulator; the RTL check is
tests/driver/test_core_toe_on_nic.py."""
import ctypes
import dataclasses
import ipaddress

from offnic_sim.host import drvcore, rings
from offnic_sim.host.drvcore import ToeAddr, ToeHandoff, ToeParams
from offnic_sim.toe import toe_cmdq
from offnic_sim.toe.toe_model import ConnKey, EngineParams, Handoff, handoff_tcb
from offnic_sim.toe.toe_window import TCB_BITS, TCB_LAYOUT, conn_addr, pack_tcb, unpack_tcb

N = 2000
Words = ctypes.c_uint32 * drvcore.TOE_TCB_WORDS


def lib():
    return drvcore.load()


def c_handoff(hs: Handoff) -> ToeHandoff:
    """A Handoff as offnic_toe_handoff (None: the flag left off)."""
    c = ToeHandoff()
    for f in ("snd_una", "snd_nxt", "write_seq", "rcv_nxt", "read_seq", "snd_wnd", "rcv_wnd", "rcv_wup",
              "max_window", "mss", "snd_wscale", "rcv_wscale", "snd_size", "rcv_size"):
        setattr(c, f, getattr(hs, f))
    c.snd_ring, c.rcv_ring = hs.snd_buf, hs.rcv_buf
    c.cwnd, c.ssthresh, c.srtt_us = hs.cwnd or 0, hs.ssthresh or 0, hs.srtt_us or 0
    flags = (drvcore.TOE_WSCALE_OK * hs.wscale_ok | drvcore.TOE_TIMESTAMPS * hs.timestamps
             | drvcore.TOE_SACK_OK * hs.sack_ok)
    if hs.snd_wl1 is not None:
        c.snd_wl1, flags = hs.snd_wl1, flags | drvcore.TOE_HAS_SND_WL1
    if hs.ts_recent is not None:
        c.ts_recent, flags = hs.ts_recent, flags | drvcore.TOE_HAS_TS_RECENT
    if hs.rttvar_us is not None:
        c.rttvar_us, flags = hs.rttvar_us, flags | drvcore.TOE_HAS_RTTVAR
    c.flags = flags
    return c


def c_params(p: EngineParams) -> ToeParams:
    return ToeParams(p.init_cwnd, int(p.sack))


def c_addr(key: ConnKey, hs: Handoff) -> ToeAddr:
    a = ToeAddr()
    a.local_mac[:] = bytes.fromhex(hs.local_mac.replace(":", ""))
    a.peer_mac[:] = bytes.fromhex(hs.remote_mac.replace(":", ""))
    a.local_ip, a.peer_ip = int(ipaddress.IPv4Address(key.local_ip)), int(ipaddress.IPv4Address(key.remote_ip))
    a.local_port, a.peer_port = key.local_port, key.remote_port
    return a


def random_handoff(rng) -> Handoff:
    """Any handoff the driver may meet: sequence numbers anywhere, windows up to the
    scaled maximum, options on or off, Linux's congestion state or none."""
    seq = lambda: rng.getrandbits(32)  # noqa: E731
    snd_una, rcv_nxt = seq(), seq()
    snd_log, rcv_log = rng.randint(12, 20), rng.randint(12, 20)
    opt = lambda v: v if rng.random() < 0.5 else None  # noqa: E731
    return Handoff(
        local_mac=rng.randbytes(6).hex(":"), remote_mac=rng.randbytes(6).hex(":"),
        snd_una=snd_una, snd_nxt=(snd_una + rng.randrange(1 << snd_log)) & 0xFFFFFFFF,
        write_seq=(snd_una + rng.randrange(1 << snd_log)) & 0xFFFFFFFF, rcv_nxt=rcv_nxt,
        read_seq=(rcv_nxt - rng.randrange(1 << rcv_log)) & 0xFFFFFFFF, snd_wnd=rng.getrandbits(rng.choice([16, 24, 31])),
        rcv_wnd=rng.getrandbits(rng.choice([16, 24, 31])), rcv_wup=(rcv_nxt + rng.randint(-5000, 5000)) & 0xFFFFFFFF,
        snd_buf=rng.getrandbits(40 - snd_log) << snd_log, snd_size=1 << snd_log,
        rcv_buf=rng.getrandbits(40 - rcv_log) << rcv_log, rcv_size=1 << rcv_log, mss=rng.randint(536, 9000),
        max_window=rng.getrandbits(rng.choice([16, 30])), snd_wl1=opt(seq()), wscale_ok=rng.random() < 0.7,
        snd_wscale=rng.randint(0, 14), rcv_wscale=rng.randint(0, 14), sack_ok=rng.random() < 0.5,
        timestamps=rng.random() < 0.7, ts_recent=opt(seq()), cwnd=opt(rng.getrandbits(rng.choice([16, 31]))),
        ssthresh=opt(rng.getrandbits(32)), srtt_us=opt(rng.getrandbits(rng.choice([10, 20, 31]))),
        rttvar_us=opt(rng.getrandbits(rng.choice([10, 31]))))


def test_tcb_layout():
    """Field by field, the C layout is toe_window's (itself checked against the RTL's tcb_bits)."""
    c = lib()
    got = [(c.offnic_tcb_name(f).decode(), c.offnic_tcb_width(f)) for f in range(len(TCB_LAYOUT))]
    assert got == TCB_LAYOUT
    assert c.offnic_tcb_name(len(TCB_LAYOUT)) is None and c.offnic_tcb_bits() == TCB_BITS


def test_tcb_fields(rng):
    """Set and get of every field against pack_tcb / unpack_tcb with random values."""
    c = lib()
    for _ in range(200):
        v = rng.getrandbits(TCB_BITS)
        w = Words(*[(v >> (32 * k)) & 0xFFFFFFFF for k in range(drvcore.TOE_TCB_WORDS)])
        t = unpack_tcb(v)
        for f, (name, width) in enumerate(TCB_LAYOUT):
            assert c.offnic_tcb_get(w, f) == getattr(t, name), name
        f = rng.randrange(len(TCB_LAYOUT))
        name, width = TCB_LAYOUT[f]
        x = rng.getrandbits(width)
        assert c.offnic_tcb_set(w, f, x) == 0
        setattr(t, name, x)
        assert sum(w[k] << (32 * k) for k in range(drvcore.TOE_TCB_WORDS)) == pack_tcb(t), name
        assert c.offnic_tcb_set(w, f, 1 << width) != 0, f"{name}: a value past its width was taken"


def test_command_block(rng):
    """The core's command block of a random handoff is toe_cmdq.pack_block of
    handoff_tcb's Tcb and conn_addr's addresses, byte for byte; unpacked, it gives both back."""
    c = lib()
    for n in range(N):
        hs = random_handoff(rng)
        p = dataclasses.replace(EngineParams(), init_cwnd=rng.randint(1, 40), sack=rng.random() < 0.5)
        key = ConnKey(str(ipaddress.IPv4Address(rng.getrandbits(32))), rng.getrandbits(16),
                      str(ipaddress.IPv4Address(rng.getrandbits(32))), rng.getrandbits(16))
        want = toe_cmdq.pack_block(handoff_tcb(hs, p), conn_addr(key, hs))
        tcb, block = Words(), ctypes.create_string_buffer(drvcore.TOE_BLOCK_BYTES)
        assert c.offnic_toe_tcb_of(tcb, ctypes.byref(c_handoff(hs)), ctypes.byref(c_params(p))) == 0
        a = c_addr(key, hs)
        c.offnic_toe_block_pack(block, ctypes.byref(a), tcb)
        assert block.raw == want, f"seed {rng.seed_value}, handoff {n}: {hs}"
        # as an answer block: word 7 the clock
        now = rng.getrandbits(32)
        answer = bytearray(want)
        answer[28:32] = now.to_bytes(4, "little")
        back, got_now, got_tcb = ToeAddr(), ctypes.c_uint32(), Words()
        c.offnic_toe_block_unpack(bytes(answer), ctypes.byref(back), ctypes.byref(got_now), got_tcb)
        assert bytes(back) == bytes(a) and got_now.value == now and list(got_tcb) == list(tcb)
        assert toe_cmdq.unpack_block(bytes(answer))["addr"] == conn_addr(key, hs)
    bad = c_handoff(random_handoff(rng))
    bad.rcv_size = 3 << 12
    assert c.offnic_toe_tcb_of(Words(), ctypes.byref(bad), ctypes.byref(ToeParams(10, 1))) != 0
    bad = c_handoff(random_handoff(rng))
    bad.mss, bad.flags = 11, bad.flags | drvcore.TOE_TIMESTAMPS     # not even the timestamp option fits
    assert c.offnic_toe_tcb_of(Words(), ctypes.byref(bad), ctypes.byref(ToeParams(10, 1))) != 0


def test_descriptors(rng):
    """Each command's descriptor is toe_cmdq's (Desc.with_arg); block addresses the NIC
    would refuse (misaligned, across 4 KiB, past 2^40) are refused here first."""
    c = lib()
    for _ in range(N):
        op, cid, arg = rng.randrange(8), rng.getrandbits(16), rng.getrandbits(32)
        block = rng.getrandbits(35) << 5 if rng.random() < 0.8 else rng.getrandbits(45)
        ok = block % 32 == 0 and block < 1 << 40 and block % 4096 + 192 <= 4096
        has = op in (0, 6, 7) or (op in (1, 5) and block != 0)
        d = drvcore.Desc()
        err = c.offnic_toe_desc(ctypes.byref(d), op, cid, arg, block)
        if has and not ok:
            assert err != 0, (op, hex(block))
            continue
        assert err == 0
        want = rings.Desc.with_arg(block if op in (0, 1, 5, 6, 7) else 0, cid, 0x20 + op, arg)
        rec = ctypes.create_string_buffer(16)
        c.offnic_desc_pack(rec, ctypes.byref(d))
        assert rec.raw == rings.pack_desc(want) and c.offnic_toe_desc_arg(ctypes.byref(d)) == arg
    assert c.offnic_toe_desc(ctypes.byref(drvcore.Desc()), 8, 0, 0, 0) != 0


def test_answers_and_notes(rng):
    """Completions as answers (toe_cmdq.status_of) and events as notifications
    (rings.unpack_toe_note), random records."""
    c = lib()
    for _ in range(N):
        raw = bytearray(rng.randbytes(16))
        raw[6] = rng.choice([0, 1, 2, rng.randrange(0x20, 0x28)])
        cpl, ans = drvcore.Cpl(), drvcore.ToeAnswer()
        c.offnic_cpl_unpack(bytes(raw), ctypes.byref(cpl))
        c.offnic_toe_answer_of(ctypes.byref(cpl), ctypes.byref(ans))
        want = rings.unpack_cpl(bytes(raw))
        assert (ans.id, ans.status, ans.ts_val, ans.tcp_state) == \
            (want.len & 0xFFFF, toe_cmdq.status_of(want.status), want.rss_hash, want.rss_type), raw.hex()
        ev = bytearray(rng.randbytes(16))
        ev[2] = rng.choice([0, 1, 2, 2])
        note = drvcore.ToeNote()
        got = c.offnic_toe_note_unpack(bytes(ev), ctypes.byref(note))
        if ev[2] != 2:
            assert got != 0
            continue
        assert got == 0 and (note.id, note.kind, note.seq, note.merged) == rings.unpack_toe_note(bytes(ev)), ev.hex()
