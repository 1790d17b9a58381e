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
  without back-pressure, each checked: cycles per decision by kind;
- offload: the whole engine (TcpOffload, 4,096 connections): installs and restores per
  second, receive goodput of back-to-back in-order segments over 1..4,096 connections,
  cycles from a segment's arrival to its ACK, transmit goodput of one connection;
- offload_many: the whole engine carrying hundreds of random connections at once against
  TcpPeers through a lossy link (toe_many), every stream checked: simulated time, bytes
  each way, goodput.
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

from offnic_sim.toe import conntable_model as ctm
from offnic_sim.toe import toe_hw
from offnic_sim.toe.conntable_tb import ConnTableTB
from offnic_sim.harness.runner import bench_config
from offnic_sim.net.tcppeer import build_packet

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
            getattr(d, toe_hw.field_port("s_hdr_bits", name)).value = v
        n, taken, cyc, first, last, ends = 400, 0, 0, None, None, 0
        await FallingEdge(d.clock)  # one sample per clock: at each falling edge, 1 ns in
        while ends < n:
            d.s_hdr_bits_tcp_seq.value = rng.getrandbits(32)
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

    from offnic_sim.toe import toe_sim
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



# ----------------------------------------------------------------------------- the whole engine

def _offload_conn(k: int, *, mss: int, mem, snd_size: int, rcv_size: int, queued: int = 0):
    """Connection k's key and Handoff: big windows, cwnd and rings, `queued` bytes waiting
    in its send ring."""
    from offnic_sim.toe.toe_model import ConnKey, Handoff
    from offnic_sim.toe.toe_sim import ENGINE_IP, ENGINE_MAC, PEER_MAC
    key = ConnKey(ENGINE_IP, 40000 + k % 20000, f"10.{20 + k // 62500}.{k // 250 % 250}.{k % 250 + 1}",
                  1024 + k % 60000)
    snd_buf, rcv_buf = mem.alloc(snd_size), mem.alloc(rcv_size)
    isn_e, isn_p = (0x9000_0000 + 7919 * k) & 0xFFFFFFFF, (0xF000_0000 + 104_729 * k) & 0xFFFFFFFF
    if queued:
        mem.ring_write(snd_buf, snd_size, isn_e, bytes(random.Random(k).randbytes(queued)))
    hs = Handoff(local_mac=ENGINE_MAC, remote_mac=PEER_MAC, snd_una=isn_e, snd_nxt=isn_e,
                 write_seq=(isn_e + queued) & 0xFFFFFFFF, rcv_nxt=isn_p, read_seq=isn_p, snd_wnd=0xFFFF << 10,
                 rcv_wnd=min(rcv_size, 0xFFFF << 10), rcv_wup=isn_p, snd_buf=snd_buf, snd_size=snd_size,
                 rcv_buf=rcv_buf, rcv_size=rcv_size, mss=mss + 12, max_window=0xFFFF << 10, wscale_ok=True,
                 snd_wscale=10, rcv_wscale=10, timestamps=True, ts_val=1000 + k, ts_recent=5000 + k,
                 cwnd=0xFFFF << 10, sack_ok=True)
    return key, hs


def _peer_segment(key, hs, off: int, n: int, ts: int) -> bytes:
    """The peer's in-order data segment at offset `off` of its stream (ACKing nothing new)."""
    from offnic_sim.net.eth import ETH_P_IP, eth_frame
    from offnic_sim.net.tcppeer import ACK, tcp_options
    pkt = build_packet(key.remote_ip, key.local_ip, key.remote_port, key.local_port, hs.rcv_nxt + off, hs.snd_una,
                       ACK, 0xFFFF, bytes(n), options=tcp_options(ts=(5000 + ts, hs.ts_val)))
    return eth_frame(hs.local_mac, hs.remote_mac, ETH_P_IP, pkt)


