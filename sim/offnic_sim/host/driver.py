"""The offnic driver model: the host side of docs/queues.md, in Python, for cocotb benches.

It is the reference user of the NIC: it enumerates the device through cocotbext-pcie's
root complex, finds its register blocks by walking the chain in BAR0, keeps every ring in
host memory (with a realistic read latency, see hostmem.py), rings doorbells, takes
completions and events by their phase bits and answers MSI-X interrupts, and counts all
it sees. Record layouts and index arithmetic live in rings.py (pure functions, unit
tested without a simulator).

Example (a bench with the NIC behind the UltraScale+ model and a root complex `rc`)::

    from offnic_sim.host.driver import OffnicDriver

    drv = OffnicDriver(dut, rc)              # host reads answered after 1 us
    await drv.init()                          # enumerate, bus master, discover, EQs + MSI-X
    await drv.open_tx_queue(0, size=256, port=0)
    await drv.open_rx_queue(0, size=256, buf_size=2048)
    await drv.set_rss(enable=False)           # RSS is on after reset; off: default queues
    await drv.set_default_queue(port=0, q=0)  # port 0's frames go to RX queue 0
    tok = await drv.send(0, frame, segments=[14, 34], csum=(34, 50))  # 3 descriptors, checksum
    cpl = await tok.wait()                    # its completion (status, len, port)
    toks = await drv.send_batch(0, frames)    # one descriptor per frame, ONE doorbell
    pkt = await drv.recv(0)                   # RxPacket(data, queue, port, csum, rss_hash, ...)
    await drv.set_moderation("rx", 0, count=8, time_us=5)
    await drv.set_rss(table=[0, 1, 2, 3])     # RSS on again, spread over RX queues 0..3
    print(await drv.port_counters(0))         # eth_port counters: tx_frames, rx_frames ...
    await drv.set_mac(1, bytes.fromhex("020000000a01"))   # port 1's station address
    await drv.set_rx_mode(1, mc_list=[bytes.fromhex("01005e000001")])  # + one multicast group
    drv.log_summary()                         # completions by status, interrupts, TX latency

Modes: `mode="irq"` (default) arms completion and event queues and does all work in
MSI-X handlers, one task per vector; `mode="poll"` never arms them and polls every
completion queue every `poll_interval_ns` (or only when the test calls `poll()`, with
`poll_interval_ns=None`).

Protocol violations the driver can see (a completion for a packet it did not send, a
wrong length or port, an event naming a closed queue, an RX write past its buffer ...)
are logged, kept in `errors`, and raised (AssertionError) when `strict` (the default):
raised inside an interrupt task, they fail the cocotb test.

Register blocks used (docs/queues.md, registers.md): the arrays tx_queues, rx_queues,
tx_cqs, rx_cqs, eqs, msix (`block.read("count")`, records by `block.entry(k)`), and
rx_engine, rss, eth_port, tx_engine (and any other block, generically, with
`counters`). Field positions come from the register map (`regs`, generated from
RegMap.scala), never from constants here.
"""
from __future__ import annotations

import binascii
import logging
from collections import Counter, deque
from dataclasses import dataclass, field

import cocotb
from cocotb.queue import Queue
from cocotb.simtime import get_sim_time
from cocotb.triggers import Event, Lock, Timer, with_timeout
from cocotbext.pcie.core.caps import PciCapId

from offnic_sim.host import reasm_fixup
from offnic_sim.host import regs
from offnic_sim.host import rings
from offnic_sim.host.hostmem import DEFAULT_READ_LATENCY_NS, HostBuffer, HostMemory
from offnic_sim.host.regblocks import discover
from offnic_sim.host.rings import Completion, Desc

ARRAYS = ("tx_queues", "rx_queues", "tx_cqs", "rx_cqs", "eqs", "msix")
QUEUE_BLOCK = {"tx": "tx_queues", "rx": "rx_queues"}
CQ_BLOCK = {"tx": "tx_cqs", "rx": "rx_cqs"}
EV_KIND = {rings.EV_TX_CQ: "tx", rings.EV_RX_CQ: "rx"}
GUARD = 0xA5        # fill byte of the guard gap after every RX buffer
GUARD_BYTES = 64
DEFAULT_TX_BUF = 16384  # bytes of host buffer behind each TX descriptor slot
# The station address `init` gives every port unless told otherwise: the address the
# tests', demo's and benches' frames are sent to (one address for the host, on both
# ports, as a host-wide MAC; a real driver reads each port's from the board's EEPROM).
DEFAULT_MAC = bytes.fromhex("020000000001")
BROADCAST = b"\xff" * 6


def mc_hash(addr: bytes) -> int:
    """The NIC's multicast hash of a group address (docs/queues.md): the top 6 bits of
    the IEEE CRC-32 of its 6 bytes, as binascii computes it."""
    return binascii.crc32(bytes(addr)) >> 26


def now_ns() -> float:
    return get_sim_time("ns")


# ---------------------------------------------------------------------------- results

@dataclass
class TxToken:
    """One packet handed to a TX queue. `wait()` returns its completion."""
    queue: int
    index: int                 # ring index of its first descriptor
    ndesc: int
    length: int | None         # bytes the completion must report (None: not checked)
    port: int
    t_doorbell: float = 0.0    # sim time (ns) the doorbell write was issued
    t_complete: float | None = None  # sim time (ns) the driver took the completion
    cpl: Completion | None = None
    done: Event = field(default_factory=Event)

    @property
    def status(self) -> int | None:
        return None if self.cpl is None else self.cpl.status

    @property
    def latency_ns(self) -> float | None:
        """Doorbell to completion, as the driver saw it (includes interrupt latency)."""
        return None if self.t_complete is None else self.t_complete - self.t_doorbell

    async def wait(self, timeout_us: float | None = 1000.0) -> Completion:
        if timeout_us:
            await with_timeout(self.done.wait(), timeout_us, "us")
        else:
            await self.done.wait()
        return self.cpl


