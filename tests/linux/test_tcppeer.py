"""The sans-IO TCP peer model (sim/offnic_sim/net/tcppeer.py), alone and against real Linux TCP.

Pure Python (no root needed):
- sequence arithmetic across 2^32, segment build/parse and checksums;
- thousands of short connections between two models over a seeded lossy in-memory wire
  (Impair: drop, duplicate, corrupt; plus delay-based reordering) in simulated time, with
  random MSS, receive buffers, option sets, ISNs near 2^32 and close orders: every byte
  arrives exactly, both ends reach CLOSED;
- NewReno recovery of three losses in one window without a timeout, RTO back-off and
  giving up, zero-window persist, PAWS, RFC 5961 RST/SYN/ACK checks, simultaneous open,
  RST answers from CLOSED/LISTEN, and a pair built mid-life with `TcpPeer.established`.

Against Linux (needs root, iproute2, /dev/net/tun; skipped otherwise): a namespace with a
TAP port (Linux 192.0.2.1, model 192.0.2.2, ARP answered by the TapPort), a Linux
TCP socket in it and a small wall-clock event loop moving frames between the TAP and the
model (Linux's TCP timers are wall-clock):
- 2 MB each way at once, model connecting to a Linux listener (model closes first, ends
  in TIME-WAIT) and Linux connecting to a model listener (Linux closes first and is in
  TIME-WAIT in `ss`, the model passes LAST-ACK to CLOSED);
- the same through Impair stages in both directions (drop, duplicate, reorder, corrupt):
  exact, and the model's retransmit/dup-ACK/out-of-order/bad-checksum counters are nonzero;
- a window-full case each way (a reader stops: zero window, persist probes, resume);
- the model's ISN at 2^32 - 5000, so its sequence numbers wrap mid-transfer;
- RST from Linux (SO_LINGER 0) accepted; forged segments handled per RFC 5961 / 7323:
  an out-of-window RST is dropped silently (RFC 5961 3.2), an in-window inexact RST and a
  SYN get a challenge ACK, a replayed old segment fails PAWS; Linux's own challenge ACK
  to a forged in-window RST is observed;
- MSS 1460 at MTU 1500 and 8960 at MTU 9000, both directions.

Seed: OFFNIC_SEED or 5005, printed. Runs in about 11 s (3 s of it the pure-Python part).
"""
from __future__ import annotations

import errno
import heapq
import os
import random
import select
import socket
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import pytest

from offnic_sim.linux import linuxnet
from offnic_sim.linux.linuxnet import ETH_P_IP, Impair, ImpairConfig, Namespace, TapPort, eth_frame, ip_of
from offnic_sim.net.tcppeer import (ACK, RST, SYN, SegmentError, TcpConfig, TcpPeer, TcpSegment, TcpState,
                                build_packet, parse_segment, seq_add, seq_diff, seq_ge, seq_gt, seq_in, seq_le,
                                seq_lt, tcp_options)

S = TcpState
SEED = int(os.environ.get("OFFNIC_SEED") or 5005)
REASON = linuxnet.unavailable_reason()
needs_linux = pytest.mark.skipif(REASON is not None, reason=f"real Linux networking unavailable: {REASON}")

LINUX_IP = "192.0.2.1"
SIM_IP = "192.0.2.2"
A_ADDR = ("10.0.0.1", 40000)
B_ADDR = ("10.0.0.2", 80)


def rng_for(name: str) -> random.Random:
    return random.Random(f"{SEED}/{name}")


@pytest.fixture(scope="module", autouse=True)
def announce_seed():
    print(f"[test_tcppeer] seed {SEED} (replay: OFFNIC_SEED={SEED} .venv/bin/python -m pytest "
          f"tests/linux/test_tcppeer.py)")


# ============================================================================ a simulated wire

class Wire:
    """Two peers joined by a link with fixed latency and, per direction, an optional
    Impair stage (drop, duplicate, corrupt). Reordering is done here, as an extra random
    delay of up to `reorder_delay` for a fraction `reorder` of packets: Impair's
    position-mode reordering holds a packet until k later ones have passed, which on an
    idle link (one retransmission per RTO) can take minutes, longer than any TIME-WAIT,
    breaking TCP's maximum-segment-lifetime assumption. Simulated time jumps from event
    to event, so RTOs cost nothing in wall-clock time."""

    def __init__(self, a: TcpPeer, b: TcpPeer, *, latency: float = 0.001, ab: Impair | None = None,
                 ba: Impair | None = None, reorder: float = 0.0, reorder_delay: float = 0.01, seed: int = 0):
        self.a, self.b = a, b
        self.latency = latency
        self.stage = {id(a): ab, id(b): ba}
        self.reorder, self.reorder_delay = reorder, reorder_delay
        self.rng = random.Random(seed)
        self.queue: list[tuple[float, int, TcpPeer, bytes]] = []
        self.now = 0.0
        self._n = 0
        self.tap: Callable[[TcpPeer, bytes], bytes | None] | None = None   # may drop/alter a packet

    def transmit(self, src: TcpPeer, pkt: bytes) -> None:
        if self.tap is not None:
            pkt = self.tap(src, pkt)
            if pkt is None:
                return
        dst = self.b if src is self.a else self.a
        stage = self.stage[id(src)]
        for p in (stage.push(pkt) if stage else [pkt]):
            self._n += 1
            delay = self.latency
            if self.rng.random() < self.reorder:
                delay += self.rng.random() * self.reorder_delay
            heapq.heappush(self.queue, (self.now + delay, self._n, dst, p))

    def step_polls(self) -> None:
        for p in (self.a, self.b):
            for pkt in p.poll(self.now):
                self.transmit(p, pkt)

    def run(self, done: Callable[[], bool], app: Callable[[float], None] | None = None,
            tmax: float = 3600.0, wake: float | None = None) -> float:
        """Advance until done(); app(now) runs before every poll round; `wake` is one more
        time to stop at even if nothing happens then."""
        while True:
            if app:
                app(self.now)
            self.step_polls()
            if done():
                return self.now
            times = [t for t in (self.a.next_deadline(), self.b.next_deadline(), wake) if t is not None]
            if self.queue:
                times.append(self.queue[0][0])
            if not times:
                raise AssertionError(f"stalled at {self.now:.3f}: {self.a!r} {self.b!r}")
            self.now = max(self.now, min(times))
            if self.now > tmax:
                raise AssertionError(f"not done by {tmax} s: {self.a!r} {self.b!r}")
            while self.queue and self.queue[0][0] <= self.now:
                _, _, dst, pkt = heapq.heappop(self.queue)
                dst.segment_in(pkt, self.now)

    def sleep(self, seconds: float) -> None:
        until = self.now + seconds
        self.run(lambda: self.now >= until, wake=until)

    def deliver_now(self, dst: TcpPeer, pkt: bytes) -> None:
        dst.segment_in(pkt, self.now)


