"""`./offnic bench toe --part nic`, simulation side: the TCP engine inside the whole NIC
(issue 17's benchmarks) on the fast harness (sim/fastsim: PCIe host with host memory at
1 us read latency, two 25G XGMII ports, the driver model), `nic-toe` build.

- `table1`: seed 004's Table 1 on our hardware. Host packets cross the NIC on both ports
  while offloaded connections load the engine: (a) none, (b) moderate (MSS-1448 segments
  from the peers, one per microsecond per port beside the host traffic), (c) saturated
  (64-byte segments filling both ports beside the host frames: ~36 M segments/s against
  the engine's ~10-20 M decisions/s), each in host-first and FCFS mode (dma.arbitration).
  Host RX delay: the frame's last byte on the wire (XGMII) to its RX completion record
  starting on the PCIe link (the C++ host's watched writes); host TX delay: the doorbell
  write to the frame's first byte on the wire. Every host frame is checked (delivered
  intact, counted only if delivered). The peers are a packet generator with go-back-N
  (it resends from the engine's last cumulative ACK when that ACK has not moved for
  10 us), so the goodput of the offloaded connections (in-order bytes the engine stored
  into their receive rings in host memory, from its ACKs on the wire; the rings checked
  byte for byte at the end) is what the engine sustains despite its drops.
- `one_conn`: one offloaded connection with its rings in host memory: transmit (the NIC
  sends from its send ring; the generator ACKs every second segment) and receive (the
  generator sends MSS segments back to back; the NIC stores them into its receive ring),
  at MSS 1448 and 8948, goodput over a window after a warm-up and PCIe bytes per payload
  byte, against the same transfer through the host path (TX/RX queues, frames of the same
  sizes). Every byte checked.

Commands go through the interim register window (toe_window.py); its notifications are
drained by a poller that pops them over MMIO (the issue's path, notifications as
completions and events, is not built), and that MMIO is counted in the PCIe bytes.
"""
from __future__ import annotations

import json
import random
import struct

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Timer
from cocotbext.eth import XgmiiFrame

from offnic_sim.bench.cases import BUF_SIZE, MAX_FRAME, TAG_AT
from offnic_sim.fast.fast_tb import FastNicTB
from offnic_sim.harness.runner import bench_config
from offnic_sim.net.eth import ETH_P_IP, eth_frame
from offnic_sim.net.tcppeer import ACK, build_packet, tcp_options
from offnic_sim.toe import toe_sim
from offnic_sim.toe.toe_handoff_bench import command_flood, run_handoffs
from offnic_sim.toe.toe_model import ConnKey, Handoff, handoff_tcb
from offnic_sim.toe.toe_window import OP_INSTALL, OP_RESTORE, ST_OK, ToeWindow, conn_addr

MACS = [bytes.fromhex("020000000001"), bytes.fromhex("020000000003")]   # the ports' station addresses
PEER_MAC = bytes.fromhex("020000000002")
LOCAL_IP, PEER_IP = "10.0.0.1", "10.0.0.2"
HOST_ETHERTYPE = b"\x88\xb5"          # host frames: a local EtherType, tag at byte 14 (bench/cases.py)
HOST_FRAME = 512                      # host frames' size with FCS (Table 1)
HOST_PERIOD_NS = 1000                 # one host frame per port and direction per microsecond
SMALL_PAYLOAD = 64                    # the saturating segments' payload (frames 118 B + FCS)
STALL_NS = 10_000                     # the generator goes back to the last ACK after 10 us without progress
GEN_CAP = 16 << 10                    # bytes the generator keeps beyond the last ACK per connection
LINE_GBPS = 25.0
WIRE_EXTRA = 20                       # preamble + SFD + minimum inter-frame gap, bytes


def now_ns() -> float:
    return get_sim_time("ns")


def params():
    # Real time (cycles_per_us 250). The delayed ACK is 200 us rather than Linux's 40 ms so
    # a connection's last odd segment is acknowledged within a phase; no other timer fires
    # here (no loss but the engine's own drops, which the generator repairs).
    return toe_sim.sim_params(delack_us=200, check_tcb=False)


def tcp_fields(frame: bytes):
    """(src ip, dst ip, sport, dport, seq, ack, flags, payload) of an IPv4/TCP frame, or None."""
    if len(frame) < 54 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
        return None
    ip = frame[14:]
    ihl = (ip[0] & 15) * 4
    total = int.from_bytes(ip[2:4], "big")
    tcp = ip[ihl:total]
    doff = (tcp[12] >> 4) * 4
    sport, dport, seq, ack = struct.unpack("!HHII", tcp[:12])
    return bytes(ip[12:16]), bytes(ip[16:20]), sport, dport, seq, ack, tcp[13], bytes(tcp[doff:])


