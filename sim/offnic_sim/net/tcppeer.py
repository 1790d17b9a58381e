"""A sans-IO TCP endpoint ("peer model") for driving a hardware TCP offload engine in pure
simulation, thousands of connections at a time. Proven interoperable against real Linux
TCP by tests/linux/test_tcppeer.py (TAP device in a network namespace).

One `TcpPeer` is one connection endpoint. It owns no socket, no thread and no clock: the
caller hands it IPv4 packets with `segment_in(packet, now)` and collects the packets it
wants to send with `poll(now)`. `now` is any monotonic time in seconds (simulated or
wall clock); given the same inputs and `seed` it behaves identically. Call `poll()` after
every `segment_in`/`send`/`recv`/`close`/`abort`/`connect`, and again once
`next_deadline()` has passed.

Written from RFC 9293 (TCP), RFC 7323 (window scaling, timestamps, PAWS), RFC 6298 (RTO),
RFC 5681 (congestion control), RFC 6582 (NewReno), RFC 5961 (RST/SYN/ACK hardening),
RFC 6691 (MSS) and RFC 1122, not from any implementation's source. Where the RFCs leave
room, or their literal reading fails in practice, the choice follows BSD or Linux
behaviour and says so in a comment (pure ACKs carry snd_max; recent duplicates refresh
TS.Recent; zero-length segments are accepted at the right window edge; a RST ends
TIME-WAIT early).

Implemented: active/passive/simultaneous open, MSS option, window scaling, timestamps
with PAWS, receive buffer with no-shrink window advertisement and receiver SWS
avoidance, out-of-order reassembly, delayed ACK (every `ack_every` segments or
`delayed_ack` seconds; off with None), immediate ACK on out-of-order or gap-filling data,
sending within min(peer window, cwnd) with sender SWS avoidance (optional Nagle), slow
start and congestion avoidance, RTO with Karn's rule (or timestamps) and exponential
back-off, fast retransmit with NewReno partial-ACK recovery, go-back-N after a timeout,
zero-window probing with a backed-off persist timer, FIN in both directions, TIME-WAIT
(short, configurable), RFC 5961 RST / SYN / ACK checks with challenge ACKs, RST replies
in CLOSED/LISTEN, all sequence arithmetic mod 2^32.

Not implemented: SACK (never advertised, so a peer never sends it), urgent data, ECN,
limited transmit (RFC 3042), keepalives, path MTU discovery, IP fragments (dropped and
counted; IP options are skipped), challenge-ACK rate limiting, data on SYN segments
(ignored, the peer resends it), a listener accepting more than one connection.
"""
from __future__ import annotations

import enum
import ipaddress
import random
import struct
from collections import Counter
from dataclasses import dataclass

from offnic_sim.net.ipfrag import IP_DF, header_ok, ipv4_header, ones_sum16, parse as parse_ipv4

PROTO_TCP = 6
SEQ_MASK = 0xFFFFFFFF
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80
OPT_END, OPT_NOP, OPT_MSS, OPT_WSCALE, OPT_SACK_PERM, OPT_TS = 0, 1, 2, 3, 4, 8
TS_OPT_LEN = 12            # NOP NOP TS(10): what every segment carries once negotiated
DEFAULT_MSS = 536          # RFC 9293 3.7.1: IPv4 send MSS when the peer sends no option
MAX_WSCALE = 14            # RFC 7323 2.3


# ----------------------------------------------------------------------------- sequence numbers

def seq_add(a: int, n: int) -> int:
    return (a + n) & SEQ_MASK


def seq_diff(a: int, b: int) -> int:
    """a - b as a signed distance in [-2^31, 2^31): how far a is ahead of b."""
    d = (a - b) & SEQ_MASK
    return d - (1 << 32) if d & 0x80000000 else d


def seq_lt(a: int, b: int) -> bool:
    return seq_diff(a, b) < 0


def seq_le(a: int, b: int) -> bool:
    return seq_diff(a, b) <= 0


def seq_gt(a: int, b: int) -> bool:
    return seq_diff(a, b) > 0


def seq_ge(a: int, b: int) -> bool:
    return seq_diff(a, b) >= 0


def seq_max(a: int, b: int) -> int:
    return a if seq_ge(a, b) else b


def seq_in(x: int, lo: int, hi: int) -> bool:
    """lo <= x < hi modulo 2^32 (empty when lo == hi)."""
    return (x - lo) & SEQ_MASK < (hi - lo) & SEQ_MASK


# ----------------------------------------------------------------------------- wire format

