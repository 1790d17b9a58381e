"""Reference models of IPv4 fragmentation and reassembly, behaving as Linux does.

Pure Python, no scapy: the benches of the fragmentation offload (issue 6) compare the
hardware against these models, and tests/linux/test_linuxnet.py compares these models
against the real kernel. Written from RFC 791, RFC 5722 and a reading of Linux 6.x
`net/ipv4/ip_fragment.c`, `net/ipv4/inet_fragment.c`, `net/ipv4/ip_output.c` and
`net/ipv4/ip_input.c`; never copied from them.

`fragment()` is the transmit side, `Reassembler` the receive side. Every rule below is
tagged with how we know Linux does it:

- [verified] the differential test (tests/linux/test_linuxnet.py) feeds the same bytes to
  the kernel of this machine (6.18) and to the model, and the delivered datagrams and the
  kernel's reassembly MIB counters agree;
- [read] taken from the kernel source or RFC and not exercised against the kernel.

Packets here are IPv4 packets as bytes, starting at the IP header (no Ethernet header).
"""
from __future__ import annotations

import enum
import struct
from collections import Counter
from dataclasses import dataclass, field

IP_MF = 0x2000
IP_DF = 0x4000
IP_OFFSET = 0x1FFF
IPV4_MIN_MTU = 68          # RFC 791: every host must forward a 68-byte datagram whole
IP_MAX_LEN = 65535
PROTO_UDP = 17

# Option type bits (RFC 791): copied flag, and the two one-byte options.
OPT_COPIED = 0x80
OPT_END = 0
OPT_NOP = 1


# ----------------------------------------------------------------------------- headers

def ones_sum16(data: bytes) -> int:
    """Folded 16-bit one's complement sum of `data` (odd tail padded with zero)."""
    if len(data) % 2:
        data = bytes(data) + b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def header_checksum(header: bytes) -> int:
    """The IPv4 header checksum field value for `header` (its own checksum field ignored)."""
    h = bytearray(header)
    h[10:12] = b"\0\0"
    return ~ones_sum16(bytes(h)) & 0xFFFF


def header_ok(header: bytes) -> bool:
    return ones_sum16(header) == 0xFFFF


def with_checksum(header: bytes | bytearray) -> bytes:
    h = bytearray(header)
    h[10:12] = header_checksum(h).to_bytes(2, "big")
    return bytes(h)


@dataclass(frozen=True)
class Ipv4:
    """The fields of an IPv4 header that fragmentation and reassembly use."""

    ihl: int            # header length in bytes
    tos: int
    tot_len: int
    ident: int
    frag_off: int       # the raw 16-bit field: flags and offset in 8-byte units
    ttl: int
    proto: int
    src: bytes
    dst: bytes

    @property
    def offset(self) -> int:
        """Fragment offset in bytes."""
        return (self.frag_off & IP_OFFSET) * 8

    @property
    def mf(self) -> bool:
        return bool(self.frag_off & IP_MF)

    @property
    def df(self) -> bool:
        return bool(self.frag_off & IP_DF)

    @property
    def is_fragment(self) -> bool:
        return bool(self.frag_off & (IP_MF | IP_OFFSET))

    @property
    def key(self) -> tuple[bytes, bytes, int, int]:
        """The reassembly key Linux uses (ip_find): source, destination, protocol, id."""
        return (self.src, self.dst, self.proto, self.ident)


def parse(packet: bytes) -> Ipv4:
    """Header fields of `packet`; raises ValueError when it is not a plausible IPv4 header
    (the checksum is not checked here)."""
    if len(packet) < 20:
        raise ValueError(f"{len(packet)} bytes: shorter than an IPv4 header")
    vi, tos, tot_len, ident, frag_off, ttl, proto, _csum = struct.unpack("!BBHHHBBH", packet[:12])
    if vi >> 4 != 4 or (vi & 15) < 5:
        raise ValueError(f"version/ihl byte {vi:#04x} is not IPv4")
    ihl = (vi & 15) * 4
    if len(packet) < ihl:
        raise ValueError(f"{len(packet)} bytes: shorter than its {ihl}-byte header")
    return Ipv4(ihl, tos, tot_len, ident, frag_off, ttl, proto, bytes(packet[12:16]), bytes(packet[16:20]))


