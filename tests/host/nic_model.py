"""A behavioural stand-in for the NIC's queue side, to test the driver model before the
RTL exists: register blocks with records (the interface regblocks gives the driver),
and docs/queues.md's rules acted out in Python on the root complex's host memory —
descriptor fetch, TX with MORE chains, loopback from each port's TX to its RX, RX
steering (default queue, a stand-in RSS hash), completions with phase bits, moderation
by count and time, arming, event queues and MSI-X writes with masking.

It is a test double, not a reference for the RTL: checksums and hashes are placeholders
(the offload benches check the real ones), and timing is rough. `start_index` makes every
ring index start just below the 16-bit wrap, as a NIC that kept its indexes from an
earlier use would, so the driver's handling of both is exercised.
"""
from __future__ import annotations

import zlib
from types import SimpleNamespace

import cocotb
from cocotb.queue import Queue
from cocotb.simtime import get_sim_time
from cocotb.triggers import Event, Timer

from offnic_sim.host import regs
from offnic_sim.host import rings
from offnic_sim.host.rings import Completion

MAX_SEGS = 16
MAX_FRAME = 9600


def ones_sum(data: bytes) -> int:
    """16-bit one's complement sum, folded, not complemented."""
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def _reset_values(defs: dict) -> dict:
    return {n: r.reset or 0 for n, r in defs.items() if n not in ("type", "version", "next")}


class Block:
    """A register block of the map (regs.py) held in Python: `read`/`write` by name and
    `entry(k)` for records, as regblocks.RegisterBlock; accesses take simulated time
    like BAR accesses, writes notify the model."""

    def __init__(self, model: "NicModel", btype, count: int = 0, **values: int):
        self.model, self.type = model, btype
        self.values = _reset_values(btype.regs) | values
        if btype.array is not None:
            self.values["count"] = count
            self.records = [Entry(self, k) for k in range(count)]

    def entry(self, k: int) -> "Entry":
        return self.records[k]

    async def read(self, reg: str) -> int:
        return await self.model.reg_read(self, -1, self.values, reg)

    async def write(self, reg: str, value: int) -> None:
        await self.model.reg_write(self, -1, self.values, reg, value)


class Entry:
    """Record `index` of a Block's array, as regblocks.RegisterEntry."""

    def __init__(self, block: Block, k: int):
        self.block, self.index = block, k
        self.values = _reset_values(block.type.array.regs)

    async def read(self, reg: str) -> int:
        return await self.block.model.reg_read(self.block, self.index, self.values, reg)

    async def write(self, reg: str, value: int) -> None:
        await self.block.model.reg_write(self.block, self.index, self.values, reg, value)


