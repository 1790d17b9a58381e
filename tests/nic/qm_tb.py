"""Shared pieces of the queue manager's block benches (test_desc_fetch.py,
test_cpl_writer.py): a cycle loop that drives inputs at the falling edge (so every input
is stable at the rising edge that samples it) and reads registered outputs then, input
writes cached so that a pin is only written when it changes, and bursty stall patterns.

Randomness: each bench takes its own generator from Python's `random`, which cocotb seeds
from the run's seed (OFFNIC_SEED replays a run).
"""
from __future__ import annotations

import random
from typing import Iterator

from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge

CLOCK_NS = 4.0


class Pins:
    """Named access to a DUT's ports: `set` writes an input only when its value changes
    (the ports are many and mostly constant), `get` reads an output as an int."""

    def __init__(self, dut):
        self._dut = dut
        self._h: dict[str, object] = {}
        self._v: dict[str, int] = {}

    def h(self, name: str):
        x = self._h.get(name)
        if x is None:
            x = self._h[name] = getattr(self._dut, name)
        return x

    def set(self, name: str, value: int) -> None:
        if self._v.get(name) != value:
            self.h(name).value = value
            self._v[name] = value

    def get(self, name: str) -> int:
        return int(self.h(name).value)


def bench_rng() -> random.Random:
    """The bench's own generator, seeded from cocotb's (so OFFNIC_SEED replays it)."""
    return random.Random(random.getrandbits(64))


def stall_pattern(rng: random.Random, busy: float) -> Iterator[bool]:
    """True (stalled) about `busy` of the time, in bursts of 1..12 cycles, now and then a
    long one (up to 60 cycles) so that queues and slots fill up."""
    while True:
        stalled = rng.random() < busy
        n = rng.randint(1, 12) if rng.random() < 0.95 else rng.randint(20, 60)
        for _ in range(n):
            yield stalled


async def start_clock_and_reset(dut, pins: Pins) -> None:
    Clock(dut.clock, CLOCK_NS, unit="ns").start()
    dut.reset.value = 1
    await ClockCycles(dut.clock, 4)
    await FallingEdge(dut.clock)
    dut.reset.value = 0


def u16(x: int) -> int:
    return x & 0xFFFF