def ipv4_header(src: bytes, dst: bytes, proto: int, payload_len: int, ident: int, *, ttl: int = 64,
                tos: int = 0, frag_off: int = 0, options: bytes = b"") -> bytes:
    """A complete IPv4 header (checksum filled). `options` is padded to 4 bytes with END."""
    options = options + bytes(-len(options) % 4)
    ihl = 20 + len(options)
    if ihl > 60:
        raise ValueError("IPv4 options longer than 40 bytes")
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl // 4, tos, ihl + payload_len, ident, frag_off, ttl, proto, 0,
                    src, dst) + options
    return with_checksum(h)


def udp_datagram(src: bytes, dst: bytes, sport: int, dport: int, payload: bytes, ident: int, *,
                 ttl: int = 64, tos: int = 0, df: bool = False, options: bytes = b"") -> bytes:
    """An IPv4/UDP datagram with a correct UDP checksum."""
    ulen = 8 + len(payload)
    pseudo = src + dst + struct.pack("!BBH", 0, PROTO_UDP, ulen)
    seg = struct.pack("!HHHH", sport, dport, ulen, 0) + payload
    csum = ~ones_sum16(pseudo + seg) & 0xFFFF or 0xFFFF
    seg = seg[:6] + csum.to_bytes(2, "big") + seg[8:]
    return ipv4_header(src, dst, PROTO_UDP, len(seg), ident, ttl=ttl, tos=tos,
                       frag_off=IP_DF if df else 0, options=options) + seg


def udp_payload(datagram: bytes) -> tuple[int, int, bytes] | None:
    """(source port, destination port, payload) of a whole IPv4/UDP datagram if Linux's UDP
    would hand it to a socket, else None: the UDP length must lie between 8 and the IP
    payload length (bytes past it are ignored) and the checksum must verify or be zero
    (udp_rcv/__udp4_lib_rcv) [verified by the differential cases whose fragments carry
    different bytes]."""
    ip = parse(datagram)
    if ip.proto != PROTO_UDP or ip.is_fragment:
        return None
    seg = datagram[ip.ihl:ip.tot_len]
    if len(seg) < 8:
        return None
    sport, dport, ulen, csum = struct.unpack("!HHHH", seg[:8])
    if ulen < 8 or ulen > len(seg):
        return None
    seg = seg[:ulen]
    if csum and ones_sum16(ip.src + ip.dst + struct.pack("!BBH", 0, PROTO_UDP, ulen) + seg) != 0xFFFF:
        return None
    return sport, dport, bytes(seg[8:])


def _options_for_later_fragments(options: bytes, mode: str) -> bytes:
    """The options a non-first fragment carries.

    mode "linux" (ip_options_fragment): the header keeps its length; every option without
    the copied flag is overwritten with NOPs; parsing stops at END or at a malformed length
    byte, leaving the rest as is [verified: Linux -> bridge with IP_OPTIONS set].
    mode "rfc791": non-copied options are left out and the header shrinks (RFC 791,
    section 3.2, fragmentation procedure step 6) [read]."""
    out = bytearray(options)
    kept = bytearray()
    i = 0
    while i < len(options):
        t = options[i]
        if t == OPT_END:
            break
        if t == OPT_NOP:
            kept.append(t)
            i += 1
            continue
        if i + 1 >= len(options) or options[i + 1] < 2 or i + options[i + 1] > len(options):
            if mode == "rfc791":
                kept += options[i:]
            break
        n = options[i + 1]
        if t & OPT_COPIED:
            kept += options[i:i + n]
        else:
            out[i:i + n] = bytes([OPT_NOP]) * n
        i += n
    if mode == "linux":
        return bytes(out)
    return bytes(kept)


class FragErrorCode(enum.Enum):
    """Why `fragment()` refused a datagram (the hardware's error completions mirror these)."""

    DF_SET = "df_set"              # DF set and the datagram does not fit the MTU
    MTU_TOO_SMALL = "mtu_too_small"  # below 68 bytes, the IPv4 minimum
    MALFORMED = "malformed"        # not an IPv4 datagram (bad version/ihl/length)


