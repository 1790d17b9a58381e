"""`./offnic results`: which committed results still describe today's hardware.

A results file records the designs it measured (`rtl_designs`: generator, parameters and
`hw.rtl_digest` of their generated SystemVerilog). It is current when every one of them
elaborates today to the same SystemVerilog, else stale: a change elsewhere in hw/src (a
block the design does not contain, a board top level) leaves it current. A file from
before `rtl_designs` existed is judged by `hw_sources_sha256`, the digest of all the
hardware sources it was measured on (16 hex digits or all 64), which any hardware change
makes stale. Neither covers the benches' Python: a bench whose measuring changed must be
rerun even if this says current. A plot (`.png`) shares the state of the JSON it was
drawn with.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from offnic_sim.harness import hw

DIGEST_KEY = "hw_sources_sha256"
DESIGNS_KEY = "rtl_designs"
SHORTEST_HASH = 16  # hex digits: what tasks.simulate records; shorter would not identify the sources


@dataclass
class Entry:
    path: Path
    recorded: str | None   # the hash the file records (None: none, or not readable)
    state: str             # "current", "stale", "no hash", "unreadable"
    command: str           # what regenerates it


def _first(data: object, key: str, kind: type) -> object | None:
    """The first value of `key` of type `kind` anywhere in a results file's JSON."""
    if isinstance(data, dict):
        if isinstance(data.get(key), kind) and data[key]:
            return data[key]
        values = list(data.values())
    elif isinstance(data, list):
        values = data
    else:
        return None
    for v in values:
        found = _first(v, key, kind)
        if found:
            return found
    return None


def recorded_digest(data: object) -> str | None:
    """The first `hw_sources_sha256` anywhere in a results file's JSON."""
    return _first(data, DIGEST_KEY, str)


def recorded_designs(data: object) -> list[dict] | None:
    """The first `rtl_designs` anywhere in a results file's JSON."""
    return _first(data, DESIGNS_KEY, list)


def _design(rec: dict) -> hw.Design:
    return hw.Design.of(rec["top"], **rec["params"])


def today_rtl(recs: list[dict]) -> dict[hw.Design, str]:
    """`hw.rtl_digest` of each recorded design as today's sources generate it (elaborated
    together, one JVM; cached in build/rtl)."""
    designs = list(dict.fromkeys(_design(r) for r in recs))
    return {d: hw.rtl_digest(r) for d, r in zip(designs, hw.elaborate(designs))} if designs else {}

def regen_command(path: Path) -> str:
    """Every suite writes results/bench-<suite>.json (and .png) by default; a whole
    configuration's synthesis writes results/synth-<config>.json."""
    stem = path.stem
    if stem == "bench-toe-nic":   # the TCP engine inside the NIC: a part of bench toe
        return "./offnic bench toe --part nic"
    if stem.startswith("bench-"):
        return f"./offnic bench {stem.removeprefix('bench-')}"
    if stem.startswith("synth-"):
        return f"./offnic synth --config {stem.removeprefix('synth-')}"
    return "(no command writes this)"


def _load(path: Path) -> object | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def json_state(data: object | None, current: str, rtl_now: dict[hw.Design, str]) -> tuple[str | None, str]:
    """(what the file records, its state) for a results file's parsed JSON (None: unreadable)."""
    if data is None:
        return None, "unreadable"
    designs = recorded_designs(data)
    if designs:
        ok = all(rtl_now.get(_design(r)) == r["rtl_sha256"] for r in designs)
        return "rtl " + designs[0]["rtl_sha256"][:SHORTEST_HASH - 4], "current" if ok else "stale"
    rec = recorded_digest(data)
    if not rec:
        return None, "no hash"
    ok = len(rec) >= SHORTEST_HASH and current.startswith(rec.lower())
    return rec, "current" if ok else "stale"


def status(results_dir: Path, current: str, rtl_of=today_rtl) -> list[Entry]:
    """Every file in `results_dir`, with what it records and its state: against today's
    RTL of the designs it names (`rtl_of`, list of records -> {Design: digest}), or for an
    older file against `current` (the hardware sources' digest)."""
    files = sorted(f for f in results_dir.iterdir() if f.is_file())
    data = {p: _load(p) for p in files if p.suffix == ".json"}
    rtl_now = rtl_of([r for d in data.values() for r in (recorded_designs(d) or [])])
    out = []
    for p in files:
        sibling = p if p.suffix == ".json" else p.with_suffix(".json")  # a plot: as its JSON
        if sibling in data:
            rec, state = json_state(data[sibling], current, rtl_now)
        else:
            rec, state = None, "no hash"
        out.append(Entry(p, rec, state, regen_command(p)))
    return out


def render(entries: list[Entry], current: str, rel=str) -> str:
    rows = [("file", "records", "state", "regenerated by")]
    rows += [(rel(e.path), (e.recorded or "-")[:SHORTEST_HASH], e.state, e.command) for e in entries]
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, width)) + "  " + r[3] for r in rows]
    stale = sorted({e.command for e in entries if e.state != "current"})
    lines.append(f"\nhardware sources now: {current[:SHORTEST_HASH]} (sha256 of hw/src/**/*.scala, build.sc, "
                 f"the Chisel, Mill and PicoRV32 pins: hw.hw_sources_digest)")
    if stale:
        lines.append(f"{sum(e.state != 'current' for e in entries)} of {len(entries)} files not current; "
                     f"run: {'; '.join(stale)}")
    else:
        lines.append(f"all {len(entries)} files current")
    return "\n".join(lines)


def main(args: list[str], results_dir: Path | None = None, current: str | None = None, rel=str,
         rtl_of=today_rtl) -> int:
    """Print the table; exit status 1 if any results file is not current."""
    ap = argparse.ArgumentParser(prog="offnic results", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=results_dir or hw.ROOT / "results", help="results directory")
    a = ap.parse_args(args)
    current = current or hw.hw_sources_digest()
    entries = status(a.dir, current, rtl_of)
    print(render(entries, current, rel))
    return 1 if any(e.state != "current" for e in entries) else 0