def ip_impair(seed: int, drop=0.0, duplicate=0.0, corrupt=0.0) -> Impair:
    # corrupt_from=0: these are bare IPv4 packets, no Ethernet header to spare
    return Impair(ImpairConfig(drop=drop, duplicate=duplicate, corrupt=corrupt, corrupt_from=0), seed=seed)


@dataclass
class Transfer:
    """Both directions of one connection's application data and close policy."""

    a: TcpPeer
    b: TcpPeer
    data_a: bytes
    data_b: bytes
    close: str = "a"                      # "a" first, "b" first, or "both" (as soon as established)
    got_a: bytearray = field(default_factory=bytearray)
    got_b: bytearray = field(default_factory=bytearray)

    def start(self) -> None:
        assert self.a.send(self.data_a) == len(self.data_a)
        assert self.b.send(self.data_b) == len(self.data_b)

    def app(self, now: float) -> None:
        self.got_a += self.a.recv()
        self.got_b += self.b.recv()
        # close() in SYN-SENT would abandon the connection (RFC 9293), so wait for ESTABLISHED
        for name, p in (("a", self.a), ("b", self.b)):
            if self.close in (name, "both") and p.state is S.ESTABLISHED:
                p.close()
        for p in (self.a, self.b):
            if p.eof and p.state is S.CLOSE_WAIT:
                p.close()

    def done(self) -> bool:
        return self.a.state is S.CLOSED and self.b.state is S.CLOSED

    def check(self, tag: str) -> None:
        assert self.a.error is None and self.b.error is None, f"{tag}: errors {self.a.error} {self.b.error}"
        assert bytes(self.got_b) == self.data_a, f"{tag}: a->b {len(self.got_b)}/{len(self.data_a)} bytes, differ"
        assert bytes(self.got_a) == self.data_b, f"{tag}: b->a {len(self.got_a)}/{len(self.data_b)} bytes, differ"


# TIME-WAIT must outlast the peer's FIN retransmissions (that is what 2*MSL is for), or a
# lost last ACK ends in a legitimate RST. Simulated time is free, so use one above rto_max.
TW_SIM = 150.0


def pair(cfg_a: TcpConfig | None = None, cfg_b: TcpConfig | None = None, *, seed: int = 0,
         isn_a: int | None = None, isn_b: int | None = None) -> tuple[TcpPeer, TcpPeer]:
    a = TcpPeer(A_ADDR, B_ADDR, cfg_a or TcpConfig(time_wait=TW_SIM), seed=seed, isn=isn_a)
    b = TcpPeer(B_ADDR, None, cfg_b or TcpConfig(time_wait=TW_SIM), seed=seed + 1, isn=isn_b)
    b.listen()
    a.connect()
    return a, b


def establish(wire: Wire) -> None:
    wire.run(lambda: wire.a.state is S.ESTABLISHED and wire.b.state is S.ESTABLISHED)


# ============================================================================ unit: wire format

def test_seq_arithmetic():
    top = (1 << 32) - 1
    assert seq_add(top, 1) == 0 and seq_add(0, -1) == top
    assert seq_diff(5, top) == 6 and seq_diff(top, 5) == -6
    assert seq_lt(top, 0) and seq_gt(0, top) and seq_le(3, 3) and seq_ge(3, 3)
    assert seq_lt(0, (1 << 31) - 1) and seq_gt(0, (1 << 31) + 1)    # half the space either way
    assert seq_in(2, top - 1, 5) and seq_in(top, top, 0) and not seq_in(5, top - 1, 5)
    assert not seq_in(7, 7, 7)


def test_segment_build_parse():
    opts = tcp_options(mss=1460, ts=(123, 456), wscale=7)
    assert len(opts) == 20 and opts[4:6] == b"\x01\x01"
    pkt = build_packet("10.0.0.1", "10.0.0.2", 1234, 80, (1 << 32) - 1, 77, SYN | ACK, 5000, b"hello",
                       options=opts, ident=9)
    seg = parse_segment(pkt)
    assert (seg.sport, seg.dport, seg.seq, seg.ack, seg.flags, seg.wnd) == (1234, 80, (1 << 32) - 1, 77, SYN | ACK,
                                                                          5000)
    assert (seg.mss, seg.wscale, seg.ts, seg.payload, seg.seg_len) == (1460, 7, (123, 456), b"hello", 6)
    assert parse_segment(pkt + bytes(6)).payload == b"hello"          # link padding ignored
    for pos in (3, 15, 25, 35, 45, len(pkt) - 1):                      # every single-bit error is caught
        bad = bytearray(pkt)
        bad[pos] ^= 0x10
        with pytest.raises(SegmentError) as e:
            parse_segment(bytes(bad))
        assert e.value.reason in ("bad_checksum", "malformed")
    with pytest.raises(SegmentError, match="malformed"):
        parse_segment(pkt[:30])
    # odd-length payload: the checksum pads with a zero byte
    assert parse_segment(build_packet("1.2.3.4", "5.6.7.8", 1, 2, 3, 4, ACK, 5, b"abc")).payload == b"abc"