class SegmentError(ValueError):
    """A packet the endpoint cannot use; `reason` is the counter it increments:
    'bad_checksum', 'malformed', 'not_tcp' or 'ip_fragment'."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(slots=True)
class TcpSegment:
    """A parsed IPv4/TCP segment. Option fields are None when the option is absent."""

    src: bytes
    dst: bytes
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    wnd: int                       # raw 16-bit field (scaled by the receiver's shift)
    payload: bytes = b""
    mss: int | None = None
    wscale: int | None = None
    ts: tuple[int, int] | None = None   # (TSval, TSecr)
    sack_perm: bool = False

    @property
    def syn(self) -> bool:
        return bool(self.flags & SYN)

    @property
    def fin(self) -> bool:
        return bool(self.flags & FIN)

    @property
    def rst(self) -> bool:
        return bool(self.flags & RST)

    @property
    def has_ack(self) -> bool:
        return bool(self.flags & ACK)

    @property
    def seg_len(self) -> int:
        """Sequence space the segment occupies (payload + SYN + FIN)."""
        return len(self.payload) + (1 if self.flags & SYN else 0) + (1 if self.flags & FIN else 0)


def flag_names(flags: int) -> str:
    return "".join(c for bit, c in ((SYN, "S"), (FIN, "F"), (RST, "R"), (PSH, "P"), (ACK, "."), (URG, "U"))
                   if flags & bit)


def _parse_options(opts: bytes, seg: TcpSegment) -> None:
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == OPT_END:
            break
        if kind == OPT_NOP:
            i += 1
            continue
        if i + 1 >= len(opts):
            break
        ln = opts[i + 1]
        if ln < 2 or i + ln > len(opts):
            break              # malformed option list: ignore the rest, keep the segment
        if kind == OPT_MSS and ln == 4:
            seg.mss = int.from_bytes(opts[i + 2:i + 4], "big")
        elif kind == OPT_WSCALE and ln == 3:
            seg.wscale = opts[i + 2]
        elif kind == OPT_SACK_PERM and ln == 2:
            seg.sack_perm = True
        elif kind == OPT_TS and ln == 10:
            seg.ts = struct.unpack("!II", opts[i + 2:i + 10])
        i += ln


def parse_segment(packet: bytes, verify: bool = True) -> TcpSegment:
    """The TCP segment in an IPv4 packet; raises SegmentError. `verify` checks the IP
    header and TCP checksums. Bytes past the IP total length (link padding) are ignored."""
    if len(packet) < 20:
        raise SegmentError("malformed", "shorter than an IPv4 header")
    ihl = (packet[0] & 15) * 4
    if verify and not header_ok(packet[:ihl] if 20 <= ihl <= len(packet) else packet[:20]):
        raise SegmentError("bad_checksum", "IPv4 header")
    try:
        ip = parse_ipv4(packet)
    except ValueError as e:
        raise SegmentError("malformed", str(e)) from None
    if ip.proto != PROTO_TCP:
        raise SegmentError("not_tcp")
    if ip.is_fragment:
        raise SegmentError("ip_fragment")
    if not ip.ihl + 20 <= ip.tot_len <= len(packet):
        raise SegmentError("malformed", f"total length {ip.tot_len} of {len(packet)} bytes")
    seg = packet[ip.ihl:ip.tot_len]
    if verify:
        pseudo = ip.src + ip.dst + struct.pack("!BBH", 0, PROTO_TCP, len(seg))
        if ones_sum16(pseudo + seg) != 0xFFFF:
            raise SegmentError("bad_checksum", "TCP")
    sport, dport, seq, ack, off, flags, wnd = struct.unpack("!HHIIBBH", seg[:16])
    doff = (off >> 4) * 4
    if not 20 <= doff <= len(seg):
        raise SegmentError("malformed", f"data offset {doff}")
    out = TcpSegment(ip.src, ip.dst, sport, dport, seq, ack, flags, wnd, bytes(seg[doff:]))
    if doff > 20:
        _parse_options(seg[20:doff], out)
    return out


def tcp_options(*, mss: int | None = None, wscale: int | None = None, ts: tuple[int, int] | None = None,
                sack_perm: bool = False) -> bytes:
    """Options in Linux's order and alignment (MSS, SACK-permitted/TS, NOP+WS), padded to
    a multiple of 4 with END."""
    o = b""
    if mss is not None:
        o += struct.pack("!BBH", OPT_MSS, 4, mss)
    if ts is not None:
        o += (struct.pack("!BB", OPT_SACK_PERM, 2) if sack_perm else b"\x01\x01")
        o += struct.pack("!BBII", OPT_TS, 10, ts[0] & SEQ_MASK, ts[1] & SEQ_MASK)
    elif sack_perm:
        o += b"\x01\x01" + struct.pack("!BB", OPT_SACK_PERM, 2)
    if wscale is not None:
        o += b"\x01" + struct.pack("!BBB", OPT_WSCALE, 3, wscale)
    return o + bytes(-len(o) % 4)


def build_packet(src: bytes | str, dst: bytes | str, sport: int, dport: int, seq: int, ack: int, flags: int,
                 wnd: int, payload: bytes = b"", *, options: bytes = b"", ident: int = 0, ttl: int = 64,
                 df: bool = True) -> bytes:
    """A complete IPv4/TCP packet with correct checksums (also for forging segments)."""
    src, dst = _ip_bytes(src), _ip_bytes(dst)
    options = options + bytes(-len(options) % 4)
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq & SEQ_MASK, ack & SEQ_MASK, (20 + len(options)) // 4 << 4,
                      flags, wnd, 0, 0) + options
    seg = hdr + payload
    csum = ~ones_sum16(src + dst + struct.pack("!BBH", 0, PROTO_TCP, len(seg)) + seg) & 0xFFFF
    seg = seg[:16] + csum.to_bytes(2, "big") + seg[18:]
    return ipv4_header(src, dst, PROTO_TCP, len(seg), ident & 0xFFFF, ttl=ttl, frag_off=IP_DF if df else 0) + seg


def _ip_bytes(ip: bytes | str) -> bytes:
    return ip if isinstance(ip, bytes) else ipaddress.IPv4Address(ip).packed


# ----------------------------------------------------------------------------- the endpoint

class TcpState(enum.Enum):
    """RFC 9293 connection states; `.value` is the RFC's spelling."""

    CLOSED = "CLOSED"
    LISTEN = "LISTEN"
    SYN_SENT = "SYN-SENT"
    SYN_RECEIVED = "SYN-RECEIVED"
    ESTABLISHED = "ESTABLISHED"
    FIN_WAIT_1 = "FIN-WAIT-1"
    FIN_WAIT_2 = "FIN-WAIT-2"
    CLOSE_WAIT = "CLOSE-WAIT"
    CLOSING = "CLOSING"
    LAST_ACK = "LAST-ACK"
    TIME_WAIT = "TIME-WAIT"


S = TcpState
# States in which data and FIN may still be (re)transmitted.
SEND_STATES = frozenset({S.ESTABLISHED, S.CLOSE_WAIT, S.FIN_WAIT_1, S.CLOSING, S.LAST_ACK})
# States in which segment text is accepted (RFC 9293 3.10.7.4, seventh step).
RECV_STATES = frozenset({S.ESTABLISHED, S.FIN_WAIT_1, S.FIN_WAIT_2})


@dataclass
class TcpConfig:
    """Tunables of one endpoint. Times in seconds."""

    mss: int = 1460                      # advertised MSS and cap on what we send (MTU - 40)
    rcv_buf: int = 256 * 1024            # receive buffer: bounds the advertised window
    snd_buf: int | None = None           # send() accepts at most this much unacked data; None = unlimited
    window_scaling: bool = True
    wscale: int | None = None            # our shift; None = the smallest that covers rcv_buf
    timestamps: bool = True
    require_timestamps: bool = True      # once negotiated, drop non-RST segments without TSopt (RFC 7323 3.2)
    ts_hz: int = 1000                    # TSval clock rate (RFC 7323: 1 ms .. 1 s per tick)
    delayed_ack: float | None = 0.040    # None: ACK every in-order segment at once
    ack_every: int = 2                   # ACK at once after this many unacknowledged segments
    nagle: bool = False
    init_cwnd: int = 10                  # segments (RFC 6928)
    rto_initial: float = 1.0             # RFC 6298 2.1
    rto_min: float = 0.2                 # RFC 6298 says 1 s; 200 ms is what Linux uses
    rto_max: float = 60.0
    rto_after_syn_loss: float = 3.0      # RFC 6298 5.7
    clock_granularity: float = 0.001     # G in RFC 6298
    persist_max: float = 60.0
    dupack_threshold: int = 3
    time_wait: float = 1.0               # 2*MSL would be minutes; short so tests move on
    fin_wait_2_timeout: float | None = None
    syn_retries: int = 6
    max_retries: int = 15                # consecutive RTOs before giving up ("timeout")
    ttl: int = 64
    rst_when_closed: bool = True         # answer segments in CLOSED/LISTEN with RST (RFC 9293)


