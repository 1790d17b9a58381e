"""The driver core's register work (sw-driver/core: discovery, bring-up, settings,
counters) against the register map as the simulation knows it (offnic_sim.host.regs,
generated from RegMap.scala like the C header the core includes, and the driver model's
regblocks.walk_chain/discover): a BAR0 model lays the map's blocks out in random chains,
the core runs through ctypes, and every register it writes is checked by name and field
against regs.py. Plain pytest, no simulator."""
import asyncio
import ctypes

import pytest

from offnic_sim.host import drvcore, regblocks, regs, rings
from offnic_sim.host.drvcore import RX, TX

UNKNOWN_TYPE = 0x0FF1_7777


class Bar:
    """BAR0 as a word store: blocks' constant registers, counts, RO values a test sets;
    every write is stored and logged (offset, value) in order."""

    def __init__(self, size: int = 1 << 20):
        self.size = size
        self.words: dict[int, int] = {}
        self.writes: list[tuple[int, int]] = []
        self.reads = 0

    def read32(self, off: int) -> int:
        self.reads += 1
        return self.words.get(off, 0)

    def write32(self, off: int, value: int) -> None:
        self.writes.append((off, value))
        self.words[off] = value

    async def aread32(self, off: int) -> int:
        return self.read32(off)

    async def awrite32(self, off: int, value: int) -> None:
        self.write32(off, value)


