"""The driver core (sw-driver/core), the C the Linux module runs, loaded through ctypes.

`load()` builds `build/sw/core/liboffnic_core.so` with make when a source is newer (under
a file lock: parallel pytest workers build it once). `Core` gives the core an OS layer
in Python: 32-bit register reads and writes go to the callables given (a register model,
or the simulated NIC's BAR0), DMA memory is host memory of this process (its address is
the bus address) unless `dma_alloc` hands out (cpu pointer, bus address) pairs of another
memory (the fast harness's host memory), log lines go to a logger.

    core = Core(read32=bar.read, write32=bar.write, bar_len=1 << 24)
    assert core.probe() == 0
    core.hw.n_queues[0]                      # TX queues of the build
    ring = core.ring_alloc(8)                # 256 records, 4 KiB aligned
    core.lib.offnic_eq_open(core.hw_p, 0, ctypes.byref(ring))

Records and ring arithmetic are plain functions of the library (`lib.offnic_desc_pack`
...); the structs below mirror the C ones (checked against `offnic_user_sizeof`).
"""
from __future__ import annotations

import ctypes
import fcntl
import logging
import subprocess
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "sw-driver" / "core"
BUILD = ROOT / "build" / "sw" / "core"
LIB = BUILD / "liboffnic_core.so"

TX, RX = 0, 1
MAX_BLOCKS = 64
MAX_PORTS = 2

u8, u16, u32, u64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64
c_int, c_uint, p = ctypes.c_int, ctypes.c_uint, ctypes.c_void_p

READ32 = ctypes.CFUNCTYPE(u32, p, u32)
WRITE32 = ctypes.CFUNCTYPE(None, p, u32, u32)
DMA_ALLOC = ctypes.CFUNCTYPE(p, p, ctypes.c_size_t, ctypes.POINTER(u64))
DMA_FREE = ctypes.CFUNCTYPE(None, p, ctypes.c_size_t, p, u64)
DELAY_US = ctypes.CFUNCTYPE(None, p, c_uint)
LOG_LINE = ctypes.CFUNCTYPE(None, c_int, ctypes.c_char_p)


class OsOps(ctypes.Structure):
    _fields_ = [("read32", READ32), ("write32", WRITE32), ("dma_alloc", DMA_ALLOC),
                ("dma_free", DMA_FREE), ("delay_us", DELAY_US), ("vlog", p)]


class UserCtx(ctypes.Structure):
    _fields_ = [("log", LOG_LINE)]


class Block(ctypes.Structure):
    _fields_ = [("type", u32), ("version", u32), ("offset", u32), ("known", c_int)]


class Hw(ctypes.Structure):
    _fields_ = [("ops", p), ("ctx", p), ("bar_len", u32), ("blocks", Block * MAX_BLOCKS),
                ("n_blocks", c_uint), ("queues", u32 * 2), ("cqs", u32 * 2), ("eqs", u32),
                ("msix", u32), ("rss", u32), ("rx_engine", u32), ("tx_engine", u32), ("dma", u32),
                ("reasm", u32), ("port", u32 * MAX_PORTS), ("n_ports", c_uint), ("n_queues", u32 * 2),
                ("n_cqs", u32 * 2), ("n_eqs", u32), ("n_msix", u32), ("max_segs", u32),
                ("desc_cache", u32), ("max_tx_frame", u32), ("rss_table_size", u32)]


class Ring(ctypes.Structure):
    _fields_ = [("cpu", p), ("dma", u64), ("log_size", c_uint), ("prod", u16), ("cons", u16)]


class Desc(ctypes.Structure):
    _fields_ = [("addr", u64), ("len", u16), ("opcode", u8), ("flags", u8), ("csum_start", u16),
                ("csum_insert", u16)]


class Cpl(ctypes.Structure):
    _fields_ = [("queue", u16), ("index", u16), ("len", u32), ("status", u8), ("flags", u8),
                ("rss_hash", u32), ("csum", u16), ("rss_type", u8), ("byte15_hi", u8)]


class Event(ctypes.Structure):
    _fields_ = [("source", u16), ("type", u8), ("flags", u8)]


class ToeAddr(ctypes.Structure):
    _fields_ = [("local_mac", u8 * 6), ("peer_mac", u8 * 6), ("local_ip", u32), ("peer_ip", u32),
                ("local_port", u16), ("peer_port", u16)]


