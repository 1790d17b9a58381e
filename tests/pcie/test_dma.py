"""The DMA engine (pcie.DmaTestTop: DmaRead + DmaWrite + a 64 KiB RAM) against
cocotbext-pcie's UltraScale+ PCIe model and root complex.

Data is checked end to end: host memory -> RAM by read descriptors, RAM -> other host
memory by write descriptors, and the host memory compared byte for byte (every byte of
the destination region, so stray writes are caught too), with random host and RAM
alignments, lengths from 1 B to 16 KiB, many descriptors in flight, random back-pressure
on the descriptor and status streams, several max payload / max read request sizes,
completions split at every RCB and reordered across tags. Every RQ request is checked
against the size and 4 KiB rules. Errors: reads of host addresses with no memory (UR),
of unallocated memory (CA), poisoned, lost (timeout) and malformed completions,
completions nobody asked for, invalid descriptors; the engine must keep working after
each. A second build with small pools (8 tags, 4 read descriptors, 2 write statuses, one
4 KiB read's worth of completion credit, one-cycle RAM) runs the copies again. Throughput
for 64 KiB transfers is measured and logged.
"""
import random

import cocotb
from cocotb.triggers import ClockCycles

from dma_tb import (ABORT, BAD_DESC, CLOCK_NS, ERROR_NAMES, MALFORMED, OK, POISONED, RAM_BYTES, TIMEOUT,
                    UNSUPPORTED, DmaTB, Desc)
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

TIMEOUT_CYCLES = 5000  # the bench's completion timeout: 20 us
DESIGN = Design.of("pcie.DmaTestTop", ram_addr_bits=16, tags=32, desc_slots=32,
                   cpl_timeout_cycles=TIMEOUT_CYCLES, ram_read_latency=2)

# The same engine with small pools and a one-cycle RAM: tags, descriptor slots, completion
# credits and write statuses all run out often.
SMALL = Design.of("pcie.DmaTestTop", ram_addr_bits=16, tags=8, desc_slots=4, cpl_timeout_cycles=TIMEOUT_CYCLES,
                  cpl_buffer_credits=512, ram_read_latency=1, status_depth=2)

SCRATCH = RAM_BYTES - 64  # RAM bytes kept for flush reads
HALF = SCRATCH // 2


def n_tlps(host: int, length: int, size: int) -> int:
    """TLPs for `length` bytes at `host` cut at multiples of `size`."""
    return 0 if length == 0 else (host + length - 1) // size - host // size + 1


def random_len(max_len: int) -> int:
    r = random.random()
    if r < 0.15:
        return random.randint(1, 8)
    if r < 0.45:
        return random.randint(1, 256)
    if r < 0.8:
        return random.randint(257, min(4096, max_len))
    return random.randint(1, max_len)


def layout(base: int, size: int, count: int, max_len: int) -> list[tuple[int, int]]:
    """Up to `count` non-overlapping (offset, length) pieces in [base, base + size), random
    lengths and gaps."""
    pieces, pos = [], base
    for _ in range(count):
        n = random_len(max_len)
        pos += random.choice([0, 0, random.randint(1, 64)])
        if pos + n > base + size:
            break
        pieces.append((pos, n))
        pos += n
    return pieces


