"""The TCP engine's receive front (hw/src/offnic/toe/TcpSteer.scala): every frame to the
host output unchanged, except TCP segments of installed connections (to the engine, with
their connection id and parse) and bad segments of installed connections (dropped).

Frames of 24 connections (good and bad segments), random TCP and foreign frames, while
connections are installed and removed through the table's commands, with random gaps
and stalls on both outputs. Checks, frame by frame in order: each frame comes out
unchanged on one output or is dropped; which one is what the table said when the frame
started out (the commands answered before its first beat: the handoff guarantee); the
engine's frames carry the id the install returned and the parser's fields; the counters
add up. `hold_engine` (the engine queue's FCFS limit) is raised at random: no frame starts
towards the engine while it is up; and with it up for good while frames of installed
connections wait at the head, the removals still answer (the FCFS deadlock: a frame
decided for the engine would hold the answers back) and the frames then go to the host. Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import logging
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSource

from offnic_sim.toe import conntable_model as ctm
from offnic_sim.toe import tcp_parse
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from tcp_frames import conn_key, eth, segment, spoil, traffic

CONNECTIONS, BUCKETS = 64, 16


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def tcp_steer(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    d = dut
    Clock(d.clock, 4, unit="ns").start()
    src = AxiStreamSource(AxiStreamBus.from_prefix(d, "s_axis"), d.clock, d.reset)
    src.log.setLevel(logging.WARNING)
    d.reset.value = 1
    d.cmd_valid.value = 0
    d.rsp_ready.value = 1
    d.m_axis_host_tready.value = 0
    d.m_axis_engine_tready.value = 0
    d.m_seg_ready.value = 0
    d.hold_engine.value = 0
    d.cfg_hash_key.value = ctm.DEFAULT_HASH_KEY >> (ctm.HASH_KEY_BITS - len(d.cfg_hash_key))
    await ClockCycles(d.clock, 4)
    await FallingEdge(d.clock)
    d.reset.value = 0
    while not d.status_ready.value:
        await ClockCycles(d.clock, 16)

    conns = [(rng.randbytes(4), rng.randbytes(4), rng.randrange(65536), rng.randrange(65536)) for _ in range(24)]
    installed: dict[int, int] = {}            # key -> id
    history: list[tuple[int, int, int | None]] = []  # (cycle answered, key, id or None)
    cmds: list[tuple[bool, int]] = []
    outs = {"host": [], "engine": []}         # (first-beat cycle, frame bytes)
    segs: list[dict] = []
    cur = {"host": bytearray(), "engine": bytearray()}
    first_at = {"host": None, "engine": None}
    stall = [0.0]
    hold = [0.0]                              # chance per cycle that hold_engine is up
    cycle = [0]

    async def loop():
        c_out = None
        sent = False
        offered = False                       # the engine output's frame has been offered
        while True:
            await FallingEdge(d.clock)
            cycle[0] += 1
            if sent:
                d.cmd_valid.value = 0
                sent = False
            if c_out is None and cmds:
                c_out = cmds.pop(0)
                d.cmd_bits_delete.value, d.cmd_bits_key.value = int(c_out[0]), c_out[1]
                d.cmd_valid.value = 1
            for o in ("host", "engine"):
                getattr(d, f"m_axis_{o}_tready").value = int(rng.random() >= stall[0])
            d.m_seg_ready.value = int(rng.random() >= stall[0])
            held = rng.random() < hold[0]
            d.hold_engine.value = int(held)
            await Timer(1, "ns")
            if d.cmd_valid.value and d.cmd_ready.value:
                sent = True
            if d.rsp_valid.value and d.rsp_ready.value:
                delete, key = c_out
                st, cid = int(d.rsp_bits_status.value), int(d.rsp_bits_id.value)
                assert st == ctm.OK, (delete, st)
                if delete:
                    assert installed.pop(key) == cid
                else:
                    assert cid not in installed.values()
                    installed[key] = cid
                history.append((cycle[0], key, None if delete else cid))
                c_out = None
            # a frame is decided for the engine only with hold_engine down: its first beat is
            # offered then (it may wait for tready afterwards)
            if d.m_axis_engine_tvalid.value and not offered:
                assert not held, "a frame was decided for the engine under hold_engine"
                offered = True
            if d.m_axis_engine_tvalid.value and d.m_axis_engine_tready.value and d.m_axis_engine_tlast.value:
                offered = False
            for o in ("host", "engine"):
                if getattr(d, f"m_axis_{o}_tvalid").value and getattr(d, f"m_axis_{o}_tready").value:
                    if not cur[o]:
                        first_at[o] = cycle[0]
                    data = int(getattr(d, f"m_axis_{o}_tdata").value).to_bytes(32, "little")
                    keep = int(getattr(d, f"m_axis_{o}_tkeep").value)
                    cur[o] += bytes(data[i] for i in range(32) if keep >> i & 1)
                    if getattr(d, f"m_axis_{o}_tlast").value:
                        outs[o].append((first_at[o], bytes(cur[o])))
                        cur[o] = bytearray()
            if d.m_seg_valid.value and d.m_seg_ready.value:
                segs.append({"id": int(d.m_seg_bits_id.value), "key": int(d.m_seg_bits_info_key.value),
                             "seq": int(d.m_seg_bits_info_seq.value), "len": int(d.m_seg_bits_info_dataLen.value)})
    cocotb.start_soon(loop())

    def state_at(key: int, cyc: int) -> int | None:
        st = None
        for c, k, i in history:
            if k == key and c < cyc:
                st = i
        return st

    frames: list[bytes] = []
    wanted: set[int] = set()  # installed once the queued commands are done
    for phase, (st, hd) in enumerate(((0.0, 0.0), (0.3, 0.5), (0.6, 0.2))):
        stall[0], hold[0] = st, hd
        for _ in range(300):
            r = rng.random()
            if r < 0.06:                                   # install or remove a connection
                k = conn_key(rng.choice(conns))
                cmds.append((k in wanted, k))
                wanted.symmetric_difference_update({k})
            if r < 0.55:
                f = eth(segment(rng, rng.choice(conns)), rng)
            elif r < 0.65:
                f = eth(spoil(bytearray(segment(rng, rng.choice(conns))), rng), rng)
            else:
                f = traffic(rng, 1)[0]
            frames.append(f)
            await src.send(AxiStreamFrame(f))
        quiet, seen = 0, -1
        while quiet < 50:  # until the input is sent and nothing has come out for 500 cycles
            await ClockCycles(d.clock, 10)
            n = sum(len(v) for v in outs.values())
            quiet = quiet + 1 if (n == seen and src.idle() and not cmds) else 0
            seen = n

    # hold_engine up for good: segments of installed connections wait at the head (and the
    # frames behind them); their removals must still answer, and the frames then go to the
    # host.
    hold[0], stall[0] = 1.0, 0.0
    live = sorted(wanted)
    assert live, "no connection installed at the end of the random phases"
    for k in live:
        c = next(c for c in conns if conn_key(c) == k)
        for _ in range(3):
            f = eth(segment(rng, c), rng)
            frames.append(f)
            await src.send(AxiStreamFrame(f))
    await ClockCycles(d.clock, 300)
    n_before = len(history)
    for k in live:
        cmds.append((True, k))
    wanted.clear()
    for _ in range(400):
        await ClockCycles(d.clock, 10)
        if len(history) == n_before + len(live) and src.idle():
            break
    assert len(history) == n_before + len(live), \
        f"{len(history) - n_before} of {len(live)} removals answered while frames waited for the engine"
    quiet, seen = 0, -1
    while quiet < 50:
        await ClockCycles(d.clock, 10)
        n = sum(len(v) for v in outs.values())
        quiet = quiet + 1 if (n == seen and src.idle() and not cmds) else 0
        seen = n
    hold[0] = 0.0

    # Walk the frames in order against what came out.
    host, engine = list(outs["host"]), list(outs["engine"])
    hi = ei = si = 0
    n_host = n_engine = n_drop = 0
    for i, f in enumerate(frames):
        want = tcp_parse.expected(f)
        nxt = []
        if hi < len(host) and host[hi][1] == f:
            nxt.append(("host", host[hi][0]))
        if ei < len(engine) and engine[ei][1] == f:
            nxt.append(("engine", engine[ei][0]))
        if not nxt:
            # dropped: a bad segment of a connection installed at some point around then
            assert want["kind"] == tcp_parse.BAD and any(k == want["key"] for _, k, i2 in history if i2 is not None), \
                f"frame {i} missing: {f.hex()}"
            n_drop += 1
            continue
        route, at = nxt[0]
        cid = state_at(want.get("key", -1), at) if want["kind"] != tcp_parse.OTHER else None
        if route == "engine":
            assert want["kind"] == tcp_parse.TCP and cid is not None, \
                f"frame {i} to the engine at cycle {at}; table then: {cid}, kind {want['kind']}"
            s = segs[si]
            si += 1
            assert (s["id"], s["key"], s["seq"], s["len"]) == (cid, want["key"], want["seq"], want["data_len"]), (i, s)
            ei += 1
            n_engine += 1
        else:
            assert cid is None or want["kind"] == tcp_parse.OTHER, \
                f"frame {i} to the host at cycle {at} but its connection had id {cid}"
            hi += 1
            n_host += 1
    assert hi == len(host) and ei == len(engine) and si == len(segs), (hi, len(host), ei, len(engine), si, len(segs))
    got = [int(getattr(d, f"counters_{k}").value) for k in range(4)]
    assert got[:3] == [n_host, n_engine, n_drop], (got, n_host, n_engine, n_drop)
    assert n_engine > 100 and n_host > 100 and n_drop > 3, (n_host, n_engine, n_drop)
    d._log.info(f"{len(frames)} frames: {n_host} to the host, {n_engine} to the engine, {n_drop} dropped; "
                f"{len(history)} installs/removals, {got[3]} repeated lookups")


def test_tcp_steer():
    run_cocotb(Design.of("toe.TcpSteer", connections=CONNECTIONS, buckets=BUCKETS, fifo_beats=512), __name__)
