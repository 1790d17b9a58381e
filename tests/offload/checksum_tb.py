"""cocotb helpers shared by the checksum offload benches."""
from __future__ import annotations

import random

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamFrame

from offnic_sim.harness.axis_tb import Beat


class PulseCounter:
    """Counts the cycles a one-cycle event output (`stat_*`) is high."""

    def __init__(self, clock, signal):
        self.clock, self.signal, self.count = clock, signal, 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        while True:
            await RisingEdge(self.clock)
            if self.signal.value == 1:
                self.count += 1


def gaps(beats: list[Beat], period_ps: int) -> int:
    """Idle cycles between the first and the last of a run of transfers."""
    if len(beats) < 2:
        return 0
    return (beats[-1].time_ps - beats[0].time_ps) // period_ps + 1 - len(beats)


def frame_ends(beats: list[Beat], period_ps: int) -> list[int]:
    """Cycle (relative to the first beat) of each frame's last beat."""
    t0 = beats[0].time_ps
    return [(b.time_ps - t0) // period_ps for b in beats if b.last]


def stream_frame(data: bytes, width: int, tuser=None, garbage: bool = False) -> AxiStreamFrame:
    """An AxiStreamFrame of `data`; with `garbage`, the last beat's unused lanes carry
    random bytes with tkeep low (which the block must ignore; the sink drops them)."""
    pad = (-len(data)) % width if garbage else 0
    if not pad:
        return AxiStreamFrame(data, tuser=tuser)
    return AxiStreamFrame(data + random.randbytes(pad), tkeep=[1] * len(data) + [0] * pad, tuser=tuser)
