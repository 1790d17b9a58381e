"""The TCP engine's hardware (hw/src/offnic/toe/TcpDecide.scala) seen from the model's
side (toe_model.py): the Tcb as port fields, the segment as the hardware takes it, and the
segments, notifications and settings as the hardware gives and takes them. Shared by the
engine's cocotb benches.
"""
from __future__ import annotations

import dataclasses
import random
import struct

from cocotb.triggers import FallingEdge, Timer

from offnic_sim.toe import tcp_parse
from offnic_sim.toe.toe_model import NIL, Decision, EngineParams, Tcb

M32 = 0xFFFFFFFF

# Tcb fields the hardware keeps in its TimerWheel instead (toe_model's wheel links).
WHEEL_FIELDS = ("wh_in", "wh_slot", "wh_prev", "wh_next")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _port(name: str) -> str:
    """The Chisel Tcb port suffix of a model field: ooo_s2 -> ooo_2_start."""
    if name.startswith("ooo_") and name[4] in "se" and name[5:].isdigit():
        return f"ooo_{name[5:]}_{'start' if name[4] == 's' else 'end'}"
    return _camel(name)


TCB_PORTS: list[tuple[str, str]] = [(f.name, _port(f.name)) for f in dataclasses.fields(Tcb)
                                    if f.name not in WHEEL_FIELDS]


def drive_tcb(dut, prefix: str, t: Tcb) -> None:
    for name, port in TCB_PORTS:
        getattr(dut, f"{prefix}_{port}").value = getattr(t, name)


def read_tcb(dut, prefix: str) -> Tcb:
    t = Tcb()
    for name, port in TCB_PORTS:
        setattr(t, name, int(getattr(dut, f"{prefix}_{port}").value))
    t.wh_prev = t.wh_next = NIL
    return t


def tcb_diff(want: Tcb, got: Tcb) -> list[str]:
    """Fields that differ (the wheel links are not compared)."""
    return [f"{name}: want {getattr(want, name)} got {getattr(got, name)}" for name, _ in TCB_PORTS
            if getattr(want, name) != getattr(got, name)]


EVENT_KINDS = {"seg": 0, "timer": 1, "send": 2, "read": 3, "close": 4, "install": 5, "restore": 6}  # EventKind
SEG_FIELDS = ("seq", "ack", "flags", "window", "tsPresent", "tsVal", "dataStart", "dataLen")


def seg_in(frame: bytes) -> dict[str, int]:
    """The SegIn fields of a received frame, as TcpParser gives them."""
    e = tcp_parse.expected(frame)
    if e["kind"] != tcp_parse.TCP:
        raise ValueError(f"not a good TCP segment: {e}")
    ts = e["ts"]
    return dict(seq=e["seq"], ack=e["ack"], flags=e["flags"], window=e["window"], tsPresent=int(ts is not None),
                tsVal=ts[0] if ts else 0, dataStart=e["data_start"],
                dataLen=e["data_len"])


def tx_fields(frame: bytes) -> dict:
    """A sent frame as a TxSeg's fields (the comparable ones): seq, ack, flags, window,
    timestamps, SACK blocks, payload length."""
    e = tcp_parse.expected(frame)
    assert e["kind"] == tcp_parse.TCP, e
    ts = e["ts"]
    opts = frame[e["data_start"] - (frame[46] >> 4) * 4 + 20:e["data_start"]]
    sack: list[tuple[int, int]] = []
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind in (0, 1):
            i += 1
            continue
        size = opts[i + 1]
        if kind == 5:
            sack = [struct.unpack("!II", opts[k:k + 8]) for k in range(i + 2, i + size, 8)]
        i += size
    return dict(seq=e["seq"], ack=e["ack"], flags=e["flags"], window=e["window"], tsPresent=int(ts is not None),
                tsVal=ts[0] if ts else 0, tsEcr=ts[1] if ts else 0, sack=sack, payloadLen=e["data_len"])


NOTE_KINDS = {"rx": 0, "acked": 1, "fin": 2, "rst": 3, "error": 4, "closed": 5}


def note_fields(note: tuple) -> tuple[int, int]:
    """A model notification as (kind, seq)."""
    kind = NOTE_KINDS[note[0]]
    return kind, note[2] if note[0] in ("rx", "acked") else 0


def cfg_values(p: EngineParams) -> dict[str, int]:
    """The EngineCfg ports for the model's parameters (tick_us must be 2^tickShift)."""
    return dict(delackUs=p.delack_us, rtoMinUs=p.rto_min_us, rtoMaxUs=p.rto_max_us, rtoInitialUs=p.rto_initial_us,
                timeWaitUs=p.time_wait_us, finWait2On=int(p.fin_wait_2_us is not None),
                finWait2Us=p.fin_wait_2_us or 0, maxRetries=p.max_retries)


