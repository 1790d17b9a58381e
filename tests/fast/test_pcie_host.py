"""The fast harness's PCIe host (sim/fastsim/pcie_host.cpp) alone, stepped from Python
through libfastsim's per-edge entry point, with the NIC's side played here: random DMA
reads (any alignment and byte enables, up to 4 KiB) must come back as completions that
rebuild host memory exactly, each within the max payload size, cut only at 64-byte read
completion boundaries, with the byte count, lower address and request-completed flag
PG213 gives; DMA writes land with their byte enables; a write to the MSI address is an
interrupt; BAR0 requests appear on CQ and their completions reach the driver. RC is
back-pressured at random. Pure C++ and Python: no simulator.
"""
import ctypes
import random

from offnic_sim.fast.fastlib import EV_MMIO_READ, EV_MSI, FastLib

U32 = ctypes.c_uint32
U8 = ctypes.c_uint8


class PcieIn(ctypes.Structure):
    _fields_ = [("cc_tdata", U32 * 8), ("rq_tdata", U32 * 8), ("rq_tuser", U32 * 2)] + \
               [(n, U8) for n in ("cq_tready", "cc_tvalid", "cc_tkeep", "cc_tlast", "rq_tvalid", "rq_tkeep",
                                  "rq_tlast", "rc_tready")]


class PcieOut(ctypes.Structure):
    _fields_ = [("cq_tdata", U32 * 8), ("cq_tuser", U32 * 3), ("rc_tdata", U32 * 8), ("rc_tuser", U32 * 3),
                ("events", U32)] + \
               [(n, U8) for n in ("cq_tvalid", "cq_tkeep", "cq_tlast", "cc_tready", "rq_tready", "rc_tvalid",
                                  "rc_tkeep", "rc_tlast", "max_payload", "max_read_req")]


class Nic:
    """The NIC's side of the interface: RQ requests out, RC and CQ frames in."""

    def __init__(self, lib: FastLib, rng: random.Random):
        self.lib, self.rng = lib, rng
        self.tick = lib.lib.fastsim_pcie_tick
        self.tick.argtypes = [ctypes.POINTER(PcieIn), ctypes.POINTER(PcieOut)]
        self.tick.restype = None
        self.i, self.o = PcieIn(), PcieOut()
        self.rq_beats: list[tuple[list[int], int, bool, int]] = []  # (dwords, keep, last, tuser)
        self.cc_beats: list[tuple[list[int], int, bool]] = []
        self.rc_frames, self.cq_frames = [], []
        self._rc, self._cq = [], []

    def rq(self, dwords: list[int], first_be: int, last_be: int) -> None:
        for k in range(0, len(dwords), 8):
            chunk = dwords[k:k + 8]
            self.rq_beats.append((chunk, (1 << len(chunk)) - 1, k + 8 >= len(dwords), first_be | last_be << 4))

    def step(self) -> None:
        i, o = self.i, self.o
        i.rc_tready = self.rng.random() < 0.7
        i.cq_tready = 1
        if self.rq_beats:
            d, keep, last, user = self.rq_beats.pop(0)
            i.rq_tvalid, i.rq_tkeep, i.rq_tlast, i.rq_tuser[0] = 1, keep, last, user
            for k in range(8):
                i.rq_tdata[k] = d[k] if k < len(d) else 0
        else:
            i.rq_tvalid = 0
        if self.cc_beats:
            d, keep, last = self.cc_beats.pop(0)
            i.cc_tvalid, i.cc_tkeep, i.cc_tlast = 1, keep, last
            for k in range(8):
                i.cc_tdata[k] = d[k] if k < len(d) else 0
        else:
            i.cc_tvalid = 0
        rc_valid, rc_ready = o.rc_tvalid, i.rc_tready  # what was on the bus before this edge
        rc_beat = ([o.rc_tdata[k] for k in range(8)], o.rc_tkeep, o.rc_tlast,
                   o.rc_tuser[0] | o.rc_tuser[1] << 32)
        cq_valid = o.cq_tvalid
        cq_beat = ([o.cq_tdata[k] for k in range(8)], o.cq_tkeep, o.cq_tlast, o.cq_tuser[0] | o.cq_tuser[1] << 32)
        self.tick(ctypes.byref(i), ctypes.byref(o))
        if rc_valid and rc_ready:
            self._take(self._rc, self.rc_frames, rc_beat)
        if cq_valid:
            self._take(self._cq, self.cq_frames, cq_beat)

    @staticmethod
    def _take(cur, frames, beat):
        d, keep, last, user = beat
        cur.append((user, [d[k] for k in range(8) if keep >> k & 1]))
        if last:
            frames.append((cur[0][0], [w for _, ws in cur for w in ws], [u for u, _ in cur]))
            cur.clear()


def be_span(first_be: int, last_be: int, ndw: int) -> tuple[int, int]:
    """(offset of the first byte, byte count) of a request."""
    lo = (first_be & -first_be).bit_length() - 1
    be = first_be if ndw == 1 else last_be
    hi = be.bit_length()
    return lo, ndw * 4 - lo - (4 - hi)