def layout(rng, bar: Bar, ports: int = 2, odd_blocks: bool = True) -> list[tuple[int, int, int]]:
    """The map's blocks in a random chain (device_id first, eth_ports in port order, each
    aligned to its window as RegBus.layout does), with an unknown type and a known type
    of another major version mixed in. Returns (type, version, offset) in chain order."""
    others = [b for b in regs.BLOCKS.values() if b not in (regs.DEVICE_ID, regs.ETH_PORT)]
    rng.shuffle(others)
    chain = [(regs.DEVICE_ID, regs.DEVICE_ID.version)] + [(b, b.version) for b in others]
    for p in range(ports):  # eth_ports anywhere after device_id, in port order
        at = rng.randint(1 + p, len(chain))
        while any(b is regs.ETH_PORT for b, _ in chain[at:]):
            at = rng.randint(1 + p, len(chain))
        chain.insert(at, (regs.ETH_PORT, regs.ETH_PORT.version))
    if odd_blocks:
        chain.insert(rng.randint(1, len(chain)), (None, 0x0001_0000))                  # unknown type
        chain.insert(rng.randint(1, len(chain)), (regs.RSS, regs.RSS.version + (1 << 16)))  # a newer RSS
    at, placed, port = 0, [], 0
    for b, version in chain:
        window = b.window_bytes if b else 0x40
        at = -(-at // window) * window
        placed.append((b, version, at))
        at += window
    for k, (b, version, off) in enumerate(placed):
        bar.words[off] = b.type_id if b else UNKNOWN_TYPE
        bar.words[off + 4] = version
        bar.words[off + 8] = placed[k + 1][2] if k + 1 < len(placed) else 0
        if b is regs.ETH_PORT:
            bar.words[off + b.regs["port"].offset] = port
            bar.words[off + b.regs["speed_mbps"].offset] = 25000
            port += 1
    return [(b.type_id if b else UNKNOWN_TYPE, v, off) for b, v, off in placed]


def set_sizes(bar: Bar, chain, rng) -> dict[str, int]:
    """count and size registers of every block that has them (first instance of a type)."""
    sizes = {"tx_queues": rng.randint(2, 16), "rx_queues": rng.randint(1, 16), "tx_cqs": 16, "rx_cqs": 16,
             "eqs": rng.randint(1, 8), "msix": rng.randint(1, 8)}
    for type_id, version, off in chain:
        b = regs.BLOCKS.get(type_id)
        if b is None or version >> 16 != b.major:
            continue
        if b.name in sizes:
            bar.words[off + b.regs["count"].offset] = sizes[b.name]
        if b.name == "tx_queues":
            bar.words[off + b.regs["max_segs"].offset] = 16
            bar.words[off + b.regs["desc_cache"].offset] = 128
        if b.name == "tx_engine":
            bar.words[off + b.regs["max_frame"].offset] = 65568
        if b.name == "rss":
            bar.words[off + b.regs["table_size"].offset] = 128
    return sizes


def python_view(bar: Bar):
    walk = asyncio.run(regblocks.walk_chain(bar.aread32))
    found = asyncio.run(regblocks.discover(bar.aread32, bar.awrite32, regs.BLOCKS))
    return walk, found


def make(rng, **kw):
    bar = Bar()
    chain = layout(rng, bar, **kw)
    sizes = set_sizes(bar, chain, rng)
    core = drvcore.Core(bar.read32, bar.write32, bar_len=bar.size)
    return bar, chain, sizes, core


# ---------------------------------------------------------------- discovery

def test_chain_walk_matches_the_driver_model(rng):
    for _ in range(40):
        bar, chain, sizes, core = make(rng, ports=rng.randint(1, 2))
        assert core.walk() == 0
        walk, found = python_view(bar)
        assert [(t, v, o) for t, v, o, _ in core.blocks()] == [(b.type_id, b.version, b.base) for b in walk]
        known = {(b.type.type_id, b.base) for bs in found.values() for b in bs}
        assert {(t, o) for t, _, o, k in core.blocks() if k} == known, f"seed {rng.seed_value}"


def test_probe_finds_blocks_and_sizes(rng):
    for _ in range(40):
        ports = rng.randint(1, 2)
        bar, chain, sizes, core = make(rng, ports=ports)
        assert core.probe() == 0, core.lines
        _, found = python_view(bar)
        hw = core.hw
        first = {name: bs[0].base for name, bs in found.items()}
        assert (hw.queues[TX], hw.queues[RX], hw.cqs[TX], hw.cqs[RX]) == \
            (first["tx_queues"], first["rx_queues"], first["tx_cqs"], first["rx_cqs"])
        assert (hw.eqs, hw.msix, hw.rx_engine, hw.tx_engine, hw.dma, hw.reasm) == \
            (first["eqs"], first["msix"], first["rx_engine"], first["tx_engine"], first["dma"], first["reasm"])
        assert hw.rss == first["rss"]   # the newer-major RSS block was skipped, the known one kept
        assert [hw.port[p] for p in range(hw.n_ports)] == [b.base for b in found["eth_port"]]
        assert hw.n_ports == ports
        assert (hw.n_queues[TX], hw.n_queues[RX], hw.n_eqs, hw.n_msix) == \
            (sizes["tx_queues"], sizes["rx_queues"], sizes["eqs"], sizes["msix"])
        assert (hw.max_segs, hw.desc_cache, hw.max_tx_frame, hw.rss_table_size) == (16, 128, 65568, 128)
        assert not bar.writes, "discovery must not write"


@pytest.mark.parametrize("fault", ["loop", "self_loop", "misaligned", "beyond_bar"])
def test_broken_chains_fail_cleanly(rng, fault):
    bar, chain, sizes, core = make(rng)
    k = rng.randint(2, len(chain) - 2)
    _, _, off = chain[k]
    # (a pointer back to offset 0 would end the chain: 0 is its end mark)
    bar.words[off + 8] = {"loop": chain[rng.randint(1, k - 1)][2], "self_loop": off,
                          "misaligned": chain[k + 1][2] + 2, "beyond_bar": bar.size + 0x1000}[fault]
    assert core.walk() == -1
    assert core.probe() == -1
    assert any("chain broken" in line for _, line in core.lines)
    if fault != "beyond_bar":  # the driver model does not know the BAR's size
        with pytest.raises(RuntimeError):
            python_view(bar)


def test_probe_needs_device_id_first_and_the_queue_blocks(rng):
    bar, chain, sizes, core = make(rng)
    bar.words[4 * 0] = UNKNOWN_TYPE
    assert core.probe() == -2
    bar, chain, sizes, core = make(rng)
    eqs = next(off for t, v, off in chain if t == regs.EQS.type_id)
    bar.words[eqs + 4] = 0x0002_0000   # a major version the core does not know
    assert core.probe() == -2


def test_tx_and_rx_records_share_their_layout():
    """The core addresses TX and RX queue records (and TX/RX CQ records) with one set of
    offsets; the map must keep them equal."""
    for a, b in ((regs.TX_QUEUES, regs.RX_QUEUES), (regs.TX_CQS, regs.RX_CQS)):
        common = set(a.array.regs) & set(b.array.regs)
        assert common >= {"base_lo", "base_hi", "control"}
        for r in common:
            assert a.array.regs[r].offset == b.array.regs[r].offset, r
            for f in b.array.regs[r].fields:
                assert f in a.array.regs[r].fields, (r, f)
        assert (a.array.offset, a.array.stride) == (b.array.offset, b.array.stride)


# ---------------------------------------------------------------- bring-up

def ent(block: regblocks.BlockType, base: int, k: int, reg: str) -> int:
    return base + block.array.reg_offset(k, reg)


def lay(block: regblocks.BlockType, reg: str) -> dict[str, tuple[int, int]]:
    r = block.array.regs[reg] if block.array and reg in block.array.regs else block.regs[reg]
    return {f.name: (f.lsb, f.width) for f in r.fields}


def writes_to(bar: Bar, addr: int) -> list[int]:
    return [v for a, v in bar.writes if a == addr]


def test_event_queue_bring_up(rng):
    for _ in range(20):
        bar, chain, sizes, core = make(rng)
        assert core.probe() == 0
        hw = core.hw
        k = rng.randrange(hw.n_eqs)
        start = rng.getrandbits(16)
        bar.words[ent(regs.EQS, hw.eqs, k, "prod")] = start
        ring = core.ring_alloc(rng.randint(1, 8))
        assert core.lib.offnic_eq_open(core.hw_p, k, ctypes.byref(ring)) == 0
        ctrl = ent(regs.EQS, hw.eqs, k, "control")
        c = lay(regs.EQS, "control")
        assert writes_to(bar, ctrl) == [rings.pack_fields(c, log_size=ring.log_size, enable=0),
                                        rings.pack_fields(c, log_size=ring.log_size, enable=1)]
        assert bar.words[ent(regs.EQS, hw.eqs, k, "base_lo")] | bar.words[ent(regs.EQS, hw.eqs, k, "base_hi")] << 32 \
            == ring.dma
        assert bar.words[ent(regs.EQS, hw.eqs, k, "cons")] == start == ring.cons == ring.prod
        assert core.ring_bytes(ring) == rings.initial_ring(ring.log_size, start), f"seed {rng.seed_value}"
        # enabled last, after base and cons
        order = [a for a, _ in bar.writes]
        assert order.index(ctrl, 1) > order.index(ent(regs.EQS, hw.eqs, k, "base_lo"))
        assert order.index(ctrl, 1) > order.index(ent(regs.EQS, hw.eqs, k, "cons"))
        assert core.lib.offnic_eq_open(core.hw_p, hw.n_eqs, ctypes.byref(ring)) == -3


@pytest.mark.parametrize("kind", [TX, RX])
def test_queue_and_completion_queue_bring_up(rng, kind):
    qblock, cqblock = (regs.TX_QUEUES, regs.TX_CQS) if kind == TX else (regs.RX_QUEUES, regs.RX_CQS)
    for _ in range(20):
        bar, chain, sizes, core = make(rng)
        assert core.probe() == 0
        hw = core.hw
        q = rng.randrange(hw.n_queues[kind])
        eq = rng.randrange(hw.n_eqs)
        port = rng.randrange(hw.n_ports)
        cq_start, q_start = rng.getrandbits(16), rng.getrandbits(16)
        qb, cqb = hw.queues[kind], hw.cqs[kind]
        bar.words[ent(cqblock, cqb, q, "prod")] = cq_start
        bar.words[ent(qblock, qb, q, "cons")] = q_start
        mod_count, mod_us = rng.getrandbits(16), rng.getrandbits(16)
        log = rng.randint(1, 9)
        cring, qring = core.ring_alloc(log), core.ring_alloc(log)
        ctypes.memset(qring.cpu, 0xEE, 16 << log)
        assert core.lib.offnic_cq_open(core.hw_p, kind, q, ctypes.byref(cring), eq, mod_count, mod_us) == 0
        assert core.lib.offnic_queue_open(core.hw_p, kind, q, ctypes.byref(qring), port) == 0

        c = lay(cqblock, "control")
        assert writes_to(bar, ent(cqblock, cqb, q, "control")) == [
            rings.pack_fields(c, log_size=log, enable=0, eq=eq), rings.pack_fields(c, log_size=log, enable=1, eq=eq)]
        assert bar.words[ent(cqblock, cqb, q, "cons")] == cq_start == cring.cons
        assert (bar.words[ent(cqblock, cqb, q, "mod_count")], bar.words[ent(cqblock, cqb, q, "mod_time_us")]) == \
            (mod_count, mod_us)
        assert core.ring_bytes(cring) == rings.initial_ring(log, cq_start)

        qc = lay(qblock, "control")
        extra = {"port": port} if kind == TX else {}
        assert writes_to(bar, ent(qblock, qb, q, "control")) == [
            rings.pack_fields(qc, log_size=log, enable=0, **extra), rings.pack_fields(qc, log_size=log, enable=1, **extra)]
        assert bar.words[ent(qblock, qb, q, "base_lo")] | bar.words[ent(qblock, qb, q, "base_hi")] << 32 == qring.dma
        assert bar.words[ent(qblock, qb, q, "prod")] == q_start == qring.prod == qring.cons
        assert core.ring_bytes(qring) == bytes(16 << log)
        order = [a for a, _ in bar.writes]
        qctrl = ent(qblock, qb, q, "control")
        assert order.index(qctrl) < order.index(ent(qblock, qb, q, "base_lo")) < order.index(qctrl, order.index(qctrl) + 1)

        # descriptors land at the producer index; the doorbell writes it
        d = drvcore.Desc(rng.getrandbits(64), rng.getrandbits(16), 0, 0, 0, 0)
        core.lib.offnic_ring_put_desc(ctypes.byref(qring), ctypes.byref(d))
        at = rings.record_offset(q_start, log)
        assert ctypes.string_at(qring.cpu + at, 16) == rings.pack_desc(rings.Desc(d.addr, d.len))
        core.lib.offnic_queue_doorbell(core.hw_p, kind, q, qring.prod)
        assert bar.words[ent(qblock, qb, q, "prod")] == rings.idx_add(q_start, 1)

        # completions: taken only when new by their phase bit
        cpl = rings.Completion(q, q_start, 60, 0, 0)
        rec = rings.with_phase(rings.pack_cpl(cpl), rings.phase_of(cq_start, log))
        got = drvcore.Cpl()
        assert core.lib.offnic_cq_next(ctypes.byref(cring), ctypes.byref(got)) == 0
        ctypes.memmove(cring.cpu + rings.record_offset(cq_start, log), rec, 16)
        assert core.lib.offnic_cq_next(ctypes.byref(cring), ctypes.byref(got)) == 1
        assert (got.queue, got.index, got.len) == (q, q_start, 60)
        core.lib.offnic_cq_done(core.hw_p, kind, q, rings.idx_add(cq_start, 1), 1)
        assert bar.words[ent(cqblock, cqb, q, "cons")] == rings.idx_add(cq_start, 1)
        assert writes_to(bar, ent(cqblock, cqb, q, "arm"))[-1] == 1

        # tear-down clears only the enable bit
        core.lib.offnic_queue_close(core.hw_p, kind, q)
        core.lib.offnic_cq_close(core.hw_p, kind, q)
        assert bar.words[qctrl] == rings.pack_fields(qc, log_size=log, enable=0, **extra)
        assert bar.words[ent(cqblock, cqb, q, "control")] == rings.pack_fields(c, log_size=log, enable=0, eq=eq)


def test_queue_wait_idle(rng):
    bar, chain, sizes, core = make(rng)
    assert core.probe() == 0
    st = ent(regs.TX_QUEUES, core.hw.queues[TX], 1, "status")
    bar.words[st] = rings.pack_fields(lay(regs.TX_QUEUES, "status"), fetching=1)
    assert core.lib.offnic_queue_wait_idle(core.hw_p, TX, 1, 100) == -3
    bar.words[st] = 0
    assert core.lib.offnic_queue_wait_idle(core.hw_p, TX, 1, 100) == 0


# ---------------------------------------------------------------- settings

def test_settings_write_what_the_map_says(rng):
    bar, chain, sizes, core = make(rng)
    assert core.probe() == 0
    hw, lib, h = core.hw, core.lib, core.hw_p
    rss = regs.RSS

    key = rng.randbytes(40)
    assert lib.offnic_rss_set_key(h, key) == 0
    assert [bar.words[hw.rss + rss.regs[f"key_{i}"].offset] for i in range(10)] == rings.rss_key_words(key)
    back = ctypes.create_string_buffer(40)
    lib.offnic_rss_get_key(h, back)
    assert back.raw == key

    n = rng.randint(1, 128)
    table = [rng.randrange(hw.n_queues[RX]) for _ in range(n)]
    bar.writes.clear()
    assert lib.offnic_rss_set_table(h, (drvcore.u32 * n)(*table), n) == 0
    il = lay(rss, "indir_write")
    assert writes_to(bar, hw.rss + rss.regs["indir_write"].offset) == \
        [rings.pack_fields(il, index=i, queue=table[i % n]) for i in range(128)]
    assert lib.offnic_rss_set_table(h, (drvcore.u32 * 1)(hw.n_queues[RX]), 1) == -3  # no such queue
    ctl = rings.pack_fields(lay(rss, "control"), enable=1, ipv4=1, tcp=1)
    assert lib.offnic_rss_set_control(h, ctl) == 0 and lib.offnic_rss_get_control(h) == ctl

    for kind, blk in ((TX, regs.TX_CQS), (RX, regs.RX_CQS)):
        q, cnt, us = rng.randrange(16), rng.getrandbits(16), rng.getrandbits(16)
        assert lib.offnic_set_moderation(h, kind, q, cnt, us) == 0
        assert (bar.words[ent(blk, hw.cqs[kind], q, "mod_count")],
                bar.words[ent(blk, hw.cqs[kind], q, "mod_time_us")]) == (cnt, us)
        gc, gu = drvcore.u32(), drvcore.u32()
        assert lib.offnic_get_moderation(h, kind, q, ctypes.byref(gc), ctypes.byref(gu)) == 0
        assert (gc.value, gu.value) == (cnt, us)
        assert lib.offnic_set_moderation(h, kind, q, 1 << 16, 0) == -3

    dq = rx_engine_reg = hw.rx_engine + regs.RX_ENGINE.regs["default_queue"].offset
    bar.words[dq] = 0
    qs = [rng.randrange(hw.n_queues[RX]) for _ in range(hw.n_ports)]
    for port, q in enumerate(qs):
        assert lib.offnic_set_default_queue(h, port, q) == 0
    assert bar.words[rx_engine_reg] == rings.pack_fields(lay(regs.RX_ENGINE, "default_queue"),
                                                         **{f"port{p}": q for p, q in enumerate(qs)})

    mtus = [rng.randint(68, 65535) for _ in range(hw.n_ports)]
    for port, m in enumerate(mtus):
        assert lib.offnic_set_wire_mtu(h, port, m) == 0
    assert bar.words[hw.tx_engine + regs.TX_ENGINE.regs["mtu"].offset] == \
        rings.pack_fields(lay(regs.TX_ENGINE, "mtu"), **{f"port{p}": m for p, m in enumerate(mtus)})
    assert lib.offnic_set_wire_mtu(h, 0, 67) == -3

    eth = regs.ETH_PORT
    for port in range(hw.n_ports):
        mac = bytes([rng.getrandbits(8) & 0xFE]) + rng.randbytes(5)
        assert lib.offnic_port_set_mac(h, port, mac) == 0
        v = int.from_bytes(mac, "big")  # the driver model's set_mac
        base = hw.port[port]
        assert (bar.words[base + eth.regs["mac_hi"].offset], bar.words[base + eth.regs["mac_lo"].offset]) == \
            (v >> 32, v & 0xFFFF_FFFF)
        assert lib.offnic_port_set_mac(h, port, b"\x01" + mac[1:]) == -3   # a group address
        promisc, allmulti, bcast, mc = rng.getrandbits(1), rng.getrandbits(1), rng.getrandbits(1), rng.getrandbits(64)
        assert lib.offnic_port_set_rx_filter(h, port, promisc, allmulti, bcast, mc) == 0
        assert bar.words[base + eth.regs["rx_filter"].offset] == rings.pack_fields(
            lay(eth, "rx_filter"), promisc=promisc, allmulti=allmulti, broadcast=bcast)
        assert bar.words[base + eth.regs["mc_hash_lo"].offset] | bar.words[base + eth.regs["mc_hash_hi"].offset] << 32 == mc
        assert lib.offnic_port_set_max_frame(h, port, 9022) == 0
        assert bar.words[base + eth.regs["max_frame_len"].offset] == 9022
        assert lib.offnic_port_speed_mbps(h, port) == 25000

    addr = rng.getrandbits(64)
    assert lib.offnic_reasm_post(h, 7, addr) == 0
    r = regs.REASM
    assert writes_to(bar, hw.reasm + r.regs["buf_post"].offset) == [7]
    assert bar.words[hw.reasm + r.regs["buf_addr_lo"].offset] | bar.words[hw.reasm + r.regs["buf_addr_hi"].offset] << 32 \
        == addr
    order = [a for a, _ in bar.writes]
    assert order.index(hw.reasm + r.regs["buf_post"].offset) > order.index(hw.reasm + r.regs["buf_addr_hi"].offset)

    m = regs.MSIX
    assert lib.offnic_msix_set(h, 0, addr, 0x1234, 0) == 0
    assert (bar.words[ent(m, hw.msix, 0, "addr_lo")], bar.words[ent(m, hw.msix, 0, "addr_hi")],
            bar.words[ent(m, hw.msix, 0, "data")], bar.words[ent(m, hw.msix, 0, "control")]) == \
        (addr & 0xFFFF_FFFF, addr >> 32, 0x1234, 0)


# ---------------------------------------------------------------- counters

def counter_register(name: str) -> tuple[regblocks.BlockType, str, bool]:
    """The map's block and register a core counter reads (mac_x: eth_port x, nic_...: by
    prefix), and whether it is a lo/hi pair."""
    prefixes = [("mac_", regs.ETH_PORT), ("nic_tx_", regs.TX_ENGINE), ("nic_rx_", regs.RX_ENGINE),
                ("nic_eq_", regs.EQS), ("nic_dma_", regs.DMA), ("nic_reasm_", regs.REASM)]
    for pre, blk in prefixes:
        if name.startswith(pre):
            reg = name[len(pre):]
            break
    else:
        raise AssertionError(name)
    if f"{reg}_lo" in blk.regs:
        return blk, f"{reg}_lo", True
    return blk, reg, False


def test_counters_read_the_right_registers_and_survive_wraps(rng):
    bar, chain, sizes, core = make(rng)
    assert core.probe() == 0
    hw = core.hw
    names, last, total = core.counters()
    assert len(names) == len(set(names))
    where = []
    for i, name in enumerate(names):
        port = int(name[4]) if name.startswith("port") else None
        blk, reg, wide = counter_register(name.split(".", 1)[-1])
        assert blk.regs[reg].access == "ro", name
        base = hw.port[port] if port is not None else next(
            off for t, v, off in chain if t == blk.type_id and v == blk.version)
        where.append((base + blk.regs[reg].offset, wide))
    expect = [0] * len(names)
    for step in range(6):
        for i, (addr, wide) in enumerate(where):
            if wide:
                v = rng.getrandbits(48)
                bar.words[addr], bar.words[addr + 4] = v & 0xFFFF_FFFF, v >> 32
                expect[i] = v
            else:
                moved = rng.choice([0, 1, rng.getrandbits(31)])   # less than a wrap between reads
                bar.words[addr] = (bar.words.get(addr, 0) + moved) & 0xFFFF_FFFF
                expect[i] += moved
        core.lib.offnic_counters_update(core.hw_p, last, total)
        assert list(total) == expect, f"seed {rng.seed_value}, step {step}"
    assert not bar.writes, "reading counters must not write"
