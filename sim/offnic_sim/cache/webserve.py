"""A web server's sendfile path over the driver model, with or without the payload cache:
what `./offnic bench cache` replays (cache_bench.py) and the demo's web case
(workload.py) serve.

Each response is cut into MSS (1448 B) payloads; each packet is a 54-byte header staged
in host memory (Ethernet header with the local EtherType and the frame's 8-byte tag at
bytes 14..21, as every offnic workload tags its frames) followed by the payload:
- without the cache: one DATA descriptor at the file's host address;
- with it: what the driver core's directory (`cachedir.CacheDir.plan`, the C code of
  sw-driver/cache) plans — CACHE_INSERTs of missing blocks as chains of their own ahead
  of the packet, then CACHE_APPEND and DATA pieces in file order.
The directory's offsets [0, cache_bytes) are placed at cache offset `cache_base` (by
default the DRAM tier, 1 MiB, so a warm-up can fill it through the DRAM model's
backdoor). File contents are deterministic (windows of one random pattern), so every
frame on the wire can be checked byte for byte.
"""
from __future__ import annotations

import random
from typing import NamedTuple

from offnic_sim.host import rings
from offnic_sim.host.cachedir import APPEND_CACHE, APPEND_HOST, INSERT, CacheDir
from offnic_sim.host.rings import OP_CACHE_APPEND, OP_CACHE_INSERT, OP_DATA, Desc

MORE = rings.DESC_MORE
MSS = 1448
HDR_BYTES = 54
DRAM_BASE = 1 << 20        # first DRAM-tier offset (the cache block's onchip_bytes)
FILE_PATTERN = 4 << 20     # file contents: windows of a 4 MiB random pattern
LOOKAHEAD = 12             # packets an insert runs ahead of its first user (~4 blocks: 4 inserts in flight)
ETH_HDR = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\xb5"   # EtherType 0x88b5 (local)

_pattern2: bytes | None = None


def file_bytes(fid: int, off: int, n: int) -> bytes:
    """Bytes off..off+n of file `fid`."""
    global _pattern2
    if _pattern2 is None:
        p = random.Random(12345).randbytes(FILE_PATTERN)
        _pattern2 = p + p
    out = []
    while n > 0:
        at = (fid * 7919 + off) % FILE_PATTERN
        k = min(n, FILE_PATTERN)
        out.append(_pattern2[at:at + k])
        off, n = off + k, n - k
    return b"".join(out)


def last(descs: list[Desc]) -> list[Desc]:
    """The chain with MORE cleared on its last descriptor."""
    d = descs[-1]
    descs[-1] = Desc(d.addr, d.len, d.opcode, d.flags & ~MORE, d.csum_start, d.csum_insert)
    return descs


class Item(NamedTuple):
    """One command chain for `send_descs_batch`: a packet (tag and expected frame bytes
    without FCS) or an insert (tag None)."""
    descs: list[Desc]
    length: int
    tag: int | None
    frame: bytes | None


