"""The whole NIC's IPv4 reassembly offload (docs/frag.md), through the XGMII ports and
PCIe (driver model, 1 us host reads), against the hardware-exact model
`reasm_model.NicReassembler` and a Linux-semantics `ipfrag.Reassembler` standing in for
the host stack on the host path.

- exact: random datagrams (MTU 576/1500/9000, forward, reverse and random order,
  interleaved, duplicates, VLAN tags) and the hostile sequences of reasm_frames into
  port 0. The NIC must complete exactly the model's reassembled datagrams, each byte-exact
  after the driver's header fix-up with the IP payload's sum in the completion; every
  other frame the host gets must be exactly a frame the model left to the host
  (non-fragments and bypassed fragments, in order); the `reasm` counters equal the
  model's; buffers come back to the pool.
- both ports at once, good traffic from different sources on each, RSS on (fragments
  hash on their addresses): every datagram arrives exactly once, byte-exact, through
  the NIC or, when contexts ran out, through the host path and software reassembly.
- off: with `reasm.control` 0 every fragment reaches the host unchanged.
- CQ full: the host stops taking completions (its vector masked) while datagrams
  complete; the completions beyond the CQ's room are parked, none is lost: once the host
  drains the CQ every datagram arrives once, byte-exact, in order; plain frames meanwhile
  are delivered or dropped and counted (`drop_cq_full`). A queue disabled while
  completions are parked drops them (`cpl_dropped`) and the buffers return to the pool.
"""
import random
import sys
from pathlib import Path

import cocotb
from cocotb.triggers import Timer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "offload"))

from reasm_frames import datagram, eth, hostile, random_traffic  # noqa: E402

from offnic_sim.net import ipfrag  # noqa: E402
from offnic_sim.frag import reasm_model  # noqa: E402
from offnic_sim.harness.runner import run_cocotb  # noqa: E402
from offnic_sim.harness.hw import Design  # noqa: E402
from offnic_sim.fast.fast_tb import FastNicTB  # noqa: E402

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
STATS = [name for name in ("fragments", "reassembled", "queued", "duplicate", "trimmed", "overlap", "bad_last",
                           "beyond_end", "empty", "oversize", "ecn_mix", "too_many_frags", "timeout", "evicted",
                           "bypassed", "bad_header", "bad_checksum", "truncated")]
MODEL_NAME = {"fragments": ipfrag.REQUESTS}


def ip_of(frame: bytes) -> bytes:
    h = 18 if frame[12:14] == b"\x81\x00" else 14
    return frame[h:]


def normal(frame: bytes) -> bytes:
    """A frame as the host stack sees it: the IPv4 packet without link padding, or the
    frame itself when it is not IPv4."""
    h = 18 if frame[12:14] == b"\x81\x00" else 14
    if frame[h - 2:h] != b"\x08\x00":
        return frame
    try:
        return frame[h:h + ipfrag.parse(frame[h:]).tot_len]
    except ValueError:
        return frame[h:]


async def state(drv) -> str:
    """What the NIC counted, for a failure message."""
    out = [f"reasm {await drv.counters('reasm')}", f"rx_engine {await drv.counters('rx_engine')}"]
    for p in range(2):
        out.append(f"port {p} {await drv.port_counters(p)}")
    return "; ".join(out)


async def setup(dut, *, rss: bool = False, buffers: int = 64, cq_size: int | None = None) -> FastNicTB:
    tb = FastNicTB(dut)
    await tb.init()
    drv = tb.drv
    for b in drv.blocks["eth_port"]:
        await b.write("max_frame_len", 9018 + 4)
    for q in range(4):
        await drv.open_rx_queue(q, size=256, buf_size=9216, cq_size=cq_size)
    if rss:
        await drv.set_rss(table=[0, 1, 2, 3], enable=True)
    else:
        await drv.set_rss(enable=False)
        for port in range(2):
            await drv.set_default_queue(port=port, q=port)
    await drv.enable_reasm(buffers, timeout_us=100_000)
    await Timer(40, "us")  # after reset the reassembler clears its bitmaps for 33 us (fragments bypass)
    return tb