class Copier:
    """Host source region -> RAM -> host destination region, with models of the RAM and
    of the destination, checked byte for byte."""

    def __init__(self, tb: DmaTB, src_size: int = 1 << 20, dst_size: int = 1 << 20):
        self.tb = tb
        self.src, self.src_mem = tb.alloc(src_size)
        self.dst, self.dst_mem = tb.alloc(dst_size)
        self.src_bytes = bytes(self.src_mem)
        self.src_size, self.dst_size = src_size, dst_size
        self.ram = bytearray(RAM_BYTES)  # model of the RAM (valid once filled)
        self.dst_model = bytearray(self.dst_mem)
        self.reads = self.writes = 0  # TLPs expected
        self.rd_descs = self.wr_descs = 0

    async def fill_ram(self) -> int:
        """The whole RAM from the host (one 64 KiB descriptor); returns the cycles it took."""
        t = self.tb.tag()
        self.tb.rd.send(Desc(self.src, 0, RAM_BYTES, t))
        assert (await self.tb.rd_st.wait_for([t]))[t] == OK
        self.ram[:] = self.src_bytes[:RAM_BYTES]
        self.count_read(self.src, RAM_BYTES)
        return self.tb.rd_st_cycles(t)

    def count_read(self, host: int, n: int) -> None:
        self.reads += n_tlps(host, n, self.tb.tap.mrrs)
        self.rd_descs += 1

    def count_write(self, host: int, n: int) -> None:
        self.writes += n_tlps(host, n, self.tb.tap.mps)
        self.wr_descs += 1

    def issue_reads(self, pieces) -> dict[int, tuple[int, int, int]]:
        """Read descriptors filling RAM pieces from random host offsets."""
        sent = {}
        for ram, n in pieces:
            off = random.randint(0, self.src_size - n)
            t = self.tb.tag()
            self.tb.rd.send(Desc(self.src + off, ram, n, t))
            sent[t] = (off, ram, n)
            self.count_read(self.src + off, n)
        return sent

    async def finish_reads(self, sent) -> None:
        errors = await self.tb.rd_st.wait_for(sent)
        bad = {t: ERROR_NAMES[e] for t, e in errors.items() if e != OK}
        assert not bad, f"read descriptors failed: {bad}"
        for off, ram, n in sent.values():
            self.ram[ram:ram + n] = self.src_bytes[off:off + n]

    def issue_writes(self, pieces) -> list[int]:
        """Write descriptors copying (part of) each RAM piece to the destination region."""
        tags, pos = [], random.randint(0, 64)
        for ram, n in pieces:
            if random.random() < 0.5 and n > 1:
                a = random.randint(0, n - 1)
                b = random.randint(a + 1, n)
                ram, n = ram + a, b - a
            pos += random.randint(0, 40)
            if pos + n > self.dst_size:
                break
            t = self.tb.tag()
            self.tb.wr.send(Desc(self.dst + pos, ram, n, t))
            self.dst_model[pos:pos + n] = self.ram[ram:ram + n]
            self.count_write(self.dst + pos, n)
            tags.append(t)
            pos += n
        return tags

    async def finish_writes(self, tags) -> None:
        errors = await self.tb.wr_st.wait_for(tags)
        assert all(e == OK for e in errors.values()), f"write descriptors failed: {errors}"
        assert self.tb.wr_st.order[-len(tags):] == tags, "write statuses out of descriptor order"
        await self.flush()
        self.check_dst()

    async def flush(self) -> None:
        await self.tb.flush_writes(self.src, SCRATCH)
        self.ram[SCRATCH:SCRATCH + 4] = self.src_bytes[:4]
        self.count_read(self.src, 4)

    def check_dst(self) -> None:
        got = bytes(self.dst_mem)
        if got != self.dst_model:
            first = next(i for i in range(len(got)) if got[i] != self.dst_model[i])
            raise AssertionError(f"host memory differs at destination offset {first:#x}: "
                                 f"got {got[first:first + 16].hex()} expected {self.dst_model[first:first + 16].hex()}")

    async def rounds(self, count: int, per_round: int, max_len: int = 16384) -> None:
        """Reads into one RAM half while the other half's writes go out, alternating."""
        prev = None
        for r in range(count + 1):
            sent = None
            if r < count:
                pieces = layout(HALF * (r % 2), HALF, per_round, max_len)
                sent = self.issue_reads(pieces)
            if prev is not None:
                await self.finish_writes(self.issue_writes(prev))
            if sent is not None:
                await self.finish_reads(sent)
                prev = [(ram, n) for _, ram, n in sent.values()]

    async def check_whole_ram(self) -> int:
        """Write the whole RAM to host memory and compare with the model (catches stray RAM
        writes anywhere); returns the cycles the 64 KiB write descriptor took."""
        t = self.tb.tag()
        self.tb.wr.send(Desc(self.dst, 0, RAM_BYTES, t))
        assert (await self.tb.wr_st.wait_for([t]))[t] == OK
        cycles = self.tb.wr_st_cycles(t)
        self.dst_model[:RAM_BYTES] = self.ram
        self.count_write(self.dst, RAM_BYTES)
        await self.flush()
        self.check_dst()
        return cycles

    def check_counts(self) -> None:
        s = self.tb.stats
        assert s["stat_rd_req"] == self.reads == self.tb.tap.reads, \
            f"read requests: counted {s['stat_rd_req']}, on RQ {self.tb.tap.reads}, expected {self.reads}"
        assert s["stat_wr_req"] == self.writes == self.tb.tap.writes, \
            f"write requests: counted {s['stat_wr_req']}, on RQ {self.tb.tap.writes}, expected {self.writes}"
        assert s["stat_rd_done"] == self.rd_descs and s["stat_wr_done"] == self.wr_descs
        assert s["stat_rd_cpl"] >= s["stat_rd_req"]


