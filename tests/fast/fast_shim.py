"""Builds sim/fastsim's partner models with tests/fast/shim.cpp into a test-only shared
library (cached under build/fastsim-test/ by the sources' digest) and binds it with ctypes,
and builds and runs a cocotb bench on a plain SystemVerilog module (no Chisel design)."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

from filelock import FileLock

from offnic_sim.harness import hw, runner

HERE = Path(__file__).resolve().parent
SRC = hw.ROOT / "sim" / "fastsim"
OUT = hw.BUILD / "fastsim-test"
CXXFLAGS = ["-std=c++17", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror"]


def _sources() -> list[Path]:
    return [SRC / "xgmii_port.cpp", SRC / "axi_dram.cpp", HERE / "shim.cpp"]


def build_lib() -> Path:
    """The shared library (built now if its sources changed); warnings are errors."""
    deps = _sources() + [SRC / "xgmii_port.h", SRC / "axi_dram.h"]
    key = hw.digest(*(p.read_bytes() for p in deps), CXXFLAGS)[:16]
    lib = OUT / f"libfastsim_test-{key}.so"
    OUT.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lib) + ".lock"):
        if not lib.exists():
            tmp = lib.with_suffix(".tmp")
            subprocess.run(["g++", *CXXFLAGS, f"-I{SRC}", *map(str, _sources()), "-o", str(tmp)], check=True)
            tmp.rename(lib)
    return lib


class AxiMaster(ctypes.Structure):
    _fields_ = [("awid", ctypes.c_uint32), ("awaddr", ctypes.c_uint64), ("awlen", ctypes.c_uint32),
                ("awsize", ctypes.c_uint32), ("awburst", ctypes.c_uint32), ("awvalid", ctypes.c_bool),
                ("wdata", ctypes.c_uint32 * 8), ("wstrb", ctypes.c_uint32), ("wlast", ctypes.c_bool),
                ("wvalid", ctypes.c_bool), ("bready", ctypes.c_bool),
                ("arid", ctypes.c_uint32), ("araddr", ctypes.c_uint64), ("arlen", ctypes.c_uint32),
                ("arsize", ctypes.c_uint32), ("arburst", ctypes.c_uint32), ("arvalid", ctypes.c_bool),
                ("rready", ctypes.c_bool)]


class AxiSlave(ctypes.Structure):
    _fields_ = [("awready", ctypes.c_bool), ("wready", ctypes.c_bool), ("bid", ctypes.c_uint32),
                ("bresp", ctypes.c_uint32), ("bvalid", ctypes.c_bool), ("arready", ctypes.c_bool),
                ("rid", ctypes.c_uint32), ("rdata", ctypes.c_uint32 * 8), ("rresp", ctypes.c_uint32),
                ("rlast", ctypes.c_bool), ("rvalid", ctypes.c_bool)]


def load() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(build_lib()))
    P, U64, U8 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint8
    sig = {
        "xg_new": ([], P), "xg_free": ([P], None), "xg_reset": ([P], None),
        "xg_send": ([P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int], None),
        "xg_tick": ([P, U64, U8, ctypes.POINTER(U64), ctypes.POINTER(U8)], None),
        "xg_recv": ([P, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(U64)], ctypes.c_int),
        "xg_tx_pending": ([P], ctypes.c_size_t), "xg_counters": ([P, ctypes.POINTER(U64)], None),
        "ax_new": ([U64, ctypes.c_int, ctypes.c_double], P), "ax_free": ([P], None),
        "ax_set_now_ns": ([P, ctypes.c_double], None),
        "ax_tick": ([P, ctypes.POINTER(AxiMaster), ctypes.POINTER(AxiSlave)], None),
        "ax_mem": ([P], ctypes.POINTER(U8)), "ax_counters": ([P, ctypes.POINTER(U64)], None),
    }
    for name, (args, res) in sig.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, res
    return lib


def run_sv_bench(sv: Path, top: str, test_module: str, env: dict | None = None, bench: dict | None = None) -> None:
    """Builds `sv` (a plain module) and runs `test_module`'s cocotb tests on it
    (harness.runner.run_sv_bench)."""
    runner.run_sv_bench([sv], top, test_module, env=env, bench=bench)
