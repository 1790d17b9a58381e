"""`./offnic bench toe`, simulation side: the TCP offload engine's blocks measured one by
one (toe_report.py runs each on its own design and writes results/bench-toe.json).

- table: random keys inserted until the first insert that fails (the load factor the
  table reaches), cycles per insert and per delete on the way, lookups per cycle in a
  long burst; every response and lookup checked against the exact model as it goes;
- parser: back-to-back frames of one kind (a bare ACK, an ACK with timestamps, with SACK
  blocks too, a full-size segment), cycles per frame against the frame's time on a 25G
  wire;
- wheel: arms back to back, then expiries of thousands of timers due on one tick;
- steer: back-to-back frames (half of them segments of installed connections) through the
  receive front (parser, table lookup, frame FIFO, output choice), cycles per frame;
- header: pure ACKs (with timestamps; with timestamps and 3 SACK blocks) built back to
  back, cycles per segment;
- decide: the model's traced decisions (toe_sim.decision_traces) replayed on TcpDecide
  without back-pressure, each checked: cycles per decision by kind.
Results go to the JSON file named in the bench settings (`out`).
"""
from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSource

from offnic_sim import conntable_model as ctm
from offnic_sim.conntable_tb import ConnTableTB
from offnic_sim.harness import bench_config
from offnic_sim.tcppeer import build_packet

CLOCK_MHZ = 250.0


def _write(rec: dict) -> None:
    Path(bench_config()["out"]).write_text(json.dumps(rec, indent=1) + "\n")


def frame_rate(frame_bytes: int, cycles_per_frame: float) -> dict:
    """A frame rate at the clock and a 25G port's line rate for frames of `frame_bytes`
    (with FCS; preamble and gap added)."""
    wire_ns = (frame_bytes + 20) * 8 / 25.0
    return {"frame_bytes": frame_bytes, "cycles_per_frame": round(cycles_per_frame, 3),
            "mpps": round(CLOCK_MHZ / cycles_per_frame, 2), "line_rate_mpps_25g": round(1e3 / wire_ns, 2)}


async def cycles_per_event(clock, n: int, events) -> float:
    """Clock cycles per event, first to last, until `n` events: `events()` says how many
    happen in the cycle (sampled at each rising edge)."""
    seen, first, last, cyc = 0, None, None, 0
    while seen < n:
        await RisingEdge(clock)
        cyc += 1
        k = events()
        if k:
            seen += k
            first = cyc if first is None else first
            last = cyc
    return (last - first) / (n - 1)


@cocotb.test()
async def table(dut):
    cfg = bench_config()
    rng = random.Random(cfg.get("seed", 1))
    tb = ConnTableTB(dut, cfg.get("seed", 1), connections=cfg["connections"], buckets=cfg["buckets"],
                     max_kicks=cfg["max_kicks"])
    await tb.start()
    slots = 8 * cfg["buckets"]
    marks, placed, kicks = {}, [], 0
    t0 = tb.cycle
    while True:
        key = rng.getrandbits(ctm.KEY_BITS)
        out = await tb.command(False, key)
        if out.status != ctm.OK:
            break
        placed.append(key)
        kicks += out.kicks
        lf = len(placed) / slots
        for m in (0.5, 0.85, 0.9):
            if lf >= m and m not in marks:
                marks[m] = (tb.cycle - t0) / len(placed)
    fill_cycles = (tb.cycle - t0) / len(placed)
    # Lookups: a long burst of live keys, nothing stalled.
    await tb.settle()
    tb.first_take = None
    n_look = 4000
    tb.lookups += [rng.choice(placed) for _ in range(n_look)]
    await tb.settle()
    look_span = tb.last_answer - tb.first_take + 1
    # Deletes (what a restore costs the table) down to half full.
    t1 = tb.cycle
    n_del = len(placed) // 2
    for k in placed[:n_del]:
        assert (await tb.command(True, k)).status == ctm.OK
    del_cycles = (tb.cycle - t1) / n_del
    _write({"slots": slots, "connections": cfg["connections"], "buckets": cfg["buckets"],
            "max_kicks": cfg["max_kicks"], "placed_before_first_failure": len(placed),
            "load_factor": round(len(placed) / slots, 4), "moves_per_insert": round(kicks / len(placed), 3),
            "cycles_per_insert_to_0.5": round(marks.get(0.5, fill_cycles), 2),
            "cycles_per_insert_to_0.85": round(marks.get(0.85, fill_cycles), 2),
            "cycles_per_insert_to_first_failure": round(fill_cycles, 2),
            "cycles_per_delete": round(del_cycles, 2), "lookups": n_look, "lookup_cycles": look_span,
            "lookups_per_cycle": round(n_look / look_span, 4), "commands_checked": len(tb.outcomes),
            "lookups_checked": tb.n_checked})


