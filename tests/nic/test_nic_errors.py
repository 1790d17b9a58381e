"""Bad input and flow control through the whole NIC: each case checks that what must be
dropped is dropped and counted, that an error gets an error completion, that nothing
good is lost, and that the NIC keeps working afterwards.
"""
import random

import cocotb
from cocotb.triggers import Timer, with_timeout

from offnic_sim.host import rings
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.fast.fast_tb import FastNicTB
from offnic_sim.host.rings import Desc

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
NOWHERE = 0xDEAD_0000_0000  # a host address with no memory behind it: reads get UR


def frame(n: int, rng: random.Random) -> bytes:
    return b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\xb5" + rng.randbytes(n - 14)


async def setup(dut, **kw) -> FastNicTB:
    tb = FastNicTB(dut, **kw)
    await tb.init()
    await tb.drv.set_rss(enable=False)
    for port in range(2):
        await tb.drv.open_tx_queue(port, size=32, port=port)
        await tb.drv.open_rx_queue(port, size=32, buf_size=2048)
        await tb.drv.set_default_queue(port=port, q=port)
    return tb


async def send_ok(tb: FastNicTB, q: int, port: int, rng: random.Random, n: int = 3) -> None:
    """The NIC still works: n frames out on `port` from queue q, n frames in."""
    for _ in range(n):
        f = frame(rng.randint(60, 1514), rng)
        tok = await tb.drv.send(q, f)
        assert (await with_timeout(tb.ports[port].recv(), 100, "us"))[:len(f)] == f
        assert (await tok.wait()).status == rings.OK
        f = frame(rng.randint(60, 1514), rng)
        await tb.ports[port].send(f)
        pkt = await tb.drv.recv(port, timeout_us=100)
        assert pkt.ok and pkt.data == f, pkt


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def bad_frames_on_the_wire(dut):
    """Bad FCS, runts and oversize frames among good ones: dropped and counted by the
    port, every good frame delivered in order."""
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    want = {"rx_fcs_errors": 0, "rx_runts": 0, "rx_oversize": 0}
    good = []
    for i in range(40):
        kind = rng.choice(["good", "good", "fcs", "runt", "oversize"])
        if kind == "good":
            f = frame(rng.randint(60, 1514), rng)
            good.append(f)
            await tb.ports[0].send(f)
        elif kind == "fcs":
            await tb.ports[0].send(frame(rng.randint(60, 1514), rng), bad_fcs=True)
            want["rx_fcs_errors"] += 1
        elif kind == "runt":
            await tb.ports[0].send(frame(rng.randint(20, 59), rng), pad=False)  # < 64 B on the wire
            want["rx_runts"] += 1
        else:
            await tb.ports[0].send(frame(rng.randint(1515, 3000), rng))  # max_frame_len is 1518
            want["rx_oversize"] += 1
    for i, f in enumerate(good):
        pkt = await tb.drv.recv(0, timeout_us=200)
        assert pkt.ok and pkt.data == f, f"good frame {i}: {pkt}"
    await Timer(5, "us")
    assert tb.drv.rx_pending(0) == 0, "a bad frame was delivered"
    pc = await tb.drv.port_counters(0)
    for k, v in want.items():
        assert pc[k] == v, f"{k}: counted {pc[k]}, sent {v} ({pc})"
    assert pc["rx_frames"] == len(good), pc
    await send_ok(tb, 0, 0, rng)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def dma_read_error(dut):
    """A TX packet whose bytes the host answers with Unsupported Request: an error
    completion, nothing on the wire, and the next packets go out."""
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    drv = tb.drv
    tok = await drv.send_descs(0, [Desc(NOWHERE, 128)])
    cpl = await tok.wait(200)
    assert cpl.status == rings.DMA_ERROR, cpl
    # Mixed: a good segment and a bad one in one packet; then good packets.
    good = drv.alloc(4096)
    tok = await drv.send_descs(0, [Desc(good.addr, 64, flags=rings.DESC_MORE), Desc(NOWHERE, 64)])
    assert (await tok.wait(200)).status == rings.DMA_ERROR
    await send_ok(tb, 0, 0, rng)
    assert tb.ports[0].sink.empty(), "a failed packet reached the wire"
    dma = await drv.counters("dma")
    txe = await drv.counters("tx_engine")
    assert dma["rd_err_status"] >= 2 and txe["dma_errors"] >= 2, (dma, txe)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def bad_descriptors(dut):
    """Reserved opcodes (TCP engine commands too: this NIC has no engine), a cache insert inside a chain, reserved flags, too many segments, empty and oversize packets:
    BAD_DESC completions in order, nothing sent, the queue carries on."""
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    drv = tb.drv
    buf = drv.alloc(32768)
    cases = [
        [Desc(buf.addr, 64, opcode=rings.OP_FRAGMENT)],                         # not implemented yet
        # TCP engine commands on a NIC built without the engine (toe_connections = 0)
        [Desc.with_arg(buf.addr, 3, rings.OP_TCP_FIRST, 7)], [Desc(0, 0, rings.OP_TCP_FIRST + 7)],
        [Desc(buf.addr, 64, rings.OP_CACHE_INSERT, rings.DESC_MORE), Desc(buf.addr, 64)],  # insert in a chain
        [Desc(buf.addr, 64, flags=0x80)],
        [Desc(buf.addr, 4, flags=rings.DESC_MORE)] * 16 + [Desc(buf.addr, 4)],   # 17 segments
        [Desc(buf.addr, 0)],
        [Desc(buf.addr, 14000, flags=rings.DESC_MORE)] * 4 + [Desc(buf.addr, 14000)],  # 70000 B > max_frame
        # segment lengths that would wrap a 17-bit sum to a small frame: 2 x 65535 + 9 B
        [Desc(buf.addr, 65535, flags=rings.DESC_MORE)] * 2 + [Desc(buf.addr, 9)],
    ]
    toks = [await drv.send_descs(0, c) for c in cases]
    tok_ok = await drv.send(0, frame(100, rng))
    for i, t in enumerate(toks):
        assert (await t.wait(200)).status == rings.BAD_DESC, f"case {i}: {t.cpl}"
    assert (await tok_ok.wait(200)).status == rings.OK
    await with_timeout(tb.ports[0].recv(), 50, "us")
    assert (await drv.counters("tx_engine"))["bad_desc"] == len(cases)
    await send_ok(tb, 0, 0, rng)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def descriptor_fetch_error(dut):
    """A TX ring at an address with no memory: the fetch fails, the queue stops with its
    error bit set and counts it; moved to a good ring and re-enabled, it works."""
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    drv = tb.drv
    q = drv.entry("tx_queues", 3)
    ring = drv.alloc(4096)
    data = drv.alloc(4096)
    f = frame(200, rng)
    data.write(0, f)
    await q.write("base_lo", NOWHERE & 0xFFFF_FFFF)
    await q.write("base_hi", NOWHERE >> 32)
    await q.write("control", 4 | 1 << 8)  # 16 entries, enabled, port 0
    start = await q.read("cons")
    await q.write("prod", (start + 1) & 0xFFFF)
    await Timer(5, "us")
    assert await q.read("status") & 1, "the queue must report the failed fetch"
    assert (await drv.counters("tx_engine"))["desc_fetch_errors"] == 1
    assert await q.read("cons") == start, "nothing may be consumed"
    # The host moves the ring and re-enables; its completion queue is opened by the driver.
    cq = drv.entry("tx_cqs", 3)
    cq_ring = drv.alloc(4096)
    await cq.write("base_lo", cq_ring.addr & 0xFFFF_FFFF)
    await cq.write("base_hi", cq_ring.addr >> 32)
    await cq.write("control", 4 | 1 << 8)
    ring.write((start % 16) * 16, rings.pack_desc(Desc(data.addr, len(f))))
    await q.write("control", 4)
    await q.write("base_lo", ring.addr & 0xFFFF_FFFF)
    await q.write("base_hi", ring.addr >> 32)
    await q.write("control", 4 | 1 << 8)
    got = await with_timeout(tb.ports[0].recv(), 50, "us")
    assert got[:len(f)] == f
    assert not await q.read("status") & 1
    assert await q.read("cons") == (start + 1) & 0xFFFF


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def rx_full_ring_and_short_buffers(dut):
    """No buffers posted: frames dropped and counted (drop_no_desc), none delivered
    twice or corrupted; buffers posted again: traffic flows. A frame longer than its
    buffer completes TOO_LONG without touching memory past the buffer."""
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    drv = tb.drv
    drv.set_rx_refill(0, False)
    frames = [frame(rng.randint(60, 300), rng) for _ in range(40)]
    for f in frames:
        await tb.ports[0].send(f)
    got = [await drv.recv(0, timeout_us=100) for _ in range(32)]  # the ring holds 32
    await Timer(10, "us")
    assert drv.rx_pending(0) == 0
    for i, (f, p) in enumerate(zip(frames, got)):
        assert p.ok and p.data == f, f"frame {i}"
    rxe = await drv.counters("rx_engine")
    assert rxe["drop_no_desc"] == len(frames) - 32, rxe
    drv.set_rx_refill(0, True)
    await drv.post_rx(0)
    await send_ok(tb, 0, 0, rng)
    # Short buffers: RX queue 2 with 256-byte buffers on port 1.
    await drv.open_rx_queue(2, size=8, buf_size=256)
    await drv.set_default_queue(port=1, q=2)
    await tb.ports[1].send(frame(1000, rng))
    small = frame(100, rng)
    await tb.ports[1].send(small)
    p = await drv.recv(2, timeout_us=100)
    assert p.status == rings.TOO_LONG, p
    p = await drv.recv(2, timeout_us=100)
    assert p.ok and p.data == small
    assert (await drv.counters("rx_engine"))["too_long"] == 1