# ============================================================================ unit: pairs of models

def test_bulk_pair_lossy_wrapping():
    """A few large transfers through a hostile wire, both ISNs just below 2^32."""
    rng = rng_for("bulk")
    totals: Counter[str] = Counter()
    for k in range(4):
        a, b = pair(seed=k, isn_a=(1 << 32) - 3000 - k, isn_b=(1 << 32) - 100 * k - 1)
        w = Wire(a, b, ab=ip_impair(rng.randrange(1 << 30), 0.03, 0.02, 0.01),
                 ba=ip_impair(rng.randrange(1 << 30), 0.03, 0.02, 0.01), reorder=0.05, seed=k)
        t = Transfer(a, b, rng.randbytes(300_000), rng.randbytes(200_000), close="ab"[k % 2])
        t.start()
        w.run(t.done, t.app)
        t.check(f"bulk {k}")
        assert seq_lt(a.snd_una, 1 << 20) and seq_lt(b.snd_una, 1 << 20)    # both wrapped
        totals += a.counters + b.counters
        closer, other = (a, b) if t.close == "a" else (b, a)
        assert S.TIME_WAIT in closer.history and S.LAST_ACK in other.history
    assert totals["retransmits"] and totals["out_of_order"] and totals["bad_checksum"] and totals["fast_retransmits"]


def random_config(rng: random.Random) -> TcpConfig:
    return TcpConfig(mss=rng.choice((536, 1000, 1460, 8960)), rcv_buf=rng.choice((1500, 4096, 16384, 65535, 262144)),
                     timestamps=rng.random() < 0.7, window_scaling=rng.random() < 0.7,
                     delayed_ack=rng.choice((None, 0.04, 0.2)), nagle=rng.random() < 0.2,
                     time_wait=TW_SIM, init_cwnd=rng.choice((1, 2, 10)))


SMALL_CONNECTIONS = 2000


def test_many_small_transfers():
    """Thousands of short connections with random options, sizes, ISNs, loss and close
    order: every byte arrives exactly and both ends reach CLOSED."""
    rng = rng_for("many")
    t0 = time.monotonic()
    totals = {"retransmits": 0, "timeouts": 0, "fast_retransmits": 0, "probes": 0, "paws_rejected": 0,
              "challenge_acks": 0, "bad_checksum": 0, "out_of_order": 0}
    for k in range(SMALL_CONNECTIONS):
        isn = lambda: rng.choice((None, (1 << 32) - rng.randrange(1, 5000), rng.randrange(1 << 32)))
        a, b = pair(random_config(rng), random_config(rng), seed=k, isn_a=isn(), isn_b=isn())
        sizes = lambda: rng.choice((0, 1, rng.randrange(1, 3000), rng.randrange(1, 30000)))
        lossy = rng.random() < 0.6
        stage = lambda: ip_impair(rng.randrange(1 << 30), rng.random() * 0.1, rng.random() * 0.05,
                                  rng.random() * 0.02) if lossy else None
        latency = rng.choice((0.0001, 0.001, 0.02))
        w = Wire(a, b, latency=latency, ab=stage(), ba=stage(), reorder=rng.random() * 0.1 if lossy else 0.0,
                 reorder_delay=latency * rng.choice((1, 5)), seed=k)
        t = Transfer(a, b, rng.randbytes(sizes()), rng.randbytes(sizes()), close=rng.choice(("a", "b", "both")))
        t.start()
        try:
            w.run(t.done, t.app)
            t.check(f"connection {k}")
        except AssertionError as e:
            raise AssertionError(f"connection {k}: {e}\n a={a.cfg}\n b={b.cfg}\n {dict(a.counters)}\n"
                                 f" {dict(b.counters)}") from None
        for p in (a, b):
            for key in totals:
                totals[key] += p.counters[key]
    took = time.monotonic() - t0
    print(f"  {SMALL_CONNECTIONS} connections in {took:.1f} s: {totals}")
    assert all(totals.values()), totals


def test_newreno_three_losses_one_window():
    """Three segments lost from one window: one fast retransmit, two partial ACKs each
    retransmitting the next hole, no timeout (RFC 6582)."""
    a, b = pair(TcpConfig(delayed_ack=None), seed=3)
    w = Wire(a, b)
    establish(w)
    sent = []

    def tap(src, pkt):
        if src is a:
            seg = parse_segment(pkt)
            if seg.payload:
                sent.append(seg.seq)
                if len(sent) in (40, 43, 46):        # well into slow start: cwnd ~ 40 segments
                    return None
        return pkt
    w.tap = tap
    t = Transfer(a, b, rng_for("newreno").randbytes(400_000), b"")
    t.start()
    w.run(t.done, t.app)
    t.check("newreno")
    c = a.counters
    assert (c["fast_retransmits"], c["partial_acks"], c["timeouts"]) == (1, 2, 0), dict(c)
    assert c["retransmits"] == 3