def parser_frames(kind: str, rng: random.Random) -> bytes:
    ts = struct.pack("!BBII", 8, 10, rng.getrandbits(32), rng.getrandbits(32))
    opts, payload = {"ack": (b"", 0), "ack_ts": (b"\x01\x01" + ts, 0),
                     "ack_ts_sack": (b"\x01\x01" + ts + b"\x01\x01\x05\x12" + rng.randbytes(16), 0),
                     "mss_1460": (b"\x01\x01" + ts, 1448)}[kind]
    p = build_packet(rng.randbytes(4), rng.randbytes(4), 40000, 80, rng.getrandbits(32), rng.getrandbits(32),
                     0x10, 1000, rng.randbytes(payload), options=opts)
    f = bytes.fromhex("020000000002020000000001") + b"\x08\x00" + p
    return f + bytes(max(0, 60 - len(f)))


@cocotb.test()
async def parser(dut):
    cfg = bench_config()
    rng = random.Random(cfg.get("seed", 1))
    Clock(dut.clock, 4, unit="ns").start()
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clock, dut.reset)
    dut.m_axis_tready.value = 1
    dut.m_info_ready.value = 1
    dut.reset.value = 1
    await ClockCycles(dut.clock, 4)
    dut.reset.value = 0
    out = {}
    for kind in ("ack", "ack_ts", "ack_ts_sack", "mss_1460"):
        n = 400
        frames = [parser_frames(kind, rng) for _ in range(n)]
        for f in frames:
            await src.send(AxiStreamFrame(f))
        per = await cycles_per_event(dut.clock, n, lambda: int(dut.m_info_valid.value and dut.m_info_ready.value))
        out[kind] = frame_rate(len(frames[0]) + 4, per)
        await ClockCycles(dut.clock, 20)
    _write(out)


@cocotb.test()
async def wheel(dut):
    cfg = bench_config()
    d = dut
    Clock(d.clock, 4, unit="ns").start()
    d.reset.value = 1
    d.cmd_valid.value = 0
    d.expired_ready.value = 1
    d.cfg_tick_cycles.value = 60_000  # a slow tick: the arms all land on one
    await ClockCycles(d.clock, 4)
    d.reset.value = 0
    while not d.status_ready.value:
        await ClockCycles(d.clock, 16)
    n = cfg["connections"]
    await FallingEdge(d.clock)
    d.cmd_valid.value = 1
    d.cmd_bits_cancel.value = 0
    d.cmd_bits_delay.value = 1
    i, cyc, t_first = 0, 0, None
    while i < n:  # at each falling edge: the id for the coming rising edge, and whether it goes
        d.cmd_bits_id.value = i
        await Timer(1, "ns")
        cyc += 1
        if d.cmd_ready.value:
            t_first = cyc if t_first is None else t_first
            i += 1
        await FallingEdge(d.clock)
    d.cmd_valid.value = 0
    arm_cycles = (cyc - t_first + 1) / n
    await ClockCycles(d.clock, 10)  # the last insert finishing
    assert int(d.status_armed.value) == n
    d.cfg_tick_cycles.value = 2  # the tick comes: every timer expires
    exp_cycles = await cycles_per_event(d.clock, n, lambda: int(d.expired_valid.value and d.expired_ready.value))
    _write({"connections": n, "slots": cfg["slots"], "cycles_per_arm": round(arm_cycles, 3),
            "arms_per_s": round(CLOCK_MHZ * 1e6 / arm_cycles), "cycles_per_expiry": round(exp_cycles, 3),
            "expiries_per_s": round(CLOCK_MHZ * 1e6 / exp_cycles)})


