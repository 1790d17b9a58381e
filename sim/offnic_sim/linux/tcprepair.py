"""Hand an established Linux TCP connection over and take it back, with TCP_REPAIR.

The host side of a TCP offload engine: `freeze()` stops a socket and reads every piece
of its state into a `TcpState`, `release()` drops the socket without a word on the wire,
and `restore()` rebuilds the connection from a `TcpState` in a new socket, which carries
on where the old one (or the engine) left off. `make_connected_pair()` builds two
"already established" sockets from nothing, with chosen initial sequence numbers.
`TcpState` is also the form an engine hands a connection back in (`advanced()` moves
it on); `thaw()` undoes a freeze, `read_state()` reads a socket already in repair
mode, `tcp_info()` parses struct tcp_info.

Needs CAP_NET_ADMIN in the socket's network namespace (TCP_REPAIR checks it) and IPv4.
Verified against Linux 6.18 (tests/linux/test_tcprepair.py); kernel source references
are to net/ipv4/tcp.c, tcp_output.c and tcp_input.c of that version.

What Linux exposes, and what it does not
----------------------------------------
Read and restored:
- sequence numbers: TCP_QUEUE_SEQ returns `write_seq` on the send queue (the sequence
  number after the LAST byte the application queued, not the first) and `rcv_nxt` on
  the receive queue (the next byte expected from the peer, i.e. after the last byte
  received in order). snd_una = write_seq - SIOCOUTQ, copied_seq = rcv_nxt - SIOCINQ.
  Setting it (only before connect(), state CLOSE) sets write_seq (and so snd_una and
  snd_nxt, which connect() copies from it) or rcv_nxt and copied_seq together: so a
  restore sets the START of each queue and then writes the queue contents, which
  advance the numbers to their end.
- queue contents: recv(MSG_PEEK) in repair mode reads the whole send queue (sent and
  unsent alike) or the in-order receive queue. The out-of-order queue is NOT readable:
  data the peer sent past a hole is lost at a handoff and retransmitted by the peer.
- how much of the send queue was never transmitted: SIOCOUTQNSD (write_seq - snd_nxt).
- struct tcp_repair_window: snd_wl1, snd_wnd, max_window, rcv_wnd, rcv_wup.
- negotiated options: peer MSS (TCP_MAXSEG returns rx_opt.mss_clamp in repair mode),
  window scales, SACK permitted, timestamps (TCP_INFO tcpi_options / tcpi_*_wscale);
  restored with TCP_REPAIR_OPTIONS, which Linux accepts only in ESTABLISHED and before
  any byte was sent (tp->bytes_sent == 0), so before the queues are refilled.
- the timestamp clock: TCP_TIMESTAMP = tcp clock (CLOCK_MONOTONIC in ms) + tsoffset,
  with bit 0 replaced by the microsecond-timestamps flag (tcp_usec_ts); setting it sets
  tsoffset so the clock reads that value now. Because of that bit the value read can
  be 1 ms behind the TSval just sent; restoring it as read moved the clock back by one
  tick in 2 runs of 14 here (Linux's PAWS window of 1 forgives that, a
  stricter peer or engine need not), so restore() rounds up (TcpState.ts_at).
Not exposed (a restored socket starts these afresh):
- ts_recent (the peer's last TSval, which we echo and check PAWS against): it restarts
  at 0. PAWS treats ts_recent == 0 as "nothing seen" and accepts any TSval, so the first
  segment from the peer sets it; until then our segments (the window probe first of
  all) echo TSecr 0, which Linux peers ignore for RTT. So a restored socket cannot
  reject an old duplicate by PAWS until the peer has sent once: harmless here, and an
  engine cannot be handed ts_recent either (it learns it from the next peer segment).
- SACK state both ways (our scoreboard of what the peer SACKed, and the blocks we would
  report): dropped. The restored sender treats all unacknowledged data as unSACKed.
- congestion and RTT state (cwnd, ssthresh, srtt, rttvar, RTO, ca_state): readable from
  TCP_INFO (kept in `TcpState.info` for information) but not settable. The new socket
  starts with the initial cwnd (10), infinite ssthresh and no RTT sample, which makes
  tcp_init_metrics() set the RTO to 3 s (TCP_TIMEOUT_FALLBACK) until the first sample,
  unless the namespace's tcp_metrics cache knows the destination (then RTT and
  ssthresh come from there).
- our advertised MSS (tcpi_advmss): a handshake lowers it by 12 when timestamps are on,
  a repaired connect() does not (1460 instead of 1448 at MTU 1500). It only rounds our
  receive window.
- urgent data, FIN state (only ESTABLISHED is handled here), keepalive/Nagle and other
  application socket options, TCP-AO/MD5 keys.

Surprises (see the tests for the evidence)
- A socket in repair mode is not frozen: Linux still processes every segment for it
  (queues data, ACKs it, takes ACKs) and it keeps sending its queued data and running
  its timers. Only the application is locked out (recv without MSG_PEEK: EPERM, send in
  TCP_NO_QUEUE: EINVAL). A consistent handoff therefore needs the wire to that socket
  cut first (CRIU's "network lock"); the tests hold the frames in their bridge.
- After release(), segments for the connection meet no socket and Linux answers with
  RST, killing the peer's side: whatever takes over must catch them before the host
  stack sees them.
- Writing to the send queue in repair mode marks the data as already SENT (tcp_write_xmit
  skips transmission and advances snd_nxt, whatever the windows), so only the
  sent-but-unacknowledged part may be written that way; the never-sent tail must be
  written after repair is switched off, as ordinary data (this is what CRIU does). The
  same path runs on ANY transmit attempt while TCP_REPAIR_QUEUE is TCP_SEND_QUEUE (an
  incoming ACK, a TSQ or timer run), which reading the send queue requires: so freeze()
  selects it only around that read and compares TCP_INFO's count of new data sent
  (bytes_sent - bytes_retrans) with SIOCOUTQNSD across it; bytes marked sent meanwhile
  without being sent are reported as unsent. Marks made outside freeze() look like
  data in flight: a live socket heals in milliseconds (tail loss probe, RACK), a
  restored one only at its first RTO (1 to 3 s seen).
- TCP_QUEUE_SEQ can be set only on a socket never connected and with empty queues;
  TCP_REPAIR_OPTIONS only after connect() and before the send queue is written;
  TCP_REPAIR_WINDOW only after the receive queue is written (rcv_wup must not be after
  rcv_nxt). restore() follows that order.
- connect() in repair mode computes mss_cache from the default MSS clamp (536) and
  nothing recomputes it when TCP_REPAIR_OPTIONS later sets the real MSS: the first
  segments would carry 524 bytes. restore() therefore sets TCP_MAXSEG to the peer's MSS
  before connect() (and clears it after).
- connect() also sizes the TCP header from the namespace's tcp_timestamps sysctl, not
  from the restored options: with timestamps off but the sysctl on, mss_cache (and so
  tcpi_snd_mss and TCP_MAXSEG) reads 12 short. Segments are still full-sized, because
  tcp_current_mss() corrects for the header actually sent.
"""
from __future__ import annotations