def test_rto_backoff_and_give_up():
    """With everything from a lost after the handshake, a retransmits at RTO, doubling
    each time (from rto_min), and gives up after max_retries."""
    a, b = pair(TcpConfig(max_retries=5, rto_min=0.2), seed=4)
    w = Wire(a, b)
    establish(w)
    times = []

    def tap(src, pkt):
        if src is a and parse_segment(pkt).payload:
            times.append(w.now)
            return None
        return pkt
    w.tap = tap
    a.send(b"x" * 1000)
    w.run(lambda: a.state is S.CLOSED)
    assert a.error == "timeout" and a.counters["timeouts"] == 5
    gaps = [round(y - x, 3) for x, y in zip(times, times[1:])]
    assert gaps == [0.2, 0.4, 0.8, 1.6, 3.2], gaps          # first send, then 5 retransmissions
    assert round(w.now - times[-1], 3) == 6.4                # the 6th timeout gives up


def test_zero_window_persist():
    """The receiver's application stops reading: its window closes, the sender probes
    with backed-off persist timers, and everything arrives once reading resumes."""
    a, b = pair(cfg_b=TcpConfig(rcv_buf=4096), seed=5)
    w = Wire(a, b)
    data = rng_for("persist").randbytes(50_000)
    got = bytearray()
    establish(w)
    a.send(data)
    a.close()

    def app(now):
        if now >= 20.0:
            got.extend(b.recv())
            if b.eof and b.state is S.CLOSE_WAIT:
                b.close()
    w.run(lambda: a.state is S.CLOSED and b.state is S.CLOSED, app)
    assert bytes(got) == data
    assert a.counters["probes"] >= 5 and a.counters["zero_window_seen"] >= 1, dict(a.counters)
    assert b.counters["zero_window_sent"] >= 1 and b.counters["window_updates"] >= 1, dict(b.counters)


def test_paws_and_rfc5961():
    """PAWS drops a replayed old segment; an out-of-window RST is dropped silently, an
    in-window inexact RST, a SYN and an ACK of unsent data get a (challenge) ACK, an
    exact RST closes. The challenge ACKs do no harm to the other end."""
    a, b = pair(seed=6)
    w = Wire(a, b)
    establish(w)
    captured = []

    def capture(src, pkt):
        if src is b and parse_segment(pkt).payload:
            captured.append(pkt)
        return pkt
    w.tap = capture
    b.send(b"y" * 5000)
    w.run(lambda: a.recv_buffered == 5000)
    w.tap = None
    w.sleep(2.0)                                           # let the clocks move on
    b.send(b"z" * 100)                                     # ts_recent moves past the capture
    w.run(lambda: a.recv_buffered == 5100)

    def forged(flags, seq, ack=None, payload=b"", ts=True):
        opts = tcp_options(ts=(b._ts_now(), a._ts_now())) if ts else b""
        return build_packet(B_ADDR[0], A_ADDR[0], B_ADDR[1], A_ADDR[1], seq, a.snd_nxt if ack is None else ack,
                            flags, 1000, payload, options=opts)

    raw: list[bytes] = []

    def answer(pkt):
        w.deliver_now(a, pkt)
        raw[:] = a.poll(w.now)
        return [parse_segment(p) for p in raw]

    out = answer(captured[0])
    assert a.counters["paws_rejected"] == 1 and len(out) == 1 and out[0].flags == ACK
    assert a.recv_buffered == 5100
    out = answer(forged(RST, seq_add(a.rcv_nxt, 1 << 31), ts=False))
    assert out == [] and a.counters["rst_out_of_window"] == 1 and a.state is S.ESTABLISHED
    for pkt in (forged(RST, seq_add(a.rcv_nxt, 100), ts=False), forged(SYN, 12345),
                forged(ACK, a.rcv_nxt, ack=seq_add(a.snd_nxt, 100000))):
        out = answer(pkt)
        assert len(out) == 1 and out[0].flags == ACK and (out[0].seq, out[0].ack) == (a.snd_nxt, a.rcv_nxt)
        assert a.state is S.ESTABLISHED
        w.deliver_now(b, raw[0])                           # the challenge ACK reaches b: harmless
        assert b.state is S.ESTABLISHED and not b.poll(w.now)
    assert a.counters["challenge_acks"] == 2 and a.counters["ack_beyond"] == 1
    bad = bytearray(forged(ACK, a.rcv_nxt, payload=b"data"))
    bad[-1] ^= 1
    assert answer(bytes(bad)) == [] and a.counters["bad_checksum"] == 1
    assert answer(forged(RST, a.rcv_nxt, ts=False)) == []
    assert a.state is S.CLOSED and a.error == "reset"
    # CLOSED and LISTEN answer with RST (RFC 9293 3.10.7.1)
    out = answer(forged(ACK, a.rcv_nxt, payload=b"late"))
    assert len(out) == 1 and out[0].flags == RST and out[0].seq == a.snd_nxt
    lis = TcpPeer(B_ADDR, None)
    lis.listen()
    lis.segment_in(build_packet(A_ADDR[0], B_ADDR[0], A_ADDR[1], B_ADDR[1], 1, 777, ACK, 100), 0.0)
    out = [parse_segment(p) for p in lis.poll(0.0)]
    assert [(s.flags, s.seq) for s in out] == [(RST, 777)] and lis.state is S.LISTEN


