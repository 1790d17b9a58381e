"""Seed 004's load control and the mailbox commands, the firmware's own C
(firmware/src/load_control.c, mailbox_cmd.c) compiled for the host and driven through
ctypes, against the independent Python model (offnic_sim/fw/load_control_model.py):
randomised Qlen/Cnum traces with watermark and step changes through the mailbox, hostile
inputs and malformed commands. OFFNIC_SEED replays a run."""
from __future__ import annotations

import ctypes
import os
import random

import pytest

from offnic_sim import firmware
from offnic_sim.fw import defs
from offnic_sim.fw.load_control_model import STATE_CODE, LoadControlModel

from lc_traces import closed_loop

U32 = ctypes.c_uint32
MBOX = defs.FW_MBOX_WORDS


class Lc(ctypes.Structure):
    _fields_ = [(n, U32) for n in ("hard_limit", "queue_size", "hiwat", "lowat", "dec_step", "inc_step",
                                   "soft_limit", "state", "inputs_clamped")]


class FwCtx(ctypes.Structure):
    _fields_ = [("lc", Lc), ("state", U32), ("last_qlen", U32), ("last_cnum", U32)]


@pytest.fixture(scope="module")
def lib():
    so = ctypes.CDLL(str(firmware.build_host_lib()))
    so.lc_init.argtypes, so.lc_init.restype = [ctypes.POINTER(Lc), U32, U32], None
    so.lc_step.argtypes, so.lc_step.restype = [ctypes.POINTER(Lc), U32, U32], ctypes.c_int
    so.mbox_handle.argtypes = [ctypes.POINTER(FwCtx), ctypes.POINTER(U32), U32, ctypes.POINTER(U32)]
    so.mbox_handle.restype = U32
    return so