class FragError(ValueError):
    def __init__(self, code: FragErrorCode, msg: str):
        super().__init__(f"{code.value}: {msg}")
        self.code = code


def fragment(datagram: bytes, mtu: int, *, options: str = "linux") -> list[bytes]:
    """Fragments of an IPv4 datagram for a link of `mtu` bytes (IP header included),
    as Linux's ip_do_fragment() makes them. Returns [datagram] unchanged when it fits.

    - Every fragment but the last carries (mtu - header length) rounded down to a multiple
      of 8 payload bytes; the last carries the rest [verified, Linux -> bridge, all sizes].
    - Identification, TOS, TTL, protocol and addresses are copied; total length, flags and
      offset are rewritten; the header checksum is recomputed per fragment [verified].
    - Fragmenting a fragment: offsets continue from the input's offset, and the input's MF
      is kept on its last piece (MF set on all others) [read: ip_frag_init/ip_frag_next;
      the reassembly of such pieces by Linux is verified in the differential test].
    - DF set and too big: FragError(DF_SET) (Linux sends ICMP fragmentation-needed and the
      sender gets EMSGSIZE). MTU under 68: FragError(MTU_TOO_SMALL) (Linux never has one).
    - Options: see _options_for_later_fragments. Linux treats options only when it cuts a
      datagram whose offset is 0 (first_frag in ip_do_fragment); re-fragmenting a later
      fragment copies its header as it is. With options="rfc791" the later fragments'
      headers shrink instead, and their payload per fragment grows accordingly.
    - Bytes past the total length (link padding) are ignored.
    - The fragments never carry DF (Linux sets DF on fragments only when re-fragmenting a
      forwarded datagram reassembled from DF fragments, IPSKB_FRAG_PMTU; a host does not).
    """
    if options not in ("linux", "rfc791"):
        raise ValueError(f"options mode {options!r}: use 'linux' or 'rfc791'")
    try:
        ip = parse(datagram)
    except ValueError as e:
        raise FragError(FragErrorCode.MALFORMED, str(e)) from None
    if ip.tot_len < ip.ihl or ip.tot_len > len(datagram):
        raise FragError(FragErrorCode.MALFORMED, f"total length {ip.tot_len} vs {len(datagram)} bytes")
    datagram = bytes(datagram[:ip.tot_len])
    if ip.tot_len <= mtu:
        return [datagram]
    if ip.df:
        raise FragError(FragErrorCode.DF_SET, f"{ip.tot_len} bytes with DF over MTU {mtu}")
    if mtu < IPV4_MIN_MTU:
        raise FragError(FragErrorCode.MTU_TOO_SMALL, f"MTU {mtu} < {IPV4_MIN_MTU}")

    header = bytearray(datagram[:ip.ihl])
    payload = datagram[ip.ihl:]
    offset = ip.offset
    treat_options = offset == 0 and ip.ihl > 20
    keep_mf = ip.mf
    out = []
    pos = 0
    while pos < len(payload):
        room = mtu - len(header)
        n = len(payload) - pos
        if n > room:
            n = room & ~7
        last = pos + n == len(payload)
        h = bytearray(header)
        h[0] = 0x40 | len(h) // 4
        h[2:4] = (len(h) + n).to_bytes(2, "big")
        h[6:8] = ((offset >> 3) | (IP_MF if (not last or keep_mf) else 0)).to_bytes(2, "big")
        out.append(with_checksum(h) + payload[pos:pos + n])
        if treat_options and pos == 0:
            header = header[:20] + _options_for_later_fragments(bytes(header[20:]), options)
            header += bytes(-len(header) % 4)
        pos += n
        offset += n
    return out


# ----------------------------------------------------------------------------- reassembly

