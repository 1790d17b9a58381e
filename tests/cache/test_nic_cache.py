"""The payload cache (docs/cache.md) in the whole NIC: CACHE_INSERT and CACHE_APPEND
descriptors mixed with host appends, both tiers (on-chip RAM and the DRAM behind the AXI4
port, the board's DDR4 timing model), checked against a byte model of the cache.

- directed: every kind of segment mix, the tier boundary, zero lengths, range errors,
  a failed insert (host read answered UR), the counters;
- ordering: an append followed by an insert over its bytes sends the old bytes, an insert
  followed by an append sends the new ones, under load;
- large inserts (up to 64 KiB: many chunks in flight) into each tier, read back;
- random: seeded command streams on two queues (one per port, disjoint cache regions),
  with back-pressure on the DRAM's AXI channels, every frame checked;
- checksum offload over packets whose payload comes from the cache.
"""
import itertools
import random
import sys
from pathlib import Path

import cocotb
from cocotb.triggers import Timer, gather, with_timeout

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "offload"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "nic"))

from checksum_ref import l4_checksum_ok  # noqa: E402
from nic_offload_frames import KINDS, linux_partial  # noqa: E402

from offnic_sim.harness.runner import run_cocotb  # noqa: E402
from offnic_sim.harness.hw import Design  # noqa: E402
from offnic_sim.host.nic_tb import NicTB  # noqa: E402
from offnic_sim.host.rings import OP_CACHE_APPEND, OP_CACHE_INSERT, OP_DATA, Desc  # noqa: E402

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)

CACHE_RANGE = 4
DMA_ERROR = 1
MORE = 0x01
CSUM = 0x02
PAUSE = 0.3  # share of cycles each DRAM channel (AW, W, R) stalls in random_streams


class CacheModel:
    """What the cache must hold: the bytes of every insert, in issue order."""

    def __init__(self, onchip: int, dram: int):
        self.onchip, self.size = onchip, onchip + dram
        self.mem = bytearray(self.size)

    def insert(self, off: int, data: bytes) -> None:
        self.mem[off:off + len(data)] = data

    def read(self, off: int, n: int) -> bytes:
        return bytes(self.mem[off:off + n])


class CacheHost:
    """Builds cache command descriptors on one TX queue, with host buffers for their bytes."""

    def __init__(self, tb: NicTB, q: int, model: CacheModel, buf_bytes: int = 1 << 20):
        self.tb, self.drv, self.q, self.model = tb, tb.drv, q, model
        self.buf = tb.drv.alloc(buf_bytes)
        self.at = 0

    def stage(self, data: bytes) -> int:
        """Copy bytes into host memory (a ring of staging space); their bus address."""
        if self.at + len(data) + 64 > self.buf.size:
            self.at = 0
        self.at += random.randrange(0, 32)  # vary DMA alignment
        a = self.at
        self.buf.write(a, data)
        self.at += len(data)
        return self.buf.addr + a

    async def insert(self, off: int, data: bytes, *, expect_ok: bool = True):
        d = Desc.with_arg(self.stage(data), len(data), OP_CACHE_INSERT, off)
        if expect_ok:
            self.model.insert(off, data)
        return await self.drv.send_descs(self.q, [d], len(data) if expect_ok else None)

    async def packet(self, pieces: list[tuple[str, object]], csum: tuple[int, int] | None = None
                     ) -> tuple[object, bytes]:
        """pieces: ("host", bytes) or ("cache", (off, len)); csum: (start, insert) asks for the
        checksum offload. Returns (token, expected frame before the checksum)."""
        descs, frame = [], b""
        for kind, arg in pieces:
            if kind == "host":
                descs.append(Desc(self.stage(arg), len(arg), OP_DATA, MORE))
                frame += arg
            else:
                off, n = arg
                descs.append(Desc(off, n, OP_CACHE_APPEND, MORE))
                frame += self.model.read(off, n)
        last = descs[-1]
        descs[-1] = Desc(last.addr, last.len, last.opcode, last.flags & ~MORE, last.csum_start, last.csum_insert)
        if csum:
            first = descs[0]
            descs[0] = Desc(first.addr, first.len, first.opcode, first.flags | CSUM, *csum)
        return await self.drv.send_descs(self.q, descs, len(frame)), frame


