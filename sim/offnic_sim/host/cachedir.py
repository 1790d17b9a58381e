"""The payload-cache directory of the driver core (sw-driver/cache), loaded through ctypes.

The simulation and the studies use the very C code the driver will run, so the model's
numbers and the NIC's behaviour come from one implementation. `load()` builds
`build/sw/cache/liboffnic_cachedir.so` with make when a source is newer than it (under a
file lock, so parallel pytest workers build it once).

    with CacheDir(16 << 20) as d:
        cmds = d.plan(file_id=7, revision=0, file_size=10_000, file_off=0, length=1448,
                      host_base=0x10_0000)
        d.replay_trace(trace.file_id, trace.revision, trace.file_size, mss=1448)
        d.stats()["bytes_inserted"]
"""
from __future__ import annotations

import ctypes
import fcntl
import subprocess
from pathlib import Path
from typing import NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "sw-driver" / "cache"
BUILD = ROOT / "build" / "sw" / "cache"
LIB = BUILD / "liboffnic_cachedir.so"
SOURCES = ("cache_dir.c", "cache_dir.h", "Makefile")

APPEND_HOST, INSERT, APPEND_CACHE = 0, 1, 2  # the NIC's TX descriptor opcodes
OP_NAMES = {APPEND_HOST: "append_host", INSERT: "insert", APPEND_CACHE: "append_cache"}
DEFAULT_BLOCK = 4096
ERR_MAX_OUT, ERR_RANGE = -1, -2

# In the order of ocd_stats (cache_dir.h).
STATS_FIELDS = ("requests", "content_bytes", "bytes_from_cache", "bytes_from_host",
                "bytes_inserted", "inserts", "hits", "misses", "invalidations", "evictions",
                "uncacheable_bytes", "alloc_failures")


class Cmd(NamedTuple):
    """One transmit command (fields an opcode does not use are 0)."""
    op: int
    host_addr: int
    cache_off: int
    len: int

    def __repr__(self) -> str:
        return f"Cmd({OP_NAMES.get(self.op, self.op)}, host=0x{self.host_addr:x}, cache=0x{self.cache_off:x}, len={self.len})"


class _Cmd(ctypes.Structure):
    _fields_ = [("op", ctypes.c_uint8), ("host_addr", ctypes.c_uint64),
                ("cache_off", ctypes.c_uint64), ("len", ctypes.c_uint32)]


class _Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in STATS_FIELDS]


def _stale() -> bool:
    if not LIB.exists():
        return True
    built = LIB.stat().st_mtime
    return any((SRC / name).stat().st_mtime > built for name in SOURCES)


def build() -> Path:
    """Build the library if a source is newer than it; safe to call from many processes."""
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _stale():
            subprocess.run(["make", "-s", "-C", str(SRC), f"O={BUILD}", "lib"], check=True)
    return LIB


_lib = None


