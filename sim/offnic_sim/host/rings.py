"""Ring records and index arithmetic of docs/queues.md, as small pure functions.

Everything the driver model (driver.py) writes to or reads from a ring goes through this
module, and nothing here needs a simulator: tests/host/test_driver_records.py checks it
byte for byte against the tables of docs/queues.md.

- Descriptors (TX and RX), completions and events are 16-byte little-endian records:
  `pack_desc`/`unpack_desc`, `pack_cpl`/`unpack_cpl`, `pack_event`/`unpack_event`.
- Producer and consumer indexes are free-running 16-bit counters (`idx_add`, `used`,
  `free`); record `i` sits at `(i mod size) * 16` (`slot`, `record_offset`).
- `phase_of(i, log_size)` is the phase bit the producer writes into record `i`: the
  inverse of bit `log_size` of `i` (1 on the first pass, 0 on the second ...). A record
  is new to the consumer when `is_new(record, cons, log_size)`.
- `initial_ring` is the memory image a host gives a ring that the NIC will start filling
  at some index, such that no record looks new before the NIC writes it: all zero
  when that index is the start of an even pass (index 0 included, as the spec assumes).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

RECORD_BYTES = 16
INDEX_BITS = 16
INDEX_MASK = (1 << INDEX_BITS) - 1
MIN_LOG_SIZE, MAX_LOG_SIZE = 1, 15
RING_ALIGN = 4096

# Descriptor opcodes (byte 10). TX: DATA and the payload cache's INSERT / APPEND
# (docs/cache.md); RX: BUFFER. The others are reserved for the offloads of later issues;
# today a NIC completes them with BAD_DESC.
OP_DATA = 0x00
OP_BUFFER = 0x00
OP_CACHE_INSERT = 0x01
OP_CACHE_APPEND = 0x02
OP_FRAGMENT = 0x10
OP_TCP_FIRST, OP_TCP_LAST = 0x20, 0x2F

# Descriptor flags (byte 11, TX only)
DESC_MORE = 0x01  # the packet continues in the next descriptor
DESC_CSUM = 0x02  # insert a checksum (first descriptor of the packet only)

# Completion status (byte 6)
OK, DMA_ERROR, BAD_DESC, TOO_LONG, CACHE_RANGE = 0, 1, 2, 3, 4
FRAG_DF, FRAG_OPTIONS, FRAG_MALFORMED = 5, 6, 7   # TX fragmentation refused (docs/frag.md)
STATUS_NAMES = {OK: "ok", DMA_ERROR: "dma_error", BAD_DESC: "bad_desc", TOO_LONG: "too_long",
                CACHE_RANGE: "cache_range", FRAG_DF: "frag_df", FRAG_OPTIONS: "frag_options",
                FRAG_MALFORMED: "frag_malformed"}

# Completion flags (byte 7)
CPL_PORT = 0x01        # port the frame left or arrived on
CPL_CSUM_VALID = 0x02  # RX: csum is valid
CPL_RSS_VALID = 0x04   # RX: rss_hash / rss_type are valid
CPL_REASSEMBLED = 0x08  # RX: a datagram the NIC reassembled; index = its buffer id (docs/frag.md)
PHASE = 0x80           # completions and events: the phase bit
FLAGS_BYTE = 7         # where the phase bit lives, in completions and events alike

# Event types (byte 2)
EV_TX_CQ, EV_RX_CQ = 0, 1
EV_TOE_NOTE = 2          # a TCP engine notification (docs/queues.md): id, kind, seq, merged
_TOE_NOTE = struct.Struct("<HBBxxxxIH2x")   # id, type, kind, (4-7: reserved, phase), seq, merged


def unpack_toe_note(b: bytes) -> tuple[int, int, int, int]:
    """A TCP engine notification event: (connection id, kind, seq, notifications merged)."""
    cid, _, kind, seq, merged = _TOE_NOTE.unpack(bytes(b[:16]))
    return cid, kind, seq, merged

# RSS hash types (RssParser)
RSS_TYPE_BITS = {1: "ipv4", 2: "ipv6", 4: "tcp", 8: "udp"}  # rss_type is a mask of these (RssParser)

_DESC = struct.Struct("<QHBBHH")      # addr, len, opcode, flags, csum_start, csum_insert
_CPL = struct.Struct("<HHHBBIHBB")    # queue, index, len 15:0, status, flags, rss_hash, csum, rss_type, byte 15 (bit 0: len bit 16)
_EVENT = struct.Struct("<HBxxxxB8x")  # source, type, (reserved 3-6), flags, (reserved 8-15)
assert _DESC.size == _CPL.size == _EVENT.size == RECORD_BYTES


# ---------------------------------------------------------------------------- records

@dataclass(frozen=True)
class Desc:
    """A TX or RX descriptor. For opcodes other than DATA, bytes 12-15 are
    opcode-specific: `csum_start` is then their low half and `csum_insert` the high half
    (see `with_arg`)."""
    addr: int
    len: int
    opcode: int = OP_DATA
    flags: int = 0
    csum_start: int = 0
    csum_insert: int = 0

    @property
    def more(self) -> bool:
        return bool(self.flags & DESC_MORE)

    @property
    def arg(self) -> int:
        """Bytes 12-15 as one little-endian 32-bit value."""
        return self.csum_start | self.csum_insert << 16

    @staticmethod
    def with_arg(addr: int, length: int, opcode: int, arg: int, flags: int = 0) -> "Desc":
        """A descriptor whose bytes 12-15 carry a 32-bit opcode argument (cache offset, MTU)."""
        return Desc(addr, length, opcode, flags, arg & 0xFFFF, (arg >> 16) & 0xFFFF)


def pack_desc(d: Desc) -> bytes:
    return _DESC.pack(d.addr, d.len, d.opcode, d.flags, d.csum_start, d.csum_insert)


def unpack_desc(b: bytes) -> Desc:
    return Desc(*_DESC.unpack(bytes(b[:RECORD_BYTES])))


@dataclass(frozen=True)
class Completion:
    queue: int
    index: int
    len: int
    status: int
    flags: int
    rss_hash: int = 0
    csum: int = 0
    rss_type: int = 0
    reserved: int = 0

    @property
    def port(self) -> int:
        return self.flags & CPL_PORT

    @property
    def reassembled(self) -> bool:
        return bool(self.flags & CPL_REASSEMBLED)

    @property
    def reasm_start(self) -> int:
        """Reassembled: where the frame starts in its buffer (byte 15 bits 7:1)."""
        return self.reserved >> 1

    @property
    def reasm_ecn(self) -> int:
        return (self.rss_type >> 4) & 3

    @property
    def reasm_df(self) -> bool:
        return bool(self.rss_type & 0x40)

    @property
    def csum_valid(self) -> bool:
        return bool(self.flags & CPL_CSUM_VALID)

    @property
    def rss_valid(self) -> bool:
        return bool(self.flags & CPL_RSS_VALID)

    @property
    def phase(self) -> int:
        return (self.flags >> 7) & 1

    @property
    def status_name(self) -> str:
        return STATUS_NAMES.get(self.status, f"status_{self.status}")


def pack_cpl(c: Completion) -> bytes:
    return _CPL.pack(c.queue, c.index, c.len & 0xFFFF, c.status, c.flags, c.rss_hash, c.csum, c.rss_type,
                     c.len >> 16 | c.reserved)


def unpack_cpl(b: bytes) -> Completion:
    """A completion; `len` has 17 bits (TX frames up to 65,568 bytes: bit 16 is bit 0 of
    byte 15), `reserved` the other bits of byte 15."""
    q, i, lo, st, fl, h, cs, rt, b15 = _CPL.unpack(bytes(b[:RECORD_BYTES]))
    return Completion(q, i, lo | (b15 & 1) << 16, st, fl, h, cs, rt, b15 & 0xFE)


@dataclass(frozen=True)
class Event:
    source: int  # completion queue index
    type: int    # EV_TX_CQ or EV_RX_CQ
    flags: int = 0

    @property
    def phase(self) -> int:
        return (self.flags >> 7) & 1


def pack_event(e: Event) -> bytes:
    return _EVENT.pack(e.source, e.type, e.flags)


def unpack_event(b: bytes) -> Event:
    return Event(*_EVENT.unpack(bytes(b[:RECORD_BYTES])))


def with_phase(record: bytes, phase: int) -> bytes:
    """`record` (a completion or event) with its phase bit set to `phase`."""
    r = bytearray(record)
    r[FLAGS_BYTE] = (r[FLAGS_BYTE] & ~PHASE) | (PHASE if phase else 0)
    return bytes(r)


# ---------------------------------------------------------------------------- indexes

def log_size_of(size: int) -> int:
    """log2 of a ring size; the size must be a power of two from 2 to 32768."""
    if size < 1 << MIN_LOG_SIZE or size > 1 << MAX_LOG_SIZE or size & (size - 1):
        raise ValueError(f"ring size {size} is not a power of two from {1 << MIN_LOG_SIZE} to {1 << MAX_LOG_SIZE}")
    return size.bit_length() - 1


def idx_add(i: int, n: int) -> int:
    """Index `i` advanced by `n` (16-bit free-running)."""
    return (i + n) & INDEX_MASK


def used(prod: int, cons: int) -> int:
    """Records between consumer and producer."""
    return (prod - cons) & INDEX_MASK


def free(prod: int, cons: int, log_size: int) -> int:
    """Records the producer may still write before the ring is full."""
    return (1 << log_size) - used(prod, cons)


def is_empty(prod: int, cons: int) -> bool:
    return prod == cons


def is_full(prod: int, cons: int, log_size: int) -> bool:
    return used(prod, cons) == 1 << log_size


def slot(i: int, log_size: int) -> int:
    """Position of index `i` in the ring."""
    return i & ((1 << log_size) - 1)


def record_offset(i: int, log_size: int) -> int:
    """Byte offset of record `i` from the ring's base."""
    return slot(i, log_size) * RECORD_BYTES


