"""`./offnic demo`'s TCP offload part, simulation side: connections handed to the NIC
mid-transfer, carried and given back, while host packets cross the NIC both ways; on the
`nic-toe` build (the NIC with the TCP engine) on the fast harness. Reuses the whole-NIC
TCP bench (toe_nic_bench.py: Bench, its peers, host-packet probe and ring checks) and
sends every handoff command as a TX descriptor (toe_cmdq.ToeQueue).

For each mode of the shared resources (host first, then FCFS: dma.arbitration), one run
with host packets flowing throughout (toe_nic_bench.Traffic: one 512-byte frame per port
and direction per microsecond, each checked and timed):
- before: nothing offloaded;
- handoff (a phase of its own in the results): N connections reserved (the table entries live, their segments held on the
  NIC), the peers start sending, the host "freezes and reads its sockets" (`freeze_us`),
  then completes each install with the state. Each connection also has bytes the host
  wrote but had not sent (`queued`) in its send ring in host memory;
- during: the peers send small segments filling both ports beside the host frames (the
  engine saturated, as Table 1's case (c)); the engine stores them into the receive rings
  in host memory and sends the queued bytes from the send rings, which the peers
  acknowledge;
- restore: the peers stop, the engine's queue drains, each connection is given back with
  its state; the state is checked against what the peer sent and received, the receive
  ring byte for byte up to the restored rcv_nxt, every engine byte against the send ring;
- after: host packets only again.
Host RX delay: last byte on the wire to the completion record on the link; host TX delay:
doorbell to first byte on the wire (Table 1's probe), median and p99 per phase.

A mismatch is recorded in `failures` (the results are still written, then the test fails).
"""
from __future__ import annotations

import json
import time

import cocotb
from cocotb.triggers import Timer

from offnic_sim.harness.runner import bench_config
from offnic_sim.net.tcppeer import ACK
from offnic_sim.toe.toe_cmdq import ToeQueue
from offnic_sim.toe.toe_model import handoff_tcb
from offnic_sim.toe.toe_nic_bench import GEN_CAP, Bench, Conn, Traffic, line_segments_per_us, now_ns, window_rate
from offnic_sim.toe.toe_window import OP_COMPLETE, OP_RESERVE, OP_RESTORE, ST_OK, conn_addr

MASK = 0xFFFFFFFF


async def hw_counters(b: Bench) -> dict:
    """The few counters the part reports (not all: each read is an MMIO round trip)."""
    t, h = b.win.t, b.win.h
    return {"steer_to_engine": await t.read("steer_to_engine"), "seg_events": await t.read("seg_events"),
            "tx_segments": await t.read("tx_segments"), "nicq_frames": await h.read("nicq_frames"),
            "nicq_drops": await h.read("nicq_drops")}


def moved(a: dict, b: dict) -> dict:
    return {k: (b[k] - a[k]) & MASK for k in a}


