"""The TCP offload engine's reference model (sim/offnic_sim/toe/toe_model.py) against the
sans-IO TCP peer (sim/offnic_sim/net/tcppeer.py), in pure simulated time (the simulation:
sim/offnic_sim/toe/toe_sim.py).

Every connection starts mid-life: the engine gets a Handoff (sequence numbers, windows,
options, queues placed in its rings) and the peer is `TcpPeer.established(...)` from the
same numbers; at the handoff each side holds data the other never got (the engine's
in-flight bytes, the peer's unacknowledged bytes), the engine has never-sent data and
unread received data. The engine's host side is played by the test through the rings,
host_send/host_read/host_close and the notifications. A shared in-memory link with
per-frame loss, duplication, corruption and random delay (reordering) joins them.

- Bulk transfers through a lossy link with sequence numbers across 2^32, every close
  order, byte-exact both ways; thousands of connections at once with random options,
  ring sizes, MSS, delays and close orders, some reset by the peer.
- Hostile input: out-of-window RST/SYN, in-window RST, ACKs of unsent and too-old data,
  overlapping retransmissions with different bytes (the first bytes received win),
  window shrinking, PAWS-old replays, bad checksums: streams stay exact.
- Decisions in isolation: the delayed-ACK rule, the 4 out-of-order ranges, the timer
  wheel's RTO back-off and giving up, fast retransmit with NewReno, zero-window probing
  (the engine's probes and Linux-style probes to it), timestamps without PAWS when
  ts_recent is unknown, segments without timestamps, RST/FIN state machine; the
  per-segment decision trace, and the workload whose traces check the hardware engine
  (toe_sim.decision_traces) making every kind of decision; the TCB's size per RAM.
- Restore: mid-transfer into a TcpPeer playing the host stack, and reinstall; the
  TcpState conversion agrees with tcprepair's own advanced().

Seed: OFFNIC_SEED or 5150, printed (replay: OFFNIC_SEED=<seed> pytest tests/toe/test_toe_model.py).
Runs in about 12 s (the 2000 connections take 6 of them, the decision traces 4).
"""
from __future__ import annotations

import os
import random
import time
from collections import Counter

import pytest

from offnic_sim.linux import tcprepair
from offnic_sim.linux.linuxnet import ETH_P_IP, eth_frame
from offnic_sim.net.tcppeer import (ACK, FIN, PSH, RST, SYN, TcpPeer, build_packet, parse_segment, seq_add, seq_diff,
                                seq_lt, tcp_options)
from offnic_sim.toe.toe_model import ConnKey, Engine, Handoff, Memory, St, Tcb, tcb_layout
from offnic_sim.toe.toe_sim import (DECISION_CLASSES, ENGINE_IP, ENGINE_MAC, PEER_MAC, T0, Conn, Sim, Solo, bulk_pair,
                                decision_coverage, decision_traces, forge, peer_config, random_conn, sim_params)

SEED = int(os.environ.get("OFFNIC_SEED") or 5150)


def rng_for(name: str) -> random.Random:
    return random.Random(f"{SEED}/{name}")


@pytest.fixture(scope="module", autouse=True)
def announce_seed():
    print(f"[test_toe_model] seed {SEED} (replay: OFFNIC_SEED={SEED} .venv/bin/python -m pytest "
          f"tests/toe/test_toe_model.py)")


# ============================================================================ bulk and many

def test_bulk_lossy_wrapping():
    """Four large transfers at once through a lossy, reordering, duplicating, corrupting
    link, sequence numbers just below 2^32 on both sides, data in flight both ways at
    the handoff; each close order; byte-exact."""
    rng = rng_for("bulk")
    sim = Sim(rng.getrandbits(32), drop=0.03, dup=0.02, corrupt=0.01, reorder=0.05)
    for k, close in enumerate(("host", "peer", "both", "host")):
        sim.add(k, rng, snd_size=1 << 16, rcv_size=1 << 17, isn_e=2**32 - 3000 - k, isn_p=2**32 - 100 * k - 1,
                e_inflight=rng.randbytes(4000), e_unsent=rng.randbytes(9000), e_unread=rng.randbytes(700),
                p_unacked=rng.randbytes(3000), p_pending=rng.randbytes(250_000), host_tx=rng.randbytes(300_000),
                close=close, latency=rng.choice((200, 1000, 5000)), ts_recent_known=k % 2 == 0, sack=k % 2 == 1)
    sim.run_all()
    c = sim.eng.counters
    print(f"  bulk: {sim.now / 1e6:.1f} s simulated; engine {dict(c)}")
    for key in ("retransmits", "ooo_segments", "bad_checksum", "timeouts", "sack_segs", "dsacks"):
        assert c[key] > 0, f"{key} is 0"
    assert c["fast_retransmits"] > 0
    for x in sim.conns:
        assert seq_lt(sim.eng.final[x.conn].snd_una, 1 << 20), "send sequence did not wrap"
        assert seq_lt(sim.eng.final[x.conn].rcv_nxt, 1 << 20), "receive sequence did not wrap"


MANY = 2000


def test_thousands_at_once():
    """MANY connections in one engine at once, random MSS / options / ring sizes /
    windows / ISNs (some just below 2^32) / handoff queues / latencies / close orders,
    some with a stalled reader on either side, some reset by the peer, all through one
    lossy link: every stream exact, every connection closed on both sides."""
    rng = rng_for("many")
    t0 = time.monotonic()
    sim = Sim(rng.getrandbits(32), sim_params(check_tcb=False), mem=1 << 30, drop=0.02, dup=0.01, corrupt=0.005,
              reorder=0.03)
    for k in range(MANY):
        random_conn(sim, k, rng)
    assert len(sim.eng.tcbs) == MANY
    sim.run_all()
    c = sim.eng.counters
    took = time.monotonic() - t0
    closes = Counter(x.close for x in sim.conns)
    print(f"  {MANY} connections in {took:.1f} s ({sim.now / 1e6:.0f} s simulated), closes {dict(closes)}: "
          f"engine {dict(c)}")
    assert c["rst_accepted"] + c["fin_wait_2_expired"] >= closes["rst"]
    for key in ("retransmits", "timeouts", "fast_retransmits", "probes", "bad_checksum", "ooo_segments",
                "zero_window_sent", "window_updates", "delayed_acks", "paws_drops", "unacceptable", "sack_segs",
                "dsacks"):
        assert c[key] > 0, f"{key} is 0"
    assert not sim.eng.tcbs and len(sim.eng._free) - sim.eng._free_head == sim.eng.p.max_conns
    assert all(w == -1 for w in sim.eng._wheel), "the timer wheel kept a connection"


# ============================================================================ one connection by hand