def load() -> ctypes.CDLL:
    """The library, built if needed, with its function signatures declared."""
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(str(build()))
    u32, u64, p = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
    u64p, u32p = ctypes.POINTER(u64), ctypes.POINTER(u32)
    sigs = {
        "ocd_create": (p, [u64, u32]),
        "ocd_destroy": (None, [p]),
        "ocd_cache_bytes": (u64, [p]),
        "ocd_block_bytes": (u32, [p]),
        "ocd_set_file_limit": (None, [p, u64]),
        "ocd_plan": (ctypes.c_int, [p, u64, u32, u64, u64, u32, u64, ctypes.POINTER(_Cmd), ctypes.c_int]),
        "ocd_max_cmds": (ctypes.c_int, [p, u32]),
        "ocd_replay_response": (None, [p, u64, u32, u64, u32]),
        "ocd_replay_trace": (None, [p, ctypes.c_size_t, u64p, u32p, u64p, u32]),
        "ocd_get_stats": (None, [p, ctypes.POINTER(_Stats)]),
        "ocd_reset_stats": (None, [p]),
        "ocd_invalidate_file": (None, [p, u64]),
        "ocd_cached_blocks": (u32, [p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    _lib = lib
    return lib


def content_reduction_pct(stats: dict) -> float:
    """Content traffic removed from the I/O bus: content crosses it when inserted into the
    cache or appended from host memory (the seed's Fig. 3 measure)."""
    if not stats["content_bytes"]:
        return 0.0
    traffic = stats["bytes_inserted"] + stats["bytes_from_host"]
    return 100.0 * (1.0 - traffic / stats["content_bytes"])


def _array(values, dtype) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=dtype)


class CacheDir:
    """One NIC's cache directory (ocd_dir): `cache_bytes` of cache in `block_bytes` blocks."""

    def __init__(self, cache_bytes: int, block_bytes: int = DEFAULT_BLOCK):
        self._dir = None
        self._lib = load()
        self._dir = self._lib.ocd_create(cache_bytes, block_bytes)
        if not self._dir:
            raise ValueError(f"no cache directory for {cache_bytes} bytes in {block_bytes}-byte blocks")

    def close(self) -> None:
        if self._dir:
            self._lib.ocd_destroy(self._dir)
            self._dir = None

    def __enter__(self) -> CacheDir:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _handle(self):
        if not self._dir:
            raise ValueError("CacheDir is closed")
        return self._dir

    @property
    def cache_bytes(self) -> int:
        return self._lib.ocd_cache_bytes(self._handle())

    @property
    def block_bytes(self) -> int:
        return self._lib.ocd_block_bytes(self._handle())

    @property
    def cached_blocks(self) -> int:
        return self._lib.ocd_cached_blocks(self._handle())

    def set_file_limit(self, nbytes: int) -> None:
        """Files larger than this are never cached (default: the cache size)."""
        self._lib.ocd_set_file_limit(self._handle(), nbytes)

    def plan(self, file_id: int, revision: int, file_size: int, file_off: int, length: int,
             host_base: int) -> list[Cmd]:
        """The commands for one packet's payload: file bytes [file_off, file_off + length),
        byte k of the file at host address host_base + k (see ocd_plan)."""
        d = self._handle()
        room = max(1, self._lib.ocd_max_cmds(d, length))
        out = (_Cmd * room)()
        n = self._lib.ocd_plan(d, file_id, revision, file_size, file_off, length, host_base, out, room)
        if n == ERR_RANGE:
            raise ValueError(f"bytes [{file_off}, {file_off + length}) are not inside a {file_size}-byte file")
        if n < 0:
            raise RuntimeError(f"ocd_plan returned {n} with room for {room} commands")
        return [Cmd(c.op, c.host_addr, c.cache_off, c.len) for c in out[:n]]

    def replay_response(self, file_id: int, revision: int, file_size: int, mss: int) -> None:
        """Counters of sending a whole file in packets of at most `mss` payload bytes."""
        self._lib.ocd_replay_response(self._handle(), file_id, revision, file_size, mss)

    def replay_trace(self, file_ids, revisions, file_sizes, mss: int) -> None:
        """replay_response for every request; arrays of equal length (revisions may be None)."""
        ids = _array(file_ids, np.uint64)
        sizes = _array(file_sizes, np.uint64)
        revs = None if revisions is None else _array(revisions, np.uint32)
        if len(sizes) != len(ids) or (revs is not None and len(revs) != len(ids)):
            raise ValueError("file_ids, revisions and file_sizes differ in length")
        u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
        self._lib.ocd_replay_trace(self._handle(), len(ids), ids.ctypes.data_as(u64p),
                                   None if revs is None else revs.ctypes.data_as(u32p),
                                   sizes.ctypes.data_as(u64p), mss)

    def invalidate_file(self, file_id: int) -> None:
        self._lib.ocd_invalidate_file(self._handle(), file_id)

    def stats(self) -> dict[str, int]:
        s = _Stats()
        self._lib.ocd_get_stats(self._handle(), ctypes.byref(s))
        return {name: getattr(s, name) for name in STATS_FIELDS}

    def reset_stats(self) -> None:
        self._lib.ocd_reset_stats(self._handle())