# Outcome names: also the keys of Reassembler.counters.
REQUESTS = "requests"              # (event) a fragment reached a reassembly context
NOT_FRAGMENT = "not_fragment"      # a whole datagram, delivered as is
BAD_HEADER = "bad_header"          # version/ihl/total length wrong: dropped before reassembly
BAD_CHECKSUM = "bad_checksum"      # header checksum wrong: the fragment alone is dropped
TRUNCATED = "truncated"            # total length beyond the bytes received
QUEUED = "queued"                  # fragment kept, datagram still incomplete
DUPLICATE = "duplicate"            # inside data already held: fragment ignored, datagram kept
TRIMMED = "trimmed"                # (event, not an outcome) non-last payload cut to 8 bytes
OVERLAP = "overlap"                # datagram dropped (RFC 5722)
BAD_LAST = "bad_last"              # a last fragment disagrees with the known end: dropped
BEYOND_END = "beyond_end"          # data past the end a last fragment set: dropped
EMPTY = "empty"                    # no payload (after trimming): dropped
OVERSIZE = "oversize"              # reassembled length over 65,535: dropped
ECN_MIX = "ecn_mix"                # Not-ECT mixed with ECT/CE fragments: dropped (RFC 3168 5.3)
TOO_FAR = "too_far"                # (event) queue restarted: > max_dist fragments in between
TIMEOUT = "timeout"                # datagram dropped when its timer ran out
REASSEMBLED = "reassembled"        # datagram delivered
# Beyond Linux (the NIC's caps; all off by default):
EVICTED = "evicted"                # dropped, oldest first, to make room
BYPASSED = "bypassed"              # no free context: fragment handed on unchanged
TOO_MANY_FRAGS = "too_many_frags"  # more fragments than max_frags: datagram dropped

# Linux's ip4_frag_ecn(): one bit per ECN codepoint seen among a datagram's fragments.
_ECN_NOT_ECT, _ECN_ECT_1, _ECN_ECT_0, _ECN_CE = 1, 2, 4, 8


def _ecn_outcome(bits: int) -> int | None:
    """ip_frag_ecn_table: None = drop; else the bits to OR into the reassembled TOS."""
    if bits & _ECN_NOT_ECT and bits & ~_ECN_NOT_ECT:
        return None
    if bits & _ECN_CE and bits & (_ECN_ECT_0 | _ECN_ECT_1):
        return 3
    return 0


@dataclass
class _Context:
    """One datagram being reassembled (Linux: struct ipq)."""

    key: tuple
    deadline: float
    seq: int                                     # creation order, for oldest-first eviction
    runs: list[list[int]] = field(default_factory=list)  # sorted [start, end) runs
    tail_end: int = 0                            # end of fragments_tail (highest fragment)
    pieces: dict[int, bytes] = field(default_factory=dict)
    length: int = 0                              # q.len: known or largest end so far
    first_in: bool = False
    last_in: bool = False
    meat: int = 0                                # payload bytes held
    ecn: int = 0
    header: bytes = b""                          # the offset-0 fragment's header
    max_size: int = 0                            # largest fragment (header + payload) kept
    max_df_size: int = 0                         # largest such fragment with DF
    rid: int = 0                                 # per-source fragment count when last seen
    nfrags: int = 0

    def reset(self) -> None:
        """ip_frag_reinit: forget the fragments, keep the key."""
        self.runs, self.tail_end, self.pieces = [], 0, {}
        self.length, self.first_in, self.last_in, self.meat, self.ecn = 0, False, False, 0, 0
        self.header, self.max_size, self.max_df_size, self.nfrags = b"", 0, 0, 0

    def insert(self, off: int, end: int) -> str | None:
        """inet_frag_queue_insert: None when inserted, else DUPLICATE or OVERLAP.

        Linux keeps fragments in "runs": a fragment that starts exactly where the highest
        fragment so far ends is appended to that fragment's run; any other fragment
        starts a run of its own, and runs never merge. A new fragment is a duplicate when
        it lies inside one run; touching any run otherwise is an overlap. Hence a piece
        that straddles two fragments which arrived in order is a duplicate, and the same
        piece over the same two fragments received in reverse order is an overlap
        [verified: differential cases 'inside-run' and 'across-runs']."""
        if not self.runs:
            self.runs.append([off, end])
            self.tail_end = end
            return None
        if self.tail_end < end:
            if off < self.tail_end:
                return OVERLAP
            if off == self.tail_end:
                self.runs[-1][1] = end
            else:
                self.runs.append([off, end])
            self.tail_end = end
            return None
        hit = [r for r in self.runs if r[0] < end and off < r[1]]
        if not hit:
            self.runs.append([off, end])
            self.runs.sort()
            return None
        if len(hit) == 1 and hit[0][0] <= off and end <= hit[0][1]:
            return DUPLICATE
        return OVERLAP