import base64
import dataclasses
import errno
import fcntl
import ipaddress
import re
import select
import socket
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from offnic_sim.linux.linuxnet import Namespace

# ----------------------------------------------------------------------------- constants

# linux/tcp.h (socket options and their arguments)
TCP_REPAIR = 19
TCP_REPAIR_QUEUE = 20
TCP_QUEUE_SEQ = 21
TCP_REPAIR_OPTIONS = 22
TCP_TIMESTAMP = 24
TCP_REPAIR_WINDOW = 29
TCP_REPAIR_ON = 1
TCP_REPAIR_OFF = 0
TCP_REPAIR_OFF_NO_WP = -1        # off without the window probe
TCP_NO_QUEUE = 0
TCP_RECV_QUEUE = 1
TCP_SEND_QUEUE = 2
# TCP option kinds that TCP_REPAIR_OPTIONS takes as opt_code (include/net/tcp.h; the
# same numbers as netinet/tcp.h's TCPOPT_MAXSEG, _WINDOW, _SACK_PERMITTED, _TIMESTAMP)
TCPOPT_MSS = 2
TCPOPT_WINDOW = 3
TCPOPT_SACK_PERM = 4
TCPOPT_TIMESTAMP = 8
# tcp_info.tcpi_options bits
TCPI_OPT_TIMESTAMPS = 1
TCPI_OPT_SACK = 2
TCPI_OPT_WSCALE = 4
TCPI_OPT_ECN = 8
TCPI_OPT_ECN_SEEN = 16
TCPI_OPT_SYN_DATA = 32
TCPI_OPT_USEC_TS = 64
# linux/sockios.h (SIOCINQ = FIONREAD, SIOCOUTQ = TIOCOUTQ on x86/arm64)
SIOCINQ = 0x541B
SIOCOUTQ = 0x5411
SIOCOUTQNSD = 0x894B
# asm-generic/socket.h: set buffer sizes beyond net.core.[rw]mem_max (CAP_NET_ADMIN)
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33

TCP_ESTABLISHED = 1
TCP_MAX_WSCALE = 14
SEQ_MOD = 1 << 32

_HEADER_NAMES = ("TCP_REPAIR", "TCP_REPAIR_QUEUE", "TCP_QUEUE_SEQ", "TCP_REPAIR_OPTIONS", "TCP_TIMESTAMP",
                 "TCP_REPAIR_WINDOW", "TCP_REPAIR_ON", "TCP_REPAIR_OFF", "TCP_REPAIR_OFF_NO_WP",
                 "TCPI_OPT_TIMESTAMPS", "TCPI_OPT_SACK", "TCPI_OPT_WSCALE", "TCPI_OPT_ECN", "TCPI_OPT_ECN_SEEN",
                 "TCPI_OPT_SYN_DATA", "TCPI_OPT_USEC_TS")
# netinet/tcp.h name -> our name (include/net/tcp.h's, which the kernel uses)
_NETINET_NAMES = {"TCPOPT_MAXSEG": "TCPOPT_MSS", "TCPOPT_WINDOW": "TCPOPT_WINDOW",
                  "TCPOPT_SACK_PERMITTED": "TCPOPT_SACK_PERM", "TCPOPT_TIMESTAMP": "TCPOPT_TIMESTAMP"}


def seq_add(seq: int, n: int) -> int:
    return (seq + n) % SEQ_MOD


def seq_diff(a: int, b: int) -> int:
    """a - b in sequence space, as a signed 32-bit distance."""
    d = (a - b) % SEQ_MOD
    return d - SEQ_MOD if d >= 1 << 31 else d


