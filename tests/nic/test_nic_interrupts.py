"""Interrupt moderation, MSI-X masking and event queue overflow of the whole NIC (docs/
queues.md, "Doorbells and interrupts"), through PCIe and the XGMII ports, the driver model
in interrupt mode (host reads answered after 1 us). Each test gives the completion queue
under test an event queue (= MSI-X vector) of its own and counts that vector's
interrupts (driver.irqs) and the events the driver took.

- moderation_by_count: an RX completion queue with mod_count=8 and mod_time_us=1000:
  frames one by one, seven of them raise no interrupt (the completions are written, the
  driver sees none), the eighth raises exactly one and the driver takes all eight, in
  order; six times. Then a burst of 61 frames with mod_time_us=20: all arrive, at most
  ceil(61/8)+1 interrupts. The same for a TX completion queue (7 sends complete
  silently, the 8th interrupts).
- moderation_by_time: mod_count=1000, mod_time_us=T: a single completion reaches the
  driver between T us (less the completion write's flight time, FLIGHT_US) and T+2 us
  after the NIC wrote it to host memory (watched in host memory): each queue's timer
  starts when it becomes armed and pending. T=0 at once (< 1.5 us); a second completion
  while the first waits rides on the same interrupt; mod_count reached first fires at once.
- masked_vector: with the vector masked, completions and one event are written, no
  interrupt comes and msix.pending has the vector's bit; unmasking sends it (the driver
  takes everything), clears the bit, and the vector works normally again.
- eq_overflow: event queues of 2 entries, three RX completion queues reporting to event
  queue 0 with its vector masked: two events fit, the third is dropped and counted
  (eqs.overflows = 1); after unmasking, the driver gets the two queues' frames; the third
  queue's frame waits (its event was lost, it is disarmed) until the driver polls it and
  re-arms, after which it interrupts normally again.
"""
import random

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, Timer

from offnic_sim.host import rings
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.fast.fast_tb import FastNicTB

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)


def frame(n: int, rng: random.Random, seq: int) -> bytes:
    """An n-byte frame of a non-IP EtherType carrying a sequence number."""
    return b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\xb5" + seq.to_bytes(4, "big") + rng.randbytes(n - 18)


async def put(tb: FastNicTB, port: int, f: bytes) -> None:
    """Send one frame into `port` and wait until it has left the XGMII source."""
    await tb.ports[port].send(f)
    await tb.ports[port].source.wait()


async def wait_rx(drv, q: int, n: int, timeout_us: float) -> bool:
    """Wait (in 100 ns steps) until at least `n` completions of RX queue `q` are taken."""
    for _ in range(int(timeout_us * 10)):
        if drv.rx_pending(q) >= n:
            return True
        await Timer(100, "ns")
    return drv.rx_pending(q) >= n


async def take(drv, q: int, frames: list[bytes], what: str) -> None:
    """The driver must hold exactly `frames` for RX queue `q`, in order."""
    assert drv.rx_pending(q) == len(frames), f"{what}: {drv.rx_pending(q)} completions taken, expected {len(frames)}"
    for k, f in enumerate(frames):
        pkt = await drv.recv(q, timeout_us=1)
        assert pkt.ok and pkt.data == f, f"{what}: frame {k} differs or status {pkt.status}"


async def cq_prod(drv, kind: str, q: int) -> int:
    return await drv.entry(f"{kind}_cqs", q).read("prod") & 0xFFFF


async def start(dut, **init) -> FastNicTB:
    tb = FastNicTB(dut)
    if init:  # FastNicTB.init with driver options
        while dut.reset.value:  # the harness holds the NIC in reset for its first cycles
            await ClockCycles(tb.clock, 1)
        for p in tb.ports:
            await p.reset()
        await tb.drv.init(mps=tb.mps, mrrs=tb.mrrs, **init)
        await ClockCycles(tb.clock, 10)
    else:
        await tb.init()
    await tb.drv.set_rss(enable=False)
    return tb


# ---------------------------------------------------------------------------- count

