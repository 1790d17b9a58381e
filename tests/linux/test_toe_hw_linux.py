"""The hardware TCP offload engine (hw/src/offnic/toe/TcpOffload.scala, simulated by
Verilator) carrying real Linux connections: test_toe_model_linux's scenarios with the
simulated hardware where the exact model was.

The rig is the model test's: namespaces A ("host") and B ("remote") on TAPs, the Python
wire between them, the Nic (the engine on A's side: B's frames in, pass-through frames on
to A, A's application through the rings) and the checked byte streams. Here the Nic's
engine is a `toe_hwengine.SharedHwEngine`: the rig's threads run in real time and call
it from anywhere; one cocotb bridge thread owns the simulation, and between calls the
hardware's clock runs free. The rings are the AxiRam on the engine's memory port.

Time: the engine's microsecond is one clock, and the simulation runs some 4-15 k clocks
per wall second here, 70-250 times slower than the wall clock. The engine's timers are
scaled down to match (RTO 10-200 ms, delayed ACK 4 ms, TIME_WAIT 30 ms of its time), and
so are the round-trip times Linux hands over (RTT_SCALE); Linux's timers are Linux's.
The engine's TSval clock (1 ms of its time) runs slower than Linux's, which RFC 7323
allows, and only moves forward. Streams are smaller than the model's and timeouts
longer (Rig.size, Rig.slow).

The engine's counters are read over its register bus, as a driver reads them, and
checked against the rig's own counts (test_toe_model_linux.check_engine_registers: table
inserts and deletes, closes and resets notified, every segment asked for on the wire, no
refused command, no memory error), where the model's own counters are checked for the
model.

Needs root (skips otherwise). Seeds: OFFNIC_SEED (printed by the harness).
"""
from __future__ import annotations

import threading
import time

import cocotb
import pytest
from cocotb.task import bridge

from offnic_sim.linux import linuxnet
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.toe.toe_hwengine import HwEngine, SharedHwEngine
from offnic_sim.toe.toe_model import EngineParams

REASON = linuxnet.unavailable_reason()
needs_linux = pytest.mark.skipif(REASON is not None, reason=f"real Linux networking unavailable: {REASON}")

CONNECTIONS, BUCKETS, SLOTS = 64, 16, 256
SLOW = 6.0               # timeouts against the model's
SIZE = 0.15              # stream sizes against the model's
RTT_SCALE = 0.01         # the engine's microseconds per wall-clock one, roughly: for Linux's RTTs at the handoff


def params() -> EngineParams:
    # RTO 10 ms .. 200 ms of the engine's time: 1-50 s of wall time at 4-12 k cycles/s
    return EngineParams(max_conns=CONNECTIONS, wheel_slots=SLOTS, rto_min_us=10_000, rto_initial_us=20_000,
                        rto_max_us=200_000, delack_us=4_000, time_wait_us=30_000, fin_wait_2_us=1_000_000)