def header_constants(include: str = "/usr/include") -> dict[str, int]:
    """The values the installed kernel/libc headers give the constants above, by our
    names: linux/tcp.h (repair options, queues, tcpi_options bits), linux/sockios.h and
    asm-generic/ioctls.h (SIOC*), netinet/tcp.h (TCPOPT_*). Names the headers lack
    (older headers) are left out; compare with this module's globals."""
    def defines(path: str) -> dict[str, str]:
        try:
            with open(path) as f:
                return dict(re.findall(r"^\s*#\s*define\s+(\w+)\s+(\S+)", f.read(), re.M))
        except FileNotFoundError:
            return {}

    def value(table: dict[str, str], name: str) -> int | None:
        for _ in range(4):                      # follow aliases like SIOCINQ -> FIONREAD
            raw = table.get(name)
            if raw is None:
                return None
            try:
                return int(raw.strip("()"), 0)
            except ValueError:
                name = raw.strip("()")
        return None

    found: dict[str, int] = {}
    tcp = defines(f"{include}/linux/tcp.h")
    sockios = {**defines(f"{include}/asm-generic/ioctls.h"), **defines(f"{include}/linux/sockios.h")}
    for name in _HEADER_NAMES:
        v = value(tcp, name)
        if v is not None:
            found[name] = v
    for name in ("SIOCINQ", "SIOCOUTQ", "SIOCOUTQNSD"):
        v = value(sockios, name)
        if v is not None:
            found[name] = v
    try:
        with open(f"{include}/linux/tcp.h") as f:
            m = re.search(r"enum\s*\{\s*(TCP_NO_QUEUE\s*,[^}]*)\}", f.read())
    except FileNotFoundError:
        m = None
    if m:   # the queue enum counts from 0
        for i, name in enumerate(n.strip() for n in m.group(1).split(",")):
            if name.startswith("TCP_") and name.endswith("_QUEUE"):
                found[name] = i
    netinet = defines(f"{include}/netinet/tcp.h")
    for theirs, ours in _NETINET_NAMES.items():
        v = value(netinet, theirs)
        if v is not None:
            found[ours] = v
    return found


# ----------------------------------------------------------------------------- TCP_INFO

# (offset, struct format) of the struct tcp_info fields we use; offsets checked with
# offsetof() against /usr/include/linux/tcp.h (232-byte layout) on x86-64. Byte 6 holds
# the two 4-bit window scales, snd in the low nibble (GCC's little-endian bitfields).
# tcpi_rcv_wnd (232) is newer than those headers (Linux 6.2) and read only when present.
_TCP_INFO_FIELDS: dict[str, tuple[int, str]] = {
    "state": (0, "B"), "ca_state": (1, "B"), "retransmits": (2, "B"), "probes": (3, "B"),
    "backoff": (4, "B"), "options": (5, "B"), "wscales": (6, "B"),
    "rto_us": (8, "I"), "ato_us": (12, "I"), "snd_mss": (16, "I"), "rcv_mss": (20, "I"),
    "unacked": (24, "I"), "sacked": (28, "I"), "lost": (32, "I"), "retrans": (36, "I"),
    "pmtu": (60, "I"), "rcv_ssthresh": (64, "I"), "rtt_us": (68, "I"), "rttvar_us": (72, "I"),
    "snd_ssthresh": (76, "I"), "snd_cwnd": (80, "I"), "advmss": (84, "I"), "reordering": (88, "I"),
    "total_retrans": (100, "I"), "bytes_acked": (120, "Q"), "bytes_received": (128, "Q"),
    "segs_out": (136, "I"), "segs_in": (140, "I"), "notsent_bytes": (144, "I"), "min_rtt_us": (148, "I"),
    "delivered": (192, "I"), "bytes_sent": (200, "Q"), "bytes_retrans": (208, "Q"),
    "snd_wnd": (228, "I"), "rcv_wnd": (232, "I"),
}
TCP_INFO_LEN = 256          # ask for more than we parse; Linux returns min(asked, its size)


@dataclass(frozen=True)
class TcpInfo:
    """The parts of struct tcp_info a handoff cares about (units as Linux gives them)."""

    state: int
    ca_state: int
    retransmits: int
    probes: int
    backoff: int
    options: int
    snd_wscale: int
    rcv_wscale: int
    rto_us: int
    ato_us: int
    snd_mss: int
    rcv_mss: int
    unacked: int
    sacked: int
    lost: int
    retrans: int
    pmtu: int
    rcv_ssthresh: int
    rtt_us: int
    rttvar_us: int
    snd_ssthresh: int
    snd_cwnd: int
    advmss: int
    reordering: int
    total_retrans: int
    bytes_acked: int
    bytes_received: int
    segs_out: int
    segs_in: int
    notsent_bytes: int
    min_rtt_us: int
    delivered: int
    bytes_sent: int
    bytes_retrans: int
    snd_wnd: int
    rcv_wnd: int | None      # None: kernel older than 6.2

    @classmethod
    def parse(cls, raw: bytes) -> "TcpInfo":
        vals: dict[str, Any] = {}
        for name, (off, fmt) in _TCP_INFO_FIELDS.items():
            size = struct.calcsize(fmt)
            vals[name] = struct.unpack_from("=" + fmt, raw, off)[0] if off + size <= len(raw) else None
        wscales = vals.pop("wscales")
        vals["snd_wscale"], vals["rcv_wscale"] = wscales & 0xF, wscales >> 4
        return cls(**vals)

    @property
    def timestamps(self) -> bool:
        return bool(self.options & TCPI_OPT_TIMESTAMPS)

    @property
    def sack(self) -> bool:
        return bool(self.options & TCPI_OPT_SACK)

    @property
    def wscale(self) -> bool:
        return bool(self.options & TCPI_OPT_WSCALE)