def test_simultaneous_open_and_abort():
    cfg = TcpConfig(time_wait=0.2)
    a = TcpPeer(A_ADDR, B_ADDR, cfg, seed=7)
    b = TcpPeer(B_ADDR, A_ADDR, cfg, seed=8)
    a.connect()
    b.connect()
    w = Wire(a, b)
    establish(w)
    assert a.history[:4] == [S.CLOSED, S.SYN_SENT, S.SYN_RECEIVED, S.ESTABLISHED] == b.history[:4]
    assert a.ts_ok and a.ws_ok and b.ts_ok and b.ws_ok
    a.send(b"hello")
    w.run(lambda: b.recv_buffered == 5)
    b.abort()
    w.run(lambda: a.state is S.CLOSED)
    assert a.error == "reset" and b.counters["rst_out"] == 1


def test_handover_constructor():
    """Two endpoints built mid-connection (sequence numbers near 2^32, scales 7/2,
    timestamps, data in flight) carry on: lossy transfer both ways and close, with one
    end replaced halfway by a clone made from its `handover_state()`."""
    rng = rng_for("handover")
    sa, sb = (1 << 32) - 700, 123456
    ta, tb = 4_000_000_000, 77
    in_flight = rng.randbytes(3000)         # a sent these before the handover; b never got them
    a = TcpPeer.established(A_ADDR, B_ADDR, snd_nxt=seq_add(sa, 3000), rcv_nxt=sb, snd_wnd=500_000, mss=1460,
                            snd_wscale=2, rcv_wscale=7, timestamps=True, ts_recent=tb, ts_val=ta,
                            unacked=in_flight, config=TcpConfig(time_wait=TW_SIM, rcv_buf=4 << 20), seed=1)
    b = TcpPeer.established(B_ADDR, A_ADDR, snd_nxt=sb, rcv_nxt=sa, snd_wnd=600_000, mss=1460,
                            snd_wscale=7, rcv_wscale=2, timestamps=True, ts_recent=ta, ts_val=tb,
                            config=TcpConfig(time_wait=TW_SIM), seed=2)
    w = Wire(a, b, ab=ip_impair(1, 0.02, 0.01), ba=ip_impair(2, 0.02, 0.01), reorder=0.02)
    t = Transfer(a, b, rng.randbytes(200_000), rng.randbytes(150_000), close="a")
    t.start()
    w.run(lambda: len(t.got_b) > 100_000, t.app)
    assert a.counters["timeouts"] >= 1      # the in-flight data was only recovered by RTO
    # Mid-transfer, replace b by a clone built from its own snapshot: a notices nothing.
    t.app(w.now)                            # read what b holds: a snapshot does not carry it
    b2 = TcpPeer.established(**b.handover_state(), seed=3)
    assert (b2.snd_una, b2.snd_nxt, b2.rcv_nxt, b2.send_buffered) == (b.snd_una, b.snd_max, b.rcv_nxt,
                                                                      b.send_buffered)
    w.stage[id(b2)] = w.stage.pop(id(b))
    w.b = t.b = b2
    w.run(t.done, t.app)
    assert bytes(t.got_b) == in_flight + t.data_a and bytes(t.got_a) == t.data_b


# ============================================================================ against Linux

class Rig:
    """Moves frames between a TAP port and one TcpPeer, optionally through an Impair
    stage each way (delay-mode reordering), in wall-clock time."""

    def __init__(self, tap: TapPort, peer: TcpPeer, *, to_model: Impair | None = None,
                 to_linux: Impair | None = None):
        self.tap, self.peer = tap, peer
        self.to_model, self.to_linux = to_model, to_linux
        self.max_payload = {"linux": 0, "model": 0}
        self.linux_syn: TcpSegment | None = None
        self.from_linux: list[bytes] = []     # every IPv4 packet Linux sent (before impairment)
        self.socks: list[socket.socket] = []

    def _deliver(self, frame: bytes, now: float) -> None:
        pkt = ip_of(frame)
        if pkt is not None:
            self.peer.segment_in(pkt, now)

    def _to_linux(self, frames: list[bytes]) -> None:
        for f in frames:
            self.tap.write_frame(f)

    def pump(self) -> None:
        now = time.monotonic()
        for frame in self.tap.read_frames():
            pkt = ip_of(frame)
            if pkt is not None:
                self.from_linux.append(pkt)
                try:
                    seg = parse_segment(pkt)
                    self.max_payload["linux"] = max(self.max_payload["linux"], len(seg.payload))
                    if seg.syn and self.linux_syn is None:
                        self.linux_syn = seg
                except SegmentError:
                    pass
            for f in (self.to_model.push(frame, now) if self.to_model else [frame]):
                self._deliver(f, now)
        if self.to_model:
            for f in self.to_model.poll(now):
                self._deliver(f, now)
        for pkt in self.peer.poll(now):
            self.max_payload["model"] = max(self.max_payload["model"], len(parse_segment(pkt).payload))
            frame = eth_frame(self.tap.mac, self.tap.sim_mac, ETH_P_IP, pkt)
            self._to_linux(self.to_linux.push(frame, now) if self.to_linux else [frame])
        if self.to_linux:
            self._to_linux(self.to_linux.poll(now))

    def wait(self) -> None:
        timeout = 0.004
        nd = self.peer.next_deadline()
        if nd is not None:
            timeout = min(timeout, max(nd - time.monotonic(), 0))
        if (self.to_model and self.to_model.held) or (self.to_linux and self.to_linux.held):
            timeout = min(timeout, 0.001)
        select.select([self.tap] + self.socks, [], [], timeout)

    def run(self, step: Callable[[], bool], timeout: float, what: str = "") -> float:
        """Pump until step() (the applications' work) returns True; wall-clock seconds taken."""
        t0 = time.monotonic()
        while True:
            self.pump()
            if step():
                self.pump()
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"{what}: not done after {timeout} s: {self.peer!r} "
                                     f"{dict(self.peer.counters)}")
            self.wait()


