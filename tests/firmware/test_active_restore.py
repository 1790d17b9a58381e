"""The firmware's active restore (firmware/src/active_restore.c), compiled for the host
and driven through ctypes, against the independent model
(offnic_sim/fw/active_restore_model.py): random rounds of per-connection costs while load
control moves, answers, lost answers and a wrapping clock; hostile settings and answers;
a faulty scan that offers a connection twice. OFFNIC_SEED replays a run."""
from __future__ import annotations

import ctypes
import os
import random

import pytest

from offnic_sim import firmware
from offnic_sim.fw import defs
from offnic_sim.fw.active_restore_model import MAX_PENDING, MAX_PICK, ActiveRestoreModel

U32 = ctypes.c_uint32


class Lc(ctypes.Structure):
    _fields_ = [(n, U32) for n in ("hard_limit", "queue_size", "hiwat", "lowat", "dec_step", "inc_step",
                                   "soft_limit", "state", "inputs_clamped")]


class Pick(ctypes.Structure):
    _fields_ = [("conn", U32), ("cost", U32)]


class Ar(ctypes.Structure):
    _fields_ = [("enabled", U32), ("max_per_round", U32), ("timeout_us", U32), ("want", U32), ("nbest", U32),
                ("best", Pick * MAX_PICK), ("npending", U32), ("pending_conn", U32 * MAX_PENDING),
                ("pending_since_us", U32 * MAX_PENDING), ("requested", U32), ("answered", U32),
                ("expired", U32), ("bad_answers", U32)]


@pytest.fixture(scope="module")
def lib():
    so = ctypes.CDLL(str(firmware.build_host_lib()))
    ar_p = ctypes.POINTER(Ar)
    for name, args, res in [("ar_init", [ar_p], None), ("ar_configure", [ar_p, U32, U32, U32], U32),
                            ("ar_wanted", [ar_p, ctypes.POINTER(Lc), U32], U32), ("ar_begin", [ar_p, U32], None),
                            ("ar_offer", [ar_p, U32, U32], None),
                            ("ar_finish", [ar_p, U32, ctypes.POINTER(Pick)], U32),
                            ("ar_answered", [ar_p, U32], U32), ("ar_expire", [ar_p, U32], U32)]:
        f = getattr(so, name)
        f.argtypes, f.restype = args, res
    return so