def tick_time(us: int, tick: int = 64) -> int:
    """When a timer armed for `us` from now = 0 fires, when polled at every tick."""
    return -(-us // tick) * tick


def test_delayed_ack_rule():
    """ACK at once on every second full-sized segment; a lone segment is ACKed by the
    delayed-ACK timer at the first tick at or after 40 ms; small segments are ACKed once
    more than rcv_mss bytes are unacknowledged; out-of-order data, a gap fill, duplicate
    data and a FIN are ACKed at once; data from the host carries the owed ACK."""
    so = Solo()
    eff = 1460 - 12
    blk = rng_for("delack").randbytes(20 * eff)
    assert so.data(blk[:eff]) == []                      # 1st full segment: delayed (rcv_mss grows to eff)
    assert so.data(blk[eff:2 * eff])[0].ack == so.p_seq  # 2nd: at once
    t0 = so.now
    assert so.data(blk[2 * eff:3 * eff]) == []
    when, segs = so.until(lambda s: True)
    assert when - t0 == tick_time(t0 + 40_000) - t0 and segs[0].ack == so.p_seq and not segs[0].payload
    assert so.eng.counters["delayed_acks"] == 1
    # small segments: ACK once more than rcv_mss (1448) bytes wait
    pos = 3 * eff
    acks = []
    for i in range(20):
        acks.append(bool(so.data(blk[pos:pos + 100])))
        pos += 100
    assert acks == [False] * 14 + [True] + [False] * 5, acks
    # out of order: an immediate duplicate ACK, not beyond rcv_nxt
    rcv = so.p_seq
    out = so.data(blk[pos + 500:pos + 600], seq=seq_add(rcv, 500))
    assert [(s.ack, len(s.payload)) for s in out] == [(rcv, 0)]
    # duplicate data: at once
    assert [s.ack for s in so.data(blk[pos - 100:pos], seq=seq_add(rcv, -100))] == [rcv]
    # the gap fill: at once, everything held is acknowledged
    out = so.data(blk[pos:pos + 500], seq=rcv)
    assert [s.ack for s in out] == [seq_add(rcv, 600)]
    so.p_seq = seq_add(rcv, 600)
    # the host sends: its data carries the owed ACK, no separate pure ACK
    assert so.data(b"z" * 10) == []                    # delayed
    so.mem.ring_write(so.snd_buf, so.snd_size, so.t.write_seq, b"hello")
    so.eng.host_send(so.c, seq_add(so.t.write_seq, 5), so.now)
    out = so.collect()
    assert [(s.payload, s.ack, s.flags & PSH) for s in out] == [(b"hello", so.p_seq, PSH)]
    # FIN: at once
    out = so.data(b"", flags=ACK | FIN)
    assert [s.ack for s in out] == [seq_add(so.p_seq, 1)] and so.eng.state_of(so.c) is St.CLOSE_WAIT
    assert so.received() == blk[:pos + 600] + b"z" * 10


def test_out_of_order_four_ranges():
    """Five disjoint out-of-order segments: the four closest to rcv_nxt are kept, the
    farthest is dropped (ooo_drops) and never acknowledged; a closer one then evicts the
    farthest range (ooo_evictions). Bytes already held win over a retransmission with
    other bytes, in out-of-order ranges and in order alike. Filling the gaps delivers
    exactly what was kept; the evicted and dropped bytes come again and fit."""
    so = Solo()
    data = rng_for("ooo").randbytes(10_000)
    base = so.p_seq

    def at(a: int, b: int, blob: bytes = data) -> list:
        return so.data(blob[a:b], seq=seq_add(base, a))
    for a in (1000, 2000, 3000, 4000):                   # four ranges
        assert [s.ack for s in at(a, a + 500)] == [base]
    assert so.t.ooo() == [(seq_add(base, a), seq_add(base, a + 500)) for a in (1000, 2000, 3000, 4000)]
    assert [s.ack for s in at(5000, 5500)] == [base]     # a fifth, farthest: dropped
    assert so.eng.counters["ooo_drops"] == 1 and so.t.ooo_n == 4
    assert [s.ack for s in at(500, 600)] == [base]       # closer: evicts [4000, 4500)
    assert so.eng.counters["ooo_evictions"] == 1
    assert [r[0] for r in so.t.ooo()] == [seq_add(base, a) for a in (500, 1000, 2000, 3000)]
    at(1400, 1600)                                       # touches [1000,1500): merged, still 4
    assert so.t.ooo()[1] == (seq_add(base, 1000), seq_add(base, 1600))
    forged = bytes(b ^ 0xFF for b in data)
    at(900, 1700, forged)                                # overlaps held bytes: only [900,1000) and [1600,1700) taken
    assert so.t.ooo()[1] == (seq_add(base, 900), seq_add(base, 1700))
    # fill from rcv_nxt with other bytes everywhere: [0,500) and [600,900) are new (so
    # these bytes are the first), [500,600) and [900,1100) are held (kept)
    out = at(0, 1100, forged)
    assert [s.ack for s in out] == [seq_add(base, 1700)]
    got = so.received()
    assert got == forged[:500] + data[500:600] + forged[600:1000] + data[1000:1600] + forged[1600:1700]
    # the rest arrives again (evicted [4000,4500), dropped [5000,5500) included)
    at(1700, 10_000)
    got = so.received()
    assert len(got) == 10_000 and got[1700:] == data[1700:]
    assert so.eng.counters["ooo_drops"] == 1
    assert so.t.ooo_n == 0


def tcp_opts(frame: bytes) -> bytes:
    """The TCP options of an engine frame (IPv4 without options)."""
    return frame[14 + 40:14 + 20 + (frame[14 + 32] >> 4) * 4]


def sack_wire(base: int, *blocks: tuple[int, int]) -> bytes:
    """NOP NOP SACK as it must appear on the wire, blocks given as offsets from base."""
    out = bytes((1, 1, 5, 2 + 8 * len(blocks)))
    for a, b in blocks:
        out += seq_add(base, a).to_bytes(4, "big") + seq_add(base, b).to_bytes(4, "big")
    return out


def test_sack_blocks_layouts():
    """SACK negotiated: every ACK while ranges are held carries NOP NOP TS + NOP NOP SACK,
    at most 3 blocks beside timestamps: first the range holding the latest out-of-order
    segment, then the others nearest rcv_nxt first; the flag moves with its range when
    gaps fill and goes when its range is delivered. A segment that would make a 5th
    range is dropped (held ranges were reported: never reneged). D-SACK: the first
    segment in answer to payload below rcv_nxt reports it first. Checked on the wire
    bytes (sequence numbers wrap across 2^32 here)."""
    so = Solo(sack=True)
    data = rng_for("sack").randbytes(10_000)
    base = so.p_seq

    def at(a: int, b: int, *blocks: tuple[int, int], ack: int) -> None:
        out = so.data(data[a:b], seq=seq_add(base, a))
        assert [(s.ack, len(s.payload)) for s in out] == [(seq_add(base, ack), 0)], (a, b)
        opts = tcp_opts(so.frames[0])
        assert opts[:4] == b"\x01\x01\x08\x0a" and len(opts) == 12 + (4 + 8 * len(blocks) if blocks else 0)
        assert opts[12:] == (sack_wire(base, *blocks) if blocks else b""), (a, b, opts[12:].hex())
    at(3000, 3500, (3000, 3500), ack=0)
    at(1000, 1500, (1000, 1500), (3000, 3500), ack=0)
    at(5000, 5500, (5000, 5500), (1000, 1500), (3000, 3500), ack=0)
    at(7000, 7500, (7000, 7500), (1000, 1500), (3000, 3500), ack=0)     # 4 held, 3 fit
    at(3500, 4000, (3000, 4000), (1000, 1500), (5000, 5500), ack=0)     # merged: its range first
    at(2000, 2100, (3000, 4000), (1000, 1500), (5000, 5500), ack=0)     # a 5th: dropped, nothing changes
    c = so.eng.counters
    assert (c["ooo_drops"], c["ooo_evictions"], so.t.ooo_n) == (1, 0, 4)
    at(0, 1000, (3000, 4000), (5000, 5500), (7000, 7500), ack=1500)     # the flag moved down with its range
    at(1500, 3000, (5000, 5500), (7000, 7500), ack=4000)                # its range delivered: nearest first
    assert so.t.ooo_recent == 0
    at(100, 600, (100, 600), (5000, 5500), (7000, 7500), ack=4000)      # D-SACK: wholly duplicate
    at(3900, 4200, (3900, 4000), (5000, 5500), (7000, 7500), ack=4200)  # D-SACK: the duplicate part
    at(4200, 4300, (5000, 5500), (7000, 7500), ack=4300)                # in order while held: ACK at once
    at(4300, 5000, (7000, 7500), ack=5500)
    at(5500, 7000, ack=7500)                                            # nothing held: no SACK option
    at(7000, 7100, (7000, 7100), ack=7500)                              # (the same for a retransmission)
    assert c["dsacks"] == 3 and so.received() == data[:7500]


def test_sack_option_room_and_switches():
    """Without timestamps 4 blocks fit (NOP NOP SACK(34)); the engine's data segments
    carry the blocks too, their payload shortened by the option (Linux's tcp_current_mss):
    1460 - 36 here, 1448 - 28 with timestamps. No SACK option when the handoff did not
    negotiate SACK or EngineParams.sack is off (then the farthest range is forgotten)."""
    data = rng_for("sackroom").randbytes(10_000)
    for ts, room in ((False, 1460 - 36), (True, 1448 - 28)):
        so = Solo(sack=True, ts=ts)
        base = so.p_seq
        for a in (1000, 3000, 5000, 7000):
            so.data(data[a:a + 100], seq=seq_add(base, a))
        blocks = [(7000, 7100), (1000, 1100), (3000, 3100), (5000, 5100)][:4 if not ts else 3]
        assert tcp_opts(so.frames[0])[12 if ts else 0:] == sack_wire(base, *blocks)
        so.mem.ring_write(so.snd_buf, so.snd_size, so.t.write_seq, data[:3000])
        so.eng.host_send(so.c, seq_add(so.t.write_seq, 3000), so.now)
        segs = so.collect()
        assert [len(s.payload) for s in segs] == [room, room, 3000 - 2 * room]
        assert all(tcp_opts(f)[12 if ts else 0:] == sack_wire(base, *blocks) for f in so.frames)
        assert all(len(f) == 14 + 20 + 20 + (12 if ts else 0) + 36 - 8 * ts + len(s.payload)
                   for f, s in zip(so.frames, segs))
        assert max(len(f) for f in so.frames) == 14 + 1500
    for so in (Solo(sack=False), Solo(sim_params(sack=False), sack=True)):
        base = so.p_seq
        for a in (1000, 2000, 3000, 4000, 500):
            so.data(data[a:a + 100], seq=seq_add(base, a))
            assert len(tcp_opts(so.frames[0])) == 12
        assert so.eng.counters["ooo_evictions"] == 1 and so.eng.counters["sack_segs"] == 0


def test_received_sack_blocks_ignored():
    """The engine as a sender ignores SACK blocks (no scoreboard): duplicate ACKs that
    carry them drive the same fast retransmit and NewReno recovery, segment for segment,
    as the same ACKs without them."""
    runs = []
    for with_sack in (False, True):
        so = Solo(sack=True, queued=rng_for("sackin").randbytes(30_000))
        una = so.hs.snd_una
        assert len(so.out) == 10
        seg = 1448

        def sacked(*k: int) -> list[tuple[int, int]] | None:
            return [(seq_add(una, i * seg), seq_add(una, (i + 1) * seg)) for i in k] if with_sack else None
        so.feed(so.seg(ack=seq_add(una, seg)))                     # segment 0 arrived; 1 and 4 lost
        for k in ((2,), (3, 2), (5, 3), (6, 5), (7, 6)):
            so.feed(so.seg(ack=seq_add(una, seg), sack=sacked(*k)))
        so.feed(so.seg(ack=seq_add(una, 4 * seg), sack=sacked(5, 7)))  # partial ACK: 4 is next
        so.feed(so.seg(ack=seq_add(una, 10 * seg)))
        runs.append((so.eng.take_wire(), [s for s in so.out], dict(so.eng.counters)))
        c = so.eng.counters
        assert (c["fast_retransmits"], c["partial_acks"], c["timeouts"]) == (1, 2, 0), dict(c)   # 10: partial too
        rtx = [s.seq for s in so.out[10:] if seq_lt(s.seq, seq_add(una, 10 * seg))]
        assert rtx == [seq_add(una, seg), seq_add(una, 4 * seg)]
    (_, out0, c0), (_, out1, c1) = runs
    assert [(s.seq, s.ack, s.flags, s.payload, s.ts) for s in out0] == \
        [(s.seq, s.ack, s.flags, s.payload, s.ts) for s in out1] and c0 == c1


def test_rto_backoff_on_the_wheel_and_give_up():
    """Nothing comes back: the first segment is resent at RTO, 2 RTO, 4 RTO... each at
    the first wheel tick at or after its time (never early, at most a tick late), cwnd
    drops to one segment and snd_nxt goes back; after max_retries the connection gives
    up: ('error', c, 'timeout') then ('closed', c), and its frames go to the host."""
    p = sim_params(rto_initial_us=300_000, rto_min_us=200_000, max_retries=5, tick_us=64)
    so = Solo(p, queued=rng_for("rto").randbytes(30_000))
    first = so.out[:]
    assert len(first) == 10 and all(len(s.payload) == 1448 for s in first)      # init cwnd 10 segments
    sent_at = so.now
    times = []
    for i in range(5):
        when, segs = so.until(lambda s: True)
        assert [(s.seq, len(s.payload)) for s in segs] == [(so.hs.snd_una, 1448)]
        times.append(when)
        t = so.t
        assert t.cwnd == 1448 and t.snd_nxt == seq_add(so.hs.snd_una, 1448) and t.backoff == i + 1
    gaps = [b - a for a, b in zip([sent_at] + times, times)]
    for i, g in enumerate(gaps):
        want = 300_000 << i
        assert want <= g < want + 64, (i, g)
    assert so.eng.counters["timeouts"] == 5
    d = so.eng.next_deadline_us()
    so.now = d
    so.eng.poll(d)
    assert so.eng.take_notifications()[-2:] == [("error", so.c, "timeout"), ("closed", so.c)]
    assert d - times[-1] >= 300_000 << 5
    assert so.eng.counters["gave_up"] == 1
    so.eng.segment_in(so.seg(payload=b"late"), so.now)
    assert so.eng.take_host(), "a frame for a closed connection must go to the host"


def test_wheel_many_connections_and_far_jumps():
    """Hundreds of connections with delayed ACKs due in the same few slots, polled in
    jumps of more than a full turn of the wheel: each fires exactly once, none early;
    then RTOs longer than a turn (later rounds of a slot) fire on time."""
    p = sim_params(wheel_slots=64, tick_us=64, delack_us=1000, rto_initial_us=10_000, check_tcb=True)
    mem = Memory(1 << 24)
    eng = Engine(mem, p)
    eng.poll(T0)
    conns = []
    for i in range(300):
        b1, b2 = mem.alloc(4096), mem.alloc(4096)
        hs = Handoff(local_mac=ENGINE_MAC, remote_mac=PEER_MAC, snd_una=i, snd_nxt=i, write_seq=i, rcv_nxt=1000 + i,
                     read_seq=1000 + i, snd_wnd=4096, rcv_wnd=4096, rcv_wup=990 + i, snd_buf=b1, snd_size=4096,
                     rcv_buf=b2, rcv_size=4096, timestamps=False)
        conns.append(eng.install(ConnKey(ENGINE_IP, 1000 + i, "10.31.0.1", 80), hs, T0 + i // 40))
    # each owed an ACK at install: delayed ACKs due 1 ms later, in a handful of slots
    assert eng.take_wire() == []
    eng.poll(T0 + 999)
    assert eng.take_wire() == [], "a delayed ACK fired early"
    eng.poll(T0 + 64 * 64 * 3 + 5)                      # three turns later
    acks = eng.take_wire()
    assert len(acks) == 300 and len({f[14 + 20:14 + 24] for f in acks}) == 300
    eng.poll(T0 + 64 * 64 * 6)
    assert eng.take_wire() == []
    assert all(w == -1 for w in eng._wheel)
    # RTO of 10 ms = 157 ticks on a 64-slot wheel: it sits through later rounds of its slot
    c = conns[0]
    t = eng.tcb(c)
    mem.ring_write(t.snd_base, 4096, t.write_seq, b"x" * 100)
    now = eng.now_us
    eng.host_send(c, seq_add(t.write_seq, 100), now)
    assert len(eng.take_wire()) == 1
    fire = tick_time(now + 10_000)
    for u in range(now + 64, fire, 64):
        eng.poll(u)
        assert eng.take_wire() == [], f"RTO fired early at +{u - now} us"
    eng.poll(fire)
    assert len(eng.take_wire()) == 1 and eng.counters["timeouts"] == 1


def test_fast_retransmit_newreno():
    """Three of the engine's segments lost from one window: one fast retransmit, two
    partial ACKs each resending the next hole, no timeout (RFC 6582); exact."""
    rng = rng_for("newreno")
    sim = Sim(rng.getrandbits(32))
    sim.add(0, rng, snd_size=1 << 20, host_tx=rng.randbytes(600_000),
            peer_cfg=peer_config(rcv_buf=4 << 20, delayed_ack=None), close="host")
    sent = []

    def lose(x_: Conn, f: bytes) -> list[bytes]:
        seg = parse_segment(f[14:])
        if seg.payload:
            sent.append(seg.seq)
            if len(sent) in (60, 63, 66):           # deep in slow start: ~60 segments in flight
                return []
        return [f]
    sim.to_peer_tap = lose
    sim.run_all()
    c = sim.eng.counters
    assert (c["fast_retransmits"], c["partial_acks"], c["timeouts"], c["retransmits"]) == (1, 2, 0, 3), dict(c)


def test_zero_window_probing_by_the_engine():
    """The peer's application stops reading: its 4 kB window closes, the engine probes
    Linux's way (zero length, seq = snd_una - 1) at backed-off intervals, the peer ACKs
    each probe; reading resumes, the window reopens, everything arrives exact."""
    rng = rng_for("persist")
    sim = Sim(rng.getrandbits(32))
    x = sim.add(0, rng, host_tx=rng.randbytes(60_000), peer_cfg=peer_config(rcv_buf=4096), close="host")
    x.peer_stall_until = T0 + 20_000_000
    probes = []

    def watch(x_: Conn, f: bytes) -> list[bytes]:
        seg = parse_segment(f[14:])
        t = sim.eng.tcbs.get(x_.conn)
        if t is not None and not seg.payload and seg.seq == seq_add(t.snd_una, -1):
            probes.append(sim.now)
        return [f]
    sim.to_peer_tap = watch
    sim.run_all()
    c = sim.eng.counters
    assert c["probes"] == len(probes) >= 5 and c["zero_window_seen"] >= 1, dict(c)
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert all(b >= 2 * a - 128 for a, b in zip(gaps, gaps[1:])), gaps      # doubling (tick rounding)
    assert probes[-1] < T0 + 20_000_000 + 2 * gaps[-1]


def test_zero_window_by_the_engine():
    """The host stops reading: the engine advertises a zero window (the ring is full), the
    peer probes it (BSD-style, one byte past the window, which the engine trims and
    ACKs), then a read sends a window update and the transfer completes exact."""
    rng = rng_for("zwin")
    sim = Sim(rng.getrandbits(32))
    x = sim.add(0, rng, rcv_size=8192, p_pending=rng.randbytes(100_000), close="peer")
    x.stall_until = T0 + 5_000_000
    sim.run_all()
    c, pc = sim.eng.counters, x.peer.counters
    assert c["zero_window_sent"] >= 1 and c["window_updates"] >= 1 and c["trimmed"] >= 1, dict(c)
    assert pc["probes"] >= 2 and pc["zero_window_seen"] >= 1, dict(pc)


def test_engine_answers_linux_probes():
    """Linux probes a zero window with a zero-length segment at our rcv_nxt - 1: it is
    unacceptable, so the engine answers with an ACK carrying rcv_nxt and its window; a
    window probe with data into a zero window is trimmed and ACKed; the probe's ACK
    field is not lost when acceptable."""
    so = Solo(rcv_size=4096)
    so.data(rng_for("probe").randbytes(4096))        # fills the ring
    assert so.collect() == []
    so.advance(50_000)                                 # the delayed ACK: window 0
    assert so.out[-1].wnd == 0 and so.out[-1].ack == so.p_seq
    out = so.feed(so.seg(seq=seq_add(so.p_seq, -1)))
    assert [(s.seq, s.ack, s.wnd, len(s.payload)) for s in out] == [(so.t.snd_max, so.p_seq, 0, 0)]
    out = so.feed(so.seg(seq=so.p_seq, payload=b"q"))  # BSD probe: one byte past the window
    assert [(s.ack, s.wnd) for s in out] == [(so.p_seq, 0)] and so.eng.counters["trimmed"] == 1
    so.eng.host_read(so.c, so.p_seq, so.now)           # the host reads everything: window update
    out = so.collect()
    assert [s.wnd << so.t.rcv_wscale for s in out] == [4096]


def test_timestamps_unknown_and_missing():
    """After an install from Linux ts_recent is unknown: the engine echoes 0, accepts any
    TSval (PAWS off) and learns it from the first segment; then an older TSval is a PAWS
    drop (with a pure ACK) but one tick older is forgiven (Linux's PAWS window); a data
    segment without a timestamp option is accepted (as Linux does); a RST is never
    subject to PAWS."""
    so = Solo(ts_recent=None)
    assert so.t.ts_recent_ok == 0
    out = so.data(b"a" * 10, tsval=3_000_000_000)
    so.advance(50_000)
    assert so.t.ts_recent == 3_000_000_000 and so.out[-1].ts[1] == 3_000_000_000
    out = so.data(b"b" * 10, tsval=2_999_999_999)        # one tick older: forgiven
    assert so.eng.counters["paws_drops"] == 0
    out = so.data(b"c" * 10, tsval=2_999_999_000)        # older: dropped, ACKed at once
    assert so.eng.counters["paws_drops"] == 1 and [s.ack for s in out] == [so.t.rcv_nxt]
    so.p_seq = so.t.rcv_nxt
    so.data(b"d" * 10, ts=False)
    assert so.eng.counters["no_timestamp"] == 1
    assert so.received() == b"a" * 10 + b"b" * 10 + b"d" * 10
    so.feed(so.seg(flags=RST, tsval=1, seq=so.t.rcv_nxt))
    assert so.eng.take_notifications()[-2:] == [("rst", so.c), ("closed", so.c)]


def test_fin_and_rst_state_machine():
    """Simultaneous close (FIN_WAIT_1 -> CLOSING -> TIME_WAIT -> CLOSED after time_wait),
    a retransmitted FIN in TIME_WAIT re-ACKed (and the timer restarted), an exact RST in
    TIME_WAIT ends it early without an 'rst' notification; passive close (CLOSE_WAIT ->
    LAST_ACK -> CLOSED); an exact RST in ESTABLISHED resets; frames after close go to the host."""
    so = Solo(sim_params(time_wait_us=2_000_000))
    so.eng.host_close(so.c, so.now)
    fin = so.collect()
    assert [s.flags & FIN for s in fin] == [FIN] and so.eng.state_of(so.c) is St.FIN_WAIT_1
    out = so.data(b"", flags=ACK | FIN, ack=so.hs.snd_una)  # their FIN crosses ours
    assert so.eng.state_of(so.c) is St.CLOSING and out[-1].ack == seq_add(so.p_seq, 1)
    so.p_seq = seq_add(so.p_seq, 1)
    so.feed(so.seg())                                      # ACK of our FIN
    assert so.eng.state_of(so.c) is St.TIME_WAIT
    so.advance(1_000_000)
    out = so.feed(so.seg(seq=seq_add(so.p_seq, -1), flags=ACK | FIN))   # their FIN again
    assert [s.ack for s in out] == [so.p_seq]
    so.advance(1_500_000)
    assert so.eng.state_of(so.c) is St.TIME_WAIT, "the FIN restarted TIME_WAIT"
    so.advance(600_000)
    assert so.eng.take_notifications()[-1] == ("closed", so.c) and so.eng.counters["time_wait_expired"] == 1

    so = Solo()
    so.eng.host_close(so.c, so.now)
    so.collect()
    so.data(b"", flags=ACK | FIN)
    so.p_seq = seq_add(so.p_seq, 1)
    so.feed(so.seg())
    assert so.eng.state_of(so.c) is St.TIME_WAIT
    so.feed(so.seg(flags=RST, seq=so.p_seq))
    notes = so.eng.take_notifications()
    assert notes[-1] == ("closed", so.c) and ("rst", so.c) not in notes

    so = Solo()
    so.data(b"bye", flags=ACK | FIN)
    assert so.eng.state_of(so.c) is St.CLOSE_WAIT and ("fin", so.c) in so.eng.take_notifications()
    so.eng.host_close(so.c, so.now)
    assert so.eng.state_of(so.c) is St.LAST_ACK and so.collect()[-1].flags & FIN
    so.p_seq = seq_add(so.p_seq, 1)
    so.feed(so.seg())
    assert so.eng.take_notifications()[-1] == ("closed", so.c)
    assert so.feed(so.seg(payload=b"late")) == [] and len(so.eng.take_host()) == 1

    so = Solo()
    so.feed(so.seg(flags=RST | ACK, seq=so.p_seq))
    assert so.eng.take_notifications()[-2:] == [("rst", so.c), ("closed", so.c)]


# ============================================================================ hostile input

def test_hostile_rst_syn_and_acks():
    """Mid-transfer, forged segments with the peer's addresses and a fresh timestamp:
    RSTs outside the window (dropped silently), RSTs in the window but not at rcv_nxt
    and SYNs (challenge ACKs), data carrying an ACK of unsent data or a too-old ACK
    (dropped: a pure or challenge ACK). The connection is never reset, no forged byte
    enters a stream, both streams end exact."""
    rng = rng_for("hostile-rst")
    sim = Sim(rng.getrandbits(32), drop=0.01, reorder=0.02)
    x = bulk_pair(sim, rng)
    junk = rng.randbytes(800)
    expected = Counter()

    def attack():
        t = sim.eng.tcbs.get(x.conn)
        if t is None or St(t.state) is not St.ESTABLISHED:
            return
        c0 = Counter(sim.eng.counters)
        free = seq_diff(seq_add(t.read_seq, 1 << t.rcv_log2), t.rcv_nxt)
        cases = [
            (forge(x, sim, seq=seq_add(t.rcv_nxt, 1 << 31), ack=t.snd_una, flags=RST), "rst_out_of_window"),
            (forge(x, sim, seq=seq_add(t.rcv_nxt, free + 1), ack=0, flags=RST), "rst_out_of_window"),
            (forge(x, sim, seq=seq_add(t.rcv_nxt, min(free, 1)), ack=t.snd_una, flags=RST | ACK), "challenge_acks"),
            (forge(x, sim, seq=rng.getrandbits(32), ack=0, flags=SYN), "challenge_acks"),
            (forge(x, sim, seq=t.rcv_nxt, ack=t.snd_una, flags=SYN | ACK), "challenge_acks"),
            (forge(x, sim, seq=t.rcv_nxt, ack=seq_add(t.snd_max, 70000), payload=junk), "ack_beyond"),
            (forge(x, sim, seq=t.rcv_nxt, ack=seq_add(t.snd_una, -(1 << 30)), payload=junk), "ack_too_old"),
        ]
        for frame, counter in cases:
            before = Counter(sim.eng.counters)
            sim.eng.segment_in(frame, sim.now)
            assert sim.eng.counters[counter] == before[counter] + 1, counter
            expected[counter] += 1
        out = sim.eng.take_wire()
        assert len(out) == 5 and all(parse_segment(f[14:]).flags == ACK for f in out)
        for f in out:
            sim.link("p", x, f)                 # the challenge ACKs reach the peer: harmless
        assert sim.eng.counters["rst_accepted"] == c0["rst_accepted"]
    for i in range(1, 200):
        sim.at(T0 + i * 1000, attack)
    sim.run_all()
    assert not x.reset and expected["challenge_acks"] >= 60, dict(expected)
    assert x.peer.counters["rst_in"] == 0


def test_hostile_overlapping_retransmissions():
    """Every data segment the engine has taken (in order, or held out of order) is
    followed by copies with other bytes over the same and overlapping ranges, some
    reaching back into older data: the engine keeps the first bytes (as Linux keeps what
    it has queued) and both streams end exact."""
    rng = rng_for("hostile-overlap")
    sim = Sim(rng.getrandbits(32), drop=0.03, reorder=0.1, reorder_us=3000)
    bulk_pair(sim, rng, rcv_size=1 << 15)
    forged = Counter()

    def held(t: Tcb, s: int, e: int) -> bool:
        if seq_diff(e, t.rcv_nxt) <= 0:
            return True
        return any(seq_diff(s, a) >= 0 and seq_diff(b, e) >= 0 for a, b in t.ooo())

    def tap(x_: Conn, f: bytes):
        yield f
        seg = parse_segment(f[14:])
        t = sim.eng.tcbs.get(x_.conn)
        if not seg.payload or t is None or not held(t, seg.seq, seq_add(seg.seq, len(seg.payload))):
            return
        n = len(seg.payload)
        for a, b in ((0, n), (n // 3, n), (0, max(n // 2, 1)), (-min(n, 700), n // 2)):
            s, e = seq_add(seg.seq, a), seq_add(seg.seq, b)
            if seq_diff(e, s) <= 0 or not held(t, s, e):
                continue
            forged["copies"] += 1
            yield forge(x_, sim, seq=s, ack=seg.ack, payload=rng.randbytes(seq_diff(e, s)), wnd=seg.wnd,
                        tsval=seg.ts[0] if seg.ts else None)
    sim.tap = tap
    sim.run_all()
    assert forged["copies"] > 500 and sim.eng.counters["ooo_segments"] > 10, (forged, dict(sim.eng.counters))


def test_hostile_window_shrinking():
    """A third of the peer's ACKs are rewritten to advertise a much smaller window, some
    zero (the right edge moves left): the engine holds back (and probes when the window
    stays shut) and finishes exact when the real windows come again."""
    rng = rng_for("hostile-shrink")
    sim = Sim(rng.getrandbits(32), drop=0.01)
    bulk_pair(sim, rng, host_tx=rng.randbytes(500_000), p_pending=rng.randbytes(20_000),
              peer_cfg=peer_config(rcv_buf=65535, delayed_ack=None))
    shrunk = Counter()

    def tap(x_: Conn, f: bytes) -> list[bytes]:
        seg = parse_segment(f[14:])
        if seg.rst or rng.random() > 0.33:
            return [f]
        wnd = seg.wnd * rng.choice((0, 0, 1, 2, 5)) // 10
        shrunk["acks"] += 1
        opts = tcp_options(ts=seg.ts) if seg.ts else b""
        pkt = build_packet(seg.src, seg.dst, seg.sport, seg.dport, seg.seq, seg.ack, seg.flags, wnd, seg.payload,
                           options=opts)
        return [eth_frame(ENGINE_MAC, PEER_MAC, ETH_P_IP, pkt)]
    sim.tap = tap
    sim.run_all()
    c = sim.eng.counters
    print(f"  {shrunk['acks']} ACKs shrunk; engine {dict(c)}")
    assert shrunk["acks"] > 50 and c["zero_window_seen"] > 5, (shrunk, dict(c))


def test_hostile_paws_replays():
    """Old segments replayed later (their TSval now older than ts_recent) are dropped by
    PAWS with a pure ACK, including forged ones carrying new bytes at rcv_nxt, which
    nothing else would stop; both streams end exact."""
    rng = rng_for("hostile-paws")
    sim = Sim(rng.getrandbits(32), drop=0.01)
    x = bulk_pair(sim, rng, latency=5000, p_unacked=b"")
    captured: list = []
    replayed = Counter()

    def tap(x_: Conn, f: bytes) -> list[bytes]:
        seg = parse_segment(f[14:])
        if seg.payload and seg.ts and len(captured) < 20:
            captured.append((f, seg))
        return [f]
    sim.tap = tap

    def replay():
        t = sim.eng.tcbs.get(x.conn)
        if t is None or St(t.state) is not St.ESTABLISHED or not t.ts_recent_ok:
            return
        for f, seg in captured:
            if seq_diff(t.ts_recent, seg.ts[0]) <= 1:
                continue
            before = sim.eng.counters["paws_drops"]
            sim.eng.segment_in(f, sim.now)
            fake = forge(x, sim, seq=t.rcv_nxt, ack=t.snd_una, payload=rng.randbytes(500), tsval=seg.ts[0])
            sim.eng.segment_in(fake, sim.now)
            assert sim.eng.counters["paws_drops"] == before + 2
            replayed["frames"] += 2
        sim.drain()
    for i in range(20, 400, 20):
        sim.at(T0 + i * 1000, replay)
    sim.run_all()
    print(f"  {replayed['frames']} replayed; engine {dict(sim.eng.counters)}")
    assert replayed["frames"] > 100, replayed


def test_hostile_bad_checksums():
    """Frames for the connection with a bad TCP checksum (carrying new bytes at rcv_nxt,
    an exact RST, a FIN) or a bad IP header checksum are dropped and counted: the TCB
    does not change and nothing is sent."""
    so = Solo()
    so.data(b"hello")
    so.advance(100_000)
    for frame in (so.seg(payload=b"EVIL"), so.seg(flags=RST), so.seg(flags=ACK | FIN, payload=b"x")):
        for pos in (14 + 10, len(frame) - 1, 14 + 36):      # IP checksum, payload / option bytes, TCP checksum
            bad = bytearray(frame)
            bad[pos] ^= 0x04
            before = so.t.copy()
            n = so.eng.counters["bad_checksum"]
            assert so.feed(bytes(bad)) == []
            assert so.eng.counters["bad_checksum"] == n + 1 and so.t == before
    assert so.eng.counters["bad_checksum"] == 9 and so.received() == b"hello"


# ============================================================================ restore

def restore_into_host_stack(sim: Sim, x: Conn) -> None:
    """restore() and hand the connection to a TcpPeer playing the host's own TCP."""
    mem = sim.mem
    rec = sim.eng.restore(x.conn, sim.now)
    sim.drain()
    del sim.by_id[x.conn]
    assert rec.state is St.ESTABLISHED and rec.rcv_wup == rec.rcv_nxt, "restore must flush the owed ACK"
    st = rec.to_tcp_state(mem)
    assert st.snd_una == rec.snd_una and st.write_seq == rec.write_seq and st.rcv_nxt == rec.rcv_nxt
    assert st.send_queue == mem.ring_read(x.snd_buf, x.snd_size, rec.snd_una, seq_diff(rec.write_seq, rec.snd_una))
    assert st.unsent == seq_diff(rec.write_seq, rec.snd_max) and st.ts_val % 2 == 0
    assert st.recv_queue == mem.ring_read(x.rcv_buf, x.rcv_size, x.read_seq, seq_diff(rec.rcv_nxt, x.read_seq))
    x.got_host += st.recv_queue
    x.read_seq = rec.rcv_nxt
    assert rec.ts_recent is not None or not rec.timestamps
    x.host_stack = TcpPeer.established(
        (x.key.local_ip, x.key.local_port), (x.key.remote_ip, x.key.remote_port), snd_nxt=st.snd_nxt,
        rcv_nxt=st.rcv_nxt, snd_wnd=st.window.snd_wnd, now=sim.now / 1e6, mss=st.mss, snd_wscale=st.snd_wscale,
        rcv_wscale=st.rcv_wscale, window_scaling=st.wscale_ok, timestamps=st.timestamps,
        ts_recent=rec.ts_recent or 0, ts_val=rec.ts_val, rcv_wnd=st.window.rcv_wnd,
        unacked=st.send_queue[:st.in_flight], pending=st.send_queue[st.in_flight:] + x.host_tx[x.host_pos:],
        config=peer_config(mss=st.mss, rcv_buf=1 << 20), seed=1000 + x.k)
    x.host_pos = len(x.host_tx)
    sim.host_stack_step(x)


def test_restore_mid_transfer_into_the_host_stack():
    """Both directions streaming through a lossy link; part way, restore() hands each
    connection back (its TcpState checked against the rings) to a TcpPeer standing in
    for the host's TCP, which carries on through the engine's pass-through path: every
    byte exact, including the peer's data held out of order at the restore (dropped by
    it, resent by the peer) and data in flight both ways."""
    rng = rng_for("restore")
    sim = Sim(rng.getrandbits(32), drop=0.02, reorder=0.05, dup=0.01)
    # (no peer data lost at the handoff: TcpPeer would only recover it by its 1 s RTO)
    conns = [bulk_pair(sim, rng, k, isn_e=2**32 - 50_000 * k - 1, close=("host", "peer", "both")[k],
                       host_tx=rng.randbytes(600_000), p_pending=rng.randbytes(600_000), p_unacked=b"")
             for k in range(3)]
    done = set()

    def step():
        for x in conns:
            if x.k in done or x.conn not in sim.by_id:
                continue
            if (len(x.got_peer) > len(x.to_peer) // 4 or len(x.got_host) > len(x.to_host) // 4) and \
                    sim.eng.state_of(x.conn) is St.ESTABLISHED and x.host_pos < len(x.host_tx):
                done.add(x.k)
                restore_into_host_stack(sim, x)
    sim.run(lambda: all(x.done for x in conns), step=step)
    for x in conns:
        x.check()
    assert done == {0, 1, 2} and sim.eng.counters["restores"] == 3 and not sim.eng.tcbs


def test_restore_and_reinstall():
    """restore() then install() of Restored.handoff() at once, several times mid-transfer
    through a lossy link (out-of-order data, RTT and congestion state carried, ring
    positions kept): byte-exact."""
    rng = rng_for("reinstall")
    sim = Sim(rng.getrandbits(32), drop=0.02, reorder=0.05)
    x = bulk_pair(sim, rng, ts_recent_known=False, host_tx=rng.randbytes(600_000))
    marks = [len(x.to_peer) * i // 6 for i in range(1, 6)]

    def step():
        if marks and len(x.got_peer) > marks[0] and x.conn in sim.by_id and \
                sim.eng.state_of(x.conn) is St.ESTABLISHED:
            marks.pop(0)
            rec = sim.eng.restore(x.conn, sim.now)
            del sim.by_id[x.conn]
            x.conn = sim.eng.install(x.key, rec.handoff(), sim.now)
            sim.by_id[x.conn] = x
            t = sim.eng.tcb(x.conn)
            assert (t.cwnd, t.ssthresh, t.srtt8 >> 3) == (rec.cwnd, rec.ssthresh, rec.srtt_us)
            sim.drain()
    sim.run(lambda: x.done, step=step)
    x.check()
    assert not marks and sim.eng.counters["restores"] == 5


def test_tcp_state_conversion_matches_advanced():
    """A TcpState (as freeze() gives it) through install and restore: the converted state
    equals tcprepair's own TcpState.advanced() for what happened meanwhile (written,
    transmitted, acknowledged, received, read), survives the JSON round trip, and its
    derived numbers check out."""
    rng = rng_for("convert")
    queue, unread = rng.randbytes(3000), rng.randbytes(500)
    tmpl = tcprepair.TcpState(
        local_ip=ENGINE_IP, local_port=40000, remote_ip=Solo.PEER[0], remote_port=Solo.PEER[1],
        snd_una=2**32 - 1000, send_queue=queue, unsent=1000, rcv_nxt=2**32 - 7, recv_queue=unread,
        window=tcprepair.RepairWindow(snd_wl1=2**32 - 7, snd_wnd=200_000, max_window=200_000, rcv_wnd=64_000,
                                      rcv_wup=2**32 - 7),
        mss=1460, wscale_ok=True, snd_wscale=7, rcv_wscale=7, sack_ok=True, timestamps=True, ts_val=123456,
        ts_clock_ns=T0 * 1000, sndbuf=87040, rcvbuf=131072,
        info=tcprepair.CongestionInfo(10, 0x7FFFFFFF, 2000, 1000, 204000, 0, 1448, 1448, 0))
    mem = Memory(1 << 20)
    eng = Engine(mem, sim_params())
    eng.poll(T0)
    sb, rb = mem.alloc(1 << 16), mem.alloc(1 << 17)
    hs = Handoff.from_tcp_state(tmpl, mem, snd_buf=sb, snd_size=1 << 16, rcv_buf=rb, rcv_size=1 << 17,
                                local_mac=ENGINE_MAC, remote_mac=PEER_MAC, now_us=T0)
    assert (hs.cwnd, hs.ssthresh, hs.srtt_us, hs.read_seq) == (14480, None, 2000, tmpl.copied_seq)
    c = eng.install(ConnKey(ENGINE_IP, 40000, *Solo.PEER), hs, T0)
    sent = [parse_segment(f[14:]) for f in eng.take_wire()]
    assert [len(s.payload) for s in sent] == [1000]           # the never-sent part goes out at once
    peer_ts = 99
    more, back = rng.randbytes(2500), rng.randbytes(4000)

    def peer(seq, ack, payload=b"", wnd=1000):
        nonlocal peer_ts
        peer_ts += 1
        pkt = build_packet(Solo.PEER[0], ENGINE_IP, Solo.PEER[1], 40000, seq, ack, ACK, wnd, payload,
                           options=tcp_options(ts=(peer_ts, 0)))
        eng.segment_in(eth_frame(ENGINE_MAC, PEER_MAC, ETH_P_IP, pkt), T0 + 10_000)
    mem.ring_write(sb, 1 << 16, tmpl.write_seq, more)
    eng.host_send(c, seq_add(tmpl.write_seq, 2500), T0 + 5000)
    peer(tmpl.rcv_nxt, seq_add(tmpl.snd_una, 2200), back)     # acks 2200 bytes, sends 4000
    eng.host_read(c, seq_add(tmpl.copied_seq, 700), T0 + 20_000)
    rec = eng.restore(c, T0 + 30_000)
    st = rec.to_tcp_state(mem, template=tmpl)
    want = tmpl.advanced(written=more, transmitted=tmpl.unsent + 2500, acked=2200, received=back, read=700,
                         snd_wnd=1000 << 7)
    for name in ("snd_una", "send_queue", "unsent", "rcv_nxt", "recv_queue", "local_port", "mss", "sndbuf"):
        assert getattr(st, name) == getattr(want, name), name
    assert (st.window.snd_wnd, st.window.rcv_wup) == (want.window.snd_wnd, want.window.rcv_wup)
    # snd_wl1: the engine keeps the RFC's (the peer segment that set the window);
    # advanced() approximates it with rcv_nxt
    assert st.window.snd_wl1 == tmpl.rcv_nxt
    assert seq_diff(seq_add(st.window.rcv_wup, st.window.rcv_wnd), seq_add(st.rcv_nxt, 0)) >= 0
    assert st.ts_at(st.ts_clock_ns) >= (123456 + 30) and st.sack_ok
    assert tcprepair.TcpState.from_dict(st.to_dict()) == st
    assert st.snd_una < tmpl.snd_una, "sequence numbers wrapped"


def test_decision_trace():
    """With params.trace every segment for an installed connection leaves a Decision:
    the frame, the TCB before and after, the frames sent and notifications made in
    answer (what a hardware bench compares, segment by segment)."""
    so = Solo(sim_params(trace=True), queued=b"q" * 3000)
    so.data(b"x" * 1448)
    so.data(b"x" * 1448)
    so.data(b"y" * 100, seq=seq_add(so.p_seq, 500))          # out of order
    so.feed(so.seg(flags=RST, seq=seq_add(so.p_seq, 1 << 31)))
    assert so.eng.trace[0].kind == "install"
    d0, d1, d2, d3 = [d for d in so.eng.trace if d.kind == "seg"]
    assert d0.emitted == [] and d0.before.delack_on == 0 and d0.after.delack_on == 1     # delayed
    assert d0.notified == [("acked", so.c, seq_add(so.hs.snd_una, 3000)), ("rx", so.c, d0.after.rcv_nxt)]
    assert seq_diff(d1.after.rcv_nxt, d1.before.rcv_nxt) == 1448 and len(d1.emitted) == 1   # 2nd: ACK at once
    assert d2.after.ooo_n == 1 and d2.before.ooo_n == 0 and len(d2.emitted) == 1
    assert parse_segment(d2.emitted[0][14:]).ack == d2.after.rcv_nxt
    assert d3.emitted == [] and d3.after == d3.before
    so.feed(so.seg(flags=RST, seq=so.t.rcv_nxt))
    assert so.eng.trace[-1].after is None and so.eng.trace[-1].notified == [("rst", so.c), ("closed", so.c)]


def test_decision_traces_cover_the_decisions():
    """toe_sim.decision_traces, the workload the hardware engine is checked with: the same
    seed gives the same decisions, and with its defaults it makes every kind of decision
    toe_sim.decision_coverage tells apart."""
    t0 = time.process_time()
    traces = decision_traces(SEED)
    took = time.process_time() - t0
    again = decision_traces(SEED)           # (a smaller config would leave the hostile part, most of it, out)
    assert len(traces) == len(again)
    assert all((a.kind, a.frame, a.before, a.after) == (b.kind, b.frame, b.before, b.after)
               for a, b in zip(traces, again))
    cov = decision_coverage(traces)
    print(f"  {len(traces)} decisions in {took:.1f} s: {dict(cov)}")
    missing = [kind for kind in DECISION_CLASSES if not cov[kind]]
    assert not missing, f"never made: {missing}"


def test_tcb_layout():
    """The TCB's fields fit the sizes docs/toe.md plans: the decision's core word <= 96
    bytes, plus timer, buffer, out-of-order and header RAMs."""
    lay = tcb_layout()
    sizes = {ram: (v["_total"] + 7) // 8 for ram, v in lay.items()}
    print(f"  TCB bytes per RAM: {sizes}, total {sum(sizes.values())}")
    assert sizes["core"] <= 96 and sizes["ooo"] <= 33 and sizes["timer"] <= 16 and sum(sizes.values()) <= 192
