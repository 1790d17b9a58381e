"""Bench: AxisArbiter (N inputs merged into one output a whole frame at a time).

Random frames of 1 B to 9 KB on every input under every combination of source idling
and sink back-pressure. Checked:
  * per input, frames arrive in order and intact (one scoreboard per input; each output
    frame goes to the scoreboard of the input named by its tid, which with tag_source is
    the arbiter's own tag and otherwise the input number the bench put in tid);
  * frames never interleave: an output frame has a single tid, and at the inputs, once a
    frame starts, no other input moves a beat until its tlast;
  * the arbitration rule at every frame start, from the input valids at that moment:
    priority — no lower-numbered input was waiting; round robin — no input between the
    last one served and the winner (cyclically) was waiting;
  * fairness / strict priority with every input kept busy: round robin serves the inputs
    strictly in turn, priority drains input 0 completely before input 1 gets a frame;
  * stat_grant pulses with every input beat and names its input; the output order of
    frames equals the order they were granted;
  * no combinational path from m_axis_tready to any s_axis_tready, nor from the inputs to
    the output (it leaves through a register slice).
"""
import itertools
import random

import cocotb
import pytest
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamFrame

from offnic_sim.harness.axis_tb import (BACK_PRESSURE, BeatTap, HoldCheck, Scoreboard, StreamTB, frame_sizes, probe_comb_paths, random_payload,
                                set_pauses, user_marks)
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design

PERIOD_NS = 4.0



class GrantWatch:
    """Watches the inputs' handshakes every cycle and checks the arbitration there: one
    input at a time, whole frames, the mode's rule at each frame start, stat_grant."""

    def __init__(self, dut, clock, ports: int, mode: str):
        self.dut, self.clock, self.ports, self.mode = dut, clock, ports, mode
        self.valid = [getattr(dut, f"s_axis_{i}_tvalid") for i in range(ports)]
        self.ready = [getattr(dut, f"s_axis_{i}_tready") for i in range(ports)]
        self.last = [getattr(dut, f"s_axis_{i}_tlast") for i in range(ports)]
        self.owner: int | None = None  # input in the middle of a frame
        self.last_served = ports - 1  # the arbiter starts as if the last input was served
        self.starts: list[int] = []  # input of every frame start, in grant order
        self.contended = 0  # frame starts with another input also waiting
        self.all_waiting = 0  # frame starts with every input waiting
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        dut = self.dut
        while True:
            await RisingEdge(self.clock)
            valid = [bool(v.value) for v in self.valid]
            fired = [i for i in range(self.ports) if valid[i] and self.ready[i].value]
            g_valid, g_bits = bool(dut.stat_grant_valid.value), int(dut.stat_grant_bits.value)
            assert len(fired) <= 1, f"inputs {fired} accepted beats in the same cycle"
            if not fired:
                assert not g_valid, "stat_grant pulsed with no input beat"
                continue
            k = fired[0]
            assert g_valid and g_bits == k, f"input {k} beat, stat_grant valid={g_valid} bits={g_bits}"
            if self.owner is None:
                self._check_start(k, valid)
                self.starts.append(k)
            else:
                assert k == self.owner, f"input {k} sent a beat in the middle of input {self.owner}'s frame"
            if self.last[k].value:
                self.owner = None
                self.last_served = k
            else:
                self.owner = k

    def _check_start(self, k: int, valid: list[bool]) -> None:
        others = [j for j in range(self.ports) if j != k and valid[j]]
        self.contended += bool(others)
        self.all_waiting += len(others) == self.ports - 1
        if self.mode == "priority":
            ahead = [j for j in range(k) if valid[j]]
            assert not ahead, f"input {k} started a frame while higher-priority input(s) {ahead} were waiting"
        else:
            skipped = [j % self.ports for j in range(self.last_served + 1, k + (self.ports if k <= self.last_served
                                                                                   else 0))
                       if valid[j % self.ports]]
            assert not skipped, (f"round robin: input {k} started a frame after input {self.last_served} while "
                                 f"input(s) {skipped}, whose turn came first, were waiting")


