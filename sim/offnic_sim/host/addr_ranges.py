"""Host memory labelled by address range: which ring or buffer a DMA address falls in (the
PCIe taps of both harnesses attribute their TLPs this way)."""
from __future__ import annotations

import bisect


class AddressRanges:
    """Labelled [lo, lo + size) ranges of bus addresses; anything else is "shared"."""

    def __init__(self):
        self.ranges: list[tuple[int, int, str]] = []
        self._starts: list[int] = []

    def add(self, lo: int, size: int, label: str) -> None:
        self.ranges.append((lo, lo + size, label))
        self.ranges.sort()
        self._starts = [r[0] for r in self.ranges]

    def classify(self, addr: int) -> str:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and addr < self.ranges[i][1]:
            return self.ranges[i][2]
        return "shared"