def phase_of(i: int, log_size: int) -> int:
    """The phase bit of record `i`: the inverse of bit `log_size` of the index."""
    return ((i >> log_size) & 1) ^ 1


def is_new(record: bytes, cons: int, log_size: int) -> bool:
    """Whether `record` (a completion or event, read at index `cons`) was written on the
    current pass: its phase bit equals `!(cons >> log_size) & 1`."""
    return (record[FLAGS_BYTE] >> 7) & 1 == phase_of(cons, log_size)


def initial_ring(log_size: int, start: int = 0) -> bytes:
    """Memory image of a completion or event ring whose producer starts at index `start`:
    every record carries the phase of the pass before the one that will next write it,
    so none looks new. For `start` at the beginning of an even pass (0 included) this is
    all zeros; a NIC that kept its index from an earlier use of the queue needs the rest."""
    size = 1 << log_size
    ring = bytearray(size * RECORD_BYTES)
    for s in range(size):
        nxt = idx_add(start, (s - start) % size)  # the next index to land in slot s
        if phase_of(nxt, log_size) == 0:          # old phase 1: mark it
            ring[s * RECORD_BYTES + FLAGS_BYTE] = PHASE
    return bytes(ring)


# ---------------------------------------------------------------------------- TX packets

def split_frame(frame: bytes, points: list[int] | None = None) -> list[bytes]:
    """`frame` cut at the byte positions `points` (ascending, 0..len; a repeated point
    gives an empty segment, which the spec allows)."""
    if not points:
        return [bytes(frame)]
    bounds = [0, *points, len(frame)]
    if any(b < a for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"split points {points} are not ascending within 0..{len(frame)}")
    return [bytes(frame[a:b]) for a, b in zip(bounds, bounds[1:])]