class ArbiterTB:
    def __init__(self, dut, c: dict):
        self.c = c
        self.ports = c["ports"]
        self.tb = StreamTB(dut, period_ns=PERIOD_NS, sources=[f"s_axis_{i}" for i in range(self.ports)])
        self.dut = dut
        self.watch: GrantWatch | None = None
        self.boards = [Scoreboard(f"input {i}", check_user=bool(c["user"])) for i in range(self.ports)]
        self.routed = 0  # output frames checked so far

    async def start(self) -> None:
        await self.tb.do_reset()
        self.watch = GrantWatch(self.dut, self.tb.clock, self.ports, self.c["mode"])

    def send(self, i: int, n: int) -> None:
        c = self.c
        data = random_payload(n)
        mark = random.randrange(1, 1 << c["user"]) if c["user"] and random.random() < 0.3 else 0
        # Without tag_source the bench names the input in tid itself (so it can route).
        tid_in = None if c["tag_source"] else i
        tdest = random.randrange(1 << c["dest"]) if c["dest"] else None
        self.boards[i].expect(data, tuser=mark, tid=i, tdest=tdest)
        self.tb.sources[i].send_nowait(AxiStreamFrame(data, tuser=user_marks(n, mark, c["bytes"]),
                                                      tid=tid_in, tdest=tdest))

    def route(self, frame: AxiStreamFrame) -> None:
        tid = frame.tid
        assert not isinstance(tid, list), f"output frame {self.routed} mixes tids {sorted(set(tid))}: interleaved"
        assert 0 <= tid < self.ports, f"output frame {self.routed} has tid {tid}, no such input"
        granted = self.watch.starts[self.routed] if self.routed < len(self.watch.starts) else None
        assert tid == granted, f"output frame {self.routed} is from input {tid} but input {granted} was granted"
        self.boards[tid].check(frame)
        self.routed += 1

    async def drain(self, idle_cycles: int = 200, max_cycles: int = 2_000_000) -> None:
        sink = self.tb.sink
        quiet_for = 0
        for cycle in itertools.count():
            await RisingEdge(self.tb.clock)
            got_any = False
            while not sink.empty():
                self.route(sink.recv_nowait())
                got_any = True
            done = all(b.done() for b in self.boards)
            quiet_for = 0 if got_any or not done else quiet_for + 1
            if done and quiet_for >= idle_cycles:
                break
            assert cycle < max_cycles, "frames still missing: " + ", ".join(
                f"input {i}: {len(b.pending)}" for i, b in enumerate(self.boards) if b.pending)
        assert all(s.empty() for s in self.tb.sources)


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def random_frames(dut):
    c = bench_config()
    atb = ArbiterTB(dut, c)
    await atb.start()
    hold = HoldCheck(dut, "m_axis", atb.tb.clock)
    for idle, stall in BACK_PRESSURE:
        # Each input idles at its own rate around `idle`, so inputs are unevenly loaded.
        for s in atb.tb.sources:
            set_pauses([s], min(0.9, idle * random.uniform(0.5, 1.5)))
        set_pauses([atb.tb.sink], stall)
        before, contended = atb.routed, atb.watch.contended
        for i in range(atb.ports):
            for n in frame_sizes(c["frames"]):
                atb.send(i, n)
        await atb.drain()
        dut._log.info("idle=%s stall=%s: %d frames, %d with inputs competing", idle, stall, atb.routed - before,
                      atb.watch.contended - contended)
    assert atb.watch.contended > 20, "inputs hardly ever competed: arbitration not exercised"
    assert hold.stalls > 100, "the output was hardly ever stalled: hold check not exercised"


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def all_inputs_busy(dut):
    """Every input has a queue of frames and never idles. Round robin must serve the
    inputs strictly in turn; priority must serve all of input 0's frames, then all of
    input 1's, and so on. Without back-pressure the output must carry a beat every
    cycle: frames follow each other without bubbles, also when the input changes."""
    c = bench_config()
    atb = ArbiterTB(dut, c)
    await atb.start()
    tap = BeatTap(dut, "m_axis", atb.tb.clock)
    per_input = 12
    for stall in (0.0, 0.5):
        atb.tb.back_pressure(0.0, stall)
        first = len(atb.watch.starts)
        for i in range(atb.ports):
            for _ in range(per_input):
                atb.send(i, random.choice([random.randint(1, 100), random.randint(100, 2000)]))
        await atb.drain()
        beats = tap.take()
        if stall == 0.0:
            span = (beats[-1].time_ps - beats[0].time_ps) // int(PERIOD_NS * 1000) + 1
            assert span == len(beats), f"{len(beats)} output beats took {span} cycles: bubbles between frames"
        order = atb.watch.starts[first:]
        assert len(order) == per_input * atb.ports
        if c["mode"] == "round_robin":
            for a, b in zip(order, order[1:]):
                assert b == (a + 1) % atb.ports, f"stall={stall}: not in turn: {order}"
        else:
            assert order == sorted(order), f"stall={stall}: lower priority served while higher waited: {order}"
        dut._log.info("stall=%s: grant order %s", stall, order)
    assert atb.watch.all_waiting >= per_input, "inputs were not all waiting"


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def no_comb_paths(dut):
    c = bench_config()
    atb = ArbiterTB(dut, c)
    await atb.start()
    tb = atb.tb
    tb.back_pressure(0.3, 0.5)
    for i in range(atb.ports):
        for _ in range(8):
            atb.send(i, random.randint(1, 400))
    p = atb.ports
    readies = [getattr(dut, f"s_axis_{i}_tready") for i in range(p)]
    outs = [getattr(dut, f"m_axis_{s}") for s in ("tvalid", "tdata", "tkeep", "tlast", "tid")]
    ins = [getattr(dut, f"s_axis_{i}_{s}") for i in range(p) for s in ("tvalid", "tdata", "tkeep", "tlast")]
    bad = await probe_comb_paths(tb.clock, PERIOD_NS, [dut.m_axis_tready], readies, 600)
    assert bad == 0, f"s_axis_*_tready followed m_axis_tready within a cycle in {bad} cycles"
    bad = await probe_comb_paths(tb.clock, PERIOD_NS, ins, outs, 600)
    assert bad == 0, f"the output followed an input change within a cycle in {bad} cycles"
    await atb.drain()


CONFIGS = {
    "prio_2_tag": dict(bytes=8, user=1, dest=0, ports=2, mode="priority", tag_source=True, frames=16),
    "rr_2_tag": dict(bytes=8, user=1, dest=0, ports=2, mode="round_robin", tag_source=True, frames=12),
    "rr_3_tag": dict(bytes=8, user=1, dest=0, ports=3, mode="round_robin", tag_source=True, frames=10),
    "rr_4_notag_wide": dict(bytes=32, user=2, dest=2, ports=4, mode="round_robin", tag_source=False, frames=10),
    "prio_3_notag": dict(bytes=8, user=1, dest=0, ports=3, mode="priority", tag_source=False, frames=10),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_axis_arbiter(name):
    c = CONFIGS[name]
    # Without tag_source the inputs carry a tid wide enough to name their input.
    ident = 0 if c["tag_source"] else max(1, (c["ports"] - 1).bit_length())
    design = Design.of("axis.AxisArbiter", bytes=c["bytes"], user=c["user"], id=ident, dest=c["dest"],
                       ports=c["ports"], mode=c["mode"], tag_source=c["tag_source"])
    run_cocotb(design, __name__, bench=c)