def tcp_info(sock: socket.socket) -> TcpInfo:
    return TcpInfo.parse(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN))


# ----------------------------------------------------------------------------- state

@dataclass(frozen=True)
class RepairWindow:
    """struct tcp_repair_window. snd_wl1: sequence number of the peer's segment that last
    updated snd_wnd; snd_wnd: the peer's window in bytes (already scaled); max_window:
    the largest snd_wnd seen; rcv_wnd/rcv_wup: the window we last advertised and rcv_nxt
    at that moment (its right edge, rcv_wup + rcv_wnd, never moves left)."""

    snd_wl1: int
    snd_wnd: int
    max_window: int
    rcv_wnd: int
    rcv_wup: int

    FORMAT = "=5I"

    def pack(self) -> bytes:
        return struct.pack(self.FORMAT, self.snd_wl1, self.snd_wnd, self.max_window, self.rcv_wnd, self.rcv_wup)

    @classmethod
    def unpack(cls, raw: bytes) -> "RepairWindow":
        return cls(*struct.unpack(cls.FORMAT, raw))


@dataclass(frozen=True)
class CongestionInfo:
    """Congestion and RTT state at the freeze, from TCP_INFO. For information only:
    Linux offers no way to set these on a restored socket."""

    snd_cwnd: int            # segments
    snd_ssthresh: int        # segments (0x7fffffff: still in slow start)
    rtt_us: int
    rttvar_us: int
    rto_us: int
    ca_state: int            # TCP_CA_Open/Disorder/CWR/Recovery/Loss = 0..4
    snd_mss: int             # mss_cache: payload bytes per segment, options deducted
    rcv_mss: int
    total_retrans: int

    @classmethod
    def from_info(cls, info: TcpInfo) -> "CongestionInfo":
        return cls(info.snd_cwnd, info.snd_ssthresh, info.rtt_us, info.rttvar_us, info.rto_us, info.ca_state,
                   info.snd_mss, info.rcv_mss, info.total_retrans)


