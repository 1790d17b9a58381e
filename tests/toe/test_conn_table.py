"""The TCP offload engine's connection table (hw/src/offnic/toe/ConnTable.scala) against
its exact model `offnic_sim.conntable_model.ConnTableModel`.

One loop plays every interface cycle by cycle (valid with random gaps, ready with random
stalls) and stamps each transfer with its cycle, which is what the checks need:
- every command's response (status, moves made) is the model's, command by command;
  ids are unique among live connections and in range; Exists and Delete return the
  resident's id;
- every lookup's answer is the table as it stood when the lookup was taken: after every
  command answered before that cycle (a command pauses lookups and lets those in flight
  finish first, so no lookup sees a half-done insert or a key in mid-move);
- keys that differ from a live one only in the local IP, or in one port, miss;
- crowded: keys confined to 4 buckets of each table: walks of many moves, walks undone;
- hostile: nine keys that share both buckets (found by brute force with the secret):
  eight fit, the ninth walks `max_kicks` moves, fails Full and is undone — all eight
  still found; the ids run out: NoId; deleting a missing key: Missing;
- at the end every counter equals the model's (lookups and hits counted by the bench).
Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import random
from collections import defaultdict

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer

from offnic_sim import conntable_model as ctm
from offnic_sim.harness import run_cocotb
from offnic_sim.hw import Design

CONNECTIONS, BUCKETS, MAX_KICKS = 64, 16, 16


class ConnTableTB:
    def __init__(self, dut, seed: int):
        self.d = dut
        self.rng = random.Random(seed)
        self.model = ctm.ConnTableModel(connections=CONNECTIONS, buckets=BUCKETS, max_kicks=MAX_KICKS)
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


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def conn_table(dut):
    tb = ConnTableTB(dut, cocotb.RANDOM_SEED)
    await tb.start()
    rng = tb.rng

    dut._log.info("ready; hostile: nine keys for the same two buckets")
    # Hostile: nine keys for the same two buckets.
    keys = colliding_keys(rng, tb.model, 9)
    for k in keys[:8]:
        assert (await tb.command(False, k)).status == ctm.OK
    out = await tb.command(False, keys[8])
    assert out.status == ctm.FULL and out.kicks == MAX_KICKS, out
    tb.lookups += keys + [x for k in keys for x in tb.near_misses(k)]
    await tb.settle()
    assert (await tb.command(True, keys[8])).status == ctm.MISSING
    for k in keys[:8]:
        assert (await tb.command(True, k)).status == ctm.OK
    assert int(dut.status_entries.value) == 0 and int(dut.status_freeIds.value) == CONNECTIONS

    # Crowded: keys whose buckets are among four of each table's (32 slots): walks that
    # succeed after many moves and walks that fail and are undone, lookups streaming.
    dut._log.info("crowded: 32 slots")
    tb.gap, tb.stall = 0.2, 0.2
    crowd = [k for k in (rng.getrandbits(ctm.KEY_BITS) for _ in range(3000))
             if all(b < 4 for b in tb.model.buckets_of(k))]
    live, fulls, walked = [], 0, 0
    for k in crowd:
        out = await tb.command(False, k)
        if out.status == ctm.OK:
            live.append(k)
            walked += out.kicks > 0
        fulls += out.status == ctm.FULL
        if fulls == 8:
            break
        if fulls and rng.random() < 0.5:  # free a slot now and then: the walks find it
            assert (await tb.command(True, live.pop(rng.randrange(len(live))))).status == ctm.OK
        tb.lookups += [rng.choice(live) for _ in range(3)] + [k]
    await tb.settle()
    assert fulls == 8 and walked >= 3, (fulls, walked)
    dut._log.info(f"{len(live)} keys in 32 slots, {walked} inserts placed by walks, {fulls} undone")
    for k in live:
        assert (await tb.command(True, k)).status == ctm.OK

    # Churn: inserts, re-inserts, deletes (of live and missing keys) while lookups stream.
    for gap, stall in ((0.0, 0.0), (0.3, 0.3), (0.0, 0.6)):
        dut._log.info(f"churn with gaps {gap}, stalls {stall}")
        tb.gap, tb.stall = gap, stall
        live: list[int] = []
        gone: list[int] = []
        for _ in range(600):
            r = rng.random()
            if r < 0.45 or not live:
                k = rng.getrandbits(ctm.KEY_BITS)
            elif r < 0.5:
                k = rng.choice(live)                       # Exists
            elif r < 0.55:
                k = rng.getrandbits(ctm.KEY_BITS)          # delete: Missing
                gone.append(k)
                await tb.command(True, k)
                continue
            else:
                k = live.pop(rng.randrange(len(live)))     # delete
                out = await tb.command(True, k)
                gone.append(k)
                continue
            out = await tb.command(False, k)
            if out.status == ctm.OK:
                live.append(k)
            pool = live + gone[-20:]
            while len(tb.lookups) < 12:
                k2 = rng.choice(pool)
                tb.lookups += [k2] if rng.random() < 0.8 else tb.near_misses(k2)[rng.randrange(4):][:1]
        await tb.settle()
        for k in live:
            await tb.command(True, k)

    # The ids run out before the slots (64 ids, 128 slots).
    tb.gap = tb.stall = 0.0
    while True:
        out = await tb.command(False, rng.getrandbits(ctm.KEY_BITS))
        if out.status != ctm.OK:
            break
    assert out.status == ctm.NO_ID and len(tb.model) == CONNECTIONS, (out, len(tb.model))
    assert int(dut.status_freeIds.value) == 0

    # One lookup per cycle: a burst of 400 with no back-pressure.
    await tb.settle()
    tb.first_take = None
    tb.lookups += [rng.choice(list(tb.model.ids)) for _ in range(400)]
    await tb.settle()
    span = tb.last_answer - tb.first_take + 1
    dut._log.info(f"400 lookups answered in {span} cycles")
    assert span <= 400 + 8, f"400 lookups took {span} cycles"

    # Counters
    await ClockCycles(dut.clock, 4)
    want = dict(tb.model.stats, lookups=tb.n_lookups, hits=tb.n_hits)
    got = {name: int(getattr(dut, f"counters_{i}").value) for i, name in enumerate(ctm.STATS)}
    assert got == want, f"counters {got}, model {want}"
    assert int(dut.status_entries.value) == len(tb.model)
    dut._log.info(f"{tb.n_checked} lookups checked, {len(tb.outcomes)} commands, counters {got}")


def test_conn_table():
    run_cocotb(Design.of("toe.ConnTable", connections=CONNECTIONS, buckets=BUCKETS, max_kicks=MAX_KICKS), __name__)