class ToeHandoff(ctypes.Structure):
    _fields_ = [(n, u32) for n in ("snd_una", "snd_nxt", "write_seq", "rcv_nxt", "read_seq", "snd_wnd", "rcv_wnd",
                                   "rcv_wup", "max_window", "snd_wl1", "ts_recent", "cwnd", "ssthresh", "srtt_us",
                                   "rttvar_us")] + \
        [("snd_ring", u64), ("rcv_ring", u64), ("snd_size", u32), ("rcv_size", u32), ("mss", u16),
         ("snd_wscale", u8), ("rcv_wscale", u8), ("flags", u32)]


class ToeParams(ctypes.Structure):
    _fields_ = [("init_cwnd", u32), ("sack", c_int)]


class ToeAnswer(ctypes.Structure):
    _fields_ = [("id", u16), ("status", u16), ("ts_val", u32), ("tcp_state", u8)]


class ToeNote(ctypes.Structure):
    _fields_ = [("id", u16), ("kind", u8), ("seq", u32), ("merged", u16)]


class ToeConfig(ctypes.Structure):
    _fields_ = [(n, u32) for n in ("cycles_per_us", "delack_us", "rto_min_us", "rto_max_us", "rto_initial_us",
                                   "time_wait_us", "fin_wait2_us", "max_retries")]


# offnic_toe.h's handoff flags
TOE_WSCALE_OK, TOE_TIMESTAMPS, TOE_SACK_OK, TOE_HAS_SND_WL1, TOE_HAS_TS_RECENT, TOE_HAS_RTTVAR = (1 << k for k in range(6))
TOE_TCB_WORDS = 40
TOE_BLOCK_BYTES = 192

MIRRORS = {0: Hw, 1: Ring, 2: Desc, 3: Cpl, 4: Event, 5: OsOps, 6: Block, 7: ToeAddr, 8: ToeHandoff, 9: ToeParams,
           10: ToeAnswer, 11: ToeNote, 12: ToeConfig}

