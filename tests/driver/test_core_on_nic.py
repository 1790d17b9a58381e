"""The driver core (sw-driver/core, the C offnic.ko runs) drives the simulated NIC on the
fast harness: discovery over BAR0, event queues with MSI-X, completion queues and queues
brought up by the core, frames sent and received through descriptors the core writes and
completions and events it decodes, counters read by the core. The register accesses run
in a cocotb bridge thread (a BAR0 read waits for the NIC's completion); DMA memory is the
harness's host memory. The driver model is not used: what is checked comes from the
ports, the frames and the register map."""
import ctypes
import random
import sys
from pathlib import Path

import cocotb
from cocotb._bridge import bridge, resume
from cocotb.triggers import Timer, with_timeout

from offnic_sim.fast.fast_tb import FastBar, FastNicTB
from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host import drvcore, rings
from offnic_sim.host.drvcore import RX, TX

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "offload"))
from rss_model import rss_result  # noqa: E402  (the RSS reference the RssHash bench uses)

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
MAC = bytes.fromhex("020000000001")
LOG = 6          # 64-record rings
BUF = 2048


def ones_sum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def udp_frame(rng, size: int) -> tuple[bytes, bytes]:
    """A UDP/IPv4 frame of `size` bytes as Linux hands it over with CHECKSUM_PARTIAL (the
    UDP checksum field holding the pseudo-header's sum), and as it must leave the NIC
    (the full UDP checksum; 0 is sent as 0xFFFF)."""
    size = max(size, 42)
    src, dst = rng.randbytes(4), rng.randbytes(4)
    udp_len = size - 34
    ip = bytearray(b"\x45\x00" + (size - 14).to_bytes(2, "big") + b"\x00\x01\x00\x00\x40\x11\x00\x00" + src + dst)
    ip[10:12] = (~ones_sum(bytes(ip)) & 0xFFFF).to_bytes(2, "big")
    payload = rng.randbytes(udp_len - 8)
    udp = rng.randbytes(4) + udp_len.to_bytes(2, "big")
    pseudo = ones_sum(src + dst + b"\x00\x11" + udp_len.to_bytes(2, "big"))
    head = MAC + b"\x02\x00\x00\x00\x00\x02\x08\x00" + bytes(ip)
    partial = head + udp + pseudo.to_bytes(2, "big") + payload
    full = ~ones_sum(src + dst + b"\x00\x11" + udp_len.to_bytes(2, "big") + udp + b"\0\0" + payload) & 0xFFFF
    return partial, head + udp + (full or 0xFFFF).to_bytes(2, "big") + payload


class CoreHost:
    """The core on the fast harness: MMIO through FastBar, DMA in the harness's memory."""

    def __init__(self, tb: FastNicTB):
        self.tb = tb
        bar = FastBar(tb)
        base = tb.lib.lib.fastsim_host_mem()
        self.bufs = []

        @resume
        async def read32(off):
            return await bar.read_dword(off)

        def write32(off, v):  # posted: no simulation time needed
            tb.lib.lib.fastsim_mmio_write(off, (v & 0xFFFF_FFFF).to_bytes(4, "little"), 4)

        def alloc(size):
            b = tb.hostmem.alloc(size, 4096)
            self.bufs.append(b)
            return base + b.addr, b.addr

        self.core = drvcore.Core(read32, write32, bar_len=1 << 24, log=tb.dut._log, dma_alloc=alloc)
        self.lib, self.h = self.core.lib, self.core.hw_p