async def run_mode(b: Bench, q: ToeQueue, host_first: bool, cfg: dict, failures: list[str]) -> dict:
    drv = b.drv
    mode = "host_first" if host_first else "fcfs"
    await drv.block("dma").write("arbitration", 0 if host_first else 1)
    n, payload = cfg["connections"], cfg["payload"]
    per_us = line_segments_per_us(payload)
    stream_len = int((cfg["during_us"] + 20) * per_us * payload * 2 / n) + GEN_CAP
    rcv_size = 1 << max(16, (2 * stream_len - 1).bit_length())
    queued = cfg["queued"]
    snd_size = 1 << max(12, (queued - 1).bit_length() + 1)
    conns = [b.new_conn(k + (0 if host_first else 50), k % 2, mss=payload, ts=False, snd_size=snd_size,
                        rcv_size=rcv_size, stream_len=stream_len, queued=b.rng.randbytes(queued)) for k in range(n)]
    for c in conns:
        c.tx_bad = 0        # engine segments whose bytes differ from the send ring's

    def on_engine(c: Conn, t, t0: float, t1: float) -> None:
        a = (t[5] - c.hs.rcv_nxt) & MASK          # the engine's cumulative ACK of the peer's stream
        if t[6] & ACK and c.acked < a <= len(c.stream):
            c.acked, c.t_ack = a, t1
            c.ack_log.append((t1, a))
        pl = t[7]
        if pl:                                    # bytes the engine sent from the send ring
            off = (t[4] - c.hs.snd_una) & MASK
            if c.queued[off:off + len(pl)] != pl:
                c.tx_bad += 1
            elif off <= c.peer_ack < off + len(pl):
                c.peer_ack = off + len(pl)        # the peer acknowledges it in its next segment
    b.on_engine = on_engine
    b.tap.reset()
    b.tap.watched = {f"rx{p}:cq": [] for p in range(2)}
    b.tap.bucket = "toe_demo"     # the tap records the completion writes' times while it counts
    for p in range(2):
        b.rx_got[p] = []
    idle = {0: [], 1: []}
    traffic = Traffic(b, idle, per_us, payload)
    qlen: list[tuple[float, int]] = []

    async def sample_qlen() -> None:
        while True:
            await Timer(2, "us")
            qlen.append((now_ns(), await b.win.h.read("nicq_qlen")))

    regs0 = await b.regs()
    t0 = now_ns()
    traffic.start()
    qtask = cocotb.start_soon(sample_qlen())
    warm = cfg["warm_us"]
    await Timer(warm + cfg["before_us"], "us")
    win = {"before": (t0 + warm * 1000, now_ns())}

    # Handoff, two-phase: reserve each (its segments held from then on), the peers go on
    # sending, the host freezes and reads its sockets, then complete each with the state.
    t_h0 = now_ns()
    cmd_us = {"reserve": [], "complete": [], "restore": []}
    for c in conns:
        t = now_ns()
        rsp = await q.command(OP_RESERVE, 0, 0, None, conn_addr(c.key, c.hs), state=False)
        cmd_us["reserve"].append((now_ns() - t) / 1000)
        if rsp["status"] != ST_OK:
            failures.append(f"{mode}: reserve of connection {c.k}: status {rsp['status']}")
            continue
        c.id = rsp["id"]
        b.conns[(c.key.local_port, c.key.remote_port)] = c
    live = [c for c in conns if c.id is not None]
    traffic.by_port = {p: [c for c in live if c.port == p] for p in range(2)}
    c_hold0 = await hw_counters(b)
    await Timer(cfg["freeze_us"], "us")
    c_hold1 = await hw_counters(b)
    for c in live:
        t = now_ns()
        rsp = await q.command(OP_COMPLETE, c.id, 0, handoff_tcb(c.hs, b.eparams), conn_addr(c.key, c.hs), state=False)
        cmd_us["complete"].append((now_ns() - t) / 1000)
        if rsp["status"] != ST_OK:
            failures.append(f"{mode}: complete of connection {c.k}: status {rsp['status']}")
    t_h1 = now_ns()
    win["handoff"] = (t_h0, t_h1)
    c_during0 = await hw_counters(b)
    await Timer(warm, "us")
    w_during0 = now_ns()
    await Timer(cfg["during_us"], "us")
    win["during"] = (w_during0, now_ns())
    c_during1 = await hw_counters(b)

    # Give them back: the peers stop, the engine's queue drains, a last ACK of what each
    # peer got, then restore with the state.
    traffic.by_port = idle
    for _ in range(100):
        await Timer(5, "us")
        if await b.win.h.read("nicq_qlen") == 0:
            break
    for c in live:
        b.send_rx(c.port, c.segment(c.hwm, 0, ts=False))   # a pure ACK at the peer's next new byte
    await Timer(10, "us")
    t_r0 = now_ns()
    per_conn = []
    for c in live:
        t = now_ns()
        try:
            rsp = await q.command(OP_RESTORE, c.id, timeout_us=cfg.get("command_timeout_us", 2000))
        except TimeoutError as e:
            failures.append(f"{mode}: restore of connection {c.k}: {e}")
            break
        cmd_us["restore"].append((now_ns() - t) / 1000)
        del b.conns[(c.key.local_port, c.key.remote_port)]
        if rsp["status"] != ST_OK:
            failures.append(f"{mode}: restore of connection {c.k}: status {rsp['status']}")
            continue
        tcb = rsp["tcb"]
        rcvd = (tcb.rcv_nxt - c.hs.rcv_nxt) & MASK         # the peer's bytes the engine stored
        acked = (tcb.snd_una - c.hs.snd_una) & MASK        # the engine's bytes the peer acknowledged
        sent = (tcb.snd_nxt - c.hs.snd_una) & MASK
        ring_ok = rcvd <= c.hwm and b.ring_ok(c, rcvd)
        # what the engine hands back agrees with both ends: it stored at least what it
        # acknowledged and no more than the peer sent; the peer acknowledged no more than
        # it got, which the engine sent from the send ring, within what the host had written
        state_ok = (c.acked <= rcvd <= c.hwm and acked <= c.peer_ack <= sent <= queued
                    and tcb.write_seq == c.hs.write_seq)
        per_conn.append({"conn": c.k, "port": c.port, "id": c.id, "received_bytes": rcvd, "peer_sent_bytes": c.hwm,
                         "ring_checked": ring_ok, "sent_bytes": sent, "sent_acked_bytes": acked,
                         "queued_bytes": queued, "sent_mismatches": c.tx_bad, "state_ok": state_ok,
                         "peer_go_back": c.resends})
        if not ring_ok:
            failures.append(f"{mode}: connection {c.k}: the receive ring differs from the peer's stream "
                            f"(restored rcv_nxt +{rcvd}, peer sent {c.hwm})")
        if c.tx_bad:
            failures.append(f"{mode}: connection {c.k}: {c.tx_bad} segments' bytes differ from the send ring")
        if not state_ok:
            failures.append(f"{mode}: connection {c.k}: restored state rcv_nxt +{rcvd} (engine ACKed {c.acked}), "
                            f"snd_una +{acked} (peer ACKed {c.peer_ack}), snd_nxt +{sent} of {queued}")
    t_r1 = now_ns()
    b.on_engine = None
    await Timer(warm, "us")
    w_after0 = now_ns()
    await Timer(cfg["after_us"], "us")
    win["after"] = (w_after0, now_ns())
    b.stop = True
    await traffic.settle()
    await Timer(10, "us")
    traffic.cancel()
    qtask.cancel()
    b.tap.bucket = None
    regs1 = await b.regs()

    phases = {}
    for name in ("before", "handoff", "during", "after"):
        w0, w1 = win[name]
        rx, tx = traffic.host_delays(w0, w1)
        ql = [v for t, v in qlen if w0 <= t <= w1]
        phases[name] = {"window_us": round((w1 - w0) / 1000, 1), "host_rx": rx, "host_tx": tx,
                        "qlen_max": max(ql, default=0), "qlen_mean": round(sum(ql) / len(ql), 1) if ql else 0}
    dm = moved(c_during0, c_during1)
    phases["during"]["nic_packet_drops"] = dm["nicq_drops"]
    phases["during"]["segments_decided"] = dm["seg_events"]
    merged, total = [], {c.k: 0 for c in live}
    for t, k, a in sorted((t, c.k, a) for c in live for t, a in c.ack_log):
        total[k] = a
        merged.append((t, sum(total.values())))
    good, span = window_rate(merged, *win["during"])
    phases["during"]["offload_goodput_gbps"] = round(good * 8 / span, 3) if span else 0.0
    hold = moved(c_hold0, c_hold1)
    rx_all, tx_all = traffic.host_delays(t0, now_ns())
    for name in phases:      # whole-run losses once, at the top
        for way in ("host_rx", "host_tx"):
            phases[name][way] = {k: v for k, v in phases[name][way].items()
                                 if k not in ("frames", "lost", "corrupted", "missing_or_wrong_port")}
    # Never a corrupted or misrouted host frame; host first loses none either (FCFS may drop
    # host frames at a full port FIFO: counted and reported, as Table 1 does).
    if rx_all["corrupted"] or tx_all["missing_or_wrong_port"] or (host_first and rx_all["lost"]):
        failures.append(f"{mode}: host frames lost or corrupted: RX {rx_all['lost']} lost, {rx_all['corrupted']} "
                        f"corrupted, TX {tx_all['missing_or_wrong_port']} missing or on the wrong port")
    all_moved = {k: (regs1[k] - regs0[k]) & MASK for k in ("rx_fifo_drops_0", "rx_fifo_drops_1", "store_errors",
                                                           "seg_stale_drops", "cmdq_commands", "cmdq_refused")
                 if k in regs1}
    return {
        "mode": mode, "connections": n, "segment_payload": payload, "segments_per_us_per_port": per_us,
        "offered_gbps": round(2 * per_us * payload * 8 / 1000, 2),
        "handoff": {"reserved_to_completed_us": round((t_h1 - t_h0) / 1000, 1), "freeze_us": cfg["freeze_us"],
                    "held_segments": hold["steer_to_engine"], "decided_while_held": hold["seg_events"],
                    "command_us": {k: round(sum(v) / len(v), 2) if v else None for k, v in cmd_us.items()},
                    "restore_total_us": round((t_r1 - t_r0) / 1000, 1)},
        "per_connection": per_conn,
        "bytes_received": sum(r["received_bytes"] for r in per_conn),
        "bytes_sent": sum(r["sent_acked_bytes"] for r in per_conn),
        "all_checked": len(per_conn) == n and all(r["ring_checked"] and r["state_ok"] and not r["sent_mismatches"]
                                                  for r in per_conn),
        "phases": phases,
        "host_rx_frames": rx_all["frames"], "host_rx_lost": rx_all["lost"], "host_rx_corrupted": rx_all["corrupted"],
        "host_tx_frames": tx_all["frames"], "host_tx_missing": tx_all["missing_or_wrong_port"],
        "port_fifo_drops": all_moved.get("rx_fifo_drops_0", 0) + all_moved.get("rx_fifo_drops_1", 0),
        "counters": all_moved, "sim_us": round((now_ns() - t0) / 1000, 1),
    }


@cocotb.test()
async def demo(dut):
    cfg = bench_config()
    wall0 = time.monotonic()
    b = Bench(dut, cfg)
    await b.setup()
    q = ToeQueue(b.drv, q=0)      # the commands on TX queue 0, beside that port's host frames
    b.win = q
    failures: list[str] = []
    res: dict = {"seed": cfg["seed"], "host_latency_ns": b.tb.hostmem.read_latency_ns, "settings": cfg, "modes": []}
    t0 = now_ns()
    for host_first in cfg.get("modes", (True, False)):
        r = await run_mode(b, q, host_first, cfg, failures)
        cocotb.log.info("toe demo %s: %s", r["mode"], {k: r[k] for k in ("bytes_received", "bytes_sent", "all_checked")})
        res["modes"].append(r)
    res["sim_us"] = round((now_ns() - t0) / 1000, 1)
    res["wall_s"] = round(time.monotonic() - wall0, 1)
    res["driver_errors"] = [str(e) for e in b.drv.errors]
    res["failures"] = failures + [f"driver: {e}" for e in res["driver_errors"][:5]]
    with open(cfg["out"], "w") as f:
        json.dump(res, f)
    assert not res["failures"], res["failures"]