@dataclass(frozen=True)
class TcpState:
    """Everything needed to continue an established IPv4 TCP connection elsewhere.

    Sequence space: the send queue holds the bytes [snd_una, write_seq) of which the
    last `unsent` were never transmitted ([snd_nxt, write_seq)); the receive queue holds
    [copied_seq, rcv_nxt), received in order and acknowledged but not yet read by the
    application. All sequence numbers are mod 2**32.

    This is also the form an offload engine hands a connection back in: whoever holds
    the connection fills the same fields (see `advanced()` for how they move)."""

    local_ip: str
    local_port: int
    remote_ip: str
    remote_port: int
    snd_una: int
    send_queue: bytes
    unsent: int
    rcv_nxt: int
    recv_queue: bytes
    window: RepairWindow
    mss: int                 # the peer's MSS option (our rx_opt.mss_clamp)
    wscale_ok: bool
    snd_wscale: int          # scale the peer applies to the windows it sends us
    rcv_wscale: int          # scale we apply to the windows we send
    sack_ok: bool
    timestamps: bool
    ts_val: int              # TCP_TIMESTAMP: our TSval clock at ts_clock_ns (bit 0: usec units)
    ts_clock_ns: int         # CLOCK_MONOTONIC (ns) when ts_val was read; only this boot
    sndbuf: int = 0          # SO_SNDBUF / SO_RCVBUF as read (the kernel's doubled values)
    rcvbuf: int = 0
    info: CongestionInfo | None = None

    def __post_init__(self):
        if not 0 <= self.unsent <= len(self.send_queue):
            raise ValueError(f"unsent {self.unsent} outside the send queue ({len(self.send_queue)} bytes)")
        for name in ("snd_una", "rcv_nxt", "ts_val"):
            if not 0 <= getattr(self, name) < SEQ_MOD:
                raise ValueError(f"{name} {getattr(self, name)} is not a 32-bit value")
        if not (0 <= self.snd_wscale <= TCP_MAX_WSCALE and 0 <= self.rcv_wscale <= TCP_MAX_WSCALE):
            raise ValueError("window scale above 14")

    # -- derived sequence numbers
    @property
    def write_seq(self) -> int:
        """End of the send queue: what TCP_QUEUE_SEQ returns for TCP_SEND_QUEUE."""
        return seq_add(self.snd_una, len(self.send_queue))

    @property
    def snd_nxt(self) -> int:
        return seq_add(self.snd_una, len(self.send_queue) - self.unsent)

    @property
    def copied_seq(self) -> int:
        """Start of the receive queue: the next byte the application would read."""
        return seq_add(self.rcv_nxt, -len(self.recv_queue))

    @property
    def in_flight(self) -> int:
        """Bytes sent but not acknowledged."""
        return len(self.send_queue) - self.unsent

    @property
    def ts_usec(self) -> bool:
        return bool(self.ts_val & 1)

    def ts_at(self, clock_ns: int | None) -> int:
        """The value to give TCP_TIMESTAMP at CLOCK_MONOTONIC `clock_ns` so the TSval clock
        runs on from the freeze (None: so it carries on from where it stopped), never
        below a TSval the connection already sent. Reading TCP_TIMESTAMP loses bit 0 of
        the clock (it carries the usec flag; cleared in ms mode), so ts_val may be one
        tick behind the last TSval on the wire: in ms mode round up to the next even
        value above ts_val + elapsed (at most 2 ms ahead); in usec mode bit 0 was set,
        which already rounds up."""
        unit = 1_000 if self.ts_usec else 1_000_000
        elapsed = 0 if clock_ns is None else max(0, clock_ns - self.ts_clock_ns) // unit
        if self.ts_usec:
            return (self.ts_val + elapsed) % SEQ_MOD | 1
        val = self.ts_val + elapsed + 1
        return (val + (val & 1)) % SEQ_MOD

    # -- the connection moving on while someone else holds it
    def advanced(self, *, written: bytes = b"", transmitted: int = 0, acked: int = 0, received: bytes = b"",
                 read: int = 0, snd_wnd: int | None = None) -> "TcpState":
        """The state after the holder of the connection (an offload engine) has moved it
        on, applied in this order:
          written      bytes the application queued for sending (end of send queue)
          transmitted  how many of the unsent bytes went out (snd_nxt moves)
          acked        how many bytes the peer acknowledged (snd_una moves)
          received     bytes received in order from the peer and acknowledged
          read         how many received bytes the application consumed (head of the
                       receive queue)
          snd_wnd      the peer's latest window (bytes), from its latest ACK
        Windows follow as Linux keeps them: our advertised window keeps its size and its
        right edge moves with rcv_nxt (rcv_wup = rcv_nxt once we have ACKed); snd_wl1
        becomes rcv_nxt when the peer spoke (Linux would record the start of the segment
        that updated the window; restore()'s window probe sets it to rcv_nxt - 1 anyway,
        so the peer's answer updates the window). The timestamp clock runs on by itself
        (ts_at); `info` is left as it was."""
        send_queue = self.send_queue + written
        unsent = self.unsent + len(written)
        if not 0 <= transmitted <= unsent:
            raise ValueError(f"cannot transmit {transmitted} of {unsent} unsent bytes")
        unsent -= transmitted
        if not 0 <= acked <= len(send_queue) - unsent:
            raise ValueError(f"cannot acknowledge {acked} of {len(send_queue) - unsent} bytes in flight")
        if not 0 <= read <= len(self.recv_queue) + len(received):
            raise ValueError(f"cannot read {read} bytes from a {len(self.recv_queue) + len(received)}-byte queue")
        rcv_nxt = seq_add(self.rcv_nxt, len(received))
        w = self.window
        wnd = w.snd_wnd if snd_wnd is None else snd_wnd
        peer_spoke = bool(received or acked or snd_wnd is not None)
        window = RepairWindow(
            snd_wl1=rcv_nxt if peer_spoke else w.snd_wl1,
            snd_wnd=wnd,
            max_window=max(w.max_window, wnd),
            rcv_wnd=max(w.rcv_wnd, seq_diff(seq_add(w.rcv_wup, w.rcv_wnd), rcv_nxt)) if received else w.rcv_wnd,
            rcv_wup=rcv_nxt if received else w.rcv_wup)
        return dataclasses.replace(self, snd_una=seq_add(self.snd_una, acked), send_queue=send_queue[acked:],
                                   unsent=unsent, rcv_nxt=rcv_nxt, recv_queue=(self.recv_queue + received)[read:],
                                   window=window)

    # -- JSON
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: queues in base64; derived numbers under "derived" (for
        reading; from_dict checks them)."""
        d: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bytes):
                v = base64.b64encode(v).decode()
            elif dataclasses.is_dataclass(v):
                v = dataclasses.asdict(v)
            d[f.name] = v
        d["derived"] = {"write_seq": self.write_seq, "snd_nxt": self.snd_nxt, "copied_seq": self.copied_seq,
                        "send_queue_len": len(self.send_queue), "recv_queue_len": len(self.recv_queue)}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TcpState":
        d = dict(d)
        derived = d.pop("derived", None)
        d["send_queue"] = base64.b64decode(d["send_queue"])
        d["recv_queue"] = base64.b64decode(d["recv_queue"])
        d["window"] = RepairWindow(**d["window"])
        if d.get("info") is not None:
            d["info"] = CongestionInfo(**d["info"])
        state = cls(**d)
        if derived is not None:
            mine = state.to_dict()["derived"]
            if mine != derived:
                raise ValueError(f"derived fields disagree: stored {derived}, computed {mine}")
        return state


# ----------------------------------------------------------------------------- freeze

class FreezeError(RuntimeError):
    pass


def _getint(sock: socket.socket, opt: int) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, opt)


def _setint(sock: socket.socket, opt: int, val: int) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, opt, val)


def _ioctl_int(sock: socket.socket, req: int) -> int:
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), req, b"\0" * 4))[0]


def _peek_queue(sock: socket.socket, queue: int) -> tuple[int, bytes]:
    """(TCP_QUEUE_SEQ, contents) of one queue, read in repair mode. The sequence number
    is read before and after the contents and must not have moved (data arriving in
    between would otherwise shift copied_seq)."""
    _setint(sock, TCP_REPAIR_QUEUE, queue)
    try:
        for _ in range(100):
            seq = _getint(sock, TCP_QUEUE_SEQ) % SEQ_MOD
            size = _ioctl_int(sock, SIOCOUTQ if queue == TCP_SEND_QUEUE else SIOCINQ)
            data = b""
            if size:
                # The send queue is copied skb by skb into the buffer: leave room for
                # data queued since the ioctl so the copy never runs out of buffer.
                try:
                    data = sock.recv(size + 65536, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                except BlockingIOError:
                    data = b""
            if _getint(sock, TCP_QUEUE_SEQ) % SEQ_MOD == seq:
                return seq, data
        raise FreezeError("queue kept growing while being read: is the socket still on the wire?")
    finally:
        # Never linger in TCP_SEND_QUEUE: a transmit attempt in that mode marks the
        # unsent data as sent without sending it (tcp_write_xmit's repair branch).
        _setint(sock, TCP_REPAIR_QUEUE, TCP_NO_QUEUE)


def _new_data_sent(info: TcpInfo) -> int:
    # bytes_sent counts every data byte __tcp_transmit_skb() put on the wire,
    # retransmissions included; the repair branch of tcp_write_xmit() never gets there.
    return info.bytes_sent - info.bytes_retrans


def _read_send_queue(sock: socket.socket) -> tuple[int, bytes, int, int]:
    """(write_seq, contents, SIOCOUTQNSD, bytes marked sent without being sent while we
    were in TCP_SEND_QUEUE mode). The last is what left the unsent count beyond what
    Linux actually transmitted meanwhile (it errs low if it errs)."""
    before = _new_data_sent(tcp_info(sock))
    unsent_before = _ioctl_int(sock, SIOCOUTQNSD)
    write_seq, data = _peek_queue(sock, TCP_SEND_QUEUE)
    unsent = _ioctl_int(sock, SIOCOUTQNSD)
    transmitted = _new_data_sent(tcp_info(sock)) - before
    return write_seq, data, unsent, max(0, unsent_before - unsent - transmitted)


def _read_state(sock: socket.socket, phantom: int = 0) -> tuple[TcpState, int]:
    ts_val = _getint(sock, TCP_TIMESTAMP) % SEQ_MOD
    ts_clock_ns = time.monotonic_ns()
    info = tcp_info(sock)
    if info.state != TCP_ESTABLISHED:
        raise FreezeError(f"socket is in TCP state {info.state}, only ESTABLISHED ({TCP_ESTABLISHED}) is handled")
    window = RepairWindow.unpack(sock.getsockopt(socket.IPPROTO_TCP, TCP_REPAIR_WINDOW, 20))
    mss = _getint(sock, socket.TCP_MAXSEG)       # repair mode: rx_opt.mss_clamp
    write_seq, send_queue, unsent, marked = _read_send_queue(sock)
    phantom += marked
    rcv_nxt, recv_queue = _peek_queue(sock, TCP_RECV_QUEUE)
    local_ip, local_port = sock.getsockname()[:2]
    remote_ip, remote_port = sock.getpeername()[:2]
    state = TcpState(
        local_ip=local_ip, local_port=local_port, remote_ip=remote_ip, remote_port=remote_port,
        snd_una=seq_add(write_seq, -len(send_queue)), send_queue=send_queue,
        unsent=min(unsent + phantom, len(send_queue)),
        rcv_nxt=rcv_nxt, recv_queue=recv_queue, window=window, mss=mss,
        wscale_ok=info.wscale, snd_wscale=info.snd_wscale, rcv_wscale=info.rcv_wscale,
        sack_ok=info.sack, timestamps=info.timestamps, ts_val=ts_val, ts_clock_ns=ts_clock_ns,
        sndbuf=sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
        rcvbuf=sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
        info=CongestionInfo.from_info(info))
    return state, phantom


def read_state(sock: socket.socket) -> TcpState:
    """One reading of the state of a socket already in repair mode. Each queue is read
    atomically with its sequence number, but the reads are separate system calls: if
    segments still reach the socket, the whole may be inconsistent (see freeze). Data
    that Linux marks as sent without sending it during this very reading is counted
    as unsent (see the module docstring); marks made before it cannot be seen."""
    return _read_state(sock)[0]


def _same_connection_state(a: TcpState, b: TcpState) -> bool:
    return (a.snd_una, a.send_queue, a.unsent, a.rcv_nxt, a.recv_queue, a.window) == \
        (b.snd_una, b.send_queue, b.unsent, b.rcv_nxt, b.recv_queue, b.window)


def freeze(sock: socket.socket, *, attempts: int = 20) -> TcpState:
    """Put `sock` into repair mode and read its state.

    Repair mode stops the application, not the connection: segments reaching the socket
    are still processed and its queued data still goes out. For a state that stays
    true, cut the socket off the wire first. freeze() reads until two consecutive
    readings agree (`attempts` tries) and raises FreezeError if they never do; data
    Linux marked as sent without sending it during any of these readings stays
    counted as unsent. On any error a socket that freeze() put into repair mode is
    taken out again (without a window probe), as it was."""
    if tcp_info(sock).state != TCP_ESTABLISHED:
        raise FreezeError("only an ESTABLISHED socket can be frozen")
    was_frozen = bool(_getint(sock, TCP_REPAIR))
    _setint(sock, TCP_REPAIR, TCP_REPAIR_ON)
    try:
        last, phantom = _read_state(sock)
        for _ in range(attempts):
            now, phantom = _read_state(sock, phantom)
            if _same_connection_state(last, now):
                return now
            last = now
        raise FreezeError(f"state kept changing over {attempts} readings: is the socket still on the wire?")
    except BaseException:
        if not was_frozen:
            _setint(sock, TCP_REPAIR, TCP_REPAIR_OFF_NO_WP)
        raise


def thaw(sock: socket.socket, *, window_probe: bool = False) -> None:
    """Take a frozen socket out of repair mode: it carries on as if nothing happened."""
    _setint(sock, TCP_REPAIR, TCP_REPAIR_OFF if window_probe else TCP_REPAIR_OFF_NO_WP)


def release(sock: socket.socket) -> None:
    """Close a (frozen) socket so that Linux sends nothing: in repair mode close() takes
    tcp_disconnect()'s silent branch (no FIN, no RST, even with unread data) and the
    socket goes straight to CLOSE, without TIME_WAIT. The connection's port is free for
    restore() right after."""
    if sock.fileno() >= 0:
        if not _getint(sock, TCP_REPAIR):
            _setint(sock, TCP_REPAIR, TCP_REPAIR_ON)
        sock.close()


# ----------------------------------------------------------------------------- restore

def _send_all(sock: socket.socket, data: bytes, what: str) -> None:
    # Repair-mode writes: nothing will ever make room in a full buffer, so fail rather
    # than wait (MSG_DONTWAIT) if the buffers were not sized for the queues.
    view = memoryview(data)
    while view:
        try:
            n = sock.send(view, socket.MSG_DONTWAIT)
        except BlockingIOError as e:
            raise OSError(errno.ENOBUFS, f"refilling the {what}: buffer full with {len(view)} bytes to go") from e
        except OSError as e:
            raise OSError(e.errno, f"refilling the {what}: {e.strerror}") from e
        if n <= 0:
            raise OSError(errno.EIO, f"refilling the {what}: send returned {n}")
        view = view[n:]


def repair_options(mss: int, *, wscale: tuple[int, int] | None, sack: bool, timestamps: bool) -> bytes:
    """The TCP_REPAIR_OPTIONS argument: struct tcp_repair_opt {opt_code, opt_val} pairs.
    wscale is (snd_wscale, rcv_wscale) or None when window scaling is off."""
    opts = [(TCPOPT_MSS, mss)]
    if wscale is not None:
        opts.append((TCPOPT_WINDOW, wscale[0] | wscale[1] << 16))
    if sack:
        opts.append((TCPOPT_SACK_PERM, 0))
    if timestamps:
        opts.append((TCPOPT_TIMESTAMP, 0))
    return b"".join(struct.pack("=II", code, val) for code, val in opts)


def _buffer_size(dumped: int, queued: int) -> int:
    # Room for the queue with skb overhead (truesize ~1.5x payload for MSS-sized skbs);
    # the value is what SO_*BUFFORCE takes, i.e. half of what the kernel reports.
    return max(dumped, 2 * queued + (128 << 10)) // 2


def restore(ns: Namespace | None, state: TcpState, *, clock: str = "running", window_probe: bool = True,
            buffers: bool = True) -> socket.socket:
    """A new socket in namespace `ns` (None: the caller's own) carrying on `state`'s
    connection. Nothing is sent until the end: then the window probe (a pure ACK that
    makes the peer answer with its current ACK and window) and the never-sent data.

    clock:   "running": the TSval clock continues as if it had run since the freeze
             (what the peer expects after a handoff); "paused": it carries on from
             where it stopped (see ts_at for the 1-tick rounding).
    buffers: size SO_SNDBUF/SO_RCVBUF to the frozen socket's values (at least enough for
             the queues). Like any SO_*BUF setting this turns buffer autotuning off;
             without it the refill may not fit in the default buffers.

    The send queue is refilled in two parts, as CRIU does: the sent-but-unacknowledged
    bytes in repair mode (Linux records them as sent and retransmits them on its timers
    if the peer does not acknowledge them), the never-sent tail after repair is off, as
    ordinary data subject to the windows."""
    if clock not in ("running", "paused"):
        raise ValueError(f"clock must be 'running' or 'paused', not {clock!r}")
    if ipaddress.ip_address(state.local_ip).version != 4:
        raise ValueError("only IPv4 is handled")
    sock = _new_socket(ns)
    try:
        _restore_into(sock, state, clock, window_probe, buffers)
    except BaseException:
        sock.close()
        raise
    return sock


def _restore_into(sock: socket.socket, st: TcpState, clock: str, window_probe: bool, buffers: bool) -> None:
    _setint(sock, TCP_REPAIR, TCP_REPAIR_ON)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if buffers:
        sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, _buffer_size(st.sndbuf, len(st.send_queue)))
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, _buffer_size(st.rcvbuf, len(st.recv_queue)))
    # Queue starts; only possible in state CLOSE, i.e. before connect().
    _setint(sock, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE)
    _setint(sock, TCP_QUEUE_SEQ, _as_c_int(st.snd_una))
    _setint(sock, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE)
    _setint(sock, TCP_QUEUE_SEQ, _as_c_int(st.copied_seq))
    _setint(sock, TCP_REPAIR_QUEUE, TCP_NO_QUEUE)
    # connect() sizes mss_cache from the MSS clamp it finds; without this it would be
    # the 536-byte default for good (TCP_REPAIR_OPTIONS does not resync it).
    _setint(sock, socket.TCP_MAXSEG, st.mss)
    sock.bind((st.local_ip, st.local_port))
    sock.connect((st.remote_ip, st.remote_port))       # repair mode: no SYN, ESTABLISHED at once
    _setint(sock, socket.TCP_MAXSEG, 0)                  # drop the user MSS again (it also caps advmss)
    sock.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR_OPTIONS, repair_options(
        st.mss, wscale=(st.snd_wscale, st.rcv_wscale) if st.wscale_ok else None, sack=st.sack_ok,
        timestamps=st.timestamps))
    _setint(sock, TCP_TIMESTAMP, _as_c_int(st.ts_at(time.monotonic_ns() if clock == "running" else None)))
    # Queues: receive queue first (the window check needs the final rcv_nxt), then the
    # part of the send queue that had been transmitted.
    if st.recv_queue:
        _setint(sock, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE)
        _send_all(sock, st.recv_queue, "receive queue")
    if st.in_flight:
        _setint(sock, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE)
        _send_all(sock, st.send_queue[:st.in_flight], "send queue")
    _setint(sock, TCP_REPAIR_QUEUE, TCP_NO_QUEUE)
    sock.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR_WINDOW, st.window.pack())
    _setint(sock, TCP_REPAIR, TCP_REPAIR_OFF if window_probe else TCP_REPAIR_OFF_NO_WP)
    if st.unsent:
        _send_unsent(sock, st.send_queue[st.in_flight:])


def _send_unsent(sock: socket.socket, data: bytes) -> None:
    # Ordinary sends now, which may wait for the peer to make room; a deadline keeps a
    # peer that never does from hanging the restore.
    view = memoryview(data)
    deadline = time.monotonic() + 5.0
    while view:
        try:
            n = sock.send(view, socket.MSG_DONTWAIT)
            view = view[n:]
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OSError(errno.ETIMEDOUT, f"restoring {len(view)} unsent bytes: send buffer stays full")
            select.select([], [sock], [], min(left, 0.05))


def _new_socket(ns: Namespace | None) -> socket.socket:
    """A TCP socket in namespace `ns` (closed with it), or in the caller's if None."""
    if ns is None:
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    return ns.socket(socket.AF_INET, socket.SOCK_STREAM)


