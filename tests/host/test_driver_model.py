"""The driver model (offnic_sim.host.driver) against a behavioural stand-in for the NIC's queue
side (nic_model.py), before the RTL exists.

Runs in cocotb for its scheduler and timers only: the simulated design (the DMA bench top,
which other benches build anyway) is never clocked or touched. Checked: frames sent with
random scatter/gather come back through loopback intact and in order; every TX packet
completes once, OK, with its length and port; ring indexes starting just below the
16-bit wrap go through it; interrupts with moderation by count and by time, masking with
the pending interrupt delivered on unmasking, and the polling mode; bad descriptors,
failed DMA reads, too-long frames, drops, RSS placement, generic counters; and that a
completion the driver did not expect is caught.
"""
import random
import zlib

import cocotb
from cocotb.triggers import Timer
from cocotbext.pcie.core import RootComplex

from nic_model import NicModel, ones_sum
from offnic_sim.harness import hw
from offnic_sim.host import rings
from offnic_sim.host.driver import OffnicDriver
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host.hostmem import HostMemory
from offnic_sim.host.rings import Desc

DESIGN = next(d for d in hw.load_config("dma") if d.name == "dma")
START = 0xFFF3  # every ring index starts 13 below the 16-bit wrap


async def setup(dut, mode="irq", vectors=2, **kw):
    rc = RootComplex()
    rc.log.setLevel("WARNING")
    nic = NicModel(rc, queues=4, vectors=vectors, start_index=START)
    drv = OffnicDriver(dut, rc, mode=mode, hostmem=HostMemory(rc), **kw)
    await drv.attach(nic.blocks)
    return nic, drv


def random_frame(max_len: int) -> bytes:
    n = random.choice([1, 14, 60, 64, random.randint(1, 256), random.randint(1, max_len), max_len])
    return random.randbytes(n)


def random_cuts(n: int) -> list[int] | None:
    if random.random() < 0.3:
        return None
    return sorted(random.choices(range(n + 1), k=random.randint(1, 6)))


