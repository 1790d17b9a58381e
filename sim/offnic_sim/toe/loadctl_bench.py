"""`./offnic bench loadctl`, simulation side: seed 004's Figure 6 (load control, §3.2) on
the whole NIC with the TCP engine and the control processor (`nic-toe`), on the fast
harness. One run = one simulation, load control on (the default firmware image's Figure 3
machine, its default watermarks) or off (the same image with Hiwat = the queue's size and
Lowat = 0 through the mailbox: Qlen can never be above the one nor below the other, so
Soft_limit stays at Hard_limit).

The offered load: a closed population of connections (the seed's web clients) whose size
steps from `low` to `high` (more connections than the engine can carry) and back. Each
connection lives for a random number of 64-byte segments, which its peer sends at a fixed
rate; when it ends, its peer waits for the engine's ACK of its last byte and resets it
(an exact RST: the engine closes the connection and deletes it from its table, so Cnum
falls) and a new connection takes its place while the population is at its size. The
host selects connections first-come first-served (host/conn_select.py) and never offers
more than the Soft_limit it last heard of; it hears of Soft_limit changes by polling the
firmware's event register every 10 us (firmware events do not raise event-queue
interrupts yet). A connection not offered waits on the host (it sends nothing through
the NIC in this model) until there is room or its life ends; one refused by the NIC
(Soft_limit fell between the host's poll and the install: status 5) stays on the host.

Sampled every 2 us: Qlen; every window (20 us): Soft_limit, Cnum, the NIC-packet drops,
the host probe frames' RX delay (one 512-byte tagged frame per port per microsecond,
Table 1's probe: last byte on the wire to its completion record on PCIe). Checked: every
probe frame intact, every offloaded connection's receive ring in host memory byte for
byte up to the engine's last ACK; only acknowledged (stored) bytes count as goodput.
Notifications arrive as events (toe_host.note_mode), which is how the host learns that
a connection has closed.
"""
from __future__ import annotations

import json

import cocotb
from cocotb.triggers import Timer

from offnic_sim.fw import defs
from offnic_sim.harness.runner import bench_config
from offnic_sim.host.conn_select import ConnectionSelector, Fcfs
from offnic_sim.host.fw_host import FwHost
from offnic_sim.net.eth import ETH_P_IP, eth_frame
from offnic_sim.net.tcppeer import ACK, RST, build_packet
from offnic_sim.toe import toe_sim
from offnic_sim.toe.toe_model import handoff_tcb
from offnic_sim.toe.toe_nic_bench import (HOST_FRAME, MACS, Bench, Conn, now_ns, pct, tcp_fields)
from offnic_sim.toe.toe_window import NOTE_NAMES, OP_INSTALL, ST_OK, ST_OVER_LIMIT, conn_addr

PAYLOAD = 64              # bytes per segment (Table 1's saturating size)
LISTEN_PORT = 80          # the one listening port; FCFS on it
SND_RING, RCV_RING = 4096, 16384   # the receive ring holds a whole connection's stream (checked at its end)
FW_POLL_US = 10           # the driver polls the firmware's events (Soft_limit announcements)
WINDOW_US = 20            # one sample of Soft_limit, Cnum, drops and probe delays
QLEN_EVERY_US = 2


def engine_params():
    # Real time (cycles_per_us 250), as bench toe --part nic; the delayed ACK scaled from
    # Linux's 40 ms to 20 us so a connection's last odd segment is acknowledged (and the
    # connection ends) within its scaled life: a few hundred microseconds, not seconds.
    return toe_sim.sim_params(delack_us=20, check_tcb=False)


class Life:
    """One connection of the population, wherever it runs."""

    def __init__(self, n: int, segs: int, t_est: float):
        self.n, self.segs, self.t_est = n, segs, t_est
        self.conn: Conn | None = None     # while on the NIC
        self.done = False