@cocotb.test(timeout_time=400, timeout_unit="us")
async def core_drives_nic(dut):
    rng = random.Random(random.getrandbits(64))
    tb = FastNicTB(dut)
    await tb._out_of_reset
    for p in tb.ports:
        await p.reset()
    tb.lib.lib.fastsim_set_sizes(1, 2)   # MPS 256, MRRS 512, as the OS would set them
    host = CoreHost(tb)
    core, lib, h = host.core, host.lib, host.h
    vectors = tb.rc.msi_alloc_vectors(2)
    state = {}

    @bridge
    def bring_up():
        assert core.probe() == 0, core.lines
        hw = core.hw
        eqs = []
        for k in range(2):   # event queue k raises vector k
            eq = core.ring_alloc(4)
            assert lib.offnic_eq_open(h, k, ctypes.byref(eq)) == 0
            assert lib.offnic_msix_set(h, k, vectors[k].addr, vectors[k].data, 0) == 0
            lib.offnic_eq_done(h, k, eq.cons, 1)
            eqs.append(eq)
        rings_ = {}
        for kind in (TX, RX):
            for q in range(2):
                cq, ring = core.ring_alloc(LOG), core.ring_alloc(LOG)
                assert lib.offnic_cq_open(h, kind, q, ctypes.byref(cq), q, 1, 0) == 0
                lib.offnic_cq_done(h, kind, q, cq.cons, 1)
                assert lib.offnic_queue_open(h, kind, q, ctypes.byref(ring), q) == 0
                rings_[kind, q] = (cq, ring)
        assert lib.offnic_rss_set_control(h, 0) == 0
        bufs = {}
        for port in range(hw.n_ports):
            assert lib.offnic_set_default_queue(h, port, port) == 0
            assert lib.offnic_port_set_mac(h, port, MAC) == 0
            assert lib.offnic_port_set_rx_filter(h, port, 0, 0, 1, 0) == 0
            _, ring = rings_[RX, port]
            bufs[port] = tb.hostmem.alloc(BUF << LOG)
            for k in range(1 << LOG):
                d = drvcore.Desc(bufs[port].addr + rings.slot(ring.prod, LOG) * BUF, BUF, 0, 0, 0, 0)
                lib.offnic_ring_put_desc(ctypes.byref(ring), ctypes.byref(d))
            lib.offnic_queue_doorbell(h, RX, port, ring.prod)
        names, last, total = core.counters()
        lib.offnic_counters_update(h, last, total)
        state.update(eqs=eqs, rings=rings_, bufs=bufs, counters=(names, last, total), n_ports=hw.n_ports,
                     blocks=core.blocks())

    await bring_up()
    eqs, rings_, bufs = state["eqs"], state["rings"], state["bufs"]
    assert state["n_ports"] == 2
    assert sum(1 for *_, known in state["blocks"] if known) == len(state["blocks"]), \
        "the core does not know a block this NIC has"

    events = {}

    def drain_events(k: int) -> None:
        """Take every new event of event queue k; each must name an open completion
        queue that reports to k."""
        eq, ev, n = eqs[k], drvcore.Event(), 0
        while lib.offnic_eq_next(ctypes.byref(eq), ctypes.byref(ev)):
            assert (ev.type, ev.source) in rings_ and ev.source == k, \
                f"event queue {k}: event for {(ev.type, ev.source)}"
            events[ev.type, ev.source] = events.get((ev.type, ev.source), 0) + 1
            eq.cons = rings.idx_add(eq.cons, 1)
            n += 1
        if n:
            lib.offnic_eq_done(h, k, eq.cons, 1)

    async def completion(kind: int, q: int) -> drvcore.Cpl:
        """The next completion of (kind, q), waiting for the interrupt if there is none yet."""
        cq, _ = rings_[kind, q]
        cpl = drvcore.Cpl()
        while not lib.offnic_cq_next(ctypes.byref(cq), ctypes.byref(cpl)):
            await with_timeout(vectors[q].event.wait(), 100, "us")
            vectors[q].event.clear()
            drain_events(q)
        cq.cons = rings.idx_add(cq.cons, 1)
        lib.offnic_cq_done(h, kind, q, cq.cons, 1)
        return cpl

    sent = {0: 0, 1: 0}
    txbuf = tb.hostmem.alloc(BUF << LOG)
    for n in range(24):
        port = rng.randrange(2)
        size = rng.choice([60, 61, 64, 65, rng.randint(60, 1514), 1514])
        csum = rng.random() < 0.4
        frame, wire = (udp_frame(rng, size) if csum else
                       (MAC + b"\x02\x00\x00\x00\x00\x02" + b"\x88\xb5" + rng.randbytes(size - 14),) * 2)
        # TX through the core: descriptors (cut in up to 3 pieces), doorbell, completion
        _, ring = rings_[TX, port]
        first = ring.prod
        cuts = sorted(rng.sample(range(1, size), rng.randint(0, 2)))
        pieces = rings.split_frame(frame, cuts)
        for k, piece in enumerate(pieces):
            at = rings.slot(ring.prod, LOG) * BUF
            txbuf.write(at, piece)
            flags = rings.DESC_MORE if k < len(pieces) - 1 else 0
            start_ins = (0, 0)
            if k == 0 and csum:   # Linux's csum_start and csum_start + csum_offset
                flags |= rings.DESC_CSUM
                start_ins = (34, 40)
            d = drvcore.Desc(txbuf.addr + at, len(piece), 0, flags, *start_ins)
            lib.offnic_ring_put_desc(ctypes.byref(ring), ctypes.byref(d))
        lib.offnic_queue_doorbell(h, TX, port, ring.prod)
        got = await with_timeout(tb.ports[port].recv(), 100, "us")
        assert bytes(got[:size]) == wire, f"frame {n}: port {port} sent other bytes (checksum {csum})"
        cpl = await completion(TX, port)
        assert (cpl.status, cpl.queue, cpl.index, cpl.len, cpl.flags & 1) == (0, port, first, size, port), \
            (cpl.status, cpl.queue, cpl.index, cpl.len, cpl.flags)
        sent[port] += 1

        # RX through the core: the frame back into the same port, into the port's queue
        _, rxring = rings_[RX, port]
        await tb.ports[port].send(wire)
        cpl = await completion(RX, port)
        assert (cpl.status, cpl.queue, cpl.len, cpl.flags & 1) == (0, port, size, port)
        assert cpl.flags & rings.CPL_CSUM_VALID and cpl.csum == ones_sum(wire[14:])
        data = bufs[port].read(rings.slot(cpl.index, LOG) * BUF, size)
        assert data == wire, f"frame {n}: port {port} received other bytes"
        # repost that buffer
        d = drvcore.Desc(bufs[port].addr + rings.slot(rxring.prod, LOG) * BUF, BUF, 0, 0, 0, 0)
        lib.offnic_ring_put_desc(ctypes.byref(rxring), ctypes.byref(d))
        lib.offnic_queue_doorbell(h, RX, port, rxring.prod)

    names, last, total = state["counters"]

    @bridge
    def counters():
        lib.offnic_counters_update(h, last, total)
        return dict(zip(names, total))

    await Timer(2, "us")
    for k in range(2):
        drain_events(k)
    # moderation count 1 and every CQ re-armed after its completion: one event each
    assert events == {(kind, p): sent[p] for kind in (TX, RX) for p in range(2) if sent[p]}, (events, sent)
    c = await counters()
    for port in range(2):
        assert c[f"port{port}.mac_tx_frames"] == sent[port], c
        assert c[f"port{port}.mac_rx_frames"] == sent[port], c
    assert c["nic_tx_packets"] == c["nic_rx_packets"] == 24, c
    assert c["nic_rx_drop_no_desc"] == c["nic_tx_bad_desc"] == c["nic_eq_overflows"] == 0, c
    dut._log.info("core on the NIC: 24 frames each way, events %s, counters %s", events,
                  {k: v for k, v in c.items() if v})

    # RSS programmed by the core: two more RX queues, a random key and table over 0..3
    key = rng.randbytes(40)
    table = [rng.randrange(4) for _ in range(128)]

    @bridge
    def rss_up():
        for q in (2, 3):
            cq, ring = core.ring_alloc(LOG), core.ring_alloc(LOG)
            assert lib.offnic_cq_open(h, RX, q, ctypes.byref(cq), q % 2, 1, 0) == 0
            assert lib.offnic_queue_open(h, RX, q, ctypes.byref(ring), 0) == 0
            rings_[RX, q] = (cq, ring)
            bufs[q] = tb.hostmem.alloc(BUF << LOG)
            for _ in range(1 << LOG):
                d = drvcore.Desc(bufs[q].addr + rings.slot(ring.prod, LOG) * BUF, BUF, 0, 0, 0, 0)
                lib.offnic_ring_put_desc(ctypes.byref(ring), ctypes.byref(d))
            lib.offnic_queue_doorbell(h, RX, q, ring.prod)
        assert lib.offnic_rss_set_key(h, key) == 0
        assert lib.offnic_rss_set_table(h, (drvcore.u32 * 128)(*table), 128) == 0
        assert lib.offnic_rss_set_control(h, 0x1F) == 0
        assert lib.offnic_rss_get_control(h) == 0x1F   # a read: every write before it has landed

    # moderation set by the core: TX queue 0's CQ fires after 4 completions (time 1 ms)
    @bridge
    def moderate(count, usecs):
        assert lib.offnic_set_moderation(h, TX, 0, count, usecs) == 0
        got_c, got_us = drvcore.u32(), drvcore.u32()
        assert lib.offnic_get_moderation(h, TX, 0, ctypes.byref(got_c), ctypes.byref(got_us)) == 0
        assert (got_c.value, got_us.value) == (count, usecs)

    await moderate(4, 1000)
    drain_events(0)
    before = events.get((TX, 0), 0)
    cq, ring = rings_[TX, 0]
    for k in range(4):
        at = rings.slot(ring.prod, LOG) * BUF
        frame = MAC + rng.randbytes(60)
        txbuf.write(at, frame)
        d = drvcore.Desc(txbuf.addr + at, len(frame), 0, 0, 0, 0)
        lib.offnic_ring_put_desc(ctypes.byref(ring), ctypes.byref(d))
        lib.offnic_queue_doorbell(h, TX, 0, ring.prod)
        await with_timeout(tb.ports[0].recv(), 100, "us")
        await Timer(3, "us")  # its completion is written by now
        drain_events(0)
        want = before + (1 if k == 3 else 0)
        assert events.get((TX, 0), 0) == want, f"after {k + 1} completions: {events.get((TX, 0), 0) - before} events"
    cpl = drvcore.Cpl()
    for k in range(4):   # all four completions are there, in order
        assert lib.offnic_cq_next(ctypes.byref(cq), ctypes.byref(cpl)) and cpl.status == 0
        cq.cons = rings.idx_add(cq.cons, 1)
    lib.offnic_cq_done(h, TX, 0, cq.cons, 1)
    await moderate(1, 0)

    await rss_up()
    await Timer(5, "us")   # the NIC fetches the new queues' buffers
    per_queue = [0] * 4
    for n in range(40):
        _, frame = udp_frame(rng, rng.randint(60, 600))
        want = rss_result(frame, key, table)
        await tb.ports[0].send(frame)
        got = None
        for _ in range(100):   # poll every RX completion queue: where did it go?
            for q in range(4):
                cq, _ = rings_[RX, q]
                cpl = drvcore.Cpl()
                if lib.offnic_cq_next(ctypes.byref(cq), ctypes.byref(cpl)):
                    cq.cons = rings.idx_add(cq.cons, 1)
                    lib.offnic_cq_done(h, RX, q, cq.cons, 0)
                    got = (q, cpl)
            if got:
                break
            await Timer(1, "us")
        assert got is not None, f"RSS frame {n}: no completion ({want})"
        q, cpl = got
        assert cpl.status == 0 and cpl.flags & rings.CPL_RSS_VALID
        assert (q, cpl.queue, cpl.rss_hash, cpl.rss_type) == (want.queue, want.queue, want.hash, want.hash_type), \
            f"RSS frame {n}: queue {q} hash {cpl.rss_hash:#x} type {cpl.rss_type}, expected {want}"
        per_queue[q] += 1
    dut._log.info("RSS by the core's key and table: frames per RX queue %s", per_queue)
    assert sum(1 for k in per_queue if k) >= 2, per_queue


def test_core_on_nic():
    run_cocotb(NIC, __name__, fast=True)