@cocotb.test()
async def steer(dut):
    cfg = bench_config()
    rng = random.Random(cfg.get("seed", 1))
    d = dut
    Clock(d.clock, 4, unit="ns").start()
    src = AxiStreamSource(AxiStreamBus.from_prefix(d, "s_axis"), d.clock, d.reset)
    d.reset.value = 1
    d.cmd_valid.value = 0
    d.rsp_ready.value = 1
    d.m_axis_host_tready.value = 1
    d.m_axis_engine_tready.value = 1
    d.m_seg_ready.value = 1
    d.cfg_hash_key.value = ctm.DEFAULT_HASH_KEY >> (ctm.HASH_KEY_BITS - len(d.cfg_hash_key))
    await ClockCycles(d.clock, 4)
    d.reset.value = 0
    while not d.status_ready.value:
        await ClockCycles(d.clock, 16)
    # Install 8 connections (their segments arrive from src to dst).
    conns = [(rng.randbytes(4), rng.randbytes(4), rng.randrange(65536), rng.randrange(65536)) for _ in range(8)]
    for s_ip, d_ip, sp, dp in conns:
        await FallingEdge(d.clock)
        d.cmd_valid.value = 1
        d.cmd_bits_delete.value = 0
        d.cmd_bits_key.value = int.from_bytes(d_ip + s_ip, "big") << 32 | dp << 16 | sp
        while True:
            await Timer(1, "ns")
            if d.cmd_ready.value:
                break
            await FallingEdge(d.clock)
        await FallingEdge(d.clock)
        d.cmd_valid.value = 0
        while not d.rsp_valid.value:
            await FallingEdge(d.clock)
    out = {}
    for kind in ("ack", "ack_ts", "mss_1460"):
        n = 400
        frames = []
        for k in range(n):
            f = bytearray(parser_frames(kind, rng))
            if k % 2:  # a segment of an installed connection: its addresses and ports
                s_ip, d_ip, sp, dp = conns[k % 8]
                p = build_packet(s_ip, d_ip, sp, dp, rng.getrandbits(32), 0, 0x10, 1000, bytes(f[54 + (12 if kind != "ack" else 0):]),
                                 options=bytes(f[54:54 + (12 if kind != "ack" else 0)]))
                f = bytearray(bytes(f[:14]) + p + bytes(max(0, 60 - 14 - len(p))))
            frames.append(bytes(f))
        for f in frames:
            await src.send(AxiStreamFrame(f))
        ends = {"host": 0, "engine": 0}

        def frame_ends() -> int:
            k = 0
            for o in ends:
                if getattr(d, f"m_axis_{o}_tvalid").value and getattr(d, f"m_axis_{o}_tready").value \
                        and getattr(d, f"m_axis_{o}_tlast").value:
                    ends[o] += 1
                    k += 1
            return k
        per = await cycles_per_event(d.clock, n, frame_ends)
        out[kind] = {**frame_rate(len(frames[0]) + 4, per), "to_engine": ends["engine"]}
        await ClockCycles(d.clock, 50)
    _write(out)


@cocotb.test()
async def header(dut):
    cfg = bench_config()
    rng = random.Random(cfg.get("seed", 1))
    d = dut
    Clock(d.clock, 4, unit="ns").start()
    d.reset.value = 1
    d.s_hdr_valid.value = 0
    d.m_axis_tready.value = 1
    await ClockCycles(d.clock, 4)
    await FallingEdge(d.clock)
    d.reset.value = 0
    out = {}
    for kind, sack in (("ack_ts", 0), ("ack_ts_sack3", 3)):
        for name, v in (("dstMac", rng.getrandbits(48)), ("srcMac", rng.getrandbits(48)), ("srcIp", 1), ("dstIp", 2),
                        ("sport", 80), ("dport", 40000), ("flags", 0x10), ("window", 1000), ("tsPresent", 1),
                        ("sackN", sack), ("payloadLen", 0), ("payloadSum", 0)):
            getattr(d, f"s_hdr_bits_{name}").value = v
        n, taken, cyc, first, last, ends = 400, 0, 0, None, None, 0
        await FallingEdge(d.clock)  # one sample per clock: at each falling edge, 1 ns in
        while ends < n:
            d.s_hdr_bits_seq.value = rng.getrandbits(32)
            d.s_hdr_valid.value = int(taken < n)
            await Timer(1, "ns")
            cyc += 1
            if taken < n and d.s_hdr_ready.value:
                taken += 1
            if d.m_axis_tvalid.value and d.m_axis_tlast.value:
                ends += 1
                first = cyc if first is None else first
                last = cyc
            await FallingEdge(d.clock)
        d.s_hdr_valid.value = 0
        out[kind] = frame_rate(max(60, 54 + 12 + (4 + 8 * sack if sack else 0)) + 4, (last - first) / (n - 1))
        await ClockCycles(d.clock, 20)
    _write(out)


@cocotb.test()
async def decide(dut):
    from collections import defaultdict

    from offnic_sim import toe_hw, toe_sim
    cfg = bench_config()
    d = dut
    Clock(d.clock, 4, unit="ns").start()
    d.reset.value = 1
    d.s_in_valid.value = 0
    await ClockCycles(d.clock, 4)
    await FallingEdge(d.clock)
    d.reset.value = 0
    traces = toe_sim.decision_traces(cfg["seed"])
    took = await toe_hw.replay_decisions(d, traces, toe_sim.sim_params(), random.Random(cfg["seed"]))
    by_kind: dict[str, list[int]] = defaultdict(list)
    for kind, cycles in took:
        by_kind[kind].append(cycles)
    by_kind["all"] = [c for _, c in took]
    _write({k: {"decisions": len(v), "cycles_mean": round(sum(v) / len(v), 2), "cycles_max": max(v),
                "decisions_per_s": round(CLOCK_MHZ * 1e6 * len(v) / sum(v))} for k, v in by_kind.items()})