@dataclass
class RxPacket:
    """One RX completion. `data` is empty unless status is OK; `csum` (CHECKSUM_COMPLETE
    sum) and `rss_hash`/`rss_type` are None when the completion marks them invalid."""
    data: bytes
    queue: int
    port: int
    csum: int | None
    rss_hash: int | None
    rss_type: int | None
    status: int
    cpl_time: float            # sim time (ns) the driver took the completion
    index: int = 0             # ring index of the descriptor the frame used (reassembled: buffer id)
    length: int = 0            # length the completion reported
    reassembled: bool = False  # a datagram the NIC reassembled from fragments (csum: its IP payload's sum)

    @property
    def ok(self) -> bool:
        return self.status == rings.OK


# ---------------------------------------------------------------------------- ring state

class _Ring:
    """A ring of 16-byte records in host memory."""

    def __init__(self, buf: HostBuffer, log_size: int):
        self.buf = buf
        self.log_size = log_size
        self.size = 1 << log_size

    def record(self, i: int) -> bytes:
        return self.buf.read(rings.record_offset(i, self.log_size), rings.RECORD_BYTES)

    def put(self, i: int, rec: bytes) -> None:
        self.buf.write(rings.record_offset(i, self.log_size), rec)


class _Consumed:
    """A ring the NIC produces and the host consumes (completion or event queue)."""

    def __init__(self, kind: str, n: int, regs_, ring: _Ring, cons: int, ctrl: int, eq: int | None = None):
        self.kind, self.n, self.regs, self.ring = kind, n, regs_, ring
        self.cons = cons
        self.ctrl = ctrl
        self.eq = eq
        self.lock = Lock()


class _Produced:
    """A TX or RX queue: a descriptor ring the host produces, its buffers, its CQ."""

    def __init__(self, kind: str, n: int, regs_, ring: _Ring, bufs: HostBuffer, stride: int, buf_size: int,
                 prod: int, ctrl: int, port: int, cq: _Consumed):
        self.kind, self.n, self.regs, self.ring = kind, n, regs_, ring
        self.bufs, self.stride, self.buf_size = bufs, stride, buf_size
        self.prod = prod      # next index the host writes
        self.clean = prod     # first index not yet completed
        self.ctrl, self.port, self.cq = ctrl, port, cq
        self.lock = Lock()
        self.space = Event()  # set on every completion taken
        self.inflight: deque[TxToken] = deque()
        self.done: list[TxToken] = []
        self.packets: Queue[RxPacket] = Queue()
        self.refill = True    # RX: repost buffers as frames arrive

    def buf_offset(self, i: int) -> int:
        return rings.slot(i, self.ring.log_size) * self.stride


# ---------------------------------------------------------------------------- the driver

