"""The TCP offload engine's model (toe_model) in simulated time against TcpPeers: the
machinery tests/toe/test_toe_model.py runs on, and the decision traces a hardware test
checks the engine against.

- `Sim`: one Engine, many TcpPeers, one lossy / reordering / duplicating / corrupting
  link in simulated microseconds; the test (or `decision_traces`) plays the engine's
  host through the rings. `Conn` is one connection of it, `random_conn` adds one with
  random options, ring sizes, MSS, queues and close order, `bulk_pair` a big transfer
  both ways, `forge` a segment from a connection's peer.
- `Solo`: one installed connection whose peer is played segment by segment.
- `decision_traces(seed)`: every `Decision` (segments, timers, host commands) of a
  workload meant to make each kind of decision the engine has; `decision_coverage`
  counts the kinds.
"""
from __future__ import annotations

import heapq
import ipaddress
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator

from offnic_sim.net.eth import ETH_HLEN, ETH_P_IP, eth_frame
from offnic_sim.net.tcppeer import (ACK, FIN, PSH, RST, SYN, TcpConfig, TcpPeer, TcpSegment, TcpState, build_packet,
                      parse_segment, seq_add, seq_diff, seq_gt, seq_le, seq_lt, tcp_options)
from offnic_sim.toe.toe_model import (OOO_RANGES, PAWS_24DAYS, PAWS_AGE_SHIFT, PAWS_WINDOW, RECV_STATES, T_CLOSE, T_NONE, T_RTO,
                        ConnKey, Decision, Engine, EngineParams, Handoff, Memory, St, Tcb, sack_option)

ENGINE_IP = "10.9.0.1"
ENGINE_MAC = "02:0f:4e:00:e0:01"
PEER_MAC = "02:0f:4e:00:e0:02"
T0 = 1_000_000                      # simulated time starts at 1 s (us)
TW_US = 100_000_000                 # both TIME_WAITs outlast the other side's FIN retransmissions


def sim_params(**kw) -> EngineParams:
    """The simulations' EngineParams (kw overrides)."""
    # FIN_WAIT_2 times out: a peer's RST lost while the engine has nothing left to send
    # would otherwise leave it there for good (Linux times out orphans the same way)
    base = dict(time_wait_us=TW_US, rto_max_us=60_000_000, fin_wait_2_us=60_000_000, check_tcb=True)
    base.update(kw)
    return EngineParams(**base)


def peer_config(**kw) -> TcpConfig:
    base = dict(time_wait=TW_US / 1e6)
    base.update(kw)
    return TcpConfig(**base)


def wscale_for(size: int) -> int:
    """The smallest window scale that can advertise a window of `size` bytes."""
    s = 0
    while s < 14 and size > 0xFFFF << s:
        s += 1
    return s


# ============================================================================ one connection

@dataclass
class Conn:
    """One offloaded connection: the engine's side (the host application the test plays)
    and the TcpPeer at the other end."""

    k: int
    key: ConnKey
    peer: TcpPeer
    host_tx: bytes                     # what the host writes after the handoff
    to_peer: bytes                     # everything the peer must receive
    to_host: bytes                     # everything the host must read
    snd_buf: int
    snd_size: int
    rcv_buf: int
    rcv_size: int
    write_seq: int
    acked: int
    read_seq: int
    close: str = "host"                # host | peer | both | rst | none
    latency: int = 1000
    conn: int = -1
    host_pos: int = 0
    data_end: int = 0
    got_host: bytearray = field(default_factory=bytearray)
    got_peer: bytearray = field(default_factory=bytearray)
    stall_until: int = 0               # the host application does not read before this
    peer_stall_until: int = 0          # the peer application does not read before this
    host_stack: TcpPeer | None = None  # after a restore: the host's own TCP carries on
    aborted: bool = False
    peer_wake: bool = False
    fin_seen: bool = False
    host_closed: bool = False
    engine_closed: bool = False
    reset: bool = False
    error: str | None = None
    events: list = field(default_factory=list)

    @property
    def done(self) -> bool:
        if self.host_stack is not None:
            return self.host_stack.state is TcpState.CLOSED and self.peer.state is TcpState.CLOSED
        return self.engine_closed and self.peer.state is TcpState.CLOSED

    def check(self) -> None:
        tag = f"conn {self.k} ({self.close})"
        assert self.error is None, f"{tag}: engine error {self.error}"
        if self.close == "rst":
            # reset, or the RST was lost and FIN_WAIT_2 timed out
            assert self.reset or (self.host_closed and not self.fin_seen), f"{tag}: no RST notification"
            assert bytes(self.got_host) == self.to_host[:len(self.got_host)], f"{tag}: peer->host prefix differs"
            assert bytes(self.got_peer) == self.to_peer[:len(self.got_peer)], f"{tag}: host->peer prefix differs"
            return
        assert self.peer.error is None, f"{tag}: peer error {self.peer.error}"
        assert not self.reset, f"{tag}: reset"
        for what, got, want in (("peer->host", self.got_host, self.to_host),
                                ("host->peer", self.got_peer, self.to_peer)):
            assert bytes(got) == want, \
                f"{tag}: {what} {len(got)}/{len(want)} bytes, differ at {first_diff(got, want)}"


def first_diff(a: bytes, b: bytes) -> int:
    return next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))


# ============================================================================ the simulation