class WebServer:
    """Serves responses as descriptor chains. `cache_bytes` None: no cache (host path)."""

    def __init__(self, drv, dram=None, cache_bytes: int | None = None, cache_base: int = DRAM_BASE,
                 hdr_slots: int = 1024):
        self.drv, self.dram = drv, dram
        self.dir = CacheDir(cache_bytes) if cache_bytes else None
        self.cache_base = cache_base
        self.hdrs = drv.alloc(hdr_slots * 64)
        self.hdr_slots = hdr_slots
        self.slot = 0
        self.files: dict[int, object] = {}       # file id -> HostBuffer holding it
        self.packets = self.inserts = self.content = 0

    @property
    def cached(self) -> bool:
        return self.dir is not None

    def close(self) -> None:
        if self.dir is not None:
            self.dir.close()

    def load_files(self, ids, sizes) -> None:
        """Every file of a request list into host memory (once)."""
        for fid, size in zip(ids, sizes):
            if fid not in self.files and size:
                buf = self.drv.alloc(size)
                buf.write(0, file_bytes(fid, 0, size))
                self.files[fid] = buf

    def warm(self, ids, sizes, revs) -> int:
        """Run requests through the directory without simulated time, writing what it
        inserts straight into the DRAM model (backdoor): the cache then holds what a
        server that had already served them would have cached. Counters reset after.
        Returns the bytes inserted."""
        assert self.dir is not None and self.dram is not None and self.cache_base >= DRAM_BASE
        n = 0
        for fid, size, rev in zip(ids, sizes, revs):
            for off in range(0, size, MSS):
                for c in self.dir.plan(fid, rev, size, off, min(MSS, size - off), fid << 32):
                    if c.op == INSERT:
                        f, o = c.host_addr >> 32, c.host_addr & 0xFFFFFFFF
                        self.dram.write(self.cache_base - DRAM_BASE + c.cache_off, file_bytes(f, o, c.len))
                        n += c.len
        self.dir.reset_stats()
        return n

    def header(self, tag: int) -> tuple[int, bytes]:
        """A header carrying `tag`, staged in the next slot: (host address, bytes)."""
        h = (ETH_HDR + tag.to_bytes(8, "little") + bytes(64))[:HDR_BYTES]
        at = self.slot * 64
        self.slot = (self.slot + 1) % self.hdr_slots
        self.hdrs.write(at, h)
        return self.hdrs.addr + at, h

    def response(self, fid: int, rev: int, size: int, next_tag) -> list[Item]:
        """The chains that send file `fid` (revision `rev`, `size` bytes) in MSS packets;
        `next_tag()` gives each packet's tag. The file must be loaded.

        Inserts run ahead: each goes up to LOOKAHEAD packets before the first packet that
        appends its bytes, so the NIC (four inserts at once) has the block by the time
        that packet needs it. Where an insert is put just before its packet, every miss
        waits a host read with nothing queued behind; all of a response's inserts in front
        would hold its first packet until the last insert has started. An insert never
        moves ahead of a packet of this response that appends the bytes it overwrites
        (checked; the NIC itself orders it after earlier packets over the same bytes)."""
        return self.responses([(fid, rev, size)], next_tag, across=False)

    def responses(self, reqs, next_tag, across: bool = True) -> list[Item]:
        """The chains of several responses [(fid, rev, size)], in order. `across`: an insert
        may run ahead into the packets of earlier responses (a server with a backlog of
        requests), up to LOOKAHEAD packets, under the same check as within a response;
        otherwise it stops at its own response's first packet (`response`)."""
        packets: list[Item] = []
        uses: list[list[tuple[int, int]]] = []          # cache ranges each packet appends
        before: list[list[Item]] = []                   # inserts to queue before packet j
        for fid, rev, size in reqs:
            first = len(packets)
            buf = self.files[fid]
            data = file_bytes(fid, 0, size)
            for off in range(0, size, MSS):
                i = len(packets)
                n = min(MSS, size - off)
                tag = next_tag()
                haddr, h = self.header(tag)
                chain = [Desc(haddr, HDR_BYTES, OP_DATA, MORE)]
                used: list[tuple[int, int]] = []
                before.append([])
                if self.dir is None:
                    chain.append(Desc(buf.addr + off, n, OP_DATA, MORE))
                else:
                    for c in self.dir.plan(fid, rev, size, off, n, buf.addr):
                        at = self.cache_base + c.cache_off
                        if c.op == INSERT:
                            j = max(0 if across else first, i - LOOKAHEAD)
                            while j < i and any(lo < at + c.len and at < hi for k in range(j, i) for lo, hi in uses[k]):
                                j += 1
                            before[j].append(Item([Desc.with_arg(c.host_addr, c.len, OP_CACHE_INSERT, at)],
                                                  c.len, None, None))
                            self.inserts += 1
                        elif c.op == APPEND_HOST:
                            chain.append(Desc(c.host_addr, c.len, OP_DATA, MORE))
                        elif c.op == APPEND_CACHE:
                            chain.append(Desc(at, c.len, OP_CACHE_APPEND, MORE))
                            used.append((at, at + c.len))
                uses.append(used)
                packets.append(Item(last(chain), HDR_BYTES + n, tag, h + data[off:off + n]))
                self.packets += 1
                self.content += n
        return [it for j, p in enumerate(packets) for it in (*before[j], p)]