_SIGS = {
    "offnic_desc_pack": (None, [p, ctypes.POINTER(Desc)]),
    "offnic_desc_unpack": (None, [p, ctypes.POINTER(Desc)]),
    "offnic_cpl_pack": (None, [p, ctypes.POINTER(Cpl)]),
    "offnic_cpl_unpack": (None, [p, ctypes.POINTER(Cpl)]),
    "offnic_event_pack": (None, [p, ctypes.POINTER(Event)]),
    "offnic_event_unpack": (None, [p, ctypes.POINTER(Event)]),
    "offnic_log_size_of": (c_int, [u32]),
    "offnic_ring_init": (None, [p, c_uint, u16]),
    "offnic_mc_hash": (c_uint, [p]),
    "offnic_reasm_fixup": (c_int, [p, u32, c_uint, c_int]),
    "offnic_rss_key_word": (u32, [p, c_uint]),
    "offnic_user_sizeof": (c_uint, [c_int]),
    "offnic_user_idx_add": (u16, [u16, u32]),
    "offnic_user_used": (u32, [u16, u16]),
    "offnic_user_free": (u32, [u16, u16, c_uint]),
    "offnic_user_is_empty": (c_int, [u16, u16]),
    "offnic_user_is_full": (c_int, [u16, u16, c_uint]),
    "offnic_user_slot": (u32, [u16, c_uint]),
    "offnic_user_record_offset": (u32, [u16, c_uint]),
    "offnic_user_phase_of": (c_uint, [u16, c_uint]),
    "offnic_user_is_new": (c_int, [p, u16, c_uint]),
    "offnic_walk_chain": (c_int, [p]),
    "offnic_hw_probe": (c_int, [p, p, p, u32]),
    "offnic_block_name": (ctypes.c_char_p, [u32]),
    "offnic_ring_alloc": (c_int, [p, ctypes.POINTER(Ring), c_uint]),
    "offnic_ring_free": (None, [p, ctypes.POINTER(Ring)]),
    "offnic_eq_open": (c_int, [p, u32, ctypes.POINTER(Ring)]),
    "offnic_eq_close": (None, [p, u32]),
    "offnic_cq_open": (c_int, [p, c_int, u32, ctypes.POINTER(Ring), u32, u32, u32]),
    "offnic_cq_close": (None, [p, c_int, u32]),
    "offnic_queue_open": (c_int, [p, c_int, u32, ctypes.POINTER(Ring), u32]),
    "offnic_queue_close": (None, [p, c_int, u32]),
    "offnic_queue_wait_idle": (c_int, [p, c_int, u32, c_uint]),
    "offnic_queue_doorbell": (None, [p, c_int, u32, u16]),
    "offnic_cq_done": (None, [p, c_int, u32, u16, c_int]),
    "offnic_eq_done": (None, [p, u32, u16, c_int]),
    "offnic_msix_set": (c_int, [p, u32, u64, u32, c_int]),
    "offnic_cq_next": (c_int, [ctypes.POINTER(Ring), ctypes.POINTER(Cpl)]),
    "offnic_eq_next": (c_int, [ctypes.POINTER(Ring), ctypes.POINTER(Event)]),
    "offnic_ring_put_desc": (None, [ctypes.POINTER(Ring), ctypes.POINTER(Desc)]),
    "offnic_set_moderation": (c_int, [p, c_int, u32, u32, u32]),
    "offnic_get_moderation": (c_int, [p, c_int, u32, ctypes.POINTER(u32), ctypes.POINTER(u32)]),
    "offnic_rss_set_key": (c_int, [p, p]),
    "offnic_rss_get_key": (None, [p, p]),
    "offnic_rss_set_table": (c_int, [p, ctypes.POINTER(u32), u32]),
    "offnic_rss_set_control": (c_int, [p, u32]),
    "offnic_rss_get_control": (u32, [p]),
    "offnic_set_default_queue": (c_int, [p, u32, u32]),
    "offnic_port_set_mac": (c_int, [p, u32, p]),
    "offnic_port_set_rx_filter": (c_int, [p, u32, c_int, c_int, c_int, u64]),
    "offnic_port_set_max_frame": (c_int, [p, u32, u32]),
    "offnic_set_wire_mtu": (c_int, [p, u32, u32]),
    "offnic_port_speed_mbps": (u32, [p, u32]),
    "offnic_reasm_enable": (c_int, [p, c_int]),
    "offnic_reasm_post": (c_int, [p, u32, u64]),
    "offnic_counters_n_port_defs": (c_uint, []),
    "offnic_counters_n_values": (c_uint, [p]),
    "offnic_counter_value_name": (ctypes.c_char_p, [p, c_uint, ctypes.POINTER(u32)]),
    "offnic_counters_update": (None, [p, ctypes.POINTER(u32), ctypes.POINTER(u64)]),
    "offnic_tcb_bits": (c_uint, []),
    "offnic_tcb_width": (c_uint, [c_uint]),
    "offnic_tcb_name": (ctypes.c_char_p, [c_uint]),
    "offnic_tcb_get": (u64, [ctypes.POINTER(u32), c_uint]),
    "offnic_tcb_set": (c_int, [ctypes.POINTER(u32), c_uint, u64]),
    "offnic_toe_tcb_of": (c_int, [ctypes.POINTER(u32), ctypes.POINTER(ToeHandoff), ctypes.POINTER(ToeParams)]),
    "offnic_toe_block_pack": (None, [p, ctypes.POINTER(ToeAddr), ctypes.POINTER(u32)]),
    "offnic_toe_block_unpack": (None, [p, ctypes.POINTER(ToeAddr), ctypes.POINTER(u32), ctypes.POINTER(u32)]),
    "offnic_toe_block_addr_ok": (c_int, [u64]),
    "offnic_toe_desc": (c_int, [ctypes.POINTER(Desc), c_uint, u16, u32, u64]),
    "offnic_toe_desc_arg": (u32, [ctypes.POINTER(Desc)]),
    "offnic_toe_answer_of": (None, [ctypes.POINTER(Cpl), ctypes.POINTER(ToeAnswer)]),
    "offnic_toe_note_unpack": (c_int, [p, ctypes.POINTER(ToeNote)]),
    "offnic_toe_host": (u32, [p]),
    "offnic_toe_check": (c_int, [p]),
    "offnic_toe_configure": (c_int, [p, ctypes.POINTER(ToeConfig)]),
    "offnic_toe_set_ring_window": (c_int, [p, u64, u64]),
    "offnic_toe_set_notes": (c_int, [p, c_int, u32]),
    "offnic_toe_soft_limit": (u32, [p]),
}


def _stale() -> bool:
    if not LIB.exists():
        return True
    built = LIB.stat().st_mtime
    srcs = list(SRC.rglob("*.[ch]")) + [SRC / "Makefile", ROOT / "sw-driver" / "include" / "offnic_regs.h"]
    return any(s.stat().st_mtime > built for s in srcs)