def tx_descs(segments: list[tuple[int, int]], csum: tuple[int, int] | None = None) -> list[Desc]:
    """Descriptors of one TX packet from its (host address, length) segments: MORE on all
    but the last; CSUM with (csum_start, csum_insert) on the first only."""
    if not segments:
        raise ValueError("a packet needs at least one descriptor")
    out = []
    for k, (addr, n) in enumerate(segments):
        flags = DESC_MORE if k < len(segments) - 1 else 0
        start = insert = 0
        if k == 0 and csum is not None:
            flags |= DESC_CSUM
            start, insert = csum
        out.append(Desc(addr, n, OP_DATA, flags, start, insert))
    return out


def chain_lengths(descs: list[Desc]) -> list[int]:
    """How many descriptors each packet of a descriptor sequence takes (chains end at
    the first descriptor without MORE; a trailing open chain counts as one packet)."""
    out, n = [], 0
    for d in descs:
        n += 1
        if not d.more:
            out.append(n)
            n = 0
    if n:
        out.append(n)
    return out


# ---------------------------------------------------------------------------- registers

def pack_fields(layout: dict[str, tuple[int, int]], value: int = 0, **fields: int) -> int:
    """`value` with the named fields replaced; `layout` maps field names to (lsb, width)
    (the driver takes it from the register map)."""
    for name, v in fields.items():
        if name not in layout:
            raise KeyError(f"no field {name!r} (fields: {', '.join(layout)})")
        lsb, width = layout[name]
        mask = (1 << width) - 1
        if not 0 <= int(v) <= mask:
            raise ValueError(f"field {name}={v} does not fit {width} bits")
        value = (value & ~(mask << lsb)) | (int(v) << lsb)
    return value


def unpack_fields(layout: dict[str, tuple[int, int]], value: int) -> dict[str, int]:
    return {name: (value >> lsb) & ((1 << width) - 1) for name, (lsb, width) in layout.items()}


def rss_key_words(key: bytes) -> list[int]:
    """The 40-byte Toeplitz key as the ten registers key_0..key_9: key byte 0 in bits
    31:24 of key_0 (so key_0..key_9 concatenated is RssHash's cfg_key, byte 0 on top)."""
    if len(key) != 40:
        raise ValueError(f"an RSS key is 40 bytes, not {len(key)}")
    return [int.from_bytes(key[i:i + 4], "big") for i in range(0, 40, 4)]


# ---------------------------------------------------------------------------- statistics

def summarize(values: list[float]) -> dict[str, float]:
    """count, min, mean, p50, p99, max of `values` (empty: count 0 only)."""
    if not values:
        return {"count": 0}
    v = sorted(values)

    def pct(p: float) -> float:
        return v[min(len(v) - 1, int(p / 100 * len(v)))]

    return {"count": len(v), "min": v[0], "mean": sum(v) / len(v), "p50": pct(50), "p99": pct(99), "max": v[-1]}
