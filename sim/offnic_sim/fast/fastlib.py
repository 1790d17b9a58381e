"""ctypes bindings of libfastsim (sim/fastsim: the fast harness's C++ partners of the NIC).

The library is built here, once per version of its sources (g++ -O2, a few seconds), into
the shared model cache, and loaded with RTLD_GLOBAL: the fast model's DPI bridge
(sim/fastsim/dpi_bridge.cpp) finds its per-edge entry points by name in the process, so
the model, built once per RTL, never links against a particular version of the partners.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
from pathlib import Path

from filelock import FileLock

from offnic_sim.harness import hw

SRC = hw.ROOT / "sim" / "fastsim"
LIB_SOURCES = ("fastsim_api.cpp", "pcie_host.cpp", "xgmii_port.cpp", "axi_dram.cpp")
CXXFLAGS = ["-std=c++17", "-O2", "-Wall", "-Wextra", "-fPIC", "-shared"]

# Event kinds of fastsim_next_event (pcie_host.h HostEvent::Kind).
EV_MMIO_READ, EV_MSI, EV_PORT, EV_PORT_SENT = 1, 2, 3, 4


def _sources() -> tuple[list[Path], list[str]]:
    """The C++ files to build and the defines for the partners whose sources are absent."""
    files = [SRC / f for f in LIB_SOURCES if (SRC / f).exists()]
    defines = []
    if not (SRC / "xgmii_port.cpp").exists():
        defines.append("-DFASTSIM_NO_PORTS")
    if not (SRC / "axi_dram.cpp").exists():
        defines.append("-DFASTSIM_NO_DRAM")
    return files, defines


def build() -> Path:
    """libfastsim.so for today's sources (built now if no run has built it yet)."""
    files, defines = _sources()
    h = hashlib.sha256()
    for f in sorted(files) + sorted(SRC.glob("*.h")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(repr((CXXFLAGS, defines)).encode())
    out = hw.BUILD / "sim" / f"fastsim-lib-{h.hexdigest()[:16]}" / "libfastsim.so"
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out.parent) + ".lock"):
        if not out.exists():
            tmp = out.with_suffix(".tmp")
            subprocess.run(["g++", *CXXFLAGS, *defines, f"-I{SRC}", *map(str, files), "-o", str(tmp)], check=True)
            os.replace(tmp, out)
    return out


def _sig(lib, name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)


u8p, u32p, u64p = ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
c_u64, c_u32, c_int, c_double = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int, ctypes.c_double


