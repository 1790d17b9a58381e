"""A reference model of the 10GBASE-R / 25GBASE-R PCS, written from IEEE 802.3 clause 49
(25GBASE-R, clause 107, reuses it), independent of the RTL in hw/src/offnic/phy:

- 64b/66b: an XGMII word (64-bit `d`, lane 0 in bits 7:0, 8-bit `c`) <-> a 66-bit block
  (2-bit sync header, 64-bit payload). Control blocks are described by the lane pattern
  they carry (figure 49-7) and a field table per block type; encoding matches a word's
  pattern of lane kinds against the table, decoding reads the fields back.
- the transmit and receive state machines (figures 49-14, 49-15): words out of sequence,
  or that fit no block, become /E/ blocks;
- the self-synchronising scrambler G(x) = 1 + x^39 + x^58 (49.2.6) on whole words;
- the gearbox between blocks and 64-bit serdes words (bit 0 first on the wire, a block's
  sync header first), with bit slip, and block lock (figure 49-12);
- the BER monitor (figure 49-13) on a block count.

Integers throughout: a block is (header, payload), header LSB first ("01" data = 2).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

SYNC_DATA = 0b10
SYNC_CTRL = 0b01

X_IDLE, X_LPI, X_START, X_TERM, X_ERROR, X_SEQ, X_SIG = 0x07, 0x06, 0xFB, 0xFD, 0xFE, 0x9C, 0x5C
# XGMII control character -> 7-bit code (table 49-1): idle, LPI, error, six reserved.
CODE_OF = {0x07: 0x00, 0x06: 0x06, 0xFE: 0x1E, 0x1C: 0x2D, 0x3C: 0x33, 0x7C: 0x4B, 0xBC: 0x55, 0xDC: 0x66,
           0xF7: 0x78}
CHAR_OF = {v: k for k, v in CODE_OF.items()}
O_OF = {X_SEQ: 0x0, X_SIG: 0xF}
OCHAR_OF = {v: k for k, v in O_OF.items()}

IDLE_WORD = (int.from_bytes(bytes([X_IDLE] * 8), "little"), 0xFF)
ERROR_WORD = (int.from_bytes(bytes([X_ERROR] * 8), "little"), 0xFF)
LOCAL_FAULT_WORD = (int.from_bytes(bytes([X_SEQ, 0, 0, 1] * 2), "little"), 0x11)

# Control block types: the lane pattern (C control code, O ordered-set char, S start, T
# terminate, D data) and the payload fields after the type byte, low bits first: (kind,
# lane) with kind C (7 bits), O (4), D (8) or Z (that many zero bits, as an int).
BLOCK_TYPES: dict[int, tuple[str, list]] = {
    0x1E: ("CCCCCCCC", [("C", i) for i in range(8)]),
    0x2D: ("CCCCODDD", [("C", 0), ("C", 1), ("C", 2), ("C", 3), ("O", 4), ("D", 5), ("D", 6), ("D", 7)]),
    0x33: ("CCCCSDDD", [("C", 0), ("C", 1), ("C", 2), ("C", 3), 4, ("D", 5), ("D", 6), ("D", 7)]),
    0x66: ("ODDDSDDD", [("D", 1), ("D", 2), ("D", 3), ("O", 0), 4, ("D", 5), ("D", 6), ("D", 7)]),
    0x55: ("ODDDODDD", [("D", 1), ("D", 2), ("D", 3), ("O", 0), ("O", 4), ("D", 5), ("D", 6), ("D", 7)]),
    0x78: ("SDDDDDDD", [("D", i) for i in range(1, 8)]),
    0x4B: ("ODDDCCCC", [("D", 1), ("D", 2), ("D", 3), ("O", 0), ("C", 4), ("C", 5), ("C", 6), ("C", 7)]),
}
for _k, _t in enumerate([0x87, 0x99, 0xAA, 0xB4, 0xCC, 0xD2, 0xE1, 0xFF]):
    BLOCK_TYPES[_t] = ("D" * _k + "T" + "C" * (7 - _k),
                       [("D", i) for i in range(_k)] + ([7 - _k] if _k < 7 else []) + [("C", j) for j in range(_k + 1, 8)])
WIDTH = {"C": 7, "O": 4, "D": 8}
PATTERN_TO_TYPE = {pat: t for t, (pat, _) in BLOCK_TYPES.items()}
# The block kinds of the state machines (49.2.13.2.3).
KIND_OF_TYPE = {0x1E: "C", 0x2D: "C", 0x4B: "C", 0x55: "C", 0x33: "S", 0x66: "S", 0x78: "S"}
KIND_OF_TYPE.update({t: "T" for t in (0x87, 0x99, 0xAA, 0xB4, 0xCC, 0xD2, 0xE1, 0xFF)})

ERROR_BLOCK = (SYNC_CTRL, 0x1E | sum(0x1E << (8 + 7 * i) for i in range(8)))
LOCAL_FAULT_BLOCK = (SYNC_CTRL, 0x55 | (0x01 << 24))


def lanes(d: int, c: int) -> list[tuple[int, int]]:
    return [((d >> (8 * i)) & 0xFF, (c >> i) & 1) for i in range(8)]


def lane_pattern(d: int, c: int) -> str:
    """One letter per lane: D data, C a character a 7-bit code carries, O an ordered-set
    character, S, T, or ? (a control character no block can carry)."""
    out = ""
    for byte, ctl in lanes(d, c):
        if not ctl:
            out += "D"
        elif byte in CODE_OF:
            out += "C"
        elif byte in O_OF:
            out += "O"
        elif byte == X_START:
            out += "S"
        elif byte == X_TERM:
            out += "T"
        else:
            out += "?"
    return out


@functools.lru_cache(maxsize=4096)  # pure; idles and ordered sets repeat
def encode(d: int, c: int) -> tuple[str, tuple[int, int]]:
    """An XGMII word's kind (C, S, T, D or E: T_TYPE) and its block (ERROR_BLOCK for E)."""
    if c == 0:
        return "D", (SYNC_DATA, d)
    pat = lane_pattern(d, c)
    t = PATTERN_TO_TYPE.get(pat)
    ls = lanes(d, c)
    if t is None:
        return "E", ERROR_BLOCK
    if t == 0x1E and any(b == X_ERROR for b, _ in ls):
        return "E", ERROR_BLOCK  # C needs eight control characters other than /E/
    payload, pos = t, 8
    for f in BLOCK_TYPES[t][1]:
        if isinstance(f, int):
            pos += f
            continue
        kind, lane = f
        byte = ls[lane][0]
        value = {"C": lambda: CODE_OF[byte], "O": lambda: O_OF[byte], "D": lambda: byte}[kind]()
        payload |= value << pos
        pos += WIDTH[kind]
    assert pos == 64
    return KIND_OF_TYPE[t], (SYNC_CTRL, payload)