def gbps(nbytes: int, cycles: int) -> float:
    return nbytes * 8 / (cycles * CLOCK_NS)


# Copy configurations: PCIe sizes, how the host answers (completion size, one completion
# per 64-byte RCB, reordering across tags), and idle/stall fractions on every stream.
COPY_CONFIGS = [
    dict(mps=256, mrrs=512, host_mps=256),
    dict(mps=128, mrrs=128, host_mps=128, rcb=True, reorder=0.3, desc_idle=0.3, status_stall=0.5),
    dict(mps=512, mrrs=4096, host_mps=512, reorder=0.6, status_stall=0.3, rc_idle=0.3, rq_stall=0.5),
    dict(mps=256, mrrs=1024, host_mps=128, rcb=True, reorder=0.2, desc_idle=0.5, rq_stall=0.3),
    dict(mps=128, mrrs=2048, host_mps=256, status_stall=0.7, rc_idle=0.5),
    dict(mps=512, mrrs=256, host_mps=256, rcb=True, reorder=0.5, desc_idle=0.1, status_stall=0.2,
         rc_idle=0.2, rq_stall=0.2),
]


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def copy_random(dut):
    tb = DmaTB(dut)
    await tb.init()
    await tb.set_sizes(256, 512)
    cp = Copier(tb)
    await cp.fill_ram()
    for c in COPY_CONFIGS:
        await tb.set_sizes(c["mps"], c["mrrs"], c["host_mps"], c.get("rcb", False))
        tb.tap.reorder = c.get("reorder", 0.0)
        tb.back_pressure(c.get("desc_idle", 0.0), c.get("status_stall", 0.0), c.get("rc_idle", 0.0),
                         c.get("rq_stall", 0.0))
        tb.tap.max_in_flight = 0
        await cp.rounds(3, 32)
        dut._log.info("%s: ok, up to %d reads in flight, %d completions reordered so far", c,
                      tb.tap.max_in_flight, tb.tap.reordered)
        tb.tap.reorder = 0.0
        await tb.quiesce()
    tb.back_pressure(0.0, 0.0)
    await cp.check_whole_ram()
    cp.check_counts()
    s = tb.stats
    assert s["stat_rd_unexpected"] == 0 and s["stat_rd_done_error"] == 0 and s["stat_wr_done_error"] == 0
    assert tb.rq_hold.stalls > 0, "RQ was never back-pressured: the hold check saw nothing"
    assert tb.tap.reordered > 100, "completions were hardly reordered"
    dut._log.info("stats: %s", s)


# Host addresses that answer badly: nothing there at all (the root complex answers
# Unsupported Request), and inside the host memory pool but not allocated (the memory
# read fails: Completer Abort).
NO_MEMORY = 0x40_0000_0000
UNALLOCATED = 0x7000_0000
ERROR_STATS = ["stat_rd_err_status", "stat_rd_err_poisoned", "stat_rd_err_timeout", "stat_rd_err_malformed",
               "stat_rd_unexpected"]