class LoadBench(Bench):
    def __init__(self, dut, cfg: dict):
        super().__init__(dut, cfg)
        self.eparams = engine_params()
        self.rx_other = self._late_frame
        self.period_us = cfg["segment_period_us"]
        self.stall_us = cfg["stall_us"]
        self.active = {0: [], 1: []}       # offloaded connections per port, sending
        self.ending: dict[int, Conn] = {}  # engine id -> connection reset, 'closed' not yet seen
        self.ended_keys: set[tuple] = set()
        self.stats = dict(rst_sent=0, rst_resent=0, late_frames_to_host=0, go_back=0, installs=0,
                          refused_over_limit=0, ended_on_nic=0, ended_on_host=0, established=0,
                          bytes_checked=0, closed_notes=0, soft_limit_events=0)
        self.soft_events: list[tuple[float, int]] = []
        self.ack_bytes: list[tuple[float, int]] = []   # (time, bytes newly stored), all connections

    def _late_frame(self, p: int, pkt) -> bool:
        """A frame of a connection that has ended (a resent RST whose first copy the engine
        had taken): it reaches the host, as after any close; counted, not a host frame."""
        t = tcp_fields(bytes(pkt.data)) if pkt.ok else None
        key = (t[3], t[2]) if t is not None else None
        c = self.conns.get(key)
        if key in self.ended_keys or (c is not None and getattr(c, "t_rst", None) is not None):
            self.stats["late_frames_to_host"] += 1
            return True
        cocotb.log.warning("RX queue %d: a frame that is no host probe frame: ok %s, tcp %s, connection %s", p, pkt.ok,
                           t and t[:7], c and (c.k, getattr(c, "id", None), c.acked, len(c.stream), c.next))
        return False

    def rst_frame(self, c: Conn) -> bytes:
        hs, key = c.hs, c.key
        pkt = build_packet(key.remote_ip, key.local_ip, key.remote_port, key.local_port,
                           (hs.rcv_nxt + len(c.stream)) & 0xFFFFFFFF, hs.snd_una, RST | ACK, 0, b"")
        return eth_frame(hs.local_mac, hs.remote_mac, ETH_P_IP, pkt)

    # ------------------------------------------------------------------ the peers

    async def feed(self, p: int, tags: list) -> None:
        """Port p, every microsecond: a host probe frame, then each offloaded connection's
        peer when its turn comes (one segment every period_us): new data, go-back-N after
        stall_us without ACK progress, or, once every byte is acknowledged, the RST."""
        while not self.stop:
            tag, f = self.host_frame(MACS[p], HOST_FRAME)
            self.send_rx(p, f, tag)
            tags.append((tag, p))
            now = now_ns()
            for c in list(self.active[p]):
                if c.t_next > now:
                    continue
                c.t_next += self.period_us * 1000
                end = len(c.stream)
                if c.acked >= end:
                    if c.t_rst is None or now - c.t_rst > self.stall_us * 1000:
                        self.stats["rst_resent" if c.t_rst is not None else "rst_sent"] += 1
                        if c.t_rst is None:
                            self.ending[c.id] = c
                        c.t_rst = now
                        self.send_rx(p, self.rst_frame(c))
                    continue
                if c.next > c.acked and now - c.t_ack > self.stall_us * 1000:
                    c.next, c.t_ack = c.acked, now
                    c.resends += 1
                    self.stats["go_back"] += 1
                if c.next < end:
                    n = min(PAYLOAD, end - c.next)
                    self.send_rx(p, c.segment(c.next, n, ts=False))
                    c.next += n
            await Timer(1, "us")

    def on_ack(self, c: Conn, t, t0: float, t1: float) -> None:
        """The engine's frames on the wire: its cumulative ACK is what it has stored."""
        a = (t[5] - c.hs.rcv_nxt) & 0xFFFFFFFF
        if t[6] & ACK and c.acked < a <= len(c.stream):
            self.ack_bytes.append((t1, a - c.acked))
            c.acked, c.t_ack = a, t1

    # ------------------------------------------------------------------ the host

    async def offer(self, life: Life, sel: ConnectionSelector, port: int) -> None:
        now = now_ns()
        left = life.segs - int((now - life.t_est) / 1000 / self.period_us)   # what it has not sent on the host
        c = self.new_conn(life.n, port, mss=PAYLOAD, ts=False, snd_size=SND_RING, rcv_size=RCV_RING,
                          stream_len=max(4, left) * PAYLOAD)
        self.conns[(c.key.local_port, c.key.remote_port)] = c
        rsp = await self.win.command(OP_INSTALL, 0, 0, handoff_tcb(c.hs, self.eparams), conn_addr(c.key, c.hs),
                                     state=False)
        if rsp["status"] == ST_OVER_LIMIT:       # Soft_limit fell after the host last heard of it
            del self.conns[(c.key.local_port, c.key.remote_port)]
            self.ring_pool.append((c.snd_ring, c.rcv_ring))
            sel.handoff_done(life, False)
            self.stats["refused_over_limit"] += 1
            return
        assert rsp["status"] == ST_OK, rsp
        sel.handoff_done(life, True)
        self.stats["installs"] += 1
        c.id, c.life = rsp["id"], life
        c.t_ack = now_ns()
        c.t_next = now_ns() + self.rng.uniform(0, self.period_us * 1000)
        c.t_rst = None
        life.conn = c
        self.active[port].append(c)

    def finish(self, c: Conn) -> None:
        """The engine closed c (its 'closed' notification): check its ring, free it."""
        assert c.acked == len(c.stream) and self.ring_ok(c, c.acked), \
            f"connection {c.k}: receive ring in host memory differs from the stream ({c.acked} of {len(c.stream)})"
        self.stats["bytes_checked"] += c.acked
        self.active[c.port].remove(c)
        key = (c.key.local_port, c.key.remote_port)
        del self.conns[key]
        self.ended_keys.add(key)
        self.ring_pool.append((c.snd_ring, c.rcv_ring))
        c.life.done = True
        self.stats["ended_on_nic"] += 1

    async def hear(self, sel: ConnectionSelector, fw: FwHost) -> None:
        """The firmware's announcements, polled (its events raise no interrupt yet)."""
        for code, arg in await fw.events():
            if code == defs.FW_EVT_SOFT_LIMIT:
                sel.set_soft_limit(arg)
                self.soft_events.append((now_ns(), arg))
                self.stats["soft_limit_events"] += 1

    async def host(self, sel: ConnectionSelector, fw: FwHost, demand, t_end: float) -> None:
        """The driver and host stack: population, selection, installs, Soft_limit, closes."""
        lives: list[Life] = []
        next_poll = 0.0
        n = 0
        while now_ns() < t_end:
            now = now_ns()
            if now >= next_poll:
                next_poll = now + FW_POLL_US * 1000
                await self.hear(sel, fw)
            taken, self.drv.toe_notes[:] = list(self.drv.toe_notes), []
            for cid, kind, _seq, _merged in taken:
                if NOTE_NAMES[kind] == "closed":
                    self.stats["closed_notes"] += 1
                    c = self.ending.pop(cid, None)
                    assert c is not None, f"'closed' for id {cid}, which no peer reset"
                    self.finish(c)
                    sel.closed(c.life)
            for life in lives:      # lives spent on the host (never offloaded, or refused)
                if not life.done and life.conn is None and sel.where(life).value in ("host", "kept") \
                        and now - life.t_est > life.segs * self.period_us * 1000:
                    life.done = True
                    sel.closed(life)
                    self.stats["ended_on_host"] += 1
            lives = [x for x in lives if not x.done]
            while len(lives) < demand(now):
                life = Life(n, self.rng.randint(*self.cfg["life_segments"]), now)
                n += 1
                lives.append(life)
                self.stats["established"] += 1
                if sel.on_nic < sel.soft_limit:
                    await self.hear(sel, fw)     # a driver looks for news before it hands off
                if sel.established(life, LISTEN_PORT):
                    await self.offer(life, sel, life.n % 2)
            heard = False
            for life in lives:      # first come, first served: the oldest waiting first
                if sel.on_nic >= sel.soft_limit:
                    break
                if life.conn is not None or sel.where(life).value != "host":
                    continue
                if not heard:
                    await self.hear(sel, fw)
                    heard = True
                if sel.sent(life, 0):
                    await self.offer(life, sel, life.n % 2)
            await Timer(1, "us")


