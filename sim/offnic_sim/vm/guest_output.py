"""Reading what the guest printed on its console (tests/vm): per-RX-queue counters from
`ethtool -S`, and the indirection table and key from `ethtool -x`, each taken from the
first printout after a marker line the guest script echoed."""
from __future__ import annotations

import re


def _after(console: str, marker: str) -> str:
    return console.split(marker, 1)[1] if marker in console else ""


def rxq_packets(console: str, marker: str) -> dict[int, int]:
    """rxqN_packets of the first `ethtool -S` after `marker`, by queue."""
    out: dict[int, int] = {}
    for q, v in re.findall(r"^\s+rxq(\d+)_packets: (\d+)$", _after(console, marker), re.M):
        out.setdefault(int(q), int(v))
    return out


def indir_table(console: str, marker: str) -> list[int]:
    """The indirection table of the first `ethtool -x` after `marker`."""
    part = _after(console, marker).split("RSS hash key", 1)[0]
    table: list[int] = []
    for row in re.findall(r"^\s*\d+:((?:\s+\d+)+)\s*$", part, re.M):
        table += [int(v) for v in row.split()]
    return table


def rss_key(console: str, marker: str) -> bytes:
    """The key of the first `ethtool -x` after `marker` (the driver reads it from the NIC)."""
    m = re.search(r"RSS hash key:\s*\n([0-9a-f:]+)", _after(console, marker))
    return bytes.fromhex(m.group(1).replace(":", "")) if m else b""