class FastLib:
    """The loaded library: the partners of one NIC (one per process)."""

    HOST_STATS = ("reads", "in_flight", "max_in_flight", "rq_tlps", "rc_tlps", "cq_tlps", "cc_tlps",
                  "rq_beats", "rc_beats", "msi", "bad_requests", "cycle", "faulted_reads")

    def __init__(self, path: Path | None = None):
        path = path or build()
        self.lib = lib = ctypes.CDLL(str(path), mode=os.RTLD_GLOBAL | os.RTLD_NOW)
        _sig(lib, "fastsim_init", c_int, c_u64, c_double, c_u64, c_int)
        _sig(lib, "fastsim_have", c_int, ctypes.c_char_p)
        _sig(lib, "fastsim_host_mem", ctypes.c_void_p)
        _sig(lib, "fastsim_host_mem_size", c_u64)
        _sig(lib, "fastsim_bar0_addr", c_u64)
        _sig(lib, "fastsim_msi_addr", c_u64)
        _sig(lib, "fastsim_host_reset", None)
        _sig(lib, "fastsim_set_read_latency", None, c_double, c_double)
        _sig(lib, "fastsim_set_link", None, c_int)
        _sig(lib, "fastsim_set_seed", None, c_u64)
        _sig(lib, "fastsim_set_sizes", None, c_int, c_int)
        _sig(lib, "fastsim_set_host_mps", None, c_int)
        _sig(lib, "fastsim_mmio_write", None, c_u64, ctypes.c_char_p, c_u64)
        _sig(lib, "fastsim_mmio_read", None, c_u64, c_u64, c_u32)
        _sig(lib, "fastsim_next_event", c_int, u32p, u32p, ctypes.c_char_p, c_u64, u64p)
        _sig(lib, "fastsim_host_stats", None, u64p)
        _sig(lib, "fastsim_add_read_fault", None, c_u64, c_u64, c_int)
        _sig(lib, "fastsim_clear_read_faults", None)
        _sig(lib, "fastsim_tap_range", None, c_u64, c_u64, c_u32)
        _sig(lib, "fastsim_tap_bucket", None, c_int)
        _sig(lib, "fastsim_tap_clear", None)
        _sig(lib, "fastsim_tap_watch", None, c_u32, c_int)
        _sig(lib, "fastsim_tap_max_labels", c_int)
        _sig(lib, "fastsim_tap_counts", c_int, c_int, u64p, u64p)
        _sig(lib, "fastsim_tap_watched", c_u64, u32p, u64p, u32p, c_u64)
        self.have_ports = False
        self.have_dram = False
        if hasattr(lib, "fastsim_port_send"):
            self.have_ports = True
            _sig(lib, "fastsim_port_reset", None, c_int)
            _sig(lib, "fastsim_port_send", None, c_int, ctypes.c_char_p, c_u64, c_int, c_int)
            _sig(lib, "fastsim_port_recv", ctypes.c_int64, c_int, ctypes.c_char_p, c_u64,
                 ctypes.POINTER(c_int), u64p, u64p)
            _sig(lib, "fastsim_port_tx_pending", c_u64, c_int)
            _sig(lib, "fastsim_port_tx_queued", c_u64, c_int)
            _sig(lib, "fastsim_port_sent", c_int, c_int, u64p, ctypes.POINTER(c_int))
            _sig(lib, "fastsim_port_recv_lanes", None, c_int, ctypes.POINTER(c_int), ctypes.POINTER(c_int))
            _sig(lib, "fastsim_port_rx_pending", c_u64, c_int)
            _sig(lib, "fastsim_port_cycle", c_u64, c_int)
        self._has_dram_api = hasattr(lib, "fastsim_dram_mem")
        if self._has_dram_api:
            _sig(lib, "fastsim_dram_mem", ctypes.c_void_p)
            _sig(lib, "fastsim_dram_size", c_u64)
            _sig(lib, "fastsim_dram_reset", None)
        self._ev_buf = ctypes.create_string_buffer(4096)
        self._ev_id, self._ev_status, self._ev_len = c_u32(), c_u32(), c_u64()
        self._rx_buf = ctypes.create_string_buffer(1 << 16)

    def init(self, host_bytes: int, core_period_ns: float, dram_bytes: int, dram_ddr4: bool) -> None:
        self.lib.fastsim_init(host_bytes, core_period_ns, dram_bytes, int(dram_ddr4))
        self.have_dram = self._has_dram_api and bool(self.lib.fastsim_have(b"dram"))

    # ---------------------------------------------------------------- host memory and PCIe
    def host_mem(self) -> memoryview:
        """Host memory at bus address 0, as a writable byte view (no copy)."""
        n = self.lib.fastsim_host_mem_size()
        return memoryview((ctypes.c_uint8 * n).from_address(self.lib.fastsim_host_mem())).cast("B")

    def dram_mem(self) -> memoryview | None:
        if not self.have_dram:
            return None
        n = self.lib.fastsim_dram_size()
        return memoryview((ctypes.c_uint8 * n).from_address(self.lib.fastsim_dram_mem())).cast("B")

    def next_event(self):
        """(kind, id, status, data) of the oldest news, or None."""
        kind = self.lib.fastsim_next_event(ctypes.byref(self._ev_id), ctypes.byref(self._ev_status),
                                           self._ev_buf, len(self._ev_buf), ctypes.byref(self._ev_len))
        if not kind:
            return None
        n = min(self._ev_len.value, len(self._ev_buf))
        return kind, self._ev_id.value, self._ev_status.value, self._ev_buf.raw[:n]

    def host_stats(self) -> dict[str, int]:
        a = (c_u64 * len(self.HOST_STATS))()
        self.lib.fastsim_host_stats(a)
        return dict(zip(self.HOST_STATS, a))

    # ---------------------------------------------------------------- the PCIe tap
    def tap_counts(self, bucket: int):
        """(n, itf) of a bucket: n[label][way * 4 + kind] = (TLPs, bytes), itf[rq, cc, cq, rc] =
        (beats, TLPs); None if it counted nothing."""
        labels = self.lib.fastsim_tap_max_labels()
        n, itf = (c_u64 * (labels * 16))(), (c_u64 * 8)()
        if not self.lib.fastsim_tap_counts(bucket, n, itf):
            return None
        return ([[(n[(lab * 8 + k) * 2], n[(lab * 8 + k) * 2 + 1]) for k in range(8)] for lab in range(labels)],
                [(itf[2 * i], itf[2 * i + 1]) for i in range(4)])

    def tap_watched(self) -> list[tuple[int, int, int]]:
        """(label, t in ps of the host's clock (cycle x period), records) of the NIC's writes into
        watched labels since the last call, timed when each started on the link."""
        out = []
        cap = 4096
        lab, cyc, rec = (c_u32 * cap)(), (c_u64 * cap)(), (c_u32 * cap)()
        while True:
            n = self.lib.fastsim_tap_watched(lab, cyc, rec, cap)
            out += [(lab[i], cyc[i], rec[i]) for i in range(n)]
            if n < cap:
                return out

    # ---------------------------------------------------------------- ports
    def port_sent(self, k: int):
        """(cycle, lane) of the TERMINATE of the oldest frame port k sent whole into the NIC, or None."""
        cyc, lane = c_u64(), c_int()
        if not self.lib.fastsim_port_sent(k, ctypes.byref(cyc), ctypes.byref(lane)):
            return None
        return cyc.value, lane.value

    def port_recv(self, k: int):
        """(frame bytes, fcs_ok, start cycle, end cycle) of the oldest frame port k received, or None."""
        ok, start, end = c_int(), c_u64(), c_u64()
        n = self.lib.fastsim_port_recv(k, self._rx_buf, len(self._rx_buf), ctypes.byref(ok),
                                       ctypes.byref(start), ctypes.byref(end))
        if n < 0:
            return None
        if n > len(self._rx_buf):
            self._rx_buf = ctypes.create_string_buffer(n)
            raise RuntimeError(f"port {k}: a {n}-byte frame did not fit the receive buffer")
        return self._rx_buf.raw[:n], bool(ok.value), start.value, end.value

    def port_recv_lanes(self, k: int) -> tuple[int, int]:
        """The START and end lanes of the frame port_recv(k) last returned."""
        a, b = c_int(), c_int()
        self.lib.fastsim_port_recv_lanes(k, ctypes.byref(a), ctypes.byref(b))
        return a.value, b.value