class NicModel:
    def __init__(self, rc, queues: int = 4, vectors: int = 4, start_index: int = 0,
                 dma_read_ns: float = 1000, read_ns: float = 400, write_ns: float = 20):
        self.rc = rc
        self.mem = rc.mem_address_space
        self.dma_read_ns, self.read_ns, self.write_ns = dma_read_ns, read_ns, write_ns
        self.reg_reads = 0
        blocks = [Block(self, regs.TX_QUEUES, queues, desc_cache=8, max_segs=MAX_SEGS),
                  Block(self, regs.RX_QUEUES, queues, desc_cache=8),
                  Block(self, regs.TX_CQS, queues), Block(self, regs.RX_CQS, queues),
                  Block(self, regs.EQS, vectors), Block(self, regs.MSIX, vectors),
                  Block(self, regs.TX_ENGINE, max_frame=MAX_FRAME), Block(self, regs.RX_ENGINE),
                  Block(self, regs.RSS, table_size=128)]
        self.blocks = {b.type.name: [b] for b in blocks}
        s = start_index & 0xFFFF  # where the NIC's indexes stand
        for name, idx in (("tx_queues", "cons"), ("rx_queues", "cons"), ("tx_cqs", "prod"), ("rx_cqs", "prod"),
                          ("eqs", "prod")):
            for e in self.blocks[name][0].records:
                e.values[idx] = s
        self.cq_state = {(kind, k): SimpleNamespace(armed=False, count=0, since=None, epoch=0, room=Event())
                         for kind in ("tx", "rx") for k in range(queues)}
        self.eq_state = [SimpleNamespace(armed=False) for _ in range(vectors)]
        self.rss_table = [0] * 128
        self.tx_kick = [Event() for _ in range(queues)]
        self.rx_in: Queue = Queue()
        self.sent: list[tuple[int, bytes]] = []  # (port, frame) as the ports sent them
        self.misbehave: str | None = None         # "bad_index": corrupt the next completion's index
        for k in range(queues):
            cocotb.start_soon(self._tx_engine(k))
        cocotb.start_soon(self._rx_engine())

    def rec(self, block: str, k: int) -> dict:
        """The register values of record `k` of an array block (k < 0: the block's own)."""
        b = self.blocks[block][0]
        return b.values if k < 0 else b.records[k].values

    @property
    def msix_pending(self) -> list[bool]:
        p = self.rec("msix", -1)["pending"]
        return [bool(p >> k & 1) for k in range(len(self.eq_state))]

    async def reg_read(self, block: Block, k: int, values: dict, reg: str) -> int:
        await Timer(self.read_ns, "ns")
        self.reg_reads += 1
        assert reg in values, f"{block.type.name}[{k}] has no register {reg}"
        return values[reg]

    async def reg_write(self, block: Block, k: int, values: dict, reg: str, value: int) -> None:
        await Timer(self.write_ns, "ns")
        defs = block.type.regs if k < 0 else block.type.array.regs
        assert reg in defs and defs[reg].access in ("rw", "wstrobe"), f"{block.type.name}[{k}].{reg} is not writable"
        value &= (1 << defs[reg].width) - 1
        if defs[reg].access == "rw":
            values[reg] = value
        self.on_write(block.type.name, k, reg, value)

    # ---------------------------------------------------------------- register side effects

    def on_write(self, block: str, k: int, reg: str, v: int) -> None:
        if block == "tx_queues" and reg in ("prod", "control"):
            self.tx_kick[k].set()
        elif block in ("tx_cqs", "rx_cqs"):
            kind = block[:2]
            st = self.cq_state[(kind, k)]
            if reg == "arm" and v & 1:
                st.armed = True
            if reg == "cons":
                st.room.set()
            cocotb.start_soon(self._cq_check(kind, k))
        elif block == "eqs" and reg == "arm" and v & 1:
            self.eq_state[k].armed = True
            cocotb.start_soon(self._eq_check(k))
        elif block == "msix" and reg == "control" and not v & 1 and self.msix_pending[k]:
            self.rec("msix", -1)["pending"] &= ~(1 << k)
            cocotb.start_soon(self._msi(k))
        elif block == "rss" and reg == "indir_write":
            self.rss_table[v & 0x7F] = (v >> 16) & 0xFF

    # ---------------------------------------------------------------- rings

    @staticmethod
    def _base(r: dict) -> int:
        return r["base_hi"] << 32 | r["base_lo"]

    @staticmethod
    def _field(r: dict, lsb: int, width: int) -> int:
        return (r["control"] >> lsb) & ((1 << width) - 1)

    async def _dma_read(self, addr: int, n: int) -> bytes:
        await Timer(self.dma_read_ns, "ns")
        return await self.mem.read(addr, n) if n else b""

    async def _write_record(self, r: dict, rec: bytes) -> None:
        """Write a completion or event at the ring's prod with its phase; prod += 1."""
        log = self._field(r, 0, 4)
        i = r["prod"]
        await self.mem.write(self._base(r) + rings.record_offset(i, log), rings.with_phase(rec, rings.phase_of(i, log)))
        r["prod"] = rings.idx_add(i, 1)

    def _cq_room(self, kind: str, k: int) -> bool:
        r = self.rec(f"{kind}_cqs", k)
        return rings.free(r["prod"], r["cons"], self._field(r, 0, 4)) > 0

    async def _complete(self, kind: str, k: int, cpl: Completion) -> None:
        r = self.rec(f"{kind}_cqs", k)
        if self.misbehave == "bad_index":
            self.misbehave = None
            cpl = Completion(cpl.queue, rings.idx_add(cpl.index, 5), cpl.len, cpl.status, cpl.flags)
        await self._write_record(r, rings.pack_cpl(cpl))
        self.cq_state[(kind, k)].count += 1
        await self._cq_check(kind, k)

    async def _cq_check(self, kind: str, k: int) -> None:
        """Moderation: an event when armed and pending and (mod_count completions since the
        last event, or mod_time_us armed and pending)."""
        r, st = self.rec(f"{kind}_cqs", k), self.cq_state[(kind, k)]
        if not (st.armed and r["prod"] != r["cons"] and self._field(r, 8, 1)):
            st.since = None
            return
        now = get_sim_time("ns")
        if st.since is None:
            st.since = now
            if r["mod_time_us"]:
                cocotb.start_soon(self._cq_timer(kind, k, st.epoch, r["mod_time_us"]))
        if st.count >= max(1, r["mod_count"]) or now - st.since >= r["mod_time_us"] * 1000:
            st.armed, st.count, st.since = False, 0, None
            st.epoch += 1
            await self._event(self._field(r, 16, 8), k, rings.EV_TX_CQ if kind == "tx" else rings.EV_RX_CQ)

    async def _cq_timer(self, kind: str, k: int, epoch: int, us: int) -> None:
        await Timer(us, "us")
        if self.cq_state[(kind, k)].epoch == epoch:
            await self._cq_check(kind, k)

    async def _event(self, eq: int, source: int, ev_type: int) -> None:
        r = self.rec("eqs", eq)
        if rings.free(r["prod"], r["cons"], self._field(r, 0, 4)) == 0:
            self.rec("eqs", -1)["overflows"] += 1
            return
        await self._write_record(r, rings.pack_event(rings.Event(source, ev_type)))
        await self._eq_check(eq)

    async def _eq_check(self, k: int) -> None:
        r = self.rec("eqs", k)
        if self.eq_state[k].armed and r["prod"] != r["cons"]:
            self.eq_state[k].armed = False
            await self._msi(k)

    async def _msi(self, k: int) -> None:
        m = self.rec("msix", k)
        if m["control"] & 1:
            self.rec("msix", -1)["pending"] |= 1 << k
            return
        await self.mem.write(m["addr_hi"] << 32 | m["addr_lo"], m["data"].to_bytes(4, "little"))

    # ---------------------------------------------------------------- TX and RX

    async def _tx_engine(self, k: int) -> None:
        r = self.rec("tx_queues", k)
        while True:
            if not (self._field(r, 8, 1) and r["prod"] != r["cons"]):
                self.tx_kick[k].clear()
                await self.tx_kick[k].wait()
                continue
            if not self._cq_room("tx", k):
                room = self.cq_state[("tx", k)].room
                room.clear()
                await room.wait()
                continue
            log = self._field(r, 0, 4)
            first, frame, status, n = r["cons"], b"", rings.OK, 0
            while True:  # the chain: its descriptors must all be posted before it goes
                i = rings.idx_add(first, n)
                if i == r["prod"]:
                    self.tx_kick[k].clear()
                    await self.tx_kick[k].wait()
                    continue
                d = rings.unpack_desc(await self._dma_read(self._base(r) + rings.record_offset(i, log), 16))
                n += 1
                if d.opcode != rings.OP_DATA or n > MAX_SEGS:
                    status = rings.BAD_DESC
                elif status == rings.OK:
                    try:
                        frame += await self._dma_read(d.addr, d.len)
                    except Exception:
                        status = rings.DMA_ERROR
                if not d.more:
                    break
            if status == rings.OK and not 0 < len(frame) <= MAX_FRAME:
                status = rings.BAD_DESC
            r["cons"] = rings.idx_add(first, n)
            port = self._field(r, 16, 1)
            if status == rings.OK:
                self.sent.append((port, frame))
                self.rx_in.put_nowait((port, frame))  # loopback
            await self._complete("tx", k, Completion(k, first, len(frame) if status == rings.OK else 0, status, port))

    async def _rx_engine(self) -> None:
        eng = self.rec("rx_engine", -1)
        rss = self.rec("rss", -1)
        while True:
            port, frame = await self.rx_in.get()
            await Timer(100, "ns")
            h, flags, rss_type = zlib.crc32(frame), port, 0
            if rss["control"] & 1 and len(frame) >= 34:
                q = self.rss_table[h & 0x7F]
                flags |= rings.CPL_RSS_VALID
                rss_type = 1
            else:
                q = (eng["default_queue"] >> (8 * port)) & 0xFF
            r = self.rec("rx_queues", q)
            if not self._field(r, 8, 1):
                eng["drop_disabled"] += 1
                continue
            if r["prod"] == r["cons"]:
                eng["drop_no_desc"] += 1
                continue
            if not self._cq_room("rx", q):
                eng["drop_cq_full"] += 1
                continue
            i = r["cons"]
            d = rings.unpack_desc(await self._dma_read(self._base(r) + rings.record_offset(i, self._field(r, 0, 4)), 16))
            r["cons"] = rings.idx_add(i, 1)
            if len(frame) > d.len:
                eng["too_long"] += 1
                cpl = Completion(q, i, len(frame), rings.TOO_LONG, port)
            else:
                await self.mem.write(d.addr, frame)
                flags |= rings.CPL_CSUM_VALID
                cpl = Completion(q, i, len(frame), rings.OK, flags, h if rss_type else 0,
                                 ones_sum(frame[14:]), rss_type)
            await self._complete("rx", q, cpl)