def _seed() -> int:
    seed = int(os.environ.get("OFFNIC_SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"[offnic] seed {seed} (replay: OFFNIC_SEED={seed})")
    return seed


def _cmd(lib, ctx: FwCtx, words: list[int], cmd_words: int | None = None) -> list[int]:
    buf = (U32 * MBOX)(*words[:MBOX])
    rsp = (U32 * MBOX)(*([0xDEADBEEF] * MBOX))
    st = lib.mbox_handle(ctypes.byref(ctx), buf, MBOX if cmd_words is None else cmd_words, rsp)
    out = list(rsp)
    assert out[1] == st, "returned status differs from the response's"
    assert defs.hdr(0, 0, 0) == 0 and 1 <= (out[0] >> 8 & 0xFF) <= MBOX - 1, f"response length {out[0]:#x}"
    return out


def _check(c: Lc, m: LoadControlModel, where: str) -> None:
    got = (c.soft_limit, c.state, c.hiwat, c.lowat, c.dec_step, c.inc_step, c.inputs_clamped)
    want = (m.soft_limit, STATE_CODE[m.state], m.hiwat, m.lowat, m.dec_step, m.inc_step, m.clamped)
    assert got == want, f"{where}: C (soft, state, hiwat, lowat, dec, inc, clamped) {got} != model {want}"


def test_load_control_against_model(lib):
    seed = _seed()
    rng = random.Random(seed)
    transitions: set[tuple[str, str]] = set()
    refused = {defs.FW_ST_BAD_ORDER: 0, defs.FW_ST_OUT_OF_RANGE: 0}
    for case in range(60):
        hard = rng.choice([0, 1, 2, 64, 1024, 4096, rng.randint(1, 10000)])
        qsize = rng.choice([0, 1, 16, 512, 1024, rng.randint(2, 5000)])
        ctx = FwCtx()
        lib.lc_init(ctypes.byref(ctx.lc), hard, qsize)
        model = LoadControlModel(hard, qsize)
        announced: list[int] = []
        _check(ctx.lc, model, f"seed {seed} case {case} init (hard {hard}, queue {qsize})")
        for i, (qlen, cnum) in enumerate(closed_loop(rng, hard, qsize, 400, lambda: ctx.lc.soft_limit)):
            where = f"seed {seed} case {case} (hard {hard}, queue {qsize}) step {i} qlen {qlen} cnum {cnum}"
            if rng.random() < 0.02:  # the host changes the watermarks, sometimes nonsensically
                hi = rng.randint(0, qsize + 2)
                lo = rng.randint(0, qsize + 2) if rng.random() < 0.5 else rng.randint(0, hi)
                rsp = _cmd(lib, ctx, [defs.hdr(defs.FW_OP_SET_WATERMARKS, 2, i), hi, lo])
                want = model.set_watermarks(hi, lo)
                assert rsp[1] == want, f"{where}: SET_WATERMARKS {hi} {lo}: status {rsp[1]}, model {want}"
                if want in refused:
                    refused[want] += 1
            if rng.random() < 0.01:
                d, u = rng.randint(0, hard + 2), rng.randint(0, hard + 2)
                rsp = _cmd(lib, ctx, [defs.hdr(defs.FW_OP_SET_STEPS, 2, i), d, u])
                assert rsp[1] == model.set_steps(d, u), f"{where}: SET_STEPS {d} {u}"
            before = model.state
            changed = lib.lc_step(ctypes.byref(ctx.lc), qlen, cnum)
            if changed:
                announced.append(ctx.lc.soft_limit)
            assert bool(changed) == model.step(qlen, cnum), f"{where}: announcement differs"
            transitions.add((before, model.state))
            _check(ctx.lc, model, where)
            assert ctx.lc.soft_limit <= hard, f"{where}: Soft_limit above Hard_limit"
        assert announced == model.announced
    # the traces must have reached every edge of Figure 3 and both refusals
    for edge in [("MONITOR", "DECREASE"), ("DECREASE", "MONITOR"), ("MONITOR", "INCREASE"),
                 ("INCREASE", "MONITOR"), ("INCREASE", "DECREASE")]:
        assert edge in transitions, f"seed {seed}: transition {edge} never exercised"
    assert all(refused.values()), f"seed {seed}: refusals exercised {refused}"


def test_sustained_overload_and_recovery(lib):
    """Figure 6 in miniature: Qlen held above Hiwat while connections end lowers
    Soft_limit step by step; held below Lowat while connections arrive raises it back
    to Hard_limit, never beyond."""
    lc = Lc()
    lib.lc_init(ctypes.byref(lc), 4096, 1024)
    assert (lc.soft_limit, lc.hiwat, lc.lowat, lc.dec_step) == (4096, 768, 256, 64)
    cnum, lows = 4096, []
    for _ in range(200):
        lib.lc_step(ctypes.byref(lc), 900, cnum)
        cnum = min(cnum, lc.soft_limit - 1)  # connections end below the limit
        lows.append(lc.soft_limit)
    assert lows == sorted(lows, reverse=True) and lows[-1] < 1500
    for _ in range(400):
        lib.lc_step(ctypes.byref(lc), 10, cnum)
        cnum = lc.soft_limit  # new connections fill the room
    assert lc.soft_limit == 4096 and lc.state == STATE_CODE["MONITOR"]


def test_mailbox_bad_commands(lib):
    """Unknown opcodes, bad lengths and out-of-range values each get their error response
    and change nothing."""
    ctx = FwCtx()
    lib.lc_init(ctypes.byref(ctx.lc), 1024, 256)
    snapshot = bytes(ctx)
    H = defs.hdr
    cases = [
        ([H(0x7F, 0, 1)], defs.FW_ST_UNKNOWN_OPCODE),
        ([H(0x00, 0, 2)], defs.FW_ST_UNKNOWN_OPCODE),
        ([H(defs.FW_OP_GET_VERSION, 1, 3), 0], defs.FW_ST_BAD_LENGTH),
        ([H(defs.FW_OP_GET_LOAD, 3, 4)], defs.FW_ST_BAD_LENGTH),
        ([H(defs.FW_OP_SET_WATERMARKS, 1, 5), 10], defs.FW_ST_BAD_LENGTH),
        ([H(defs.FW_OP_SET_WATERMARKS, 3, 6), 10, 5, 0], defs.FW_ST_BAD_LENGTH),
        ([H(defs.FW_OP_ECHO, 15, 7)] + list(range(15)), defs.FW_ST_BAD_LENGTH),  # no room for the status
        ([H(defs.FW_OP_ECHO, 200, 8)], defs.FW_ST_BAD_LENGTH),
        ([H(defs.FW_OP_SET_WATERMARKS, 2, 9), 100, 200], defs.FW_ST_BAD_ORDER),  # Hiwat < Lowat
        ([H(defs.FW_OP_SET_WATERMARKS, 2, 10), 257, 0], defs.FW_ST_OUT_OF_RANGE),  # Hiwat > queue
        ([H(defs.FW_OP_SET_WATERMARKS, 2, 11), 0xFFFFFFFF, 0xFFFFFFFF], defs.FW_ST_OUT_OF_RANGE),
        ([H(defs.FW_OP_SET_STEPS, 2, 12), 0, 1], defs.FW_ST_OUT_OF_RANGE),
        ([H(defs.FW_OP_SET_STEPS, 2, 13), 1, 1025], defs.FW_ST_OUT_OF_RANGE),
    ]
    for words, status in cases:
        rsp = _cmd(lib, ctx, words)
        assert rsp[1] == status, f"command {[hex(w) for w in words]}: status {rsp[1]}, want {status}"
        assert rsp[0] == H(words[0] & 0xFF, 1, words[0] >> 16), f"response header {rsp[0]:#x}"
        assert rsp[2] == 0xDEADBEEF, "an error response wrote beyond its status"
        assert bytes(ctx) == snapshot, f"command {[hex(w) for w in words]} changed the state"
    # a header that claims more words than the host left
    rsp = _cmd(lib, ctx, [H(defs.FW_OP_ECHO, 3, 14), 1, 2, 3], cmd_words=2)
    assert rsp[1] == defs.FW_ST_BAD_LENGTH
    rsp = _cmd(lib, ctx, [], cmd_words=0)
    assert rsp[1] == defs.FW_ST_BAD_LENGTH
    # and the good ones
    rsp = _cmd(lib, ctx, [H(defs.FW_OP_ECHO, 14, 15)] + list(range(100, 114)))
    assert rsp[:16] == [H(defs.FW_OP_ECHO, 15, 15), 0] + list(range(100, 114))
    rsp = _cmd(lib, ctx, [H(defs.FW_OP_SET_WATERMARKS, 2, 16), 200, 200])
    assert rsp[1] == defs.FW_ST_OK and (ctx.lc.hiwat, ctx.lc.lowat) == (200, 200)
    rsp = _cmd(lib, ctx, [H(defs.FW_OP_GET_LOAD, 0, 17)])
    assert rsp[0] == H(defs.FW_OP_GET_LOAD, 11, 17)
    assert rsp[1:12] == [0, 0, 1024, 1024, 200, 200, 0, 0, 16, 16, 0]
    rsp = _cmd(lib, ctx, [H(defs.FW_OP_GET_VERSION, 0, 0xFFFF)])
    assert rsp[:4] == [H(defs.FW_OP_GET_VERSION, 3, 0xFFFF), 0, defs.FW_VERSION, 0]
