"""The TCP engine's timer wheel (hw/src/offnic/toe/TimerWheel.scala).

Random arms (delays 0 .. beyond a lap: clamped to the lap's end), re-arms and cancels of
random connections while time runs, `expired` taken with random stalls. The reference is
the rule itself: an arm taken at `now` (with the wheel done up to `done`) has the deadline
min(now + max(delay, 1), done + slots - 1); every timer fires exactly once, at its
deadline's tick, unless cancelled or re-armed first (an expiry already in the 4-deep
output queue when its cancel arrives still comes out); expiries come in tick order; the
armed count is right. A burst of hundreds of timers on one tick makes the wheel lag
behind `now` and catch up. Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer

from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

CONNECTIONS, SLOTS = 256, 64
MASK = (1 << 24) - 1


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def timer_wheel(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    d = dut
    Clock(d.clock, 4, unit="ns").start()
    d.reset.value = 1
    d.cmd_valid.value = 0
    d.expired_ready.value = 0
    d.cfg_tick_cycles.value = 20
    await ClockCycles(d.clock, 4)
    await FallingEdge(d.clock)
    d.reset.value = 0
    while not d.status_ready.value:
        await ClockCycles(d.clock, 16)

    armed: dict[int, int] = {}   # id -> deadline tick
    # Timers cancelled or moved while their expiry may already be in the output queue
    # (4 deep, plus one being written): (deadline, expiries seen when it was replaced).
    retired: dict[int, tuple[int, int]] = {}
    cmds: list[tuple[bool, int, int]] = []
    fired, stall, last_tick = [0], [0.0], [0]
    errors: list[str] = []

    async def loop():
        cur = None
        while True:
            await FallingEdge(d.clock)  # inputs change here only
            if cur is None and cmds:
                cur = cmds.pop(0)
                d.cmd_bits_cancel.value, d.cmd_bits_id.value, d.cmd_bits_delay.value = int(cur[0]), cur[1], cur[2]
            d.cmd_valid.value = int(cur is not None)
            d.expired_ready.value = int(rng.random() >= stall[0])
            await Timer(1, "ns")
            if d.cmd_valid.value and d.cmd_ready.value:
                cancel, i, delay = cur
                if i in armed:
                    retired[i] = (armed.pop(i), fired[0])
                if not cancel:
                    now, done = int(d.status_now.value), int(d.status_done.value)
                    want, limit = (now + max(delay, 1)) & MASK, (done + SLOTS - 1) & MASK
                    armed[i] = limit if 0 < ((want - limit) & MASK) < (1 << 23) else want
                cur = None
            if d.expired_valid.value and d.expired_ready.value:
                i, tick = int(d.expired_bits_id.value), int(d.expired_bits_tick.value)
                if armed.get(i) == tick:
                    armed.pop(i)
                elif i in retired and retired[i][0] == tick and fired[0] - retired[i][1] <= 5:
                    del retired[i]  # it had fired before the command took it back
                else:
                    errors.append(f"connection {i} fired at tick {tick}, its deadline {armed.get(i)}")
                if (tick - last_tick[0]) & MASK >= 1 << 23:
                    errors.append(f"tick {tick} after tick {last_tick[0]}")
                last_tick[0] = tick
                fired[0] += 1
    cocotb.start_soon(loop())

    async def settle(cycles: int) -> None:
        for _ in range(cycles // 8):
            assert not errors, errors[:5]
            await ClockCycles(d.clock, 8)
        assert not cmds

    # Random arms, re-arms and cancels while time runs.
    for st in (0.0, 0.3, 0.7):
        stall[0] = st
        for _ in range(600):
            r = rng.random()
            i = rng.randrange(CONNECTIONS)
            cmds.append((r < 0.2, i, rng.choice([0, 1, 2, rng.randrange(SLOTS), rng.randrange(3 * SLOTS)])))
            if rng.random() < 0.3:
                await ClockCycles(d.clock, rng.randrange(40))
        await settle(2000)
    # A burst: most connections on one tick, ticks of 3 cycles: the wheel lags, catches up.
    d.cfg_tick_cycles.value = 3
    stall[0] = 0.2
    for i in range(CONNECTIONS - 16):
        cmds.append((False, i, 20))
    await settle(4000)
    lagged = (int(d.status_now.value) - int(d.status_done.value)) & MASK
    # Everything due fires: ticks of 20 cycles again (an empty slot takes 2), two laps.
    d.cfg_tick_cycles.value = 20
    await settle(SLOTS * 20 * 2 + 4000)
    assert not errors, errors[:5]
    assert not armed, f"{len(armed)} timers never fired: {sorted(armed.items())[:5]}"
    assert int(d.status_armed.value) == 0
    assert (int(d.status_now.value) - int(d.status_done.value)) & MASK <= 1
    d._log.info(f"{fired[0]} expiries checked (lag after the burst: {lagged} ticks)")


def test_timer_wheel():
    run_cocotb(Design.of("toe.TimerWheel", connections=CONNECTIONS, slots=SLOTS), __name__)
