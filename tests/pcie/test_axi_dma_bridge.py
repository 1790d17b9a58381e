"""The AXI4-to-DMA bridge (pcie.Axi4DmaBridgeTestTop: Axi4DmaBridge + the real DmaEngine)
against cocotbext-pcie's UltraScale+ model and root complex, with host memory answering
reads 1 us late (offnic_sim.host.hostmem.HostMemory), driven by cocotbext-axi's AxiMaster.

Checked:
 - random reads and writes (1 B to 2 KiB, any alignment, random IDs, bursts of up to 16
   beats as TcpOffload makes them) many in flight, with random back-pressure on every AXI
   channel (R and B included); the reference is a model of the region (bytearray) kept
   apart from host memory: every read's bytes are compared with it, and at the end the
   whole region of host memory (so a stray or unstrobed write is caught). Operations that
   touch the same bytes are issued in AXI order (a read or write waits for the B or last R
   of an earlier overlapping one, as a manager must), so reads after writes to the same
   addresses see them. Write strobes have holes: a byte of value HOLE is sent with its
   strobe off (the bridge cuts such bursts into several DMA writes) and must not be
   written.
 - errors: reads of host addresses with no memory give DECERR with zero data, reads
   answered with poisoned completions SLVERR with zero data; bursts the
   bridge refuses (32 beats) give SLVERR, zero data, and no write; writes to addresses
   with no memory (posted, lost in PCIe) complete; nothing hangs, and the bridge works
   afterwards (the random traffic runs again).
 - throughput: one stream of 16-beat reads at 1 us latency, and one of 16-beat writes,
   bytes per cycle logged (not asserted), the data checked.

Replay a run: OFFNIC_SEED=N (printed by every run).
"""
import logging
import random

import cocotb
from cocotb.triggers import ClockCycles, Event, RisingEdge
from cocotbext.axi import AxiBus, AxiMaster, AxiResp, AxiStreamBus
from cocotbext.pcie.core import RootComplex
from cocotbext.pcie.core.caps import PciCapId
from cocotbext.pcie.xilinx.us import UltraScalePlusPcieDevice

from dma_tb import CompletionTap, size_code
from offnic_sim.harness import hw
from offnic_sim.harness.axis_tb import pause_pattern
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host.hostmem import HostMemory

DESIGN = next(d for d in hw.load_config("dma") if d.name == "axi_dma_bridge")
LATENCY_NS = 1000.0  # a server's host read latency (HostMemory's default)
CLOCK_NS = 4.0
REGION = 16 << 10  # small, so operations often touch the same bytes
HOLE = 0xA5  # a byte written with this value goes out with its strobe off
NO_MEMORY = 0x7F_0000_0000  # a bus address the root complex has no memory at (40-bit port)


class BridgeTB:
    def __init__(self, dut):
        self.dut = dut
        self.clock = dut.clock
        self.dev = UltraScalePlusPcieDevice(
            pcie_generation=3, pcie_link_width=8, user_clk_frequency=250e6, alignment="dword",
            rq_straddle=False, rc_straddle=False, rc_4tlp_straddle=False,
            max_payload_size=1024, enable_client_tag=True,
            user_clk=dut.clock, user_reset=dut.reset,
            rq_bus=AxiStreamBus.from_prefix(dut, "m_axis_rq"),
            rc_bus=AxiStreamBus.from_prefix(dut, "s_axis_rc"),
            cfg_max_payload=dut.cfg_max_payload,
            cfg_max_read_req=dut.cfg_max_read_req,
        )
        self.dev.log.setLevel(logging.ERROR)
        self.dev.functions[0].log.setLevel(logging.WARNING)
        for s in (self.dev.rq_sink, self.dev.rc_source):
            s.log.setLevel(logging.WARNING)
        self.rc = RootComplex()
        self.rc.log.setLevel(logging.ERROR)
        logging.getLogger("cocotb.pcie").setLevel(logging.WARNING)
        self.rc.make_port().connect(self.dev)
        self.hm = HostMemory(self.rc, read_latency_ns=LATENCY_NS)
        # Checks every request TLP (sizes, 4 KiB) and can poison completions by address.
        self.tap = CompletionTap(self.dev, self.clock)
        self.axi = AxiMaster(AxiBus.from_prefix(dut, "s_axi"), dut.clock, dut.reset, max_burst_len=16)
        self.axi.write_if.log.setLevel(logging.WARNING)
        self.axi.read_if.log.setLevel(logging.WARNING)
        self._punch_holes()
        self.cycle = 0
        cocotb.start_soon(self._count())

    def _punch_holes(self) -> None:
        """Bytes of value HOLE leave with their strobe off (AxiMaster cannot make holes)."""
        ch = self.axi.write_if.w_channel
        orig = ch.send

        async def send(w):
            data, strb = int(w.wdata), int(w.wstrb)
            for j in range(32):
                if (data >> (8 * j)) & 0xFF == HOLE:
                    strb &= ~(1 << j)
            w.wstrb = strb
            await orig(w)
        ch.send = send

    async def _count(self):
        while True:
            await RisingEdge(self.clock)
            self.cycle += 1

    async def init(self) -> None:
        """Enumerate, enable bus mastering, max payload 256 B and max read request 512 B (as
        a server's root port commonly sets them)."""
        await self.rc.enumerate()
        fn = self.rc.find_device(self.dev.functions[0].pcie_id)
        await fn.enable_device()
        await fn.set_master()
        ctl = await fn.capability_read_word(PciCapId.EXP, 8)
        ctl = (ctl & ~(7 << 5) & ~(7 << 12)) | size_code(256) << 5 | size_code(512) << 12
        await fn.capability_write_word(PciCapId.EXP, 8, ctl)
        self.rc.max_payload_size = size_code(256)
        self.tap.mps, self.tap.mrrs = 256, 512
        await ClockCycles(self.clock, 10)

    def back_pressure(self, busy: float) -> None:
        chans = [self.axi.read_if.ar_channel, self.axi.read_if.r_channel, self.axi.write_if.aw_channel,
                 self.axi.write_if.w_channel, self.axi.write_if.b_channel]
        for c in chans:
            c.set_pause_generator(pause_pattern(busy) if busy else None)
            if not busy:
                c.pause = False


