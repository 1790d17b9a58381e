"""The whole NIC under random traffic: both ports, both directions at once, frame sizes
from 60 B to 9 KB jumbo frames, scatter/gather, rings small enough to wrap many times,
several TX queues sharing a port. A scoreboard checks that every TX frame arrives once,
intact, on the right port, in order per queue; that RX frames arrive intact, in order,
on the right queue, any missing one counted as dropped (16 buffers per ring: a burst of
small frames can outrun the driver's refill); then the counters must agree.
"""
import random

import cocotb
from cocotb.triggers import Combine, SimTimeoutError, Timer, with_timeout

from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.fast.fast_tb import FastNicTB

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
JUMBO = 9014  # largest frame without FCS with a 9000-byte payload


def frame_size(rng: random.Random, jumbo: bool = True) -> int:
    r = rng.random()
    if r < 0.35:
        return rng.randint(60, 128)
    if r < 0.8 or not jumbo:
        return rng.randint(60, 1514)
    return rng.randint(1515, JUMBO)


def tagged_frame(n: int, tag: int, rng: random.Random) -> bytes:
    """A frame whose bytes 14..21 carry a sequence tag (so a scoreboard can name it)."""
    hdr = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\xb5"
    return hdr + tag.to_bytes(8, "little") + rng.randbytes(n - 22)


def segments(n: int, rng: random.Random) -> list[int] | None:
    """Random cut points: none (one descriptor) half the time, else up to 5 pieces."""
    if rng.random() < 0.5 or n < 8:
        return None
    k = rng.randint(1, min(4, n - 1))
    return sorted(rng.sample(range(1, n), k))


async def set_jumbo(tb: FastNicTB) -> None:
    for b in tb.drv.blocks["eth_port"]:
        await b.write("max_frame_len", JUMBO + 4)


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def random_traffic(dut):
    rng = random.Random(random.getrandbits(64))
    tb = FastNicTB(dut)
    await tb.init()
    drv = tb.drv
    await set_jumbo(tb)
    await drv.set_rss(enable=False)
    txq_port = {0: 0, 1: 1, 2: 0}
    for q, port in txq_port.items():
        await drv.open_tx_queue(q, size=16, port=port)
    for port in range(2):
        await drv.open_rx_queue(port, size=16, buf_size=9216)
        await drv.set_default_queue(port=port, q=port)

    n_tx, n_rx = 60, 50
    sent = {q: [] for q in txq_port}
    on_wire = {0: [], 1: []}

    async def tx(q: int) -> None:
        for i in range(n_tx):
            f = tagged_frame(frame_size(rng), q << 32 | i, rng)
            sent[q].append(f)
            await drv.send(q, f, segments=segments(len(f), rng), offset=rng.randrange(64))

    async def wire(port: int, count: int) -> None:
        for _ in range(count):
            on_wire[port].append(await tb.ports[port].recv())

    async def rx(port: int) -> list[bytes]:
        frames = [tagged_frame(frame_size(rng), 1 << 40 | port << 32 | i, rng) for i in range(n_rx)]
        for f in frames:
            await tb.ports[port].send(f)
        return frames


    wires = [cocotb.start_soon(wire(p, n_tx * sum(1 for v in txq_port.values() if v == p))) for p in range(2)]
    txs = [cocotb.start_soon(tx(q)) for q in txq_port]
    rx_in = [cocotb.start_soon(rx(p)) for p in range(2)]
    try:
        await with_timeout(Combine(*wires, *txs, *rx_in), 4000, "us")
    except SimTimeoutError:
        dut._log.error("stuck: on wire %s, RX taken %s, NIC %s", {p: len(v) for p, v in on_wire.items()},
                       [drv.rx_pending(p) for p in range(2)], await tb.snapshot())
        raise
    await drv.wait_tx()
    await Timer(50, "us")  # the last RX frames reach the host
    rx_out = [[await drv.recv(p, timeout_us=1) for _ in range(drv.rx_pending(p))] for p in range(2)]

    # TX: per port, the frames of each queue in order, intact, none missing or extra.
    for port in range(2):
        got = on_wire[port]
        for q, p in txq_port.items():
            if p != port:
                continue
            mine = [f for f in got if int.from_bytes(f[14:22], "little") >> 32 == q]
            want = sent[q]
            assert len(mine) == len(want), f"TX queue {q}: {len(mine)} frames on the wire, sent {len(want)}"
            for i, (a, b) in enumerate(zip(mine, want)):
                assert a[:len(b)] == b, f"TX queue {q} frame {i} ({len(b)} B) differs"
    # RX: per port, an in-order subsequence of what was sent, intact, with the right port;
    # a frame may only be missing if the NIC counted it dropped. With 16 buffers per ring a
    # burst of small frames can outrun the driver's refill (drop_no_desc): legal, counted.
    rxe = await drv.counters("rx_engine")
    delivered = 0
    for port in range(2):
        frames = rx_in[port].result()
        by_tag = {f[14:22]: i for i, f in enumerate(frames)}
        last = -1
        for pkt in rx_out[port]:
            assert pkt.ok and pkt.port == port, f"RX port {port}: {pkt}"
            i = by_tag.get(pkt.data[14:22])
            assert i is not None and i > last, f"RX port {port}: a frame out of order, twice or never sent"
            assert pkt.data == frames[i], f"RX port {port} frame {i} ({len(frames[i])} B) differs"
            last = i
        delivered += len(rx_out[port])
    dropped = rxe["drop_no_desc"] + rxe["drop_cq_full"] + rxe["drop_disabled"]
    assert delivered + dropped == 2 * n_rx, f"RX: {delivered} delivered + {dropped} counted drops != {2 * n_rx} sent"
    assert dropped <= n_rx // 5, f"RX: {dropped} of {2 * n_rx} frames dropped: the driver should mostly keep up"
    # Counters agree with what happened.
    total_tx = n_tx * len(txq_port)
    txe = await drv.counters("tx_engine")
    rxe = await drv.counters("rx_engine")
    assert txe["packets"] == total_tx, txe
    assert txe["bytes_lo"] == sum(len(f) for v in sent.values() for f in v), txe
    assert rxe["packets"] == delivered, rxe
    for k in ("drop_disabled", "drop_cq_full", "too_long", "dma_errors"):
        assert rxe[k] == 0, rxe
    for port in range(2):
        pc = await drv.port_counters(port)
        assert pc["tx_frames"] == n_tx * sum(1 for v in txq_port.values() if v == port), pc
        assert pc["rx_frames"] == n_rx, pc
        assert pc["rx_fifo_drops"] == 0 and pc["rx_fcs_errors"] == 0, pc
    assert not drv.errors, drv.errors
    dut._log.info("driver: %s", dict(drv.stats))
    await Timer(1, "us")


def test_nic_traffic():
    run_cocotb(NIC, __name__, fast=True)
