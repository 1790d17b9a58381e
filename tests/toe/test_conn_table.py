"""The TCP offload engine's connection table (hw/src/offnic/toe/ConnTable.scala) against
its exact model `offnic_sim.toe.conntable_model.ConnTableModel`.

The bench driver (offnic_sim/toe/conntable_tb.py) plays every interface cycle by cycle (valid
with random gaps, ready with random stalls) and stamps each transfer with its cycle, which
is what the checks need:
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

import cocotb
from cocotb.triggers import ClockCycles

from offnic_sim.toe import conntable_model as ctm
from offnic_sim.toe.conntable_tb import ConnTableTB, colliding_keys
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

CONNECTIONS, BUCKETS, MAX_KICKS = 64, 16, 16


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def conn_table(dut):
    tb = ConnTableTB(dut, cocotb.RANDOM_SEED, connections=CONNECTIONS, buckets=BUCKETS, max_kicks=MAX_KICKS)
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
    crowd = [k for k in (rng.getrandbits(ctm.KEY_BITS) for _ in range(8000))
             if all(b < 4 for b in tb.model.buckets_of(k))]
    live, fulls, walked = [], 0, 0
    for k in crowd:
        out = await tb.command(False, k)
        if out.status == ctm.OK:
            live.append(k)
            walked += out.kicks > 0
        fulls += out.status == ctm.FULL
        if fulls >= 8 and walked >= 3:  # enough of both (the mix depends on the seed)
            break
        if fulls and rng.random() < 0.5:  # free a slot now and then: the walks find it
            assert (await tb.command(True, live.pop(rng.randrange(len(live))))).status == ctm.OK
        tb.lookups += [rng.choice(live) for _ in range(3)] + [k]
    await tb.settle()
    assert fulls >= 8 and walked >= 3, (fulls, walked)
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