def _as_c_int(v: int) -> int:
    """A 32-bit value as the signed int setsockopt(int) carries."""
    v %= SEQ_MOD
    return v - SEQ_MOD if v >= 1 << 31 else v


# ----------------------------------------------------------------------------- pairs

@dataclass(frozen=True)
class PairOptions:
    """What make_connected_pair() pretends the handshake negotiated."""

    mss: int = 1460
    wscale: int = 7          # each side's receive scale (so also the other's send scale)
    sack: bool = True
    timestamps: bool = True


def make_connected_pair(ns_a: Namespace | None, addr_a: tuple[str, int], ns_b: Namespace | None,
                        addr_b: tuple[str, int], isn_a: int, isn_b: int,
                        *, options: PairOptions = PairOptions(), window_probe: bool = True,
                        ) -> tuple[socket.socket, socket.socket]:
    """Two sockets, in namespaces ns_a and ns_b (None: the caller's), of one ESTABLISHED
    connection that never had a handshake: both are built with TCP_REPAIR. isn_a and
    isn_b are the initial send sequence numbers; the first data byte of each side is
    isn + 1, as after a SYN. A port 0 picks a free port. Each side's send window is
    what the other's connect() chose to advertise, so the connection starts as a fresh
    one would (minus the RTT sample a handshake gives)."""
    socks = []
    try:
        for ns, addr in ((ns_a, addr_a), (ns_b, addr_b)):
            s = _new_socket(ns)
            socks.append(s)
            _setint(s, TCP_REPAIR, TCP_REPAIR_ON)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
        a, b = socks
        for s, isn_out, isn_in in ((a, isn_a, isn_b), (b, isn_b, isn_a)):
            _setint(s, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE)
            _setint(s, TCP_QUEUE_SEQ, _as_c_int(seq_add(isn_out, 1)))
            _setint(s, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE)
            _setint(s, TCP_QUEUE_SEQ, _as_c_int(seq_add(isn_in, 1)))
            _setint(s, TCP_REPAIR_QUEUE, TCP_NO_QUEUE)
            _setint(s, socket.TCP_MAXSEG, options.mss)
        a.connect(b.getsockname())
        b.connect(a.getsockname())
        opts = repair_options(options.mss, wscale=(options.wscale, options.wscale), sack=options.sack,
                              timestamps=options.timestamps)
        for s in socks:
            _setint(s, socket.TCP_MAXSEG, 0)
            s.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR_OPTIONS, opts)
        wa = RepairWindow.unpack(a.getsockopt(socket.IPPROTO_TCP, TCP_REPAIR_WINDOW, 20))
        wb = RepairWindow.unpack(b.getsockopt(socket.IPPROTO_TCP, TCP_REPAIR_WINDOW, 20))
        # Each side's send window is what the other advertises, as if its SYN said so.
        for s, mine, theirs, peer_isn in ((a, wa, wb, isn_b), (b, wb, wa, isn_a)):
            w = RepairWindow(snd_wl1=seq_add(peer_isn, 1), snd_wnd=theirs.rcv_wnd, max_window=theirs.rcv_wnd,
                             rcv_wnd=mine.rcv_wnd, rcv_wup=mine.rcv_wup)
            s.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR_WINDOW, w.pack())
        for s in socks:
            _setint(s, TCP_REPAIR, TCP_REPAIR_OFF if window_probe else TCP_REPAIR_OFF_NO_WP)
    except BaseException:
        for s in socks:
            if s.fileno() >= 0:
                try:
                    _setint(s, TCP_REPAIR, TCP_REPAIR_ON)   # close silently
                except OSError:
                    pass
                s.close()
        raise
    return a, b