class Conn:
    """One offloaded connection and the generator's view of it."""

    def __init__(self, k: int, port: int, key: ConnKey, hs: Handoff, stream: bytes):
        self.k, self.port, self.key, self.hs, self.stream = k, port, key, hs, stream
        self.id = None
        self.next = 0          # the generator's next byte to send (offset in its stream)
        self.acked = 0         # the engine's cumulative ACK seen on the wire (offset)
        self.t_ack = 0.0       # when it last moved
        self.ack_log: list[tuple[float, int]] = []
        self.resends = 0       # go-back-N restarts
        self.hwm = 0           # the farthest byte sent
        self.tsval = 10_000

    def segment(self, off: int, n: int, ts: bool) -> bytes:
        hs, key = self.hs, self.key
        self.tsval += 1
        opts = tcp_options(ts=(self.tsval, hs.ts_val)) if ts else b""
        pkt = build_packet(key.remote_ip, key.local_ip, key.remote_port, key.local_port, (hs.rcv_nxt + off) & 0xFFFFFFFF,
                           hs.snd_una, ACK, 0xFFFF, self.stream[off:off + n], options=opts)
        return eth_frame(hs.local_mac, hs.remote_mac, ETH_P_IP, pkt)

    def ack_frame(self, ack_off: int, ts: bool) -> bytes:
        """The peer's pure ACK of the engine's stream up to ack_off."""
        hs, key = self.hs, self.key
        self.tsval += 1
        opts = tcp_options(ts=(self.tsval, hs.ts_val)) if ts else b""
        pkt = build_packet(key.remote_ip, key.local_ip, key.remote_port, key.local_port, hs.rcv_nxt,
                           (hs.snd_una + ack_off) & 0xFFFFFFFF, ACK, 0xFFFF, b"", options=opts)
        return eth_frame(hs.local_mac, hs.remote_mac, ETH_P_IP, pkt)


