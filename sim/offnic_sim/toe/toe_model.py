"""The TCP offload engine's exact reference model (issue 5, docs/toe.md): every decision
the hardware engine (hw/src/offnic/toe/) makes, segment by segment, on state shaped like
the hardware's. Sans-IO: time comes in as integer microseconds, frames in and out are
Ethernet II + IPv4 + TCP byte strings, byte buffers live in a `Memory` the host shares.

Interface
---------
    mem = Memory(1 << 24)
    eng = Engine(mem, EngineParams(...))
    conn = eng.install(ConnKey(local_ip, local_port, remote_ip, remote_port), Handoff(...), now_us)
    eng.segment_in(frame, now_us)      # a frame from the wire (others pass to eng.to_host untouched)
    eng.poll(now_us)                   # advance the timer wheel: retransmissions, ACKs, probes
    eng.host_send(conn, write_seq)     # the host wrote [old write_seq, write_seq) into the send ring
    eng.host_read(conn, read_seq)      # the host consumed the receive ring up to read_seq
    eng.host_close(conn)               # FIN after the data
    rec = eng.restore(conn)            # Restored: the connection leaves the engine
    state = rec.to_tcp_state(mem)      # a tcprepair.TcpState (built through TcpState.from_dict)
Outputs: eng.to_wire and eng.to_host (frames), eng.notifications, eng.counters. Test
aids the hardware has no need of: eng.next_deadline_us() (when poll() next has work),
EngineParams.trace (eng.trace: a Decision per segment: TCB before and after, frames and
notifications in answer), EngineParams.check_tcb (every field within its width).
Notifications: ('rx', conn, seq) in-order data received up to seq; ('acked', conn, seq)
data acknowledged up to seq; ('fin', conn) the peer's FIN (after its data); ('rst', conn)
reset by the peer; ('error', conn, 'timeout') gave up retransmitting; ('closed', conn)
the connection left the engine (its id is free again). A restore notifies nothing.

Buffers: each connection has a send ring and a receive ring in `Memory`, each a power of
two in size; the byte with sequence number s sits at base + (s mod size), so no ring
origin is stored and 2^32 wrap needs nothing (size divides 2^32). The send ring holds
[snd_una, write_seq), the receive ring [read_seq, rcv_nxt) plus out-of-order data
below read_seq + size. A Handoff carries the queues already placed in them.

State: one `Tcb` per connection, flat fixed-width integers. `tcb_layout()` gives every
field's width and the RAM it belongs to: "core" (the segment decision's word, 95 bytes),
"timer" (timer wheel dues and links, 13 bytes), "buf" (ring locations, 12 bytes), "ooo"
(4 out-of-order ranges, the latest one's flag, sack_ok: 33 bytes); the header template
(MACs, IPs, ports, static options) is a `ConnHeader` (25 bytes). Connection ids come
from a FIFO free list (0 first; a freed id goes to the back) unless install() is given
the id the table chose.

Choices the hardware must reproduce
-----------------------------------
Receive, acknowledgement:
- Acceptability (Linux's tcp_sequence, not RFC 9293's): a segment is acceptable when
  seq + len >= rcv_wup (rcv_nxt when we last sent an ACK) and seq <= rcv_nxt + free,
  where free = read_seq + rcv_size - rcv_nxt; len counts payload, SYN and FIN. So a
  segment at the right edge of a zero window still has its ACK processed, and Linux's
  zero-window probe (zero length, seq = our rcv_nxt - 1) is unacceptable: it draws an ACK.
- Immediate pure ACK (never piggybacked, so the peer counts it as a duplicate ACK): for
  out-of-order data, wholly duplicate data, data trimmed to nothing at the ring's end,
  unacceptable segments, PAWS drops, ACKs of unsent data. Challenge ACKs (RFC 5961) are
  the same pure ACK. No rate limiting.
- ACK now, piggybacked if the same service sends data, else pure: when the in-order data
  not yet acknowledged exceeds rcv_mss bytes (Linux's rule: so every second full-sized
  segment); for new data that came with duplicate or trimmed bytes; when out-of-order
  ranges were held (a gap filled, wholly or partly); on the FIN; for a window update
  after host_read (below).
- Otherwise delayed ACK: the timer is armed (if not already) for `delack_us` (default
  40 ms). rcv_mss starts at min(eff_mss, 536) and rises to the largest in-order payload
  seen (Linux's tcp_measure_rcv_mss without the decay).
- Every segment sent carries ACK = rcv_nxt and sets rcv_wup = rcv_nxt and cancels the
  delayed ACK. Pure ACKs carry seq = snd_max (the highest sent: after a timeout snd_nxt
  goes back, and an ACK below what the peer holds would be dropped by it).
- Window advertised: free = read_seq + rcv_size - rcv_nxt; target = 0 when free <
  rcv_size/2 and free < rcv_mss (receiver SWS avoidance, Linux's __tcp_select_window),
  else free; the window is max(target, what is left of the last advertised one) so the
  right edge does not move left; the field is min(window >> rcv_wscale, 65535) rounded
  DOWN, so the edge may recede by less than 2^rcv_wscale bytes but never passes the ring.
  The field sent last is kept (rcv_wf): the advertised edge is rcv_wup + rcv_wf << wscale.
- Window update after host_read (Linux's tcp_cleanup_rbuf): ACK now when target > 0,
  2 * left <= rcv_size and target >= 2 * left (left = advertised window remaining).
- Out-of-order data: at most 4 disjoint, non-touching ranges [start, end) of sequence
  numbers above rcv_nxt, sorted by distance from rcv_nxt. A segment is merged with the
  ranges it overlaps or touches; if that would make 5 ranges, the one farthest from
  rcv_nxt is forgotten: if it is the new segment, its data is dropped (counter
  ooo_drops), else the evicted range's bytes are forgotten (ooo_evictions) and the peer
  resends them (never acknowledged: without SACK it must). With SACK the new segment is
  always the one dropped: the held ranges were reported, and forgetting SACKed data
  (reneging) costs a Linux sender a timeout. Only bytes not already held
  are written: the first bytes received win (as Linux keeps what it has queued), for
  in-order data overlapping a held range as well. A FIN on an out-of-order segment is
  not remembered (the peer retransmits it); a bare one draws a pure ACK and takes no
  range (an empty range would be an empty SACK block).
- SACK blocks (RFC 2018), when the handoff negotiated SACK (Handoff.sack_ok, kept as
  Tcb.sack_ok; EngineParams.sack = False turns them off for comparisons): every segment
  sent while ranges are held, pure ACK or data, probes included, carries NOP NOP SACK
  (kind 5, 2 + 8n) after NOP NOP TS (Linux's layout), n <= 3 beside timestamps, <= 4
  without (40 option bytes). Order: the D-SACK block if any; then the range holding
  the latest out-of-order segment stored (RFC 2018 4: its first block), kept as a
  one-hot flag beside the 4 ranges that moves with its range as delivered ranges leave
  the front and is gone when its range is delivered; then the other ranges in stored
  order, nearest rcv_nxt first. Nearest-first rather than RFC 2018's "most recently
  reported": it is the order the RAM already holds (no recency list: 4 flag bits, the
  ooo word stays 33 bytes), each range still leads when it changes, and the blocks
  left out are the farthest, which the sender needs last (its holes are repaired from
  snd_una up). A data segment's payload is eff_mss less the SACK option's 4 + 8n bytes
  (Linux's tcp_current_mss), so IP packets never pass mss + 40 bytes.
- D-SACK (RFC 2883), done, stateless: when a segment (not RST or SYN) carries payload
  starting below rcv_nxt, the first segment sent in answer (whatever the path: duplicate,
  partly duplicate, unacceptable, PAWS drop) reports [seq, min(seq + len, rcv_nxt)) as
  its first block, rcv_nxt as it was on arrival. Duplicates of held out-of-order bytes
  get no D-SACK (their range leads instead). Linux uses D-SACK to undo spurious
  retransmissions.
- As a sender the engine ignores SACK blocks received (no RFC 6675 scoreboard): still
  correct (duplicate ACKs are told by ack/length/window only, SACK options or not) but a
  window with several losses is repaired one hole per round trip (NewReno's partial
  ACKs) where a scoreboard would resend every hole in one. Not done: a bounded
  scoreboard is a second 4-range list plus a retransmission pointer per connection
  (about 37 bytes more) and a merge of up to 4 received blocks on the ACK path;
  SACK-lite (on each duplicate ACK resend the first hole its blocks show) is the next
  step if the engine's own sends meet loss that needs it.
  Measured (tests/linux, 2 MB Linux -> engine at 2% loss both ways, SACK negotiated):
  without SACK blocks Linux recovers mostly by RTO: 3.2-4.2 s, 13-14 RTOs (6-13
  spurious); with them 0.12-0.20 s, 0 RTOs, every retransmission fast (SACK recovery),
  no reneging.
- Data beyond the ring (seq >= read_seq + rcv_size) is trimmed, and then the FIN too.
- Duplicate FIN in CLOSE_WAIT/CLOSING/LAST_ACK/TIME_WAIT: pure ACK; in TIME_WAIT a FIN
  also restarts the TIME_WAIT timer.
Checks, in this order, per RFC 9293 "segment arrives" as Linux orders them:
- Bad IP header or TCP checksum: dropped, counted (bad_checksum), nothing else.
- PAWS (RFC 7323): when timestamps are on and ts_recent is known, a non-RST segment
  with TSval < ts_recent - 1 (Linux's PAWS window of 1) is dropped with a pure ACK
  (paws_drops), unless ts_recent is older than 24 days (ts_recent_age, units of 2^26 us).
  A segment without a timestamp option is accepted (as Linux does; counted no_timestamp).
  ts_recent is unknown after an install from Linux (TCP_REPAIR cannot read it): then
  PAWS accepts everything until the first update.
- Unacceptable: RST dropped silently (rst_out_of_window), SYN challenge ACK, else pure ACK.
- RST (RFC 5961 3.2): seq == rcv_nxt closes the connection ('rst'); otherwise (in
  window) a challenge ACK. SYN (RFC 5961 4.2): challenge ACK. No ACK flag: dropped.
- ACK above snd_max: pure ACK and drop (ack_beyond). ACK below snd_una - max_window
  (RFC 5961 5.2): challenge ACK and drop (ack_too_old). ACK below snd_una: ACK field
  ignored, text processed.
- ts_recent = TSval when seq <= rcv_wup and TSval >= ts_recent (RFC 7323 4.3), after the
  checks above. TSecr sent = ts_recent (0 while unknown).
- Send window update (RFC 9293): snd_wl1 < seq, or snd_wl1 == seq and snd_wl2 <= ack.
Send:
- Transmit from snd_nxt while data (or the FIN) is pending: n = min(unsent, eff_mss,
  snd_una + min(snd_wnd, cwnd) - snd_nxt) where eff_mss = mss - 12 with timestamps; a
  segment shorter than eff_mss that is not the end of the data is not sent when cwnd is
  the tighter limit (it waits for the ACK clock); no Nagle, no sender SWS avoidance. The
  FIN rides on the segment that ends at write_seq if one more sequence number fits.
  PSH on a segment ending at write_seq. IP: ident 0, DF, TTL 64, no options.
- RTT: one timed segment at a time (rtt_seq/rtt_time, microseconds), Karn's rule (any
  timeout or fast retransmit cancels it); never from TSecr. srtt8 = 8*SRTT and rttvar4 =
  4*RTTVAR in us: first sample r: srtt8 = 8r, rttvar4 = 2r; then err = r - srtt8/8,
  srtt8 += err, rttvar4 += |err| - rttvar4/4 (shifts, floor). RTO = srtt8/8 +
  max(tick_us, rttvar4), clamped to [rto_min_us (Linux: 200 ms), rto_max_us (120 s)];
  before any sample rto_initial_us (1 s; a Handoff may carry srtt/rttvar). A valid
  sample resets the back-off. Timer value: min(RTO << backoff, rto_max_us).
- RTO timer (RFC 6298): started when data is sent and it is not running, restarted on
  an ACK of new data, stopped when everything is acknowledged. On expiry: retries + 1
  (give up after max_retries: ('error', conn, 'timeout')), ssthresh = max(flight/2,
  2 eff_mss) on the first timeout of a loss episode, cwnd = eff_mss, recover = snd_max - 1,
  leave recovery, backoff + 1, snd_nxt = snd_una and resend the first segment (at most
  max(snd_wnd, 1) bytes), the rest follows as cwnd opens (go-back-N).
- Slow start cwnd += min(acked, eff_mss) per ACK; congestion avoidance ca_acc += acked,
  cwnd += eff_mss each time ca_acc reaches cwnd (RFC 5681 byte counting). cwnd <= 2^30.
- Fast retransmit and NewReno (RFC 6582): duplicate ACK = no data, no FIN, ack ==
  snd_una, window unchanged, data outstanding. The third, when snd_una > recover:
  ssthresh = max(flight/2, 2 eff_mss), recover = snd_max - 1, resend the first segment,
  cwnd = ssthresh + 3 eff_mss; each further duplicate cwnd += eff_mss. Partial ACK:
  resend the first segment, cwnd = max(cwnd - acked + (eff_mss if acked >= eff_mss), eff_mss),
  the RTO restarted on the first partial ACK only. Full ACK: cwnd = min(ssthresh,
  max(snd_max - ack, eff_mss) + eff_mss). Outside recovery recover follows ack - 1.
- Zero window (persist): when nothing is in flight and data or the FIN waits for the
  peer's window, the persist timer (min(RTO << backoff, rto_max_us)) sends Linux's probe:
  a pure ACK with seq = snd_una - 1, backoff + 1. A window > 0 ends persist. When the
  window closes with data in flight (the peer dropped it) the RTO timer goes on, its
  resends limited to max(snd_wnd, 1) = 1 byte: those are the probes then. Any ACK while
  nothing is in flight, or carrying a zero window, resets retries: a peer that answers
  is never given up on (Linux: tcp_retransmit_timer, tcp_probe_timer).
- Initial congestion state after install: cwnd = Handoff.cwnd or init_cwnd (10) *
  eff_mss, ssthresh = Handoff.ssthresh or "infinite" (2^32 - 1). The RTO timer starts at
  once if data is in flight; unsent data goes out at once; a Handoff with rcv_wup <
  rcv_nxt (Linux owed an ACK) arms the delayed ACK.
- The engine never sends RST; urgent data, keepalives, ECN and a SACK scoreboard are not done.
Close: host_close queues the FIN (ESTABLISHED -> FIN_WAIT_1, CLOSE_WAIT -> LAST_ACK);
  FIN in order: ESTABLISHED -> CLOSE_WAIT, FIN_WAIT_1 -> CLOSING, FIN_WAIT_2 ->
  TIME_WAIT; our FIN acknowledged: FIN_WAIT_1 -> FIN_WAIT_2 (optional fin_wait_2_us
  timer), CLOSING -> TIME_WAIT, LAST_ACK -> CLOSED. TIME_WAIT lasts time_wait_us; an
  exact RST in TIME_WAIT ends it early (Linux, tcp_rfc1337 = 0).
Timers: a timer wheel of `wheel_slots` slots of `tick_us` (default 1024 x 64 us) with
  per-slot doubly linked lists through the timer RAM. Each connection has two timers,
  the delayed ACK and the send timer (one of RTO, persist or close [TIME_WAIT /
  FIN_WAIT_2]), each a due tick (32 bits, compared mod 2^32), and sits in at most one
  slot: that of its earliest due tick at the time it was placed. A due tick is
  ceil((now + interval) / tick_us), so a timer never fires early and at most one tick
  late. When a timer is armed earlier than the earliest due it had, the connection moves
  to the new slot; when its dues only move later it stays (the slot visit re-places it:
  slots are visited in tick order, each slot's list from the head, a connection whose
  earliest due has come is unlinked and fired, one whose earliest due is in a later
  round of the same slot stays, any other is moved to its earliest due's slot, one with
  nothing armed is unlinked). Insertion is at the head. A jump of more than one turn of
  the wheel visits each slot once. Both timers due: the delayed ACK fires first.
  Every call with a time advances the wheel to that time first.
Install and restore: install() takes effect at once (the hardware holds segments for a
  connection being installed; the model is the state after). restore() first sends a
  pending delayed ACK (so rcv_wup = rcv_nxt), then returns a `Restored` and forgets the
  connection: later frames for it go to the host. Restored.to_tcp_state() gives
  tcprepair.TcpState: send_queue = [snd_una, write_seq) with unsent = write_seq -
  snd_max (bytes sent once and rolled back by a timeout count as in flight), recv_queue
  = [read_seq, rcv_nxt), window = (snd_wl1 clamped to rcv_nxt, snd_wnd, max_window,
  advertised window, rcv_wup), ts_val = our TSval now with bit 0 cleared (ms clock), the
  engine's congestion state in `info`; only an ESTABLISHED connection without a queued
  FIN converts (TcpState cannot say more).
The timestamp clock: TSval = now_us // ts_tick_us (1000: ms, like Linux) + ts_offset.
IPv4 with options or fragments is never looked up: it goes to the host untouched.
"""
from __future__ import annotations