def header(rng: random.Random, n: int = 42) -> bytes:
    return b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\xb5" + rng.randbytes(n - 14)


async def setup(dut, ports=(0,)):
    tb = NicTB(dut)
    await tb.init()
    for port in ports:
        await tb.drv.open_tx_queue(port, size=256, port=port)
    c = await tb.drv.counters("cache")
    model = CacheModel(c["onchip_bytes"], c["dram_bytes"])
    return tb, model


def first_diff(got: bytes, want: bytes) -> str:
    k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return f"first difference at byte {k}: got {got[k:k + 8].hex()} want {want[k:k + 8].hex()}"


async def expect_frames(tb: NicTB, port: int, frames: list[bytes], what: str) -> None:
    for k, f in enumerate(frames):
        got = await with_timeout(tb.ports[port].recv(), 200, "us")
        assert got[:len(f)] == f, f"{what}: frame {k} of {len(frames)} ({len(f)} B) differs, {first_diff(got, f)}"


@cocotb.test(timeout_time=2000, timeout_unit="us")
async def large_inserts(dut):
    """Inserts of up to 64 KiB (many 2 KiB chunks, several in flight) into each tier, at odd
    offsets, read back by appends of every size."""
    rng = random.Random(random.getrandbits(64))
    tb, model = await setup(dut)
    host = CacheHost(tb, 0, model)
    B = model.onchip
    for base in (3 * 4096 + 5, B - 20000, B + 8 * 4096 + 27):
        n = rng.choice([24576, 65535, 40000])
        await host.insert(base, rng.randbytes(n))
        at, frames = base, []
        while at < base + n:
            k = min(rng.randrange(60, 9000), base + n - at)
            if k < 60:
                break
            tok, f = await host.packet([("cache", (at, k))])
            frames.append(f)
            at += k
        await expect_frames(tb, 0, frames, f"read back of a {n}-byte insert at {base}")


