"""Host memory as a NIC sees it on a real server: DMA reads answered after a latency.

On a board, a memory read the NIC sends over PCIe comes back about a microsecond later
(root complex, IOMMU, memory controller). cocotbext-pcie's root complex answers at once,
which hides how a DMA engine behaves when it must keep many reads in flight to reach
line rate. `HostMemory` adds the latency.

How: the root complex dispatches every TLP the device sends through its table of
handlers (`RootComplex.register_rx_tlp_handler`). `HostMemory` replaces the memory-read
handlers with one that starts a separate task per request; the task waits out the
latency, then runs the root complex's own handler, which reads memory and sends the
completions. Each read waits on its own, so reads in flight overlap: 16 outstanding reads
take about one latency, not sixteen. (A slow memory Region would not do: the root complex
handles TLPs one after another, so a region that waits inside `read` would hold up every
TLP behind it and turn 16 reads into 16 latencies.)

PCIe ordering is kept: a read's data is taken from memory when its latency has passed, so
it sees every write the device posted before the read (posted writes are handled at once,
in order); a write posted after the read may also be seen, which PCIe allows (posted
requests may pass non-posted ones). With `jitter_ns`, completions of different reads may
come back out of order, as they can on a real host; the completions of one read stay in
order. Memory writes (posted) and MSI-X writes are not delayed.

Host memory is allocated here too (`alloc`): 4 KiB aligned, zeroed, from the root
complex's memory pool; the CPU side (the driver model) reads and writes it directly
through `HostBuffer`, taking no simulated time.
"""
from __future__ import annotations

import random

import cocotb
from cocotb.triggers import Timer
from cocotbext.pcie.core.tlp import TlpType

PAGE = 4096
DEFAULT_READ_LATENCY_NS = 1000.0  # typical of a server's root complex and DRAM


class HostBuffer:
    """A block of host memory: `addr` is its bus address, the bytes are read and written
    without simulated time (the CPU's view)."""

    def __init__(self, addr: int, size: int, mem):
        self.addr = addr
        self.size = size
        self.mem = mem  # the root complex's backing store (an mmap)

    def read(self, offset: int, length: int) -> bytes:
        self._check(offset, length)
        return bytes(self.mem[offset:offset + length])

    def write(self, offset: int, data: bytes) -> None:
        self._check(offset, len(data))
        self.mem[offset:offset + len(data)] = bytes(data)

    def fill(self, value: int = 0, offset: int = 0, length: int | None = None) -> None:
        length = self.size - offset if length is None else length
        self.write(offset, bytes([value]) * length)

    def _check(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise IndexError(f"host buffer access [{offset:#x}, +{length:#x}) outside its {self.size:#x} bytes")

    def __repr__(self) -> str:
        return f"HostBuffer(addr={self.addr:#x}, size={self.size:#x})"


class HostMemory:
    """The root complex's memory with a read latency, and allocation of host buffers.

    `read_latency_ns`: time from the root complex receiving a memory read to it starting
    to answer (0: answer at once, as cocotbext-pcie does by itself). `jitter_ns`: each
    read waits an extra uniform random 0..jitter_ns. Both can be changed at any time;
    a change applies to reads that arrive after it.

    `reads`, `in_flight`, `max_in_flight`: memory read requests seen, being answered now,
    and the most ever at once (the evidence that reads overlap).
    """

    def __init__(self, rc, read_latency_ns: float = DEFAULT_READ_LATENCY_NS, jitter_ns: float = 0.0):
        if getattr(rc, "offnic_hostmem", None) is not None:
            raise ValueError("this root complex already has a HostMemory: share it (OffnicDriver(hostmem=...))")
        rc.offnic_hostmem = self
        self.rc = rc
        self.read_latency_ns = read_latency_ns
        self.jitter_ns = jitter_ns
        self.reads = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._answer = rc.handle_mem_read_tlp  # the root complex's own handler
        for t in (TlpType.MEM_READ, TlpType.MEM_READ_64):
            rc.register_rx_tlp_handler(t, self._on_read)

    async def _on_read(self, tlp) -> None:
        self.reads += 1
        delay_ps = round((self.read_latency_ns + random.uniform(0.0, self.jitter_ns)) * 1000)
        if delay_ps <= 0:
            await self._answer(tlp)
            return
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        cocotb.start_soon(self._answer_later(tlp, delay_ps))

    async def _answer_later(self, tlp, delay_ps: int) -> None:
        await Timer(delay_ps, "ps")
        self.in_flight -= 1
        await self._answer(tlp)

    def alloc(self, size: int, align: int = PAGE) -> HostBuffer:
        """`size` bytes of zeroed host memory at an address aligned to `align` (a power of
        two, default 4 KiB). The pool is a buddy allocator: blocks are rounded up to a
        power of two, which keeps them aligned to their size."""
        if size <= 0 or align & (align - 1):
            raise ValueError(f"bad allocation: {size} bytes aligned to {align}")
        block = 1 << (max(size, align) - 1).bit_length()
        addr, mem = self.rc.alloc_region(block)
        assert addr % align == 0, f"allocator returned {addr:#x}, not aligned to {align:#x}"
        return HostBuffer(addr, size, mem)