class Traffic:
    """Random reads and writes of one host region, in AXI order where they overlap, checked
    against a model of the region."""

    def __init__(self, tb: BridgeTB, buf):
        self.tb, self.buf = tb, buf
        self.model = bytearray(buf.read(0, buf.size))
        self.busy: list[tuple[int, int, bool, Event]] = []  # (start, end, is_write, done)
        self.reads = self.writes = self.bytes = 0

    def _conflicts(self, a: int, b: int, write: bool):
        return [e for s, t, w, e in self.busy if s < b and a < t and (write or w)]

    async def op(self) -> None:
        n = random.choice([random.randint(1, 64), random.randint(1, 512), random.randint(1, 2048)])
        a = random.randint(0, self.buf.size - n)
        write = random.random() < 0.5
        for e in self._conflicts(a, a + n, write):
            await e.wait()
        while self._conflicts(a, a + n, write):  # another one got in meanwhile
            await self._conflicts(a, a + n, write)[0].wait()
        done = Event()
        entry = (a, a + n, write, done)
        self.busy.append(entry)
        axi_id = random.randrange(16)
        if write:
            data = bytearray(random.randbytes(n))
            for _ in range(random.choice([0, 0, 1, 3])):  # runs of hole bytes
                h = random.randrange(n)
                k = min(random.randint(1, 40), n - h)
                data[h:h + k] = bytes([HOLE]) * k
            data = bytes(data)
            for i, v in enumerate(data):
                if v != HOLE:
                    self.model[a + i] = v
            r = await self.tb.axi.write(self.buf.addr + a, data, awid=axi_id)
            assert r.resp == AxiResp.OKAY, f"write {n} B at +{a:#x}: {r.resp}"
            self.writes += 1
        else:
            expect = bytes(self.model[a:a + n])
            r = await self.tb.axi.read(self.buf.addr + a, n, arid=axi_id)
            assert r.resp == AxiResp.OKAY, f"read {n} B at +{a:#x}: {r.resp}"
            if bytes(r.data) != expect:
                bad = next(i for i in range(n) if r.data[i] != expect[i])
                raise AssertionError(f"read {n} B at +{a:#x} id {axi_id}: byte {bad} is {r.data[bad]:#x}, "
                                     f"expected {expect[bad]:#x}")
            self.reads += 1
        self.bytes += n
        self.busy.remove(entry)
        done.set()

    async def run(self, ops: int, workers: int) -> None:
        async def worker(k):
            for _ in range(k):
                await self.op()
        tasks = [cocotb.start_soon(worker(ops // workers)) for _ in range(workers)]
        for t in tasks:
            await t
        # B comes when a write's TLPs have left; a later read is ordered behind them (PCIe),
        # so once it is answered every write is in host memory.
        r = await self.tb.axi.read(self.buf.addr, 1)
        assert r.resp == AxiResp.OKAY
        host = self.buf.read(0, self.buf.size)
        if host != bytes(self.model):
            bad = [i for i in range(self.buf.size) if host[i] != self.model[i]]
            raise AssertionError(f"host memory differs from the model at {len(bad)} bytes, first +{bad[0]:#x} "
                                 f"({host[bad[0]]:#x}, expected {self.model[bad[0]]:#x}), last +{bad[-1]:#x}")


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def random_traffic_and_errors(dut):
    tb = BridgeTB(dut)
    await tb.init()
    buf = tb.hm.alloc(REGION)
    buf.write(0, random.randbytes(REGION))
    traffic = Traffic(tb, buf)

    for busy in (0.0, 0.5):
        tb.back_pressure(busy)
        await traffic.run(ops=480, workers=8)
        dut._log.info("back-pressure %.1f: %d reads, %d writes, %d bytes checked, %d host reads at most in "
                      "flight", busy, traffic.reads, traffic.writes, traffic.bytes, tb.hm.max_in_flight)

    # Errors. Reads with no memory behind them: DECERR, zero data.
    tb.back_pressure(0.3)
    for n in (1, 32, 512, 100):
        r = await tb.axi.read(NO_MEMORY + random.randrange(0, 4096 - n), n, arid=random.randrange(16))
        assert r.resp == AxiResp.DECERR, f"read of no memory: {r.resp}"
        assert bytes(r.data) == bytes(n), "an error read carried data"
    # Reads answered with poisoned completions: SLVERR, zero data.
    bad = tb.hm.alloc(8192)
    bad.write(0, random.randbytes(8192))
    tb.tap.poison_ranges.append((bad.addr, bad.addr + 8192))
    for n in (1, 64, 512, 300):
        r = await tb.axi.read(bad.addr + random.randrange(0, 8192 - n), n, arid=random.randrange(16))
        assert r.resp == AxiResp.SLVERR, f"read of poisoned data: {r.resp}"
        assert bytes(r.data) == bytes(n), "a poisoned read carried data"
    assert tb.tap.poisoned >= 4
    # Writes with no memory behind them: posted, lost in PCIe; they complete.
    r = await tb.axi.write(NO_MEMORY + 64, random.randbytes(200), awid=3)
    assert r.resp == AxiResp.OKAY
    # Bursts the bridge refuses (32 beats): SLVERR, zero data, nothing written.
    before = buf.read(0, REGION)
    tb.axi.read_if.max_burst_len = tb.axi.write_if.max_burst_len = 32
    r = await tb.axi.read(buf.addr + 1024, 1024, arid=5)
    assert r.resp == AxiResp.SLVERR and bytes(r.data) == bytes(1024), f"32-beat read: {r.resp}"
    r = await tb.axi.write(buf.addr + 2048, bytes(range(256)) * 4, awid=6)
    assert r.resp == AxiResp.SLVERR, f"32-beat write: {r.resp}"
    tb.axi.read_if.max_burst_len = tb.axi.write_if.max_burst_len = 16
    await ClockCycles(tb.clock, 2000)
    assert buf.read(0, REGION) == before, "a refused write changed host memory"
    # Errors mixed into traffic: every answer is the right one for its request.
    async def bad_reads():
        for _ in range(20):
            n = random.randint(1, 512)
            r = await tb.axi.read(NO_MEMORY + random.randrange(0, 8192), n, arid=random.randrange(16))
            assert r.resp == AxiResp.DECERR and bytes(r.data) == bytes(n)
    t = cocotb.start_soon(bad_reads())
    await traffic.run(ops=80, workers=6)
    await t
    dut._log.info("after errors: %d reads, %d writes checked in all", traffic.reads, traffic.writes)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def read_throughput(dut):
    """One stream of 16-beat (512 B) reads, as many issued as the bridge takes, at 1 us."""
    tb = BridgeTB(dut)
    await tb.init()
    tb.back_pressure(0.0)
    size = 256 << 10
    buf = tb.hm.alloc(size)
    src = random.randbytes(size)
    buf.write(0, src)
    # Warm-up not counted: the first latency is a fixed cost, the figure is the steady rate.
    ops = [tb.axi.init_read(buf.addr + k * 512, 512, arid=0) for k in range(size // 512)]
    got = bytearray()
    t0 = None
    for k, op in enumerate(ops):
        await op.wait()
        r = op.data  # noqa: the event's data field is how cocotbext-axi 0.1.28 hands results back
        assert r.resp == AxiResp.OKAY
        got += r.data
        if k == 15:
            t0 = tb.cycle
            n0 = len(got)
    t1 = tb.cycle
    assert bytes(got) == src, "stream data differs"
    rate = (len(got) - n0) / (t1 - t0)
    dut._log.info("one stream of 16-beat reads at %d ns latency: %.2f bytes/cycle (%.1f Gb/s at 250 MHz; "
                  "25G line rate is 12.5 bytes/cycle), %d host reads in flight at most",
                  LATENCY_NS, rate, rate * 8 * 250e6 / 1e9, tb.hm.max_in_flight)

    # The same for writes (posted: no host latency in the loop), then checked in host memory.
    dst = tb.hm.alloc(size)
    data = random.randbytes(size).replace(bytes([HOLE]), b"\x00")  # no holes: every byte is written
    ops = [tb.axi.init_write(dst.addr + k * 512, data[k * 512:(k + 1) * 512], awid=0) for k in range(size // 512)]
    for k, op in enumerate(ops):
        await op.wait()
        assert op.data.resp == AxiResp.OKAY
        if k == 15:
            t0 = tb.cycle
    rate = (size - 16 * 512) / (tb.cycle - t0)
    r = await tb.axi.read(dst.addr, 1)  # behind every posted write
    assert r.resp == AxiResp.OKAY
    assert dst.read(0, size) == data, "written stream differs in host memory"
    dut._log.info("one stream of 16-beat writes: %.2f bytes/cycle (%.1f Gb/s)", rate, rate * 8 * 250e6 / 1e9)


def test_axi_dma_bridge():
    run_cocotb(DESIGN, __name__)