@cocotb.test(timeout_time=3, timeout_unit="ms")
async def queue_disable_under_traffic(dut):
    """TX: a queue disabled mid-stream stops (what it took still goes out), re-enabled it
    sends the rest: every frame exactly once, in order. RX: frames for a disabled queue
    are dropped and counted; re-enabled, it receives again."""
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    drv = tb.drv
    frames = [frame(rng.randint(1000, 1514), rng) for _ in range(100)]
    toks = []

    async def sender():
        for f in frames:
            toks.append(await drv.send(0, f))

    task = cocotb.start_soon(sender())
    await Timer(10, "us")
    await drv.enable_queue("tx", 0, False)
    await Timer(30, "us")  # what the NIC had taken drains
    done_before = sum(1 for t in toks if t.cpl is not None)
    await Timer(20, "us")
    assert sum(1 for t in toks if t.cpl is not None) == done_before, "a disabled queue kept sending"
    assert done_before < len(frames), "the queue finished before it was disabled: nothing tested"
    await drv.enable_queue("tx", 0, True)
    for i, f in enumerate(frames):
        got = await with_timeout(tb.ports[0].recv(), 200, "us")
        assert got[:len(f)] == f, f"TX frame {i}"
    await task
    await drv.wait_tx(0)
    assert tb.ports[0].sink.empty()
    # RX
    await drv.enable_queue("rx", 1, False)
    for _ in range(5):
        await tb.ports[1].send(frame(100, rng))
    await Timer(10, "us")
    assert drv.rx_pending(1) == 0
    assert (await drv.counters("rx_engine"))["drop_disabled"] == 5
    await drv.enable_queue("rx", 1, True)
    await send_ok(tb, 1, 1, rng)


def test_nic_errors():
    run_cocotb(NIC, __name__, fast=True)
