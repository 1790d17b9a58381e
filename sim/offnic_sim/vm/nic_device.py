"""The simulated NIC as a vfio-user PCI device (vfio_user.py's `device`), on the fast
harness (FastNicTB: the Verilator model with the PCIe host, ports and DRAM in C++).

- BAR0 (16 MiB, 64-bit prefetchable, as the board's hard IP is configured): every read and
  write goes to the model as a CQ request; a read completes when the NIC's completion does.
- Configuration space: the hard IP's, which the model does not contain (the fast harness
  simulates no configuration space): IDs, class, BAR0, and an MSI-X capability pointing
  at the NIC's own table in BAR0 (the `msix` register block, found by walking the chain).
  QEMU emulates the table for the guest; the vectors the guest enables arrive as eventfds,
  and this device programs the NIC's table entry k with the harness's MSI address and
  data k, so the NIC's MSI-X write for vector k becomes a write to eventfd k.
- DMA: QEMU shares guest RAM as memfd descriptors; each region is mapped (MAP_FIXED) over
  the C++ host's memory at its guest-physical address, so the NIC's DMA reads and writes
  are guest RAM itself (the guest runs without an IOMMU: bus address = guest physical).
"""
from __future__ import annotations

import ctypes
import errno
import mmap
import os
import struct

from offnic_sim.fast.fast_tb import FastBar, FastMsiVector, FastNicTB
from offnic_sim.host import regs
from offnic_sim.vm import vfio_user as vu

VENDOR, DEVICE = 0x10EE, 0x0F10          # sw-driver/linux/offnic_main.c's ID table
CLASS_ETHERNET = 0x020000
BAR0_BITS = 24                           # PcieHost::kBar0Aperture
BAR0_FLAGS = 0x4 | 0x8                   # 64-bit, prefetchable memory BAR
MSIX_CAP = 0x40
MSIX_TABLE = regs.MSIX.array.offset       # the msix block's records are the MSI-X table
MSIX_ENT = regs.MSIX.array.stride         # a table entry's bytes (PCI layout)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
MAP_FIXED, MAP_NORESERVE = 0x10, 0x4000


def _mmap_fixed(addr: int, size: int, fd: int, offset: int) -> None:
    shared = fd >= 0
    flags = MAP_FIXED | (mmap.MAP_SHARED if shared else mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE)
    r = _libc.mmap(addr, size, mmap.PROT_READ | mmap.PROT_WRITE, flags, fd, offset)
    if r is None or r == ctypes.c_void_p(-1).value:
        e = ctypes.get_errno()
        raise OSError(e, f"mmap at {addr:#x} (+{size:#x}): {os.strerror(e)}")