class Sim:
    """One engine, many TcpPeers, one link in simulated microseconds. Per frame on the
    link: drop, corrupt (one bit past the Ethernet header), duplicate (the copy a little
    later), extra random delay (reordering). `tap(conn, frame)` may replace a frame going
    to the engine with a list of frames (hostile tests)."""

    def __init__(self, seed: int, params: EngineParams | None = None, *, mem: int = 64 << 20, drop=0.0, dup=0.0,
                 corrupt=0.0, reorder=0.0, reorder_us=5000, engine=None):
        """engine: an engine with the model's interface and its own `mem` (the simulated
        hardware: toe_hwengine.HwEngine); default a toe_model.Engine."""
        self.rng = random.Random(seed)
        if engine is None:
            self.mem = Memory(mem)
            self.eng = Engine(self.mem, params or sim_params())
        else:
            self.mem = engine.mem
            self.eng = engine
        self.drop, self.dup, self.corrupt, self.reorder, self.reorder_us = drop, dup, corrupt, reorder, reorder_us
        self.now = T0
        self.eng.poll(T0)
        self.conns: list[Conn] = []
        self.by_k: dict[int, Conn] = {}    # (connections may be added while the simulation runs)
        self.by_id: dict[int, Conn] = {}
        self.by_peer: dict[bytes, Conn] = {}
        self.by_engine: dict[bytes, Conn] = {}
        self._events: list = []
        self._peer_due: list = []
        self._wakes: list = []             # (time, n, callable)
        self._n = 0
        self.tap: Callable[[Conn, bytes], list[bytes]] | None = None
        self.to_peer_tap: Callable[[Conn, bytes], list[bytes]] | None = None
        self.stray = 0

    # -- connections
    def add(self, k: int, rng: random.Random, *, snd_size=1 << 16, rcv_size=1 << 16, mss=1460, ts=True, ws=True,
            isn_e=None, isn_p=None, e_inflight=b"", e_unsent=b"", e_unread=b"", p_unacked=b"", p_pending=b"",
            host_tx=b"", peer_cfg: TcpConfig | None = None, ts_recent_known=True, close="host",
            latency=1000, sack=False) -> Conn:
        cfg = peer_cfg or peer_config(mss=mss, timestamps=ts, window_scaling=ws)
        isn_e = rng.getrandbits(32) if isn_e is None else isn_e
        isn_p = rng.getrandbits(32) if isn_p is None else isn_p
        s_e = wscale_for(rcv_size) if ws else 0
        s_p = wscale_for(cfg.rcv_buf) if ws else 0
        w_e = min(rcv_size - len(e_unread), 0xFFFF << s_e) >> s_e << s_e
        w_p = min(cfg.rcv_buf, 0xFFFF << s_p) >> s_p << s_p
        ts_e, ts_p = rng.getrandbits(32), rng.getrandbits(32)
        snd_buf, rcv_buf = self.mem.alloc(snd_size), self.mem.alloc(rcv_size)
        queue = e_inflight + e_unsent
        assert len(queue) <= snd_size and len(e_unread) <= rcv_size
        self.mem.ring_write(snd_buf, snd_size, isn_e, queue)
        read_seq = seq_add(isn_p, -len(e_unread))
        self.mem.ring_write(rcv_buf, rcv_size, read_seq, e_unread)
        paddr = (f"10.{20 + k // 62500}.{k // 250 % 250}.{k % 250 + 1}", 1024 + k % 60000)
        key = ConnKey(ENGINE_IP, 40000 + k % 20000, paddr[0], paddr[1])
        hs = Handoff(local_mac=ENGINE_MAC, remote_mac=PEER_MAC, snd_una=isn_e, snd_nxt=seq_add(isn_e, len(e_inflight)),
                     write_seq=seq_add(isn_e, len(queue)), rcv_nxt=isn_p, read_seq=read_seq, snd_wnd=w_p,
                     rcv_wnd=w_e, rcv_wup=isn_p, snd_buf=snd_buf, snd_size=snd_size, rcv_buf=rcv_buf,
                     rcv_size=rcv_size, mss=mss, max_window=w_p, wscale_ok=ws, snd_wscale=s_p, rcv_wscale=s_e,
                     timestamps=ts, ts_val=ts_e, ts_recent=ts_p if ts_recent_known else None, sack_ok=sack)
        peer = TcpPeer.established(paddr, (key.local_ip, key.local_port), snd_nxt=seq_add(isn_p, len(p_unacked)),
                                   rcv_nxt=isn_e, snd_wnd=w_e, now=self.now / 1e6, mss=mss, snd_wscale=s_e,
                                   rcv_wscale=s_p, window_scaling=ws, timestamps=ts, ts_recent=ts_e, ts_val=ts_p,
                                   rcv_wnd=w_p, unacked=p_unacked, pending=p_pending, config=cfg, seed=k)
        x = Conn(k, key, peer, host_tx, queue + host_tx, e_unread + p_unacked + p_pending, snd_buf, snd_size,
                 rcv_buf, rcv_size, write_seq=hs.write_seq, acked=isn_e, read_seq=read_seq, close=close,
                 latency=latency, data_end=isn_p)
        self.conns.append(x)
        self.by_k[k] = x
        self.by_peer[ip_port(paddr[0], paddr[1])] = x
        self.by_engine[ip_port(key.local_ip, key.local_port)] = x
        x.conn = self.eng.install(key, hs, self.now)
        self.by_id[x.conn] = x
        self.host_write(x)
        self.drain()
        self.peer_step(x)
        return x

    # -- the link
    def _push(self, t: int, kind: str, x: Conn, frame: bytes) -> None:
        self._n += 1
        heapq.heappush(self._events, (t, self._n, kind, x.k, frame))

    def link(self, kind: str, x: Conn, frame: bytes) -> None:
        """kind 'e': to the engine, 'p': to the peer."""
        r = self.rng
        if r.random() < self.drop:
            return
        if r.random() < self.corrupt:
            b = bytearray(frame)
            pos = r.randrange(14, len(b))
            b[pos] ^= 1 << r.randrange(8)
            frame = bytes(b)
        delay = x.latency + (r.randrange(self.reorder_us) if r.random() < self.reorder else 0)
        self._push(self.now + delay, kind, x, frame)
        if r.random() < self.dup:
            self._push(self.now + delay + r.randrange(1, 2000), kind, x, frame)

    def at(self, t: int, fn: Callable[[], None]) -> None:
        self._n += 1
        heapq.heappush(self._wakes, (t, self._n, fn))

    def deliver(self, kind: str, x: Conn, frame: bytes) -> None:
        if kind == "e":
            # a tap may be a generator: what it yields after the first frame is decided
            # once the engine has processed that frame
            for f in (self.tap(x, frame) if self.tap else [frame]):
                self.eng.segment_in(f, self.now)
            self.drain()
        else:
            frames = self.to_peer_tap(x, frame) if self.to_peer_tap else [frame]
            for f in frames:
                x.peer.segment_in(f[14:], self.now / 1e6)
            self.peer_step(x)

    # -- the engine's host side
    def drain(self) -> None:
        eng = self.eng
        while eng.to_wire or eng.notifications or eng.to_host:
            for f in eng.take_wire():
                x = self.by_peer.get(f[14 + 16:14 + 20] + f[14 + 22:14 + 24])
                assert x is not None, "engine frame to nobody"
                self.link("p", x, f)
            for note in eng.take_notifications():
                self.notify(note)
            for f in eng.take_host():
                x = self.by_engine.get(f[14 + 16:14 + 20] + f[14 + 22:14 + 24])
                if x is None or x.host_stack is None:
                    self.stray += 1
                    continue
                x.host_stack.segment_in(f[14:], self.now / 1e6)
                self.host_stack_step(x)

    def notify(self, note: tuple) -> None:
        x = self.by_id[note[1]]
        x.events.append(note[0])
        kind = note[0]
        if kind == "acked":
            x.acked = note[2]
            self.host_write(x)
        elif kind == "rx":
            x.data_end = note[2]
            self.host_read(x)
        elif kind == "fin":
            x.fin_seen = True
            self.host_read(x)
        elif kind == "rst":
            x.reset = True
        elif kind == "error":
            x.error = note[2]
        elif kind == "closed":
            x.engine_closed = True
            del self.by_id[note[1]]
            self.host_read(x, alive=False)

    def host_write(self, x: Conn) -> None:
        alive = x.conn in self.by_id and not x.host_closed
        if not alive or self.eng.state_of(x.conn) not in (St.ESTABLISHED, St.CLOSE_WAIT):
            return
        room = x.snd_size - seq_diff(x.write_seq, x.acked)
        n = min(room, len(x.host_tx) - x.host_pos)
        if n > 0:
            self.mem.ring_write(x.snd_buf, x.snd_size, x.write_seq, x.host_tx[x.host_pos:x.host_pos + n])
            x.host_pos += n
            x.write_seq = seq_add(x.write_seq, n)
            self.eng.host_send(x.conn, x.write_seq)
        self.maybe_close(x)

    def maybe_close(self, x: Conn) -> None:
        if x.host_closed or x.conn not in self.by_id or x.host_pos < len(x.host_tx):
            return
        if x.close in ("host", "both", "rst") or (x.fin_seen and x.close != "none"):
            if self.eng.state_of(x.conn) in (St.ESTABLISHED, St.CLOSE_WAIT):
                x.host_closed = True
                self.eng.host_close(x.conn)

    def host_read(self, x: Conn, alive: bool = True) -> None:
        if self.now < x.stall_until and alive:
            self.at(x.stall_until, lambda: self.host_read(x, alive=x.conn in self.by_id))
            return
        n = seq_diff(x.data_end, x.read_seq)
        if n > 0:
            x.got_host += self.mem.ring_read(x.rcv_buf, x.rcv_size, x.read_seq, n)
            x.read_seq = x.data_end
            if alive and x.conn in self.by_id:
                self.eng.host_read(x.conn, x.read_seq)
        if x.fin_seen:
            self.maybe_close(x)

    # -- the peer's application
    def peer_step(self, x: Conn) -> None:
        p = x.peer
        for pkt in p.poll(self.now / 1e6):
            self.link("e", x, eth_frame(ENGINE_MAC, PEER_MAC, ETH_P_IP, pkt))
        if self.now >= x.peer_stall_until:
            x.got_peer += p.recv()
        elif p.recv_buffered and not x.peer_wake:
            x.peer_wake = True
            self.at(x.peer_stall_until, lambda: self.peer_step(x))
        if x.close == "rst" and not x.aborted and x.got_peer and p.state is not TcpState.CLOSED:
            x.aborted = True                # the peer's application aborts part way
            p.abort()
            self.peer_step(x)
            return
        closing = (x.close in ("peer", "both") and p.state is TcpState.ESTABLISHED and not p.fin_queued) or \
            (p.eof and p.state is TcpState.CLOSE_WAIT and x.close not in ("none", "rst"))
        if closing:
            p.close()
            self.peer_step(x)               # the FIN goes out at the next poll
            return
        self._due(p, x)

    def _due(self, p: TcpPeer, x: Conn) -> None:
        d = p.next_deadline()
        if d is not None:
            us = math.ceil(d * 1e6)
            if us / 1e6 < d:
                us += 1
            self._n += 1
            heapq.heappush(self._peer_due, (max(us, self.now), self._n, x.k, p))

    def host_stack_step(self, x: Conn) -> None:
        """After a restore the host's TCP (a TcpPeer standing in for Linux) has the
        connection: its frames go out through the NIC, the engine passes it the peer's."""
        h = x.host_stack
        for pkt in h.poll(self.now / 1e6):
            self.link("p", x, eth_frame(PEER_MAC, ENGINE_MAC, ETH_P_IP, pkt))
        x.got_host += h.recv()
        closing = (x.close in ("host", "both") and h.state is TcpState.ESTABLISHED and not h.fin_queued) or \
            (h.eof and h.state is TcpState.CLOSE_WAIT and x.close != "none")
        if closing:
            h.close()
            self.host_stack_step(x)
            return
        self._due(h, x)

    # -- the loop
    def run(self, done: Callable[[], bool], tmax_us: int = 3_000_000_000, step: Callable[[], None] | None = None):
        conns = self.by_k
        while True:
            if step:
                step()
            if done():
                return
            cands = []
            if self._events:
                cands.append(self._events[0][0])
            if self._peer_due:
                cands.append(self._peer_due[0][0])
            if self._wakes:
                cands.append(self._wakes[0][0])
            d = self.eng.next_deadline_us()
            if d is not None:
                cands.append(d)
            if not cands:
                raise AssertionError(f"stalled at {self.now} us: {self.describe()}")
            self.now = max(self.now, min(cands))
            if self.now > tmax_us:
                raise AssertionError(f"not done by {tmax_us} us: {self.describe()}")
            while self._events and self._events[0][0] <= self.now:
                _, _, kind, k, frame = heapq.heappop(self._events)
                self.deliver(kind, conns[k], frame)
            self.eng.poll(self.now)
            self.drain()
            while self._peer_due and self._peer_due[0][0] <= self.now:
                _, _, k, p = heapq.heappop(self._peer_due)
                x = conns[k]
                if p is x.peer:
                    self.peer_step(x)
                elif p is x.host_stack:
                    self.host_stack_step(x)
            while self._wakes and self._wakes[0][0] <= self.now:
                heapq.heappop(self._wakes)[2]()
                self.drain()

    def run_all(self, tmax_us: int = 3_000_000_000, step: Callable[[], None] | None = None) -> None:
        self.run(lambda: all(x.done for x in self.conns), tmax_us, step)
        for x in self.conns:
            x.check()

    def describe(self, limit: int = 3) -> str:
        bad = [x for x in self.conns if not x.done][:limit]
        out = []
        for x in bad:
            st = self.eng.state_of(x.conn) if x.conn in self.by_id else "gone"
            t = self.eng.tcbs.get(x.conn)
            out.append(f"\n  conn {x.k} close={x.close} engine {st} {tcb_summary(t)} peer {x.peer!r} "
                       f"host got {len(x.got_host)}/{len(x.to_host)} peer got {len(x.got_peer)}/{len(x.to_peer)} "
                       f"host wrote {x.host_pos}/{len(x.host_tx)} events {Counter(x.events)}")
        return "".join(out) + f"\n  engine {dict(self.eng.counters)}"