def ts_clock(now_us: int, p: EngineParams) -> int:
    return (now_us // p.ts_tick_us) & M32


async def replay_decisions(d, traces: list[Decision], params: EngineParams, rng: random.Random,
                           stall_from: int | None = None) -> list[tuple[str, int]]:
    """Replay the model's decisions on a TcpDecide (`d`, out of reset, at a falling edge):
    each from the same TCB, input and time; from decision `stall_from` on, its outputs
    see random back-pressure. Asserts the TCB after, every segment sent and every
    notification are the model's. Returns (kind, cycles from input taken to answer)."""
    for name, v in cfg_values(params).items():
        getattr(d, f"cfg_{name}").value = v
    stall = 0.0
    took_at: list[tuple[str, int]] = []
    for n, dec in enumerate(traces):
        if stall_from is not None and n >= stall_from:
            stall = 0.5
        drive_tcb(d, "s_in_bits_tcb", dec.before)
        seg = seg_in(dec.frame) if dec.kind == "seg" else dict.fromkeys(SEG_FIELDS, 0)
        for k, v in seg.items():
            getattr(d, f"s_in_bits_seg_{k}").value = v
        d.s_in_bits_kind.value = EVENT_KINDS[dec.kind]
        d.s_in_bits_arg.value = dec.arg
        d.s_in_bits_id.value = dec.conn
        d.now_us.value = dec.now_us & ((1 << 42) - 1)
        d.now_ts.value = ts_clock(dec.now_us, params)
        d.s_in_valid.value = 1
        sent, notes, out, cycles, taken = [], [], None, 0, None
        for _ in range(4000):
            d.m_tx_ready.value = int(rng.random() >= stall)
            d.m_note_ready.value = int(rng.random() >= stall)
            d.m_rxw_ready.value = int(rng.random() >= stall)
            await Timer(1, "ns")
            took = bool(d.s_in_valid.value and d.s_in_ready.value)
            if d.m_tx_valid.value and d.m_tx_ready.value:
                sent.append(_tx_of(d))
            if d.m_note_valid.value and d.m_note_ready.value:
                notes.append((int(d.m_note_bits_kind.value), int(d.m_note_bits_seq.value)))
            if d.m_out_valid.value:
                out = (bool(d.m_out_bits_alive.value), read_tcb(d, "m_out_bits_tcb"))
                taken = cycles - taken
            await FallingEdge(d.clock)
            cycles += 1
            if took:
                d.s_in_valid.value = 0
                taken = cycles
            if out is not None and not d.m_note_valid.value and not d.m_rxw_valid.value:
                break
        where = f"decision {n} ({dec.kind} {dec.arg}, conn {dec.conn}, t={dec.now_us} us)"
        assert out is not None, f"{where}: no answer"
        alive, got = out
        # a restore returns the state after it although the connection leaves
        assert alive == (dec.after is not None and dec.kind != "restore"), f"{where}: alive {alive}"
        if dec.after is not None:
            diff = tcb_diff(dec.after, got)
            assert not diff, f"{where}: TCB differs: {diff}"
        want_tx = [tx_fields(f) for f in dec.emitted]
        assert sent == want_tx, f"{where}: sent {sent}, model {want_tx}"
        want_notes = [note_fields(x) for x in dec.notified]
        assert notes == want_notes, f"{where}: notified {notes}, model {want_notes}"
        took_at.append((dec.kind, taken))
    return took_at


# The fields of ConnAddr and TcpFields, nested in SegHeader (addr, tcp), TxSeg (tcp) and
# TxReq (addr, seg.tcp): field_port("s_hdr_bits", "seq") is "s_hdr_bits_tcp_seq".
ADDR_FIELDS = ("dstMac", "srcMac", "srcIp", "dstIp", "sport", "dport")
TCP_FIELDS = ("seq", "ack", "flags", "window", "tsPresent", "tsVal", "tsEcr", "sackN")


def field_port(prefix: str, name: str) -> str:
    if name in ADDR_FIELDS:
        return f"{prefix}_addr_{name}"
    if name in TCP_FIELDS:
        return f"{prefix}_tcp_{name}"
    return f"{prefix}_{name}"


def sack_port(prefix: str, k: int, edge: str) -> str:
    """edge: "start" or "end" of SACK block k."""
    return f"{prefix}_tcp_sack_{k}_{edge}"


def _tx_of(d) -> dict:
    v = lambda name: int(getattr(d, field_port("m_tx_bits", name)).value)  # noqa: E731
    n = v("sackN")
    sack = [(int(getattr(d, sack_port("m_tx_bits", k, "start")).value),
             int(getattr(d, sack_port("m_tx_bits", k, "end")).value)) for k in range(n)]
    ts = bool(v("tsPresent"))
    return dict(seq=v("seq"), ack=v("ack"), flags=v("flags"), window=v("window"), tsPresent=int(ts),
                tsVal=v("tsVal") if ts else 0, tsEcr=v("tsEcr") if ts else 0, sack=sack, payloadLen=v("payloadLen"))