class LinuxEnd:
    """The Linux application: a non-blocking TCP socket sending `data` and reading all."""

    def __init__(self, sock: socket.socket, data: bytes):
        sock.setblocking(False)
        self.sock, self.data = sock, memoryview(data)
        self.sent = 0
        self.got = bytearray()
        self.eof = False
        self.shut = False
        self.reading = True

    def pump(self) -> None:
        while self.sent < len(self.data):
            try:
                self.sent += self.sock.send(self.data[self.sent:self.sent + 262144])
            except BlockingIOError:
                break
        while self.reading and not self.eof:
            try:
                chunk = self.sock.recv(262144)
            except BlockingIOError:
                break
            if chunk:
                self.got += chunk
            else:
                self.eof = True

    def shutdown(self) -> None:
        if not self.shut:
            self.shut = True
            self.sock.shutdown(socket.SHUT_WR)


PORT = 5001
MODEL_PORT = 40001


def linux_listener(ns: Namespace, port: int = PORT, rcvbuf: int | None = None) -> socket.socket:
    srv = ns.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if rcvbuf:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    srv.bind((LINUX_IP, port))
    srv.listen(4)
    srv.setblocking(False)
    return srv


def open_model_to_linux(ns: Namespace, tap: TapPort, cfg: TcpConfig, *, isn: int | None = None, rcvbuf=None,
                        seed: int = SEED, **rig_kw) -> tuple[Rig, TcpPeer, socket.socket]:
    """Model connects to a Linux listener; returns once Linux has accepted."""
    srv = linux_listener(ns, rcvbuf=rcvbuf)
    peer = TcpPeer((SIM_IP, MODEL_PORT), (LINUX_IP, PORT), cfg, seed=seed, isn=isn)
    rig = Rig(tap, peer, **rig_kw)
    rig.socks = [srv]
    peer.connect()
    accepted: list[socket.socket] = []

    def step() -> bool:
        try:
            conn, _ = srv.accept()
            accepted.append(ns.own(conn))
        except BlockingIOError:
            pass
        return bool(accepted) and peer.state is S.ESTABLISHED
    rig.run(step, 10.0, "model connect")
    return rig, peer, accepted[0]


def open_linux_to_model(ns: Namespace, tap: TapPort, cfg: TcpConfig, *, seed: int = SEED,
                        **rig_kw) -> tuple[Rig, TcpPeer, socket.socket]:
    """Linux connects to a model listener; returns once both are established."""
    peer = TcpPeer((SIM_IP, MODEL_PORT), None, cfg, seed=seed)
    peer.listen()
    rig = Rig(tap, peer, **rig_kw)
    c = ns.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setblocking(False)
    assert c.connect_ex((SIM_IP, MODEL_PORT)) == errno.EINPROGRESS
    rig.socks = [c]

    def step() -> bool:
        return peer.state is S.ESTABLISHED and c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 and \
            select.select([], [c], [], 0)[1] != []
    rig.run(step, 10.0, "linux connect")
    return rig, peer, c


def tcp_states(ns: Namespace, port: int) -> list[str]:
    """Linux's TCP sockets involving `port` (ss -tan), as 'STATE local peer'."""
    out = ns.run("ss", "-tanH").stdout.splitlines()
    return [" ".join(line.split()[i] for i in (0, 3, 4)) for line in out if f":{port} " in line + " "]


def exchange(rig: Rig, peer: TcpPeer, lin: LinuxEnd, model_data: bytes, *, closer: str, timeout: float,
             model_read: Callable[[], bool] = lambda: True) -> tuple[bytes, float]:
    """Both directions at once, then FIN both ways. closer 'model': the model closes as
    soon as its data is queued, Linux after it has read the model's FIN; closer 'linux':
    Linux shuts down when its data is written, the model closes after Linux's FIN.
    Returns (bytes the model received, seconds)."""
    got = bytearray()
    assert peer.send(model_data) == len(model_data)
    if closer == "model":
        peer.close()

    def step() -> bool:
        lin.pump()
        if model_read():
            got.extend(peer.recv())
        if closer == "model" and lin.eof and lin.sent == len(lin.data):
            lin.shutdown()
        if closer == "linux" and lin.sent == len(lin.data):
            lin.shutdown()
            if peer.eof and peer.state is S.CLOSE_WAIT:
                peer.close()
        return lin.eof and peer.eof and peer.state in (S.TIME_WAIT, S.CLOSED)
    took = rig.run(step, timeout, f"exchange closer={closer}")
    return bytes(got), took


def finish(rig: Rig, peer: TcpPeer) -> None:
    rig.run(lambda: peer.state is S.CLOSED, 5.0, "final close")


@pytest.fixture
def linked_factory():
    stack = []

    def make(mtu: int = 1500) -> tuple[Namespace, TapPort]:
        ns = Namespace().__enter__()
        stack.append(ns)
        tap = TapPort(ns, mtu=mtu).__enter__()
        return ns, tap
    yield make
    for ns in stack:
        ns.close()


MODEL_CFG = dict(time_wait=0.5)