BAD_RAM = (HALF, HALF + HALF // 2)  # RAM the failing reads land in (its contents are then unknown)


@cocotb.test(timeout_time=60, timeout_unit="ms")
async def errors_and_recovery(dut):
    tb = DmaTB(dut)
    await tb.init()
    await tb.set_sizes(256, 512)
    cp = Copier(tb, src_size=256 << 10, dst_size=256 << 10)
    await cp.fill_ram()
    poison, _ = tb.alloc(8192)
    tb.tap.poison_ranges.append((poison, poison + 8192))
    lost, _ = tb.alloc(8192)
    tb.tap.drop_ranges.append((lost, lost + 8192))
    garbled, _ = tb.alloc(8192)
    tb.tap.bad_count_ranges.append((garbled, garbled + 8192))
    edge, _ = tb.alloc(64 << 10)  # the last allocation: unallocated pool memory follows it
    edge_end = edge + (64 << 10)
    tb.back_pressure(0.2, 0.3)
    tb.tap.reorder = 0.3

    cases = [  # what, host address, length, expected status, the statistic that must move
        ("no memory", NO_MEMORY + 0x123, 100, UNSUPPORTED, "stat_rd_err_status"),
        ("no memory, 10 requests", NO_MEMORY + 5, 5000, UNSUPPORTED, "stat_rd_err_status"),
        ("unallocated memory", UNALLOCATED + 1, 3000, ABORT, "stat_rd_err_status"),
        ("runs off the end of host memory", edge_end - 700, 1400, ABORT, "stat_rd_err_status"),
        ("poisoned completions", poison + 3, 2000, POISONED, "stat_rd_err_poisoned"),
        ("completions lost", lost + 7, 700, TIMEOUT, "stat_rd_err_timeout"),
        ("byte count beyond the request", garbled + 5, 40, MALFORMED, "stat_rd_err_malformed"),
    ]
    for what, host, length, want, stat in cases:
        before = dict(tb.stats)
        # good reads (and writes of the last ones) around the bad one
        good = cp.issue_reads(layout(0, HALF, 12, 4096))
        t = tb.tag()
        tb.rd.send(Desc(host, random.randint(BAD_RAM[0], BAD_RAM[1] - length), length, t))
        more = cp.issue_reads(layout(HALF + HALF // 2, HALF // 2, 6, 2048))
        err = (await tb.rd_st.wait_for([t], timeout_cycles=4 * TIMEOUT_CYCLES))[t]
        await cp.finish_reads(good)
        await cp.finish_reads(more)
        assert err == want, f"{what}: status {ERROR_NAMES[err]}, expected {ERROR_NAMES[want]}"
        took = tb.rd_st.last_cycle[t] - tb.rd.accepted[t]
        if want == TIMEOUT:
            assert TIMEOUT_CYCLES <= took <= TIMEOUT_CYCLES * 15 // 14 + 500, f"timed out after {took} cycles"
        await tb.quiesce()
        delta = {k: tb.stats[k] - before[k] for k in tb.stats}
        dut._log.info("%s: %s after %d cycles; %s", what, ERROR_NAMES[err], took,
                      {k: v for k, v in delta.items() if v and k in ERROR_STATS})
        assert delta[stat] >= 1, f"{what}: {stat} did not count"
        assert all(delta[k] == 0 for k in ERROR_STATS if k != stat), f"{what}: other errors counted: {delta}"
        assert delta["stat_rd_done_error"] == 1 and delta["stat_wr_done_error"] == 0
        # the data of the good reads is right: copy them out and compare
        await cp.finish_writes(cp.issue_writes([(ram, n) for _, ram, n in list(good.values()) + list(more.values())]))

    # Completions nobody asked for: a tag the engine never uses (> 31), and, while no read
    # is in flight, tags from its pool, with and without the IP's "invalid tag" verdict.
    before = dict(tb.stats)
    good = cp.issue_reads(layout(0, HALF, 16, 4096))
    await ClockCycles(tb.clock, 50)
    await tb.tap.inject(200, 64, ip_says_invalid=False)
    await tb.tap.inject(255, 8)
    await cp.finish_reads(good)
    await tb.quiesce()
    await tb.tap.inject(5, 32, ip_says_invalid=False)
    await tb.tap.inject(31, 4)
    await ClockCycles(tb.clock, 50)
    delta = {k: tb.stats[k] - before[k] for k in tb.stats}
    assert delta["stat_rd_unexpected"] == 4, f"unexpected completions: {delta}"
    assert all(delta[k] == 0 for k in ERROR_STATS if k != "stat_rd_unexpected")
    await cp.finish_writes(cp.issue_writes([(ram, n) for _, ram, n in good.values()]))

    # Descriptors that move nothing: empty (success at once) and too long (refused).
    reqs = (tb.tap.reads, tb.tap.writes)
    assert await tb.read(cp.src, 0, 0) == OK
    assert await tb.read(cp.src, 0, 65537) == BAD_DESC
    assert await tb.write(cp.dst, 0, 0) == OK
    assert await tb.write(cp.dst, 0, 100000) == BAD_DESC
    assert (tb.tap.reads, tb.tap.writes) == reqs, "an empty or refused descriptor made requests"

    # RAM addresses wrap at the RAM's end.
    assert await tb.read(cp.src + 1000, RAM_BYTES - 20, 50) == OK
    cp.ram[RAM_BYTES - 20:] = cp.src_bytes[1000:1020]
    cp.ram[:30] = cp.src_bytes[1020:1050]
    assert await tb.write(cp.dst + 77, RAM_BYTES - 20, 50) == OK
    cp.dst_model[77:127] = cp.src_bytes[1000:1050]
    await cp.flush()
    cp.check_dst()

    # And the engine still does everything right: busy random copies, then the whole RAM.
    await cp.finish_reads(cp.issue_reads([(BAD_RAM[0], BAD_RAM[1] - BAD_RAM[0])]))
    await cp.rounds(2, 32)
    tb.tap.reorder = 0.0
    await tb.quiesce()
    await cp.check_whole_ram()
    assert not any(tb.dev.active_request), "the IP model still has requests open"
    dut._log.info("stats: %s", tb.stats)


@cocotb.test(timeout_time=60, timeout_unit="ms")
async def throughput(dut):
    """64 KiB transfers, one descriptor each, no back-pressure: Gb/s at 250 MHz (logged)."""
    tb = DmaTB(dut)
    await tb.init()
    cp = Copier(tb, src_size=128 << 10, dst_size=128 << 10)
    lines = []
    aligned = [("aligned", 0, 0, RAM_BYTES)]
    # host+0 RAM+5: read completions spill into one more RAM word (written in the next
    # completion's empty first slot); host+0 RAM+20: write TLPs need a preloaded word.
    unaligned = [("host+3 RAM+17", 3, 17, RAM_BYTES - 64), ("host+0 RAM+5", 0, 5, RAM_BYTES - 64),
                 ("host+0 RAM+20", 0, 20, RAM_BYTES - 64)]
    for mps, mrrs, cases in [(128, 512, aligned), (256, 512, aligned + unaligned), (512, 4096, aligned)]:
        await tb.set_sizes(mps, mrrs)
        for what, hoff, roff, n in cases:
            t = tb.tag()
            tb.rd.send(Desc(cp.src + hoff, roff, n, t))
            assert (await tb.rd_st.wait_for([t]))[t] == OK
            rd = tb.rd_st_cycles(t)
            cp.ram[roff:roff + n] = cp.src_bytes[hoff:hoff + n]
            t = tb.tag()
            tb.wr.send(Desc(cp.dst + hoff, roff, n, t))
            assert (await tb.wr_st.wait_for([t]))[t] == OK
            wr = tb.wr_st_cycles(t)
            cp.dst_model[hoff:hoff + n] = cp.ram[roff:roff + n]
            await cp.flush()
            cp.check_dst()
            lines.append(f"MPS {mps:>3} MRRS {mrrs:>4} {what:<14} {n:>5} B: read {gbps(n, rd):5.1f} Gb/s "
                         f"({rd} cycles), write {gbps(n, wr):5.1f} Gb/s ({wr} cycles)")
            await tb.quiesce(50)
    # both directions at once, 32 KiB each
    await tb.set_sizes(256, 512)
    n = HALF
    tr, tw = tb.tag(), tb.tag()
    start = tb.cycle()
    tb.rd.send(Desc(cp.src, 0, n, tr))
    tb.wr.send(Desc(cp.dst, HALF, n, tw))
    await tb.rd_st.wait_for([tr])
    await tb.wr_st.wait_for([tw])
    both = max(tb.rd_st.last_cycle[tr], tb.wr_st.last_cycle[tw]) - start
    lines.append(f"MPS 256 MRRS  512 read + write at once, {n} B each: {gbps(2 * n, both):5.1f} Gb/s total")
    # many small reads
    tags = []
    start = tb.cycle()
    for i in range(64):
        t = tb.tag()
        tb.rd.send(Desc(cp.src + i * 1024, i * 1024, 1024, t))
        tags.append(t)
    await tb.rd_st.wait_for(tags)
    cyc = max(tb.rd_st.last_cycle[t] for t in tags) - start
    lines.append(f"MPS 256 MRRS  512 64 read descriptors of 1 KiB: {gbps(64 * 1024, cyc):5.1f} Gb/s")
    for line in lines:
        dut._log.info("throughput: %s", line)


def test_dma_copy():
    run_cocotb(DESIGN, __name__, testcase="copy_random")


def test_dma_copy_small_pools():
    run_cocotb(SMALL, __name__, testcase="copy_random")


def test_dma_errors():
    run_cocotb(DESIGN, __name__, testcase="errors_and_recovery")


def test_dma_throughput():
    run_cocotb(DESIGN, __name__, testcase="throughput")