class OffnicDriver:
    """Driver model of one offnic function.

    `dut`: the cocotb handle (for its logger); `rc`: the cocotbext-pcie RootComplex the NIC
    is connected to. `hostmem`: the HostMemory of `rc` (default: the one already installed
    on `rc`, else a new one with `read_latency_ns`). `mode`: "irq" or "poll";
    `poll_interval_ns`: the poll mode's period (None: only explicit `poll()` calls).
    `strict`: raise on protocol errors (else only log and keep them in `errors`).
    """

    def __init__(self, dut, rc, *, mode: str = "irq", read_latency_ns: float = DEFAULT_READ_LATENCY_NS,
                 hostmem: HostMemory | None = None, poll_interval_ns: float | None = 500.0, strict: bool = True,
                 macs: tuple[bytes, ...] = (DEFAULT_MAC, DEFAULT_MAC)):
        if mode not in ("irq", "poll"):
            raise ValueError(f"mode {mode!r}: irq or poll")
        self.dut = dut
        self.rc = rc
        self.mode = mode
        self.strict = strict
        self.poll_interval_ns = poll_interval_ns
        self.hostmem = hostmem or getattr(rc, "offnic_hostmem", None) or HostMemory(rc, read_latency_ns)
        self.log = getattr(dut, "_log", None) or logging.getLogger("offnic.driver")
        self.fn = None
        self.bar = None
        self.blocks: dict[str, list] = {}
        self.counts: dict[str, int] = {}
        self.max_segs: int | None = None      # tx_queues.max_segs: descriptors per TX packet
        self.max_tx_frame: int | None = None  # tx_engine.max_frame: longest TX frame
        self.vectors = []
        self.eqs: dict[int, _Consumed] = {}
        self.cqs: dict[str, dict[int, _Consumed]] = {"tx": {}, "rx": {}}
        self.queues: dict[str, dict[int, _Produced]] = {"tx": {}, "rx": {}}
        self.stats: Counter = Counter()
        # TCP engine notification events (rings.unpack_toe_note tuples), oldest first: the
        # TCP offload's driver layer (offnic_sim.toe.toe_cmdq) takes them.
        self.toe_notes: list[tuple[int, int, int, int]] = []
        self.irqs: Counter = Counter()  # interrupts per vector
        self.errors: list[str] = []
        self._tasks = []
        self.reasm_bufs: dict[int, HostBuffer] = {}   # reassembly buffers by id
        self._reasm_repost: list[int] = []
        self.macs: dict[int, bytes] = dict(enumerate(macs))  # station address per port, set by `init`

    # ------------------------------------------------------------------ bring-up

    async def init(self, pcie_id=None, num_vectors: int | None = None, eq_size: int | None = None,
                   mps: int | None = None, mrrs: int | None = None) -> None:
        """Enumerate, enable memory space and bus mastering (and MSI-X in config space),
        optionally set max payload / read request size, find BAR0, discover the register
        blocks and `attach` to them. `pcie_id`: the function (default: the first endpoint)."""
        await self.rc.enumerate()
        self.fn = self.rc.find_device(pcie_id) if pcie_id is not None else _first_endpoint(self.rc)
        if self.fn is None:
            raise RuntimeError("no PCIe endpoint found after enumeration")
        await self.fn.enable_device()
        await self.fn.set_master()
        await self._enable_extended_tags()
        if mps or mrrs:
            await self.set_pcie_sizes(mps, mrrs)
        if self.fn.get_capability_offset(PciCapId.MSIX):
            await self.fn.msix_set_enable(True)  # the NIC's table is in BAR0 (msix block)
        self.bar = self.fn.bar_window[0]
        if self.bar is None:
            raise RuntimeError("the function has no BAR0")
        blocks = await discover(self.bar.read_dword, self.bar.write_dword, regs.BLOCKS)
        await self.attach(blocks, num_vectors=num_vectors, eq_size=eq_size)

    async def _enable_extended_tags(self) -> None:
        """Set Extended Tag Field Enable (PCIe device control bit 8) when the function
        supports it, as Linux does: the NIC keeps up to 64 reads in flight, and tags above
        31 are only legal with it. Without it the NIC must not be given tags >= 32."""
        cap = await self.fn.capability_read_dword(PciCapId.EXP, 4)  # device capabilities
        if cap & (1 << 5):
            ctl = await self.fn.capability_read_word(PciCapId.EXP, 8)
            await self.fn.capability_write_word(PciCapId.EXP, 8, ctl | 1 << 8)
            self.extended_tags = True
        else:
            self.extended_tags = False
            self.log.warning("the function does not support extended tags: the NIC's DMA reads may use tags >= 32")

    async def set_pcie_sizes(self, mps: int | None = None, mrrs: int | None = None) -> None:
        """Max payload / max read request size in the function's PCIe device control (as
        the OS sets them); the host answers reads with completions of up to `mps` too."""

        def code(n: int) -> int:
            c = (n // 128).bit_length() - 1
            if n < 128 or 128 << c != n or c > 5:
                raise ValueError(f"{n}: not a PCIe size (128..4096, power of two)")
            return c

        ctl = await self.fn.capability_read_word(PciCapId.EXP, 8)
        if mps:
            ctl = (ctl & ~(7 << 5)) | code(mps) << 5
            self.rc.max_payload_size = code(mps)
        if mrrs:
            ctl = (ctl & ~(7 << 12)) | code(mrrs) << 12
        await self.fn.capability_write_word(PciCapId.EXP, 8, ctl)

    async def attach(self, blocks: dict[str, list], num_vectors: int | None = None,
                     eq_size: int | None = None) -> None:
        """Take discovered register blocks (name -> instances; `init` passes what
        regblocks.discover found), read the array sizes, and set up one event queue per
        interrupt vector: allocate MSI vectors on the root complex, program the msix
        table (address, data, unmasked), open and arm the event queues."""
        missing = [n for n in ARRAYS if n not in blocks]
        if missing:
            raise RuntimeError(f"register blocks {missing} not found (found: {sorted(blocks)}); "
                               "does regs.py describe them and does the NIC have them?")
        self.blocks = blocks
        for name in ARRAYS:
            self.counts[name] = await blocks[name][0].read("count")
        self.max_segs = await self._optional("tx_queues", "max_segs")
        self.max_tx_frame = await self._optional("tx_engine", "max_frame")
        n = min(self.counts["eqs"], self.counts["msix"], num_vectors or 1 << 16)
        if n < 1:
            raise RuntimeError(f"no interrupt vectors: {self.counts}")
        if eq_size is None:  # room for an event from every completion queue
            eq_size = 1 << max(rings.MIN_LOG_SIZE, (self.counts["tx_cqs"] + self.counts["rx_cqs"] - 1).bit_length())
        self.vectors = self.rc.msi_alloc_vectors(n)
        for k in range(n):
            await self._open_eq(k, min(eq_size, 1 << rings.MAX_LOG_SIZE))
        if self.mode == "irq":
            self._tasks += [cocotb.start_soon(self._irq_task(k)) for k in range(n)]
        elif self.poll_interval_ns:
            self._tasks.append(cocotb.start_soon(self._poll_task()))
        for port, mac in self.macs.items():  # as a Linux driver's open(): address, then rx mode
            if self._port_block(port, required=False) is not None:
                await self.set_mac(port, mac)
                await self.set_rx_mode(port)
        self.log.info("offnic driver: %s, %d vectors, %s mode, host read latency %g ns", self.counts, n,
                      self.mode, self.hostmem.read_latency_ns)

    async def _optional(self, block: str, reg: str) -> int | None:
        """A register of a block the NIC may not have (None if absent)."""
        b = self.blocks.get(block)
        return await b[0].read(reg) if b and reg in b[0].type.regs else None

    def entry(self, block: str, k: int):
        """Record `k` of an array block (its registers by name: `.read(reg)`, `.write(reg, v)`)."""
        return self.block(block).entry(k)

    def block(self, name: str, instance: int = 0):
        try:
            return self.blocks[name][instance]
        except (KeyError, IndexError):
            raise RuntimeError(f"no register block {name}[{instance}] (found: {sorted(self.blocks)})") from None

    def alloc(self, size: int, align: int = 4096) -> HostBuffer:
        """Zeroed host memory (e.g. for hand-made descriptors given to `send_descs`)."""
        return self.hostmem.alloc(size, align)

    # ------------------------------------------------------------------ rings

    def _alloc_ring(self, log_size: int, start: int = 0) -> _Ring:
        ring = _Ring(self.hostmem.alloc(rings.RECORD_BYTES << log_size), log_size)
        image = rings.initial_ring(log_size, start)
        if any(image):
            ring.buf.write(0, image)
        return ring

    async def _program_base(self, r, ring: _Ring) -> None:
        await r.write("base_lo", ring.buf.addr & 0xFFFF_FFFF)
        await r.write("base_hi", ring.buf.addr >> 32)

    async def _open_eq(self, k: int, size: int) -> None:
        log = rings.log_size_of(size)
        r = self.entry("eqs", k)
        lay = _layout(r, "control")
        await r.write("control", rings.pack_fields(lay, log_size=log, enable=0))
        start = await r.read("prod") & rings.INDEX_MASK
        ring = self._alloc_ring(log, start)
        await self._program_base(r, ring)
        await r.write("cons", start)
        vec = self.vectors[k]
        m = self.entry("msix", k)
        await m.write("addr_lo", vec.addr & 0xFFFF_FFFF)
        await m.write("addr_hi", vec.addr >> 32)
        await m.write("data", vec.data)
        await m.write("control", rings.pack_fields(_layout(m, "control"), mask=0))
        ctrl = rings.pack_fields(lay, log_size=log, enable=1)
        await r.write("control", ctrl)
        self.eqs[k] = _Consumed("eq", k, r, ring, start, ctrl)
        if self.mode == "irq":
            await r.write("arm", 1)

    async def _open_cq(self, kind: str, q: int, size: int, eq: int, mod_count: int, mod_time_us: float) -> _Consumed:
        if eq not in self.eqs:
            raise ValueError(f"event queue {eq} is not open (open: {sorted(self.eqs)})")
        log = rings.log_size_of(size)
        r = self.entry(CQ_BLOCK[kind], q)
        lay = _layout(r, "control")
        await r.write("control", rings.pack_fields(lay, log_size=log, enable=0, eq=eq))
        start = await r.read("prod") & rings.INDEX_MASK
        ring = self._alloc_ring(log, start)
        await self._program_base(r, ring)
        await r.write("cons", start)
        await r.write("mod_count", mod_count)
        await r.write("mod_time_us", round(mod_time_us))
        ctrl = rings.pack_fields(lay, log_size=log, enable=1, eq=eq)
        await r.write("control", ctrl)
        cq = _Consumed(kind, q, r, ring, start, ctrl, eq)
        self.cqs[kind][q] = cq
        if self.mode == "irq":
            await r.write("arm", 1)
        return cq

    async def _open_queue(self, kind: str, q: int, size: int, buf_size: int, port: int, cq_size: int | None,
                          eq: int | None, mod_count: int, mod_time_us: float) -> _Produced:
        if q in self.queues[kind]:
            raise ValueError(f"{kind} queue {q} is already open")
        if not 0 <= q < self.counts[QUEUE_BLOCK[kind]]:
            raise ValueError(f"{kind} queue {q}: the NIC has {self.counts[QUEUE_BLOCK[kind]]}")
        log = rings.log_size_of(size)
        eq = q % len(self.eqs) if eq is None else eq
        cq = await self._open_cq(kind, q, cq_size or size, eq, mod_count, mod_time_us)
        r = self.entry(QUEUE_BLOCK[kind], q)
        lay = _layout(r, "control")
        ctrl = rings.pack_fields(lay, log_size=log, enable=0, **({"port": port} if kind == "tx" else {}))
        await r.write("control", ctrl)
        ring = self._alloc_ring(log)
        stride = -(-buf_size // 64) * 64 + (GUARD_BYTES if kind == "rx" else 0)
        bufs = self.hostmem.alloc(stride << log)
        await self._program_base(r, ring)
        start = await r.read("cons") & rings.INDEX_MASK  # the NIC continues from its index
        await r.write("prod", start)
        ctrl = rings.pack_fields(lay, ctrl, enable=1)
        await r.write("control", ctrl)
        qs = _Produced(kind, q, r, ring, bufs, stride, buf_size, start, ctrl, port, cq)
        self.queues[kind][q] = qs
        return qs

    async def open_tx_queue(self, q: int, size: int = 256, port: int = 0, cq_size: int | None = None,
                            eq: int | None = None, mod_count: int = 1, mod_time_us: float = 0,
                            buf_size: int = DEFAULT_TX_BUF) -> None:
        """Open TX queue `q` sending on `port`, with its completion queue (`cq_size`,
        default `size`) reporting to event queue `eq` (default q mod vectors) under
        moderation (`mod_count`, `mod_time_us`). `buf_size`: host bytes per descriptor."""
        await self._open_queue("tx", q, size, buf_size, port, cq_size, eq, mod_count, mod_time_us)

    async def open_rx_queue(self, q: int, size: int = 256, buf_size: int = 2048, cq_size: int | None = None,
                            eq: int | None = None, mod_count: int = 1, mod_time_us: float = 0,
                            post: int | None = None) -> None:
        """Open RX queue `q` and post `post` (default: `size`, a full ring) buffers of
        `buf_size` bytes; buffers are reposted as frames are taken. Other arguments as
        for `open_tx_queue`. Frames reach it through RSS or `set_default_queue`."""
        rxq = await self._open_queue("rx", q, size, buf_size, 0, cq_size, eq, mod_count, mod_time_us)
        for s in range(rxq.ring.size):
            rxq.bufs.fill(GUARD, s * rxq.stride + buf_size, rxq.stride - buf_size)
        await self._rx_post(rxq, rxq.ring.size if post is None else post)

    async def close_queue(self, kind: str, q: int) -> None:
        """Disable queue `q` and its completion queue and forget them (outstanding TX
        tokens never complete). Open it again to start afresh from the NIC's indexes."""
        qs = self.queues[kind].pop(q)
        await qs.regs.write("control", rings.pack_fields(_layout(qs.regs, "control"), qs.ctrl, enable=0))
        cq = self.cqs[kind].pop(q)
        await cq.regs.write("control", rings.pack_fields(_layout(cq.regs, "control"), cq.ctrl, enable=0))

    async def enable_queue(self, kind: str, q: int, enabled: bool = True) -> None:
        """Set or clear a queue's enable bit, keeping everything else (a disabled RX queue
        drops frames, a re-enabled one clears a descriptor fetch error)."""
        qs = self.queues[kind][q]
        qs.ctrl = rings.pack_fields(_layout(qs.regs, "control"), qs.ctrl, enable=int(enabled))
        await qs.regs.write("control", qs.ctrl)

    async def queue_status(self, kind: str, q: int) -> int:
        """The queue's `status` register (e.g. `error` after a failed descriptor fetch)."""
        return await self.entry(QUEUE_BLOCK[kind], q).read("status")

    async def set_moderation(self, kind: str, q: int, count: int, time_us: float) -> None:
        """Interrupt moderation of completion queue `q` ("tx" or "rx"): an event after
        `count` completions or `time_us` microseconds pending, whichever first."""
        r = self.entry(CQ_BLOCK[kind], q)
        await r.write("mod_count", count)
        await r.write("mod_time_us", round(time_us))

    # ------------------------------------------------------------------ TX

    async def send(self, q: int, frame: bytes, segments: list[int] | None = None,
                   csum: tuple[int, int] | None = None, offset: int = 0) -> TxToken:
        """Queue one frame on TX queue `q`: cut at the byte positions `segments` (one
        descriptor per piece, chained by MORE), each piece copied to its descriptor's host
        buffer at byte `offset` (to vary DMA alignment), CSUM requested with
        (csum_start, csum_insert) if given; then ring the doorbell. Waits while the ring
        is full. Returns the packet's token."""
        txq = self.queues["tx"][q]
        pieces = rings.split_frame(frame, segments)
        if any(offset + len(p) > txq.stride for p in pieces):
            raise ValueError(f"a segment at offset {offset} does not fit the {txq.stride}-byte TX buffers")
        segs = []
        async with txq.lock:
            await self._tx_room(txq, len(pieces))
            for k, p in enumerate(pieces):
                at = txq.buf_offset(rings.idx_add(txq.prod, k)) + offset
                txq.bufs.write(at, p)
                segs.append((txq.bufs.addr + at, len(p)))
            return (await self._tx_post(txq, [(rings.tx_descs(segs, csum), len(frame))]))[0]

    async def send_descs(self, q: int, descs: list[Desc], length: int | None = None) -> TxToken:
        """Queue hand-made descriptors (one packet as the driver counts it: the NIC must
        answer them with one completion) and ring the doorbell. For bad input: reserved
        opcodes, too many segments, addresses with no memory. `length`: the length the
        completion must report if OK (None: not checked)."""
        return (await self.send_descs_batch(q, [(descs, length)]))[0]

    async def send_descs_batch(self, q: int, packets: list[tuple[list[Desc], int | None]],
                               max_in_flight: int | None = None) -> list[TxToken]:
        """Queue many packets, each a hand-made descriptor chain with the length its
        completion must report (None: not checked), and ring ONE doorbell for all of them.
        Waits as `send_batch` does. Returns one token per packet."""
        txq = self.queues["tx"][q]
        if not packets:
            return []
        async with txq.lock:
            await self._tx_wait(txq, sum(len(d) for d, _ in packets), len(packets), max_in_flight)
            return await self._tx_post(txq, packets)

    async def send_batch(self, q: int, frames: list[bytes], max_in_flight: int | None = None,
                         offset: int = 0) -> list[TxToken]:
        """Queue many frames on TX queue `q`, one descriptor each, and ring ONE doorbell
        for all of them (what a driver does with a batch of packets, e.g. Linux's
        xmit_more). Waits until the ring has room for the whole batch and, if
        `max_in_flight` is given, until no more than `max_in_flight` packets would be in
        flight (sent, not completed) with it: a byte-queue-limit-like cap that keeps the
        ring from filling with frames that only wait. Returns one token per frame; all
        carry the doorbell's time."""
        txq = self.queues["tx"][q]
        if not frames:
            return []
        if any(offset + len(f) > txq.stride for f in frames):
            raise ValueError(f"a frame at offset {offset} does not fit the {txq.stride}-byte TX buffers")
        async with txq.lock:
            await self._tx_wait(txq, len(frames), len(frames), max_in_flight)
            packets = []
            for k, f in enumerate(frames):
                at = txq.buf_offset(rings.idx_add(txq.prod, k)) + offset
                txq.bufs.write(at, f)
                packets.append(([Desc(txq.bufs.addr + at, len(f))], len(f)))
            return await self._tx_post(txq, packets)

    def tx_in_flight(self, q: int) -> int:
        """Packets sent on TX queue `q` whose completion the driver has not taken yet."""
        return len(self.queues["tx"][q].inflight)

    async def _tx_room(self, txq: _Produced, n: int) -> None:
        if n > txq.ring.size:
            raise ValueError(f"{n} descriptors never fit a ring of {txq.ring.size}")
        while rings.free(txq.prod, txq.clean, txq.ring.log_size) < n:
            txq.space.clear()
            await txq.space.wait()

    async def _tx_wait(self, txq: _Produced, ndesc: int, npackets: int, max_in_flight: int | None) -> None:
        """Wait for ring room for ndesc descriptors and, with a cap, for in-flight room."""
        if max_in_flight is not None and npackets > max_in_flight:
            raise ValueError(f"a batch of {npackets} never fits max_in_flight={max_in_flight}")
        await self._tx_room(txq, ndesc)
        while max_in_flight is not None and len(txq.inflight) + npackets > max_in_flight:
            txq.space.clear()
            await txq.space.wait()

    async def _tx_post(self, txq: _Produced, packets: list[tuple[list[Desc], int | None]]) -> list[TxToken]:
        """Write the packets' descriptors into the ring and ring the doorbell once."""
        toks = []
        for descs, length in packets:
            tok = TxToken(txq.n, txq.prod, len(descs), length, txq.port)
            for k, d in enumerate(descs):
                txq.ring.put(rings.idx_add(txq.prod, k), rings.pack_desc(d))
            txq.prod = rings.idx_add(txq.prod, len(descs))
            txq.inflight.append(tok)
            toks.append(tok)
        self.stats["tx_packets"] += len(packets)
        self.stats["tx_descs"] += sum(len(d) for d, _ in packets)
        self.stats["tx_doorbells"] += 1
        t = now_ns()
        for tok in toks:
            tok.t_doorbell = t
        await txq.regs.write("prod", txq.prod)
        return toks

    async def wait_tx(self, q: int | None = None, timeout_us: float = 1000.0) -> None:
        """Wait until every packet sent on TX queue `q` (default: all queues) completed."""
        for txq in ([self.queues["tx"][q]] if q is not None else list(self.queues["tx"].values())):
            while txq.inflight:
                await txq.inflight[-1].wait(timeout_us)

    def tx_done(self, q: int) -> list[TxToken]:
        """Completed packets of TX queue `q`, in completion order."""
        return self.queues["tx"][q].done

    def _on_tx_cpl(self, txq: _Produced, cpl: Completion) -> None:
        self.stats[f"tx_{cpl.status_name}"] += 1
        if not txq.inflight:
            return self._error(f"TX queue {txq.n}: completion {cpl} with no packet in flight")
        tok = txq.inflight[0]
        if cpl.index != tok.index or cpl.queue != txq.n:
            return self._error(f"TX queue {txq.n}: completion for queue {cpl.queue} index {cpl.index}, expected "
                               f"queue {txq.n} index {tok.index} (the first descriptor's free-running index)")
        if cpl.status == rings.OK:
            if tok.length is not None and cpl.len != tok.length:
                self._error(f"TX queue {txq.n} index {tok.index}: completion says {cpl.len} bytes sent, sent {tok.length}")
            if cpl.port != txq.port:
                self._error(f"TX queue {txq.n} index {tok.index}: sent on port {cpl.port}, queue is on port {txq.port}")
        txq.inflight.popleft()
        txq.clean = rings.idx_add(txq.clean, tok.ndesc)
        tok.cpl, tok.t_complete = cpl, now_ns()
        txq.done.append(tok)
        tok.done.set()
        txq.space.set()

    # ------------------------------------------------------------------ RX

    async def _rx_post(self, rxq: _Produced, n: int | None = None) -> None:
        """Post up to `n` (default: as many as fit) buffer descriptors and ring the doorbell."""
        room = rings.free(rxq.prod, rxq.clean, rxq.ring.log_size)
        n = room if n is None else min(n, room)
        for _ in range(n):
            addr = rxq.bufs.addr + rxq.buf_offset(rxq.prod)
            rxq.ring.put(rxq.prod, rings.pack_desc(Desc(addr, rxq.buf_size, rings.OP_BUFFER)))
            rxq.prod = rings.idx_add(rxq.prod, 1)
        if n:
            self.stats["rx_posted"] += n
            await rxq.regs.write("prod", rxq.prod)

    async def recv(self, q: int, timeout_us: float | None = 1000.0) -> RxPacket:
        """The next completion of RX queue `q` (frames and errors alike, in order)."""
        get = self.queues["rx"][q].packets.get()
        return await (with_timeout(get, timeout_us, "us") if timeout_us else get)

    def rx_pending(self, q: int) -> int:
        """RX completions taken and not yet `recv`ed."""
        return self.queues["rx"][q].packets.qsize()

    def set_rx_refill(self, q: int, enabled: bool) -> None:
        """Stop (or restart) reposting buffers on RX queue `q`, e.g. to test drop_no_desc."""
        self.queues["rx"][q].refill = enabled

    async def post_rx(self, q: int, n: int | None = None) -> None:
        """Post up to `n` RX buffers now (default: fill the ring)."""
        await self._rx_post(self.queues["rx"][q], n)

    # ------------------------------------------------------------------ reassembly (docs/frag.md)

    async def enable_reasm(self, buffers: int = 64, *, timeout_us: int | None = None, max_frags: int | None = None,
                           max_bytes: int | None = None, hash_key: int | None = None) -> None:
        """Turn on IPv4 reassembly: post `buffers` reassembly buffers (ids 0..buffers-1) and
        set the `reasm` block's knobs given."""
        r = self.block("reasm")
        for k, v in (("timeout_us", timeout_us), ("max_frags", max_frags), ("max_bytes", max_bytes)):
            if v is not None:
                await r.write(k, v)
        if hash_key is not None:
            key = hash_key << 9
            for k in range(4):
                await r.write(f"hash_key_{k}", (key >> (96 - 32 * k)) & 0xFFFF_FFFF)
        for i in range(buffers):
            if i not in self.reasm_bufs:
                self.reasm_bufs[i] = self.hostmem.alloc(reasm_fixup.BUFFER_BYTES, 64)
            await self._reasm_post(i)
        await r.write("control", 1)

    async def _reasm_post(self, i: int) -> None:
        r = self.block("reasm")
        await r.write("buf_addr_lo", self.reasm_bufs[i].addr & 0xFFFF_FFFF)
        await r.write("buf_addr_hi", self.reasm_bufs[i].addr >> 32)
        await r.write("buf_post", i)

    def _on_reasm_cpl(self, rxq: _Produced, cpl: Completion) -> None:
        buf = self.reasm_bufs.get(cpl.index)
        if buf is None or cpl.reasm_start + cpl.len > reasm_fixup.BUFFER_BYTES:
            return self._error(f"RX queue {rxq.n}: reassembled completion {cpl} for no buffer")
        data = reasm_fixup.rebuild(buf.read(0, cpl.reasm_start + cpl.len), cpl.reasm_start, cpl.len,
                                   cpl.reasm_ecn, cpl.reasm_df)
        self._reasm_repost.append(cpl.index)
        self.stats["rx_reassembled"] += 1
        rxq.packets.put_nowait(RxPacket(
            data=data, queue=rxq.n, port=cpl.port, csum=cpl.csum, rss_hash=cpl.rss_hash if cpl.rss_valid else None,
            rss_type=(cpl.rss_type & 15) if cpl.rss_valid else None, status=cpl.status, cpl_time=now_ns(),
            index=cpl.index, length=cpl.len, reassembled=True))

    def _on_rx_cpl(self, rxq: _Produced, cpl: Completion) -> None:
        if cpl.reassembled:
            return self._on_reasm_cpl(rxq, cpl)
        self.stats[f"rx_{cpl.status_name}"] += 1
        if rings.used(rxq.prod, rxq.clean) == 0:
            return self._error(f"RX queue {rxq.n}: completion {cpl} with no buffer posted")
        if cpl.index != rxq.clean or cpl.queue != rxq.n:
            return self._error(f"RX queue {rxq.n}: completion for queue {cpl.queue} index {cpl.index}, "
                               f"expected queue {rxq.n} index {rxq.clean}")
        at = rxq.buf_offset(cpl.index)
        data = b""
        if cpl.status == rings.OK:
            if cpl.len > rxq.buf_size:
                self._error(f"RX queue {rxq.n} index {cpl.index}: frame of {cpl.len} B in a {rxq.buf_size} B buffer")
            data = rxq.bufs.read(at, min(cpl.len, rxq.buf_size))
        guard = rxq.bufs.read(at + rxq.buf_size, rxq.stride - rxq.buf_size)
        if guard != bytes([GUARD]) * len(guard):
            self._error(f"RX queue {rxq.n} index {cpl.index}: the NIC wrote past the end of the buffer")
            rxq.bufs.fill(GUARD, at + rxq.buf_size, rxq.stride - rxq.buf_size)
        rxq.clean = rings.idx_add(rxq.clean, 1)
        rxq.packets.put_nowait(RxPacket(
            data=data, queue=rxq.n, port=cpl.port, csum=cpl.csum if cpl.csum_valid else None,
            rss_hash=cpl.rss_hash if cpl.rss_valid else None, rss_type=cpl.rss_type if cpl.rss_valid else None,
            status=cpl.status, cpl_time=now_ns(), index=cpl.index, length=cpl.len))

    # ------------------------------------------------------------------ completions, events, interrupts

    async def _service_cq(self, cq: _Consumed, arm: bool) -> int:
        """Take every new completion of `cq`, write cons (and repost RX buffers), and re-arm
        it if `arm`. Returns the number of completions taken."""
        async with cq.lock:
            qs = self.queues[cq.kind].get(cq.n)
            n = 0
            while True:
                rec = cq.ring.record(cq.cons)
                if not rings.is_new(rec, cq.cons, cq.ring.log_size):
                    break
                cpl = rings.unpack_cpl(rec)
                cq.cons = rings.idx_add(cq.cons, 1)
                n += 1
                if qs is None:
                    self._error(f"{cq.kind} completion queue {cq.n}: completion {cpl} for a closed queue")
                elif cq.kind == "tx":
                    self._on_tx_cpl(qs, cpl)
                else:
                    self._on_rx_cpl(qs, cpl)
            if n:
                self.stats[f"{cq.kind}_cq_passes"] += 1
                await cq.regs.write("cons", cq.cons)
                if cq.kind == "rx" and qs is not None and qs.refill:
                    await self._rx_post(qs)
                while self._reasm_repost:
                    await self._reasm_post(self._reasm_repost.pop(0))
            if arm:
                await cq.regs.write("arm", 1)
            return n

    async def _service_eq(self, k: int) -> None:
        """An interrupt on vector `k`: take the new events of event queue `k`, service the
        completion queues they name (each: completions, cons, arm), then write the event
        queue's cons and re-arm it."""
        eq = self.eqs[k]
        n = 0
        while True:
            rec = eq.ring.record(eq.cons)
            if not rings.is_new(rec, eq.cons, eq.ring.log_size):
                break
            ev = rings.unpack_event(rec)
            eq.cons = rings.idx_add(eq.cons, 1)
            n += 1
            self.stats["events"] += 1
            if ev.type == rings.EV_TOE_NOTE:
                self.toe_notes.append(rings.unpack_toe_note(rec))
                continue
            kind = EV_KIND.get(ev.type)
            cq = self.cqs.get(kind, {}).get(ev.source) if kind else None
            if cq is None:
                self._error(f"event queue {k}: event {ev} names no open completion queue")
            elif cq.eq != k:
                self._error(f"event queue {k}: event for {kind} completion queue {ev.source}, which reports to {cq.eq}")
            else:
                await self._service_cq(cq, arm=True)
        if n:
            await eq.regs.write("cons", eq.cons)
        else:
            self.stats["irq_empty"] += 1
            self.log.warning("interrupt on vector %d with no new event", k)
        await eq.regs.write("arm", 1)

    async def _irq_task(self, k: int) -> None:
        vec = self.vectors[k]
        while True:
            await vec.event.wait()
            vec.event.clear()
            self.stats["irq"] += 1
            self.irqs[k] += 1
            await self._service_eq(k)

    async def poll(self) -> int:
        """Service every open completion queue once (without arming); returns the
        completions taken. The poll mode's loop calls it; tests may too."""
        n = 0
        for kind in ("tx", "rx"):
            for cq in list(self.cqs[kind].values()):
                n += await self._service_cq(cq, arm=False)
        self.stats["polls"] += 1
        return n

    async def _poll_task(self) -> None:
        while True:
            await Timer(round(self.poll_interval_ns * 1000), "ps")
            await self.poll()

    async def set_vector_mask(self, k: int, masked: bool) -> None:
        """Mask or unmask MSI-X vector `k` in the NIC's table (a masked vector's
        interrupt is held pending and sent on unmasking)."""
        m = self.entry("msix", k)
        await m.write("control", rings.pack_fields(_layout(m, "control"), mask=int(masked)))

    # ------------------------------------------------------------------ steering, counters

    async def set_default_queue(self, port: int, q: int) -> None:
        """RX queue of `port`'s frames while RSS is off (rx_engine.default_queue; RSS is
        on after reset: `set_rss(enable=False)`)."""
        r = self.block("rx_engine")
        lay = _layout(r, "default_queue")
        await r.write("default_queue", rings.pack_fields(lay, await r.read("default_queue"), **{f"port{port}": q}))

    async def open_queue_per_port(self, size: int = 64, buf_size: int = 2048) -> None:
        """The simplest setup of the NIC's ports: TX and RX queue k for port k (k = 0, 1),
        and each port's received frames to its own RX queue."""
        for port in range(2):
            await self.open_tx_queue(port, size=size, port=port)
            await self.open_rx_queue(port, size=size, buf_size=buf_size)
            await self.set_default_queue(port=port, q=port)

    async def set_rss(self, key: bytes | None = None, table: list[int] | None = None,
                      enable: bool | dict[str, int] | None = True) -> None:
        """RSS: the 40-byte Toeplitz `key` (key_0..key_9), the indirection `table` (entry i
        -> RX queue; a shorter list is repeated to fill all `rss.table_size` entries, so
        `table=[0, 1, 2, 3]` spreads over four queues), and rss.control: True sets every
        field (RSS on, hashing IPv4, IPv6, TCP and UDP: the reset value), False clears
        them (RSS off: rx_engine.default_queue), a dict sets the named fields
        (`{"udp": 0}`), None leaves it."""
        r = self.block("rss")
        if key is not None:
            for i, w in enumerate(rings.rss_key_words(key)):
                await r.write(f"key_{i}", w)
        if table is not None:
            size = await r.read("table_size")
            if not 0 < len(table) <= size:
                raise ValueError(f"an indirection table of {len(table)} entries for a table of {size}")
            lay = _layout(r, "indir_write")
            for i in range(size):
                await r.write("indir_write", rings.pack_fields(lay, index=i, queue=table[i % len(table)]))
        if enable is not None:
            lay = _layout(r, "control")
            if isinstance(enable, dict):
                value = rings.pack_fields(lay, await r.read("control"), **enable)
            else:
                value = sum(((1 << w) - 1) << lsb for lsb, w in lay.values()) if enable else 0
            await r.write("control", value)

    # ------------------------------------------------------------------ receive address filter

    def _port_block(self, port: int, required: bool = True):
        """The eth_port block of `port` (blocks are in chain order, port 0 first; each says
        its number in `port`, checked when the filter is set)."""
        bs = self.blocks.get("eth_port", [])
        if port < len(bs) and "mac_lo" in bs[port].type.regs:
            return bs[port]
        if required:
            raise RuntimeError(f"no eth_port block with a receive filter for port {port}")
        return None

    async def set_mac(self, port: int, mac: bytes) -> None:
        """The station address of `port` (Linux's ndo_set_mac_address): frames to it are
        received (eth_port.mac_hi/mac_lo)."""
        mac = bytes(mac)
        if len(mac) != 6 or mac[0] & 1:
            raise ValueError(f"{mac.hex(':')}: not a unicast station address")
        b = self._port_block(port)
        assert await b.read("port") == port, "eth_port blocks out of port order"
        v = int.from_bytes(mac, "big")
        await b.write("mac_hi", v >> 32)
        await b.write("mac_lo", v & 0xFFFF_FFFF)
        self.macs[port] = mac

    async def set_rx_mode(self, port: int, *, promisc: bool = False, allmulti: bool = False,
                          broadcast: bool = True, mc_list=()) -> None:
        """What `port` receives besides its station address (Linux's ndo_set_rx_mode):
        promiscuous (everything; other stations' frames reach the queues but no offload),
        all multicast, broadcast, and the multicast groups of `mc_list` through the 64-bit
        hash filter (other groups that share a hash bit pass too; the stack drops them)."""
        b = self._port_block(port)
        table = 0
        for addr in mc_list:
            table |= 1 << mc_hash(addr)
        await b.write("mc_hash_lo", table & 0xFFFF_FFFF)
        await b.write("mc_hash_hi", table >> 32)
        await b.write("rx_filter", rings.pack_fields(_layout(b, "rx_filter"), promisc=int(promisc),
                                                     allmulti=int(allmulti), broadcast=int(broadcast)))

    async def port_counters(self, port: int) -> dict[str, int]:
        """The read-only registers (frame counters ...) of the eth_port block of `port`."""
        for b in self.blocks.get("eth_port", []):
            if await b.read("port") == port:
                return {reg: await b.read(reg) for reg, d in b.type.regs.items() if d.access == "ro"}
        raise RuntimeError(f"no eth_port block for port {port}")

    async def counters(self, name: str, instance: int = 0) -> dict[str, int]:
        """Every read-only register of block `name` (e.g. eth_port, rx_engine, eqs), by name."""
        b = self.block(name, instance)
        return {reg: await b.read(reg) for reg, d in b.type.regs.items()
                if d.access == "ro" and reg not in ("next",)}

    # ------------------------------------------------------------------ results

    def tx_latencies(self, q: int | None = None) -> list[float]:
        """Doorbell-to-completion times (ns) of every OK TX packet (of queue `q`)."""
        qs = [self.queues["tx"][q]] if q is not None else list(self.queues["tx"].values())
        return [t.latency_ns for x in qs for t in x.done if t.status == rings.OK]

    def tx_latency_stats(self, q: int | None = None) -> dict[str, float]:
        return rings.summarize(self.tx_latencies(q))

    def summary(self) -> dict:
        return {"stats": dict(self.stats), "irqs_per_vector": dict(self.irqs),
                "tx_latency_ns": self.tx_latency_stats(), "errors": len(self.errors),
                "host_reads": self.hostmem.reads, "host_reads_max_in_flight": self.hostmem.max_in_flight}

    def log_summary(self) -> None:
        for k, v in self.summary().items():
            self.log.info("driver %s: %s", k, v)

    def _error(self, msg: str) -> None:
        self.errors.append(msg)
        self.stats["protocol_errors"] += 1
        self.log.error("driver: %s", msg)
        if self.strict:
            raise AssertionError(msg)


# ---------------------------------------------------------------------------- helpers

def reg_def(r, reg: str):
    """The register-map definition (regblocks.Reg) of register `reg` of a block
    (RegisterBlock: `.type.regs`) or of a record (RegisterEntry: `.block.type.array.regs`)."""
    if getattr(r, "type", None) is not None:
        defs = r.type.regs
    else:
        defs = r.block.type.array.regs
    if reg not in defs:
        raise KeyError(f"the register map has no register {reg!r} here (registers: {', '.join(defs)})")
    return defs[reg]


def _layout(r, reg: str) -> dict[str, tuple[int, int]]:
    """Field layout (name -> (lsb, width)) of register `reg` of a block or record."""
    return {f.name: (f.lsb, f.width) for f in reg_def(r, reg).fields}


def _first_endpoint(rc):
    """The first function below the root complex that is not a bridge (PCI class 0x06:
    the host bridge and root ports)."""
    todo = [rc.host_bridge.bus]
    while todo:
        bus = todo.pop(0)
        for dev in bus.devices:
            if dev.hdr_type & 0x7F == 0 and dev.class_code >> 16 != 0x06:
                return dev
        todo.extend(bus.children)
    return None
