"""cocotb drivers for the serdes side of a BASE-R PCS (the GTY's raw 64-bit data, one word
a clock, bit 0 first on the wire), built on the reference model in baser.py. cocotbext-eth
0.1.28 has no BASE-R serdes models, so these stand in for them:

- BaseRSerdesSource drives a PCS's receive input from XGMII words through the model's
  coder, scrambler and gearbox; a hook may corrupt any block (bad sync header, bit
  flips) and every block sent is kept, so the exact receive output can be predicted;
- BaseRSerdesSink decodes a PCS's transmit output through the model's gearbox, block
  lock, descrambler and coder into XGMII words;
  with `forward`, every decoded word goes on into a BaseRSerdesSource (TX -> model -> RX);
- SerdesLoop carries a PCS's transmit output to its receive input (optionally through a
  sink), with bit flips and bit slips on the way;
- xgmii_frame_words lays a frame out as XGMII words, start in lane 0 or 4.
"""
from __future__ import annotations

import collections
import random
import zlib
from typing import Callable

import cocotb
from cocotb.triggers import RisingEdge

from offnic_sim.phy import baser

PREAMBLE = bytes([0x55] * 7 + [0xD5])
MASK64 = (1 << 64) - 1


def with_fcs(payload: bytes) -> bytes:
    return payload + zlib.crc32(payload).to_bytes(4, "little")


def xgmii_frame_words(frame: bytes, lane4: bool = False, gap: int = 12) -> list[tuple[int, int]]:
    """A frame (FCS included) as XGMII words: /S/ + preamble + frame + /T/, then idles to
    at least `gap` bytes; /S/ in lane 4 when `lane4` (lanes 0-3 idle)."""
    lanes: list[tuple[int, int]] = [(baser.X_IDLE, 1)] * (4 if lane4 else 0)
    lanes += [(baser.X_START, 1)] + [(b, 0) for b in PREAMBLE[1:] + frame] + [(baser.X_TERM, 1)]
    lanes += [(baser.X_IDLE, 1)] * gap
    lanes += [(baser.X_IDLE, 1)] * (-len(lanes) % 8)
    words = []
    for i in range(0, len(lanes), 8):
        chunk = lanes[i:i + 8]
        words.append((sum(b << (8 * k) for k, (b, _) in enumerate(chunk)),
                      sum(c << k for k, (_, c) in enumerate(chunk))))
    return words


def word_from_lanes(lanes: list[tuple[int, int]]) -> tuple[int, int]:
    return (sum(b << (8 * k) for k, (b, _) in enumerate(lanes)), sum(c << k for k, (_, c) in enumerate(lanes)))


class BaseRSerdesSource:
    """Drives `data` (a PCS's serdes RX input) every rising edge of `clock`: XGMII words
    from `send` (idles when none are queued) -> coder -> scrambler -> gearbox. `corrupt`,
    if set, maps each scrambled block (header, payload) to the one sent; `sent` keeps
    every block sent; `noise_cycles` words of random bits replace the stream (lost lock)."""

    def __init__(self, data, clock):
        self.data = data
        self.clock = clock
        self.queue: collections.deque = collections.deque()
        self.corrupt: Callable[[int, tuple[int, int]], tuple[int, int]] | None = None
        self.sent: list[tuple[int, int]] = []
        self.noise_cycles = 0
        self.pcs = baser.TxPcs(self._next_word)
        self.pcs.next_block = self._next_block  # keep and corrupt blocks
        self._coder = self.pcs.coder
        cocotb.start_soon(self._run())

    def send(self, words) -> None:
        self.queue.extend(words)

    def idle(self) -> bool:
        return not self.queue

    def _next_word(self) -> tuple[int, int]:
        return self.queue.popleft() if self.queue else baser.IDLE_WORD

    def _next_block(self) -> tuple[int, int]:
        header, payload = self._coder.step(*self._next_word())
        block = (header, self.pcs.scrambler.step(payload))
        if self.corrupt is not None:
            block = self.corrupt(len(self.sent), block)
        self.sent.append(block)
        return block

    async def _run(self) -> None:
        edge = RisingEdge(self.clock)
        while True:
            if self.noise_cycles:
                self.noise_cycles -= 1
                self.data.value = random.getrandbits(64)
            else:
                self.data.value = self.pcs.word()
            await edge


class BaseRSerdesSink:
    """Samples `data` (a PCS's serdes TX output) every rising edge into the model's receive
    chain; `pcs.words` are the XGMII words decoded in lock."""

    def __init__(self, data, clock, forward: BaseRSerdesSource | None = None):
        self.data = data
        self.clock = clock
        self.pcs = baser.RxPcs()
        self.forward = forward  # a source that sends every decoded word on (a loop through the model)
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        edge = RisingEdge(self.clock)
        words = self.pcs.words
        while True:
            await edge
            n = len(words)
            self.pcs.push(int(self.data.value))
            if self.forward is not None and len(words) > n:
                self.forward.send(words[n:])


class SerdesLoop:
    """A PCS's TX output back into its RX input, one word a clock, through a bit buffer:
    `flip_rate` flips each bit with that probability, `slip(n)` loses n bits (n < 0: adds
    zeros). `model`, if given (baser.RxPcs), sees what the TX sent, before any fault."""

    def __init__(self, tx, rx, clock, model: baser.RxPcs | None = None):
        self.tx, self.rx, self.clock, self.model = tx, rx, clock, model
        self.bits = 0
        self.count = 128  # two words in flight, so a slip either way has bits to work with
        self.flip_rate = 0.0
        self.flips = 0
        cocotb.start_soon(self._run())

    def slip(self, n: int) -> None:
        if n > 0:
            self.bits >>= n
        else:
            self.bits <<= -n
        self.count -= n

    async def _run(self) -> None:
        edge = RisingEdge(self.clock)
        while True:
            await edge
            w = int(self.tx.value)
            if self.model is not None:
                self.model.push(w)
            if self.flip_rate:
                for _ in range(_binomial(64, self.flip_rate)):
                    w ^= 1 << random.randrange(64)
                    self.flips += 1
            self.bits |= w << self.count
            self.count += 64
            self.rx.value = self.bits & MASK64
            self.bits >>= 64
            self.count -= 64


def _binomial(n: int, p: float) -> int:
    if p * n < 0.05:  # rare: at most one
        return 1 if random.random() < p * n else 0
    return sum(random.random() < p for _ in range(n))
