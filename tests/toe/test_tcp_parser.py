"""The TCP engine's parser (hw/src/offnic/toe/TcpParser.scala) against
`offnic_sim.tcp_parse.expected` (Linux's header checks and option parsing).

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
import struct

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from offnic_sim import tcp_parse
from offnic_sim.harness import run_cocotb
from offnic_sim.hw import Design
from offnic_sim.ipfrag import with_checksum
from offnic_sim.tcppeer import build_packet, tcp_options

MACS = bytes.fromhex("020000000002" "020000000001")
FIELDS = ["kind", "bad", "key", "seq", "ack", "flags", "window", "tsPresent", "tsVal", "tsEcr", "dataStart",
          "dataLen"]


def options(rng: random.Random) -> bytes:
    ts = (rng.getrandbits(32), rng.getrandbits(32))
    tsopt = struct.pack("!BBII", 8, 10, *ts)
    sack = b"\x01\x01\x05" + bytes([2 + 8 * (n := rng.randrange(1, 4))]) + rng.randbytes(8 * n)
    return rng.choice([
        b"", b"\x01\x01" + tsopt, b"\x01\x01" + tsopt, b"\x01\x01" + tsopt + sack,
        tcp_options(mss=rng.randrange(536, 9000), wscale=rng.randrange(15), ts=ts, sack_perm=True),
        tsopt + b"\0\0", b"\x01\x01" + tsopt + b"\x01\x01" + struct.pack("!BBII", 8, 10, 1, 2),
        rng.randbytes(4 * rng.randrange(1, 11)), b"\x08\x00" + rng.randbytes(10), b"\x01\x01\x08\x28" + tsopt,
        b"\x00\x01" + tsopt, b"\x02\x04\x05\xb4" + b"\x01\x01" + tsopt, tcp_options(mss=1460),
    ])


def segment(rng: random.Random) -> bytes:
    src, dst = rng.randbytes(4), rng.randbytes(4)
    payload = rng.randbytes(rng.choice([0, 0, 1, rng.randrange(1, 200), rng.randrange(1, 1461)]))
    return build_packet(src, dst, rng.randrange(65536), rng.randrange(65536), rng.getrandbits(32),
                        rng.getrandbits(32), rng.randrange(256), rng.randrange(65536), payload,
                        options=options(rng)[:40], ident=rng.randrange(65536))


def eth(packet: bytes, rng: random.Random, etype: bytes = b"\x08\x00") -> bytes:
    f = MACS + (b"\x81\x00\x00\x05" if rng.random() < 0.25 else b"") + etype + packet
    return f + bytes(max(0, 60 - len(f)))  # Ethernet padding


def spoil(p: bytearray, rng: random.Random) -> bytes:
    """A bad or not-for-the-engine variant of IPv4/TCP packet `p`."""
    how = rng.randrange(9)
    if how == 0:                                   # TCP checksum
        p[36] ^= 1 << rng.randrange(8)
    elif how == 1:                                 # IP checksum
        p[10] ^= 0x40
    elif how in (2, 3):                            # data offset below 5, or past the segment
        p[32] = (rng.randrange(5) if how == 2 else 15) << 4 | (p[32] & 15)
    elif how == 4:                                 # total length below 20 or past the frame
        p[2:4] = struct.pack("!H", rng.choice([rng.randrange(20), len(p) + rng.randrange(1, 100)]))
        p[:20] = with_checksum(bytes(p[:10]) + b"\0\0" + bytes(p[12:20]))
    elif how == 5:                                 # IP options: the host's
        p[:] = with_checksum(bytes([0x46]) + bytes(p[1:2]) + struct.pack("!H", len(p) + 4) + bytes(p[4:10]) + b"\0\0"
                             + bytes(p[12:20]) + b"\x01\x01\x01\x00") + p[20:]
    elif how == 6:                                 # a fragment
        p[6:8] = struct.pack("!H", 0x2000 | rng.randrange(2))
        p[:20] = with_checksum(bytes(p[:10]) + b"\0\0" + bytes(p[12:20]))
    elif how == 7:                                 # UDP
        p[9] = 17
        p[:20] = with_checksum(bytes(p[:10]) + b"\0\0" + bytes(p[12:20]))
    else:                                          # truncated in the TCP header
        return bytes(p[:rng.randrange(20, 40)])
    return bytes(p)


def traffic(rng: random.Random, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.7:
            out.append(eth(segment(rng), rng))
        elif r < 0.93:
            out.append(eth(spoil(bytearray(segment(rng)), rng), rng))
        else:
            out.append(eth(rng.randbytes(rng.randrange(28, 100)), rng, rng.choice([b"\x08\x06", b"\x86\xdd"])))
    return out


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
