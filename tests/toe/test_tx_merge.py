"""Bench: toe.TxMerge, one port's transmit input shared by host frames and the TCP
engine's segments (issue 17), host first or FCFS (round robin).

Checked with cocotbext-axi sources on both inputs and a sink, random frame sizes, source
idling and sink stalls, both modes:
 - every frame comes out whole and byte-exact, each input's frames in their order, none
   lost or duplicated (a scoreboard per input, frames told apart by a header byte);
 - host first: no engine segment starts (its first beat taken at the input) in a cycle a
   host frame is offered, watched at the ports; stat_engine_over_host stays 0. FCFS:
   engine segments do start while host frames wait (the check can fail);
 - the frame counters equal the frames sent.

Replay a run: OFFNIC_SEED=N.
"""
import random

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamFrame

from offnic_sim.harness.axis_tb import StreamTB, random_payload
from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb

DESIGN = Design.of("toe.TxMerge", bytes=32, user=1)


class PortWatch:
    """Engine segments that start while a host frame is offered; frame counter pulses."""

    def __init__(self, dut):
        self.dut = dut
        self.over = self.stat_over = self.host = self.engine = 0
        cocotb.start_soon(self._run())

    async def _run(self):
        d = self.dut
        eng_mid = False
        while True:
            await RisingEdge(d.clock)
            if d.s_axis_engine_tvalid.value == 1 and d.s_axis_engine_tready.value == 1:
                if not eng_mid and d.s_axis_host_tvalid.value == 1:
                    self.over += 1
                eng_mid = d.s_axis_engine_tlast.value == 0
            self.stat_over += int(d.stat_engine_over_host.value)
            self.host += int(d.stat_host_frame.value)
            self.engine += int(d.stat_engine_frame.value)


def frame(src: int, seq: int) -> bytes:
    n = random.choice([random.randint(3, 64), random.randint(60, 1514), random.randint(3, 300)])
    return bytes([src, seq & 0xFF, seq >> 8]) + random_payload(n - 3)


@cocotb.test(timeout_time=30, timeout_unit="ms")
async def tx_merge(dut):
    tb = StreamTB(dut, sources=("s_axis_host", "s_axis_engine"))
    dut.cfg_fcfs.value = 0
    await tb.do_reset()
    w = PortWatch(dut)
    overs = {}
    for fcfs in (0, 1, 0):
        dut.cfg_fcfs.value = fcfs
        for idle, stall in ((0.0, 0.0), (0.3, 0.5), (0.0, 0.8)):
            tb.back_pressure(idle, stall)
            over0, stat0, h0, e0 = w.over, w.stat_over, w.host, w.engine
            sent = {0: [frame(0, i) for i in range(120)], 1: [frame(1, i) for i in range(120)]}
            for src in (0, 1):
                for f in sent[src]:
                    tb.sources[src].send_nowait(AxiStreamFrame(f))
            got = {0: [], 1: []}
            quiet = 0
            # Until every frame is out and then 300 quiet cycles (a duplicate would show),
            # failing after 200,000 cycles instead of hanging.
            for _ in range(200_000):
                if quiet >= 300 and sum(map(len, got.values())) >= 240:
                    break
                await RisingEdge(tb.clock)
                quiet += 1
                while not tb.sink.empty():
                    f = bytes(tb.sink.recv_nowait().tdata)
                    assert f[0] in (0, 1), f"a frame from no input: {f[:8].hex()}"
                    got[f[0]].append(f)
                    quiet = 0
            for src in (0, 1):
                name = ("host", "engine")[src]
                assert len(got[src]) == len(sent[src]), f"{name}: {len(got[src])} of {len(sent[src])} frames out"
                for i, (a, b) in enumerate(zip(got[src], sent[src])):
                    assert a == b, f"{name} frame {i}: differs ({len(a)} B out, {len(b)} B sent)"
            assert w.host - h0 == 120 and w.engine - e0 == 120, "frame counters"
            assert w.stat_over - stat0 == w.over - over0, \
                f"stat_engine_over_host {w.stat_over - stat0}, seen at the ports {w.over - over0}"
            overs[(fcfs, idle, stall)] = w.over - over0
            if not fcfs:
                assert w.over == over0, f"host first: {w.over - over0} engine segments started while a host frame waited"
    dut._log.info("engine segments started while a host frame waited: %s", overs)
    assert sum(v for (f, _, _), v in overs.items() if f) > 0, "FCFS never let the engine ahead: the check is blind"


def test_tx_merge():
    run_cocotb(DESIGN, __name__)