async def carry(dut, scenario) -> None:
    """Run `scenario(rig)` (one of test_toe_model_linux's) in a thread against the
    simulated engine; this coroutine serves the engine until the scenario ends."""
    from test_toe_model_linux import Nic, Rig
    hw = HwEngine(dut, params(), mem_size=1 << 30, free_run=True)
    eng = SharedHwEngine(hw)
    await eng.start(time.monotonic_ns() // 1000)
    rig = Rig(make_nic=lambda wire, **kw: Nic(wire, engine=eng, poll_s=0.002, rtt_scale=RTT_SCALE, **kw),
              slow=SLOW, size=SIZE)
    out: dict = {}

    def body():
        try:
            out["value"] = scenario(rig)
        except BaseException as e:            # raised in the test below
            out["error"] = e
        finally:
            eng.stop()

    t0, c0 = time.monotonic(), hw._hw_now()
    th = threading.Thread(target=body, name="rig", daemon=True)
    th.start()
    await bridge(eng.serve)()
    th.join(10)
    secs, us = time.monotonic() - t0, hw._hw_now() - c0
    dut._log.info(f"{scenario.__name__}: {secs:.1f} s wall, {us / 1e3:.1f} ms of the engine's time "
                  f"({us / secs / 1e3:.1f} k cycles/s)")
    if "error" in out:
        if hasattr(out["error"], "add_note"):
            out["error"].add_note(f"hardware: {hw.snapshot()}")
        raise out["error"]


# The scenarios (test_toe_model_linux's, sized for a simulated engine), by name: shared
# with the whole NIC's test (test_toe_nic_linux.py).

def mid_transfer_scenario(rig):
    from test_toe_model_linux import run_handoff_cycle
    c = run_handoff_cycle("mid", rig.n(4 << 20), rig=rig)
    # every frame from B was good and, once installed, the engine's: none dropped as bad. With
    # the wire held at the restore no segment is stale; without (the whole NIC's handoff), those
    # queued for the engine when it restores are dropped (B resends them to the host)
    stale = 0 if rig.holds_wire else c["hw_nicq_capacity"] + 2
    assert c["hw_seg_events"] > 0 and c["hw_steer_bad_dropped"] == 0 and c["hw_seg_stale_drops"] <= stale, \
        {k: c[k] for k in ("hw_seg_events", "hw_steer_bad_dropped", "hw_seg_stale_drops")}
    return c


def lossy_scenario(rig):
    from test_toe_model_linux import run_handoff_cycle
    c = run_handoff_cycle("lossy", rig.n(4 << 20), drop=0.02, dup=0.01, reorder=0.03, rig=rig)
    assert c["seen_resent_segs"] > 0, dict(c)
    return c


def closes_scenario(rig):
    from test_toe_model_linux import closes
    nic = closes(rig, sizes=(150_000, 100_000), warm=10_000)
    assert nic.seen["bytes_out"] > 50_000, dict(nic.seen)
    return nic


def hostile_then_rst_scenario(rig):
    from test_toe_model_linux import hostile_then_rst
    return hostile_then_rst(rig)


def zero_windows_scenario(rig):
    from test_toe_model_linux import zero_windows
    # A's receive buffer bounds the window Linux advertised, and so the engine's ring (256 KiB);
    # its send buffer what the engine gets to send at the handoff
    return zero_windows(rig, sizes=(600_000, 500_000), warm=20_000, a_rcvbuf=64 << 10, a_sndbuf=32 << 10)


def near_wrap_scenario(rig):
    from test_toe_model_linux import near_wrap
    return near_wrap(rig)


def many_scenario(rig):
    from test_toe_model_linux import many_connections
    return many_connections(24, rig, sizes=(100_000, 80_000), warm=5_000, far=20_000)


SCENARIOS = {"mid_transfer": mid_transfer_scenario, "lossy": lossy_scenario, "closes": closes_scenario,
             "hostile_then_rst": hostile_then_rst_scenario, "zero_windows": zero_windows_scenario,
             "near_wrap": near_wrap_scenario, "many": many_scenario}


@cocotb.test()
async def mid_transfer(dut):
    await carry(dut, mid_transfer_scenario)


@cocotb.test()
async def lossy(dut):
    await carry(dut, lossy_scenario)


@cocotb.test()
async def closes(dut):
    await carry(dut, closes_scenario)


@cocotb.test()
async def hostile_then_rst(dut):
    await carry(dut, hostile_then_rst_scenario)


@cocotb.test()
async def zero_windows(dut):
    await carry(dut, zero_windows_scenario)


@cocotb.test()
async def near_wrap(dut):
    await carry(dut, near_wrap_scenario)


@cocotb.test()
async def many(dut):
    await carry(dut, many_scenario)


def design() -> Design:
    return Design.of("toe.TcpOffload", connections=CONNECTIONS, buckets=BUCKETS, slots=SLOTS, fifo_beats=512)


@needs_linux
@pytest.mark.parametrize("case", ["mid_transfer", "lossy", "closes", "hostile_then_rst", "zero_windows", "near_wrap",
                                  "many"])
def test_toe_hw_linux(case):
    run_cocotb(design(), __name__, testcase=case)
