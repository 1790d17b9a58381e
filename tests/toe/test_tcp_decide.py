"""The TCP engine's segment decision (hw/src/offnic/toe/TcpDecide.scala) against the exact
model (sim/offnic_sim/toe_model.py), decision by decision.

The model carries thousands of connections through lossy, reordering, duplicating links
against TcpPeers, plus hostile input (toe_sim.decision_traces), recording for every
segment of an installed connection the TCB before and after, the segments sent and the
notifications. Each decision is replayed on the hardware from the same TCB, segment and
time, with random back-pressure on its outputs: the TCB after, every segment sent (seq,
ack, flags, window, timestamps, SACK blocks, payload length) and every notification must
be the model's. Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer

from offnic_sim import toe_hw, toe_sim
from offnic_sim.harness import run_cocotb
from offnic_sim.hw import Design

M32 = 0xFFFFFFFF


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def tcp_decide(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    d = dut
    Clock(d.clock, 4, unit="ns").start()
    traces = toe_sim.decision_traces(cocotb.RANDOM_SEED)
    params = toe_sim.sim_params()                # what every engine of decision_traces runs with
    for name, v in toe_hw.cfg_values(params).items():
        getattr(d, f"cfg_{name}").value = v
    d.reset.value = 1
    d.s_in_valid.value = 0
    d.m_tx_ready.value = 0
    d.m_note_ready.value = 0
    d.m_rxw_ready.value = 0
    await ClockCycles(d.clock, 4)
    await FallingEdge(d.clock)
    d.reset.value = 0

    stall = 0.0
    cycles = 0
    for n, dec in enumerate(traces):
        if n == len(traces) // 2:
            stall = 0.5
        toe_hw.drive_tcb(d, "s_in_bits_tcb", dec.before)
        seg = toe_hw.seg_in(dec.frame) if dec.kind == "seg" else dict.fromkeys(toe_hw.SEG_FIELDS, 0)
        for k, v in seg.items():
            getattr(d, f"s_in_bits_seg_{k}").value = v
        d.s_in_bits_kind.value = toe_hw.EVENT_KINDS[dec.kind]
        d.s_in_bits_arg.value = dec.arg
        d.s_in_bits_id.value = dec.conn
        d.now_us.value = dec.now_us
        d.now_ts.value = toe_hw.ts_clock(dec.now_us, params)
        d.s_in_valid.value = 1
        sent, notes, writes, out = [], [], [], None
        for _ in range(2000):
            d.m_tx_ready.value = int(rng.random() >= stall)
            d.m_note_ready.value = int(rng.random() >= stall)
            d.m_rxw_ready.value = int(rng.random() >= stall)
            await Timer(1, "ns")
            if d.s_in_valid.value and d.s_in_ready.value:
                took = True
            else:
                took = False
            if d.m_tx_valid.value and d.m_tx_ready.value:
                sent.append(tx_of(d))
            if d.m_note_valid.value and d.m_note_ready.value:
                notes.append((int(d.m_note_bits_kind.value), int(d.m_note_bits_seq.value)))
            if d.m_rxw_valid.value and d.m_rxw_ready.value:
                writes.append((int(d.m_rxw_bits_seq.value), int(d.m_rxw_bits_len.value)))
            if d.m_out_valid.value:
                out = (bool(d.m_out_bits_alive.value), toe_hw.read_tcb(d, "m_out_bits_tcb"))
            await FallingEdge(d.clock)
            cycles += 1
            if took:
                d.s_in_valid.value = 0
            if out is not None and not d.m_note_valid.value:
                break
        where = f"decision {n} ({dec.kind} {dec.arg}, conn {dec.conn}, t={dec.now_us} us)"
        assert out is not None, f"{where}: no answer"
        alive, got = out
        # a restore returns the state after it although the connection leaves
        assert alive == (dec.after is not None and dec.kind != "restore"), f"{where}: alive {alive}"
        if dec.after is not None:
            diff = toe_hw.tcb_diff(dec.after, got)
            assert not diff, f"{where}: TCB differs: {diff}"
        want_tx = [toe_hw.tx_fields(f) for f in dec.emitted]
        assert sent == want_tx, f"{where}: sent {sent}, model {want_tx}"
        want_notes = [toe_hw.note_fields(x) for x in dec.notified]
        assert notes == want_notes, f"{where}: notified {notes}, model {want_notes}"
    cov = toe_sim.decision_coverage(traces)
    dut._log.info(f"{len(traces)} decisions in {cycles} cycles; coverage {dict(cov)}")


def tx_of(d) -> dict:
    n = int(d.m_tx_bits_sackN.value)
    sack = [(int(getattr(d, f"m_tx_bits_sack_{k}_start").value), int(getattr(d, f"m_tx_bits_sack_{k}_end").value))
            for k in range(n)]
    return dict(seq=int(d.m_tx_bits_seq.value), ack=int(d.m_tx_bits_ack.value), flags=int(d.m_tx_bits_flags.value),
                window=int(d.m_tx_bits_window.value), tsPresent=int(d.m_tx_bits_tsPresent.value),
                tsVal=int(d.m_tx_bits_tsVal.value) if d.m_tx_bits_tsPresent.value else 0,
                tsEcr=int(d.m_tx_bits_tsEcr.value) if d.m_tx_bits_tsPresent.value else 0,
                sack=sack, payloadLen=int(d.m_tx_bits_payloadLen.value))


def test_tcp_decide():
    run_cocotb(Design.of("toe.TcpDecide", connections=4096), __name__)