@cocotb.test()
async def offload(dut):
    """TcpOffload: install and restore rates; one connection's receive and transmit
    goodput at MSS 1448 (1460 less timestamps) and 8948; receive goodput with the segments
    spread over 1..4,096 connections; cycles from a segment's first beat in to its ACK's
    first beat out."""
    from offnic_sim.toe.toe_hwengine import OP_RESTORE, HwEngine
    from offnic_sim.toe.toe_sim import T0, sim_params
    cfg = bench_config()
    d = dut
    hw = HwEngine(d, sim_params(), mem_size=1 << 28)
    await hw.start(T0)
    src, clock = hw.src, d.clock
    out: dict = {}

    async def cycles_until(cond) -> int:
        n = 0
        while not cond():
            await RisingEdge(clock)
            n += 1
        return n

    # ---- installs and restores, back to back (each command waits for the one before)
    conns = []
    c0 = cocotb.utils.get_sim_time("ns")
    n_inst = cfg.get("installs", 512)
    for k in range(n_inst):
        key, hs = _offload_conn(k, mss=1448, mem=hw.mem, snd_size=1 << 12, rcv_size=1 << 12)
        conns.append(await hw.ainstall(key, hs, quiet=False))
    c1 = cocotb.utils.get_sim_time("ns")
    for c in conns:
        await hw.command(OP_RESTORE, c, quiet=False)
    c2 = cocotb.utils.get_sim_time("ns")
    out["install"] = {"commands": n_inst, "cycles_per_install": round((c1 - c0) / 4 / n_inst, 1),
                      "cycles_per_restore": round((c2 - c1) / 4 / n_inst, 1)}
    hw.mem._next = 0

    # ---- receive: in-order segments back to back over n connections
    for mss in (1448, 8948):
        for n_conns in ((1, 16, 256, 4096) if mss == 1448 else (1,)):
            hw.mem._next = 0
            rcv = 1 << 22 if n_conns == 1 else 1 << 14
            live = []
            for k in range(n_conns):
                key, hs = _offload_conn(k, mss=mss, mem=hw.mem, snd_size=1 << 12, rcv_size=rcv)
                live.append((await hw.ainstall(key, hs, quiet=False), key, hs))
            segs = max(256, 2 * n_conns) if mss == 1448 else 64
            frames = [_peer_segment(live[i % n_conns][1], live[i % n_conns][2], (i // n_conns) * mss, mss, i)
                      for i in range(segs)]
            t0 = cocotb.utils.get_sim_time("ns")
            for f in frames:
                await src.send(f)
            await src.wait()
            await hw.settle()
            t1 = cocotb.utils.get_sim_time("ns")
            cycles = (t1 - t0) / 4
            wire = (len(frames[0]) + 4 + 20) * 8 * segs     # with FCS, preamble and gap
            rec = {"connections": n_conns, "mss": mss, "segments": segs, "cycles": cycles,
                   "gbps": round(segs * mss * 8 / (cycles * 4), 2),
                   "line_rate_gbps": round(25 * segs * mss * 8 / wire, 2)}
            rec["line_rate_pct"] = round(100 * rec["gbps"] / rec["line_rate_gbps"], 1)
            out[f"rx_mss{mss}_{n_conns}conns"] = rec
            for c, _, _ in live:
                await hw.command(OP_RESTORE, c, quiet=False)
            hw.take_wire()
            hw.take_notifications()

    # ---- arrival to ACK: two full segments, the second is ACKed at once (every second
    # full-sized segment); cycles from its first beat accepted to the ACK's first beat out
    hw.mem._next = 0
    key, hs = _offload_conn(0, mss=1448, mem=hw.mem, snd_size=1 << 12, rcv_size=1 << 22)
    c = await hw.ainstall(key, hs, quiet=False)
    lat = []
    for i in range(32):
        await src.send(_peer_segment(key, hs, 2 * i * 1448, 1448, 2 * i))
        await src.wait()
        await hw.settle()
        hw.take_wire()
        await FallingEdge(clock)
        await src.send(_peer_segment(key, hs, (2 * i + 1) * 1448, 1448, 2 * i + 1))
        await cycles_until(lambda: d.s_axis_tvalid.value and d.s_axis_tready.value)
        lat.append(await cycles_until(lambda: d.m_axis_tx_tvalid.value and d.m_axis_tx_tready.value))
        await hw.settle()
        assert len(hw.take_wire()) == 1, "no ACK for the second full segment"
    out["arrival_to_ack"] = {"samples": len(lat), "cycles_mean": round(sum(lat) / len(lat), 1),
                             "cycles_max": max(lat), "ns_mean": round(4 * sum(lat) / len(lat), 1)}
    await hw.command(OP_RESTORE, c, quiet=False)

    # ---- transmit: one connection with a full send ring and open windows; the install
    # decision sends all it may, the builder paces it
    for mss in (1448, 8948):
        hw.mem._next = 0
        queued = 1 << 20 if mss == 1448 else 1 << 21
        key, hs = _offload_conn(1, mss=mss, mem=hw.mem, snd_size=1 << 22, rcv_size=1 << 16, queued=queued)
        hw.take_wire()
        t0 = cocotb.utils.get_sim_time("ns")
        c = await hw.ainstall(key, hs, quiet=False)
        await hw.settle()
        t1 = cocotb.utils.get_sim_time("ns")
        frames = hw.take_wire()
        sent = sum(len(f) - 66 for f in frames)
        cycles = (t1 - t0) / 4
        wire = (mss + 66 + 4 + 20) * 8
        rec = {"connections": 1, "mss": mss, "segments": len(frames), "payload_bytes": sent, "cycles": cycles,
               "gbps": round(sent * 8 / (cycles * 4), 2), "line_rate_gbps": round(25 * mss * 8 / wire, 2)}
        rec["line_rate_pct"] = round(100 * rec["gbps"] / rec["line_rate_gbps"], 1)
        out[f"tx_mss{mss}"] = rec
        await hw.command(OP_RESTORE, c, quiet=False)
    _write(out)


@cocotb.test()
async def offload_many(dut):
    """TcpOffload carrying many connections at once against TcpPeers (toe_many's
    workload: random_conn connections handed off at random moments, a lossy link, timers
    scaled for 1 clock = 1 us): every stream exact, every connection closed on both
    sides; simulated cycles, bytes each way, link retransmissions, wall time."""
    import time

    from cocotb.task import bridge

    from offnic_sim.toe import toe_many
    from offnic_sim.toe.toe_sim import T0
    cfg = bench_config()
    n = cfg["connections"]
    hw = toe_many.hw_engine(dut, mem_size=max(1 << 24, (n + 1) << 19))
    await hw.start(T0)
    t0 = time.monotonic()
    c0 = cocotb.utils.get_sim_time("ns")
    r = await bridge(toe_many.run_many)(hw, cfg["seed"], n, log=dut._log.info)
    cycles = round((cocotb.utils.get_sim_time("ns") - c0) / 4)
    r.update(toe_many.goodput(r, cycles, CLOCK_MHZ))
    r["wall_s"] = round(time.monotonic() - t0, 1)
    dut._log.info(f"{n} connections: {cycles} cycles, {r['gbps']} Gb/s, {r['wall_s']} s")
    _write(r)
