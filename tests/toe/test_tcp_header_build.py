"""The TCP engine's header builder (hw/src/offnic/toe/TcpHeaderBuild.scala) against
`tcppeer.build_packet` (the segments proven against Linux): random headers with and
without timestamps, 0..4 SACK blocks, pure segments (whole frames) and data segments'
fronts (payload length and sum given), sequence numbers across 2^32, random gaps and
back-pressure. Every frame's bytes and checksums must be exactly Linux-shaped, and the
builder must keep up with one segment per header's beats. Seeds are printed by the
harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import logging
import random
import struct

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamSink

from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.net.ipfrag import ones_sum16
from offnic_sim.toe.toe_hw import field_port, sack_port
from offnic_sim.net.tcppeer import build_packet, parse_segment


def random_header(rng: random.Random) -> dict:
    ts = rng.random() < 0.7
    n = rng.randrange(4 if ts else 5)
    h = {"dstMac": rng.getrandbits(48), "srcMac": rng.getrandbits(48), "srcIp": rng.getrandbits(32),
         "dstIp": rng.getrandbits(32), "sport": rng.randrange(65536), "dport": rng.randrange(65536),
         "ipId": rng.randrange(65536), "seq": rng.choice([rng.getrandbits(32), (1 << 32) - rng.randrange(1, 3000)]),
         "ack": rng.getrandbits(32), "flags": rng.choice([0x10, 0x18, 0x11, 0x14, 0x04, rng.randrange(256)]),
         "window": rng.randrange(65536), "tsPresent": int(ts), "tsVal": rng.getrandbits(32),
         "tsEcr": rng.getrandbits(32), "sackN": n,
         "sack": [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(4)]}
    payload = b"" if rng.random() < 0.6 else rng.randbytes(rng.randrange(1, 9001))
    h["payload"] = payload
    return h


def expected(h: dict) -> bytes:
    """The frame's headers as Linux lays them out (the payload, if any, is not sent here)."""
    opts = b""
    if h["tsPresent"]:
        opts += b"\x01\x01\x08\x0a" + struct.pack("!II", h["tsVal"], h["tsEcr"])
    if h["sackN"]:
        opts += b"\x01\x01\x05" + bytes([2 + 8 * h["sackN"]]) + b"".join(
            struct.pack("!II", *h["sack"][k]) for k in range(h["sackN"]))
    p = build_packet(h["srcIp"].to_bytes(4, "big"), h["dstIp"].to_bytes(4, "big"), h["sport"], h["dport"], h["seq"],
                     h["ack"], h["flags"], h["window"], h["payload"], options=opts, ident=h["ipId"])
    parse_segment(p)  # (checksums verify)
    eth = h["dstMac"].to_bytes(6, "big") + h["srcMac"].to_bytes(6, "big") + b"\x08\x00"
    return eth + p[:40 + len(opts)]


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def tcp_header_build(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    d = dut
    Clock(d.clock, 4, unit="ns").start()
    sink = AxiStreamSink(AxiStreamBus.from_prefix(d, "m_axis"), d.clock, d.reset)
    sink.log.setLevel(logging.WARNING)
    d.reset.value = 1
    d.s_hdr_valid.value = 0
    await ClockCycles(d.clock, 4)
    await FallingEdge(d.clock)
    d.reset.value = 0

    def drive(h: dict) -> None:
        for k, v in h.items():
            if k == "sack":
                for i, (a, b) in enumerate(v):
                    getattr(d, sack_port("s_hdr_bits", i, "start")).value = a
                    getattr(d, sack_port("s_hdr_bits", i, "end")).value = b
            elif k == "payload":
                d.s_hdr_bits_payloadLen.value = len(v)
                d.s_hdr_bits_payloadSum.value = ones_sum16(v) if v else 0
            else:
                getattr(d, field_port("s_hdr_bits", k)).value = v

    checked = 0
    for gap, stall in ((0.0, 0.0), (0.4, 0.3), (0.0, 0.7)):
        sink.set_pause_generator(iter(lambda: rng.random() < stall, None))
        hdrs = [random_header(rng) for _ in range(300)]
        hdrs[-1]["payload"] = b""  # a pure segment last: its tlast ends the sink's stream
        want = [expected(h) for h in hdrs]
        t0 = None
        await FallingEdge(d.clock)  # inputs change at falling edges only
        for h in hdrs:
            while rng.random() < gap:
                await FallingEdge(d.clock)
            drive(h)
            d.s_hdr_valid.value = 1
            while True:
                await Timer(1, "ns")
                taken = bool(d.s_hdr_ready.value)
                await FallingEdge(d.clock)
                if taken:
                    break
            t0 = t0 or cocotb.utils.get_sim_time("ns")
            d.s_hdr_valid.value = 0
        # Frames with a payload end without tlast (the payload stage would finish them):
        # the sink sees consecutive headers as one stream, so split by the lengths.
        got = b""
        for _ in range(5000):
            while not sink.empty():
                got += bytes((await sink.recv()).tdata)
            if len(got) >= sum(map(len, want)):
                break
            await ClockCycles(d.clock, 5)
        stream = b"".join(want)
        at = 0
        for i, w in enumerate(want):
            assert got[at:at + len(w)] == w, (
                f"segment {i}: got {got[at:at + len(w)].hex()}\n want {w.hex()}\n header {hdrs[i]}")
            at += len(w)
            checked += 1
        assert len(got) == len(stream), (len(got), len(stream))
        if gap == stall == 0.0:
            span = (cocotb.utils.get_sim_time("ns") - t0) / 4
            beats = sum((len(w) + 31) // 32 for w in want)
            d._log.info(f"300 headers in ~{span:.0f} cycles for {beats} beats")
    d._log.info(f"{checked} segment headers checked")


def test_tcp_header_build():
    run_cocotb(Design.of("toe.TcpHeaderBuild"), __name__)