def _seed() -> int:
    seed = int(os.environ.get("OFFNIC_SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"[offnic] seed {seed} (replay: OFFNIC_SEED={seed})")
    return seed


def _round(lib, ar: Ar, want: int, offers: list[tuple[int, int]], now: int) -> list[tuple[int, int]]:
    lib.ar_begin(ctypes.byref(ar), want)
    for conn, cost in offers:
        lib.ar_offer(ctypes.byref(ar), conn, cost)
    out = (Pick * MAX_PICK)()
    n = lib.ar_finish(ctypes.byref(ar), now & 0xFFFFFFFF, out)
    assert n <= MAX_PICK
    return [(out[i].conn, out[i].cost) for i in range(n)]


def _counters(ar: Ar) -> tuple[int, ...]:
    return ar.requested, ar.answered, ar.expired, ar.bad_answers, ar.npending


def test_active_restore_against_model(lib):
    seed = _seed()
    rng = random.Random(seed)
    picked_total = 0
    for case in range(40):
        hard = rng.choice([4, 64, 1024, 4096])
        ar, m = Ar(), ActiveRestoreModel()
        lib.ar_init(ctypes.byref(ar))
        lc = Lc(hard_limit=hard)
        now = rng.choice([0, 0xFFFFFFFF - 50_000, rng.randrange(1 << 32)])  # the clock wraps in some cases
        for step in range(120):
            where = f"seed {seed} case {case} step {step}"
            if step == 0 or rng.random() < 0.05:  # settings, sometimes out of range
                args = (rng.choice([0, 1, 1, 1, 2]), rng.choice([0, 1, 3, MAX_PICK, MAX_PICK + 1]),
                        rng.choice([0, 1, 500, 10_000, 2_000_000]))
                st = lib.ar_configure(ctypes.byref(ar), *args)
                assert st == m.configure(*args), f"{where}: configure{args} status {st}"
            lc.state = rng.choice([0, 1, 1, 2])
            lc.soft_limit = rng.randint(1, hard)
            cnum = max(0, min(hard, lc.soft_limit + rng.randint(-4, 40)))
            want = lib.ar_wanted(ctypes.byref(ar), ctypes.byref(lc), cnum)
            assert want == m.wanted(lc.state, lc.soft_limit, cnum), \
                f"{where}: wanted {want} (state {lc.state}, soft {lc.soft_limit}, cnum {cnum}, pending {len(m.pending)})"
            conns = rng.sample(range(hard), min(hard, rng.randint(0, 200)))
            offers = [(c, rng.choice([0, rng.randint(1, 5), rng.randint(1, 1 << 20), 0xFFFFFFFF])) for c in conns]
            if rng.random() < 0.2:  # ties
                offers = [(c, 7) for c, _ in offers]
            if rng.random() < 0.1:  # a round with more asked than could ever be picked
                want = rng.randint(0, MAX_PICK + 5)
            m.begin(want)
            for c, cost in offers:
                m.offer(c, cost)
            got = _round(lib, ar, want, offers, now)
            exp = m.finish(now & 0xFFFFFFFF)
            assert got == exp, f"{where}: picks {got} != model {exp}"
            picked_total += len(got)
            now += rng.randint(0, 4_000)
            for conn in list(m.pending)[:]:  # the host answers some, loses some
                if rng.random() < 0.4:
                    assert lib.ar_answered(ctypes.byref(ar), conn) == m.answer(conn) == defs.FW_ST_OK
            if rng.random() < 0.1:  # an answer for something never asked
                conn = rng.randrange(hard)
                assert lib.ar_answered(ctypes.byref(ar), conn) == m.answer(conn), f"{where}: stray answer {conn}"
            n = lib.ar_expire(ctypes.byref(ar), now & 0xFFFFFFFF)
            assert n == m.expire(now & 0xFFFFFFFF), f"{where}: expired {n}"
            assert _counters(ar) == (m.requested, m.answered, m.expired, m.bad_answers, len(m.pending)), where
            assert [ar.pending_conn[i] for i in range(ar.npending)] == list(m.pending), f"{where}: pending"
    assert picked_total > 500, f"seed {seed}: only {picked_total} picks: the test no longer exercises the choice"


def test_active_restore_faulty_scan_and_limits(lib):
    seed = _seed()
    rng = random.Random(seed)
    ar = Ar()
    lib.ar_init(ctypes.byref(ar))
    assert (ar.enabled, ar.max_per_round) == (0, 1)
    lc = Lc(hard_limit=100, soft_limit=10, state=1)
    assert lib.ar_wanted(ctypes.byref(ar), ctypes.byref(lc), 50) == 0, "disabled: asks for nothing"
    assert lib.ar_configure(ctypes.byref(ar), 1, MAX_PICK, 1000) == defs.FW_ST_OK
    assert lib.ar_wanted(ctypes.byref(ar), ctypes.byref(lc), 50) == MAX_PICK
    lc.state = 0
    assert lib.ar_wanted(ctypes.byref(ar), ctypes.byref(lc), 50) == 0, "MONITOR: asks for nothing"
    lc.state = 1
    # A faulty scan: every connection offered several times with changing costs. The picks
    # are distinct, sorted dearest first, and each cost is one the connection was offered at.
    for trial in range(200):
        offered: dict[int, set[int]] = {}
        offers = []
        for _ in range(rng.randint(1, 60)):
            c, cost = rng.randrange(20), rng.randint(1, 50)
            offered.setdefault(c, set()).add(cost)
            offers.append((c, cost))
        picks = _round(lib, ar, MAX_PICK, offers, trial)
        conns = [c for c, _ in picks]
        assert len(set(conns)) == len(conns), f"seed {seed} trial {trial}: a connection picked twice {picks}"
        assert picks == sorted(picks, key=lambda p: (-p[1], p[0])), f"seed {seed} trial {trial}: order {picks}"
        assert all(cost in offered[c] for c, cost in picks), f"seed {seed} trial {trial}: invented cost {picks}"
        for c in conns:
            assert lib.ar_answered(ctypes.byref(ar), c) == defs.FW_ST_OK
        assert ar.npending == 0
    # Pending requests are bounded: rounds never ask for more than there is room for.
    for k in range(10):
        want = lib.ar_wanted(ctypes.byref(ar), ctypes.byref(lc), 100)
        _round(lib, ar, want, [(c, 1000 - c) for c in range(100)], 10_000 + k)
        assert ar.npending <= MAX_PENDING
    assert ar.npending == MAX_PENDING
    assert lib.ar_wanted(ctypes.byref(ar), ctypes.byref(lc), 100) == 0, "no room: asks for nothing"
    assert _round(lib, ar, MAX_PICK, [(c, 5) for c in range(200, 220)], 20_000) == [], "no room: picks nothing"
    assert lib.ar_expire(ctypes.byref(ar), 10_000 + 999) == 0
    assert lib.ar_expire(ctypes.byref(ar), 10_000 + 1000) == MAX_PICK, "the oldest round times out first"
    assert [ar.pending_conn[i] for i in range(ar.npending)] == list(range(MAX_PICK, 2 * MAX_PICK))
    assert lib.ar_answered(ctypes.byref(ar), 12345) == defs.FW_ST_NOT_PENDING
    assert ar.bad_answers == 1
