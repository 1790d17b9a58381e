"""XGMII streams as columns (IEEE 802.3 clause 46: four lanes, 32 bits, a column), the
reference the rate adapter (hw/src/offnic/phy/XgmiiRateAdapter.scala) is judged by,
written from the clause's rules rather than from the RTL:

- `frames_to_words`: frames (MAC bytes, FCS included) as a 64-bit XGMII word stream the way
  a MAC sends them: /S/ in lane 0 or 4, preamble, SFD, the bytes, /T/; gaps of idles of a
  chosen length, padded to the next column; sequence ordered sets between frames;
- `columns`: a word stream as columns;
- `check_adapted`: what may change across a rate adapter is idle columns, between frames,
  and nothing else. The output's non-idle columns must be exactly the input's, in order;
  every frame arrives intact; a start stays in lane 0 of a column; at least one idle column
  follows the column that ends a frame; no /E/ appears.
"""
from __future__ import annotations

import random

IDLE, START, TERM, ERROR, SEQ = 0x07, 0xFB, 0xFD, 0xFE, 0x9C
PREAMBLE = bytes([0x55] * 6 + [0xD5])
IDLE_COL = ((IDLE,) * 4, 0xF)
IDLE_WORD = (int.from_bytes(bytes([IDLE] * 8), "little"), 0xFF)

Column = tuple[tuple[int, int, int, int], int]  # (lane bytes, control bits)


def _lanes_to_words(lanes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    assert len(lanes) % 8 == 0
    out = []
    for i in range(0, len(lanes), 8):
        chunk = lanes[i:i + 8]
        d = sum(b << (8 * k) for k, (b, _) in enumerate(chunk))
        c = sum(ctl << k for k, (_, ctl) in enumerate(chunk))
        out.append((d, c))
    return out


def frames_to_words(frames: list[bytes], rng: random.Random, gap_min: int = 8, gap_max: int = 15,
                    seq_every: int = 0) -> list[tuple[int, int]]:
    """The stream a MAC sends: each frame after `gap_min`..`gap_max` idles (then idles to the
    next column), every `seq_every`-th gap also carrying a sequence ordered set column
    (0 = none). Starts land in lane 0 or 4 of a word, as the column boundary falls."""
    lanes: list[tuple[int, int]] = [(IDLE, 1)] * 8
    for n, f in enumerate(frames):
        lanes += [(START, 1)] + [(b, 0) for b in PREAMBLE] + [(b, 0) for b in f] + [(TERM, 1)]
        lanes += [(IDLE, 1)] * rng.randint(gap_min, gap_max)
        while len(lanes) % 4:
            lanes.append((IDLE, 1))
        if seq_every and n % seq_every == seq_every - 1:
            lanes += [(SEQ, 1), (0, 0), (0, 0), (rng.randrange(256), 0)] + [(IDLE, 1)] * 4
    lanes += [(IDLE, 1)] * 64
    while len(lanes) % 8:
        lanes.append((IDLE, 1))
    return _lanes_to_words(lanes)


def columns(words: list[tuple[int, int]]) -> list[Column]:
    out = []
    for d, c in words:
        for half in (0, 1):
            out.append((tuple((d >> (32 * half + 8 * k)) & 0xFF for k in range(4)), (c >> (4 * half)) & 0xF))
    return out


def is_idle(col: Column) -> bool:
    return col == IDLE_COL


def frames_of(cols: list[Column]) -> list[bytes]:
    """The frames (bytes after the SFD up to /T/) in a column stream; raises on a control
    character inside a frame or a start anywhere but lane 0 of a column."""
    frames, cur = [], None
    for lanes, ctl in cols:
        for k, b in enumerate(lanes):
            is_ctl = (ctl >> k) & 1
            if cur is None:
                if is_ctl and b == START:
                    assert k == 0, "start outside lane 0 of a column"
                    cur = bytearray()
                continue
            if is_ctl:
                assert b == TERM, f"control 0x{b:02x} inside a frame"
                assert cur[:7] == PREAMBLE, "preamble damaged"
                frames.append(bytes(cur[7:]))
                cur = None
            else:
                cur.append(b)
    return frames


def check_adapted(sent: list[tuple[int, int]], got: list[tuple[int, int]], frames: list[bytes]) -> dict:
    """Judge a rate adapter's output `got` against its input `sent` (the whole input was
    sent and followed by idles). Returns the idle-column counts for the caller's
    accounting."""
    cin, cout = columns(sent), columns(got)
    nin = [c for c in cin if not is_idle(c)]
    nout = [c for c in cout if not is_idle(c)]
    assert not any((ctl >> k) & 1 and lanes[k] == ERROR for lanes, ctl in nout for k in range(4)), \
        "an /E/ in the output"
    # Only idles changed: the rest, column for column, in order.
    assert len(nout) == len(nin), f"{len(nout)} non-idle columns out, {len(nin)} in"
    for i, (a, b) in enumerate(zip(nin, nout)):
        assert a == b, f"non-idle column {i}: sent {a}, got {b}"
    assert frames_of(cout) == frames, "frames differ"
    # At least one idle column after each column holding /T/ (clause 46: the gap shrinks but stays).
    for i, (lanes, ctl) in enumerate(cout):
        if any((ctl >> k) & 1 and lanes[k] == TERM for k in range(4)) and i + 1 < len(cout):
            assert is_idle(cout[i + 1]), f"no idle column after the terminate at column {i}"
    return {"idle_in": len(cin) - len(nin), "idle_out": len(cout) - len(nout)}


def frames_marked(cols: list[Column]) -> list[tuple[bytes, bool]]:
    """The frames in a column stream, each with whether it is marked bad (a control
    character other than /T/ inside it, e.g. /E/); a start inside a frame ends it as bad."""
    frames, cur, bad = [], None, False
    for lanes, ctl in cols:
        for k, b in enumerate(lanes):
            is_ctl = (ctl >> k) & 1
            if cur is not None and is_ctl and b == TERM:
                frames.append((bytes(cur[7:]), bad or cur[:7] != PREAMBLE))
                cur = None
            elif is_ctl and b == START:
                if cur is not None:
                    frames.append((bytes(cur[7:]), True))
                cur, bad = bytearray(), False
            elif cur is not None:
                if is_ctl:
                    bad = True
                else:
                    cur.append(b)
    return frames