async def run(b: LoadBench, cfg: dict) -> dict:
    drv, win = b.drv, b.win
    await drv.block("dma").write("arbitration", 0)     # host first (the seed's 'P' configurations)
    await win.h.write("note_eq", 0)                     # notifications as events (ToeQueue.use_events)
    await win.h.write("note_mode", 1)
    fw = FwHost(drv.block("fw"))
    await fw.wait_state(defs.FW_STATE_RUNNING)
    await fw.events()                                   # BOOTED
    qsize = await win.h.read("nicq_capacity")
    if not cfg["load_control"]:
        rsp = await fw.command([defs.hdr(defs.FW_OP_SET_WATERMARKS, 2, 1), qsize, 0])
        assert rsp[1] == defs.FW_ST_OK, rsp
    load = await fw.command([defs.hdr(defs.FW_OP_GET_LOAD, 0, 2)])
    assert load[1] == defs.FW_ST_OK, load
    lc = dict(state=load[2], soft_limit=load[3], hard_limit=load[4], hiwat=load[5], lowat=load[6], qlen=load[7],
              cnum=load[8], dec_step=load[9], inc_step=load[10], queue_size=qsize)
    sel = ConnectionSelector(soft_limit=lc["soft_limit"], default=Fcfs())
    b.on_engine = b.on_ack
    phases = cfg["phases"]                           # [name, us, population]
    t0 = now_ns()
    edges, t = [], t0
    for name, us, pop in phases:
        edges.append((name, t, t + us * 1000, pop))
        t += us * 1000
    t_end = t

    def demand(now: float) -> int:
        for _, a, z, pop in edges:
            if a <= now < z:
                return pop
        return 0

    b.tap.reset()
    b.tap.bucket = "loadctl"          # the RX completion records' times are taken while a bucket is on
    b.tap.watched = {f"rx{p}:cq": [] for p in range(2)}
    for p in range(2):
        b.rx_got[p] = []
    tags: list = []
    qlen: list[tuple[float, int]] = []
    windows: list[dict] = []
    b.stop = False

    async def sampler() -> None:
        h = win.h
        last = {"drops": await h.read("nicq_drops"), "frames": await h.read("nicq_frames")}
        w_start, q_in = now_ns(), []
        while now_ns() < t_end:
            await Timer(QLEN_EVERY_US, "us")
            q = await h.read("nicq_qlen")
            qlen.append((now_ns(), q))
            q_in.append(q)
            if now_ns() - w_start >= WINDOW_US * 1000:
                soft = await h.read("soft_limit")       # Soft_limit first, then Cnum (see below)
                cnum = await win.t.read("connections")
                drops, frames = await h.read("nicq_drops"), await h.read("nicq_frames")
                windows.append(dict(t_us=round((now_ns() - t0) / 1000, 1), t0_ns=w_start, t1_ns=now_ns(),
                                    soft_limit=soft, cnum=cnum, qlen_max=max(q_in), qlen_mean=round(sum(q_in) / len(q_in), 2),
                                    nic_drops=(drops - last["drops"]) & 0xFFFFFFFF,
                                    nic_queued=(frames - last["frames"]) & 0xFFFFFFFF,
                                    host_on_nic=sel.on_nic, population=demand(now_ns()),
                                    soft_announced=sel.soft_limit))
                last = {"drops": drops, "frames": frames}
                w_start, q_in = now_ns(), []

    tasks = [cocotb.start_soon(b.feed(p, tags)) for p in range(2)]
    tasks.append(cocotb.start_soon(sampler()))
    await b.host(sel, fw, demand, t_end)
    b.stop = True
    await Timer(30, "us")           # the last probe frames finish
    for x in tasks:
        x.cancel()
    b.tap.bucket = None
    regs = await b.regs()
    # Connections still on the NIC: their rings up to the last ACK.
    open_bytes = 0
    for p in range(2):
        for c in b.active[p]:
            assert b.ring_ok(c, c.acked), f"connection {c.k}: receive ring differs up to its last ACK"
            open_bytes += c.acked
    b.stats["bytes_checked"] += open_bytes
    # Host probe frames: the completions in order are the frames the driver took in order.
    rx_bad, delivered, lat = 0, set(), []
    for p in range(2):
        times = [tt for tt, k in b.tap.watched[f"rx{p}:cq"] for _ in range(k)]
        for (tag, ok), t_cpl in zip(b.rx_got[p], times):
            if not ok:
                rx_bad += 1
            elif tag is not None:
                delivered.add(tag)
                te = b.rx_end.get(tag)
                if te is not None:
                    lat.append((te, t_cpl - te))
    lost = sum(tg not in delivered for tg, _ in tags if b.rx_end.get(tg, t_end) < t_end)
    assert rx_bad == 0, f"{rx_bad} host frames arrived corrupted"
    for w in windows:
        d = [x for te, x in lat if w["t0_ns"] <= te < w["t1_ns"]]
        w["host_rx_median_ns"], w["host_rx_p99_ns"], w["host_rx_frames"] = pct(d, 0.5), pct(d, 0.99), len(d)
        w["stored_bytes"] = sum(n for tt, n in b.ack_bytes if w["t0_ns"] <= tt < w["t1_ns"])
        w["window_us"] = round((w["t1_ns"] - w["t0_ns"]) / 1000, 2)
    phase_out = []
    for name, a, z, pop in edges:
        d = [x for te, x in lat if a <= te < z]
        ws = [w for w in windows if a <= w["t0_ns"] and w["t1_ns"] <= z]
        q = [v for tt, v in qlen if a <= tt < z]
        stored = sum(n for tt, n in b.ack_bytes if a <= tt < z)
        phase_out.append(dict(name=name, us=(z - a) / 1000, population=pop, host_rx_frames=len(d),
                              host_rx_median_ns=pct(d, 0.5), host_rx_p99_ns=pct(d, 0.99), host_rx_max_ns=pct(d, 1.0),
                              qlen_max=max(q, default=0), qlen_mean=round(sum(q) / len(q), 2) if q else 0,
                              nic_drops=sum(w["nic_drops"] for w in ws), nic_queued=sum(w["nic_queued"] for w in ws),
                              soft_limit_min=min((w["soft_limit"] for w in ws), default=None),
                              cnum_max=max((w["cnum"] for w in ws), default=None),
                              cnum_mean=round(sum(w["cnum"] for w in ws) / len(ws), 1) if ws else None,
                              offload_stored_bytes=stored,
                              offload_goodput_gbps=round(stored * 8 / (z - a), 3)))
    for w in windows:
        del w["t0_ns"], w["t1_ns"]
    # Cnum above Soft_limit: only by what was in flight. A decrease happens with Cnum at
    # most Soft_limit (installs are refused from Soft_limit on), so Cnum <= Soft_limit +
    # dec_step; Soft_limit is read before Cnum, so an increase between the two reads
    # (inc_step) and an install it let in may show too.
    over = max((w["cnum"] - w["soft_limit"] for w in windows), default=0)
    return {"load_control": cfg["load_control"], "lc_settings": lc, "windows": windows, "phases": phase_out,
            "soft_limit_events": [(round((t - t0) / 1000, 1), v) for t, v in b.soft_events],
            "host_rx": {"frames": len(tags), "lost": lost, "corrupted": rx_bad},
            "stats": b.stats, "selector": dict(sel.counters),
            "installs_over_limit_hw": regs.get("installs_over_limit"), "counters_end": regs,
            "qlen_max": max((v for _, v in qlen), default=0), "cnum_over_soft_limit_max": over,
            "soft_limit_min": min((w["soft_limit"] for w in windows), default=None),
            "cnum_max": max((w["cnum"] for w in windows), default=None), "sim_us": round((now_ns() - t0) / 1000, 1)}


@cocotb.test()
async def loadctl(dut):
    cfg = bench_config()
    b = LoadBench(dut, cfg)
    await b.setup()
    res = await run(b, cfg)
    res["seed"] = cfg["seed"]
    res["driver_errors"] = list(b.drv.errors)
    with open(cfg["out"], "w") as f:
        json.dump(res, f)
    assert not res["driver_errors"], res["driver_errors"][:5]