@functools.lru_cache(maxsize=4096)
def decode(block: tuple[int, int]) -> tuple[str, tuple[int, int]]:
    """A block's kind (R_TYPE) and its XGMII word (ERROR_WORD for kind E)."""
    header, payload = block
    if header == SYNC_DATA:
        return "D", (payload, 0)
    t = payload & 0xFF
    if header != SYNC_CTRL or t not in BLOCK_TYPES:
        return "E", ERROR_WORD
    pat, fields = BLOCK_TYPES[t]
    chars = [None] * 8
    pos = 8
    for f in fields:
        if isinstance(f, int):
            pos += f
            continue
        kind, lane = f
        v = (payload >> pos) & ((1 << WIDTH[kind]) - 1)
        pos += WIDTH[kind]
        if kind == "C":
            if v not in CHAR_OF or (t == 0x1E and v == 0x1E):
                return "E", ERROR_WORD
            chars[lane] = (CHAR_OF[v], 1)
        elif kind == "O":
            if v not in OCHAR_OF:
                return "E", ERROR_WORD
            chars[lane] = (OCHAR_OF[v], 1)
        else:
            chars[lane] = (v, 0)
    for lane, letter in enumerate(pat):
        if letter == "S":
            chars[lane] = (X_START, 1)
        elif letter == "T":
            chars[lane] = (X_TERM, 1)
    d = sum(b << (8 * i) for i, (b, _) in enumerate(chars))
    c = sum(k << i for i, (_, k) in enumerate(chars))
    return KIND_OF_TYPE[t], (d, c)


