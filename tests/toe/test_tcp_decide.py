"""The TCP engine's decision (hw/src/offnic/toe/TcpDecide.scala) against the exact model
(sim/offnic_sim/toe/toe_model.py), decision by decision.

The model carries connections through lossy, reordering, duplicating links against
TcpPeers, plus hostile input and scripted cases (toe_sim.decision_traces), recording for
every event of an installed connection (segment, timer, host send/read/close, install,
restore) the TCB before and after, the segments sent and the notifications. Each
decision is replayed on the hardware from the same TCB, input and time, the second half
with random back-pressure on its outputs: the TCB after, every segment sent (seq, ack,
flags, window, timestamps, SACK blocks, payload length) and every notification must be
the model's (toe_hw.replay_decisions), and the workload must reach every kind of
decision (toe_sim.DECISION_CLASSES). Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import random
from collections import Counter

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge

from offnic_sim.toe import toe_hw
from offnic_sim.toe import toe_sim
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def tcp_decide(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    d = dut
    Clock(d.clock, 4, unit="ns").start()
    traces = toe_sim.decision_traces(cocotb.RANDOM_SEED)
    cov = toe_sim.decision_coverage(traces)
    missing = [k for k in toe_sim.DECISION_CLASSES if not cov[k]]
    assert not missing, f"the workload missed {missing}"
    d.reset.value = 1
    d.s_in_valid.value = 0
    await ClockCycles(d.clock, 4)
    await FallingEdge(d.clock)
    d.reset.value = 0
    took = await toe_hw.replay_decisions(d, traces, toe_sim.sim_params(), rng, stall_from=len(traces) // 2)
    kinds = Counter(k for k, _ in took)
    dut._log.info(f"{len(traces)} decisions checked ({dict(kinds)}); {len(cov)} kinds covered")


def test_tcp_decide():
    run_cocotb(Design.of("toe.TcpDecide", connections=4096), __name__)