class TcpPeer:
    """One TCP connection endpoint. `local` and `remote` are (IPv4 address, port); a
    listener may leave `remote` None (it takes the first SYN's source). `seed` makes the
    ISN, the timestamp clock offset and IP identifiers; `isn` overrides the ISN.

    Read-only state: `state` (TcpState), `counters` (Counter), `history` (states
    visited), `error` (None, 'reset', 'refused' or 'timeout'), and the RFC variables
    snd_una, snd_nxt, snd_max, snd_wnd, rcv_nxt, rcv_adv, cwnd, ssthresh, srtt, rto, ..."""

    def __init__(self, local: tuple[str, int], remote: tuple[str, int] | None = None,
                 config: TcpConfig | None = None, *, seed: int = 0, isn: int | None = None):
        self.cfg = config or TcpConfig()
        c = self.cfg
        self.local = local
        self.remote = remote
        self._lip = _ip_bytes(local[0])
        self._rip = _ip_bytes(remote[0]) if remote else None
        rng = random.Random(f"tcppeer/{seed}/{local}/{remote}")
        self.iss = (rng.getrandbits(32) if isn is None else isn) & SEQ_MASK
        self._ts_base = rng.getrandbits(32)
        self._ip_id = rng.getrandbits(16)
        self.counters: Counter[str] = Counter()
        self.history: list[TcpState] = [S.CLOSED]
        self.error: str | None = None
        self._state = S.CLOSED
        self._passive = False
        self._now = 0.0
        self._out: list[bytes] = []
        # send side
        self.snd_una = self.snd_nxt = self.snd_max = self.iss
        self.snd_base = seq_add(self.iss, 1)       # sequence number of _sbuf[_shead]
        self._sbuf = bytearray()
        self._shead = 0
        self.snd_wnd = 0
        self.max_snd_wnd = 0
        self.snd_wl1 = self.snd_wl2 = 0
        self.snd_wscale = 0                         # applied to windows we receive
        self.peer_mss = DEFAULT_MSS
        self.snd_mss = min(DEFAULT_MSS, c.mss)
        self.fin_queued = False
        self.fin_seq = 0
        self._syn_due = False
        self._syn_time: float | None = None
        self._syn_retransmitted = False
        self._syn_wnd = 0                           # window field of the SYN we sent
        # receive side
        self.irs = 0
        self.rcv_nxt = 0
        self.rcv_adv = 0                            # right edge of the window we advertised
        self.rcv_wscale = 0                         # applied to windows we send
        self._rbuf = bytearray()
        self._rcv64 = 0                             # rcv_nxt unwrapped, for the reassembly list
        self._ooo: list[tuple[int, bytes]] = []     # (unwrapped start, bytes), sorted, disjoint
        self._fin64: int | None = None              # unwrapped position of an out-of-order FIN
        self.fin_received = False
        self._segs_unacked = 0
        self._delack_at: float | None = None
        self.last_ack_sent = 0
        # options
        auto = 0
        while auto < MAX_WSCALE and c.rcv_buf >> auto > 0xFFFF:
            auto += 1
        self._ws_offer = min(c.wscale if c.wscale is not None else auto, MAX_WSCALE)
        self.ws_ok = False
        self.ts_ok = False
        self.ts_recent = 0
        # congestion control and timers
        self.cwnd = c.init_cwnd * self.snd_mss
        self.ssthresh = 1 << 30
        self._ca_acc = 0
        self.in_recovery = False
        self._partial_seen = False
        self.recover = self.iss
        self.dupacks = 0
        self.srtt: float | None = None
        self.rttvar = 0.0
        self._rto_base = c.rto_initial             # RFC 6298 value, without back-off
        self.rto = c.rto_initial                   # current value, with back-off
        self._rtt_seq: int | None = None
        self._rtt_time = 0.0
        self._rtt_tsval = 0
        self._rto_at: float | None = None
        self._persist_at: float | None = None
        self._persist_backoff = 0
        self._tw_at: float | None = None
        self._fw2_at: float | None = None
        self._retries = 0

    # ------------------------------------------------------------------ handover constructor
    @classmethod
    def established(cls, local: tuple[str, int], remote: tuple[str, int], *, snd_nxt: int, rcv_nxt: int,
                    snd_wnd: int, now: float = 0.0, mss: int = 1460, snd_wscale: int = 0, rcv_wscale: int = 0,
                    window_scaling: bool | None = None, timestamps: bool = False, ts_recent: int = 0,
                    ts_val: int | None = None, rcv_wnd: int | None = None, unacked: bytes = b"",
                    pending: bytes = b"", config: TcpConfig | None = None, seed: int = 0) -> "TcpPeer":
        """An endpoint already ESTABLISHED, to pair with a connection handed over mid-life.

        snd_nxt / rcv_nxt: the next sequence numbers this endpoint sends / expects.
        `unacked` is data this endpoint already sent (ending at snd_nxt) that is not yet
        acknowledged; it is retransmitted as needed. `pending` is queued, not yet sent
        (the same as calling send() afterwards). snd_wnd: the peer's window in bytes
        (already scaled); mss: the peer's MSS. snd_wscale / rcv_wscale: the shifts of the
        windows received / sent (window_scaling defaults to either being nonzero).
        timestamps: negotiated; ts_recent the last TSval seen from the peer; ts_val our
        TSval at `now` (default from the seed). rcv_wnd: the window last advertised to the
        peer (never shrunk; default the free receive buffer)."""
        p = cls(local, remote, config, seed=seed, isn=seq_add(snd_nxt, -1 - len(unacked)))
        p._now = now
        p.snd_una = p.snd_base = seq_add(snd_nxt, -len(unacked))
        p.snd_nxt = p.snd_max = snd_nxt & SEQ_MASK
        p._sbuf = bytearray(unacked) + pending
        p.irs = seq_add(rcv_nxt, -1)
        p.rcv_nxt = p.last_ack_sent = rcv_nxt & SEQ_MASK
        p.ws_ok = bool(snd_wscale or rcv_wscale) if window_scaling is None else window_scaling
        p.snd_wscale = min(snd_wscale, MAX_WSCALE) if p.ws_ok else 0
        p.rcv_wscale = min(rcv_wscale, MAX_WSCALE) if p.ws_ok else 0
        p.snd_wnd = p.max_snd_wnd = snd_wnd
        p.snd_wl1, p.snd_wl2 = p.irs, p.snd_una
        p.peer_mss = mss
        p.snd_mss = min(mss, p.cfg.mss)
        p.ts_ok = timestamps
        p.ts_recent = ts_recent & SEQ_MASK
        if ts_val is not None:
            p._ts_base = (ts_val - int(now * p.cfg.ts_hz)) & SEQ_MASK
        free = p.cfg.rcv_buf if rcv_wnd is None else rcv_wnd
        p.rcv_adv = seq_add(rcv_nxt, min(free, 0xFFFF << p.rcv_wscale))
        p.cwnd = p.cfg.init_cwnd * p.eff_mss
        p.recover = p.snd_una
        p._set_state(S.ESTABLISHED)
        return p

    def handover_state(self) -> dict:
        """Keyword arguments for `TcpPeer.established` that continue *this* endpoint from
        here (a snapshot of its RFC variables; ESTABLISHED only). Not carried: received
        data not yet read (read it first), out-of-order data (the peer resends it),
        timers and congestion state (a clone restarts from the initial window)."""
        if self._state is not S.ESTABLISHED:
            raise RuntimeError(f"handover_state() in {self._state.name}")
        sent = seq_diff(self.snd_max, self.snd_base)
        return dict(local=self.local, remote=self.remote, snd_nxt=self.snd_max, rcv_nxt=self.rcv_nxt,
                    snd_wnd=self.snd_wnd, now=self._now, mss=self.peer_mss, snd_wscale=self.snd_wscale,
                    rcv_wscale=self.rcv_wscale, window_scaling=self.ws_ok, timestamps=self.ts_ok,
                    ts_recent=self.ts_recent, ts_val=self._ts_now(), rcv_wnd=max(0, seq_diff(self.rcv_adv,
                                                                                              self.rcv_nxt)),
                    unacked=bytes(self._sbuf[self._shead:self._shead + sent]),
                    pending=bytes(self._sbuf[self._shead + sent:]), config=self.cfg)

    # ------------------------------------------------------------------ application interface
    @property
    def state(self) -> TcpState:
        return self._state

    @property
    def eff_mss(self) -> int:
        """Payload bytes per full segment: send MSS less the options every segment carries."""
        return self.snd_mss - (TS_OPT_LEN if self.ts_ok else 0)

    @property
    def eof(self) -> bool:
        """The peer's FIN has arrived and every byte before it has been read."""
        return self.fin_received and not self._rbuf

    @property
    def send_buffered(self) -> int:
        """Bytes given to send() and not yet acknowledged."""
        return len(self._sbuf) - self._shead

    @property
    def recv_buffered(self) -> int:
        return len(self._rbuf)

    @property
    def flight(self) -> int:
        return seq_diff(self.snd_nxt, self.snd_una)

    def connect(self) -> None:
        """Active open: the SYN goes out at the next poll()."""
        if self._state is not S.CLOSED or self.remote is None:
            raise RuntimeError(f"connect() in {self._state.name} (remote {self.remote})")
        self._set_state(S.SYN_SENT)
        self._syn_due = True

    def listen(self) -> None:
        """Passive open: wait for a SYN (from `remote` if given, else from anyone)."""
        if self._state is not S.CLOSED:
            raise RuntimeError(f"listen() in {self._state.name}")
        self._passive = True
        self._set_state(S.LISTEN)

    def send(self, data: bytes) -> int:
        """Queue data; returns how much was accepted (all of it unless snd_buf limits).
        Allowed from LISTEN / SYN-SENT on: it goes out once the connection is established."""
        if self.fin_queued or self._state in (S.CLOSED, S.TIME_WAIT, S.CLOSING, S.LAST_ACK,
                                               S.FIN_WAIT_1, S.FIN_WAIT_2):
            raise RuntimeError(f"send() in {self._state.name}" + (" after close()" if self.fin_queued else ""))
        n = len(data)
        if self.cfg.snd_buf is not None:
            n = max(0, min(n, self.cfg.snd_buf - self.send_buffered))
        self._sbuf += data[:n]
        return n

    def recv(self, max_bytes: int | None = None) -> bytes:
        """In-order data received so far (up to max_bytes); b"" when none (see `eof`)."""
        n = len(self._rbuf) if max_bytes is None else min(max_bytes, len(self._rbuf))
        out = bytes(self._rbuf[:n])
        del self._rbuf[:n]
        return out

    def close(self) -> None:
        """Graceful close: FIN after all queued data."""
        st = self._state
        if st in (S.LISTEN, S.SYN_SENT):
            self._set_state(S.CLOSED)
            return
        if st is S.CLOSED or self.fin_queued:
            return
        self.fin_queued = True
        self.fin_seq = seq_add(self.snd_base, self.send_buffered)
        if st is S.ESTABLISHED:
            self._set_state(S.FIN_WAIT_1)
        elif st is S.CLOSE_WAIT:
            self._set_state(S.LAST_ACK)
        # SYN-RECEIVED: FIN-WAIT-1 once established (RFC 9293 3.10.4)

    def abort(self) -> None:
        """Send RST (in synchronized states) and drop the connection."""
        if self._state not in (S.CLOSED, S.LISTEN, S.SYN_SENT, S.TIME_WAIT):
            self._emit(RST | ACK, self._ctl_seq())
            self.counters["rst_out"] += 1
        self._set_state(S.CLOSED)

    # ------------------------------------------------------------------ time
    def next_deadline(self) -> float | None:
        """The earliest time poll() has timer work to do (None: only input can wake it)."""
        ts = [t for t in (self._rto_at, self._persist_at, self._delack_at, self._tw_at, self._fw2_at)
              if t is not None]
        return min(ts) if ts else None

    def poll(self, now: float) -> list[bytes]:
        """Run due timers and transmit what can be sent; returns IPv4 packets, in order."""
        self._now = now
        st = self._state
        if self._tw_at is not None and now >= self._tw_at:
            self._set_state(S.CLOSED)
        if self._fw2_at is not None and now >= self._fw2_at and st is S.FIN_WAIT_2:
            self.counters["fin_wait_2_timeouts"] += 1
            self._set_state(S.CLOSED)
        if self._syn_due:
            self._syn_due = False
            self._send_syn()
        if self._delack_at is not None and now >= self._delack_at:
            self.counters["delayed_acks"] += 1
            self._send_ack()
        if self._rto_at is not None and now >= self._rto_at:
            self._rto_at = None
            self._on_rto()
        if self._persist_at is not None and now >= self._persist_at:
            self._persist_at = None
            self._on_persist()
        if self._state in SEND_STATES:
            self._output()
            if self._rto_at is None and self._persist_at is None:
                if seq_lt(self.snd_una, self.snd_nxt):
                    self._rto_at = now + self.rto       # e.g. data handed over unacknowledged
                elif self._has_unsent():
                    # Could not send with nothing in flight: only the peer's window stops us.
                    self._persist_at = now + self._persist_interval()
        if self._state in RECV_STATES and not self.fin_received:
            self._maybe_window_update()
        out, self._out = self._out, []
        return out

    # ------------------------------------------------------------------ input
    def segment_in(self, ip_packet: bytes, now: float) -> None:
        """Process one received IPv4 packet. Replies are returned by the next poll()."""
        self._now = now
        try:
            seg = parse_segment(ip_packet)
        except SegmentError as e:
            self.counters[e.reason] += 1
            return
        if seg.dst != self._lip or seg.dport != self.local[1] or (
                self._rip is not None and (seg.src != self._rip or seg.sport != self.remote[1])):
            self.counters["not_mine"] += 1
            return
        self.counters["segs_in"] += 1
        if seg.rst:
            self.counters["rst_in"] += 1
        st = self._state
        if st is S.CLOSED:
            if self.cfg.rst_when_closed and self._rip is not None:
                self._reply_rst(seg)
        elif st is S.LISTEN:
            self._in_listen(seg)
        elif st is S.SYN_SENT:
            self._in_syn_sent(seg)
        else:
            self._in_synchronized(seg)

    def _in_listen(self, seg: TcpSegment) -> None:
        if seg.rst:
            return
        if seg.has_ack:
            if self.cfg.rst_when_closed:
                self._reply_rst(seg)
            return
        if not seg.syn:
            return
        self.remote = (str(ipaddress.IPv4Address(seg.src)), seg.sport)
        self._rip = seg.src
        self._syn_options(seg)
        self.snd_wnd = self.max_snd_wnd = seg.wnd           # never scaled in a SYN (RFC 7323 2.2)
        self.snd_wl1, self.snd_wl2 = seg.seq, self.iss
        self._set_state(S.SYN_RECEIVED)
        self._send_syn()

    def _in_syn_sent(self, seg: TcpSegment) -> None:
        if seg.has_ack and not (seq_gt(seg.ack, self.iss) and seq_le(seg.ack, self.snd_max)):
            if not seg.rst:
                self._reply_rst(seg)
            return
        if seg.rst:
            if seg.has_ack:
                self.counters["rst_accepted"] += 1
                self.error = "refused"
                self._set_state(S.CLOSED)
            return
        if not seg.syn:
            return
        self._syn_options(seg)
        if seg.payload:
            self.counters["syn_data_ignored"] += 1
        if seg.has_ack:
            self.snd_wnd = self.max_snd_wnd = seg.wnd
            self.snd_wl1, self.snd_wl2 = seg.seq, seg.ack
            self._syn_acked(seg)
            self._send_ack()
        else:                                   # simultaneous open (RFC 9293 3.5)
            self._set_state(S.SYN_RECEIVED)
            self._send_syn()

    def _syn_options(self, seg: TcpSegment) -> None:
        """Take the peer's SYN: its ISN and the options both sides agree on."""
        c = self.cfg
        self.irs = seg.seq
        self.rcv_nxt = self.last_ack_sent = seq_add(seg.seq, 1)
        self.rcv_adv = seq_add(self.rcv_nxt, self._syn_wnd)   # what our SYN offered, if we sent one
        self._rcv64 = 0
        self.peer_mss = seg.mss if seg.mss else DEFAULT_MSS
        self.snd_mss = max(min(self.peer_mss, c.mss), 64)
        self.ws_ok = c.window_scaling and seg.wscale is not None
        self.snd_wscale = min(seg.wscale, MAX_WSCALE) if self.ws_ok else 0
        self.rcv_wscale = self._ws_offer if self.ws_ok else 0
        self.ts_ok = c.timestamps and seg.ts is not None
        if self.ts_ok:
            self.ts_recent = seg.ts[0]

    def _syn_acked(self, seg: TcpSegment) -> None:
        """Our SYN is acknowledged: the connection is established."""
        self.snd_una = seg.ack
        if seq_lt(self.snd_nxt, self.snd_una):
            self.snd_nxt = self.snd_una
        self._rtt_from_ack(seg, handshake=True)
        if self.srtt is None and self._syn_retransmitted:
            self._rto_base = self.rto = max(self._rto_base, self.cfg.rto_after_syn_loss)
        elif self.srtt is not None:
            self.rto = self._rto_base
        self._rto_at = None
        self._retries = 0
        self.cwnd = self.cfg.init_cwnd * self.eff_mss
        self.recover = self.snd_una
        self._set_state(S.ESTABLISHED)
        if self.fin_queued:
            self._set_state(S.FIN_WAIT_1)

    def _acceptable(self, seq: int, seg_len: int) -> bool:
        """RFC 9293 3.10.7.4 acceptance test. Zero-length segments are also accepted at the
        right edge (as Linux does), so that an ACK from a sender that filled our window
        is not discarded."""
        wnd = self._rcv_space()
        if seg_len == 0:
            return seq == self.rcv_nxt if wnd == 0 else seq_in(seq, self.rcv_nxt, seq_add(self.rcv_nxt, wnd + 1))
        if wnd == 0:
            return False
        end = seq_add(self.rcv_nxt, wnd)
        return seq_in(seq, self.rcv_nxt, end) or seq_in(seq_add(seq, seg_len - 1), self.rcv_nxt, end)

    def _in_synchronized(self, seg: TcpSegment) -> None:
        st = self._state
        if st is S.SYN_RECEIVED and seg.syn and not seg.has_ack and not seg.rst:
            if seg.seq == self.irs:             # the peer did not get our SYN-ACK yet
                self.counters["syn_dup"] += 1
                self._send_syn()
            else:
                self._challenge_ack()
            return
        # PAWS (RFC 7323 5.3 R1), and RFC 7323 3.2: drop non-RST segments without TSopt.
        if self.ts_ok and not seg.rst:
            if seg.ts is None:
                self.counters["no_timestamp"] += 1
                if self.cfg.require_timestamps:
                    return
            elif seq_lt(seg.ts[0], self.ts_recent):
                self.counters["paws_rejected"] += 1
                self._send_ack()
                return
        if not self._acceptable(seg.seq, seg.seg_len):
            if seg.rst:
                self.counters["rst_out_of_window"] += 1     # RFC 5961 3.2: silently dropped
                return
            if seg.syn:                         # RFC 5961 4.2: whatever its sequence number
                self._challenge_ack()
                return
            self.counters["unacceptable"] += 1
            # A recent duplicate (a retransmission of data we have) still refreshes
            # TS.Recent, as Linux does for segments ending after rcv_wup, so that our
            # duplicate ACK echoes the retransmission and the sender's RTT sample is true;
            # otherwise it echoes a timestamp from before the loss.
            if self.ts_ok and seg.ts is not None and seq_le(seg.seq, self.last_ack_sent) and \
                    seq_ge(seg.ts[0], self.ts_recent) and \
                    seq_ge(seq_add(seg.seq, seg.seg_len), seq_add(self.rcv_nxt, -self._rcv_space_max())):
                self.ts_recent = seg.ts[0]
            if st is S.TIME_WAIT and seg.fin:
                self._tw_at = self._now + self.cfg.time_wait
            self._send_ack()
            return
        # RFC 7323 4.3 R3: remember the timestamp of the segment at the left window edge.
        if self.ts_ok and seg.ts is not None and seq_le(seg.seq, self.last_ack_sent) and \
                seq_ge(seg.ts[0], self.ts_recent):
            self.ts_recent = seg.ts[0]
        if seg.rst:                             # RFC 5961 3.2
            if seg.seq == self.rcv_nxt:
                self.counters["rst_accepted"] += 1
                if st is S.SYN_RECEIVED and self._passive:
                    self._back_to_listen()
                elif st is S.TIME_WAIT:
                    # The connection completed; a RST (e.g. from a peer that already closed,
                    # answering a duplicate) only ends TIME-WAIT early, as in Linux
                    # (tcp_rfc1337=0).
                    self.counters["rst_in_time_wait"] += 1
                    self._set_state(S.CLOSED)
                else:
                    self.error = "reset"
                    self._set_state(S.CLOSED)
            else:
                self._challenge_ack()
            return
        if seg.syn:                             # RFC 5961 4.2
            self._challenge_ack()
            return
        if not seg.has_ack:
            return
        if st is S.SYN_RECEIVED:
            if seq_gt(seg.ack, self.snd_una) and seq_le(seg.ack, self.snd_max):
                self.snd_wnd = seg.wnd << self.snd_wscale
                self.max_snd_wnd = max(self.max_snd_wnd, self.snd_wnd)
                self.snd_wl1, self.snd_wl2 = seg.seq, seg.ack
                self._syn_acked(seg)
            else:
                self._reply_rst(seg)
                return
        elif not self._ack_in(seg):
            return
        if self._state is S.CLOSED:
            return
        if self._state in RECV_STATES and (seg.payload or seg.fin):
            self._text_in(seg)

    def _back_to_listen(self) -> None:
        """A passive SYN-RECEIVED connection reset by the peer: listen again (RFC 9293)."""
        fresh = TcpPeer((self.local[0], self.local[1]), None, self.cfg, isn=seq_add(self.iss, 0x10000))
        counters, history = self.counters, self.history
        self.__dict__.update(fresh.__dict__)
        self.counters, self.history = counters, history
        self._passive = True
        self._set_state(S.LISTEN)

    def _ack_in(self, seg: TcpSegment) -> bool:
        """ACK processing in synchronized states; False: drop the rest of the segment."""
        ack = seg.ack
        if seq_gt(ack, self.snd_max):           # acks something never sent (RFC 5961 5.2)
            self.counters["ack_beyond"] += 1
            self._send_ack()
            return False
        if seq_lt(ack, seq_add(self.snd_una, -max(self.max_snd_wnd, 1))):
            self.counters["ack_too_old"] += 1
            self._challenge_ack()
            return False
        if seq_lt(ack, self.snd_una):
            return True                         # old ACK: ignore the field, keep the text
        wnd = seg.wnd << self.snd_wscale
        acked = seq_diff(ack, self.snd_una)
        if acked > 0:
            self._new_ack(seg, acked)
        elif (not seg.payload and not seg.fin and wnd == self.snd_wnd and self.snd_wnd > 0
              and seq_lt(self.snd_una, self.snd_max) and self._persist_at is None):
            self._dup_ack()
        # Send window update (RFC 9293 3.10.7.4): only from newer segments.
        if seq_lt(self.snd_wl1, seg.seq) or (self.snd_wl1 == seg.seq and seq_le(self.snd_wl2, ack)):
            if wnd == 0 and self.snd_wnd != 0:
                self.counters["zero_window_seen"] += 1
            self.snd_wnd = wnd
            self.snd_wl1, self.snd_wl2 = seg.seq, ack
            self.max_snd_wnd = max(self.max_snd_wnd, wnd)
            if wnd > 0 and self._persist_at is not None:
                self._persist_at = None         # window open: leave persist, send normally
                self._persist_backoff = 0
        st = self._state
        fin_acked = self.fin_queued and seq_gt(self.snd_una, self.fin_seq)
        if fin_acked:
            if st is S.FIN_WAIT_1:
                self._set_state(S.FIN_WAIT_2)
                if self.cfg.fin_wait_2_timeout is not None:
                    self._fw2_at = self._now + self.cfg.fin_wait_2_timeout
            elif st is S.CLOSING:
                self._enter_time_wait()
            elif st is S.LAST_ACK:
                self._set_state(S.CLOSED)
                return False
        return True

    def _new_ack(self, seg: TcpSegment, acked: int) -> None:
        ack = seg.ack
        n = seq_diff(ack, self.snd_base)
        if n > 0:
            n = min(n, self.send_buffered)
            self._shead += n
            self.snd_base = seq_add(self.snd_base, n)
            if self._shead > 65536 and self._shead * 2 > len(self._sbuf):
                del self._sbuf[:self._shead]    # compact now and then, not on every ACK
                self._shead = 0
        self.snd_una = ack
        if seq_lt(self.snd_nxt, ack):
            self.snd_nxt = ack
        self.counters["bytes_acked"] += acked
        self._retries = 0
        self._rtt_from_ack(seg)
        mss = self.eff_mss
        if self.in_recovery:
            if seq_gt(ack, self.recover):       # full ACK: leave fast recovery (RFC 6582 3.2 step 3)
                self.in_recovery = False
                self.dupacks = 0
                self.cwnd = min(self.ssthresh, max(seq_diff(self.snd_max, ack), mss) + mss)
            else:                               # partial ACK (step 4)
                self.counters["partial_acks"] += 1
                self._retransmit_una()
                self.cwnd = max(self.cwnd - acked + (mss if acked >= mss else 0), mss)
                if not self._partial_seen:
                    self._partial_seen = True
                    self._rto_at = self._now + self.rto
                return
        else:
            self.dupacks = 0
            if seq_gt(ack, self.recover):
                self.recover = seq_add(ack, -1)  # keep it near snd_una across 2^31 bytes
            if self.cwnd < self.ssthresh:
                self.cwnd += min(acked, mss)    # slow start (RFC 5681 3.1, byte counting L=1)
            else:
                self._ca_acc += acked           # congestion avoidance: +1 MSS per cwnd acked
                if self._ca_acc >= self.cwnd:
                    self._ca_acc -= self.cwnd
                    self.cwnd += mss
            self.cwnd = min(self.cwnd, 1 << 30)
        if self.snd_una == self.snd_max:
            self._rto_at = None
        else:
            self._rto_at = self._now + self.rto  # RFC 6298 5.3

    def _dup_ack(self) -> None:
        self.dupacks += 1
        self.counters["dup_acks"] += 1
        mss = self.eff_mss
        if self.in_recovery:
            self.cwnd += mss                    # inflate for the segment that left the network
        elif self.dupacks == self.cfg.dupack_threshold:
            if seq_gt(self.snd_una, self.recover):   # RFC 6582 3.2 step 1
                self.ssthresh = max(seq_diff(self.snd_max, self.snd_una) // 2, 2 * mss)
                self.recover = seq_add(self.snd_max, -1)
                self.in_recovery = True
                self._partial_seen = False
                self.counters["fast_retransmits"] += 1
                if not self.ts_ok:
                    self._rtt_seq = None        # Karn
                self._retransmit_una()
                self.cwnd = self.ssthresh + 3 * mss
            else:
                self.counters["dupacks_after_recovery"] += 1

    def _rtt_from_ack(self, seg: TcpSegment, handshake: bool = False) -> None:
        """One RTT sample per window: from the echoed timestamp if negotiated, else from
        the timed segment if it was never retransmitted (Karn)."""
        r: float | None = None
        if handshake:
            if self.ts_ok and seg.ts and seg.ts[1]:
                r = ((self._ts_now() - seg.ts[1]) & SEQ_MASK) / self.cfg.ts_hz
            elif not self._syn_retransmitted and self._syn_time is not None:
                r = self._now - self._syn_time
        elif self._rtt_seq is not None and seq_ge(seg.ack, self._rtt_seq):
            if self.ts_ok and seg.ts and seg.ts[1]:
                # An echo older than the timed segment is stale (the peer's TS.Recent
                # was not refreshed): no sample rather than a huge one.
                if seq_ge(seg.ts[1], self._rtt_tsval):
                    r = ((self._ts_now() - seg.ts[1]) & SEQ_MASK) / self.cfg.ts_hz
            else:
                r = self._now - self._rtt_time
            self._rtt_seq = None
        if r is None or r > 3600:
            return
        self.counters["rtt_samples"] += 1
        if self.srtt is None:
            self.srtt, self.rttvar = r, r / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - r)
            self.srtt = 0.875 * self.srtt + 0.125 * r
        c = self.cfg
        self._rto_base = min(max(self.srtt + max(c.clock_granularity, 4 * self.rttvar), c.rto_min), c.rto_max)
        self.rto = self._rto_base               # a valid sample ends the back-off

    def _text_in(self, seg: TcpSegment) -> None:
        """Segment text and FIN (RFC 9293 3.10.7.4, steps seven and eight)."""
        seq, data, fin = seg.seq, seg.payload, seg.fin
        d = seq_diff(self.rcv_nxt, seq)
        if d > 0:                               # starts before rcv_nxt: drop what we have
            if d > len(data):                   # only a FIN we already have
                return
            data, seq = data[d:], self.rcv_nxt
            self.counters["partial_dup_segments"] += 1
        off = seq_diff(seq, self.rcv_nxt)
        room = self._rcv_space() - off
        if len(data) > room:
            data = data[:max(room, 0)]
            fin = False
            self.counters["trimmed_to_window"] += 1
        if not data and not fin:
            self._send_ack()
            return
        if off > 0:                             # out of order: keep, and duplicate-ACK at once
            self.counters["out_of_order"] += 1
            start = self._rcv64 + off
            if data:
                self._ooo_insert(start, data)
            if fin:
                self._fin64 = start + len(data)
            self._send_ack()
            return
        had_gap = bool(self._ooo)
        self._deliver(data)
        while self._ooo and self._ooo[0][0] <= self._rcv64:
            start, chunk = self._ooo.pop(0)
            self._deliver(chunk[self._rcv64 - start:])
        if fin or (self._fin64 is not None and self._fin64 == self._rcv64):
            self._fin_in()
            return
        self._segs_unacked += 1
        if had_gap or self.cfg.delayed_ack is None or self._segs_unacked >= self.cfg.ack_every:
            self._send_ack()
        elif self._delack_at is None:
            self._delack_at = self._now + self.cfg.delayed_ack

    def _deliver(self, data: bytes) -> None:
        self._rbuf += data
        self.counters["bytes_in"] += len(data)
        self.rcv_nxt = seq_add(self.rcv_nxt, len(data))
        self._rcv64 += len(data)

    def _ooo_insert(self, start: int, data: bytes) -> None:
        """Add [start, start+len) to the reassembly list, keeping bytes already held."""
        end = start + len(data)
        pieces = []
        pos = start
        for s, chunk in self._ooo:
            e = s + len(chunk)
            if e <= pos:
                continue
            if s >= end:
                break
            if s > pos:
                pieces.append((pos, data[pos - start:s - start]))
            pos = max(pos, e)
        if pos < end:
            pieces.append((pos, data[pos - start:]))
        if pieces:
            self._ooo = sorted(self._ooo + pieces)
        else:
            self.counters["dup_segments"] += 1

    def _fin_in(self) -> None:
        self.rcv_nxt = seq_add(self.rcv_nxt, 1)
        self._rcv64 += 1
        self.fin_received = True
        self._fin64 = None
        self.counters["fin_in"] += 1
        self._send_ack()
        st = self._state
        if st is S.ESTABLISHED:
            self._set_state(S.CLOSE_WAIT)
        elif st is S.FIN_WAIT_1:                 # our FIN not acked yet (else FIN-WAIT-2)
            self._set_state(S.CLOSING)
        elif st is S.FIN_WAIT_2:
            self._enter_time_wait()

    def _enter_time_wait(self) -> None:
        self._set_state(S.TIME_WAIT)
        self._tw_at = self._now + self.cfg.time_wait

    # ------------------------------------------------------------------ output
    def _ts_now(self) -> int:
        return (self._ts_base + int(self._now * self.cfg.ts_hz)) & SEQ_MASK

    def _rcv_space_max(self) -> int:
        return min(self.cfg.rcv_buf, 0xFFFF << self.rcv_wscale)

    def _rcv_space(self) -> int:
        """How far past rcv_nxt we accept data: the free buffer, or the advertised edge if
        rounding up to the window scale put it further."""
        return max(self.cfg.rcv_buf - len(self._rbuf), seq_diff(self.rcv_adv, self.rcv_nxt), 0)

    def _window_target(self) -> tuple[int, int]:
        """(window to advertise in bytes, what the peer currently has). The right edge never
        moves left (RFC 9293 3.8.6), and moves right only by at least min(buffer/2, MSS)
        (receiver SWS avoidance, 3.8.6.2.2)."""
        # no more than the window field can say (64 KiB without scaling)
        free = min(max(self.cfg.rcv_buf - len(self._rbuf), 0), 0xFFFF << self.rcv_wscale)
        cur = max(seq_diff(self.rcv_adv, self.rcv_nxt), 0)
        if free - cur >= min(self.cfg.rcv_buf // 2, self.cfg.mss):
            return free, cur
        return cur, cur

    def _window_field(self, syn: bool) -> int:
        if syn:                                 # SYN windows are never scaled
            w = self._syn_wnd = min(max(self.cfg.rcv_buf - len(self._rbuf), 0), 0xFFFF)
            self.rcv_adv = seq_add(self.rcv_nxt, w)
            return w
        target, cur = self._window_target()
        s = self.rcv_wscale
        wf = min(max(target >> s, (cur + (1 << s) - 1) >> s), 0xFFFF)
        edge = seq_add(self.rcv_nxt, wf << s)
        if seq_gt(edge, self.rcv_adv):
            self.rcv_adv = edge
        return wf

    def _maybe_window_update(self) -> None:
        """After the application read: tell the peer once the window has at least doubled
        from at most half the buffer (so a zero window reopens without waiting for a probe)."""
        target, cur = self._window_target()
        buf = min(self.cfg.rcv_buf, 0xFFFF << self.rcv_wscale)
        if 2 * cur <= buf and target >= 2 * cur and target - cur >= min(self.cfg.mss, buf // 2):
            self.counters["window_updates"] += 1
            self._send_ack()

    def _emit(self, flags: int, seq: int, payload: bytes = b"", *, syn_opts: bool = False) -> None:
        c = self.cfg
        wnd = 0 if flags & RST else self._window_field(bool(flags & SYN))
        opts = b""
        if not flags & RST:
            if syn_opts:
                offer_ts = self.ts_ok if self._state is S.SYN_RECEIVED and self._passive else c.timestamps
                offer_ws = self.ws_ok if self._state is S.SYN_RECEIVED and self._passive else c.window_scaling
                ts = (self._ts_now(), self.ts_recent if flags & ACK else 0) if offer_ts else None
                opts = tcp_options(mss=c.mss, ts=ts, wscale=self._ws_offer if offer_ws else None)
            elif self.ts_ok:
                opts = tcp_options(ts=(self._ts_now(), self.ts_recent))
        ack = self.rcv_nxt if flags & ACK else 0
        self._ip_id = (self._ip_id + 1) & 0xFFFF
        self._out.append(build_packet(self._lip, self._rip, self.local[1], self.remote[1], seq, ack, flags, wnd,
                                      payload, options=opts, ident=self._ip_id, ttl=c.ttl))
        self.counters["segs_out"] += 1
        if flags & ACK and not flags & RST:
            self.last_ack_sent = self.rcv_nxt
            self._segs_unacked = 0
            self._delack_at = None
            if wnd == 0 and not flags & SYN:
                self.counters["zero_window_sent"] += 1

    def _ctl_seq(self) -> int:
        """Sequence number for a pure ACK or RST. Not snd_nxt: after a timeout it is rolled
        back below what the peer already has, and the peer would find the ACK unacceptable,
        drop it and answer with its own (possibly also rolled back) ACK, an ACK war. BSD
        uses snd_max, except in persist, where snd_max is the probe byte past the window."""
        return self.snd_nxt if self._persist_at is not None else self.snd_max

    def _send_ack(self) -> None:
        if self._state in (S.CLOSED, S.LISTEN, S.SYN_SENT):
            return
        self.counters["acks_out"] += 1
        self._emit(ACK, self._ctl_seq())

    def _challenge_ack(self) -> None:
        self.counters["challenge_acks"] += 1
        self._send_ack()

    def _reply_rst(self, seg: TcpSegment) -> None:
        """RST for a segment that belongs to no connection we have (RFC 9293 3.10.7.1)."""
        if seg.rst:
            return
        self.counters["rst_out"] += 1
        if seg.has_ack:
            seq, ack, flags = seg.ack, 0, RST
        else:
            seq, ack, flags = 0, seq_add(seg.seq, seg.seg_len), RST | ACK
        self._ip_id = (self._ip_id + 1) & 0xFFFF
        self._out.append(build_packet(seg.dst, seg.src, seg.dport, seg.sport, seq, ack, flags, 0,
                                      ident=self._ip_id, ttl=self.cfg.ttl))
        self.counters["segs_out"] += 1

    def _send_syn(self) -> None:
        """SYN (active) or SYN-ACK (passive, simultaneous), first send or retransmission."""
        if self._syn_time is None:
            self._syn_time = self._now
        else:
            self._syn_retransmitted = True
            self.counters["retransmits"] += 1
        flags = SYN | (ACK if self._state is S.SYN_RECEIVED else 0)
        self._emit(flags, self.iss, syn_opts=True)
        self.snd_nxt = self.snd_max = seq_add(self.iss, 1)
        if self._rto_at is None:
            self._rto_at = self._now + self.rto

    def _unsent(self) -> int:
        return max(self.send_buffered - seq_diff(self.snd_nxt, self.snd_base), 0)

    def _fin_pending(self) -> bool:
        return self.fin_queued and not seq_gt(self.snd_nxt, self.fin_seq)

    def _has_unsent(self) -> bool:
        return self._unsent() > 0 or self._fin_pending()

    def _send_at(self, seq: int, n: int, fin: bool, *, probe: bool = False) -> int:
        """Send n buffered bytes from `seq` (+FIN); returns the sequence number after it."""
        off = seq_diff(seq, self.snd_base)
        start = self._shead + off
        payload = bytes(self._sbuf[start:start + n])
        end = seq_add(seq, n + (1 if fin else 0))
        flags = ACK | (FIN if fin else 0) | (PSH if n and off + n == self.send_buffered else 0)
        if seq_lt(seq, self.snd_max):
            self.counters["retransmits"] += 1
        self.counters["bytes_out"] += max(0, min(n, seq_diff(seq_add(seq, n), self.snd_max)))  # new bytes only
        self._emit(flags, seq, payload)
        if seq_gt(end, self.snd_max):
            if self._rtt_seq is None and not probe:
                self._rtt_seq, self._rtt_time, self._rtt_tsval = end, self._now, self._ts_now()
            self.snd_max = end
        if not probe and self._rto_at is None:
            self._rto_at = self._now + self.rto     # RFC 6298 5.1
        return end

    def _segment_from(self, seq: int, limit: int) -> tuple[int, bool]:
        """(bytes, FIN?) of a segment starting at seq of at most `limit` bytes."""
        avail = max(self.send_buffered - seq_diff(seq, self.snd_base), 0)
        n = min(avail, self.eff_mss, limit)
        fin = self.fin_queued and n == avail and not seq_gt(seq_add(seq, n), self.fin_seq)
        return n, fin

    def _retransmit_una(self) -> None:
        """Resend the first unacknowledged segment (fast retransmit, partial ACK, RTO)."""
        if self._state in (S.SYN_SENT, S.SYN_RECEIVED):
            self._send_syn()
            return
        n, fin = self._segment_from(self.snd_una, max(self.snd_wnd, 1))
        if n or fin:
            end = self._send_at(self.snd_una, n, fin)
            if seq_lt(self.snd_nxt, end):
                self.snd_nxt = end

    def _output(self) -> None:
        while True:
            avail = self._unsent()
            fin_pending = self._fin_pending()
            if avail == 0 and not fin_pending:
                return
            usable = seq_diff(seq_add(self.snd_una, min(self.snd_wnd, self.cwnd)), self.snd_nxt)
            if usable <= 0:
                return
            mss = self.eff_mss
            n = min(avail, mss, usable)
            if n < mss and n < avail and n < self.max_snd_wnd // 2:
                return                          # sender SWS avoidance: wait for a bigger window
            if self.cfg.nagle and n < mss and seq_lt(self.snd_una, self.snd_nxt):
                return
            fin = fin_pending and n == avail and usable > n
            if n == 0 and not fin:
                return
            self.snd_nxt = self._send_at(self.snd_nxt, n, fin)

    # ------------------------------------------------------------------ timers
    def _on_rto(self) -> None:
        c = self.cfg
        st = self._state
        if st in (S.SYN_SENT, S.SYN_RECEIVED):
            self._retries += 1
            if self._retries > c.syn_retries:
                self._give_up()
                return
            self.counters["timeouts"] += 1
            self.rto = min(self.rto * 2, c.rto_max)
            self._send_syn()
            return
        if st not in SEND_STATES or not seq_lt(self.snd_una, self.snd_max):
            return
        self._retries += 1
        if self._retries > c.max_retries:
            self._give_up()
            return
        self.counters["timeouts"] += 1
        mss = self.eff_mss
        if self._retries == 1:                  # RFC 5681 3.1: ssthresh once per loss event
            self.ssthresh = max(seq_diff(self.snd_max, self.snd_una) // 2, 2 * mss)
        self.cwnd = mss                         # loss window
        self._ca_acc = 0
        self.in_recovery = False
        self.dupacks = 0
        self.recover = seq_add(self.snd_max, -1)
        self.snd_nxt = self.snd_una             # go back N
        self.rto = min(self.rto * 2, c.rto_max)  # RFC 6298 5.5
        if not self.ts_ok:
            self._rtt_seq = None                # Karn
        self._retransmit_una()
        self._rto_at = self._now + self.rto

    def _persist_interval(self) -> float:
        return min(max(self._rto_base, self.cfg.rto_min) * (1 << min(self._persist_backoff, 16)),
                   self.cfg.persist_max)

    def _on_persist(self) -> None:
        if self._state not in SEND_STATES or not self._has_unsent():
            return
        usable = seq_diff(seq_add(self.snd_una, self.snd_wnd), self.snd_nxt)
        if usable > 0:                          # small window held back by SWS avoidance: use it
            n, fin = self._segment_from(self.snd_nxt, usable)
            fin = fin and usable > n
            self.counters["sws_overrides"] += 1
            self.snd_nxt = self._send_at(self.snd_nxt, n, fin)
            self._persist_backoff = 0
            return
        # Zero window: probe with one byte (or the FIN) beyond it; snd_nxt stays, so the
        # byte is sent again normally once the window opens (BSD's way).
        self.counters["probes"] += 1
        n, fin = self._segment_from(self.snd_nxt, 1)
        self._send_at(self.snd_nxt, n, fin, probe=True)
        self._persist_backoff += 1
        self._persist_at = self._now + self._persist_interval()

    def _give_up(self) -> None:
        self.error = "timeout"
        self.counters["gave_up"] += 1
        self._set_state(S.CLOSED)

    def _set_state(self, st: TcpState) -> None:
        if st is self._state:
            return
        self._state = st
        self.history.append(st)
        if st in (S.CLOSED, S.TIME_WAIT, S.LISTEN):
            self._rto_at = self._persist_at = self._delack_at = self._fw2_at = None
        if st is S.CLOSED:
            self._tw_at = None
            self._syn_due = False
        if st is S.FIN_WAIT_2 or st is S.TIME_WAIT:
            self._persist_at = None

    def __repr__(self) -> str:
        return (f"<TcpPeer {self.local[0]}:{self.local[1]} -> {self.remote} {self._state.value} "
                f"una={self.snd_una} nxt={self.snd_nxt} max={self.snd_max} wnd={self.snd_wnd} "
                f"cwnd={self.cwnd} rcv_nxt={self.rcv_nxt} adv={seq_diff(self.rcv_adv, self.rcv_nxt)}>")