async def receive_all(drv, queues, until, timeout_us: float = 3000, settle_us: float = 5, take=None) -> list:
    """RX packets of `queues` until `until(packets)` holds, then `settle_us` more; each
    batch also goes to `take`."""
    got = []
    waited = 0
    while not until(got) and waited < timeout_us:
        await Timer(2, "us")
        waited += 2
        new = []
        for q in queues:
            while drv.rx_pending(q):
                new.append(await drv.recv(q))
        got += new
        if take:
            take(new)
    await Timer(settle_us, "us")
    new = []
    for q in queues:
        while drv.rx_pending(q):
            new.append(await drv.recv(q))
    got += new
    if take:
        take(new)
    return got


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def reasm_exact(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    drv = tb.drv
    frames = hostile(rng) + random_traffic(rng, 16, 16_000) + hostile(rng)
    model = reasm_model.NicReassembler(contexts=64, buckets=256, buffers=64, timeout=100_000)
    model.hash_key = reasm_model.DEFAULT_HASH_KEY
    want_reasm, want_host = [], []
    for f in frames:
        ip = ip_of(f)
        h = 18 if f[12:14] == b"\x81\x00" else 14
        if f[h - 2:h] != b"\x08\x00":
            want_host.append(normal(f))
            continue
        out = model.push(ip)
        if model.last == ipfrag.REASSEMBLED:
            want_reasm.append(out[0])
            model.post(1)  # the driver gives the buffer back
        elif model.last in (ipfrag.NOT_FRAGMENT, ipfrag.BYPASSED):
            want_host.append(normal(f))
    for f in frames:
        await tb.ports[0].send(f)
    got = await receive_all(drv, [0], lambda g: len(g) >= len(want_reasm) + len(want_host))
    reasm = [p for p in got if p.reassembled]
    host = [p for p in got if not p.reassembled]
    assert all(p.ok for p in got), [p.status for p in got]
    if len(reasm) != len(want_reasm):
        raise AssertionError(f"{len(reasm)} datagrams reassembled, model {len(want_reasm)}; {len(host)} host frames, "
                             f"model {len(want_host)}; {await state(drv)}; model {dict(model.counters)}")
    for p, want in zip(reasm, want_reasm):
        assert ip_of(p.data) == want, "a reassembled datagram differs from the model's"
        ip = ipfrag.parse(want)
        assert p.csum == ipfrag.ones_sum16(want[ip.ihl:]), "the completion's payload sum"
    assert [normal(p.data) for p in host] == want_host, "host-path frames differ from the model's"
    c = await drv.counters("reasm")
    want = {k: model.counters[MODEL_NAME.get(k, k)] for k in STATS}
    assert {k: c[k] for k in STATS} == want, f"counters: hw {c}, model {want}"
    assert c["cpl_dropped"] == 0 and c["cpl_parked"] == 0 and c["open"] == model.pending
    await Timer(5, "us")
    assert await drv.block("reasm").read("pool") == 64 - model.pending
    assert not drv.errors, drv.errors
    dut._log.info("reasm_exact: %d frames, %d datagrams reassembled, %d to the host", len(frames), len(reasm),
                  len(host))


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def reasm_both_ports(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut, rss=True, buffers=48)
    drv = tb.drv
    traffic = {p: random_traffic(rng, 40, 12_000, dups=0, mtus=(1500, 9000), net=20 + p) for p in range(2)}
    want = {}
    for p in range(2):
        r = ipfrag.Reassembler(max_dist=0)
        for f in traffic[p]:
            for d in r.push(ip_of(f)):
                want[ipfrag.parse(d).key] = d

    async def port(p):
        for f in traffic[p]:
            await tb.ports[p].send(f)
    t0 = cocotb.start_soon(port(0))
    await port(1)
    await t0
    host_stack = ipfrag.Reassembler(max_dist=0)
    got = {}
    dup = []

    def take(pkts):
        for pkt in pkts:
            ds = [ip_of(pkt.data)] if pkt.reassembled else host_stack.push(ip_of(pkt.data))
            for d in ds:
                k = ipfrag.parse(d).key
                (dup if k in got else []).append(k)
                got[k] = d
    await receive_all(drv, range(4), lambda g: len(got) >= len(want), take=take)
    assert not dup, f"datagrams delivered twice: {dup[:3]}"
    if got.keys() != want.keys():
        raise AssertionError(f"{len(got)} datagrams of {len(want)} arrived; {await state(drv)}")
    for k, d in want.items():
        assert got[k] == d, "a datagram differs"
    c = await drv.counters("reasm")
    assert c["reassembled"] > 0 and c["cpl_dropped"] == 0 and c["cpl_parked"] == 0, c
    assert not drv.errors, drv.errors
    dut._log.info("reasm_both_ports: %d datagrams, %d by the NIC, %d fragments bypassed", len(want),
                  c["reassembled"], c["bypassed"])


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def reasm_off(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    drv = tb.drv
    await drv.block("reasm").write("control", 0)
    frames = random_traffic(rng, 4, 5000, dups=0, mtus=(1500,))
    for f in frames:
        await tb.ports[0].send(f)
    got = await receive_all(drv, [0], lambda g: len(g) >= len(frames))
    # (frames under 60 bytes, such as a short last fragment, arrive with the MAC's padding)
    assert [p.data for p in got] == [f + bytes(max(0, 60 - len(f))) for f in frames]
    assert not any(p.reassembled for p in got)
    assert (await drv.counters("reasm"))["fragments"] == 0


async def wait_parked(drv, n_min: int, timeout_us: float = 2000) -> int:
    """The NIC's parked completions once at least `n_min` and steady for 20 us."""
    r = drv.block("reasm")
    last, steady, waited = -1, 0, 0
    while waited < timeout_us:
        await Timer(5, "us")
        waited += 5
        now = await r.read("parked")
        steady = steady + 5 if now == last else 0
        last = now
        if now >= n_min and steady >= 20:
            return now
    raise AssertionError(f"{last} completions parked, expected {n_min} or more; {await state(drv)}")


async def pool_full(drv, n: int) -> None:
    """Wait (up to 100 us) until the driver has posted every reassembly buffer back."""
    for _ in range(20):
        if await drv.block("reasm").read("pool") == n:
            return
        await Timer(5, "us")
    raise AssertionError(f"reassembly buffers not all back: {await state(drv)}")


@cocotb.test(timeout_time=30, timeout_unit="ms")
async def reasm_cq_full(dut):
    rng = random.Random(random.getrandbits(64))
    CQ, N, BUFS = 16, 48, 64
    tb = await setup(dut, buffers=BUFS, cq_size=CQ)
    drv = tb.drv
    rxcq = drv.entry("rx_cqs", 0)
    mtus = [rng.choice((1500, 9000)) for _ in range(N)]
    dgrams = [datagram(rng, rng.randrange(mtu, 20_000), ident=i) for i, mtu in enumerate(mtus)]  # all cut
    plain = [eth(datagram(rng, rng.randrange(1, 1400), ident=1000 + i)) for i in range(8)]
    frames, sent_plain = [], []
    for i, d in enumerate(dgrams):
        frags = ipfrag.fragment(d, mtus[i])
        rng.shuffle(frags)
        frames += [eth(f, rng.random() < 0.2) for f in frags]
        if i % 6 == 5:  # a plain (unfragmented) frame now and then: the host path goes on
            frames.append(plain[len(sent_plain)])
            sent_plain.append(plain[len(sent_plain)])

    # 1. The host takes no completions: the CQ fills, the rest of the datagrams park.
    await drv.set_vector_mask(0, True)
    for f in frames:
        await tb.ports[0].send(f)
    await tb.ports[0].source.wait()
    parked = await wait_parked(drv, 1)
    c = await drv.counters("reasm")
    rxe = await drv.counters("rx_engine")
    assert await rxcq.read("prod") - await rxcq.read("cons") == CQ, "the CQ is full"
    assert c["reassembled"] == N and c["cpl_dropped"] == 0, c
    assert c["cpl_parked"] == parked and parked >= N - CQ, (c, parked)
    assert c["pool"] == BUFS - N, "each datagram holds its buffer until completed"
    plain_in_cq = CQ - (N - parked)
    assert rxe["drop_cq_full"] == len(sent_plain) - plain_in_cq, rxe

    # 2. The host drains the CQ: every datagram, once, byte-exact, in completion order.
    await drv.set_vector_mask(0, False)
    got = await receive_all(drv, [0], lambda g: sum(p.reassembled for p in g) >= N)
    reasm = [p for p in got if p.reassembled]
    host = [p for p in got if not p.reassembled]
    assert all(p.ok for p in got), [p.status for p in got]
    assert len(reasm) == N, f"{len(reasm)} of {N} datagrams arrived; {await state(drv)}"
    for k, (p, d) in enumerate(zip(reasm, dgrams)):
        assert ip_of(p.data) == d, f"datagram {k} differs (or out of order)"
        assert p.csum == ipfrag.ones_sum16(d[ipfrag.parse(d).ihl:]), "the completion's payload sum"
    assert len(host) == plain_in_cq and all(normal(p.data) in [normal(f) for f in sent_plain] for p in host)
    await pool_full(drv, BUFS)
    c = await drv.counters("reasm")
    assert c["parked"] == 0 and c["cpl_dropped"] == 0, c

    # 3. A queue disabled while completions are parked: they are dropped and counted, their
    # buffers go back to the pool; the CQ's own completions still arrive.
    M = 6
    more = [datagram(rng, rng.randrange(1500, 9000), ident=2000 + i) for i in range(CQ + M)]
    await drv.set_vector_mask(0, True)
    for d in more:
        for f in ipfrag.fragment(d, 1500):
            await tb.ports[0].send(eth(f))
    await tb.ports[0].source.wait()
    assert await wait_parked(drv, M) == M
    await drv.enable_queue("rx", 0, False)
    await Timer(10, "us")
    c = await drv.counters("reasm")
    assert c["parked"] == 0 and c["cpl_dropped"] == M and c["pool"] == BUFS - CQ, c
    await drv.enable_queue("rx", 0, True)
    await drv.set_vector_mask(0, False)
    got = await receive_all(drv, [0], lambda g: len(g) >= CQ)
    assert [ip_of(p.data) for p in got] == more[:CQ], "the completions the CQ held"
    await pool_full(drv, BUFS)
    assert not drv.errors, drv.errors
    dut._log.info("reasm_cq_full: %d datagrams, %d completions parked behind a %d-entry CQ, all delivered; "
                  "%d plain frames dropped (drop_cq_full)", N, parked, CQ, rxe["drop_cq_full"])


def test_nic_reasm():
    run_cocotb(NIC, __name__, fast=True)
