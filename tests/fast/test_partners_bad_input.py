"""What the references refuse (Ddr4Ram and AxiRam assert on it, so it cannot be compared
with them), driven into AxiDram alone through ctypes: every refused burst is answered
with SLVERR on every beat (reads: zero data) in bounded time, writes leave the memory
untouched, and ordinary traffic after it still lands byte-exact. And XgmiiPort's reset:
frames queued or on the wire are dropped, the port goes idle. No simulator needed."""
from __future__ import annotations

import ctypes
import os
import random

import pytest

from fast_shim import AxiMaster, AxiSlave, load

MEM = 1 << 20
SLVERR = 2


class Driver:
    """A minimal AXI master stepping AxiDram one edge at a time (rready/bready random)."""

    def __init__(self, lib, ddr4: bool, rng: random.Random):
        self.lib, self.rng = lib, rng
        self.d = lib.ax_new(MEM, int(ddr4), 4.0)
        self.s = AxiSlave()

    def tick(self, m: AxiMaster) -> AxiSlave:
        before = AxiSlave.from_buffer_copy(self.s)
        self.lib.ax_tick(self.d, ctypes.byref(m), ctypes.byref(self.s))
        return before  # the outputs the edge saw

    def read(self, addr: int, beats: int, size: int = 5, burst: int = 1) -> list[tuple[int, bytes, int]]:
        m = AxiMaster(arid=1, araddr=addr, arlen=beats - 1, arsize=size, arburst=burst, arvalid=True)
        out = []
        for _ in range(5000):
            m.rready = self.rng.random() < 0.6
            s = self.tick(m)
            if m.arvalid and s.arready:
                m.arvalid = False
            if s.rvalid and m.rready:
                out.append((s.rresp, bytes(s.rdata), s.rlast))
                if s.rlast:
                    return out
        raise AssertionError(f"read at {addr:#x}: no last beat within 5000 cycles (hang)")

    def write(self, addr: int, beats: list[bytes], size: int = 5, burst: int = 1) -> int:
        m = AxiMaster(awid=2, awaddr=addr, awlen=len(beats) - 1, awsize=size, awburst=burst, awvalid=True)
        n = 0
        for _ in range(5000):
            if n < len(beats):
                m.wvalid, m.wstrb, m.wlast = True, 0xFFFFFFFF, n == len(beats) - 1
                ctypes.memmove(m.wdata, beats[n], 32)
            else:
                m.wvalid = False
            m.bready = self.rng.random() < 0.6
            s = self.tick(m)
            if m.awvalid and s.awready:
                m.awvalid = False
            if m.wvalid and s.wready:
                n += 1
            if s.bvalid and m.bready:
                assert n == len(beats) and s.bid == 2
                return s.bresp
        raise AssertionError(f"write at {addr:#x}: no B within 5000 cycles (hang)")


@pytest.mark.parametrize("ddr4", [True, False], ids=["ddr4", "ideal"])
def test_refused_bursts(ddr4):
    seed = int(os.environ.get("OFFNIC_SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"seed {seed}")
    rng = random.Random(seed)
    lib = load()
    drv = Driver(lib, ddr4, rng)
    mem = ctypes.cast(lib.ax_mem(drv.d), ctypes.POINTER(ctypes.c_uint8 * MEM)).contents
    pattern = bytes(rng.getrandbits(8) for _ in range(4096))
    ctypes.memmove(mem, pattern, 4096)
    refused_reads = [(0xFE0, 2, 5, 1)]            # INCR across 4 KiB: both refuse
    refused_writes = [(0xFC0, 4, 5, 1)]
    if ddr4:                                      # Ddr4Ram: full-width INCR only
        refused_reads += [(0x40, 4, 5, 2), (0x40, 4, 5, 0), (0x44, 4, 2, 1)]
        refused_writes += [(0x80, 4, 5, 2), (0x80, 2, 3, 1)]
    for addr, beats, size, burst in refused_reads:
        got = drv.read(addr, beats, size, burst)
        assert len(got) == beats and all(r == SLVERR and d == bytes(32) for r, d, _ in got), (addr, got)
    for addr, beats, size, burst in refused_writes:
        resp = drv.write(addr, [rng.randbytes(32) for _ in range(beats)], size, burst)
        assert resp == SLVERR
    assert bytes(mem[:4096]) == pattern, "a refused write changed the memory"
    # ordinary traffic afterwards: written, read back, byte-exact
    data = [rng.randbytes(32) for _ in range(8)]
    assert drv.write(0x2000, data) == 0
    got = drv.read(0x2000, 8)
    assert [d for _, d, _ in got] == data and all(r == 0 for r, _, _ in got)
    cnt = (ctypes.c_uint64 * 5)()
    lib.ax_counters(drv.d, cnt)
    assert cnt[4] == len(refused_reads) + len(refused_writes)
    lib.ax_free(drv.d)


def test_xgmii_reset_drops_frames():
    lib = load()
    p = lib.xg_new()
    d, c = ctypes.c_uint64(), ctypes.c_uint8()
    idle = 0x0707070707070707
    for _ in range(3):
        lib.xg_send(p, bytes(range(200)), 200, 1, 0)
    for _ in range(10):                               # the first frame is on the wire
        lib.xg_tick(p, idle, 0xFF, ctypes.byref(d), ctypes.byref(c))
    assert c.value != 0xFF and lib.xg_tx_pending(p) == 3
    lib.xg_reset(p)
    assert lib.xg_tx_pending(p) == 0
    for _ in range(200):
        lib.xg_tick(p, idle, 0xFF, ctypes.byref(d), ctypes.byref(c))
        assert (d.value, c.value) == (idle, 0xFF)
    lib.xg_free(p)
