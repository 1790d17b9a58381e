"""The TCP engine's hardware (hw/src/offnic/toe/TcpDecide.scala) seen from the model's
side (toe_model.py): the Tcb as port fields, the segment as the hardware takes it, and the
segments, notifications and settings as the hardware gives and takes them. Shared by the
engine's cocotb benches.
"""
from __future__ import annotations

import dataclasses
import struct

from . import tcp_parse
from .toe_model import NIL, EngineParams, Tcb

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