def build() -> Path:
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _stale():
            subprocess.run(["make", "-s", "-C", str(SRC), f"O={BUILD}"], check=True)
    return LIB


_lib = None


def load() -> ctypes.CDLL:
    """The library, built if needed, with its signatures declared and its structs'
    sizes checked against the mirrors here."""
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(str(build()))
        for name, (res, args) in _SIGS.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        for what, cls in MIRRORS.items():
            if lib.offnic_user_sizeof(what) != ctypes.sizeof(cls):
                raise RuntimeError(f"{cls.__name__}: {ctypes.sizeof(cls)} bytes here, "
                                   f"{lib.offnic_user_sizeof(what)} in C: the mirror is out of date")
        _lib = lib
    return _lib


class Core:
    """One driver-core instance (struct offnic_hw) with a Python OS layer."""

    def __init__(self, read32: Callable[[int], int], write32: Callable[[int, int], None],
                 bar_len: int = 1 << 24, log: logging.Logger | None = None,
                 dma_alloc: Callable[[int], tuple[int, int]] | None = None):
        self.lib = load()
        self.bar_len = bar_len
        self.log = log or logging.getLogger("offnic.core")
        self.lines: list[tuple[int, str]] = []
        self.dma: dict[int, ctypes.Array] = {}   # address -> the buffer behind it

        def _log(level, line):
            text = line.decode(errors="replace").rstrip()
            self.lines.append((level, text))
            self.log.log(logging.ERROR if level <= 3 else logging.INFO, "core: %s", text)

        def _alloc(_ctx, size, dma_out):
            if dma_alloc is not None:  # the caller's host memory: (cpu pointer, bus address)
                cpu, dma_out[0] = dma_alloc(size)
                return cpu
            buf = (ctypes.c_char * (size + 4096))()
            addr = (ctypes.addressof(buf) + 4095) & ~4095
            self.dma[addr] = buf
            dma_out[0] = addr
            return addr

        def _free(_ctx, _size, cpu, _dma):
            self.dma.pop(cpu, None)

        # the callbacks must outlive every call: keep them on the instance
        self._cbs = (READ32(lambda _c, off: read32(off) & 0xFFFF_FFFF),
                     WRITE32(lambda _c, off, v: write32(off, v)),
                     DMA_ALLOC(_alloc), DMA_FREE(_free), DELAY_US(lambda _c, _us: None), LOG_LINE(_log))
        self.ops = OsOps(self._cbs[0], self._cbs[1], self._cbs[2], self._cbs[3], self._cbs[4],
                         ctypes.cast(self.lib.offnic_user_vlog, p))
        self.ctx = UserCtx(self._cbs[5])
        self.hw = Hw()
        self.hw_p = ctypes.addressof(self.hw)

    def probe(self) -> int:
        return self.lib.offnic_hw_probe(self.hw_p, ctypes.addressof(self.ops), ctypes.addressof(self.ctx),
                                        self.bar_len)

    def walk(self) -> int:
        """Only the chain walk (hw.blocks), with this instance's OS layer."""
        self.hw.ops, self.hw.ctx, self.hw.bar_len = (ctypes.addressof(self.ops), ctypes.addressof(self.ctx),
                                                     self.bar_len)
        return self.lib.offnic_walk_chain(self.hw_p)

    def blocks(self) -> list[tuple[int, int, int, bool]]:
        return [(b.type, b.version, b.offset, bool(b.known)) for b in self.hw.blocks[:self.hw.n_blocks]]

    def ring_alloc(self, log_size: int) -> Ring:
        r = Ring()
        err = self.lib.offnic_ring_alloc(self.hw_p, ctypes.byref(r), log_size)
        if err:
            raise RuntimeError(f"offnic_ring_alloc: {err}")
        return r

    def ring_bytes(self, r: Ring) -> bytes:
        return ctypes.string_at(r.cpu, 16 << r.log_size)

    def counters(self) -> tuple[list[str], ctypes.Array, ctypes.Array]:
        """Names of the counter values and fresh last/total arrays for offnic_counters_update."""
        n = self.lib.offnic_counters_n_values(self.hw_p)
        names = []
        for i in range(n):
            port = u32()
            name = self.lib.offnic_counter_value_name(self.hw_p, i, ctypes.byref(port)).decode()
            names.append(f"port{port.value}.{name}" if name.startswith("mac_") else name)
        return names, (u32 * n)(), (u64 * n)()