class TxCoder:
    """The transmit state machine (figure 49-14): XGMII words in, blocks out."""

    def __init__(self):
        self.state = "INIT"
        self.errors = 0

    def step(self, d: int, c: int) -> tuple[int, int]:
        kind, block = encode(d, c)
        s = self.state
        if s in ("INIT", "C", "T"):
            nxt = {"C": "C", "S": "D"}.get(kind, "E")
        elif s == "D":
            nxt = {"D": "D", "T": "T"}.get(kind, "E")
        else:
            nxt = {"D": "D", "C": "C", "T": "T"}.get(kind, "E")
        self.state = nxt
        if nxt == "E":
            self.errors += 1
            return ERROR_BLOCK
        return block


class RxCoder:
    """The receive state machine (figure 49-15): blocks in, XGMII words out one block
    later (a /T/ block is judged with the next). `step` returns the word for the block
    before the one given, or None for the first block."""

    def __init__(self):
        self.state = "INIT"
        self.held: tuple[str, tuple[int, int]] | None = None
        self.errors = 0

    def step(self, block: tuple[int, int]) -> tuple[int, int] | None:
        now = decode(block)
        held, self.held = self.held, now
        if held is None:
            return None
        kind, word = held
        t_ok = kind == "T" and now[0] in ("S", "C")
        s = self.state
        if s in ("INIT", "C", "T"):
            nxt = {"C": "C", "S": "D"}.get(kind, "E")
        elif s == "D":
            nxt = "D" if kind == "D" else "T" if t_ok else "E"
        else:
            nxt = {"D": "D", "C": "C"}.get(kind, "T" if t_ok else "E")
        self.state = nxt
        if nxt == "E":
            self.errors += 1
            return ERROR_WORD
        return word


MASK58 = (1 << 58) - 1


class Scrambler:
    """out[i] = in[i] ^ out[i-39] ^ out[i-58] over the stream of payload bits."""

    def __init__(self, state: int = 0):
        self.state = state  # the last 58 scrambled bits, the oldest in bit 0

    def step(self, word: int) -> int:
        # Bits 0..38 only reach back into the state; bits 39..63 into bits 0..24 as well.
        s = self.state
        lo = (word ^ (s >> 19) ^ s) & ((1 << 39) - 1)
        x = s | (lo << 58)
        hi = ((word >> 39) ^ (x >> 58) ^ (x >> 39)) & ((1 << 25) - 1)
        out = lo | (hi << 39)
        self.state = out >> 6
        return out


class Descrambler:
    def __init__(self, state: int = 0):
        self.state = state  # the last 58 received bits

    def step(self, word: int) -> int:
        x = self.state | (word << 58)
        out = (word ^ (x >> 19) ^ x) & ((1 << 64) - 1)
        self.state = word >> 6
        return out


class TxGearbox:
    """Blocks -> 64-bit words: `need_block()` says whether the next word needs a new block
    (32 cycles in 33); `push` gives it, `pop` takes the word."""

    def __init__(self):
        self.bits = 0
        self.count = 0

    def need_block(self) -> bool:
        return self.count < 64

    def push(self, block: tuple[int, int]) -> None:
        header, payload = block
        self.bits |= (header | (payload << 2)) << self.count
        self.count += 66

    def pop(self) -> int:
        word = self.bits & ((1 << 64) - 1)
        self.bits >>= 64
        self.count -= 64
        return word

    def drop_bits(self, n: int) -> None:
        """A slip on the line: `n` bits lost (n > 0) or `-n` zero bits added."""
        if n > 0:
            self.bits >>= n
            self.count -= n
        else:
            self.bits <<= -n
            self.count += -n


