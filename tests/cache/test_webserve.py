"""The sendfile path's plan (sim/offnic_sim/cache/webserve.py) without the NIC: the chains
it produces, executed one after another on a byte model of host memory and the cache
(the order the NIC's ordering interlock preserves for overlapping bytes), must send every
packet's file bytes. With a small cache, blocks are evicted and reused, so an insert that
ran ahead past a packet still appending the block's old bytes would show up here.
Random requests (OFFNIC_SEED replays a failure)."""
import os
import random

import pytest

from offnic_sim.cache.webserve import HDR_BYTES, WebServer
from offnic_sim.host.hostmem import HostBuffer
from offnic_sim.host.rings import OP_CACHE_APPEND, OP_CACHE_INSERT, OP_DATA


class FakeDriver:
    """Host memory only: `alloc` as the driver model's, addresses never reused."""

    def __init__(self):
        self.next = 1 << 32
        self.bufs: list[HostBuffer] = []

    def alloc(self, size: int, align: int = 4096) -> HostBuffer:
        b = HostBuffer(self.next, size, bytearray(size))
        self.next += (size + align - 1) // align * align + align
        self.bufs.append(b)
        return b

    def read(self, addr: int, n: int) -> bytes:
        b = next(b for b in self.bufs if b.addr <= addr and addr + n <= b.addr + b.size)
        return b.read(addr - b.addr, n)


def execute(drv: FakeDriver, items) -> int:
    """Run the chains in order on a byte model of the cache; returns the packets checked."""
    cache = bytearray(32 << 20)
    checked = 0
    for it in items:
        if it.tag is None:
            (d,) = it.descs
            assert d.opcode == OP_CACHE_INSERT
            at = d.csum_start | d.csum_insert << 16
            cache[at:at + d.len] = drv.read(d.addr, d.len)
            continue
        frame = b""
        for d in it.descs:
            if d.opcode == OP_DATA:
                frame += drv.read(d.addr, d.len)
            else:
                assert d.opcode == OP_CACHE_APPEND
                frame += bytes(cache[d.addr:d.addr + d.len])
        assert frame == it.frame, f"packet {it.tag}: wrong bytes"
        checked += 1
    return checked


@pytest.mark.parametrize("across", [False, True])
def test_plan_sends_the_file_bytes(across):
    seed = int(os.environ.get("OFFNIC_SEED") or random.SystemRandom().randrange(1 << 31))
    rng = random.Random(seed)
    drv = FakeDriver()
    srv = WebServer(drv, None, 16 << 10, hdr_slots=1024)   # 4 blocks: evictions all the time
    files = {f: rng.choice([rng.randrange(1, 3000), rng.randrange(3000, 30000)]) for f in range(1, 40)}
    reqs = []
    for _ in range(60):
        f = rng.randrange(1, 40)
        reqs.append((f, rng.randrange(3) if rng.random() < 0.1 else 0, files[f]))
    srv.load_files([f for f, _, _ in reqs], [s for _, _, s in reqs])
    seq = iter(range(1, 1 << 30))
    items = srv.responses(reqs, lambda: next(seq), across=across)
    assert all(len(it.frame) <= HDR_BYTES + 1448 for it in items if it.tag is not None)
    n = execute(drv, items)
    assert n == srv.packets > 0 and srv.inserts > 0, (seed, n, srv.inserts)
    # an insert queued in front of another file's packet ran ahead into an earlier
    # response: that happens (small responses, LOOKAHEAD 12) only when allowed
    tag_file = [f for f, _, size in reqs for _ in range(0, size, 1448)]   # tags count from 1

    def file_of(addr: int) -> int:
        return next(f for f, b in srv.files.items() if b.addr <= addr < b.addr + b.size)
    crossed = 0
    for p, it in enumerate(items):
        if it.tag is None:
            nxt = next(x for x in items[p:] if x.tag is not None)
            crossed += file_of(it.descs[0].addr) != tag_file[nxt.tag - 1]
    assert (crossed > 0) == across, (seed, crossed)
    srv.close()