def test_pcie_host():
    rng = random.Random(random.getrandbits(64))
    lib = FastLib()
    lib.init(1 << 24, 4.0, 0, False)
    mem = lib.host_mem()
    image = rng.randbytes(1 << 20)
    mem[:len(image)] = image
    lib.lib.fastsim_set_read_latency(1000.0, 300.0)
    mps_code = rng.choice((0, 1, 2))
    lib.lib.fastsim_set_host_mps(mps_code)
    nic = Nic(lib, rng)

    # DMA reads: random spans, up to 1 KiB, not across 4 KiB.
    reads = {}
    for tag in range(40):
        ndw = rng.randrange(1, 257)
        addr = rng.randrange(0, (1 << 20) - 4096) & ~3
        if (addr & 0xFFF) + ndw * 4 > 0x1000:
            addr &= ~0xFFF
        first_be = rng.choice((0xF, 0xE, 0xC, 0x8))
        last_be = 0 if ndw == 1 else rng.choice((0xF, 0x7, 0x3, 0x1))
        if ndw == 1:
            first_be = rng.choice((0xF, 0x6, 0x1, 0x8, 0xC))
        reads[tag] = (addr, ndw, first_be, last_be)
        nic.rq([addr, 0, ndw | 0 << 11, tag], first_be, last_be)
    # DMA writes (with byte enables) and an MSI message.
    writes = []
    for w in range(10):
        ndw = rng.randrange(1, 40)
        addr = (1 << 20) + w * 256 + rng.randrange(0, 24) * 4  # disjoint: order does not matter
        first_be = rng.choice((0xF, 0xE, 0xC))
        last_be = 0 if ndw == 1 else rng.choice((0xF, 0x3))
        data = [rng.getrandbits(32) for _ in range(ndw)]
        writes.append((addr, ndw, first_be, last_be, data))
        nic.rq([addr, 0, ndw | 1 << 11, 0] + data, first_be, last_be)
    nic.rq([lib.lib.fastsim_msi_addr(), 0, 1 | 1 << 11, 0, 5], 0xF, 0)
    # BAR0: a write and a read from the driver; the NIC answers the read on CC.
    lib.lib.fastsim_mmio_write(0x40, (0x11223344).to_bytes(4, "little"), 4)
    lib.lib.fastsim_mmio_read(0x80, 4, 77)

    events, answered = [], False
    for _ in range(20000):
        nic.step()
        if len(nic.cq_frames) == 2 and not answered:
            _, dw, _ = nic.cq_frames[1]
            tag = dw[3] & 0xFF
            nic.cc_beats.append(([0x80 | 4 << 16, 1 | 0 << 11, tag, 0xCAFEF00D], 0xF, True))
            answered = True
        while (ev := lib.next_event()) is not None:
            events.append(ev)
        if len(nic.rc_frames) and lib.host_stats()["in_flight"] == 0 and not nic._rc and answered \
                and any(e[0] == EV_MMIO_READ for e in events) and not nic.rq_beats and _ > 2000:
            break

    # Completions rebuild each read; each within max payload, cut at the RCB.
    got = {t: [] for t in reads}
    for user, dw, _ in nic.rc_frames:
        assert user >> 32 & 1, "is_sop missing on a completion's first beat"
        lower, err, byte_count, done = dw[0] & 0xFFF, dw[0] >> 12 & 0xF, dw[0] >> 16 & 0x1FFF, dw[0] >> 30 & 1
        ndw, status, tag = dw[1] & 0x7FF, dw[1] >> 11 & 7, dw[2] & 0xFF
        assert err == 0 and status == 0, dw[:3]
        assert ndw == len(dw) - 3 and ndw <= 32 << mps_code, (ndw, len(dw), mps_code)
        got[tag].append((lower, byte_count, done, dw[3:]))
    for tag, (addr, ndw, fbe, lbe) in reads.items():
        lo, nbytes = be_span(fbe, lbe, ndw)
        cpls = got[tag]
        assert cpls, f"read {tag} got no completion"
        data = b""
        remaining = nbytes
        for k, (lower, byte_count, done, words) in enumerate(cpls):
            assert byte_count == remaining, (tag, k, byte_count, remaining)
            assert lower == (addr + lo + nbytes - remaining) & 0xFFF
            raw = b"".join(w.to_bytes(4, "little") for w in words)
            take = raw[lower & 3:][:remaining]
            data += take
            remaining -= len(take)
            assert done == (k == len(cpls) - 1), (tag, k, done)
            if k < len(cpls) - 1:
                assert (lower + len(raw) - (lower & 3)) % 64 == 0, "completion not cut at the RCB"
        assert data == image[addr + lo:addr + lo + nbytes], f"read {tag} data differs"
    # Writes landed with their byte enables.
    for addr, ndw, fbe, lbe, data in writes:
        lo, nbytes = be_span(fbe, lbe, ndw)
        raw = b"".join(w.to_bytes(4, "little") for w in data)
        assert bytes(mem[addr + lo:addr + lo + nbytes]) == raw[lo:lo + nbytes]
    assert (EV_MSI, 5, 0, b"") in events, events
    # BAR0: the write and the read on CQ, the read's completion back to the driver.
    (u0, w0, _), (u1, w1, _) = nic.cq_frames[:2]
    assert w0[2] >> 11 & 0xF == 1 and w0[0] == 0x40 and w0[4] == 0x11223344 and u0 & 0xF == 0xF, w0
    assert w1[2] >> 11 & 0xF == 0 and w1[0] == 0x80 and u1 >> 40 & 1, w1
    assert (EV_MMIO_READ, 77, 0, (0xCAFEF00D).to_bytes(4, "little")) in events, events
    st = lib.host_stats()
    assert st["reads"] == len(reads) and st["max_in_flight"] > 1 and st["bad_requests"] == 0, st