class RxGearbox:
    """64-bit words -> blocks at the current boundary; `slip()` moves it one bit later."""

    def __init__(self):
        self.bits = 0
        self.count = 0
        self.pending_slips = 0

    def push(self, word: int) -> None:
        self.bits |= word << self.count
        self.count += 64
        if self.pending_slips:
            self.bits >>= self.pending_slips
            self.count -= self.pending_slips
            self.pending_slips = 0

    def pop(self) -> tuple[int, int] | None:
        if self.count < 66:
            return None
        v = self.bits & ((1 << 66) - 1)
        self.bits >>= 66
        self.count -= 66
        return v & 3, v >> 2

    def slip(self) -> None:
        if self.count == 0:
            self.pending_slips += 1
            return
        self.bits >>= 1
        self.count -= 1


class BlockLock:
    """Figure 49-12 on one header at a time; `step` returns True when it slips."""

    def __init__(self):
        self.lock = False
        self.sh_cnt = 0
        self.invalid = 0
        self.slips = 0
        self.losses = 0

    def step(self, header: int) -> bool:
        valid = header in (SYNC_DATA, SYNC_CTRL)
        self.sh_cnt += 1
        if not valid:
            self.invalid += 1
            if self.invalid == 16 or not self.lock:
                self.losses += self.lock
                self.lock = False
                self.sh_cnt = self.invalid = 0
                self.slips += 1
                return True
        if self.sh_cnt == 64:
            if self.invalid == 0:
                self.lock = True
            self.sh_cnt = self.invalid = 0
        return False


@dataclass
class BerMonitor:
    """Figure 49-13 with the window in blocks: hi_ber at `threshold` invalid headers in a window."""
    window_blocks: int
    threshold: int = 16
    hi_ber: bool = False
    count: int = 0
    blocks: int = 0

    def step(self, header: int) -> None:
        if header not in (SYNC_DATA, SYNC_CTRL) and self.count < self.threshold:
            self.count += 1
            if self.count == self.threshold:
                self.hi_ber = True
        self.blocks += 1
        if self.blocks == self.window_blocks:
            if self.count < self.threshold:
                self.hi_ber = False
            self.blocks = self.count = 0


class TxPcs:
    """XGMII words -> serdes words: coder, scrambler, gearbox. `word()` gives the next
    64-bit serdes word, pulling XGMII words from `source()` as blocks are needed; every
    block sent is kept in `blocks` (after scrambling) when `keep` is set."""

    def __init__(self, source, keep: bool = False):
        self.source = source
        self.coder = TxCoder()
        self.scrambler = Scrambler()
        self.gearbox = TxGearbox()
        self.keep = keep
        self.blocks: list[tuple[int, int]] = []

    def next_block(self) -> tuple[int, int]:
        header, payload = self.coder.step(*self.source())
        block = (header, self.scrambler.step(payload))
        if self.keep:
            self.blocks.append(block)
        return block

    def word(self) -> int:
        if self.gearbox.need_block():
            self.gearbox.push(self.next_block())
        return self.gearbox.pop()


class RxPcs:
    """Serdes words -> XGMII words: gearbox, block lock, descrambler, coder. `push` a
    word; decoded words (only while in lock) collect in `words`."""

    def __init__(self):
        self.gearbox = RxGearbox()
        self.lock = BlockLock()
        self.descrambler = Descrambler()
        self.coder = RxCoder()
        self.words: list[tuple[int, int]] = []

    def push(self, word: int) -> None:
        self.gearbox.push(word)
        while (block := self.gearbox.pop()) is not None:
            was_locked = self.lock.lock
            if self.lock.step(block[0]):
                self.gearbox.slip()
                self.coder = RxCoder()
                continue
            payload = self.descrambler.step(block[1])
            if not (was_locked and self.lock.lock):
                continue
            out = self.coder.step((block[0], payload))
            if out is not None:
                self.words.append(out)
