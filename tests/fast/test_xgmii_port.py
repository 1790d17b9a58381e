"""XgmiiPort (sim/fastsim) against cocotbext-eth 0.1.28's XgmiiSource and XgmiiSink, in
lockstep at every rising edge of a 390.625 MHz clock: the same frames queued at the same
edge must give the same XGMII word on every cycle; words a MAC might send (start in lane 0
or 4, end in any lane, error characters, bad FCS, runts) must decode to the same frames,
with the same start and end cycles and lanes. Randomised (OFFNIC_SEED replays)."""
from __future__ import annotations

import ctypes
import random
import struct
import zlib

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.eth import XgmiiFrame, XgmiiSink, XgmiiSource

from fast_shim import HERE, load, run_sv_bench

PERIOD_PS = 2560
IDLE_D, IDLE_C = 0x0707070707070707, 0xFF


def _frame_size(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.3:
        return rng.randint(1, 80)      # runts (unpadded) and minimum frames
    if r < 0.9:
        return rng.randint(60, 1600)
    return rng.randint(1600, 9000)     # jumbo


def _mac_words(rng: random.Random, nframes: int) -> list[tuple[int, int]]:
    """XGMII words as a MAC could send them: random gaps, START in lane 0 or 4,
    TERMINATE in any lane, some frames with a bad FCS or an error character (0xFE)."""
    lanes: list[tuple[int, int]] = [(0x07, 1)] * rng.randint(16, 40)
    for _ in range(nframes):
        payload = rng.randbytes(_frame_size(rng))
        body = bytearray(b"\x55" * 7 + b"\xd5" + payload + struct.pack("<L", zlib.crc32(payload)))
        if rng.random() < 0.1:
            body[-1] ^= 0x5A
        ctrl = [0] * len(body)
        if rng.random() < 0.1:
            k = rng.randrange(1, len(body))
            body[k], ctrl[k] = 0xFE, 1
            body, ctrl = body[:k + 1 + rng.randint(0, 3)], ctrl[:k + 1 + rng.randint(0, 3)]
        while len(lanes) % 4:
            lanes.append((0x07, 1))
        if len(lanes) % 8 == 0 and rng.random() < 0.5:
            lanes += [(0x07, 1)] * 4         # start in lane 4
        lanes.append((0xFB, 1))
        lanes += list(zip(body[1:], ctrl[1:]))
        lanes.append((0xFD, 1))
        lanes += [(0x07, 1)] * rng.choice([5, 8, 12, 20, rng.randint(0, 64)])
    while len(lanes) % 8:
        lanes.append((0x07, 1))
    words = []
    for i in range(0, len(lanes), 8):
        d = sum(b << (8 * k) for k, (b, _) in enumerate(lanes[i:i + 8]))
        c = sum(cc << k for k, (_, cc) in enumerate(lanes[i:i + 8]))
        words.append((d, c))
    return words


@cocotb.test()
async def lockstep(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    lib = load()
    port = lib.xg_new()
    cocotb.start_soon(Clock(dut.clk, PERIOD_PS, unit="ps").start())
    dut.rst.value = 1
    dut.snk_d.value, dut.snk_c.value = IDLE_D, IDLE_C
    source = XgmiiSource(dut.src_d, dut.src_c, dut.clk, dut.rst)
    sink = XgmiiSink(dut.snk_d, dut.snk_c, dut.clk, dut.rst)
    for m in (source.log, sink.log):
        m.setLevel("WARNING")
    await ClockCycles(dut.clk, 8)
    dut.rst.value = 0

    mac = _mac_words(rng, 150)
    plan_frames = 250
    sent = 0
    edge_ps: list[int] = []
    prev = (IDLE_D, IDLE_C)
    rxd, rxc = ctypes.c_uint64(), ctypes.c_uint8()
    buf = ctypes.create_string_buffer(16384)
    meta = (ctypes.c_uint64 * 7)()
    cycle = 0
    quiet_until = 0
    words_checked = frames_checked = 0
    while sent < plan_frames or lib.xg_tx_pending(port) or cycle < len(mac) + 4 or not source.idle():
        await RisingEdge(dut.clk)
        d, c = mac[cycle] if cycle < len(mac) else (IDLE_D, IDLE_C)
        dut.snk_d.value, dut.snk_c.value = d, c
        await ReadOnly()
        edge_ps.append(cocotb.utils.get_sim_time("ps"))
        lib.xg_tick(port, prev[0], prev[1], ctypes.byref(rxd), ctypes.byref(rxc))
        prev = (d, c)
        got = (int(dut.src_d.value), int(dut.src_c.value))
        assert got == (rxd.value, rxc.value), \
            f"cycle {cycle}: XgmiiSource {got[0]:016x}/{got[1]:02x}, XgmiiPort {rxd.value:016x}/{rxc.value:02x}"
        words_checked += 1
        # frames into both at the same edge: bursts (back to back) or after a gap
        if sent < plan_frames and cycle >= quiet_until:
            for _ in range(rng.choice([1, 1, 1, 2, 5])):
                n = _frame_size(rng)
                pad = n >= 60 or rng.random() < 0.5
                bad = rng.random() < 0.15
                payload = rng.randbytes(n)
                f = XgmiiFrame.from_payload(payload, min_len=60 if pad else 0)
                if bad:
                    data = bytearray(f.data)
                    data[-1] ^= 0xFF
                    f.data = data
                source.send_nowait(f)
                lib.xg_send(port, payload, n, int(pad), int(bad))
                sent += 1
            quiet_until = cycle + rng.choice([0, 0, 1, 3, 50, 300])
        # decoded frames: the same, in the same order, at the same cycles and lanes
        while not sink.empty():
            pf = sink.recv_nowait(compact=False)
            assert lib.xg_recv(port, buf, len(buf), meta), f"cycle {cycle}: XgmiiSink has a frame XgmiiPort lacks"
            try:
                payload, ok = bytes(pf.get_payload()), pf.check_fcs()
            except ValueError:     # no SFD
                payload, ok = b"", False
            n = int(meta[0])
            assert buf.raw[:n] == payload and bool(meta[1]) == ok, f"frame {frames_checked}: data or FCS differ"
            step = PERIOD_PS // 8
            # XgmiiSink dates a lane by the time since the last edge it processed, which after
            # an idle gap (it sleeps) spans several cycles: a lane-0 start is exact, a lane-4
            # start is checked by its lane and that its edge is the sink's; so is an end in the
            # start's own word (a frame cut short by an error character)
            assert pf.start_lane == meta[4], f"frame {frames_checked}: start lane"
            if meta[4] == 0:
                assert pf.sim_time_start == edge_ps[meta[2]], f"frame {frames_checked}: start"
            else:
                assert edge_ps[meta[2]] < pf.sim_time_start and (
                    meta[2] + 1 == len(edge_ps) or pf.sim_time_start - edge_ps[meta[2]] < 3 * (len(edge_ps) * PERIOD_PS)), \
                    f"frame {frames_checked}: start"
            if meta[3] != meta[2] or meta[5] == 0:
                assert pf.sim_time_end == edge_ps[meta[3]] + step * meta[5], f"frame {frames_checked}: end"
            else:       # ends in its start word (an error character): the same caveat as a lane-4 start
                assert pf.sim_time_start <= pf.sim_time_end and edge_ps[meta[3]] < pf.sim_time_end, \
                    f"frame {frames_checked}: end"
            frames_checked += 1
        cycle += 1
    assert not lib.xg_recv(port, buf, len(buf), meta), "XgmiiPort decoded a frame XgmiiSink did not"
    cnt = (ctypes.c_uint64 * 8)()
    lib.xg_counters(port, cnt)
    assert cnt[0] == sent and cnt[3] == frames_checked
    dut._log.info("%d words and %d decoded frames identical; counters %s", words_checked, frames_checked, list(cnt))
    assert frames_checked >= 50
    lib.xg_free(port)


def test_xgmii_port_lockstep():
    run_sv_bench(HERE / "xgmii_bench.sv", "xgmii_bench", __name__)