@needs_linux
@pytest.mark.parametrize("opener", ["model", "linux"])
def test_linux_bulk_both_ways(linked_factory, opener):
    """2 MB each way simultaneously, exact; the opener also closes first."""
    ns, tap = linked_factory()
    rng = rng_for(f"bulk-{opener}")
    cfg = TcpConfig(**MODEL_CFG)
    if opener == "model":
        rig, peer, sock = open_model_to_linux(ns, tap, cfg)
    else:
        rig, peer, sock = open_linux_to_model(ns, tap, cfg)
    lin = LinuxEnd(sock, rng.randbytes(2 << 20))
    mdata = rng.randbytes(2 << 20)
    got, took = exchange(rig, peer, lin, mdata, closer=opener, timeout=20.0)
    assert got == bytes(lin.data), "Linux -> model data differs"
    assert bytes(lin.got) == mdata, "model -> Linux data differs"
    c = peer.counters
    print(f"  {opener} opens: 2+2 MB in {took:.2f} s; model {dict(c)}")
    if opener == "model":
        assert peer.history[-4:] == [S.ESTABLISHED, S.FIN_WAIT_1, S.FIN_WAIT_2, S.TIME_WAIT]
        finish(rig, peer)
        lin.sock.close()
        time.sleep(0.05)
        assert tcp_states(ns, MODEL_PORT) == [], "Linux (passive closer) should have no socket left"
    else:
        assert peer.history[-4:] == [S.ESTABLISHED, S.CLOSE_WAIT, S.LAST_ACK, S.CLOSED]
        states = tcp_states(ns, MODEL_PORT)
        assert [s.split()[0] for s in states] == ["TIME-WAIT"], states
    assert peer.error is None and c["bad_checksum"] == 0 and c["retransmits"] == 0 and c["timeouts"] == 0
    assert peer.ts_ok and peer.ws_ok and peer.snd_mss == 1460


@needs_linux
def test_linux_impaired(linked_factory):
    """Drop, duplicate, reorder and corrupt frames both ways: still exact, and the model
    had to retransmit, saw duplicate ACKs, out-of-order data and bad checksums."""
    ns, tap = linked_factory()
    rng = rng_for("impaired")
    imp = lambda s: Impair(ImpairConfig(drop=0.02, duplicate=0.01, reorder=0.02, delay=0.003, corrupt=0.005), seed=s)
    rig, peer, sock = open_model_to_linux(ns, tap, TcpConfig(**MODEL_CFG), to_model=imp(rng.randrange(1 << 30)),
                                          to_linux=imp(rng.randrange(1 << 30)))
    before = ns.mib()
    lin = LinuxEnd(sock, rng.randbytes(1 << 20))
    mdata = rng.randbytes(1 << 20)
    got, took = exchange(rig, peer, lin, mdata, closer="model", timeout=30.0)
    assert got == bytes(lin.data) and bytes(lin.got) == mdata
    finish(rig, peer)
    c = peer.counters
    after = ns.mib()
    print(f"  1+1 MB impaired in {took:.2f} s; model {dict(c)}; to model {dict(rig.to_model.counters)}, "
          f"to Linux {dict(rig.to_linux.counters)}; Linux RetransSegs "
          f"{after['Tcp.RetransSegs'] - before.get('Tcp.RetransSegs', 0)} InCsumErrors "
          f"{after['Tcp.InCsumErrors'] - before.get('Tcp.InCsumErrors', 0)}")
    for key in ("retransmits", "dup_acks", "out_of_order", "bad_checksum"):
        assert c[key] > 0, f"{key} is 0: {dict(c)}"
    assert c["fast_retransmits"] + c["timeouts"] > 0
    assert peer.error is None and peer.history[-2:] == [S.TIME_WAIT, S.CLOSED]


@needs_linux
@pytest.mark.parametrize("stalled", ["linux", "model"])
def test_linux_window_full(linked_factory, stalled):
    """One reader stops for 1.5 s: its window closes, the sender persists (zero-window
    probes), and the transfer resumes and completes exactly."""
    ns, tap = linked_factory()
    rng = rng_for(f"window-{stalled}")
    cfg = TcpConfig(rcv_buf=16384 if stalled == "model" else 256 * 1024, **MODEL_CFG)
    rig, peer, sock = open_model_to_linux(ns, tap, cfg, rcvbuf=8192 if stalled == "linux" else None)
    before = ns.mib()
    lin = LinuxEnd(sock, rng.randbytes(600_000) if stalled == "model" else b"")
    mdata = rng.randbytes(600_000) if stalled == "linux" else b""
    t0 = time.monotonic()
    resume_at = t0 + 1.5
    if stalled == "linux":
        lin.reading = False
    model_read = lambda: stalled != "model" or time.monotonic() >= resume_at

    def app_gate() -> bool:
        if time.monotonic() >= resume_at:
            lin.reading = True
        return model_read()
    got, took = exchange(rig, peer, lin, mdata, closer="model", timeout=20.0, model_read=app_gate)
    assert got == bytes(lin.data) and bytes(lin.got) == mdata
    finish(rig, peer)
    after = ns.mib()
    d = {k: after[f"TcpExt.{k}"] - before[f"TcpExt.{k}"] for k in ("TCPToZeroWindowAdv", "TCPFromZeroWindowAdv",
                                                                   "TCPWinProbe")}
    c = peer.counters
    print(f"  {stalled} stalled: {took:.2f} s; model {dict(c)}; Linux {d}")
    if stalled == "linux":
        assert c["zero_window_seen"] >= 1 and c["probes"] >= 2, dict(c)
        assert d["TCPToZeroWindowAdv"] >= 1 and d["TCPFromZeroWindowAdv"] >= 1
    else:
        assert c["zero_window_sent"] >= 1 and c["window_updates"] >= 1, dict(c)
        assert d["TCPWinProbe"] >= 1, "Linux never probed the model's zero window"
        assert c["unacceptable"] >= 1          # Linux's probes (old sequence number) got an ACK


