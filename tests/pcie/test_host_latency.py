"""Host memory read latency (offnic_sim.host.hostmem.HostMemory) on the DMA engine bench.

The DMA bench design ("dma" in hw/configs/dma.toml) reads host memory through
cocotbext-pcie's root complex, with HostMemory answering every read 1 us late, as a
server does. Checked: one small read takes at least the latency and not much more than
the latency plus its time without it; 16 reads issued together overlap (all in flight
at once, done in about one latency plus transfer time, far from 16 latencies); the data
is right (read into the engine's RAM, written back, compared); the latency can be
changed at run time. The 64 KiB read times with and without latency are logged.
"""
import random

import cocotb
from cocotb.triggers import ClockCycles

from dma_tb import CLOCK_NS, OK, DmaTB, Desc
from offnic_sim.harness import hw
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host.hostmem import HostMemory

LATENCY_NS = 1000.0
DESIGN = next(d for d in hw.load_config("dma") if d.name == "dma")


async def timed_reads(tb: DmaTB, pieces: list[tuple[int, int, int]]) -> int:
    """Read descriptors (host address, RAM address, length) sent together; ns from the
    first one's acceptance to the last status."""
    tags = []
    for host, ram, n in pieces:
        t = tb.tag()
        tb.rd.send(Desc(host, ram, n, t))
        tags.append(t)
    errors = await tb.rd_st.wait_for(tags)
    assert all(e == OK for e in errors.values()), f"reads failed: {errors}"
    start = min(tb.rd.accepted[t] for t in tags)
    end = max(tb.rd_st.last_cycle[t] for t in tags)
    await ClockCycles(tb.clock, 20)
    return round((end - start) * CLOCK_NS)


async def check_ram(tb: DmaTB, pieces, src_mem, src_addr: int, dst_addr: int, dst_mem) -> None:
    """Write the RAM pieces back to host memory and compare with the source bytes."""
    for host, ram, n in pieces:
        assert await tb.write(dst_addr + ram, ram, n) == OK
    await tb.flush_writes(src_addr, 65000)  # posted writes are done once a later read is
    for host, ram, n in pieces:
        off = host - src_addr
        assert bytes(dst_mem[ram:ram + n]) == bytes(src_mem[off:off + n]), f"data differs for read at {host:#x}"


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def read_latency(dut):
    tb = DmaTB(dut)
    hm = HostMemory(tb.rc, read_latency_ns=0.0)
    await tb.init()
    await tb.set_sizes(256, 512)
    src, src_mem = tb.alloc(128 << 10)
    dst, dst_mem = tb.alloc(64 << 10, fill=False)

    def spread(count: int, n: int) -> list[tuple[int, int, int]]:
        """`count` reads of `n` bytes at random host offsets, to separate RAM places."""
        return [(src + random.randrange(0, (128 << 10) - n), k * 1024, n) for k in range(count)]

    one, sixteen = spread(1, 64), spread(16, 512)
    big = [(src + 64, 0, 64 << 10)]
    base = {"one": await timed_reads(tb, one), "sixteen": await timed_reads(tb, sixteen),
            "big": await timed_reads(tb, big)}
    dut._log.info("no latency: one 64 B read %d ns, 16 x 512 B reads %d ns, 64 KiB read %d ns",
                  base["one"], base["sixteen"], base["big"])

    hm.read_latency_ns = LATENCY_NS
    hm.max_in_flight = 0
    t_one = await timed_reads(tb, one)
    await check_ram(tb, one, src_mem, src, dst, dst_mem)
    hm.max_in_flight = 0
    t_sixteen = await timed_reads(tb, sixteen)
    in_flight = hm.max_in_flight
    await check_ram(tb, sixteen, src_mem, src, dst, dst_mem)
    t_big = await timed_reads(tb, big)
    dut._log.info("latency %d ns: one 64 B read %d ns, 16 x 512 B reads %d ns (%d reads in flight at most), "
                  "64 KiB read %d ns (%.1f Gb/s; %.1f Gb/s without latency)", LATENCY_NS, t_one, t_sixteen,
                  in_flight, t_big, (64 << 13) / t_big, (64 << 13) / base["big"])

    assert t_one >= LATENCY_NS, f"a read took {t_one} ns with {LATENCY_NS} ns latency"
    assert t_one <= base["one"] + LATENCY_NS + 100, f"a read took {t_one} ns: more than latency + {base['one']} ns"
    # 16 reads in flight at once: about one latency plus their transfer time, far from
    # 16 latencies (which serialised reads would take).
    assert in_flight >= 16, f"only {in_flight} reads were in flight at once"
    assert LATENCY_NS <= t_sixteen <= base["sixteen"] + LATENCY_NS + 300, \
        f"16 reads took {t_sixteen} ns (no latency: {base['sixteen']} ns): they did not overlap"
    assert t_sixteen < 3 * LATENCY_NS

    # Back to no latency at run time.
    hm.read_latency_ns = 0.0
    assert await timed_reads(tb, one) <= base["one"] + 50


def test_host_latency():
    run_cocotb(DESIGN, __name__)