def test_pcie_host_bad_requests():
    """A read of memory the host does not have gets an Unsupported Request completion
    (request completed, no data); a read across 4 KiB (malformed), a discontinued TLP and
    a write outside memory are dropped and counted, as cocotbext-pcie's root complex does
    (the NIC's read timeout covers the dropped read); nothing hangs."""
    rng = random.Random(random.getrandbits(64))
    lib = FastLib()
    lib.init(1 << 20, 4.0, 0, False)
    lib.lib.fastsim_set_read_latency(100.0, 0.0)
    nic = Nic(lib, rng)
    nic.rq([0, 1, 4 | 0 << 11, 1], 0xF, 0xF)                 # at 4 GiB: no memory there
    nic.rq([0xFF0, 0, 8 | 0 << 11, 2], 0xF, 0xF)             # 0xFF0 + 32 bytes crosses 4 KiB
    nic.rq([0x100, 0, 1 | 1 << 11, 0, 7], 0xF, 0)           # a fine write, for contrast
    nic.rq([0, 1, 1 | 1 << 11, 0, 7], 0xF, 0)               # a write outside memory
    nic.rq_beats.append(([0x200, 0, 1 | 0 << 11, 3], 0xF, True, 0xF | 1 << 11))  # discontinued
    for _ in range(2000):
        nic.step()
    by_tag = {dw[2] & 0xFF: dw for _, dw, _ in nic.rc_frames}
    assert sorted(by_tag) == [1], by_tag
    for tag in (1,):
        dw = by_tag[tag]
        assert dw[1] >> 11 & 7 == 1 and dw[1] & 0x7FF == 0 and dw[0] >> 30 & 1 and len(dw) == 3, dw
    assert lib.host_mem()[0x100] == 7
    st = lib.host_stats()
    assert st["bad_requests"] == 3 and st["in_flight"] == 0, st


def test_pcie_host_read_faults():
    """Injected read faults (the VM's DMA errors, tests/vm/test_vm_dma_error.py): the first
    matching rule decides, a faulting rule answers Unsupported Request (no data, request
    completed) and counts `faulted_reads`, an exempting rule inside a wider faulting one
    lets its range read normally, reads outside every rule and after the rules are cleared
    read memory; writes are never faulted."""
    rng = random.Random(random.getrandbits(64))
    lib = FastLib()
    lib.init(1 << 20, 4.0, 0, False)
    lib.lib.fastsim_set_read_latency(100.0, 0.0)
    mem = lib.host_mem()
    for a in (0x1100, 0x3000, 0x20000):
        mem[a:a + 4] = (a | 0xA5000000).to_bytes(4, "little")
    lib.lib.fastsim_add_read_fault(0x1000, 0x2000, 0)      # exempt (a ring)
    lib.lib.fastsim_add_read_fault(0, 0x10000, 1)          # every other read below 64 KiB fails
    nic = Nic(lib, rng)
    nic.rq([0x1100, 0, 1 | 0 << 11, 1], 0xF, 0)
    nic.rq([0x3000, 0, 1 | 0 << 11, 2], 0xF, 0)
    nic.rq([0x20000, 0, 1 | 0 << 11, 3], 0xF, 0)
    nic.rq([0x3100, 0, 1 | 1 << 11, 0, 9], 0xF, 0)         # a write into the faulting range lands
    for _ in range(2000):
        nic.step()
    lib.lib.fastsim_clear_read_faults()
    nic.rq([0x3000, 0, 1 | 0 << 11, 4], 0xF, 0)
    for _ in range(2000):
        nic.step()
    by_tag = {dw[2] & 0xFF: dw for _, dw, _ in nic.rc_frames}
    assert sorted(by_tag) == [1, 2, 3, 4], by_tag
    for tag, addr in ((1, 0x1100), (3, 0x20000), (4, 0x3000)):
        dw = by_tag[tag]
        assert dw[1] >> 11 & 7 == 0 and dw[3] == addr | 0xA5000000, (tag, dw)
    dw = by_tag[2]
    assert dw[1] >> 11 & 7 == 1 and dw[1] & 0x7FF == 0 and dw[0] >> 30 & 1 and len(dw) == 3, dw
    assert mem[0x3100] == 9
    st = lib.host_stats()
    assert st["faulted_reads"] == 1 and st["bad_requests"] == 0 and st["in_flight"] == 0, st