@cocotb.test(timeout_time=2, timeout_unit="ms")
async def moderation_by_count(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await start(dut)
    drv = tb.drv
    RQ, TQ = 1, 2  # RX queue 1 -> event queue / vector 1, TX queue 2 -> 2
    await drv.open_rx_queue(RQ, size=128, buf_size=2048, mod_count=8, mod_time_us=1000)
    await drv.set_default_queue(port=0, q=RQ)
    await drv.open_tx_queue(TQ, size=64, port=1, mod_count=8, mod_time_us=1000)
    assert drv.cqs["rx"][RQ].eq == RQ and drv.cqs["tx"][TQ].eq == TQ
    await Timer(5, "us")
    seq = 0

    # RX, one frame at a time: 7 silent, the 8th interrupts.
    for batch in range(6):
        irq0, prod0 = drv.irqs[RQ], await cq_prod(drv, "rx", RQ)
        sent = []
        for _ in range(7):
            sent.append(frame(rng.randint(60, 600), rng, seq := seq + 1))
            await put(tb, 0, sent[-1])
            await Timer(rng.randint(100, 800), "ns")
        await Timer(3, "us")
        assert await cq_prod(drv, "rx", RQ) == rings.idx_add(prod0, 7), "batch %d: completions not written" % batch
        assert drv.irqs[RQ] == irq0 and drv.rx_pending(RQ) == 0, \
            f"batch {batch}: interrupt after {drv.rx_pending(RQ)} of 8 completions (mod_count 8)"
        sent.append(frame(rng.randint(60, 600), rng, seq := seq + 1))
        await put(tb, 0, sent[-1])
        assert await wait_rx(drv, RQ, 8, 3), f"batch {batch}: 8th completion gave no interrupt"
        await Timer(500, "ns")
        assert drv.irqs[RQ] == irq0 + 1, f"batch {batch}: {drv.irqs[RQ] - irq0} interrupts for 8 completions"
        await take(drv, RQ, sent, f"batch {batch}")

    # RX burst: 61 frames back to back; the last 61 % 8 fire by time.
    await drv.set_moderation("rx", RQ, count=8, time_us=20)
    assert await drv.entry("rx_cqs", RQ).read("mod_time_us") == 20
    irq0 = drv.irqs[RQ]
    burst = [frame(rng.randint(400, 1514), rng, seq := seq + 1) for _ in range(61)]
    for f in burst:
        await tb.ports[0].send(f)
    assert await wait_rx(drv, RQ, len(burst), 100), f"burst: {drv.rx_pending(RQ)} of {len(burst)} frames seen"
    n_irq = drv.irqs[RQ] - irq0
    await take(drv, RQ, burst, "burst")
    assert 1 <= n_irq <= -(-len(burst) // 8) + 1, f"burst: {n_irq} interrupts for {len(burst)} completions"
    dut._log.info("burst of %d completions, mod_count 8: %d interrupts", len(burst), n_irq)

    # TX: 7 sends complete silently, the 8th interrupts.
    async def drain() -> None:
        while True:
            await tb.ports[1].recv()

    cocotb.start_soon(drain())
    for batch in range(2):
        irq0 = drv.irqs[TQ]
        toks = []
        for _ in range(7):
            toks.append(await drv.send(TQ, frame(rng.randint(60, 1514), rng, seq := seq + 1)))
            await Timer(rng.randint(300, 1000), "ns")
        await Timer(3, "us")
        assert not any(t.done.is_set() for t in toks) and drv.irqs[TQ] == irq0, \
            f"TX batch {batch}: interrupt before 8 completions"
        toks.append(await drv.send(TQ, frame(rng.randint(60, 1514), rng, seq := seq + 1)))
        for t in toks:
            cpl = await t.wait(timeout_us=5)
            assert cpl.status == 0, cpl
        await Timer(500, "ns")
        assert drv.irqs[TQ] == irq0 + 1, f"TX batch {batch}: {drv.irqs[TQ] - irq0} interrupts for 8 completions"
    assert drv.stats["irq_empty"] == 0 and not drv.errors, (dict(drv.stats), drv.errors)


# ---------------------------------------------------------------------------- time

# The NIC counts a queue pending from the cycle it hands the completion's DMA write to the
# DMA engine; the write lands in host memory (where CplWatch sees it) later, behind the
# frame's own data writes (1514 B: six 256-byte TLPs). Seen: up to 0.18 us.
FLIGHT_US = 0.5


class CplWatch:
    """Watches host memory for the completion of index `idx` of a completion queue (the
    moment the NIC's write landed), every 4 ns."""

    def __init__(self, cq):
        self.cq = cq

    async def written(self, idx: int, timeout_us: float = 100) -> float:
        for _ in range(int(timeout_us * 250)):
            if rings.is_new(self.cq.ring.record(idx), idx, self.cq.ring.log_size):
                return get_sim_time("ns")
            await Timer(4, "ns")
        raise AssertionError(f"completion {idx} never written")


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def moderation_by_time(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await start(dut)
    drv = tb.drv
    Q = 2
    await drv.open_rx_queue(Q, size=64, buf_size=2048, mod_count=1000, mod_time_us=0)
    await drv.set_default_queue(port=1, q=Q)
    await Timer(5, "us")
    cq = drv.cqs["rx"][Q]
    watch = CplWatch(cq)
    seq = 0
    delays = {}

    async def one(t_us: int, what: str) -> float:
        nonlocal seq
        irq0 = drv.irqs[Q]
        idx = cq.cons
        f = frame(rng.randint(60, 1514), rng, seq := seq + 1)
        await tb.ports[1].send(f)
        t_w = await watch.written(idx)
        assert await wait_rx(drv, Q, 1, t_us + 10), f"{what}: no interrupt {t_us + 10} us after the completion"
        pkt = await drv.recv(Q)
        assert pkt.ok and pkt.data == f
        d = (pkt.cpl_time - t_w) / 1000
        await Timer(1, "us")
        assert drv.irqs[Q] == irq0 + 1, f"{what}: {drv.irqs[Q] - irq0} interrupts"
        return d

    for t_us in (5, 12, 1, 0, 3, 30, 0, 2):
        await drv.set_moderation("rx", Q, count=1000, time_us=t_us)
        assert await drv.entry("rx_cqs", Q).read("mod_time_us") == t_us
        await Timer(rng.randint(0, 1000), "ns")  # any phase of the NIC's microsecond tick
        d = await one(t_us, f"mod_time_us {t_us}")
        delays.setdefault(t_us, []).append(round(d, 3))
        if t_us == 0:
            assert d < 1.5, f"mod_time_us 0: the driver saw the completion {d:.3f} us after it was written"
        else:
            assert t_us - FLIGHT_US <= d <= t_us + 2, \
                f"mod_time_us {t_us}: the driver saw the completion {d:.3f} us after it was written"
    dut._log.info("completion written -> driver took it (us), by mod_time_us: %s", delays)

    # A second completion while the first waits: one interrupt for both, at the first's time.
    T = 10
    await drv.set_moderation("rx", Q, count=1000, time_us=T)
    await drv.entry("rx_cqs", Q).read("mod_time_us")
    irq0, idx = drv.irqs[Q], cq.cons
    fa, fb = frame(200, rng, seq := seq + 1), frame(300, rng, seq := seq + 1)
    await tb.ports[1].send(fa)
    t_a = await watch.written(idx)
    await Timer(T * 1000 // 2, "ns")
    await tb.ports[1].send(fb)
    await watch.written(rings.idx_add(idx, 1))
    assert await wait_rx(drv, Q, 2, T + 5), "two completions: not seen"
    await Timer(1, "us")
    assert drv.irqs[Q] == irq0 + 1, f"two completions within mod_time_us: {drv.irqs[Q] - irq0} interrupts"
    a = await drv.recv(Q)
    b = await drv.recv(Q)
    assert (a.data, b.data) == (fa, fb)
    d = (b.cpl_time - t_a) / 1000
    assert T - FLIGHT_US <= d <= T + 2, f"two completions: seen {d:.3f} us after the first was written"

    # mod_count reached before mod_time_us: at once.
    await drv.set_moderation("rx", Q, count=4, time_us=50)
    await drv.entry("rx_cqs", Q).read("mod_time_us")
    irq0, idx = drv.irqs[Q], cq.cons
    fs = [frame(100, rng, seq := seq + 1) for _ in range(4)]
    for f in fs:
        await tb.ports[1].send(f)
    await watch.written(rings.idx_add(idx, 3))
    assert await wait_rx(drv, Q, 4, 5), "mod_count 4: no interrupt"
    assert drv.irqs[Q] == irq0 + 1
    await take(drv, Q, fs, "mod_count 4")
    assert drv.stats["irq_empty"] == 0 and not drv.errors, (dict(drv.stats), drv.errors)


# ---------------------------------------------------------------------------- masking

@cocotb.test(timeout_time=1, timeout_unit="ms")
async def masked_vector(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await start(dut)
    drv = tb.drv
    Q = 3  # RX queue 3 -> event queue / vector 3
    await drv.open_rx_queue(Q, size=64, buf_size=2048)
    await drv.set_default_queue(port=1, q=Q)
    await Timer(5, "us")
    msix = drv.block("msix")
    assert await msix.read("pending") == 0
    eq = drv.entry("eqs", Q)

    for rnd in range(2):
        await drv.set_vector_mask(Q, True)
        assert await drv.entry("msix", Q).read("control") & 1
        irq0 = drv.irqs[Q]
        cprod0, eprod0 = await cq_prod(drv, "rx", Q), await eq.read("prod")
        fs = [frame(rng.randint(60, 1514), rng, 100 * rnd + k) for k in range(3)]
        for f in fs:
            await put(tb, 1, f)
            await Timer(500, "ns")
        await Timer(5, "us")
        assert drv.irqs[Q] == irq0 and drv.rx_pending(Q) == 0, f"round {rnd}: interrupt on a masked vector"
        assert await cq_prod(drv, "rx", Q) == rings.idx_add(cprod0, 3), f"round {rnd}: completions not written"
        assert await eq.read("prod") == rings.idx_add(eprod0, 1), f"round {rnd}: expected one event (queue disarmed)"
        pend = await msix.read("pending")
        assert pend == 1 << Q, f"round {rnd}: msix.pending {pend:#x}, expected {1 << Q:#x}"
        await drv.set_vector_mask(Q, False)
        assert await wait_rx(drv, Q, 3, 3), f"round {rnd}: unmasking delivered no interrupt"
        await Timer(500, "ns")
        assert drv.irqs[Q] == irq0 + 1, f"round {rnd}: {drv.irqs[Q] - irq0} interrupts after unmasking"
        assert await msix.read("pending") == 0, f"round {rnd}: pending bit stays after unmasking"
        await take(drv, Q, fs, f"round {rnd}")
        # Unmasked, the vector works as before.
        f = frame(100, rng, 100 * rnd + 50)
        await put(tb, 1, f)
        assert await wait_rx(drv, Q, 1, 3), f"round {rnd}: no interrupt after unmasking"
        await take(drv, Q, [f], f"round {rnd}, unmasked")
        assert drv.irqs[Q] == irq0 + 2
    assert drv.stats["irq_empty"] == 0 and not drv.errors, (dict(drv.stats), drv.errors)


# ---------------------------------------------------------------------------- overflow

@cocotb.test(timeout_time=1, timeout_unit="ms")
async def eq_overflow(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await start(dut, eq_size=2)  # every event queue has 2 entries
    drv = tb.drv
    eqs = drv.block("eqs")
    QS = (0, 1, 2)
    for q in QS:
        await drv.open_rx_queue(q, size=16, buf_size=2048, eq=0)
    await Timer(5, "us")
    assert drv.eqs[0].ring.size == 2
    ov0 = await eqs.read("overflows")
    eprod0 = await drv.entry("eqs", 0).read("prod")
    await drv.set_vector_mask(0, True)
    irq0 = drv.irqs[0]
    fs = {}
    for q in QS:  # one completion in each of three queues, all reporting to event queue 0
        await drv.set_default_queue(port=0, q=q)
        await drv.block("rx_engine").read("default_queue")
        fs[q] = frame(rng.randint(60, 500), rng, q)
        await put(tb, 0, fs[q])
        await Timer(2, "us")
    for q in QS:
        assert await cq_prod(drv, "rx", q) == rings.idx_add(drv.cqs["rx"][q].cons, 1), f"RX queue {q}: no completion"
    assert await drv.entry("eqs", 0).read("prod") == rings.idx_add(eprod0, 2), "event queue 0 should hold 2 events"
    assert await eqs.read("overflows") == ov0 + 1, "the third event must be dropped and counted"
    assert drv.irqs[0] == irq0

    await drv.set_vector_mask(0, False)
    assert await wait_rx(drv, 1, 1, 3) and await wait_rx(drv, 0, 1, 1), "unmasking: events not handled"
    await Timer(3, "us")
    assert drv.irqs[0] == irq0 + 1
    await take(drv, 0, [fs[0]], "queue 0")
    await take(drv, 1, [fs[1]], "queue 1")
    assert drv.rx_pending(2) == 0, "queue 2's event was dropped: the driver cannot have seen its completion"
    # The driver recovers by polling and re-arming the queue.
    assert await drv.poll() == 1
    await take(drv, 2, [fs[2]], "queue 2 (polled)")
    await drv.cqs["rx"][2].regs.write("arm", 1)
    f = frame(200, rng, 9)
    await put(tb, 0, f)
    assert await wait_rx(drv, 2, 1, 3), "queue 2 after re-arming: no interrupt"
    await take(drv, 2, [f], "queue 2 (re-armed)")
    assert await eqs.read("overflows") == ov0 + 1
    assert drv.stats["irq_empty"] == 0 and not drv.errors, (dict(drv.stats), drv.errors)


def test_nic_interrupts():
    run_cocotb(NIC, __name__, fast=True)