@cocotb.test(timeout_time=2000, timeout_unit="us")
async def directed(dut):
    rng = random.Random(random.getrandbits(64))
    tb, model = await setup(dut)
    assert model.onchip == 1 << 20 and model.size == (1 << 20) + (16 << 20), "cache sizes (nic_cache_init)"
    host = CacheHost(tb, 0, model)
    B = model.onchip  # the tier boundary

    # Inserts: on-chip, DRAM, straddling the boundary, unaligned, zero length.
    toks = [await host.insert(0, rng.randbytes(4096)),
            await host.insert(B, rng.randbytes(4096)),
            await host.insert(B - 50, rng.randbytes(100)),
            await host.insert(8193, rng.randbytes(3001)),
            await host.insert(B + 12345, rng.randbytes(777)),
            await host.insert(100, b"")]
    for t in toks:
        assert (await t.wait()).status == 0

    cases = [
        [("host", header(rng)), ("cache", (5, 1000))],  # headers from host, payload from on-chip
        [("host", header(rng)), ("cache", (B + 7, 1400))],  # ... from DRAM
        [("host", header(rng, 54)), ("cache", (B - 50, 100))],  # straddling the tiers
        [("cache", (0, 1514))],  # the whole frame from the cache
        [("host", header(rng, 17)), ("cache", (31, 33)), ("host", rng.randbytes(5)), ("cache", (B + 1, 500)),
         ("cache", (8193, 3001)), ("host", rng.randbytes(1))],  # everything mixed
        [("host", header(rng)), ("cache", (4000, 96)), ("cache", (8193, 99))],  # straddling cached blocks
        [("host", header(rng)), ("cache", (B + 12345, 0)), ("cache", (B + 12345, 777))],  # a zero-length append
    ]
    for pieces in cases:
        tok, f = await host.packet(pieces)
        await expect_frames(tb, 0, [f], f"case {pieces}")
        assert (await tok.wait()).status == 0

    # Bad input: beyond the cache's end -> CACHE_RANGE, nothing sent, nothing written.
    end = model.size
    bad = [await host.packet([("host", header(rng)), ("cache", (end - 10, 11))]),
           await host.packet([("cache", (1 << 40, 64))])]
    tok_ins = await host.insert(end - 3, rng.randbytes(4), expect_ok=False)
    good, f = await host.packet([("host", header(rng)), ("cache", (end - 100, 100))])
    await expect_frames(tb, 0, [f], "after range errors: the next good frame")
    for t, _ in bad:
        assert (await t.wait()).status == CACHE_RANGE
    assert (await tok_ins.wait()).status == CACHE_RANGE
    assert (await good.wait()).status == 0

    # An insert whose host read fails (no memory at the address) completes DMA_ERROR.
    d = Desc.with_arg(0xDEAD_0000_0000, 512, OP_CACHE_INSERT, 4096 * 7)
    t = await tb.drv.send_descs(0, [d])
    assert (await t.wait()).status == DMA_ERROR
    tok, f = await host.packet([("host", header(rng)), ("cache", (0, 200))])
    await expect_frames(tb, 0, [f], "after a failed insert")
    assert (await tok.wait()).status == 0

    # Order, both ways, both tiers, nothing waited for in between: an append then an insert
    # over its bytes sends the old bytes; an insert then an append sends the new ones.
    sent = []
    for k in range(12):
        off = rng.choice([64 * 1024, B + 64 * 1024, B - 700]) + rng.randrange(64)
        n = rng.randrange(1, 1400)
        await host.insert(off, rng.randbytes(n))
        sent.append(await host.packet([("host", header(rng)), ("cache", (off, n))]))  # new bytes
        await host.insert(off, rng.randbytes(n))  # waits for that append
        sent.append(await host.packet([("host", header(rng)), ("cache", (off, n))]))
    await expect_frames(tb, 0, [f for _, f in sent], "ordering")
    for t, _ in sent:
        assert (await t.wait()).status == 0

    c = await tb.drv.counters("cache")
    assert c["order_waits"] > 0, c
    assert c["range_errors"] == 3, c
    assert c["write_errors"] == 1, c
    assert c["inserts"] == 6 + 24, c  # 5 with bytes + the failed one (an empty insert is done at once)
    appends = sum(1 for p in cases for k, a in p if k == "cache" and a[1]) + 1 + 1 + 24
    assert c["appends"] == appends, (c, appends)
    assert c["hits_dram"] >= 4 and c["hits_onchip"] >= 6, c
    await Timer(1, "us")


def random_pieces(rng: random.Random, regions: list[tuple[int, int]], n_max: int = 9000) -> list:
    """A packet of 1..6 pieces, host bytes or cache ranges inside `regions`, 60..n_max bytes."""
    while True:
        pieces = [("host", header(rng, rng.randrange(14, 80)))] if rng.random() < 0.8 else []
        for _ in range(rng.randrange(1, 6)):
            if rng.random() < 0.3:
                pieces.append(("host", rng.randbytes(rng.randrange(1, 300))))
            else:
                base, size = rng.choice(regions)
                n = rng.choice([0, 1, 31, 32, 33, rng.randrange(1, 1500), rng.randrange(1, 4000)])
                off = base + rng.randrange(0, size - n)
                pieces.append(("cache", (off, n)))
        total = sum(len(a) if k == "host" else a[1] for k, a in pieces)
        if 60 <= total <= n_max:
            return pieces


async def command_stream(tb: NicTB, host: CacheHost, port: int, regions, n: int, rng: random.Random) -> int:
    """n random commands on one queue: inserts (30%) and packets; every frame checked in order."""
    expected, tokens, history = [], [], []

    async def check():
        for k in itertools.count():
            item = await expected_q.get()
            if item is None:
                return
            f, pieces = item
            got = await with_timeout(tb.ports[port].recv(), 500, "us")
            assert got[:len(f)] == f, \
                f"port {port}: frame {k} ({len(f)} B) differs from the cache model, {first_diff(got, f)}; " \
                f"pieces {[(kd, len(a)) if kd == 'host' else (kd, a) for kd, a in pieces]}; commands {history[:40]}"

    from cocotb.queue import Queue
    expected_q = Queue()
    checker = cocotb.start_soon(check())
    # The cache keeps what earlier tests left: fill the regions first (large inserts).
    for base, size in regions:
        tokens.append(await host.insert(base, rng.randbytes(size)))
    for _ in range(n):
        if rng.random() < 0.3:
            base, size = rng.choice(regions)
            ln = rng.choice([1, 4096, rng.randrange(1, 4096), rng.randrange(1, 9000)])
            off = base + rng.randrange(0, size - ln)
            data = rng.randbytes(ln)
            history.append(("insert", off, ln, data[:4].hex()))
            tokens.append(await host.insert(off, data))
        else:
            pieces = random_pieces(rng, regions)
            history.append(("packet", len(expected)))
            tok, f = await host.packet(pieces)
            tokens.append(tok)
            expected.append(f)
            await expected_q.put((f, pieces))
    await expected_q.put(None)
    await checker
    for t in tokens:
        assert (await t.wait(timeout_us=2000)).status == 0
    return len(expected)