class Reassembler:
    """IPv4 reassembly with Linux's semantics (ip_defrag, IP_DEFRAG_LOCAL_DELIVER), plus
    the caps a NIC needs. Feed packets with push(); it returns the datagrams delivered.

    Header checks before reassembly (ip_rcv_core) [verified]:
    - version 4 and IHL >= 5, the whole header present, total length >= IHL: else
      BAD_HEADER; header checksum wrong: BAD_CHECKSUM (only that fragment is lost; a good
      copy sent later still completes the datagram); total length beyond the bytes:
      TRUNCATED; bytes past the total length (Ethernet padding) are ignored.
    - A packet that is not a fragment (MF clear, offset 0) is delivered as is, even when
      fragments with the same key are pending (they are not touched). Options are carried
      but not validated (Linux's ip_options_compile checks are not modelled) [read].

    Contexts are keyed by (source, destination, protocol, identification) [verified:
    same id from two sources, and same id with two protocols, reassemble apart]. A
    context lives `timeout` seconds from its first fragment; fragments do not extend it
    (inet_frag_create starts the timer once) [verified with a 1 s ipfrag_time]. When
    a datagram completes or is dropped, its key is free at once: later fragments with
    that key start a new context (inet_frag_kill unhashes the queue) [verified: a
    datagram dropped for an overlap and sent again whole is delivered].

    Per fragment, in Linux's order (ip_frag_queue):
    1. Per-source distance (ip_frag_too_far, sysctl ipfrag_max_dist = 64): Linux counts
       the fragments each source sends into any of its contexts; when `max_dist` or more
       of them went to other contexts between two fragments of one context that holds
       data, that context is emptied and restarted with the new fragment (TOO_FAR, a
       ReasmFails) [verified at the boundary: 63 in between keep it, 64 restart it].
    2. Last fragment (MF clear): if it ends before data already held, or a last fragment
       with a different end came before: the datagram is dropped (BAD_LAST) [verified].
       A repeated last fragment with the same end goes on to steps 4 and 5.
    3. Other fragments: a payload that is not a multiple of 8 bytes is cut down to the
       8-byte boundary (TRIMMED) and the cut bytes are forgotten (so a later fragment may
       supply them without overlapping) [verified]; data past the end fixed by a last
       fragment drops the datagram (BEYOND_END) [verified].
    4. A fragment left with no payload (zero length, or under 8 bytes before trimming)
       drops the whole datagram (EMPTY) [verified].
    5. Insertion: inside held data = DUPLICATE, ignored, datagram kept, first bytes win
       (the duplicate's content is never compared) [verified]; any other overlap drops the
       datagram (OVERLAP) [verified]. See _Context.insert for the run rule.
    6. Complete when the offset-0 fragment and a last fragment are in and no gap is left.
       Then: an ECN mix of Not-ECT with ECT/CE drops it (ECN_MIX) [verified]; header
       length + payload > 65,535 drops it (OVERSIZE, ping of death) [verified]; else it
       is delivered with the offset-0 fragment's header (options included), total length
       set, CE ORed in when some fragment had CE and the others ECT, DF set only when the
       largest fragment had DF, header checksum recomputed [read; the payload is
       verified byte-exact].

    Linux also drops every fragment, of new and pending datagrams alike, while its
    fragment memory is above ipfrag_high_thresh (4 MB of skb truesize; inet_frag_find)
    and evicts nothing [read]; that limit is not modelled (the tests raise it to 64 MB).

    NIC caps, beyond Linux (None = off, which is Linux):
    - max_frags: a datagram needing more fragments is dropped (TOO_MANY_FRAGS).
    - max_contexts: with all contexts in use, a fragment of a new datagram either evicts
      the oldest context (when_full="evict", EVICTED) or is handed on unchanged in
      self.bypassed for the host stack to reassemble (when_full="bypass", BYPASSED). A
      bypassed key stays bypassed for `timeout` from its first bypassed fragment, even
      when a context frees up meanwhile: otherwise the datagram's later fragments would
      start a context of their own and it would be split between NIC and host, and lost.
      Hardware needs the same memory (a small table of bypassed keys, or of hash buckets).
    - max_bytes: payload bytes held over all contexts; oldest contexts are evicted to
      make room (EVICTED), including the fragment's own context if it is the oldest.

    Times are whatever the caller uses (seconds, simulated ns, ...), passed as `now`.
    """

    # A datagram that cannot fit 65,535 bytes even with a 20-byte header is dropped at the
    # fragment that shows it (the NIC: its buffers end there), not at completion (Linux).
    early_oversize = False

    def __init__(self, timeout: float = 30.0, max_contexts: int | None = None, max_bytes: int | None = None,
                 max_frags: int | None = None, *, max_dist: int = 64, when_full: str = "evict"):
        if when_full not in ("evict", "bypass"):
            raise ValueError("when_full must be 'evict' or 'bypass'")
        self.timeout = timeout
        self.max_contexts = max_contexts
        self.max_bytes = max_bytes
        self.max_frags = max_frags
        self.max_dist = max_dist
        self.when_full = when_full
        self.counters: Counter[str] = Counter()
        self.bypassed: list[bytes] = []
        self.last: str = ""                    # outcome of the latest push
        self._delivered: list[bytes] = []
        self._contexts: dict[tuple, _Context] = {}
        self._bypass_until: dict[tuple, float] = {}
        self._peer_rid: Counter[bytes] = Counter()
        self._seq = 0
        self._now = 0.0

    # -- inspection
    @property
    def pending(self) -> int:
        return len(self._contexts)

    @property
    def bytes_held(self) -> int:
        return sum(c.meat for c in self._contexts.values())

    def linux_mib(self) -> dict[str, int]:
        """The counters as Linux's /proc/net/snmp (Ip:) and /proc/net/netstat (IpExt:)
        would count them for the same packets."""
        c = self.counters
        fails = sum(c[k] for k in (OVERLAP, BAD_LAST, BEYOND_END, EMPTY, OVERSIZE, ECN_MIX, TOO_FAR, TIMEOUT))
        return {"ReasmReqds": c[REQUESTS], "ReasmOKs": c[REASSEMBLED], "ReasmFails": fails,
                "ReasmOverlaps": c[OVERLAP], "ReasmTimeout": c[TIMEOUT],
                "InHdrErrors": c[BAD_HEADER] + c[BAD_CHECKSUM], "InCsumErrors": c[BAD_CHECKSUM],
                "InTruncatedPkts": c[TRUNCATED]}

    # -- time
    def expire(self, now: float) -> None:
        """Drop every context whose timer ran out by `now`."""
        self._now = max(self._now, now)
        for key, ctx in list(self._contexts.items()):
            if ctx.deadline <= now:
                del self._contexts[key]
                self.counters[TIMEOUT] += 1
        for key, until in list(self._bypass_until.items()):
            if until <= now:
                del self._bypass_until[key]

    # -- input
    def push(self, packet: bytes, now: float | None = None) -> list[bytes]:
        """Process one received IPv4 packet; returns the datagrams delivered (0 or 1)."""
        if now is not None:
            self.expire(now)
        self.last = self._push(bytes(packet))
        self.counters[self.last] += 1
        return self._delivered

    def _push(self, packet: bytes) -> str:
        self._delivered: list[bytes] = []
        try:
            ip = parse(packet)
        except ValueError:
            return BAD_HEADER
        if not header_ok(packet[:ip.ihl]):
            return BAD_CHECKSUM
        if ip.tot_len > len(packet):
            return TRUNCATED
        if ip.tot_len < ip.ihl:
            return BAD_HEADER
        packet = packet[:ip.tot_len]
        if not ip.is_fragment:
            self._delivered.append(packet)
            return NOT_FRAGMENT
        ctx = self._contexts.get(ip.key)
        if ctx is None:
            ctx = self._open(ip.key)
            if ctx is None:
                self.bypassed.append(packet)
                return BYPASSED
        self.counters[REQUESTS] += 1
        return self._queue(ctx, ip, packet)

    def _open(self, key: tuple) -> "_Context | None":
        """A new context for `key`, or None: the fragment bypasses (to the host)."""
        full = self.max_contexts is not None and len(self._contexts) >= self.max_contexts
        if key in self._bypass_until or (full and self.when_full == "bypass"):
            self._bypass_until.setdefault(key, self._now + self.timeout)
            return None
        if full:
            self._evict_oldest()
        self._seq += 1
        ctx = _Context(key, self._now + self.timeout, self._seq)
        self._contexts[key] = ctx
        return ctx

    def _drop(self, ctx: _Context, why: str) -> str:
        self._contexts.pop(ctx.key, None)
        return why

    def _evict_oldest(self, current: _Context | None = None) -> _Context:
        """Drop the oldest context; counted here unless it is `current`, whose fragment's
        outcome (EVICTED) push() counts."""
        victim = min(self._contexts.values(), key=lambda c: c.seq)
        del self._contexts[victim.key]
        if victim is not current:
            self.counters[EVICTED] += 1
        return victim

    def _queue(self, ctx: _Context, ip: Ipv4, packet: bytes) -> str:
        if self.max_dist:
            start = ctx.rid
            self._peer_rid[ip.src] += 1
            ctx.rid = self._peer_rid[ip.src]
            if ctx.runs and ctx.rid - start > self.max_dist:
                self.counters[TOO_FAR] += 1
                ctx.reset()
                ctx.deadline = self._now + self.timeout
        off = ip.offset
        end = off + ip.tot_len - ip.ihl
        if not ip.mf:
            if end < ctx.length or (ctx.last_in and end != ctx.length):
                return self._drop(ctx, BAD_LAST)
            ctx.last_in = True
            ctx.length = end
        else:
            if end & 7:
                end &= ~7
                self.counters[TRIMMED] += 1
            if end > ctx.length:
                if ctx.last_in:
                    return self._drop(ctx, BEYOND_END)
                ctx.length = end
        if end == off:
            return self._drop(ctx, EMPTY)
        if self.early_oversize and end > IP_MAX_LEN - 20:
            return self._drop(ctx, OVERSIZE)
        verdict = ctx.insert(off, end)
        if verdict == DUPLICATE:
            return DUPLICATE
        if verdict == OVERLAP:
            return self._drop(ctx, OVERLAP)
        n = end - off
        if self.max_frags is not None and ctx.nfrags >= self.max_frags:
            return self._drop(ctx, TOO_MANY_FRAGS)
        if self.max_bytes is not None:
            while self.bytes_held + n > self.max_bytes:
                if self._evict_oldest(ctx) is ctx:
                    return EVICTED
        ctx.pieces[off] = packet[ip.ihl:ip.ihl + n]
        ctx.nfrags += 1
        ctx.meat += n
        ctx.ecn |= 1 << (ip.tos & 3)
        if off == 0:
            ctx.first_in = True
            ctx.header = packet[:ip.ihl]
        size = n + ip.ihl
        ctx.max_size = max(ctx.max_size, size)
        if ip.df:
            ctx.max_df_size = max(ctx.max_df_size, size)
        if ctx.first_in and ctx.last_in and ctx.meat == ctx.length:
            return self._reassemble(ctx)
        return QUEUED

    def _reassemble(self, ctx: _Context) -> str:
        del self._contexts[ctx.key]
        ecn = _ecn_outcome(ctx.ecn)
        if ecn is None:
            return ECN_MIX
        total = len(ctx.header) + ctx.length
        if total > IP_MAX_LEN:
            return OVERSIZE
        payload = b"".join(ctx.pieces[o] for o in sorted(ctx.pieces))
        assert len(payload) == ctx.length
        h = bytearray(ctx.header)
        h[1] |= ecn
        h[2:4] = total.to_bytes(2, "big")
        h[6:8] = (IP_DF if ctx.max_df_size == ctx.max_size else 0).to_bytes(2, "big")
        self._delivered.append(with_checksum(h) + payload)
        return REASSEMBLED