async def traffic(dut, mode: str) -> None:
    nic, drv = await setup(dut, mode)
    await drv.open_tx_queue(0, size=16, port=0, mod_count=4, mod_time_us=3)
    await drv.open_tx_queue(1, size=8, port=1, cq_size=4)
    await drv.open_rx_queue(0, size=16, buf_size=2048, mod_count=3, mod_time_us=2)
    await drv.open_rx_queue(2, size=8, buf_size=9600, eq=1)
    await drv.set_rss(enable=False)  # on after reset
    await drv.set_default_queue(0, 0)
    await drv.set_default_queue(1, 2)

    expected = {0: [], 2: []}
    tokens = []
    for _ in range(300):
        q = random.randint(0, 1)
        frame = random_frame(1514 if q == 0 else 9000)
        tokens.append(await drv.send(q, frame, random_cuts(len(frame)), offset=random.randint(0, 63)))
        expected[2 * q].append(frame)
        if random.random() < 0.1:
            await Timer(random.randint(1, 20), "us")
    await drv.wait_tx(timeout_us=5000)

    assert all(t.status == rings.OK for t in tokens), [t.cpl for t in tokens if t.status != rings.OK][:3]
    assert len(drv.tx_done(0)) + len(drv.tx_done(1)) == len(tokens)
    for q, frames in expected.items():
        for k, f in enumerate(frames):
            pkt = await drv.recv(q, timeout_us=2000)
            assert pkt.ok and pkt.data == f, f"RX queue {q} frame {k}: {len(pkt.data)} B, expected {len(f)} B"
            assert pkt.port == q // 2 and pkt.queue == q and pkt.csum == ones_sum(f[14:]) and pkt.rss_hash is None
        assert drv.rx_pending(q) == 0
    c = await drv.counters("rx_engine")
    assert not any(v for k, v in c.items() if k.startswith("drop")), c
    # every ring went through the 16-bit wrap
    assert all(cq.cons < START for kind in ("tx", "rx") for cq in drv.cqs[kind].values())
    lat = drv.tx_latency_stats()
    assert lat["count"] == len(tokens) and lat["min"] >= 2000  # at least a descriptor and a data read
    drv.log_summary()
    assert not drv.errors
    if mode == "irq":
        completions = len(tokens) * 2
        assert 0 < drv.stats["irq"] < completions, drv.stats
        assert drv.irqs[0] and drv.irqs[1]
        assert drv.stats["irq_empty"] == 0
    else:
        assert drv.stats["irq"] == 0 and drv.stats["polls"] > 0


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def traffic_irq(dut):
    await traffic(dut, "irq")


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def traffic_poll(dut):
    await traffic(dut, "poll")


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def moderation_and_masking(dut):
    nic, drv = await setup(dut)
    await drv.open_tx_queue(0, size=32, port=0)  # vector 0
    await drv.open_rx_queue(1, size=32, eq=1)     # the loopback lands on vector 1
    await drv.set_rss(enable=False)
    await drv.set_default_queue(0, 1)

    # count: 8 completions, one interrupt
    await drv.set_moderation("tx", 0, count=8, time_us=1000)
    before = drv.irqs[0]
    toks = [await drv.send(0, random_frame(200)) for _ in range(8)]
    await toks[-1].wait()
    assert drv.irqs[0] - before == 1, drv.irqs
    assert len({t.t_complete for t in toks}) == 1  # all taken in one pass

    # time: 3 completions, count not reached, the event waits out mod_time_us
    await drv.set_moderation("tx", 0, count=8, time_us=20)
    before = drv.irqs[0]
    toks = [await drv.send(0, random_frame(200)) for _ in range(3)]
    await toks[-1].wait()
    assert drv.irqs[0] - before == 1
    assert toks[0].latency_ns >= 20_000, toks[0].latency_ns

    # masked: the interrupt is held pending, then delivered on unmasking
    await drv.set_moderation("tx", 0, count=1, time_us=0)
    await drv.set_vector_mask(0, True)
    before = drv.irqs[0]
    tok = await drv.send(0, random_frame(200))
    await Timer(30, "us")
    assert tok.cpl is None and nic.msix_pending[0] and drv.irqs[0] == before
    await drv.set_vector_mask(0, False)
    cpl = await tok.wait(100)
    assert cpl.status == rings.OK and drv.irqs[0] == before + 1
    for _ in range(12):
        assert (await drv.recv(1)).ok
    assert not drv.errors


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def bad_input_rss_and_errors(dut):
    nic, drv = await setup(dut, strict=False)
    await drv.open_tx_queue(0, size=64, port=0)
    await drv.open_rx_queue(0, size=8, buf_size=256)
    await drv.open_rx_queue(1, size=64, buf_size=2048)
    await drv.open_rx_queue(3, size=64, buf_size=2048)
    await drv.set_rss(enable=False)  # RX queue 0 (the default queue) until RSS below
    assert drv.max_segs == 16 and drv.max_tx_frame == 9600

    buf = drv.alloc(4096)
    buf.write(0, bytes(range(100)))
    cases = [
        ("reserved opcode", [Desc(buf.addr, 100, rings.OP_CACHE_INSERT)], rings.BAD_DESC),
        ("no memory", [Desc(0x40_0000_0000, 100)], rings.DMA_ERROR),
        ("zero-length frame", [Desc(buf.addr, 0)], rings.BAD_DESC),
        ("good, by hand", [Desc(buf.addr, 60, flags=rings.DESC_MORE), Desc(buf.addr + 60, 40)], rings.OK),
    ]
    for what, descs, want in cases:
        cpl = await (await drv.send_descs(0, descs, length=100)).wait()
        assert cpl.status == want, f"{what}: {cpl}"
    assert (await drv.recv(0)).data == bytes(range(100))
    frame = random.randbytes(300)
    cpl = await (await drv.send(0, frame, segments=list(range(10, 170, 10)))).wait()  # 17 segments
    assert cpl.status == rings.BAD_DESC
    assert drv.stats["tx_bad_desc"] == 3 and drv.stats["tx_dma_error"] == 1

    # a frame longer than the buffer: TOO_LONG, the descriptor is used up and reposted
    await (await drv.send(0, frame)).wait()
    pkt = await drv.recv(0)
    assert pkt.status == rings.TOO_LONG and pkt.data == b"" and pkt.length == 300
    assert (await drv.counters("rx_engine"))["too_long"] == 1

    # no buffers: dropped and counted (once the buffer above is reposted: 8 posted)
    await Timer(5, "us")
    drv.set_rx_refill(0, False)
    for _ in range(10):
        await drv.send(0, random_frame(200))
    await drv.wait_tx()
    await Timer(20, "us")
    assert drv.rx_pending(0) == 8 and (await drv.counters("rx_engine"))["drop_no_desc"] == 2
    for _ in range(8):
        await drv.recv(0)
    await drv.post_rx(0)

    # RSS: frames spread by the table (the model's stand-in hash: CRC-32)
    table = [1 if i % 3 else 3 for i in range(128)]
    await drv.set_rss(key=bytes(range(40)), table=table)
    frames = [random.randbytes(random.randint(60, 1500)) for _ in range(40)]
    for f in frames:
        await drv.send(0, f)
    await drv.wait_tx()
    for _ in range(100):  # the last frames are still on their way in
        if drv.rx_pending(1) + drv.rx_pending(3) == len(frames):
            break
        await Timer(1, "us")
    got = {1: [], 3: []}
    for q in got:
        while drv.rx_pending(q):
            got[q].append(await drv.recv(q))
    for f in frames:
        h = zlib.crc32(f)
        q = table[h & 0x7F]
        pkt = got[q].pop(0)
        assert pkt.data == f and pkt.rss_hash == h and pkt.rss_type == 1
    await drv.set_rss(enable=False)

    # a completion the driver did not ask for is caught
    assert not drv.errors
    nic.misbehave = "bad_index"
    await drv.send(0, random_frame(100))
    await Timer(20, "us")
    assert len(drv.errors) == 1 and "index" in drv.errors[0], drv.errors


def test_driver_model():
    run_cocotb(DESIGN, __name__)