@needs_linux
def test_linux_isn_wrap(linked_factory):
    """The model's ISN is 2^32 - 5000: its sequence numbers wrap after 5 kB; 1 MB each way."""
    ns, tap = linked_factory()
    rng = rng_for("wrap")
    isn = (1 << 32) - 5000
    rig, peer, sock = open_model_to_linux(ns, tap, TcpConfig(**MODEL_CFG), isn=isn)
    lin = LinuxEnd(sock, rng.randbytes(1 << 20))
    mdata = rng.randbytes(1 << 20)
    got, took = exchange(rig, peer, lin, mdata, closer="model", timeout=20.0)
    assert got == bytes(lin.data) and bytes(lin.got) == mdata
    assert peer.iss == isn and peer.snd_una == seq_add(isn, 1 + len(mdata) + 1) and peer.snd_una < 1 << 21
    finish(rig, peer)
    print(f"  wrap: {took:.2f} s, final snd_una {peer.snd_una}")


@needs_linux
def test_linux_rst(linked_factory):
    """Forged segments at an established model (RFC 5961 / 7323), Linux's own challenge
    ACK to a forged in-window RST, then an SO_LINGER-0 close from Linux resets the model."""
    ns, tap = linked_factory()
    rng = rng_for("rst")
    rig, peer, sock = open_model_to_linux(ns, tap, TcpConfig(**MODEL_CFG))
    lin = LinuxEnd(sock, rng.randbytes(100_000))
    mdata = rng.randbytes(100_000)
    peer.send(mdata)
    got = bytearray()

    def step() -> bool:
        lin.pump()
        got.extend(peer.recv())
        return len(got) == len(lin.data) and len(lin.got) == len(mdata) and peer.snd_una == peer.snd_max
    rig.run(step, 10.0, "first transfer")
    old = next(p for p in rig.from_linux if parse_segment(p).payload)  # an early data segment
    time.sleep(0.02)
    rig.run(lambda: True, 1.0)

    def inject(pkt: bytes) -> list[TcpSegment]:
        peer.segment_in(pkt, time.monotonic())
        out = peer.poll(time.monotonic())
        for p in out:
            tap.send_ip(p)
        return [parse_segment(p) for p in out]

    def from_linux(flags, seq, payload=b"", ts=False):
        # a non-RST segment needs a fresh TSopt, or RFC 7323 3.2 drops it before anything else
        opts = tcp_options(ts=(peer.ts_recent + 1, peer._ts_now())) if ts else b""
        return build_packet(LINUX_IP, SIM_IP, PORT, MODEL_PORT, seq, peer.snd_nxt, flags, 1000, payload,
                            options=opts)

    c = peer.counters
    # a replayed old segment: its TSval is older than TS.Recent (PAWS)
    out = inject(old)
    assert c["paws_rejected"] == 1 and [s.flags for s in out] == [ACK]
    # out-of-window RST: dropped silently (RFC 5961 3.2 case 1)
    assert inject(from_linux(RST, seq_add(peer.rcv_nxt, 1 << 31))) == [] and c["rst_out_of_window"] == 1
    # in-window RST that is not exact, and a SYN: challenge ACKs (RFC 5961 3.2, 4.2)
    for pkt in (from_linux(RST, seq_add(peer.rcv_nxt, 5000)), from_linux(SYN, 99, ts=True)):
        out = inject(pkt)
        assert [(s.flags, s.seq, s.ack) for s in out] == [(ACK, peer.snd_nxt, peer.rcv_nxt)]
    assert c["challenge_acks"] == 2 and peer.state is S.ESTABLISHED
    assert inject(from_linux(ACK, peer.rcv_nxt, b"no timestamp")) == [] and c["no_timestamp"] == 1
    # Linux's side of RFC 5961: a forged in-window RST gets a challenge ACK, not a reset
    before = ns.mib()
    tap.send_ip(build_packet(SIM_IP, LINUX_IP, MODEL_PORT, PORT, seq_add(peer.snd_nxt, 1000), 0, RST, 0))
    rig.run(lambda: True, 1.0)
    assert ns.mib()["TcpExt.TCPChallengeACK"] - before["TcpExt.TCPChallengeACK"] == 1
    # the connection still works both ways
    more = rng.randbytes(50_000)
    peer.send(more)
    lin.data = memoryview(bytes(lin.data) + more)
    rig.run(lambda: (lin.pump(), got.extend(peer.recv()))[0] is None and len(got) == len(lin.data)
            and bytes(lin.got) == mdata + more, 10.0, "after forgeries")
    assert bytes(got) == bytes(lin.data)
    # Linux aborts: SO_LINGER {on, 0} close sends RST with seq = its snd_nxt = our rcv_nxt
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    rig.run(lambda: peer.state is S.CLOSED, 5.0, "reset by Linux")
    assert peer.error == "reset" and c["rst_accepted"] == 1


@needs_linux
@pytest.mark.parametrize("mtu", [1500, 9000])
def test_linux_mss(linked_factory, mtu):
    """MSS = MTU - 40 both ways; full segments carry MSS - 12 bytes (timestamps)."""
    ns, tap = linked_factory(mtu)
    rng = rng_for(f"mss{mtu}")
    rig, peer, sock = open_linux_to_model(ns, tap, TcpConfig(mss=mtu - 40, **MODEL_CFG))
    assert rig.linux_syn is not None and rig.linux_syn.mss == mtu - 40
    lin = LinuxEnd(sock, rng.randbytes(512 << 10))
    mdata = rng.randbytes(512 << 10)
    got, took = exchange(rig, peer, lin, mdata, closer="linux", timeout=20.0)
    assert got == bytes(lin.data) and bytes(lin.got) == mdata
    assert peer.snd_mss == mtu - 40 and peer.eff_mss == mtu - 52
    assert rig.max_payload == {"linux": mtu - 52, "model": mtu - 52}, rig.max_payload
    print(f"  MTU {mtu}: {took:.2f} s, max payloads {rig.max_payload}")