class Bench:
    def __init__(self, dut, cfg: dict):
        self.cfg = cfg
        self.tb = FastNicTB(dut, host_latency_ns=1000.0)
        self.tap = self.tb.make_pcie_tap()
        self.drv = self.tb.drv
        self.rng = random.Random(cfg["seed"])
        self.blob = self.rng.randbytes(BUF_SIZE)
        self.conns: dict[tuple, Conn] = {}      # (local port, remote port) -> connection
        self.tx_wire: dict[int, tuple] = {}     # host TX tag -> (port, first byte time, frame)
        self.rx_end: dict[int, float] = {}      # host RX tag -> last byte on the wire
        self.rx_sent: dict[int, bytes] = {}     # host RX tag -> frame
        self.rx_got = {0: [], 1: []}            # per RX queue: (tag, intact)
        self.engine_frames = {0: [], 1: []}     # engine frames per port: (t_start, t_end, fields)
        self.on_engine = None                   # a case's hook for engine frames
        self.stop = False
        self.drain = True                       # the note poller runs (paused for the host-path cases)
        self.tag = 1
        self.eparams = params()                 # the engine's settings (a case may scale its timers)
        self.rx_other = None                    # a case's hook for RX frames that are no host frame it sent
        self.ring_pool: list[tuple] = []        # (send ring, receive ring) free for a new connection

    # ------------------------------------------------------------------ set-up

    async def setup(self) -> None:
        tb, drv = self.tb, self.drv
        await tb.init()
        for b in drv.blocks["eth_port"]:
            await b.write("max_frame_len", MAX_FRAME)
        await drv.set_rss(enable=False)
        await drv.set_mac(1, MACS[1])
        bar = drv.fn.bar_addr[0]
        for p in range(2):
            await drv.open_tx_queue(p, size=256, port=p, buf_size=BUF_SIZE, mod_count=16, mod_time_us=2)
            await drv.open_rx_queue(p, size=512, buf_size=BUF_SIZE, mod_count=16, mod_time_us=2)
            await drv.set_default_queue(port=p, q=p)
            for kind in ("tx", "rx"):
                qs = drv.queues[kind][p]
                self.tap.add_range(qs.ring.buf.addr, qs.ring.buf.size, "host:ring")
                self.tap.add_range(qs.bufs.addr, qs.bufs.size, "host:buf")
                self.tap.add_range(qs.cq.ring.buf.addr, qs.cq.ring.buf.size, f"{kind}{p}:cq")
        for name in ("toe_host", "toe"):
            b = drv.block(name)
            self.tap.add_range(bar + b.base, b.type.window_bytes, "toe:window")
        self.win = ToeWindow(drv)
        await self.win.configure(self.eparams, cycles_per_us=250)
        for p in range(2):
            cocotb.start_soon(self._sink(p))
            cocotb.start_soon(self._rx_take(p))
        cocotb.start_soon(self._drain_notes())

    async def _sink(self, p: int) -> None:
        sink = self.tb.ports[p].sink
        while True:
            f = await sink.recv()
            data = bytes(f.get_payload())
            t0, t1 = f.sim_time_start / 1000.0, f.sim_time_end / 1000.0
            if data[12:14] == HOST_ETHERTYPE:
                tag = int.from_bytes(data[TAG_AT:TAG_AT + 8], "little")
                self.tx_wire[tag] = (p, t0, data)
                continue
            t = tcp_fields(data)
            if t is None:
                continue
            c = self.conns.get((t[2], t[3]))
            if c is not None and self.on_engine is not None:
                self.on_engine(c, t, t0, t1)

    async def _rx_take(self, p: int) -> None:
        while True:
            pkt = await self.drv.recv(p, timeout_us=None)
            tag = int.from_bytes(pkt.data[TAG_AT:TAG_AT + 8], "little") if pkt.ok else -1
            want = self.rx_sent.get(tag)
            ok = want is not None and bytes(pkt.data[:len(want)]) == want
            if not ok and self.rx_other is not None and self.rx_other(p, pkt):
                tag, ok = None, True    # the case accounts for it (kept here for the completions' order)
            self.rx_got[p].append((tag, ok))

    async def _drain_notes(self) -> None:
        """Pops the engine's notifications so its 64-entry FIFO never stops it (the
        interim window's duty for a driver); the data is checked in the rings instead."""
        h = self.win.h
        while True:
            await Timer(2, "us")
            if not self.drain:
                continue
            n = await h.read("note_count")
            for _ in range(n):
                await h.write("note_pop", 1)

    def host_frame(self, dst: bytes, size: int) -> tuple[int, bytes]:
        """A host frame of `size` bytes with FCS (returned without it), tagged."""
        tag = self.tag
        self.tag += 1
        return tag, dst + PEER_MAC + HOST_ETHERTYPE + tag.to_bytes(8, "little") + self.blob[:size - 4 - 22]

    def send_rx(self, p: int, frame: bytes, tag: int | None = None) -> None:
        """Into port p; a host frame (tag) has its last byte's time recorded."""
        if tag is None:
            self.tb.ports[p].source.send_nowait(frame)
            return
        self.rx_sent[tag] = frame
        xf = XgmiiFrame.from_payload(frame, min_len=60,
                                     tx_complete=lambda fr, t=tag: self.rx_end.__setitem__(t, fr.sim_time_end / 1000.0))
        self.tb.ports[p].source.send_nowait(xf)

    # ------------------------------------------------------------------ connections

    def new_conn(self, k: int, port: int, *, mss: int, ts: bool, snd_size: int, rcv_size: int, stream_len: int,
                 queued: bytes = b"") -> Conn:
        pooled = next((r for r in self.ring_pool if r[0].size == snd_size and r[1].size == rcv_size), None)
        if pooled is not None:     # rings of a connection that ended, checked: reused
            self.ring_pool.remove(pooled)
            snd, rcv = pooled
        else:
            snd, rcv = self.drv.alloc(snd_size), self.drv.alloc(rcv_size)
        isn_e, isn_p = self.rng.getrandbits(32), self.rng.getrandbits(32)
        for i in range(0, len(queued), 4096):   # the send ring holds [snd_una, write_seq) at seq mod size
            chunk = queued[i:i + 4096]
            at = (isn_e + i) % snd_size
            first = min(len(chunk), snd_size - at)
            snd.write(at, chunk[:first])
            if first < len(chunk):
                snd.write(0, chunk[first:])
        key = ConnKey(LOCAL_IP, 20000 + k, PEER_IP, 30000 + k)
        wsc = 10
        hs = Handoff(local_mac=MACS[port].hex(":"), remote_mac=PEER_MAC.hex(":"), snd_una=isn_e, snd_nxt=isn_e,
                     write_seq=(isn_e + len(queued)) & 0xFFFFFFFF, rcv_nxt=isn_p, read_seq=isn_p,
                     snd_wnd=0xFFFF << wsc, rcv_wnd=min(rcv_size, 0xFFFF << wsc), rcv_wup=isn_p, snd_buf=snd.addr,
                     snd_size=snd_size, rcv_buf=rcv.addr, rcv_size=rcv_size, mss=mss + (12 if ts else 0),
                     max_window=0xFFFF << wsc, wscale_ok=True, snd_wscale=wsc, rcv_wscale=wsc, timestamps=ts,
                     ts_val=1000 + k, ts_recent=(5000 if ts else None), cwnd=0xFFFF << wsc, sack_ok=False)
        c = Conn(k, port, key, hs, self.rng.randbytes(stream_len))
        c.snd_ring, c.rcv_ring, c.queued = snd, rcv, queued
        if pooled is None:
            self.tap.add_range(snd.addr, snd_size, "toe:snd_ring")
            self.tap.add_range(rcv.addr, rcv_size, "toe:rcv_ring")
        return c

    async def install(self, c: Conn) -> None:
        # known to the sink first: the engine may send before the command's answer is read
        self.conns[(c.key.local_port, c.key.remote_port)] = c
        rsp = await self.win.command(OP_INSTALL, 0, 0, handoff_tcb(c.hs, self.eparams), conn_addr(c.key, c.hs),
                                     state=False)
        assert rsp["status"] == ST_OK, rsp
        c.id = rsp["id"]

    async def restore(self, c: Conn) -> None:
        rsp = await self.win.command(OP_RESTORE, c.id, state=False, timeout_us=self.cfg.get("command_timeout_us", 2000))
        assert rsp["status"] == ST_OK, rsp
        del self.conns[(c.key.local_port, c.key.remote_port)]

    def ring_ok(self, c: Conn, n: int) -> bool:
        """The receive ring holds the first n bytes of the peer's stream (at rcv_nxt mod size)."""
        size = c.hs.rcv_size
        at = c.hs.rcv_nxt % size
        got = b""
        while len(got) < n:
            take = min(n - len(got), size - at)
            got += c.rcv_ring.read(at, take)
            at = (at + take) % size
        return got == c.stream[:n]

    async def regs(self) -> dict:
        r = await self.win.counters()
        for p in range(2):
            r[f"rx_fifo_drops_{p}"] = (await self.drv.port_counters(p))["rx_fifo_drops"]
        r["dma_eng_over_host"] = await self.drv.block("dma").read("eng_over_host")
        return r


