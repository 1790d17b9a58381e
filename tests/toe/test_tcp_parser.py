"""The TCP engine's parser (hw/src/offnic/toe/TcpParser.scala) against
`offnic_sim.toe.tcp_parse.expected` (Linux's header checks and option parsing).

Frames go in with random gaps and come out with random stalls, unchanged; each frame's
info (taken with random back-pressure) must equal the reference, in frame order:
- good segments with random fields and payloads (0..1,460 B), VLAN-tagged or not, short
  ones with Ethernet padding, and every option layout a stack sends (none, the aligned
  timestamp, timestamp + SACK blocks, a SYN's MSS/SACK-permitted/TS/WS) and some none
  does (a bare timestamp, two timestamps, random bytes, a zero or overlong length, EOL
  before a timestamp);
- bad ones: TCP or IP checksum wrong, data offset below 5 or past the segment, total
  length below 20 or past the frame;
- the host's: IPv4 with options, fragments, UDP, ARP, IPv6, runts.
Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import logging
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from offnic_sim.toe import tcp_parse
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from tcp_frames import traffic

FIELDS = ["kind", "bad", "key", "seq", "ack", "flags", "window", "tsPresent", "tsVal", "tsEcr", "dataStart",
          "dataLen"]


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def tcp_parser(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    Clock(dut.clock, 4, unit="ns").start()
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clock, dut.reset)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clock, dut.reset)
    for x in (src, sink):
        x.log.setLevel(logging.WARNING)
    dut.reset.value = 1
    dut.m_info_ready.value = 0
    await ClockCycles(dut.clock, 4)
    await FallingEdge(dut.clock)
    dut.reset.value = 0
    infos: list[dict] = []
    stall = [0.0]

    async def take_infos():
        while True:
            await FallingEdge(dut.clock)
            ready = rng.random() >= stall[0]
            dut.m_info_ready.value = int(ready)
            if ready and dut.m_info_valid.value:
                infos.append({f: int(getattr(dut, "m_info_bits_" + f).value) for f in FIELDS})
    cocotb.start_soon(take_infos())

    frames, out, checked = [], [], 0
    for gap, st in ((0.0, 0.0), (0.5, 0.3), (0.1, 0.8)):
        stall[0] = st
        src.set_pause_generator(iter(lambda: rng.random() < gap, None))
        sink.set_pause_generator(iter(lambda: rng.random() < st, None))
        batch = traffic(rng, 400)
        for f in batch:
            await src.send(AxiStreamFrame(f))
        frames += batch
        for _ in range(20_000):
            while not sink.empty():
                out.append(bytes((await sink.recv()).tdata))
            if len(infos) == len(out) == len(frames):
                break
            await ClockCycles(dut.clock, 10)
        assert len(infos) == len(out) == len(frames), f"{len(infos)} infos, {len(out)} frames out of {len(frames)}"
    kinds = [0, 0, 0]
    walked = 0
    for i, (f, got) in enumerate(zip(frames, infos)):
        want = tcp_parse.expected(f)
        kinds[want["kind"]] += 1
        for k, v in want.items():
            if k == "ts":
                g = (got["tsVal"], got["tsEcr"]) if got["tsPresent"] else None
                assert g == v, f"frame {i}: timestamp {g}, want {v}; frame {f.hex()}"
                walked += v is not None
            else:
                name = {"data_start": "dataStart", "data_len": "dataLen"}.get(k, k)
                assert got[name] == v, f"frame {i}: {name} {got[name]}, want {v}; frame {f.hex()}"
        checked += 1
    assert out == frames, "the stream must pass unchanged"
    assert min(kinds) > 50, kinds
    dut._log.info(f"{checked} frames checked: {kinds[1]} TCP ({walked} with a timestamp), {kinds[2]} bad, "
                  f"{kinds[0]} the host's")


def test_tcp_parser():
    run_cocotb(Design.of("toe.TcpParser"), __name__)
