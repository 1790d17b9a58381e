"""The connection table's bench driver (hw/src/offnic/toe/ConnTable.scala), shared by its
block test (tests/toe/test_conn_table.py) and `./offnic bench toe` (toe_bench.py).

One loop plays every interface cycle by cycle (valid with random gaps `gap`, ready with
random stalls `stall`) and stamps each transfer with its cycle; every response is checked
against the exact model (conntable_model.ConnTableModel) as it arrives, and every lookup's
answer against the table as it stood when the lookup was taken (after every command
answered before that cycle).
"""
from __future__ import annotations

import random
from collections import defaultdict

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer

from offnic_sim.toe import conntable_model as ctm


class ConnTableTB:
    def __init__(self, dut, seed: int, *, connections: int, buckets: int, max_kicks: int):
        self.d = dut
        self.rng = random.Random(seed)
        self.model = ctm.ConnTableModel(connections=connections, buckets=buckets, max_kicks=max_kicks)
        self.cycle = 0
        self.cmds: list[tuple[bool, int]] = []     # (delete, key) waiting to go
        self.cmd_out: tuple[bool, int] | None = None  # the command in the table
        self.lookups: list[int] = []               # keys waiting to be looked up
        self.taken: dict[int, tuple[int, int]] = {}  # tag -> (key, cycle taken)
        self.history: dict[int, list[tuple[int, int | None]]] = defaultdict(list)  # key -> (cycle, id)
        self.gap = self.stall = 0.0
        self.tag = 0
        self.n_lookups = self.n_hits = self.n_checked = 0
        self.outcomes: list[ctm.Outcome] = []
        self.first_take = self.last_answer = None
        self.error: BaseException | None = None

    async def start(self) -> None:
        d = self.d
        Clock(d.clock, 4, unit="ns").start()
        d.reset.value = 1
        d.cfg_hash_key.value = ctm.DEFAULT_HASH_KEY >> (ctm.HASH_KEY_BITS - len(d.cfg_hash_key))
        d.lookup_in_valid.value = 0
        d.cmd_valid.value = 0
        d.lookup_out_ready.value = 0
        d.rsp_ready.value = 0
        await ClockCycles(d.clock, 4)
        await FallingEdge(d.clock)
        d.reset.value = 0
        cocotb.start_soon(self._run())
        while not d.status_ready.value:
            await ClockCycles(d.clock, 16)

    async def _run(self) -> None:
        try:
            await self._cycles()
        except BaseException as e:  # a check failed: make the waiting test see it
            self.error = e
            raise

    async def _cycles(self) -> None:
        d, rng = self.d, self.rng
        look = None  # (tag, key) on lookup_in
        cmd_taken = False
        while True:
            await FallingEdge(d.clock)  # inputs change here only, never between a sample and its edge
            self.cycle += 1
            if cmd_taken:
                d.cmd_valid.value = 0
                cmd_taken = False
            if look is None and self.lookups and rng.random() >= self.gap:
                key = self.lookups.pop(0)
                look = (self.tag, key)
                self.tag = (self.tag + 1) & 0xFF
                d.lookup_in_bits_key.value = key
                d.lookup_in_bits_tag.value = look[0]
            d.lookup_in_valid.value = int(look is not None)
            if self.cmd_out is None and self.cmds:
                self.cmd_out = self.cmds.pop(0)
                d.cmd_bits_delete.value = int(self.cmd_out[0])
                d.cmd_bits_key.value = self.cmd_out[1]
                d.cmd_valid.value = 1
            d.lookup_out_ready.value = int(rng.random() >= self.stall)
            d.rsp_ready.value = int(rng.random() >= self.stall)
            await Timer(1, "ns")  # let `ready` settle on the inputs just driven
            if d.lookup_in_valid.value and d.lookup_in_ready.value:
                assert look[0] not in self.taken, "more than 256 lookups in flight"
                self.taken[look[0]] = (look[1], self.cycle)
                self.first_take = self.first_take or self.cycle
                look = None
            if d.cmd_valid.value and d.cmd_ready.value:
                cmd_taken = True  # (the response comes before the next command goes)
            if d.lookup_out_valid.value and d.lookup_out_ready.value:
                self._answer(int(d.lookup_out_bits_tag.value), bool(d.lookup_out_bits_hit.value),
                             int(d.lookup_out_bits_id.value))
            if d.rsp_valid.value and d.rsp_ready.value:
                self._response(int(d.rsp_bits_status.value), int(d.rsp_bits_id.value),
                               int(d.rsp_bits_kicks.value))

    def _answer(self, tag: int, hit: bool, cid: int) -> None:
        key, at = self.taken.pop(tag)
        want = None
        for cyc, i in self.history.get(key, ()):
            if cyc < at:
                want = i
        got = cid if hit else None
        assert got == want, f"lookup of {key:024x} taken at cycle {at}: got id {got}, table had {want}"
        self.n_lookups += 1
        self.n_hits += hit
        self.n_checked += 1
        self.last_answer = self.cycle

    def _response(self, status: int, cid: int, kicks: int) -> None:
        delete, key = self.cmd_out
        before = self.model.lookup(key)
        out = self.model.delete(key) if delete else self.model.insert(key, cid if status == ctm.OK else None)
        what = f"{'delete' if delete else 'insert'} {key:024x}"
        assert (status, kicks) == (out.status, out.kicks), (
            f"{what}: got {ctm.STATUS_NAMES[status]} after {kicks} moves, "
            f"model {ctm.STATUS_NAMES[out.status]} after {out.kicks}")
        if status == ctm.EXISTS or (delete and status == ctm.OK):
            assert cid == before, f"{what}: id {cid}, the resident is {before}"
        if status == ctm.OK:
            self.history[key].append((self.cycle, None if delete else cid))
        self.outcomes.append(out)
        self.cmd_out = None

    async def command(self, delete: bool, key: int) -> ctm.Outcome:
        n = len(self.outcomes)
        self.cmds.append((delete, key))
        for _ in range(100_000):
            if self.error:
                raise self.error
            if len(self.outcomes) > n:
                break
            await ClockCycles(self.d.clock, 1)
        else:
            d = self.d
            raise AssertionError(f"command {'delete' if delete else 'insert'} {key:024x} unanswered: cmd valid "
                                 f"{d.cmd_valid.value} ready {d.cmd_ready.value}, rsp valid {d.rsp_valid.value}, "
                                 f"lookup_in valid {d.lookup_in_valid.value} ready {d.lookup_in_ready.value}")
        return self.outcomes[-1]

    async def settle(self) -> None:
        while self.lookups or self.taken or self.cmds or self.cmd_out:
            if self.error:
                raise self.error
            await ClockCycles(self.d.clock, 8)

    def near_misses(self, key: int) -> list[int]:
        """Keys equal to `key` but in one field: the local IP, the remote IP, a port."""
        r = self.rng
        return [key ^ (r.randrange(1, 1 << 32) << 64), key ^ (r.randrange(1, 1 << 32) << 32),
                key ^ (r.randrange(1, 1 << 16) << 16), key ^ r.randrange(1, 1 << 16)]


def colliding_keys(rng: random.Random, model: ctm.ConnTableModel, n: int) -> list[int]:
    """`n` keys sharing both buckets (an attacker who knew the secret)."""
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    while True:
        k = rng.getrandbits(ctm.KEY_BITS)
        g = groups[model.buckets_of(k)]
        g.append(k)
        if len(g) == n:
            return g