import base64
import dataclasses
import heapq
import ipaddress
from collections import Counter
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, NamedTuple

from offnic_sim.net.eth import ETH_HLEN, ETH_P_IP, mac_bytes, mac_str
from offnic_sim.net.tcppeer import (ACK, FIN, PSH, RST, SYN, TS_OPT_LEN, SegmentError, TcpSegment, build_packet, parse_segment,
                      seq_add, seq_diff, seq_ge, seq_gt, seq_le, seq_lt, tcp_options)

if TYPE_CHECKING:
    from offnic_sim.linux.tcprepair import TcpState

M32 = 0xFFFFFFFF
PAWS_WINDOW = 1                  # Linux's TCP_PAWS_WINDOW
PAWS_AGE_SHIFT = 26              # ts_recent_age unit: 2^26 us (67 s); 16 bits
PAWS_24DAYS = 24 * 86400 * 1_000_000 >> PAWS_AGE_SHIFT
CWND_MAX = 1 << 30
INFINITE_SSTHRESH = M32


class St(IntEnum):
    """Connection states (3 bits)."""

    CLOSED = 0
    ESTABLISHED = 1
    FIN_WAIT_1 = 2
    FIN_WAIT_2 = 3
    CLOSING = 4
    TIME_WAIT = 5
    CLOSE_WAIT = 6
    LAST_ACK = 7


# States that (re)transmit data and FIN, and states that accept segment text.
SEND_STATES = frozenset({St.ESTABLISHED, St.CLOSE_WAIT, St.FIN_WAIT_1, St.CLOSING, St.LAST_ACK})
RECV_STATES = frozenset({St.ESTABLISHED, St.FIN_WAIT_1, St.FIN_WAIT_2})

# The send timer's kinds (2 bits).
T_NONE, T_RTO, T_PERSIST, T_CLOSE = 0, 1, 2, 3
NIL = -1                          # "no connection" in the wheel links (all ones in hardware)


# ----------------------------------------------------------------------------- memory