def ip_port(ip: str, port: int) -> bytes:
    return ipaddress.IPv4Address(ip).packed + port.to_bytes(2, "big")


def tcb_summary(t: Tcb | None) -> str:
    if t is None:
        return "-"
    return (f"una={t.snd_una} nxt={t.snd_nxt} max={t.snd_max} wseq={t.write_seq} wnd={t.snd_wnd} cwnd={t.cwnd} "
            f"rcv_nxt={t.rcv_nxt} read={t.read_seq} ooo={t.ooo()} st_kind={t.st_kind} backoff={t.backoff}")


def random_bytes(rng: random.Random, n: int) -> bytes:
    return rng.randbytes(n) if n else b""


def random_conn(sim: Sim, k: int, rng: random.Random, *, peer: dict | None = None, time_scale: float = 1.0) -> Conn:
    """Connection k with random MSS, options, ring and peer buffer sizes, handoff queues,
    ISNs (some just below 2^32), latency and close order (some reset by the peer), some
    with a stalled reader on either side (for a while from now). `peer`: TcpConfig
    overrides (shorter timers for the simulated hardware, where a microsecond is a clock);
    `time_scale` multiplies the drawn latency, stalls and the peer's delayed ACK (the
    draws themselves are the same whatever the options)."""
    mss = rng.choice((536, 1000, 1460, 1460, 8960))
    ts, ws = rng.random() < 0.7, rng.random() < 0.7
    snd_size = 1 << rng.randrange(12, 18)
    rcv_size = 1 << rng.randrange(12, 18)
    rcv_buf = rng.choice((1500, 4096, 16384, 65535, 262144))
    delayed_ack = rng.choice((None, 0.04, 0.2))
    cfg = peer_config(mss=mss, timestamps=ts, window_scaling=ws, rcv_buf=rcv_buf,
                      delayed_ack=None if delayed_ack is None else delayed_ack * time_scale,
                      init_cwnd=rng.choice((1, 2, 10)), **(peer or {}))
    s_e = wscale_for(rcv_size) if ws else 0
    s_p = wscale_for(cfg.rcv_buf) if ws else 0
    w_p = min(cfg.rcv_buf, 0xFFFF << s_p) >> s_p << s_p
    size = lambda cap: rng.choice((0, 1, rng.randrange(1, 3000), rng.randrange(1, 30000))) if cap > 0 else 0  # noqa
    e_unread = random_bytes(rng, min(size(1), rcv_size // 2))
    w_e = min(rcv_size - len(e_unread), 0xFFFF << s_e) >> s_e << s_e
    e_inflight = random_bytes(rng, min(size(1), w_p, snd_size // 2))
    e_unsent = random_bytes(rng, min(size(1), snd_size - len(e_inflight)))
    p_unacked = random_bytes(rng, min(size(1), w_e))
    close = rng.choice(("host", "peer", "both", "host", "peer", "rst"))
    host_tx = random_bytes(rng, size(1) + (3000 if close == "rst" else 0))
    isn = lambda: rng.choice((None, 2**32 - rng.randrange(1, 5000)))  # noqa: E731
    x = sim.add(k, rng, snd_size=snd_size, rcv_size=rcv_size, mss=mss, ts=ts, ws=ws, isn_e=isn(), isn_p=isn(),
                e_inflight=e_inflight, e_unsent=e_unsent, e_unread=e_unread, p_unacked=p_unacked,
                p_pending=random_bytes(rng, size(1)), host_tx=host_tx, peer_cfg=cfg,
                ts_recent_known=rng.random() < 0.5, close=close,
                latency=max(1, round(rng.choice((100, 1000, 1000, 20000)) * time_scale)),
                sack=k % 3 == 0)                         # (from k: the other draws stay as they were)
    if rng.random() < 0.15:
        x.stall_until = sim.now + round(rng.randrange(100_000, 3_000_000) * time_scale)
    if rng.random() < 0.1:
        x.peer_stall_until = sim.now + round(rng.randrange(100_000, 3_000_000) * time_scale)
    return x



# ============================================================================ one connection by hand

class Solo:
    """One installed connection whose peer is played by hand: `seg()` forges the peer's
    segments (valid checksums, a fresh TSval unless told otherwise), `feed()` hands one
    to the engine and returns what the engine sent, parsed."""

    PEER = ("10.30.0.2", 5555)

    def __init__(self, params: EngineParams | None = None, *, mss=1460, ts=True, ws=True, snd_size=1 << 16,
                 rcv_size=1 << 16, isn_e=2**32 - 10, isn_p=2**32 - 20, snd_wnd=1 << 16, queued=b"", inflight=0,
                 ts_recent: int | None = 5000, unread=b"", sack=False):
        self.mem = Memory(1 << 22)
        self.eng = Engine(self.mem, params or sim_params())
        self.now = T0
        self.eng.poll(T0)
        self.key = ConnKey(ENGINE_IP, 40000, *self.PEER)
        self.snd_buf, self.rcv_buf = self.mem.alloc(snd_size), self.mem.alloc(rcv_size)
        self.snd_size, self.rcv_size = snd_size, rcv_size
        self.mem.ring_write(self.snd_buf, snd_size, isn_e, queued)
        read_seq = seq_add(isn_p, -len(unread))
        self.mem.ring_write(self.rcv_buf, rcv_size, read_seq, unread)
        s = wscale_for(rcv_size) if ws else 0
        self.hs = Handoff(local_mac=ENGINE_MAC, remote_mac=PEER_MAC, snd_una=isn_e, snd_nxt=seq_add(isn_e, inflight),
                          write_seq=seq_add(isn_e, len(queued)), rcv_nxt=isn_p, read_seq=read_seq, snd_wnd=snd_wnd,
                          rcv_wnd=(rcv_size - len(unread)) >> s << s, rcv_wup=isn_p, snd_buf=self.snd_buf,
                          snd_size=snd_size, rcv_buf=self.rcv_buf, rcv_size=rcv_size, mss=mss, max_window=snd_wnd,
                          wscale_ok=ws, snd_wscale=s if ws else 0, rcv_wscale=s, timestamps=ts, ts_val=777,
                          ts_recent=ts_recent, sack_ok=sack)
        self.c = self.eng.install(self.key, self.hs, T0)
        self.p_seq = isn_p                 # the peer's next sequence number
        self.p_ts = (ts_recent or 5000) + 1
        self.out: list = []
        self.collect()

    @property
    def t(self) -> Tcb:
        return self.eng.tcb(self.c)

    def seg(self, *, seq: int | None = None, payload: bytes = b"", flags: int = ACK, ack: int | None = None,
            wnd: int | None = None, ts: bool = True, tsval: int | None = None,
            sack: list[tuple[int, int]] | None = None) -> bytes:
        if ts and tsval is None:
            self.p_ts += 1
        opts = tcp_options(ts=(self.p_ts if tsval is None else tsval, 0)) if ts else b""
        if sack:
            opts += sack_option(sack)
        t = self.eng.tcbs.get(self.c)
        if ack is None:
            ack = t.snd_max if t else 0
        if wnd is None:
            wnd = (t.snd_wnd >> t.snd_wscale) if t else 1000
        pkt = build_packet(self.PEER[0], ENGINE_IP, self.PEER[1], 40000, self.p_seq if seq is None else seq, ack,
                           flags, wnd, payload, options=opts)
        return eth_frame(ENGINE_MAC, PEER_MAC, ETH_P_IP, pkt)

    def collect(self) -> list:
        self.frames = self.eng.take_wire()             # the wire bytes of what collect() returns
        segs = [parse_segment(f[14:]) for f in self.frames]
        self.out += segs
        return segs

    def feed(self, frame: bytes) -> list:
        self.eng.segment_in(frame, self.now)
        return self.collect()

    def data(self, payload: bytes, *, seq: int | None = None, flags: int = ACK, **kw) -> list:
        """The peer's data at its next sequence number (or seq), which then moves on."""
        seq = self.p_seq if seq is None else seq
        out = self.feed(self.seg(seq=seq, payload=payload, flags=flags, **kw))
        if seq_diff(seq_add(seq, len(payload)), self.p_seq) > 0:
            self.p_seq = seq_add(seq, len(payload))
        return out

    def advance(self, us: int) -> list:
        self.now += us
        self.eng.poll(self.now)
        return self.collect()

    def until(self, pred: Callable[[list], bool], limit_us: int = 600_000_000) -> tuple[int, list]:
        """Poll at each wheel deadline until the engine sends something pred() accepts."""
        end = self.now + limit_us
        while self.now < end:
            d = self.eng.next_deadline_us()
            assert d is not None, "nothing armed"
            self.now = max(self.now, d)
            self.eng.poll(self.now)
            segs = self.collect()
            if segs and pred(segs):
                return self.now, segs
        raise AssertionError("nothing came")

    def received(self) -> bytes:
        """Everything received in order since the install (the FIN's number left out)."""
        t = self.eng.tcbs.get(self.c) or self.eng.final[self.c]
        fin = St(t.state) in (St.CLOSE_WAIT, St.CLOSING, St.LAST_ACK, St.TIME_WAIT)
        n = seq_diff(t.rcv_nxt, self.hs.read_seq) - fin
        return self.mem.ring_read(self.rcv_buf, self.rcv_size, self.hs.read_seq, n)



def forge(x: Conn, sim: Sim, *, seq: int, ack: int, flags: int = ACK, payload: bytes = b"", wnd: int = 1000,
          tsval: int | None = None, ts: bool = True) -> bytes:
    """A segment from the peer's address with a valid checksum (and by default the peer's
    current TSval, so PAWS lets it through to the check under test)."""
    p = x.peer
    opts = tcp_options(ts=(p._ts_now() if tsval is None else tsval, 0)) if ts and p.ts_ok else b""
    pkt = build_packet(x.key.remote_ip, x.key.local_ip, x.key.remote_port, x.key.local_port, seq, ack, flags, wnd,
                       payload, options=opts)
    return eth_frame(ENGINE_MAC, PEER_MAC, ETH_P_IP, pkt)


def bulk_pair(sim: Sim, rng: random.Random, k: int = 0, **kw) -> Conn:
    """Connection k with 200 kB to send each way and data in flight both ways at the
    handoff; kw overrides any of Sim.add's arguments."""
    args = dict(host_tx=rng.randbytes(200_000), p_pending=rng.randbytes(200_000), close="host",
                e_inflight=rng.randbytes(2000), p_unacked=rng.randbytes(2000))
    args.update(kw)
    return sim.add(k, rng, **args)



# ============================================================================ decision traces

# What decision_coverage() tells apart, each made by decision_traces() with its defaults
# (it also counts any other state transition "A->B" that comes)
DECISION_CLASSES = (
    # the checks, in the engine's order
    "no_timestamp", "paws_drop", "unacceptable", "window_probe_in", "rst_out_of_window", "rst_accepted",
    "challenge_ack", "no_ack", "ack_beyond", "ack_too_old", "ts_learned",
    # the ACK field
    "new_ack", "partial_ack", "full_ack", "dup_ack", "fast_retransmit", "dup_ack_in_recovery",
    "window_update", "window_shrunk", "zero_window_in",
    # the text
    "dup_data", "partial_dup", "trimmed", "in_order_data", "ooo_data", "ooo_merge", "ooo_drop_or_evict",
    "gap_filled", "fin_in", "dup_after_fin",
    # timers and the host
    "delayed_ack_timer", "rto_timer", "persist_timer", "gave_up", "time_wait_expired", "fin_wait_2_expired",
    "host_send", "host_read", "window_update_sent", "host_close", "install", "restore",
    # the outcome
    "state_change", "closed", "delayed_ack_armed", "emitted_data", "retransmit", "emitted_fin",
    "emitted_pure_ack", "sack_blocks", "dsack", "zero_window_sent",
    "ESTABLISHED->CLOSE_WAIT", "ESTABLISHED->CLOSED", "FIN_WAIT_1->FIN_WAIT_2", "FIN_WAIT_1->CLOSING",
    "FIN_WAIT_1->TIME_WAIT", "FIN_WAIT_2->TIME_WAIT", "CLOSING->TIME_WAIT", "CLOSE_WAIT->CLOSED",
    "LAST_ACK->CLOSED", "TIME_WAIT->CLOSED", "FIN_WAIT_2->CLOSED", "ESTABLISHED->FIN_WAIT_1",
    "CLOSE_WAIT->LAST_ACK",
)
# the class of each command's Decision.kind
COMMAND_KINDS = {"send": "host_send", "read": "host_read", "close": "host_close", "install": "install",
                 "restore": "restore"}


def decision_traces(seed: int, *, conns: int = 40, bulk: bool = True, hostile: bool = True) -> list[Decision]:
    """Every decision (EngineParams.trace: segments, timers, host commands, installs,
    restores) of a workload meant to make each kind in DECISION_CLASSES: (bulk) six
    transfers of 30-60 kB each way through a lossy link, sequence numbers across 2^32,
    SACK or timestamps off for some, zero windows both ways, a restore and reinstall
    mid-transfer; `conns` connections from random_conn; (hostile) transfers with forged
    RSTs, SYNs and out-of-range ACKs, copies with other bytes of data already held,
    shrunk windows and PAWS replays, then scripted cases (the out-of-order ranges, SACK
    and D-SACK, NewReno, window probes, timestamps, FIN in each state, exact RSTs, RTOs
    to giving up, FIN_WAIT_2 timing out).

    The engines' traces one after the other, every engine with sim_params(trace=True): a
    Decision stands alone (the TCB before, the event), connection ids start again with
    each engine. Frames with a bad checksum leave no Decision (the engine drops them
    first). Deterministic for a seed."""
    traces: list[Decision] = []
    if bulk:
        traces += _bulk_traces(random.Random(f"{seed}/bulk"))
    if conns:
        traces += _random_conn_traces(random.Random(f"{seed}/random"), conns)
    if hostile:
        traces += _hostile_traces(random.Random(f"{seed}/hostile"))
        traces += _scripted_traces(random.Random(f"{seed}/scripted"))
    return traces


def decision_coverage(traces: list[Decision]) -> Counter:
    """How many decisions of each kind (classify_decision) the traces hold."""
    return Counter(kind for d in traces for kind in classify_decision(d))


def classify_decision(d: Decision) -> list[str]:
    """The kinds (DECISION_CLASSES, and "A->B" for a state transition) of one decision:
    for a segment which of the engine's checks it met given the TCB before, for a timer
    which one fired, then what the decision changed, sent and notified."""
    if d.kind == "seg":
        kinds = _segment_kinds(d, parse_segment(d.frame[ETH_HLEN:]))
    elif d.kind == "timer":
        kinds = _timer_kinds(d)
    else:
        kinds = [COMMAND_KINDS[d.kind]]
        if d.kind == "read" and any(not parse_segment(f[ETH_HLEN:]).payload for f in d.emitted):
            kinds.append("window_update_sent")
    return list(dict.fromkeys(kinds + _outcome_kinds(d)))


def _timer_kinds(d: Decision) -> list[str]:
    b, tick = d.before, d.arg
    kinds = []
    if b.delack_on and seq_le(b.delack_due, tick):
        kinds.append("delayed_ack_timer")
    if b.st_kind != T_NONE and seq_le(b.st_due, tick):
        if ("error", d.conn, "timeout") in d.notified:
            kinds.append("gave_up")
        elif b.st_kind == T_CLOSE:
            kinds.append("time_wait_expired" if b.state == St.TIME_WAIT else "fin_wait_2_expired")
        elif d.after.retries > b.retries:             # (nothing in flight or to probe: it lapses)
            kinds.append("rto_timer" if b.st_kind == T_RTO else "persist_timer")
    return kinds


def _segment_kinds(d: Decision, seg: TcpSegment) -> list[str]:
    b, a = d.before, d.after
    kinds = []
    if b.ts_ok and not seg.rst:
        if seg.ts is None:
            kinds.append("no_timestamp")
        elif b.ts_recent_ok and seq_diff(b.ts_recent, seg.ts[0]) > PAWS_WINDOW and \
                ((d.now_us >> PAWS_AGE_SHIFT) - b.ts_recent_age) & 0xFFFF <= PAWS_24DAYS:
            return kinds + ["paws_drop"]
    seg_len = len(seg.payload) + seg.syn + seg.fin
    free = max(seq_diff(seq_add(b.read_seq, 1 << b.rcv_log2), b.rcv_nxt), 0)
    if seq_lt(seq_add(seg.seq, seg_len), b.rcv_wup) or seq_gt(seg.seq, seq_add(b.rcv_nxt, free)):
        if seg.rst:
            return kinds + ["rst_out_of_window"]
        if seg.syn:
            return kinds + ["challenge_ack"]
        linux_probe = seg_len == 0 and seg.seq == seq_add(b.rcv_nxt, -1)
        return kinds + ["unacceptable"] + (["window_probe_in"] if linux_probe else [])
    if seg.rst:
        return kinds + ["rst_accepted" if seg.seq == b.rcv_nxt else "challenge_ack"]
    if seg.syn:
        return kinds + ["challenge_ack"]
    if not seg.flags & ACK:
        return kinds + ["no_ack"]
    if seq_gt(seg.ack, b.snd_max):
        return kinds + ["ack_beyond"]
    if seq_lt(seg.ack, seq_add(b.snd_una, -max(b.max_window, 1))):
        return kinds + ["ack_too_old"]
    if a is not None and a.ts_recent_ok and not b.ts_recent_ok:
        kinds.append("ts_learned")
    if not seq_lt(seg.ack, b.snd_una):
        kinds += _ack_kinds(seg, b, a)
    if (seg.payload or seg.fin) and a is not None:    # (None: LAST_ACK closed by the ACK)
        kinds += _text_kinds(d, seg, b)
    return kinds


def _ack_kinds(seg: TcpSegment, b: Tcb, a: Tcb | None) -> list[str]:
    kinds = []
    if seq_gt(seg.ack, b.snd_una):
        kinds.append("new_ack")
        if b.in_recovery:
            kinds.append("full_ack" if seq_gt(seg.ack, b.recover) else "partial_ack")
    elif not seg.payload and not seg.fin and seg.wnd << b.snd_wscale == b.snd_wnd and b.snd_una != b.snd_max:
        kinds.append("dup_ack")
        if b.in_recovery:
            kinds.append("dup_ack_in_recovery")
        elif a.in_recovery:
            kinds.append("fast_retransmit")
    if a is not None and a.snd_wnd != b.snd_wnd:
        kinds.append("window_update")
        if a.snd_wnd == 0:
            kinds.append("zero_window_in")
        if seq_lt(seq_add(a.snd_una, a.snd_wnd), seq_add(b.snd_una, b.snd_wnd)):
            kinds.append("window_shrunk")             # the right edge moved left
    return kinds


def _text_kinds(d: Decision, seg: TcpSegment, b: Tcb) -> list[str]:
    if b.state not in RECV_STATES:
        return ["dup_after_fin"] if seq_lt(seg.seq, b.rcv_nxt) else []
    data, seq, fin = seg.payload, seg.seq, seg.fin
    kinds = []
    below = seq_diff(b.rcv_nxt, seq)
    if below > 0:
        if below > len(data) or (below == len(data) and not fin):
            return ["dup_data"]
        data, seq = data[below:], b.rcv_nxt
        kinds.append("partial_dup")
    room = seq_diff(seq_add(b.read_seq, 1 << b.rcv_log2), seq)
    if len(data) > room:
        data, fin = data[:max(room, 0)], False
        kinds.append("trimmed")
    if not data and not fin:
        return kinds
    if seq != b.rcv_nxt:
        return kinds + [_ooo_kind(b, seq, seq_add(seq, len(data)))]
    if data:
        kinds.append("in_order_data")
    if d.after.ooo_n < b.ooo_n:
        kinds.append("gap_filled")
    if ("fin", d.conn) in d.notified:
        kinds.append("fin_in")
    return kinds


def _ooo_kind(b: Tcb, seq: int, end: int) -> str:
    off = lambda s: seq_diff(s, b.rcv_nxt)            # noqa: E731  (held ranges lie above rcv_nxt)
    if any(off(e) >= off(seq) and off(s) <= off(end) for s, e in b.ooo()):
        return "ooo_merge"                            # overlaps or touches a held range
    return "ooo_data" if b.ooo_n < OOO_RANGES else "ooo_drop_or_evict"


def _outcome_kinds(d: Decision) -> list[str]:
    b, a = d.before, d.after
    kinds = []
    after_state = St.CLOSED if a is None else St(a.state)
    if a is None:
        kinds.append("closed")
    if after_state != b.state:
        kinds += ["state_change", f"{St(b.state).name}->{after_state.name}"]
    if a is not None and a.delack_on and not b.delack_on:
        kinds.append("delayed_ack_armed")
    for frame in d.emitted:
        s = parse_segment(frame[ETH_HLEN:])
        if s.payload:
            kinds.append("emitted_data")
        elif not s.fin:
            kinds.append("emitted_pure_ack")
        if s.fin:
            kinds.append("emitted_fin")
        if (s.payload or s.fin) and seq_lt(s.seq, b.snd_max):
            kinds.append("retransmit")
        blocks = _sack_blocks_of(frame)
        if blocks:
            kinds.append("sack_blocks")
            if seq_le(blocks[0][1], s.ack):           # a first block below the ACK: D-SACK
                kinds.append("dsack")
        if s.wnd == 0:
            kinds.append("zero_window_sent")
    return kinds


def _sack_blocks_of(frame: bytes) -> list[tuple[int, int]]:
    """The SACK blocks of a frame's TCP options (IPv4 without options)."""
    tcp = frame[ETH_HLEN + 20:]
    opts = tcp[20:(tcp[12] >> 4) * 4]
    i = 0
    while i < len(opts) and opts[i] != 0:
        if opts[i] == 1:
            i += 1
            continue
        kind, n = opts[i], opts[i + 1]
        if kind == 5:
            body = opts[i + 2:i + n]
            return [(int.from_bytes(body[j:j + 4], "big"), int.from_bytes(body[j + 4:j + 8], "big"))
                    for j in range(0, len(body), 8)]
        i += n
    return []


# -- the workload

def _bulk_traces(rng: random.Random) -> list[Decision]:
    """Six transfers of 30-60 kB each way with data in flight both ways at the handoff
    and sequence numbers just below 2^32, each close order (one reset by the peer); SACK
    on for three, timestamps off for one; one host and one peer stop reading for 2 s
    (zero windows); the first is restored and installed again twice mid-transfer."""
    sim = Sim(rng.getrandbits(32), sim_params(trace=True), drop=0.03, dup=0.02, corrupt=0.01, reorder=0.05)
    for k, close in enumerate(("host", "peer", "both", "host", "peer", "rst")):
        ts = k != 2
        x = sim.add(k, rng, snd_size=1 << 15, rcv_size=8192 if k == 3 else 1 << 16, ts=ts,
                    isn_e=2**32 - rng.randrange(1, 20_000), isn_p=2**32 - rng.randrange(1, 20_000),
                    e_inflight=rng.randbytes(4000), e_unsent=rng.randbytes(5000), e_unread=rng.randbytes(700),
                    p_unacked=rng.randbytes(3000), p_pending=rng.randbytes(rng.randrange(30_000, 60_000)),
                    host_tx=rng.randbytes(rng.randrange(30_000, 60_000)),
                    peer_cfg=peer_config(timestamps=ts, rcv_buf=4096 if k == 4 else 1 << 18), close=close,
                    latency=rng.choice((200, 1000, 5000)), ts_recent_known=k % 2 == 0, sack=k % 2 == 0)
        if k == 3:
            x.stall_until = T0 + 2_000_000
        if k == 4:
            x.peer_stall_until = T0 + 2_000_000
    x = sim.conns[0]
    marks = [len(x.to_peer) // 3, len(x.to_peer) * 2 // 3]

    def reinstall():
        if marks and len(x.got_peer) > marks[0] and x.conn in sim.by_id and \
                sim.eng.state_of(x.conn) is St.ESTABLISHED:
            marks.pop(0)
            rec = sim.eng.restore(x.conn, sim.now)
            del sim.by_id[x.conn]
            x.conn = sim.eng.install(x.key, rec.handoff(), sim.now)
            sim.by_id[x.conn] = x
            sim.drain()
    sim.run_all(step=reinstall)
    return sim.eng.trace


def _random_conn_traces(rng: random.Random, n: int) -> list[Decision]:
    # random_conn's rings are at most 128 kB each, aligned to their size: 512 kB a connection
    sim = Sim(rng.getrandbits(32), sim_params(trace=True), mem=(n + 1) << 19, drop=0.02, dup=0.01, corrupt=0.005,
              reorder=0.03)
    for k in range(n):
        random_conn(sim, k, rng)
    sim.run_all()
    return sim.eng.trace


def _hostile_traces(rng: random.Random) -> list[Decision]:
    """Four transfers of 200 kB both ways (one with a 536-byte MSS) and 40 random
    connections through a link where the peer's side also forges: some of its frames
    have their window shrunk, and after a real frame now and then comes a forged RST,
    SYN, data out of the window or with an ACK out of range, copies with other bytes of
    data the engine holds, or an old frame replayed. No stream changes."""
    sim = Sim(rng.getrandbits(32), sim_params(trace=True), drop=0.02, reorder=0.05, reorder_us=3000)
    for k, close in enumerate(("host", "peer", "both", "host")):
        bulk_pair(sim, rng, k, rcv_size=1 << 15, mss=536 if k == 3 else 1460, close=close, sack=k % 2 == 1)
    for k in range(4, 44):
        random_conn(sim, k, rng)
    old_frames: dict[int, list[tuple[bytes, int]]] = {x.k: [] for x in sim.conns}

    def tap(x: Conn, frame: bytes) -> Iterator[bytes]:
        seg = parse_segment(frame[ETH_HLEN:])
        if not seg.rst and rng.random() < 0.15:
            frame = _with_window(seg, seg.wnd * rng.choice((0, 1, 2, 5)) // 10)
        yield frame
        t = sim.eng.tcbs.get(x.conn)
        if t is None:
            return
        if seg.payload and seg.ts and len(old_frames[x.k]) < 10:
            old_frames[x.k].append((frame, seg.ts[0]))
        roll = rng.random()
        if roll < 0.1 and t.state == St.ESTABLISHED:
            yield _forged_attack(sim, x, t, rng)
        elif roll < 0.4 and seg.payload:
            yield from _overlapping_copies(sim, x, seg, rng)
        elif roll < 0.45 and old_frames[x.k] and t.ts_ok and t.ts_recent_ok:
            old, tsval = rng.choice(old_frames[x.k])
            if seq_diff(t.ts_recent, tsval) > PAWS_WINDOW:
                # PAWS drops the replay, and new bytes at rcv_nxt carrying its TSval
                yield old
                yield forge(x, sim, seq=t.rcv_nxt, ack=t.snd_una, payload=rng.randbytes(500), tsval=tsval)
    sim.tap = tap
    sim.run_all()
    return sim.eng.trace


def _with_window(seg: TcpSegment, wnd: int) -> bytes:
    opts = tcp_options(ts=seg.ts) if seg.ts else b""
    pkt = build_packet(seg.src, seg.dst, seg.sport, seg.dport, seg.seq, seg.ack, seg.flags, wnd, seg.payload,
                       options=opts)
    return eth_frame(ENGINE_MAC, PEER_MAC, ETH_P_IP, pkt)


def _forged_attack(sim: Sim, x: Conn, t: Tcb, rng: random.Random) -> bytes:
    """A RST or data beyond the window, a RST in the window but not at rcv_nxt, a SYN, or
    data acknowledging unsent or too old data: none of it is taken."""
    free = seq_diff(seq_add(t.read_seq, 1 << t.rcv_log2), t.rcv_nxt)
    beyond = seq_add(t.rcv_nxt, free + 1 + rng.randrange(1 << 20))
    junk = rng.randbytes(rng.randrange(1, 1000))
    seq, ack, flags, payload = rng.choice((
        (beyond, t.snd_una, RST, b""),
        (beyond, t.snd_una, ACK, junk),
        (seq_add(t.rcv_nxt, 1 + rng.randrange(max(free, 1))), t.snd_una, RST | ACK, b""),
        (rng.getrandbits(32), 0, SYN, b""),
        (t.rcv_nxt, t.snd_una, SYN | ACK, b""),
        (t.rcv_nxt, seq_add(t.snd_max, 1 + rng.randrange(1 << 20)), ACK, junk),
        (t.rcv_nxt, seq_add(t.snd_una, -(1 << 30)), ACK, junk),
    ))
    return forge(x, sim, seq=seq, ack=ack, flags=flags, payload=payload)


def _overlapping_copies(sim: Sim, x: Conn, seg: TcpSegment, rng: random.Random) -> Iterator[bytes]:
    """Copies of a data segment with other bytes over the same and overlapping ranges,
    some reaching back into older data, each only where the engine holds every byte
    already (the first bytes received win)."""
    n = len(seg.payload)
    for a, b in ((0, n), (n // 3, n), (0, max(n // 2, 1)), (-min(n, 700), n // 2)):
        t = sim.eng.tcbs.get(x.conn)
        s, e = seq_add(seg.seq, a), seq_add(seg.seq, b)
        if t is None or seq_diff(e, s) <= 0 or not _held(t, s, e):
            continue
        yield forge(x, sim, seq=s, ack=seg.ack, payload=rng.randbytes(seq_diff(e, s)), wnd=seg.wnd,
                    tsval=seg.ts[0] if seg.ts else None)


def _held(t: Tcb, s: int, e: int) -> bool:
    """Whether the engine holds all of [s, e): received in order or in one range."""
    if seq_diff(e, t.rcv_nxt) <= 0:
        return True
    return any(seq_diff(s, a) >= 0 and seq_diff(b, e) >= 0 for a, b in t.ooo())


def _scripted_traces(rng: random.Random) -> list[Decision]:
    """One connection at a time played by hand: what random peers make rarely or never."""
    traces: list[Decision] = []
    for script in (_script_out_of_order, _script_sack, _script_newreno, _script_windows, _script_timestamps,
                   _script_checks, _script_closes, _script_timeouts, _script_restore):
        for so in script(rng):
            traces += so.eng.trace
    return traces


def _traced(**kw) -> Solo:
    return Solo(sim_params(trace=True), **kw)


def _until_gone(so: Solo) -> None:
    """Poll at each timer's due time until the connection leaves the engine."""
    while so.c in so.eng.tcbs:
        so.advance(so.eng.next_deadline_us() - so.now)


def _script_out_of_order(rng: random.Random) -> list[Solo]:
    """Four ranges, a fifth farther dropped, a nearer one evicting the farthest, merges,
    other bytes over held ones, the gap filled; a FIN out of order, a FIN past the ring."""
    so = _traced()
    data, other = rng.randbytes(10_000), rng.randbytes(10_000)
    base = so.p_seq
    for a, b, blob in ((1000, 1500, data), (2000, 2500, data), (3000, 3500, data), (4000, 4500, data),
                       (5000, 5500, data), (500, 600, data), (1400, 1600, data), (900, 1700, other),
                       (0, 1100, other), (1700, 10_000, data)):
        so.data(blob[a:b], seq=seq_add(base, a))
    so.data(b"", seq=seq_add(so.p_seq, 100), flags=ACK | FIN)
    small = _traced(rcv_size=4096)
    small.data(rng.randbytes(5000), flags=ACK | FIN)
    return [so, small]


def _script_sack(rng: random.Random) -> list[Solo]:
    """SACK negotiated: four ranges, a fifth dropped (never reneged), gaps filled,
    duplicates wholly and partly below rcv_nxt (D-SACK)."""
    so = _traced(sack=True)
    data = rng.randbytes(8000)
    base = so.p_seq
    for a, b in ((3000, 3500), (1000, 1500), (5000, 5500), (7000, 7500), (2000, 2100), (0, 1000), (100, 600),
                 (1400, 3000), (3200, 4000), (3900, 5000)):
        so.data(data[a:b], seq=seq_add(base, a))
    return [so]


def _script_newreno(rng: random.Random) -> list[Solo]:
    """Ten segments in flight, the second lost: duplicate ACKs (fast retransmit on the
    third, then in recovery), a partial ACK, the full ACK."""
    so = _traced(queued=rng.randbytes(30_000))
    una = so.hs.snd_una
    for _ in range(6):
        so.feed(so.seg(ack=seq_add(una, 1448)))
    so.feed(so.seg(ack=seq_add(una, 4 * 1448)))
    so.feed(so.seg())
    return [so]


def _script_windows(rng: random.Random) -> list[Solo]:
    """The engine's ring full: a Linux probe (zero length at rcv_nxt - 1) and a BSD one (a
    byte past the window); the peer's window closed with everything acknowledged, its
    probes answered, opened, then shrunk with data in flight."""
    full = _traced(rcv_size=4096)
    full.data(rng.randbytes(4096))
    full.advance(50_000)
    full.feed(full.seg(seq=seq_add(full.p_seq, -1)))
    full.feed(full.seg(payload=b"q"))
    shut = _traced(queued=rng.randbytes(20_000))
    shut.feed(shut.seg(wnd=0))
    for _ in range(2):
        shut.until(lambda segs: True)
        shut.feed(shut.seg(wnd=0))
    shut.feed(shut.seg(wnd=4000))
    shut.feed(shut.seg(ack=shut.t.snd_una, wnd=100))
    return [full, shut]


def _script_timestamps(rng: random.Random) -> list[Solo]:
    """ts_recent unknown after the install: learned from the first segment; one tick older
    forgiven, older dropped by PAWS; a segment without timestamps; a RST with an old
    TSval (never subject to PAWS)."""
    so = _traced(ts_recent=None)
    so.data(rng.randbytes(10), tsval=3_000_000_000)
    so.data(rng.randbytes(10), tsval=2_999_999_999)
    so.data(rng.randbytes(10), tsval=2_999_999_000)
    so.p_seq = so.t.rcv_nxt
    so.data(rng.randbytes(10), ts=False)
    so.feed(so.seg(flags=RST, tsval=1, seq=so.t.rcv_nxt))
    return [so]


def _script_checks(rng: random.Random) -> list[Solo]:
    """RSTs out of the window, in it and exact; a SYN; data beyond the window, without
    ACK, acknowledging unsent or too old data."""
    so = _traced()
    so.data(rng.randbytes(1000))
    t = so.t
    for seq, ack, flags, payload in ((seq_add(t.rcv_nxt, 1 << 31), None, RST, b""),
                                     (seq_add(t.rcv_nxt, 1), None, RST | ACK, b""),
                                     (rng.getrandbits(32), 0, SYN, b""),
                                     (seq_add(t.rcv_nxt, 1 << 20), None, ACK, b"z"),
                                     (t.rcv_nxt, None, PSH, b"x"),
                                     (t.rcv_nxt, seq_add(t.snd_max, 5000), ACK, b"y"),
                                     (t.rcv_nxt, seq_add(t.snd_una, -(1 << 30)), ACK, b"y"),
                                     (t.rcv_nxt, None, RST | ACK, b"")):
        so.feed(so.seg(seq=seq, ack=ack, flags=flags, payload=payload))
    return [so]


def _script_closes(rng: random.Random) -> list[Solo]:
    """The FIN in each state: passive close (the FIN again in CLOSE_WAIT, LAST_ACK ended by
    the ACK), simultaneous close (the FIN again in TIME_WAIT, ended by an exact RST),
    FIN_WAIT_2 with data then the FIN, the FIN with the ACK of ours, an exact RST in
    CLOSE_WAIT."""
    passive = _traced()
    passive.data(b"bye", flags=ACK | FIN)
    passive.feed(passive.seg(seq=seq_add(passive.p_seq, -3), payload=b"bye", flags=ACK | FIN))
    passive.eng.host_close(passive.c, passive.now)
    passive.feed(passive.seg(seq=seq_add(passive.p_seq, 1)))

    simultaneous = _traced()
    simultaneous.eng.host_close(simultaneous.c, simultaneous.now)
    simultaneous.data(b"", flags=ACK | FIN, ack=simultaneous.hs.snd_una)
    simultaneous.p_seq = seq_add(simultaneous.p_seq, 1)
    simultaneous.feed(simultaneous.seg())
    simultaneous.feed(simultaneous.seg(seq=seq_add(simultaneous.p_seq, -1), flags=ACK | FIN))
    simultaneous.feed(simultaneous.seg(flags=RST, seq=simultaneous.p_seq))

    half = _traced()
    half.eng.host_close(half.c, half.now)
    half.feed(half.seg())
    half.data(rng.randbytes(300))
    half.data(b"", flags=ACK | FIN)
    _until_gone(half)                                 # TIME_WAIT ends

    crossed = _traced()
    crossed.eng.host_close(crossed.c, crossed.now)
    crossed.data(b"", flags=ACK | FIN)

    reset = _traced()
    reset.data(b"", flags=ACK | FIN)
    reset.feed(reset.seg(flags=RST, seq=reset.t.rcv_nxt))
    return [passive, simultaneous, half, crossed, reset]


def _script_timeouts(rng: random.Random) -> list[Solo]:
    """Nothing comes back: RTOs backing off until the engine gives up; a FIN_WAIT_2 whose
    peer never closes times out."""
    lost = _traced(queued=rng.randbytes(3000))
    _until_gone(lost)
    orphan = _traced()
    orphan.eng.host_close(orphan.c, orphan.now)
    orphan.feed(orphan.seg())
    _until_gone(orphan)
    return [lost, orphan]


def _script_restore(rng: random.Random) -> list[Solo]:
    """A restore with data in flight and an ACK owed (it goes out first)."""
    so = _traced(queued=rng.randbytes(5000))
    so.data(rng.randbytes(1000))
    so.eng.restore(so.c, so.now)
    return [so]