class NicDevice:
    """The NIC of `tb` (reset, ports up) behind vfio-user. `await discover()` first."""

    num_regions = vu.PCI_NUM_REGIONS

    def __init__(self, tb: FastNicTB, log=None):
        self.tb = tb
        self.log = log
        self.bar = FastBar(tb)
        self.lib = tb.lib.lib
        self.host_base = self.lib.fastsim_host_mem()
        self.host_size = self.lib.fastsim_host_mem_size()
        self.msi_addr = self.lib.fastsim_msi_addr()
        self.msix_block = self.n_msix = 0
        self.blocks: dict[int, list[int]] = {}   # BAR0 offsets of the register blocks, by type
        self.cfg = bytearray(256)
        self._bar0_lo, self._bar0_hi = BAR0_FLAGS, 0
        self.eventfds: dict[int, int] = {}
        self.maps: dict[tuple[int, int], bool] = {}
        self.map_log: list[tuple] = []      # every DMA_MAP/UNMAP, for diagnosis
        self.msi_count = [0] * 32
        self.counts = {"bar_reads": 0, "bar_writes": 0, "msi": 0, "dma_maps": 0}

    async def discover(self) -> None:
        """Walk BAR0's block chain for the MSI-X table, then build configuration space."""
        off, seen = 0, 0
        while True:
            kind = await self.bar.read_dword(off + 0x00)
            self.blocks.setdefault(kind, []).append(off)
            if kind == regs.MSIX.type_id:
                self.msix_block = off
                self.n_msix = await self.bar.read_dword(off + regs.MSIX.regs["count"].offset)
            nxt = await self.bar.read_dword(off + regs.MSIX.regs["next"].offset)
            seen += 1
            if not nxt or seen > 4096:
                break
            off = nxt
        if not self.n_msix:
            raise RuntimeError("the NIC's register chain has no msix block")
        self.msi_count = [0] * self.n_msix
        for k in range(self.n_msix):
            v = FastMsiVector(self.msi_addr, k)
            v.cb.append(lambda k=k: self._msi(k))
            self.tb.rc.vectors[k] = v
            self._program(k, masked=True)
        c = self.cfg
        struct.pack_into("<HHHH", c, 0, VENDOR, DEVICE, 0, 0x0010)     # command 0; status: capability list
        struct.pack_into("<I", c, 0x08, CLASS_ETHERNET << 8)           # revision 0
        struct.pack_into("<HH", c, 0x2C, VENDOR, DEVICE)               # subsystem
        c[0x34] = MSIX_CAP
        # MSI-X: table at the msix block's records, PBA at its pending register (BIR 0)
        struct.pack_into("<BBHII", c, MSIX_CAP, 0x11, 0x00, self.n_msix - 1,
                         self.msix_block + MSIX_TABLE, self.msix_block + regs.MSIX.regs["pending"].offset)

    async def read_records(self, block, reg: str) -> list[int]:
        """Register `reg` of every record of the first `block` (a regs.BlockType), read
        from the host's side while the guest runs (for checking what the driver wrote)."""
        base = self.blocks[block.type_id][0]
        n = await self.bar.read_dword(base + block.regs["count"].offset)
        return [await self.bar.read_dword(base + block.array.reg_offset(k, reg)) for k in range(n)]

    # ------------------------------------------------------------------ configuration space
    def cfg_read(self, off: int, n: int) -> bytes:
        out = bytearray(self.cfg[off:off + n]) + bytes(max(0, off + n - len(self.cfg)))
        for i in range(n):   # BAR0's register, as sizing expects it
            a = off + i
            if 0x10 <= a < 0x18:
                out[i] = struct.pack("<II", self._bar0_lo, self._bar0_hi)[a - 0x10]
        return bytes(out)

    def cfg_write(self, off: int, data: bytes) -> None:
        for i, b in enumerate(data):
            a = off + i
            if a in (0x04, 0x05, 0x0C, 0x0D, 0x3C) or a == MSIX_CAP + 3:
                self.cfg[a] = b & (0xC0 if a == MSIX_CAP + 3 else 0xFF)
            elif 0x10 <= a < 0x18:
                raw = bytearray(struct.pack("<II", self._bar0_lo, self._bar0_hi))
                raw[a - 0x10] = b
                lo, hi = struct.unpack("<II", raw)
                self._bar0_lo = (lo & ~((1 << BAR0_BITS) - 1) & 0xFFFFFFFF) | BAR0_FLAGS
                self._bar0_hi = hi

    # ------------------------------------------------------------------ regions
    def region_info(self, index: int) -> tuple[int, int]:
        if index == 0:
            return 1 << BAR0_BITS, vu.REGION_READ_F | vu.REGION_WRITE_F
        if index == vu.CONFIG_REGION:
            return len(self.cfg), vu.REGION_READ_F | vu.REGION_WRITE_F
        return 0, 0

    async def bar_read(self, index: int, off: int, n: int) -> bytes:
        if index != 0 or off + n > 1 << BAR0_BITS:
            raise OSError(errno.EINVAL, f"read of region {index} at {off:#x}")
        self.counts["bar_reads"] += 1
        return await self.bar.read(off, n)

    def bar_write(self, index: int, off: int, data: bytes) -> None:
        if index != 0 or off + len(data) > 1 << BAR0_BITS:
            raise OSError(errno.EINVAL, f"write of region {index} at {off:#x}")
        self.counts["bar_writes"] += 1
        self.lib.fastsim_mmio_write(off, bytes(data), len(data))

    # ------------------------------------------------------------------ interrupts
    def irq_info(self, index: int) -> tuple[int, int]:
        if index == vu.MSIX_IRQ:
            return self.n_msix, vu.IRQ_INFO_EVENTFD | vu.IRQ_INFO_NORESIZE
        return 0, 0

    def _program(self, k: int, masked: bool) -> None:
        at = self.msix_block + MSIX_TABLE + k * MSIX_ENT
        self.bar_write(0, at, struct.pack("<IIII", self.msi_addr & 0xFFFFFFFF, self.msi_addr >> 32, k, int(masked)))

    def _msi(self, k: int) -> None:
        self.counts["msi"] += 1
        self.msi_count[k] += 1
        fd = self.eventfds.get(k)
        if fd is not None:
            os.eventfd_write(fd, 1)

    def _release(self, k: int) -> None:
        fd = self.eventfds.pop(k, None)
        if fd is not None:
            os.close(fd)
        self._program(k, masked=True)

    def set_irqs(self, index: int, flags: int, start: int, count: int, fds: list[int], data: bytes) -> None:
        if index != vu.MSIX_IRQ:
            for fd in fds:
                os.close(fd)
            if count:
                raise OSError(errno.EINVAL, f"irq index {index} has no interrupts")
            return
        if start + count > self.n_msix:
            for fd in fds:
                os.close(fd)
            raise OSError(errno.EINVAL, f"vectors {start}+{count} of {self.n_msix}")
        ks = range(start, start + count)
        if flags & vu.SET_ACTION_TRIGGER:
            if flags & vu.SET_DATA_EVENTFD:
                for k in ks:
                    self._release(k)
                for k, fd in zip(ks, fds):     # no descriptors: the vectors are released
                    self.eventfds[k] = fd
                    self._program(k, masked=False)
            elif flags & vu.SET_DATA_NONE and count == 0:
                for k in list(self.eventfds):
                    self._release(k)
            else:   # the client triggers: signal as the NIC would
                for i, k in enumerate(ks):
                    if not (flags & vu.SET_DATA_BOOL) or data[i]:
                        self._msi(k)
        elif flags & (vu.SET_ACTION_MASK | vu.SET_ACTION_UNMASK):
            for fd in fds:
                os.close(fd)
            for i, k in enumerate(ks):
                if not (flags & vu.SET_DATA_BOOL) or data[i]:
                    self._program(k, masked=bool(flags & vu.SET_ACTION_MASK))

    # ------------------------------------------------------------------ DMA
    def dma_map(self, iova: int, size: int, offset: int, fd: int, flags: int) -> None:
        self.map_log.append(("map", iova, size, offset, fd >= 0))
        if fd < 0:
            return    # not mappable (a ROM): the NIC has no business there
        try:
            if iova + size > self.host_size:
                if self.log:
                    self.log.warning(f"vfio-user: DMA region {iova:#x}+{size:#x} beyond the model's "
                                     f"{self.host_size:#x} bytes of host memory: not mapped")
                return
            _mmap_fixed(self.host_base + iova, size, fd, offset)
            self.maps[iova, size] = True
            self.counts["dma_maps"] += 1
        finally:
            os.close(fd)

    def dma_unmap(self, iova: int, size: int) -> None:
        self.map_log.append(("unmap", iova, size))
        if self.maps.pop((iova, size), None):
            _mmap_fixed(self.host_base + iova, size, -1, 0)

    # ------------------------------------------------------------------ fault injection
    def set_read_faults(self, rules: list[tuple[int, int, bool]]) -> None:
        """DMA read faults: rules (iova, size, fault), first match wins, [] ends them. A read
        of the NIC's starting in a faulting rule's range completes Unsupported Request (as an
        IOMMU-refused read does); a non-faulting rule exempts its range from later ones.
        Writes are never faulted: posted writes fail silently on a real host, and the NIC
        could not tell."""
        self.lib.fastsim_clear_read_faults()
        for iova, size, fault in rules:
            self.lib.fastsim_add_read_fault(iova, iova + size, int(fault))

    @property
    def faulted_reads(self) -> int:
        return self.tb.lib.host_stats()["faulted_reads"]

    def reset(self) -> None:
        for k in list(self.eventfds):
            self._release(k)



async def serve_nic(dut, log=None) -> NicDevice:
    """The NIC of `dut` on the fast harness, ready to serve: out of reset, its ports reset,
    BAR0 discovered. No driver model runs it: the guest's driver (or a test's client) does."""
    tb = FastNicTB(dut)
    await tb._out_of_reset
    for p in tb.ports:
        await p.reset()
    dev = NicDevice(tb, log=log)
    await dev.discover()
    return dev