def window_rate(log: list[tuple[float, int]], w0: float, w1: float) -> tuple[int, float]:
    """(bytes, ns) between the first delivery event after w0 and the last at or before w1
    (event to event: a rate no faster than the deliveries themselves, whatever the
    window's edges cut)."""
    ev = [(t, g) for t, g in log if w0 < t <= w1]
    if len(ev) < 2 or ev[-1][0] == ev[0][0]:
        return 0, 0.0
    base = max(g for t, g in ev if t == ev[0][0])   # events at the first instant are its own
    return ev[-1][1] - base, ev[-1][0] - ev[0][0]


def pct(v: list[float], q: float) -> float | None:
    if not v:
        return None
    s = sorted(v)
    return round(s[min(len(s) - 1, int(q * len(s)))], 1)


def _moved(a: dict, b: dict) -> dict:
    return {k: (b[k] - a[k]) & 0xFFFFFFFF for k in b
            if k not in ("nicq_qlen", "connections", "connections_peak", "now_us", "soft_limit", "nicq_capacity",
                         "tcb_bits", "note_count", "note_head", "note_seq", "cmd_state") and b[k] != a[k]}


# ---------------------------------------------------------------------- Table 1

async def table1_phase(b: Bench, load: str, host_first: bool, warm_us: float, window_us: float) -> dict:
    drv = b.drv
    cfg_debug = b.cfg.get("debug", False)
    await drv.block("dma").write("arbitration", 0 if host_first else 1)
    n_conns = {"none": 0, "moderate": 8, "saturated": 16, "saturated_128": 16, "saturated_port0": 8,
               "commands": 0}[load]
    loaded_ports = (0,) if load == "saturated_port0" else (0, 1)
    small = 128 if load == "saturated_128" else b.cfg.get("small_payload", SMALL_PAYLOAD)
    mss = 1448 if load == "moderate" else small
    # segments per port per microsecond beside the host frame, ~98.5% of 25G
    per_us = 1 if load == "moderate" else int((3125 - HOST_FRAME - WIRE_EXTRA) / (small + 58 + WIRE_EXTRA))
    stream_len = int((warm_us + window_us + 50) * per_us * mss * 2 / max(n_conns, 1)) + GEN_CAP
    rcv_size = 1 << max(16, (2 * stream_len - 1).bit_length())
    conns = [b.new_conn(100 * load.startswith("saturated") + 25 * (load == "saturated_port0") + k
                        + 300 * (load == "saturated_128")
                        + (0 if host_first else 50), loaded_ports[k % len(loaded_ports)], mss=mss, ts=False,
                        snd_size=4096, rcv_size=rcv_size, stream_len=stream_len) for k in range(n_conns)]
    for c in conns:
        await b.install(c)
    by_port = {p: [c for c in conns if c.port == p] for p in range(2)}

    def on_engine(c: Conn, t, t0: float, t1: float) -> None:
        a = (t[5] - c.hs.rcv_nxt) & 0xFFFFFFFF
        if t[6] & ACK and a <= len(c.stream) and a > c.acked:
            c.acked, c.t_ack = a, t1
            c.ack_log.append((t1, a))
    b.on_engine = on_engine
    b.tap.reset()
    b.tap.watched = {f"rx{p}:cq": [] for p in range(2)}
    b.tap.bucket = "table1"
    for p in range(2):
        b.rx_got[p] = []
    tags = {"rx": [], "tx": []}       # (tag, port)
    tx_door: dict[int, float] = {}
    regs0 = await b.regs()
    qlen: list[int] = []
    t_start = now_ns()
    w0, w1 = t_start + warm_us * 1000, t_start + (warm_us + window_us) * 1000
    b.stop = False

    sent_total, sent_log = [0], []     # new bytes the peers sent, over time

    async def rx_feed(p: int) -> None:
        rr = 0
        while not b.stop:
            tag, f = b.host_frame(MACS[p], HOST_FRAME)
            b.send_rx(p, f, tag)
            tags["rx"].append((tag, p))
            for _ in range(per_us if by_port[p] else 0):
                c = by_port[p][rr % len(by_port[p])]
                rr += 1
                if c.next - c.acked >= GEN_CAP or c.next + mss > len(c.stream):
                    if now_ns() - c.t_ack > STALL_NS and c.next > c.acked:
                        c.next, c.t_ack = c.acked, now_ns()   # go back N
                        c.resends += 1
                    continue
                if c.next > c.acked and now_ns() - c.t_ack > STALL_NS:
                    c.next, c.t_ack = c.acked, now_ns()
                    c.resends += 1
                b.send_rx(p, c.segment(c.next, mss, ts=False))
                c.next += mss
                if c.next > c.hwm:      # new bytes (not a go-back-N resend)
                    sent_total[0] += c.next - c.hwm
                    c.hwm = c.next
                    sent_log.append((now_ns(), sent_total[0]))
            await Timer(HOST_PERIOD_NS, "ns")

    async def tx_feed(p: int) -> None:
        await Timer(HOST_PERIOD_NS // 2, "ns")
        while not b.stop:
            tag, f = b.host_frame(PEER_MAC, HOST_FRAME)
            [tok] = await drv.send_batch(p, [f], max_in_flight=64)
            tx_door[tag] = tok.t_doorbell
            tags["tx"].append((tag, p))
            await Timer(HOST_PERIOD_NS, "ns")

    trace: list[tuple] = []    # (us, Qlen, segments decided, host frames steered) every 2 us

    async def sample_qlen() -> None:
        while not b.stop or cfg_debug:   # debugging: on through the settling too
            await Timer(2, "us")
            q = await b.win.h.read("nicq_qlen")
            if w0 <= now_ns() <= w1:
                qlen.append(q)
            if cfg_debug:
                trace.append((round(now_ns() / 1000 - t_start / 1000, 1), q, await b.win.t.read("seg_events"),
                              await b.win.t.read("steer_to_host")))

    tasks = [cocotb.start_soon(rx_feed(p)) for p in range(2)]
    tasks += [cocotb.start_soon(tx_feed(p)) for p in range(2) if not b.cfg.get("no_host_tx")]
    tasks.append(cocotb.start_soon(sample_qlen()))
    flood = cocotb.start_soon(command_flood(b, lambda: b.stop)) if load == "commands" else None
    await Timer(warm_us + window_us, "us")
    b.stop = True
    flooded = await flood if flood is not None else None
    # Let every host frame finish (or be lost: nothing more arrives for 10 us) and the
    # engine empty its queue before counting and restoring. (A restore while an FCFS
    # backlog held the lookup deadlocked the NIC until TcpSteer's fix: docs/toe.md, "The
    # engine in the NIC: figures"; `restore_without_drain` is its regression case.)
    last, q = -1, -1
    for _ in range(0 if b.cfg.get("restore_without_drain") else 100):
        await Timer(5, "us")
        got = sum(len(v) for v in b.rx_got.values())
        q = await b.win.h.read("nicq_qlen")
        idle = b.tb.ports[0].source.idle() and b.tb.ports[1].source.idle()
        if q == 0 and idle and (got == last or got >= len(tags["rx"]) and all(t in b.tx_wire for t, _ in tags["tx"])):
            break
        last = got
    drained = q == 0
    await Timer(10, "us")
    for t in tasks:
        t.cancel()
    b.tap.bucket = None
    regs1 = await b.regs()
    b.on_engine = None
    # Host RX: completion record writes in order = the packets the driver took in order.
    rx_lat, rx_bad, rx_lost = [], 0, 0
    cq = b.tap.watched
    delivered = set()
    for p in range(2):
        times = [t for t, k in cq[f"rx{p}:cq"] for _ in range(k)]
        for (tag, ok), t_cpl in zip(b.rx_got[p], times):
            if not ok:
                rx_bad += 1
                continue
            delivered.add(tag)
            te = b.rx_end.get(tag)
            if te is not None and w0 <= te <= w1:
                rx_lat.append(t_cpl - te)
    rx_in_window = [t for t, _ in tags["rx"] if w0 <= b.rx_end.get(t, 0) <= w1]
    rx_lost = sum(t not in delivered for t, _ in tags["rx"])
    tx_lat, tx_bad = [], 0
    for tag, p in tags["tx"]:
        w = b.tx_wire.get(tag)
        if w is None:
            tx_bad += 1
            continue
        if w[0] != p:
            tx_bad += 1
        if w0 <= tx_door[tag] <= w1:
            tx_lat.append(w[1] - tx_door[tag])
    # Offloaded connections: bytes stored in order (the engine's cumulative ACKs, all
    # connections' summed, event to event inside the window), every ring checked.
    merged, total_acked = [], {c.k: 0 for c in conns}
    for t, k, a in sorted((t, c.k, a) for c in conns for t, a in c.ack_log):
        total_acked[k] = a
        merged.append((t, sum(total_acked.values())))
    good, span = window_rate(merged, w0, w1)
    acked_gbps = good * 8 / span if span else 0.0
    s_bytes, s_span = window_rate(sent_log, w0, w1)
    sent_gbps = s_bytes * 8 / s_span if s_span else 0.0
    offered = sum(1 for p in (0, 1) if by_port[p]) * per_us * mss * 8 / 1000   # Gb/s the peers sent, first copies
    rings_ok = all(b.ring_ok(c, c.acked) for c in conns)
    assert rings_ok, "a receive ring in host memory differs from the stream the peer sent"
    hang = None
    for c in conns:
        try:
            await b.restore(c)
        except TimeoutError as e:      # a finding: keep what the NIC says about itself
            h = b.win.h
            hang = {"error": str(e), "conn": c.id, "cmd_state": await h.read("cmd_state"),
                    "counters_after": await b.regs(), "acked": {x.id: x.acked for x in conns}}
            cocotb.log.error("table1 %s %s: %s", load, host_first, hang)
            break
    mv = _moved(regs0, regs1)
    return {
        "load": load, "mode": "host_first" if host_first else "fcfs", "offloaded_connections": n_conns,
        "commands_flooded": flooded and {**flooded, "per_s": round(flooded["commands"] / ((now_ns() - t_start) / 1e9))},
        "segment_payload": mss if n_conns else None, "segments_per_us_per_port": per_us if n_conns else 0,
        "window_us": window_us, "warmup_us": warm_us,
        "host_rx": {"frames": len(tags["rx"]), "measured": len(rx_lat), "in_window": len(rx_in_window),
                    "lost": rx_lost, "corrupted": rx_bad, "median_ns": pct(rx_lat, 0.5), "p99_ns": pct(rx_lat, 0.99),
                    "max_ns": pct(rx_lat, 1.0)},
        "host_tx": {"frames": len(tags["tx"]), "measured": len(tx_lat), "missing_or_wrong_port": tx_bad,
                    "median_ns": pct(tx_lat, 0.5), "p99_ns": pct(tx_lat, 0.99), "max_ns": pct(tx_lat, 1.0)},
        "qlen_max": max(qlen, default=0), "qlen_mean": round(sum(qlen) / len(qlen), 2) if qlen else 0,
        "qlen_samples": len(qlen),
        "nic_packet_drops": mv.get("nicq_drops", 0), "nic_packets_queued": mv.get("nicq_frames", 0),
        "port_fifo_drops": mv.get("rx_fifo_drops_0", 0) + mv.get("rx_fifo_drops_1", 0),
        # stored in order (the ACKs), but no more than the new bytes sent meanwhile: the ACKs'
        # timing alone read up to 1% above it when every byte was delivered
        "offload_goodput_gbps": round(min(acked_gbps, sent_gbps), 3), "offload_acked_gbps": round(acked_gbps, 3),
        "offload_new_bytes_sent_gbps": round(sent_gbps, 3),
        "offload_offered_gbps": round(offered, 3),
        "offload_bytes_in_window": good, "offload_bytes_checked": sum(c.acked for c in conns),
        "generator_go_back": sum(c.resends for c in conns),
        "counters": mv, "engine_queue_drained_before_restore": drained, "restore_hang": hang, **({"trace": trace} if cfg_debug else {}),
    }


async def run_table1(b: Bench, cfg: dict) -> list[dict]:
    out = []
    for load in cfg.get("loads", ["none", "moderate", "saturated"]):
        for host_first in cfg.get("modes", (True, False)):
            r = await table1_phase(b, load, host_first, cfg["warm_us"], cfg["window_us"])
            cocotb.log.info("table1 %s %s: rx %s tx %s qlen %s drops %s goodput %s", r["load"], r["mode"],
                            r["host_rx"], r["host_tx"], r["qlen_max"], r["nic_packet_drops"], r["offload_goodput_gbps"])
            assert r["host_rx"]["corrupted"] == 0 and r["host_tx"]["missing_or_wrong_port"] == 0, r
            out.append(r)
            if r["restore_hang"]:
                return out     # the engine answers no more commands: the rest would measure nothing
    return out


# ---------------------------------------------------------------------- one connection

def _pcie(b: Bench) -> dict:
    counts = b.tap.bucket_counts("case")
    by = {}
    for label, kinds in counts.items():
        if label == "_if":
            continue
        by[label] = sum(v[1] for v in kinds.values())
    return by


async def one_offload(b: Bench, direction: str, mss: int, warm_us: float, window_us: float) -> dict:
    frame = 66 + mss                                     # Ethernet + IPv4 + TCP + timestamps + payload
    line_goodput = LINE_GBPS * mss / (frame + 4 + WIRE_EXTRA)
    total = int((warm_us + window_us + 30) * 1000 * LINE_GBPS / 8 * mss / (frame + 4 + WIRE_EXTRA))
    total = (total // mss + 1) * mss
    big = 1 << (2 * total - 1).bit_length()
    k = 200 + (mss > 2000) * 2 + (direction == "rx")
    if direction == "tx":
        c = b.new_conn(k, 0, mss=mss, ts=True, snd_size=big, rcv_size=1 << 16, stream_len=16, queued=b.rng.randbytes(total))
    else:
        c = b.new_conn(k, 0, mss=mss, ts=True, snd_size=4096, rcv_size=big, stream_len=total)
    log: list[tuple[float, int]] = []     # (time, in-order bytes delivered so far)
    state = {"got": 0, "frames": 0, "bad": 0}

    def on_engine(cc: Conn, t, t0: float, t1: float) -> None:
        if direction == "tx":
            pl = t[7]
            if b.cfg.get("debug") and state["frames"] < 60:
                cocotb.log.info("engine frame seq+%d len %d flags %x", (t[4] - cc.hs.snd_una) & 0xFFFFFFFF, len(pl), t[6])
            if not pl:
                return
            off = (t[4] - cc.hs.snd_una) & 0xFFFFFFFF
            if cc.queued[off:off + len(pl)] != pl:
                state["bad"] += 1
                return
            if off <= state["got"] < off + len(pl):
                state["got"] = off + len(pl)
                log.append((t1, state["got"]))
            state["frames"] += 1
            if state["frames"] % 2 == 0 or state["got"] == len(cc.queued):
                b.send_rx(0, cc.ack_frame(state["got"], ts=True))
        else:
            a = (t[5] - cc.hs.rcv_nxt) & 0xFFFFFFFF
            if t[6] & ACK and state["got"] < a <= len(cc.stream):
                state["got"] = a
                log.append((t1, a))
    b.on_engine = on_engine
    b.tap.reset()
    b.tap.bucket = "case"
    regs0 = await b.regs()
    t_start = now_ns()
    await b.install(c)
    wire_end: list[float] = []      # receive: each segment's last byte into the port
    if direction == "rx":
        for off in range(0, total, mss):
            xf = XgmiiFrame.from_payload(c.segment(off, mss, ts=True), min_len=60,
                                         tx_complete=lambda fr: wire_end.append(fr.sim_time_end / 1000.0))
            b.tb.ports[0].source.send_nowait(xf)
    seen, t_seen = -1, now_ns()
    while not (state["got"] >= total and b.tb.ports[0].source.idle()):
        await Timer(10, "us")
        if state["got"] != seen:
            seen, t_seen = state["got"], now_ns()
        elif now_ns() - t_seen > 400_000:   # no progress for 400 us (twice the delayed ACK): a stall
            mv = _moved(regs0, await b.regs())
            raise AssertionError(f"one connection {direction} MSS {mss}: stalled at {state} of {total} bytes; "
                                 f"counters {mv}")
    await Timer(5, "us")
    b.tap.bucket = None
    regs1 = await b.regs()
    pcie = _pcie(b)
    b.on_engine = None
    assert state["got"] == total and state["bad"] == 0, (direction, mss, state, total)
    if direction == "rx":
        assert b.ring_ok(c, total), "receive ring in host memory differs"
    await b.restore(c)
    t_first = log[0][0]
    w0, w1 = t_first + warm_us * 1000, t_first + (warm_us + window_us) * 1000
    assert log[-1][0] > w1, f"the transfer ended before the window did ({log[-1][0] - t_first:.0f} ns)"
    moved, span = window_rate(log, w0, w1)
    gbps = moved * 8 / span
    if direction == "rx":   # nor faster than the segments came in (both counted only once delivered)
        m2, s2 = window_rate([(t, (i + 1) * mss) for i, t in enumerate(wire_end)], w0, w1)
        gbps = min(gbps, m2 * 8 / s2)
    all_bytes = sum(pcie.values())
    return {"path": "offload", "direction": direction, "mss": mss, "frame_bytes": frame, "payload_bytes": total,
            "window_us": window_us, "warmup_us": warm_us, "bytes_in_window": moved, "gbps": round(gbps, 3),
            "line_goodput_gbps": round(line_goodput, 3), "line_rate_pct": round(100 * gbps / line_goodput, 1),
            "pcie_bytes": pcie, "pcie_bytes_per_payload_byte": round(all_bytes / total, 4),
            "pcie_bytes_per_payload_byte_without_window": round((all_bytes - pcie.get("toe:window", 0)) / total, 4),
            "counters": _moved(regs0, regs1), "elapsed_us": round((now_ns() - t_start) / 1000, 1)}


async def one_host(b: Bench, direction: str, mss: int, warm_us: float, window_us: float) -> dict:
    """The same transfer through the host path: frames of 66 + mss bytes (the headers a
    host stack would put on them) through TX queue 0 or into RX queue 0, and the ACKs a
    host stack would exchange for them (a 66-byte frame per two segments: the peer's
    into RX queue 0 when sending, the host's out of TX queue 0 when receiving)."""
    drv = b.drv
    frame = 66 + mss
    size = frame + 4
    line_goodput = LINE_GBPS * mss / (size + WIRE_EXTRA)
    n = int((warm_us + window_us + 30) * 1000 * LINE_GBPS / 8 / (size + WIRE_EXTRA)) + 1
    log: list[tuple[float, int]] = []
    b.drain = False      # no engine work here: its note poller's MMIO is not the host path's
    b.tap.reset()
    b.tap.bucket = "case"
    b.tap.watched = {"rx0:cq": []}
    b.rx_got[0] = []
    tags = []
    t_start = now_ns()
    n_acks = n // 2     # the host stack's ACK traffic: the peer's ACKs in (tx), its own out (rx)
    acks = []
    if direction == "tx":
        for _ in range(n_acks):
            tag, f = b.host_frame(MACS[0], 70)
            acks.append(tag)
            b.send_rx(0, f, tag)
    else:
        for i in range(0, n_acks, 16):
            batch = []
            for _ in range(min(16, n_acks - i)):
                tag, f = b.host_frame(PEER_MAC, 70)
                acks.append(tag)
                batch.append(f)
            await drv.send_batch(0, batch, max_in_flight=128)
    if direction == "tx":
        sent = 0
        in_flight = max(8, min(128, (48 << 10) // size))    # bench/cases.tuning's byte queue limit
        while sent < n:
            batch = []
            for _ in range(min(max(1, in_flight // 4), n - sent)):
                tag, f = b.host_frame(PEER_MAC, size)
                tags.append((tag, f))
                batch.append(f)
            await drv.send_batch(0, batch, max_in_flight=in_flight)
            sent += len(batch)
        for _ in range(10_000):
            if all(t in b.tx_wire for t, _ in tags):
                break
            await Timer(10, "us")
        for _ in range(1000):
            if len(b.rx_got[0]) >= n_acks:
                break
            await Timer(10, "us")
        ok = all(b.tx_wire[t][2][:len(f)] == f for t, f in tags) and len(b.rx_got[0]) == n_acks \
            and all(g for _, g in b.rx_got[0])
        ends = sorted(b.tx_wire[t][1] for t, _ in tags)
        log = [(t, (i + 1) * mss) for i, t in enumerate(ends)]
    else:
        for _ in range(n):
            tag, f = b.host_frame(MACS[0], size)
            tags.append((tag, f))
            b.send_rx(0, f, tag)
        for _ in range(10_000):
            await Timer(10, "us")
            if len(b.rx_got[0]) >= n:
                break
        for _ in range(1000):
            if all(t in b.tx_wire for t in acks):
                break
            await Timer(10, "us")
        ok = len(b.rx_got[0]) == n and all(g for _, g in b.rx_got[0]) and all(t in b.tx_wire for t in acks)
        times = [t for t, k in b.tap.watched["rx0:cq"] for _ in range(k)]
        log = [(t, (i + 1) * mss) for i, t in enumerate(times)]
    await Timer(5, "us")
    b.tap.bucket = None
    b.drain = True
    pcie = _pcie(b)
    assert ok, f"host path {direction} MSS {mss}: frames lost or corrupted"
    t_first = log[0][0]
    w0, w1 = t_first + warm_us * 1000, t_first + (warm_us + window_us) * 1000
    assert log[-1][0] > w1, "the transfer ended before the window did"
    moved, span = window_rate(log, w0, w1)
    gbps = moved * 8 / span
    if direction == "rx":   # nor faster than the frames came in (all of them delivered)
        ends = [b.rx_end[t] for t, _ in tags]
        m2, s2 = window_rate([(t, (i + 1) * mss) for i, t in enumerate(ends)], w0, w1)
        gbps = min(gbps, m2 * 8 / s2)
    total = n * mss
    all_bytes = sum(pcie.values())
    return {"path": "host", "direction": direction, "mss": mss, "frame_bytes": frame, "payload_bytes": total,
            "window_us": window_us, "warmup_us": warm_us, "bytes_in_window": moved, "gbps": round(gbps, 3),
            "line_goodput_gbps": round(line_goodput, 3), "line_rate_pct": round(100 * gbps / line_goodput, 1),
            "host_acks": n_acks, "pcie_bytes": pcie, "pcie_bytes_per_payload_byte": round(all_bytes / total, 4),
            "elapsed_us": round((now_ns() - t_start) / 1000, 1)}


async def run_one_conn(b: Bench, cfg: dict) -> list[dict]:
    out = []
    for mss in cfg.get("mss", [1448, 8948]):
        for direction in ("tx", "rx"):
            for fn in (one_offload, one_host):
                r = await fn(b, direction, mss, cfg["one_warm_us"], cfg["one_window_us"])
                assert r["gbps"] <= r["line_goodput_gbps"] + 0.001, f"a figure above the line: {r}"
                cocotb.log.info("one_conn %s %s MSS %d: %.2f Gb/s (%.1f%%), %.3f PCIe B per payload B", r["path"],
                                direction, mss, r["gbps"], r["line_rate_pct"], r["pcie_bytes_per_payload_byte"])
                out.append(r)
    return out


@cocotb.test()
async def nic(dut):
    cfg = bench_config()
    b = Bench(dut, cfg)
    await b.setup()
    res: dict = {"seed": cfg["seed"], "host_latency_ns": b.tb.hostmem.read_latency_ns}
    t0 = now_ns()
    if "table1" in cfg["cases"]:
        res["table1"] = await run_table1(b, cfg)
    if "one_conn" in cfg["cases"]:
        res["one_conn"] = await run_one_conn(b, cfg)
    if "handoffs" in cfg["cases"]:
        res["handoffs"] = await run_handoffs(b, cfg, now_ns)
        cocotb.log.info("handoffs: %s", res["handoffs"])
    res["sim_us"] = round((now_ns() - t0) / 1000, 1)
    res["driver_errors"] = list(b.drv.errors)
    with open(cfg["out"], "w") as f:
        json.dump(res, f)
    assert not res["driver_errors"], res["driver_errors"][:5]
