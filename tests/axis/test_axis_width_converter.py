"""Bench: AxisWidthConverter (upsize, downsize and same-width passthrough).

Random frames of 1 B to 9 KB, some with an end-of-frame tuser mark, under every
combination of source idling and sink back-pressure. Checked frame by frame (data
exact, frame-end tuser, tid/tdest) and beat by beat against a Python model of the
conversion: every output beat is packed (full tkeep except a frame's last beat, whose
kept bytes are the low ones), carries the tuser of the last input beat it holds, and
tlast exactly on the frame's last beat. Also full rate on the narrow side.
"""
import random

import cocotb
import pytest
from cocotbext.axi import AxiStreamFrame

from offnic_sim.harness.axis_tb import (BACK_PRESSURE, JUMBO, Beat, BeatTap, HoldCheck, Scoreboard, StreamTB, drain, frame_sizes,
                                random_payload, user_marks)
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design

PERIOD_NS = 4.0



def keep_mask(keep: int, nbytes: int) -> int:
    """tdata bits of the bytes `keep` marks (bytes not kept may hold anything)."""
    return sum(0xFF << (8 * i) for i in range(nbytes) if keep >> i & 1)


def model(beats: list[Beat], in_bytes: int, out_bytes: int) -> list[tuple]:
    """The output beats (data, keep, last, user, id, dest) the converter should make of
    `beats`, data masked to kept bytes."""
    out = []
    if out_bytes >= in_bytes:  # upsize (or same width): gather `ratio` beats, fewer at a frame's end
        ratio = out_bytes // in_bytes
        group: list[Beat] = []
        for b in beats:
            group.append(b)
            if b.last or len(group) == ratio:
                data = keep = 0
                for i, g in enumerate(group):
                    data |= (g.data & keep_mask(g.keep, in_bytes)) << (8 * in_bytes * i)
                    keep |= g.keep << (in_bytes * i)
                out.append((data, keep, b.last, b.user, b.id, b.dest))
                group = []
    else:  # downsize: split, dropping the empty tail of a frame's last beat
        ratio = in_bytes // out_bytes
        for b in beats:
            lanes = ratio if not b.last else -(-bin(b.keep).count("1") // out_bytes)
            for i in range(lanes):
                k = (b.keep >> (out_bytes * i)) & ((1 << out_bytes) - 1)
                d = (b.data >> (8 * out_bytes * i)) & keep_mask(k, out_bytes)
                out.append((d, k, b.last and i == lanes - 1, b.user, b.id, b.dest))
    return out


def check_beats(name: str, beats_in: list[Beat], beats_out: list[Beat], in_bytes: int, out_bytes: int) -> None:
    full = (1 << out_bytes) - 1
    for i, b in enumerate(beats_out):
        if not b.last:
            assert b.keep == full, f"{name}: output beat {i} not packed: tkeep {b.keep:#x} without tlast"
        else:
            assert b.keep and b.keep & (b.keep + 1) == 0, \
                f"{name}: output beat {i} (last) tkeep {b.keep:#x}: kept bytes not the low ones"
    want = model(beats_in, in_bytes, out_bytes)
    got = [(b.data & keep_mask(b.keep, out_bytes), b.keep, b.last, b.user, b.id, b.dest) for b in beats_out]
    assert len(got) == len(want), f"{name}: {len(got)} output beats, model says {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, (f"{name}: output beat {i} differs from the model:\n got  data={g[0]:#x} keep={g[1]:#x} "
                        f"last={g[2]} user={g[3]} id={g[4]} dest={g[5]}\n want data={w[0]:#x} keep={w[1]:#x} "
                        f"last={w[2]} user={w[3]} id={w[4]} dest={w[5]}")


def new_frame(c: dict, board: Scoreboard, n: int, mark_rate: float = 0.3) -> AxiStreamFrame:
    data = random_payload(n)
    mark = random.randrange(1, 1 << c["user"]) if c["user"] and random.random() < mark_rate else 0
    tid = random.randrange(1 << c["id"]) if c["id"] else None
    tdest = random.randrange(1 << c["dest"]) if c["dest"] else None
    board.expect(data, tuser=mark, tid=tid, tdest=tdest)
    return AxiStreamFrame(data, tuser=user_marks(n, mark, c["in_bytes"]), tid=tid, tdest=tdest)


def make_tb(dut) -> tuple[StreamTB, BeatTap, BeatTap]:
    tb = StreamTB(dut, period_ns=PERIOD_NS)
    return tb, BeatTap(dut, "s_axis", tb.clock), BeatTap(dut, "m_axis", tb.clock)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def random_frames(dut):
    c = bench_config()
    tb, tap_in, tap_out = make_tb(dut)
    await tb.do_reset()
    hold = HoldCheck(dut, "m_axis", tb.clock)
    marked = 0
    for idle, stall in BACK_PRESSURE:
        tb.back_pressure(idle, stall)
        board = Scoreboard(f"{c['in_bytes']}->{c['out_bytes']} idle={idle} stall={stall}", check_user=True)
        for n in frame_sizes(c["frames"]):
            tb.source.send_nowait(new_frame(c, board, n))
        marked += sum(1 for e in board.pending if e.tuser)
        await drain(tb.sink, board, tb.clock)
        assert tb.source.empty()
        beats_in, beats_out = tap_in.take(), tap_out.take()
        check_beats(board.name, beats_in, beats_out, c["in_bytes"], c["out_bytes"])
        dut._log.info("%s: %d frames, %d bytes, %d beats in, %d out", board.name, board.received,
                      board.received_bytes, len(beats_in), len(beats_out))
    assert marked > 0, "no frame carried a tuser mark: the tuser check was not exercised"
    assert hold.stalls > 100, "the output was hardly ever stalled: hold check not exercised"


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def full_rate(dut):
    """No back-pressure: the narrow side runs at one beat per cycle (a 9 KB frame, then a
    burst of short frames back to back)."""
    c = bench_config()
    narrow = min(c["in_bytes"], c["out_bytes"])
    tb, tap_in, tap_out = make_tb(dut)
    await tb.do_reset()
    period_ps = int(PERIOD_NS * 1000)
    for sizes in ([JUMBO], [random.randint(1, 300) for _ in range(40)]):
        board = Scoreboard(f"full rate {len(sizes)} frames")
        for n in sizes:
            tb.source.send_nowait(new_frame(c, board, n, mark_rate=0.0))
        await drain(tb.sink, board, tb.clock, idle_cycles=20)
        beats_in, beats_out = tap_in.take(), tap_out.take()
        check_beats(board.name, beats_in, beats_out, c["in_bytes"], c["out_bytes"])
        side = beats_in if c["in_bytes"] == narrow else beats_out
        span = (side[-1].time_ps - side[0].time_ps) // period_ps + 1
        dut._log.info("%s: %d narrow beats in %d cycles", board.name, len(side), span)
        assert span <= len(side) + 1, f"{board.name}: {len(side)} narrow-side beats took {span} cycles"


CONFIGS = {
    "up_8_32": dict(in_bytes=8, out_bytes=32, user=1, id=0, dest=0, frames=40),
    "down_32_8": dict(in_bytes=32, out_bytes=8, user=1, id=0, dest=0, frames=40),
    "pass_8_8": dict(in_bytes=8, out_bytes=8, user=1, id=0, dest=0, frames=40),
    "up_8_64_sideband": dict(in_bytes=8, out_bytes=64, user=2, id=2, dest=3, frames=30),
    "down_64_16_sideband": dict(in_bytes=64, out_bytes=16, user=2, id=2, dest=3, frames=30),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_axis_width_converter(name):
    c = CONFIGS[name]
    design = Design.of("axis.AxisWidthConverter", in_bytes=c["in_bytes"], out_bytes=c["out_bytes"], user=c["user"],
                       id=c["id"], dest=c["dest"])
    run_cocotb(design, __name__, bench=c)