@cocotb.test(timeout_time=20000, timeout_unit="us")
async def random_streams(dut):
    """Two queues (one per port, disjoint cache regions: one spans the tier boundary), random
    command streams, DRAM channels paused at random."""
    seed = random.getrandbits(64)
    rng = random.Random(seed)
    dut._log.info("random_streams: rng seed %d", seed)
    tb, model = await setup(dut, ports=(0, 1))
    B = model.onchip
    for ch in (tb.dram.write_if.aw_channel, tb.dram.write_if.w_channel, tb.dram.read_if.r_channel):
        ch.set_pause_generator(itertools.cycle([rng.random() < PAUSE for _ in range(97)]))
    regions = [[(0, 24 << 10), (B + (64 << 10), 24 << 10)],
               [(B - (16 << 10), 32 << 10), (B + (1 << 20), 16 << 10)]]
    hosts = [CacheHost(tb, q, model, 1 << 20) for q in range(2)]
    rngs = [random.Random(rng.getrandbits(64)) for _ in range(2)]
    n = await gather(*(cocotb.start_soon(command_stream(tb, hosts[q], q, regions[q], 250, rngs[q])) for q in range(2)))
    c = await tb.drv.counters("cache")
    dut._log.info("random_streams: %s frames checked; cache counters %s", n, c)
    assert c["range_errors"] == 0 and c["read_errors"] == 0 and c["write_errors"] == 0, c
    assert c["hits_onchip"] > 0 and c["hits_dram"] > 0, c


@cocotb.test(timeout_time=3000, timeout_unit="us")
async def checksum_over_cached_bytes(dut):
    """CHECKSUM_PARTIAL packets cut at random points into host and cache pieces (the checksum
    field itself may come from the cache): the L4 checksum on the wire covers every byte."""
    rng = random.Random(random.getrandbits(64))
    tb, model = await setup(dut)
    host = CacheHost(tb, 0, model)
    at = 0
    sent = []
    for k in range(60):
        p = linux_partial(rng, rng.choice(KINDS), rng.randrange(60, 3000))
        cuts = sorted(rng.sample(range(1, len(p.data)), rng.randrange(0, 5)))
        pieces = []
        for a, b in zip([0] + cuts, cuts + [len(p.data)]):
            chunk = p.data[a:b]
            if rng.random() < 0.6:
                off = (at + rng.randrange(0, 64)) % (model.size - 8192)
                at = off + len(chunk)
                await host.insert(off, chunk)
                pieces.append(("cache", (off, len(chunk))))
            else:
                pieces.append(("host", chunk))
        tok, f = await host.packet(pieces, csum=(p.csum_start, p.csum_insert))
        assert f == p.data
        sent.append((tok, p))
    for k, (tok, p) in enumerate(sent):
        got = await with_timeout(tb.ports[0].recv(), 200, "us")
        ok, why = l4_checksum_ok(got[:len(p.data)])
        assert ok, f"packet {k} ({p.desc}): {why}"
        assert (await tok.wait()).status == 0


def test_nic_cache():
    run_cocotb(NIC, __name__)


def test_random_streams_lost_wakeup():
    """The run that found the TX engine's lost wake-up (random_streams alone on a fresh NIC):
    a queue whose packet did not fit the TX RAM in the very cycle the port freed its last
    packet waited for a change that had already happened, and its frames never left."""
    run_cocotb(NIC, __name__, testcase="random_streams", seed=211755033)