class Memory:
    """The byte-addressed memory holding every connection's rings (an AxiRam now, host
    memory later). `alloc()` is a bump allocator for tests, aligned to the size."""

    def __init__(self, size: int):
        self.data = bytearray(size)
        self._next = 0

    def __len__(self) -> int:
        return len(self.data)

    def read(self, addr: int, n: int) -> bytes:
        return bytes(self.data[addr:addr + n])

    def write(self, addr: int, data: bytes) -> None:
        if addr < 0 or addr + len(data) > len(self.data):
            raise IndexError(f"write of {len(data)} bytes at {addr:#x} outside memory")
        self.data[addr:addr + len(data)] = data

    def alloc(self, size: int) -> int:
        base = -(-self._next // size) * size
        if base + size > len(self):
            raise MemoryError(f"no room for {size} bytes")
        self._next = base + size
        return base

    def ring_read(self, base: int, size: int, seq: int, n: int) -> bytes:
        """n bytes from sequence number seq of the ring at base (split at the wrap)."""
        off = seq & (size - 1)
        first = min(n, size - off)
        return self.read(base + off, first) + self.read(base, n - first)

    def ring_write(self, base: int, size: int, seq: int, data: bytes) -> None:
        off = seq & (size - 1)
        first = min(len(data), size - off)
        self.write(base + off, data[:first])
        if first < len(data):
            self.write(base, data[first:])


# ----------------------------------------------------------------------------- records

class ConnKey(NamedTuple):
    """The connection table's key, as the engine sees it (local = the host's side)."""

    local_ip: str
    local_port: int
    remote_ip: str
    remote_port: int

    def packed(self) -> bytes:
        """Lookup bytes in the order a received frame shows them: destination IP and
        port (ours), source IP and port (the peer's)."""
        return (ipaddress.IPv4Address(self.local_ip).packed + self.local_port.to_bytes(2, "big") +
                ipaddress.IPv4Address(self.remote_ip).packed + self.remote_port.to_bytes(2, "big"))


@dataclass(frozen=True)
class Handoff:
    """The install command's record: what tcprepair.TcpState carries, with the queues
    already placed in the rings (see Handoff.from_tcp_state) and the frame addresses.

    Sequence numbers: the send ring holds [snd_una, write_seq), of which [snd_una,
    snd_nxt) was transmitted; the receive ring holds [read_seq, rcv_nxt). Windows as in
    struct tcp_repair_window (snd_wnd already scaled, in bytes). ts_val: our TSval at the
    install's now_us; ts_recent None when unknown (always, from Linux)."""

    local_mac: str
    remote_mac: str
    snd_una: int
    snd_nxt: int
    write_seq: int
    rcv_nxt: int
    read_seq: int
    snd_wnd: int
    rcv_wnd: int
    rcv_wup: int
    snd_buf: int
    snd_size: int
    rcv_buf: int
    rcv_size: int
    mss: int = 1460                 # the peer's MSS option
    max_window: int = 0
    snd_wl1: int | None = None      # None: rcv_nxt
    wscale_ok: bool = True
    snd_wscale: int = 0
    rcv_wscale: int = 0
    sack_ok: bool = False           # SACK-permitted was negotiated: the engine sends SACK blocks
    timestamps: bool = True
    ts_val: int = 0
    ts_recent: int | None = None
    cwnd: int | None = None         # bytes
    ssthresh: int | None = None     # bytes
    srtt_us: int | None = None
    rttvar_us: int | None = None

    @classmethod
    def from_tcp_state(cls, st: "TcpState", memory: Memory, *, snd_buf: int, snd_size: int, rcv_buf: int,
                       rcv_size: int, local_mac: str, remote_mac: str, now_us: int,
                       congestion: bool = True) -> "Handoff":
        """Place a frozen Linux connection's queues in the rings and make its record.
        now_us is the engine's clock, which must be CLOCK_MONOTONIC in microseconds
        (st.ts_clock_ns's clock) for the TSval clock to run on. congestion: carry
        Linux's cwnd/ssthresh/srtt/rttvar from TCP_INFO."""
        if st.timestamps and st.ts_usec:
            raise ValueError("microsecond TCP timestamps are not handled")
        if len(st.send_queue) > snd_size or len(st.recv_queue) > rcv_size:
            raise ValueError(f"queues ({len(st.send_queue)}, {len(st.recv_queue)} bytes) do not fit the rings")
        memory.ring_write(snd_buf, snd_size, st.snd_una, st.send_queue)
        memory.ring_write(rcv_buf, rcv_size, st.copied_seq, st.recv_queue)
        w = st.window
        extra = {}
        info = st.info
        if congestion and info is not None and info.snd_mss:
            extra = dict(cwnd=info.snd_cwnd * info.snd_mss,
                         ssthresh=None if info.snd_ssthresh >= 0x7FFFFFFF else info.snd_ssthresh * info.snd_mss,
                         srtt_us=info.rtt_us or None, rttvar_us=info.rttvar_us if info.rtt_us else None)
        return cls(local_mac=local_mac, remote_mac=remote_mac, snd_una=st.snd_una, snd_nxt=st.snd_nxt,
                   write_seq=st.write_seq, rcv_nxt=st.rcv_nxt, read_seq=st.copied_seq, snd_wnd=w.snd_wnd,
                   rcv_wnd=w.rcv_wnd, rcv_wup=w.rcv_wup, snd_buf=snd_buf, snd_size=snd_size, rcv_buf=rcv_buf,
                   rcv_size=rcv_size, mss=st.mss, max_window=w.max_window, snd_wl1=w.snd_wl1,
                   wscale_ok=st.wscale_ok, snd_wscale=st.snd_wscale, rcv_wscale=st.rcv_wscale, sack_ok=st.sack_ok,
                   timestamps=st.timestamps, ts_val=st.ts_at(now_us * 1000) if st.timestamps else 0,
                   ts_recent=None, **extra)


@dataclass(frozen=True)
class Restored:
    """What restore() returns: the connection's state at that moment, atomically."""

    key: ConnKey
    local_mac: str
    remote_mac: str
    state: St
    snd_una: int
    snd_nxt: int
    snd_max: int
    write_seq: int
    fin_queued: bool
    rcv_nxt: int
    read_seq: int
    snd_wnd: int
    max_window: int
    snd_wl1: int
    rcv_wnd: int
    rcv_wup: int
    mss: int
    wscale_ok: bool
    snd_wscale: int
    rcv_wscale: int
    sack_ok: bool
    timestamps: bool
    ts_val: int                   # our TSval at time_us
    ts_recent: int | None
    time_us: int
    cwnd: int
    ssthresh: int
    srtt_us: int | None
    rttvar_us: int | None
    rto_us: int
    in_recovery: bool
    snd_buf: int
    snd_size: int
    rcv_buf: int
    rcv_size: int

    @classmethod
    def of(cls, key: ConnKey, local_mac: str, remote_mac: str, t: "Tcb", *, ts_val: int, time_us: int, rto_us: int,
           wscale_ok: bool, sack_ok: bool) -> "Restored":
        """The record of a TCB as it leaves (the model's, or the hardware's restore answer)."""
        return cls(
            key=key, local_mac=local_mac, remote_mac=remote_mac, state=St(t.state), snd_una=t.snd_una,
            snd_nxt=t.snd_nxt, snd_max=t.snd_max, write_seq=t.write_seq, fin_queued=bool(t.fin_queued),
            rcv_nxt=t.rcv_nxt, read_seq=t.read_seq, snd_wnd=t.snd_wnd, max_window=t.max_window, snd_wl1=t.snd_wl1,
            rcv_wnd=t.rcv_wf << t.rcv_wscale, rcv_wup=t.rcv_wup, mss=t.mss, wscale_ok=wscale_ok,
            snd_wscale=t.snd_wscale, rcv_wscale=t.rcv_wscale, sack_ok=sack_ok, timestamps=bool(t.ts_ok),
            ts_val=ts_val, ts_recent=t.ts_recent if t.ts_recent_ok else None, time_us=time_us, cwnd=t.cwnd,
            ssthresh=t.ssthresh, srtt_us=t.srtt8 >> 3 if t.srtt8 else None,
            rttvar_us=t.rttvar4 >> 2 if t.srtt8 else None, rto_us=rto_us, in_recovery=bool(t.in_recovery),
            snd_buf=t.snd_base, snd_size=1 << t.snd_log2, rcv_buf=t.rcv_base, rcv_size=1 << t.rcv_log2)

    @property
    def data_end(self) -> int:
        """End of the received data (rcv_nxt less a received FIN)."""
        fin_in = self.state in (St.CLOSE_WAIT, St.CLOSING, St.LAST_ACK, St.TIME_WAIT)
        return seq_add(self.rcv_nxt, -1) if fin_in else self.rcv_nxt

    def send_queue(self, memory: Memory) -> bytes:
        return memory.ring_read(self.snd_buf, self.snd_size, self.snd_una, seq_diff(self.write_seq, self.snd_una))

    def recv_queue(self, memory: Memory) -> bytes:
        return memory.ring_read(self.rcv_buf, self.rcv_size, self.read_seq, seq_diff(self.data_end, self.read_seq))

    def tcp_state_dict(self, memory: Memory, *, sndbuf: int = 0, rcvbuf: int = 0) -> dict:
        """The TcpState.to_dict() form (for TcpState.from_dict, which checks it)."""
        if self.state is not St.ESTABLISHED or self.fin_queued:
            raise ValueError(f"only an ESTABLISHED connection without a queued FIN converts ({self.state.name})")
        send_queue = self.send_queue(memory)
        recv_queue = self.recv_queue(memory)
        eff = self.mss - (TS_OPT_LEN if self.timestamps else 0)
        wl1 = self.snd_wl1 if seq_le(self.snd_wl1, self.rcv_nxt) else self.rcv_nxt
        info = dict(snd_cwnd=max(self.cwnd // eff, 1),
                    snd_ssthresh=0x7FFFFFFF if self.ssthresh == INFINITE_SSTHRESH else self.ssthresh // eff,
                    rtt_us=self.srtt_us or 0, rttvar_us=self.rttvar_us or 0, rto_us=self.rto_us,
                    ca_state=3 if self.in_recovery else 0, snd_mss=eff, rcv_mss=eff, total_retrans=0)
        return {
            "local_ip": self.key.local_ip, "local_port": self.key.local_port,
            "remote_ip": self.key.remote_ip, "remote_port": self.key.remote_port,
            "snd_una": self.snd_una, "send_queue": base64.b64encode(send_queue).decode(),
            "unsent": seq_diff(self.write_seq, self.snd_max),
            "rcv_nxt": self.rcv_nxt, "recv_queue": base64.b64encode(recv_queue).decode(),
            "window": {"snd_wl1": wl1, "snd_wnd": self.snd_wnd, "max_window": self.max_window,
                       "rcv_wnd": self.rcv_wnd, "rcv_wup": self.rcv_wup},
            "mss": self.mss, "wscale_ok": self.wscale_ok, "snd_wscale": self.snd_wscale,
            "rcv_wscale": self.rcv_wscale, "sack_ok": self.sack_ok, "timestamps": self.timestamps,
            "ts_val": self.ts_val & ~1 & M32, "ts_clock_ns": self.time_us * 1000,
            "sndbuf": sndbuf, "rcvbuf": rcvbuf, "info": info,
        }

    def to_tcp_state(self, memory: Memory, template: "TcpState | None" = None) -> "TcpState":
        """A tcprepair.TcpState for tcprepair.restore(); `template` (the state frozen at
        the handoff) supplies the socket buffer sizes."""
        from offnic_sim.linux.tcprepair import TcpState
        kw = {} if template is None else dict(sndbuf=template.sndbuf, rcvbuf=template.rcvbuf)
        return TcpState.from_dict(self.tcp_state_dict(memory, **kw))

    def handoff(self) -> Handoff:
        """The same connection as an install record again (the rings stay where they are)."""
        if self.state is not St.ESTABLISHED or self.fin_queued:
            raise ValueError(f"only an ESTABLISHED connection reinstalls ({self.state.name})")
        return Handoff(local_mac=self.local_mac, remote_mac=self.remote_mac, snd_una=self.snd_una,
                       snd_nxt=self.snd_max, write_seq=self.write_seq, rcv_nxt=self.rcv_nxt, read_seq=self.read_seq,
                       snd_wnd=self.snd_wnd, rcv_wnd=self.rcv_wnd, rcv_wup=self.rcv_wup, snd_buf=self.snd_buf,
                       snd_size=self.snd_size, rcv_buf=self.rcv_buf, rcv_size=self.rcv_size, mss=self.mss,
                       max_window=self.max_window, snd_wl1=self.snd_wl1, wscale_ok=self.wscale_ok,
                       snd_wscale=self.snd_wscale, rcv_wscale=self.rcv_wscale, sack_ok=self.sack_ok,
                       timestamps=self.timestamps, ts_val=self.ts_val, ts_recent=self.ts_recent, cwnd=self.cwnd,
                       ssthresh=self.ssthresh, srtt_us=self.srtt_us, rttvar_us=self.rttvar_us)


# ----------------------------------------------------------------------------- state

def _u(bits: int | str, ram: str, doc: str):
    # bits: a width, or "id"/"slot" (sized by EngineParams: connection ids + NIL, wheel slots)
    return field(default=0, metadata={"bits": bits, "ram": ram, "doc": doc})


@dataclass(slots=True)
class Tcb:
    """One connection's state: every field a fixed-width unsigned integer (NIL = all
    ones for the wheel links). Widths and RAMs: tcb_layout()."""

    # core: the segment decision's word
    state: int = _u(3, "core", "St")
    fin_queued: int = _u(1, "core", "host asked to close: FIN at write_seq")
    snd_una: int = _u(32, "core", "oldest unacknowledged sequence number")
    snd_nxt: int = _u(32, "core", "next to send (rolled back to snd_una by a timeout)")
    snd_max: int = _u(32, "core", "highest sequence number sent + 1")
    write_seq: int = _u(32, "core", "end of the host's data in the send ring")
    snd_wnd: int = _u(30, "core", "peer's window, bytes (scaled)")
    max_window: int = _u(30, "core", "largest snd_wnd seen")
    snd_wl1: int = _u(32, "core", "seq of the segment that last updated snd_wnd")
    snd_wl2: int = _u(32, "core", "ack of that segment")
    snd_wscale: int = _u(4, "core", "shift applied to windows received")
    rcv_nxt: int = _u(32, "core", "next sequence number expected (after a FIN: + 1)")
    rcv_wup: int = _u(32, "core", "rcv_nxt when we last sent an ACK")
    rcv_wf: int = _u(16, "core", "window field last sent (edge = rcv_wup + rcv_wf << rcv_wscale)")
    read_seq: int = _u(32, "core", "what the host consumed from the receive ring")
    rcv_wscale: int = _u(4, "core", "shift applied to windows sent")
    rcv_mss: int = _u(16, "core", "largest in-order payload seen (delayed-ACK rule)")
    mss: int = _u(16, "core", "peer's MSS option")
    ts_ok: int = _u(1, "core", "timestamps negotiated")
    ts_offset: int = _u(32, "core", "TSval = now_us // ts_tick_us + ts_offset")
    ts_recent: int = _u(32, "core", "peer's TSval to echo and check PAWS against")
    ts_recent_ok: int = _u(1, "core", "ts_recent known")
    ts_recent_age: int = _u(16, "core", "when ts_recent was set, in 2^26 us units")
    cwnd: int = _u(32, "core", "congestion window, bytes")
    ssthresh: int = _u(32, "core", "slow-start threshold, bytes (all ones: infinite)")
    ca_acc: int = _u(32, "core", "bytes acked in congestion avoidance")
    dupacks: int = _u(2, "core", "duplicate ACKs, saturating at 3")
    recover: int = _u(32, "core", "NewReno's recover")
    in_recovery: int = _u(1, "core", "in fast recovery")
    partial_seen: int = _u(1, "core", "a partial ACK came in this recovery")
    srtt8: int = _u(32, "core", "8 * smoothed RTT, us (0: no sample yet)")
    rttvar4: int = _u(32, "core", "4 * RTT variance, us")
    backoff: int = _u(4, "core", "RTO / persist exponential back-off")
    retries: int = _u(5, "core", "consecutive timeouts / unanswered probes")
    rtt_valid: int = _u(1, "core", "a segment is being timed")
    rtt_seq: int = _u(32, "core", "its end sequence number")
    rtt_time: int = _u(32, "core", "its send time, us mod 2^32")
    # timer RAM
    delack_on: int = _u(1, "timer", "delayed ACK armed")
    delack_due: int = _u(32, "timer", "its due tick")
    st_kind: int = _u(2, "timer", "send timer: none/RTO/persist/close")
    st_due: int = _u(32, "timer", "its due tick")
    wh_in: int = _u(1, "timer", "linked in the wheel")
    wh_slot: int = _u("slot", "timer", "the slot it is linked in")
    wh_prev: int = _u("id", "timer", "previous in the slot's list")
    wh_next: int = _u("id", "timer", "next in the slot's list")
    # buffer RAM
    snd_base: int = _u(40, "buf", "send ring address")
    snd_log2: int = _u(5, "buf", "log2 send ring size")
    rcv_base: int = _u(40, "buf", "receive ring address")
    rcv_log2: int = _u(5, "buf", "log2 receive ring size")
    # out-of-order RAM: ranges sorted by distance from rcv_nxt
    sack_ok: int = _u(1, "ooo", "SACK negotiated (and EngineParams.sack): blocks sent, ranges never reneged")
    ooo_recent: int = _u(4, "ooo", "one-hot: the range holding the latest out-of-order segment (0: none)")
    ooo_n: int = _u(3, "ooo", "ranges held (0..4)")
    ooo_s0: int = _u(32, "ooo", "range 0 start")
    ooo_e0: int = _u(32, "ooo", "range 0 end")
    ooo_s1: int = _u(32, "ooo", "range 1 start")
    ooo_e1: int = _u(32, "ooo", "range 1 end")
    ooo_s2: int = _u(32, "ooo", "range 2 start")
    ooo_e2: int = _u(32, "ooo", "range 2 end")
    ooo_s3: int = _u(32, "ooo", "range 3 start")
    ooo_e3: int = _u(32, "ooo", "range 3 end")

    def ooo(self) -> list[tuple[int, int]]:
        r = [(self.ooo_s0, self.ooo_e0), (self.ooo_s1, self.ooo_e1), (self.ooo_s2, self.ooo_e2),
             (self.ooo_s3, self.ooo_e3)]
        return r[:self.ooo_n]

    def set_ooo(self, ranges: list[tuple[int, int]], recent: int | None = None) -> None:
        """recent: the index of the range holding the latest out-of-order segment, None:
        keep the flag where it is (_text_in shifts it with its range)."""
        assert len(ranges) <= OOO_RANGES
        if recent is not None:
            self.ooo_recent = 1 << recent
        padded = list(ranges) + [(0, 0)] * (OOO_RANGES - len(ranges))
        (self.ooo_s0, self.ooo_e0), (self.ooo_s1, self.ooo_e1), (self.ooo_s2, self.ooo_e2), \
            (self.ooo_s3, self.ooo_e3) = padded
        self.ooo_n = len(ranges)

    def copy(self) -> "Tcb":
        return dataclasses.replace(self)


OOO_RANGES = 4


@dataclass(frozen=True)
class ConnHeader:
    """Per-connection header template and static options (the header RAM)."""

    key: ConnKey
    lookup: bytes                  # ConnKey.packed()
    eth: bytes                     # destination MAC, source MAC, ethertype
    lip: bytes
    rip: bytes
    lport: int
    rport: int
    wscale_ok: bool
    sack_ok: bool

    BITS = 48 + 48 + 32 + 32 + 16 + 16 + 1 + 1


@dataclass
class EngineParams:
    max_conns: int = 4096
    wheel_slots: int = 1024            # a power of two
    tick_us: int = 64                  # wheel slot granularity
    delack_us: int = 40_000
    rto_min_us: int = 200_000          # Linux's TCP_RTO_MIN; simulations lower it
    rto_max_us: int = 120_000_000      # Linux's TCP_RTO_MAX
    rto_initial_us: int = 1_000_000    # RFC 6298 2.1
    init_cwnd: int = 10                # segments, after install when the Handoff carries none
    max_retries: int = 15              # Linux's tcp_retries2
    time_wait_us: int = 60_000_000     # Linux's TCP_TIMEWAIT_LEN
    fin_wait_2_us: int | None = None   # None: FIN_WAIT_2 waits for the peer's FIN forever
    ts_tick_us: int = 1000             # TSval clock: ms, as Linux
    ttl: int = 64
    check_tcb: bool = False            # assert every field fits its width after each event
    trace: bool = False                # record a Decision per segment for an installed connection
    sack: bool = True                  # SACK blocks when the handoff negotiated SACK (False: as before them)


def tcb_layout(params: EngineParams | None = None) -> dict[str, dict[str, int]]:
    """{ram: {field: bits}} plus each RAM's total under "_total"."""
    p = params or EngineParams()
    idbits = max(p.max_conns, 2).bit_length()          # ids 0..max-1 and NIL
    slotbits = (p.wheel_slots - 1).bit_length()
    out: dict[str, dict[str, int]] = {}
    for f in dataclasses.fields(Tcb):
        b = f.metadata["bits"]
        bits = idbits if b == "id" else slotbits if b == "slot" else b
        out.setdefault(f.metadata["ram"], {})[f.name] = bits
    for ram in out.values():
        ram["_total"] = sum(ram.values())
    out["header"] = {"_total": ConnHeader.BITS}
    return out


@dataclass
class Decision:
    """One event's decision, for checking the hardware against the model. kind: "seg" (a
    segment: frame), "timer" (the wheel visited tick arg and fired the connection), "send"
    (host_send, arg = write_seq), "read" (host_read, arg = read_seq), "close" (host_close),
    "install" (before: the TCB as install() builds it, arg = the TSval at the install),
    "restore" (after: the state returned; the connection has left)."""

    conn: int
    now_us: int
    frame: bytes
    before: Tcb
    after: Tcb | None              # None: the connection left the engine
    emitted: list[bytes]
    notified: list[tuple]
    kind: str = "seg"
    arg: int = 0


# ----------------------------------------------------------------------------- the engine

def _tick_lt(a: int, b: int) -> bool:
    return seq_lt(a, b)


def _tick_le(a: int, b: int) -> bool:
    return seq_le(a, b)


class Outbox:
    """What an engine has sent and not yet handed out: frames to the wire, frames passed
    to the host, notifications (the model's and the hardware's, toe_hwengine.HwEngine)."""

    def __init__(self):
        self.to_wire: list[bytes] = []
        self.to_host: list[bytes] = []
        self.notifications: list[tuple] = []

    def take_wire(self) -> list[bytes]:
        out, self.to_wire = self.to_wire, []
        return out

    def take_host(self) -> list[bytes]:
        out, self.to_host = self.to_host, []
        return out

    def take_notifications(self) -> list[tuple]:
        out, self.notifications = self.notifications, []
        return out


class Engine(Outbox):
    """The engine: connection table, TCBs, timer wheel, RX decisions and TX."""

    def __init__(self, memory: Memory, params: EngineParams | None = None):
        super().__init__()
        p = self.p = params or EngineParams()
        if p.wheel_slots & (p.wheel_slots - 1):
            raise ValueError("wheel_slots must be a power of two")
        self.mem = memory
        self.counters: Counter[str] = Counter()
        self.trace: list[Decision] = []
        self.tcbs: dict[int, Tcb] = {}
        self.hdrs: dict[int, ConnHeader] = {}
        self.final: dict[int, Tcb] = {}           # model only: the last state of connections that left
        self._table: dict[bytes, int] = {}
        self._free = list(range(p.max_conns))
        self._free_head = 0
        self._wheel = [NIL] * p.wheel_slots
        self._wheel_tick = 0                      # last tick the wheel processed (time 0 at reset)
        self.now_us = 0
        self._ack_now = False                     # the event being processed owes an ACK
        self._dsack: tuple[int, int] | None = None   # the segment being processed duplicates this
        self._placed: dict[int, int] = {}         # model only: conn -> due tick it is linked for
        self._deadlines: list[tuple[int, int, int]] = []   # model only: (absolute tick, conn, due)
        self._widths = {k: v for ram in tcb_layout(p).values() for k, v in ram.items()}

    # ------------------------------------------------------------------ inspection
    def tcb(self, conn: int) -> Tcb:
        return self.tcbs[conn]

    def state_of(self, conn: int) -> St:
        t = self.tcbs.get(conn)
        return St(t.state) if t is not None else St.CLOSED

    def conn_of(self, key: ConnKey) -> int | None:
        return self._table.get(key.packed())

    def next_deadline_us(self) -> int | None:
        """When poll() next has a wheel slot to visit with a connection in it (a test
        aid: the hardware just ticks). May be early (a connection whose timer was
        cancelled), never late."""
        h = self._deadlines
        while h:
            abs_tick, c, due = h[0]
            if self._placed.get(c) == due:
                return abs_tick * self.p.tick_us
            heapq.heappop(h)
        return None

    def check(self, conn: int) -> None:
        """Every field of the connection's TCB fits its width."""
        t = self.tcbs[conn]
        widths = self._widths
        for f in dataclasses.fields(Tcb):
            v = getattr(t, f.name)
            if f.name in ("wh_prev", "wh_next") and v == NIL:
                continue
            assert 0 <= v < 1 << widths[f.name], f"conn {conn}: {f.name} = {v} does not fit {widths[f.name]} bits"

    # ------------------------------------------------------------------ tracing
    def _trace_start(self, t: Tcb) -> tuple | None:
        return (t.copy(), len(self.to_wire), len(self.notifications)) if self.p.trace else None

    def _trace_end(self, mark: tuple | None, c: int, t: Tcb, kind: str, arg: int = 0, frame: bytes = b"",
                   keep: bool = False) -> None:
        """keep: record the state after even though the connection left (a restore's)."""
        if mark is None:
            return
        before, nw, nn = mark
        alive = self.tcbs.get(c) is t
        self.trace.append(Decision(c, self.now_us, frame, before, t.copy() if alive or keep else None,
                                   self.to_wire[nw:], self.notifications[nn:], kind, arg))

    # ------------------------------------------------------------------ commands
    def install(self, key: ConnKey, hs: Handoff, now_us: int | None = None, conn_id: int | None = None) -> int:
        """Take over a connection; returns its id."""
        if now_us is not None:
            self._advance(now_us)
        p = self.p
        lookup = key.packed()
        if lookup in self._table:
            raise ValueError(f"{key} is installed already")
        for name in ("snd_size", "rcv_size"):
            size = getattr(hs, name)
            if size < 1 or size & (size - 1) or size > 1 << 31:
                raise ValueError(f"{name} {size} is not a power of two up to 2^31")
        if not (seq_le(hs.snd_una, hs.snd_nxt) and seq_le(hs.snd_nxt, hs.write_seq)):
            raise ValueError("need snd_una <= snd_nxt <= write_seq")
        if seq_diff(hs.write_seq, hs.snd_una) > hs.snd_size:
            raise ValueError("send queue larger than the send ring")
        if not 0 <= seq_diff(hs.rcv_nxt, hs.read_seq) <= hs.rcv_size:
            raise ValueError("receive queue larger than the receive ring (or read_seq after rcv_nxt)")
        if not 64 + TS_OPT_LEN <= hs.mss <= 65535:
            raise ValueError(f"mss {hs.mss}")
        if conn_id is None:
            if self._free_head >= len(self._free):
                raise RuntimeError("no free connection id")
            c = self._free[self._free_head]
            self._free_head += 1
            if self._free_head > 1024 and self._free_head * 2 > len(self._free):
                del self._free[:self._free_head]
                self._free_head = 0
        else:
            c = conn_id
            if c in self.tcbs or not 0 <= c < p.max_conns:
                raise ValueError(f"connection id {c} in use or out of range")
            del self._free[self._free.index(c, self._free_head)]     # entries before the head are spent
        ws = bool(hs.wscale_ok)
        ts = bool(hs.timestamps)
        t = handoff_tcb(hs, p)
        t.ts_offset = (hs.ts_val - now_tsclock(self.now_us, p)) & M32 if ts else 0
        if t.ts_recent_ok:
            t.ts_recent_age = self._age_now()
        self.tcbs[c] = t
        self.hdrs[c] = ConnHeader(key=key, lookup=lookup,
                                  eth=mac_bytes(hs.remote_mac) + mac_bytes(hs.local_mac) + ETH_P_IP.to_bytes(2, "big"),
                                  lip=ipaddress.IPv4Address(key.local_ip).packed,
                                  rip=ipaddress.IPv4Address(key.remote_ip).packed,
                                  lport=key.local_port, rport=key.remote_port, wscale_ok=ws, sack_ok=bool(hs.sack_ok))
        self._table[lookup] = c
        self.counters["installs"] += 1
        mark = self._trace_start(t)
        self._ack_now = False
        if t.rcv_wup != t.rcv_nxt:              # Linux owed the peer an ACK
            self._arm_delack(t)
        self._finish(c, t, None)
        self._trace_end(mark, c, t, "install", hs.ts_val & M32 if ts else 0)
        return c

    def restore(self, conn: int, now_us: int | None = None) -> Restored:
        """Hand the connection back: a pending ACK goes out first, then it is gone."""
        if now_us is not None:
            self._advance(now_us)
        t = self.tcbs[conn]
        h = self.hdrs[conn]
        mark = self._trace_start(t)
        if t.rcv_wup != t.rcv_nxt and t.state != St.CLOSED:
            self._emit(conn, t, ACK, t.snd_max)
        rec = Restored.of(h.key, mac_str(h.eth[6:12]), mac_str(h.eth[0:6]), t, ts_val=self._tsval(t),
                          time_us=self.now_us, rto_us=self._rto(t), wscale_ok=h.wscale_ok, sack_ok=h.sack_ok)
        self._forget(conn, t)
        self.counters["restores"] += 1
        self._trace_end(mark, conn, t, "restore", keep=True)
        return rec

    def host_send(self, conn: int, write_seq: int, now_us: int | None = None) -> None:
        """The host placed [old write_seq, write_seq) in the send ring."""
        if now_us is not None:
            self._advance(now_us)
        t = self.tcbs[conn]
        if t.state not in (St.ESTABLISHED, St.CLOSE_WAIT) or t.fin_queued:
            raise ValueError(f"host_send in {St(t.state).name}" + (" after host_close" if t.fin_queued else ""))
        write_seq &= M32
        if seq_lt(write_seq, t.write_seq) or seq_diff(write_seq, t.snd_una) > 1 << t.snd_log2:
            raise ValueError("write_seq moves back or past the send ring's room")
        mark = self._trace_start(t)
        old = self._min_due(t)
        self._ack_now = False
        t.write_seq = write_seq
        self._finish(conn, t, old)
        self._trace_end(mark, conn, t, "send", write_seq)

    def host_read(self, conn: int, read_seq: int, now_us: int | None = None) -> None:
        """The host consumed the receive ring up to read_seq."""
        if now_us is not None:
            self._advance(now_us)
        t = self.tcbs[conn]
        read_seq &= M32
        if seq_lt(read_seq, t.read_seq) or seq_gt(read_seq, t.rcv_nxt):
            raise ValueError("read_seq moves back or past rcv_nxt")
        mark = self._trace_start(t)
        old = self._min_due(t)
        self._ack_now = False
        t.read_seq = read_seq
        if t.state in RECV_STATES:
            target, left = self._window_target(t)
            if target > 0 and 2 * left <= 1 << t.rcv_log2 and target >= 2 * left:
                self.counters["window_updates"] += 1
                self._ack_now = True
        self._finish(conn, t, old)
        self._trace_end(mark, conn, t, "read", read_seq)

    def host_close(self, conn: int, now_us: int | None = None) -> None:
        """FIN after all data written so far."""
        if now_us is not None:
            self._advance(now_us)
        t = self.tcbs[conn]
        if t.fin_queued:
            return
        mark = self._trace_start(t)
        if t.state == St.ESTABLISHED:
            t.state = St.FIN_WAIT_1
        elif t.state == St.CLOSE_WAIT:
            t.state = St.LAST_ACK
        else:
            raise ValueError(f"host_close in {St(t.state).name}")
        old = self._min_due(t)
        self._ack_now = False
        t.fin_queued = 1
        self._finish(conn, t, old)
        self._trace_end(mark, conn, t, "close")

    def settle(self) -> None:
        """Every call is decided at once: nothing is ever still under way (the hardware's
        SharedHwEngine waits here for the frames it holds)."""

    def poll(self, now_us: int) -> None:
        """Advance the timer wheel to now_us."""
        self._advance(now_us)

    # ------------------------------------------------------------------ input
    def _lookup(self, frame: bytes) -> int | None:
        if len(frame) < ETH_HLEN + 24 or frame[12] != 0x08 or frame[13] != 0x00:
            return None
        ip = ETH_HLEN
        # IPv4, no options, TCP, not a fragment: anything else is the host's
        if frame[ip] != 0x45 or frame[ip + 9] != 6 or (frame[ip + 6] & 0x3F) or frame[ip + 7]:
            return None
        key = frame[ip + 16:ip + 20] + frame[ip + 22:ip + 24] + frame[ip + 12:ip + 16] + frame[ip + 20:ip + 22]
        return self._table.get(key)

    def segment_in(self, frame: bytes, now_us: int) -> None:
        self._advance(now_us)
        c = self._lookup(frame)
        if c is None:
            self.to_host.append(frame)
            self.counters["to_host"] += 1
            return
        try:
            seg = parse_segment(frame[ETH_HLEN:])
        except SegmentError as e:
            self.counters[e.reason] += 1
            return
        t = self.tcbs[c]
        mark = self._trace_start(t)
        self.counters["segs_in"] += 1
        old = self._min_due(t)
        self._ack_now = False
        # D-SACK (RFC 2883): payload below rcv_nxt is a duplicate whatever else happens to the
        # segment; the first segment sent in answer reports it (no state kept)
        if seg.payload and seq_lt(seg.seq, t.rcv_nxt) and not seg.flags & (RST | SYN):
            end = seq_add(seg.seq, len(seg.payload))
            self._dsack = (seg.seq, end if seq_lt(end, t.rcv_nxt) else t.rcv_nxt)
        self._rx(c, t, seg)
        alive = c in self.tcbs and self.tcbs[c] is t
        if alive:
            self._finish(c, t, old)
        self._dsack = None
        self._trace_end(mark, c, t, "seg", frame=frame)

    def _rx(self, c: int, t: Tcb, seg: TcpSegment) -> None:
        """RFC 9293 3.10.7.4 for the synchronized states, in Linux's order."""
        st = t.state
        flags = seg.flags
        rst, syn = bool(flags & RST), bool(flags & SYN)
        ts = seg.ts
        if t.ts_ok and not rst:
            if ts is None:
                self.counters["no_timestamp"] += 1         # accepted, as Linux does
            elif t.ts_recent_ok and seq_diff(t.ts_recent, ts[0]) > PAWS_WINDOW and \
                    ((self._age_now() - t.ts_recent_age) & 0xFFFF) <= PAWS_24DAYS:
                self.counters["paws_drops"] += 1
                self._pure_ack(c, t)
                return
        seg_len = len(seg.payload) + syn + (1 if flags & FIN else 0)
        free = self._rcv_free(t)
        acceptable = seq_ge(seq_add(seg.seq, seg_len), t.rcv_wup) and seq_le(seg.seq, seq_add(t.rcv_nxt, free))
        if not acceptable:
            if rst:
                self.counters["rst_out_of_window"] += 1
                return
            if syn:
                self._challenge(c, t)
                return
            self.counters["unacceptable"] += 1
            if st == St.TIME_WAIT and flags & FIN:
                self._arm_send(t, T_CLOSE, self.p.time_wait_us)
            self._pure_ack(c, t)
            return
        if rst:
            if seg.seq == t.rcv_nxt:
                self.counters["rst_accepted"] += 1
                self._close(c, t, None if st == St.TIME_WAIT else "rst")
            else:
                self._challenge(c, t)
            return
        if syn:
            self._challenge(c, t)
            return
        if not flags & ACK:
            self.counters["no_ack_dropped"] += 1
            return
        ack = seg.ack
        if seq_gt(ack, t.snd_max):
            self.counters["ack_beyond"] += 1
            self._pure_ack(c, t)
            return
        if seq_lt(ack, seq_add(t.snd_una, -max(t.max_window, 1))):
            self.counters["ack_too_old"] += 1
            self._challenge(c, t)
            return
        if t.ts_ok and ts is not None and seq_le(seg.seq, t.rcv_wup) and \
                (not t.ts_recent_ok or seq_ge(ts[0], t.ts_recent)):
            t.ts_recent, t.ts_recent_ok, t.ts_recent_age = ts[0], 1, self._age_now()
        if seq_ge(ack, t.snd_una):
            if not self._ack_in(c, t, seg):
                return                                # LAST_ACK -> CLOSED
        if seg.payload or flags & FIN:
            if t.state in RECV_STATES:
                self._text_in(c, t, seg)
            elif seq_lt(seg.seq, t.rcv_nxt):         # a retransmission of what we have (FIN included)
                self.counters["dup_segments"] += 1
                if t.state == St.TIME_WAIT and flags & FIN:
                    self._arm_send(t, T_CLOSE, self.p.time_wait_us)
                self._pure_ack(c, t)

    def _ack_in(self, c: int, t: Tcb, seg: TcpSegment) -> bool:
        """ACK field processing with ack in [snd_una, snd_max]; False: the connection closed."""
        ack = seg.ack
        wnd = seg.wnd << t.snd_wscale
        acked = seq_diff(ack, t.snd_una)
        if acked > 0:
            self._new_ack(c, t, ack, acked)
        elif not seg.payload and not seg.flags & FIN and wnd == t.snd_wnd and t.snd_una != t.snd_max:
            self._dup_ack(c, t)
        if t.snd_una == t.snd_max or wnd == 0:
            # probes answered, or a zero window with data in flight (the RTO's 1-byte
            # resends are the probes then): the peer is alive, never give up (Linux:
            # tcp_retransmit_timer's zero-window branch)
            t.retries = 0
        if seq_lt(t.snd_wl1, seg.seq) or (t.snd_wl1 == seg.seq and seq_le(t.snd_wl2, ack)):
            if wnd == 0 and t.snd_wnd:
                self.counters["zero_window_seen"] += 1
            t.snd_wnd = wnd
            t.snd_wl1, t.snd_wl2 = seg.seq, ack
            if wnd > t.max_window:
                t.max_window = wnd
            if wnd and t.st_kind == T_PERSIST:        # window open: leave persist, send normally
                t.st_kind = T_NONE
                t.backoff = 0
        if t.fin_queued and t.snd_una == seq_add(t.write_seq, 1):
            st = t.state
            if st == St.FIN_WAIT_1:
                t.state = St.FIN_WAIT_2
                if t.st_kind:
                    t.st_kind = T_NONE
                if self.p.fin_wait_2_us is not None:
                    self._arm_send(t, T_CLOSE, self.p.fin_wait_2_us)
            elif st == St.CLOSING:
                self._enter_time_wait(t)
            elif st == St.LAST_ACK:
                self._close(c, t, None)
                return False
        return True

    def _new_ack(self, c: int, t: Tcb, ack: int, acked: int) -> None:
        t.snd_una = ack
        if seq_lt(t.snd_nxt, ack):
            t.snd_nxt = ack
        t.retries = 0
        self.counters["bytes_acked"] += acked
        data_end = t.write_seq if t.fin_queued and ack == seq_add(t.write_seq, 1) else ack
        self.notifications.append(("acked", c, data_end))
        if t.rtt_valid and seq_ge(ack, t.rtt_seq):
            t.rtt_valid = 0
            self._rtt_sample(t, max((self.now_us - t.rtt_time) & M32, 1))
        mss = self._eff_mss(t)
        if t.in_recovery:
            if seq_gt(ack, t.recover):                # full ACK (RFC 6582 3.2 step 3)
                t.in_recovery = 0
                t.dupacks = 0
                t.cwnd = min(t.ssthresh, max(seq_diff(t.snd_max, ack), mss) + mss)
            else:                                     # partial ACK (step 4)
                self.counters["partial_acks"] += 1
                self._retransmit_una(c, t)
                t.cwnd = max(t.cwnd - acked + (mss if acked >= mss else 0), mss)
                if not t.partial_seen:
                    t.partial_seen = 1
                    self._arm_send(t, T_RTO, self._rto_backed(t))
                return
        else:
            t.dupacks = 0
            if seq_gt(ack, t.recover):
                t.recover = seq_add(ack, -1)
            if t.cwnd < t.ssthresh:
                t.cwnd += min(acked, mss)             # slow start, byte counting L = 1 SMSS
            else:
                t.ca_acc += acked
                if t.ca_acc >= t.cwnd:
                    t.ca_acc -= t.cwnd
                    t.cwnd += mss
                t.ca_acc = min(t.ca_acc, M32)
            t.cwnd = min(t.cwnd, CWND_MAX)
        if t.snd_una == t.snd_max:
            if t.st_kind == T_RTO:
                t.st_kind = T_NONE                    # RFC 6298 5.2
        else:
            self._arm_send(t, T_RTO, self._rto_backed(t))   # 5.3

    def _dup_ack(self, c: int, t: Tcb) -> None:
        self.counters["dup_acks_in"] += 1
        third = t.dupacks == 2                        # the counter saturates at 3
        t.dupacks = min(t.dupacks + 1, 3)
        mss = self._eff_mss(t)
        if t.in_recovery:
            t.cwnd = min(t.cwnd + mss, CWND_MAX)      # a segment left the network
        elif third:
            if seq_gt(t.snd_una, t.recover):          # RFC 6582 3.2 step 1
                flight = seq_diff(t.snd_max, t.snd_una)
                t.ssthresh = max(flight // 2, 2 * mss)
                t.recover = seq_add(t.snd_max, -1)
                t.in_recovery = 1
                t.partial_seen = 0
                t.rtt_valid = 0                       # Karn
                self.counters["fast_retransmits"] += 1
                self._retransmit_una(c, t)
                t.cwnd = min(t.ssthresh + 3 * mss, CWND_MAX)
            else:
                self.counters["dupacks_after_timeout"] += 1

    def _text_in(self, c: int, t: Tcb, seg: TcpSegment) -> None:
        """Segment text and FIN in ESTABLISHED / FIN_WAIT_1 / FIN_WAIT_2."""
        seq, data, fin = seg.seq, seg.payload, bool(seg.flags & FIN)
        had_ranges = t.ooo_n > 0
        d = seq_diff(t.rcv_nxt, seq)
        dup = False
        if d > 0:                                     # starts below rcv_nxt
            if d > len(data) or (d == len(data) and not fin):
                self.counters["dup_segments"] += 1
                self._pure_ack(c, t)
                return
            data, seq, dup = data[d:], t.rcv_nxt, True
            self.counters["partial_dup_segments"] += 1
        size = 1 << t.rcv_log2
        room = seq_diff(seq_add(t.read_seq, size), seq)
        if len(data) > room:
            data, fin = data[:max(room, 0)], False
            self.counters["trimmed"] += 1
            if not data:
                self._pure_ack(c, t)
                return
            dup = True                                # answer at once, like out-of-window data
        if not data and not fin:
            return
        if seq != t.rcv_nxt:
            if not data:                              # a bare FIN out of order: nothing to hold
                self.counters["ooo_segments"] += 1
                self._pure_ack(c, t)
                return
            self._ooo_in(c, t, seq, data)
            return
        ranges = t.ooo()
        end = seq_add(seq, len(data))
        start = t.rcv_nxt
        if data:
            self._write_uncovered(t, seq, data, ranges)
            t.rcv_nxt = end
            if len(data) > t.rcv_mss:
                t.rcv_mss = min(len(data), 0xFFFF)
        popped = 0
        while ranges and seq_le(ranges[0][0], t.rcv_nxt):
            s, e = ranges.pop(0)
            if seq_gt(e, t.rcv_nxt):
                t.rcv_nxt = e
            popped += 1
        filled = popped > 0
        if filled:
            t.ooo_recent >>= popped                   # the flag moves with its range (or leaves)
            t.set_ooo(ranges)
        if data or filled:
            self.counters["bytes_in"] += seq_diff(t.rcv_nxt, start)
            self.notifications.append(("rx", c, t.rcv_nxt))
        if fin and t.rcv_nxt == end:
            t.rcv_nxt = seq_add(t.rcv_nxt, 1)
            self.counters["fin_in"] += 1
            self.notifications.append(("fin", c))
            st = t.state
            if st == St.ESTABLISHED:
                t.state = St.CLOSE_WAIT
            elif st == St.FIN_WAIT_1:
                t.state = St.CLOSING
            else:
                self._enter_time_wait(t)
            self._ack_now = True
            return
        if dup or had_ranges:                         # duplicate bytes, or a gap (partly) filled
            self._ack_now = True
        elif seq_diff(t.rcv_nxt, t.rcv_wup) > t.rcv_mss:
            self._ack_now = True                      # every second full-sized segment
        elif not t.delack_on:
            self._arm_delack(t)

    def _write_uncovered(self, t: Tcb, seq: int, data: bytes, ranges: list[tuple[int, int]]) -> None:
        """Write the parts of [seq, seq + len) not held in an out-of-order range: the
        first bytes received win."""
        size = 1 << t.rcv_log2
        pos, end = seq, seq_add(seq, len(data))
        for s, e in ranges:                           # sorted, disjoint
            if seq_ge(s, end):
                break
            if seq_le(e, pos):
                continue
            if seq_lt(pos, s):
                self.mem.ring_write(t.rcv_base, size, pos, data[seq_diff(pos, seq):seq_diff(s, seq)])
            pos = e
        if seq_lt(pos, end):
            self.mem.ring_write(t.rcv_base, size, pos, data[seq_diff(pos, seq):])

    def _ooo_in(self, c: int, t: Tcb, seq: int, data: bytes) -> None:
        self.counters["ooo_segments"] += 1
        end = seq_add(seq, len(data))
        ranges = t.ooo()
        base = t.rcv_nxt
        off = lambda x: seq_diff(x, base)             # noqa: E731  (all ranges lie above rcv_nxt)
        ns, ne = seq, end
        kept = []
        for s, e in ranges:
            if off(e) < off(ns) or off(s) > off(ne):  # disjoint and not touching
                kept.append((s, e))
            else:
                if off(s) < off(ns):
                    ns = s
                if off(e) > off(ne):
                    ne = e
        new = (ns, ne)
        out = sorted(kept + [new], key=lambda r: off(r[0]))
        if len(out) > OOO_RANGES:                     # only when nothing merged
            # with SACK the held ranges were reported: forgetting one (reneging) costs a
            # Linux sender a timeout, so the new segment goes instead
            if t.sack_ok or out[-1] == new:
                self.counters["ooo_drops"] += 1
                self._pure_ack(c, t)
                return
            out.pop()
            self.counters["ooo_evictions"] += 1
        self._write_uncovered(t, seq, data, ranges)
        t.set_ooo(out, out.index(new))
        self._pure_ack(c, t)

    # ------------------------------------------------------------------ output
    def _eff_mss(self, t: Tcb) -> int:
        return t.mss - (TS_OPT_LEN if t.ts_ok else 0)

    def _tsval(self, t: Tcb) -> int:
        return (now_tsclock(self.now_us, self.p) + t.ts_offset) & M32

    def _age_now(self) -> int:
        return (self.now_us >> PAWS_AGE_SHIFT) & 0xFFFF

    def _rcv_free(self, t: Tcb) -> int:
        return max(seq_diff(seq_add(t.read_seq, 1 << t.rcv_log2), t.rcv_nxt), 0)

    def _window_target(self, t: Tcb) -> tuple[int, int]:
        """(window we would offer, what is left of the one advertised)."""
        size = 1 << t.rcv_log2
        free = self._rcv_free(t)
        target = 0 if free < size >> 1 and free < t.rcv_mss else free
        left = max(seq_diff(seq_add(t.rcv_wup, t.rcv_wf << t.rcv_wscale), t.rcv_nxt), 0)
        return target, left

    def _emit(self, c: int, t: Tcb, flags: int, seq: int, payload: bytes = b"") -> None:
        """One segment; every segment carries ACK, the window and (if on) timestamps."""
        h = self.hdrs[c]
        target, left = self._window_target(t)
        wf = min(max(target, left) >> t.rcv_wscale, 0xFFFF)
        t.rcv_wf = wf
        t.rcv_wup = t.rcv_nxt
        t.delack_on = 0
        self._ack_now = False
        opts = tcp_options(ts=(self._tsval(t), t.ts_recent if t.ts_recent_ok else 0)) if t.ts_ok else b""
        blocks = self._sack_blocks(t)
        if blocks:
            opts += sack_option(blocks)
            self.counters["sack_segs"] += 1
            if self._dsack is not None:
                self.counters["dsacks"] += 1
        self._dsack = None                            # the first segment in answer carries it
        pkt = build_packet(h.lip, h.rip, h.lport, h.rport, seq, t.rcv_nxt, flags | ACK, wf, payload,
                           options=opts, ident=0, ttl=self.p.ttl)
        self.to_wire.append(h.eth + pkt)
        self.counters["segs_out"] += 1
        if wf == 0:
            self.counters["zero_window_sent"] += 1

    def _sack_blocks(self, t: Tcb) -> list[tuple[int, int]]:
        """The blocks the next segment carries: the D-SACK block, then the range with the
        latest out-of-order segment (RFC 2018 4), then the others nearest rcv_nxt first;
        at most 3 beside timestamps, 4 without."""
        if not t.sack_ok:
            return []
        blocks = [] if self._dsack is None else [self._dsack]
        ranges = t.ooo()
        if t.ooo_recent:
            i = t.ooo_recent.bit_length() - 1
            ranges = [ranges[i]] + ranges[:i] + ranges[i + 1:]
        blocks += ranges
        return blocks[:3 if t.ts_ok else 4]

    def _seg_mss(self, t: Tcb) -> int:
        """Payload room of the next segment: eff_mss less its SACK option."""
        n = len(self._sack_blocks(t))
        return self._eff_mss(t) - (sack_option_len(n))

    def _pure_ack(self, c: int, t: Tcb) -> None:
        self.counters["acks_out"] += 1
        self._emit(c, t, ACK, t.snd_max)

    def _challenge(self, c: int, t: Tcb) -> None:
        self.counters["challenge_acks"] += 1
        self._pure_ack(c, t)

    def _send_data(self, c: int, t: Tcb, seq: int, n: int, fin: bool) -> None:
        payload = self.mem.ring_read(t.snd_base, 1 << t.snd_log2, seq, n) if n else b""
        end = seq_add(seq, n + fin)
        flags = ACK | (FIN if fin else 0) | (PSH if n and seq_add(seq, n) == t.write_seq else 0)
        if seq_lt(seq, t.snd_max):
            self.counters["retransmits"] += 1
            self.counters["bytes_retrans"] += min(n, max(seq_diff(t.snd_max, seq), 0))
        new = max(seq_diff(end, t.snd_max), 0)
        if new:
            self.counters["bytes_out"] += min(new, n)
            if not t.rtt_valid:
                t.rtt_valid, t.rtt_seq, t.rtt_time = 1, end, self.now_us & M32
            t.snd_max = end
        self._emit(c, t, flags, seq, payload)
        if t.st_kind != T_RTO:                        # RFC 6298 5.1
            self._arm_send(t, T_RTO, self._rto_backed(t))

    def _retransmit_una(self, c: int, t: Tcb) -> None:
        """Resend the first unacknowledged segment (fast retransmit, partial ACK, RTO)."""
        avail = max(seq_diff(t.write_seq, t.snd_una), 0)
        n = min(self._seg_mss(t), avail, max(t.snd_wnd, 1))
        fin = bool(t.fin_queued) and n == avail
        if n or fin:
            self._send_data(c, t, t.snd_una, n, fin)
            end = seq_add(t.snd_una, n + fin)
            if seq_lt(t.snd_nxt, end):
                t.snd_nxt = end

    def _output(self, c: int, t: Tcb) -> None:
        while True:
            mss = self._seg_mss(t)
            avail = max(seq_diff(t.write_seq, t.snd_nxt), 0)
            fin_pending = bool(t.fin_queued) and seq_le(t.snd_nxt, t.write_seq)
            if avail == 0 and not fin_pending:
                return
            wnd_room = seq_diff(seq_add(t.snd_una, t.snd_wnd), t.snd_nxt)
            cwnd_room = seq_diff(seq_add(t.snd_una, t.cwnd), t.snd_nxt)
            usable = min(wnd_room, cwnd_room)
            if usable <= 0:
                return
            n = min(avail, mss, usable)
            if n < mss and n < avail and cwnd_room < wnd_room:
                return                                # wait for the ACK clock
            fin = fin_pending and n == avail and usable > n
            if n == 0 and not fin:
                return
            seq = t.snd_nxt
            self._send_data(c, t, seq, n, fin)
            t.snd_nxt = seq_add(seq, n + fin)

    def _finish(self, c: int, t: Tcb, old_due: int | None) -> None:
        """After an event: transmit, owed ACK, timers, wheel placement."""
        if t.state in SEND_STATES:
            self._output(c, t)
        if self._ack_now:
            self.counters["acks_out"] += 1
            self._emit(c, t, ACK, t.snd_max)
        if t.state in SEND_STATES:
            pending = seq_lt(t.snd_nxt, t.write_seq) or (t.fin_queued and seq_le(t.snd_nxt, t.write_seq))
            if t.snd_una != t.snd_max:
                if t.st_kind != T_RTO:
                    self._arm_send(t, T_RTO, self._rto_backed(t))
            elif pending:
                if t.st_kind != T_PERSIST:
                    self._arm_send(t, T_PERSIST, self._rto_backed(t))
            elif t.st_kind in (T_RTO, T_PERSIST):
                t.st_kind = T_NONE
        if self.p.check_tcb:
            self.check(c)
        self._place(c, t, old_due)

    def _enter_time_wait(self, t: Tcb) -> None:
        t.state = St.TIME_WAIT
        t.delack_on = 0
        self._arm_send(t, T_CLOSE, self.p.time_wait_us)

    def _close(self, c: int, t: Tcb, why: str | None) -> None:
        if why == "rst":
            self.notifications.append(("rst", c))
        elif why is not None:
            self.notifications.append(("error", c, why))
        t.state = St.CLOSED
        self._forget(c, t)
        self.counters["closed"] += 1
        self.notifications.append(("closed", c))

    def _forget(self, c: int, t: Tcb) -> None:
        if t.wh_in:
            self._wheel_remove(c, t)
        t.delack_on = 0
        t.st_kind = T_NONE
        del self._table[self.hdrs[c].lookup]
        del self.tcbs[c]
        self.final[c] = t
        self._free.append(c)

    # ------------------------------------------------------------------ RTT and RTO
    def _rtt_sample(self, t: Tcb, r: int) -> None:
        self.counters["rtt_samples"] += 1
        if not t.srtt8:
            t.srtt8 = min(r << 3, M32)
            t.rttvar4 = min(r << 1, M32)
        else:
            err = r - (t.srtt8 >> 3)
            t.srtt8 = min(max(t.srtt8 + err, 8), M32)
            t.rttvar4 = min(t.rttvar4 - (t.rttvar4 >> 2) + abs(err), M32)
        t.backoff = 0

    def _rto(self, t: Tcb) -> int:
        return rto_of(t, self.p)

    def _rto_backed(self, t: Tcb) -> int:
        return min(self._rto(t) << t.backoff, self.p.rto_max_us)

    # ------------------------------------------------------------------ timers
    def _due(self, interval_us: int) -> int:
        tick = self.p.tick_us
        return (-(-(self.now_us + interval_us) // tick)) & M32

    def _arm_delack(self, t: Tcb) -> None:
        t.delack_on = 1
        t.delack_due = self._due(self.p.delack_us)

    def _arm_send(self, t: Tcb, kind: int, interval_us: int) -> None:
        t.st_kind = kind
        t.st_due = self._due(interval_us)

    def _min_due(self, t: Tcb) -> int | None:
        m = t.delack_due if t.delack_on else None
        if t.st_kind and (m is None or _tick_lt(t.st_due, m)):
            m = t.st_due
        return m

    def _place(self, c: int, t: Tcb, old_due: int | None) -> None:
        new = self._min_due(t)
        if new is None:
            return                                    # stays linked (if it is) until its slot comes
        if not t.wh_in:
            self._wheel_insert(c, t, new)
        elif old_due is None or _tick_lt(new, old_due):
            self._wheel_remove(c, t)
            self._wheel_insert(c, t, new)

    def _wheel_insert(self, c: int, t: Tcb, due: int) -> None:
        slot = due & (self.p.wheel_slots - 1)
        head = self._wheel[slot]
        t.wh_in, t.wh_slot, t.wh_prev, t.wh_next = 1, slot, NIL, head
        if head != NIL:
            self.tcbs[head].wh_prev = c
        self._wheel[slot] = c
        self._expect(c, due)

    def _expect(self, c: int, due: int) -> None:
        """Model only: poll() has work for c at tick due (next_deadline_us)."""
        self._placed[c] = due
        now_tick = self.now_us // self.p.tick_us
        heapq.heappush(self._deadlines, (now_tick + seq_diff(due, now_tick & M32), c, due))

    def _wheel_remove(self, c: int, t: Tcb) -> None:
        if t.wh_prev == NIL:
            self._wheel[t.wh_slot] = t.wh_next
        else:
            self.tcbs[t.wh_prev].wh_next = t.wh_next
        if t.wh_next != NIL:
            self.tcbs[t.wh_next].wh_prev = t.wh_prev
        t.wh_in, t.wh_prev, t.wh_next = 0, NIL, NIL
        self._placed.pop(c, None)

    def _advance(self, now_us: int) -> None:
        if now_us < self.now_us:
            raise ValueError(f"time went back: {now_us} < {self.now_us}")
        self.now_us = now_us
        p = self.p
        now_tick = (now_us // p.tick_us) & M32
        d = (now_tick - self._wheel_tick) & M32
        if d == 0:
            return
        n = p.wheel_slots
        first = (self._wheel_tick + 1) & M32 if d <= n else (now_tick - n + 1) & M32
        wheel = self._wheel
        for i in range(min(d, n)):
            tick = (first + i) & M32
            if wheel[tick & (n - 1)] != NIL:
                self._visit(tick)
        self._wheel_tick = now_tick

    def _visit(self, tick: int) -> None:
        slot = tick & (self.p.wheel_slots - 1)
        members = []
        c = self._wheel[slot]
        while c != NIL:
            members.append(c)
            c = self.tcbs[c].wh_next
        for c in members:
            t = self.tcbs.get(c)
            if t is None or not t.wh_in or t.wh_slot != slot:
                continue
            m = self._min_due(t)
            if m is None:
                self._wheel_remove(c, t)
            elif _tick_le(m, tick):
                self._wheel_remove(c, t)
                self._fire(c, t, tick)
            elif m & (self.p.wheel_slots - 1) != slot:
                self._wheel_remove(c, t)
                self._wheel_insert(c, t, m)
            else:                                     # a later round of this slot: it stays
                self._expect(c, m)

    def _fire(self, c: int, t: Tcb, tick: int) -> None:
        mark = self._trace_start(t)
        self._fire_due(c, t, tick)
        self._trace_end(mark, c, t, "timer", tick)

    def _fire_due(self, c: int, t: Tcb, tick: int) -> None:
        self._ack_now = False
        if t.delack_on and _tick_le(t.delack_due, tick):
            t.delack_on = 0
            self.counters["delayed_acks"] += 1
            self._pure_ack(c, t)
        if t.st_kind and _tick_le(t.st_due, tick):
            kind = t.st_kind
            t.st_kind = T_NONE
            if kind == T_CLOSE:
                self.counters["time_wait_expired" if t.state == St.TIME_WAIT else "fin_wait_2_expired"] += 1
                self._close(c, t, None)
                return
            if kind == T_RTO:
                if not self._on_rto(c, t):
                    return
            elif kind == T_PERSIST:
                if not self._on_persist(c, t):
                    return
        self._finish(c, t, None)

    def _on_rto(self, c: int, t: Tcb) -> bool:
        if t.state not in SEND_STATES or t.snd_una == t.snd_max:
            return True
        t.retries += 1
        if t.retries > self.p.max_retries:
            self.counters["gave_up"] += 1
            self._close(c, t, "timeout")
            return False
        self.counters["timeouts"] += 1
        mss = self._eff_mss(t)
        if t.retries == 1:                            # RFC 5681 3.1: once per loss episode
            t.ssthresh = max(seq_diff(t.snd_max, t.snd_una) // 2, 2 * mss)
        t.cwnd = mss
        t.ca_acc = 0
        t.in_recovery = 0
        t.dupacks = 0
        t.recover = seq_add(t.snd_max, -1)
        t.snd_nxt = t.snd_una
        t.backoff = min(t.backoff + 1, 15)
        t.rtt_valid = 0                               # Karn
        self._retransmit_una(c, t)
        self._arm_send(t, T_RTO, self._rto_backed(t))
        return True

    def _on_persist(self, c: int, t: Tcb) -> bool:
        if t.state not in SEND_STATES or t.snd_una != t.snd_max:
            return True
        t.retries += 1
        if t.retries > self.p.max_retries:
            self.counters["gave_up"] += 1
            self._close(c, t, "timeout")
            return False
        self.counters["probes"] += 1
        self.counters["acks_out"] += 1
        self._emit(c, t, ACK, seq_add(t.snd_una, -1))   # Linux's probe: an old sequence number
        t.backoff = min(t.backoff + 1, 15)
        self._arm_send(t, T_PERSIST, self._rto_backed(t))
        return True


def rto_of(t: Tcb, p: EngineParams) -> int:
    """RFC 6298's RTO before back-off, in microseconds."""
    if not t.srtt8:
        return p.rto_initial_us
    return min(max((t.srtt8 >> 3) + max(p.tick_us, t.rttvar4), p.rto_min_us), p.rto_max_us)

def handoff_tcb(hs: Handoff, p: EngineParams) -> Tcb:
    """The TCB install() makes of a Handoff, but for what needs the engine's clock
    (ts_offset, ts_recent_age: 0 here): what the driver sends the hardware's install
    command, which sets those two from its clock and the command's TSval."""
    ws = bool(hs.wscale_ok)
    ts = bool(hs.timestamps)
    t = Tcb()
    t.state = St.ESTABLISHED
    t.snd_una, t.snd_nxt, t.snd_max, t.write_seq = hs.snd_una, hs.snd_nxt, hs.snd_nxt, hs.write_seq
    t.snd_wscale = hs.snd_wscale if ws else 0
    t.rcv_wscale = hs.rcv_wscale if ws else 0
    t.snd_wnd = min(hs.snd_wnd, 0xFFFF << t.snd_wscale)
    t.max_window = max(min(hs.max_window, 0xFFFF << t.snd_wscale), t.snd_wnd)
    t.snd_wl1 = hs.rcv_nxt if hs.snd_wl1 is None else hs.snd_wl1
    t.snd_wl2 = hs.snd_una
    t.rcv_nxt, t.read_seq = hs.rcv_nxt, hs.read_seq
    t.rcv_wup = hs.rcv_wup if seq_le(hs.rcv_wup, hs.rcv_nxt) else hs.rcv_nxt
    # the advertised edge, never beyond what the ring can take
    edge = seq_add(t.rcv_wup, hs.rcv_wnd)
    ring_end = seq_add(hs.read_seq, hs.rcv_size)
    if seq_gt(edge, ring_end):
        edge = ring_end
    t.rcv_wf = min(max(seq_diff(edge, t.rcv_wup), 0) >> t.rcv_wscale, 0xFFFF)
    t.mss = hs.mss
    t.ts_ok = int(ts)
    t.sack_ok = int(bool(hs.sack_ok) and p.sack)
    eff = t.mss - (TS_OPT_LEN if ts else 0)
    t.rcv_mss = min(eff, 536)
    if ts and hs.ts_recent is not None:
        t.ts_recent, t.ts_recent_ok = hs.ts_recent & M32, 1
    t.cwnd = min(hs.cwnd if hs.cwnd else p.init_cwnd * eff, CWND_MAX)
    t.ssthresh = min(hs.ssthresh, M32) if hs.ssthresh else INFINITE_SSTHRESH
    t.recover = seq_add(hs.snd_una, -1)
    if hs.srtt_us:
        t.srtt8 = min(max(hs.srtt_us, 1) << 3, M32)
        t.rttvar4 = min((hs.rttvar_us if hs.rttvar_us is not None else hs.srtt_us // 2) << 2, M32)
    t.wh_prev = t.wh_next = NIL
    t.snd_base, t.snd_log2 = hs.snd_buf, hs.snd_size.bit_length() - 1
    t.rcv_base, t.rcv_log2 = hs.rcv_buf, hs.rcv_size.bit_length() - 1
    return t


def sack_option_len(n: int) -> int:
    return 4 + 8 * n if n else 0


def sack_option(blocks: list[tuple[int, int]]) -> bytes:
    """NOP NOP SACK(5, 2 + 8n) and the blocks, as Linux lays it out after NOP NOP TS."""
    out = bytes((1, 1, 5, 2 + 8 * len(blocks)))
    for s, e in blocks:
        out += (s & M32).to_bytes(4, "big") + (e & M32).to_bytes(4, "big")
    return out


def now_tsclock(now_us: int, p: EngineParams) -> int:
    return (now_us // p.ts_tick_us) & M32
