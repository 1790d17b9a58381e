"""Bench: the XGMII rate adapter (phy.XgmiiRateAdapter) between two clocks a few hundred ppm
apart, both ways it is used on a board, against the column model of
sim/offnic_sim/phy/xgmii_columns.py (IEEE 802.3 clause 46/49: only idle columns change,
only between frames):

- MAC -> PCS: the writer offers a word every cycle (the MAC has no clock enable), the
  reader takes one 32 cycles in 33 (the PCS's TX gearbox), faster or slower than the writer;
- PCS -> MAC: the writer gives a word 32 cycles in 33 (the RX gearbox), the reader takes
  every cycle;
- at 25G (MAC 390.625 MHz, GT 402.83 MHz) and 10G (156.25 / 161.13 MHz).

Traffic: back-to-back frames at the MAC's shortest gaps (8..15 idles, padded to a column)
with sequence ordered sets among them; one case carries every frame size from 64 to
1518 bytes, the others random sizes up to jumbo (9018). Checked: every frame intact and
in order, the non-idle columns exactly the input's, an idle column after every frame's
end; the writer faster means deletions and never an overflow, the reader faster means
insertions and never an underflow; every column accounted for (idle columns out = in -
deleted + 2 x inserted - what is left in the buffer, which is a few words of idles).

Clock periods are whole picoseconds (the simulator's resolution), so the offsets are
what those periods give: 146..327 ppm (beyond the 200 ppm two +-100 ppm clocks can be
apart) and, so that a short run has to delete many times, 1,400..1,800 ppm.
"""
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.phy import xgmii_columns as xc

DESIGN = Design.of("phy.XgmiiRateAdapter", label="xgmii_rate_adapter", depth=32, low_mark=8, high_mark=20)


def ppm(case: dict) -> float:
    """How much faster the writer's word rate is than the reader's, in ppm."""
    w = case["in_ps"] * (33 / 32 if case["in_gated"] else 1)
    r = case["out_ps"] * (33 / 32 if case["out_gated"] else 1)
    return (r / w - 1) * 1e6


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def adapt(dut):
    case = bench_config()
    rng = random.Random(random.getrandbits(32))
    if case["all_sizes"]:
        sizes = list(range(64, 1519))
        rng.shuffle(sizes)
    else:
        sizes = [rng.choice([64, 65, 127, 128, 256, 511, 1514, 1518, 9018]) if rng.random() < 0.3
                 else rng.randrange(64, 1519) for _ in range(case["frames"])]
    frames = [rng.randbytes(n) for n in sizes]
    words = xc.frames_to_words(frames, rng, seq_every=7)

    cocotb.start_soon(Clock(dut.in_clk, case["in_ps"], unit="ps", period_high=case["in_ps"] // 2).start())
    await Timer(rng.randrange(1, 2000), unit="ps")  # an arbitrary phase between the clocks
    cocotb.start_soon(Clock(dut.out_clk, case["out_ps"], unit="ps", period_high=case["out_ps"] // 2).start())
    dut.in_valid.value = 0
    dut.in_d.value, dut.in_c.value = xc.IDLE_WORD
    dut.out_ready.value = 0
    dut.in_rst.value = 1
    dut.out_rst.value = 1
    await ClockCycles(dut.in_clk, 4)
    await ClockCycles(dut.out_clk, 4)
    dut.in_rst.value = 0
    dut.out_rst.value = 0

    sent: list[tuple[int, int]] = []
    got: list[tuple[int, int]] = []
    done = {"in": False}
    tail = 400  # idle words after the traffic, so the buffer settles

    async def writer():
        n, i = rng.randrange(33), 0
        while i < len(words) + tail:
            await RisingEdge(dut.in_clk)
            n += 1
            valid = not case["in_gated"] or n % 33 != 0
            dut.in_valid.value = int(valid)
            if valid:
                w = words[i] if i < len(words) else xc.IDLE_WORD
                dut.in_d.value, dut.in_c.value = w
                sent.append(w)
                i += 1
        await RisingEdge(dut.in_clk)
        dut.in_valid.value = 0
        done["in"] = True

    async def reader():
        n, ready = rng.randrange(33), 0
        while True:
            await RisingEdge(dut.out_clk)
            if ready:  # the word shown before this edge was taken at it
                got.append((int(dut.out_d.value), int(dut.out_c.value)))
            n += 1
            ready = int(not case["out_gated"] or n % 33 != 0)
            dut.out_ready.value = ready

    cocotb.start_soon(reader())
    await cocotb.start_soon(writer())
    at_end = stats(dut)  # before the idle run-out below, where the reader only inserts
    await ClockCycles(dut.out_clk, 200)
    final = stats(dut)
    drift = ppm(case)
    cocotb.log.info("%s: %.0f ppm, %d frames, %d words in, %d out; at the traffic's end %s, final %s", case["name"],
                    drift, len(frames), len(sent), len(got), at_end, final)
    assert final["overflows"] == 0 and final["underflows"] == 0, final
    counts = xc.check_adapted(sent, got, frames)
    cocotb.log.info("idle columns: %s", counts)
    # The slower side never adapts; the faster side's adaptations make up the drift, less
    # what the buffer absorbs (it moves at most `depth` words between its marks). The
    # start-up fill inserts up to low_mark words plus the synchroniser's lag.
    depth, startup = 32, 8 + 4
    drift_cols = abs(drift) * 1e-6 * len(sent) * 2
    if drift > 0:
        assert at_end["inserted"] <= startup, at_end
        assert at_end["deleted"] >= drift_cols - 2 * depth, (at_end, drift_cols)
    else:
        assert at_end["deleted"] == 0, at_end
        assert 2 * at_end["inserted"] >= drift_cols - 2 * depth, (at_end, drift_cols)
    # Every column accounted for: what is left in the buffer is a few words, all idle.
    left_cols = counts["idle_in"] - final["deleted"] + 2 * final["inserted"] - counts["idle_out"]
    assert 0 <= left_cols <= 2 * depth, (left_cols, counts, final)


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def overflow_underflow(dut):
    """Bad cases forced: the reader stops for 100 cycles (the buffer overflows) and the
    writer stops for 100 cycles (it underflows), each in the middle of a frame. Both are
    counted; the frames they cut arrive marked (/E/ inside; where the dropped words held a
    frame's end, it runs into the next and both arrive as one marked frame); every other
    frame arrives intact and in order."""
    case = bench_config()
    if not case["all_sizes"]:
        return  # once is enough: in the all-sizes case's model
    rng = random.Random(random.getrandbits(32))
    frames = [rng.randbytes(1500) for _ in range(12)]
    words = xc.frames_to_words(frames, rng)
    cocotb.start_soon(Clock(dut.in_clk, 2560, unit="ps").start())
    cocotb.start_soon(Clock(dut.out_clk, 2560, unit="ps").start())
    dut.in_valid.value, dut.out_ready.value = 0, 0
    dut.in_d.value, dut.in_c.value = xc.IDLE_WORD
    dut.in_rst.value, dut.out_rst.value = 1, 1
    await ClockCycles(dut.in_clk, 4)
    dut.in_rst.value, dut.out_rst.value = 0, 0
    got = []
    stall = {"out": False}

    async def reader():
        ready = 0
        while True:
            await RisingEdge(dut.out_clk)
            if ready:
                got.append((int(dut.out_d.value), int(dut.out_c.value)))
            ready = int(not stall["out"])
            dut.out_ready.value = ready

    cocotb.start_soon(reader())
    for i, w in enumerate(words + [xc.IDLE_WORD] * 100):
        await RisingEdge(dut.in_clk)
        if i == 500:  # inside the third frame: the reader stops, the buffer fills
            stall["out"] = True
        if i == 600:
            stall["out"] = False
        if i == 1400:  # inside the seventh frame: the writer stops, the buffer empties
            dut.in_valid.value = 0
            await ClockCycles(dut.in_clk, 100)
            await RisingEdge(dut.in_clk)
        dut.in_valid.value = 1
        dut.in_d.value, dut.in_c.value = w
    dut.in_valid.value = 0
    await ClockCycles(dut.out_clk, 100)
    s = stats(dut)
    out = xc.frames_marked(xc.columns(got))
    cocotb.log.info("%s; frames out: %s", s, [bad for _, bad in out])
    assert s["overflows"] > 0 and s["underflows"] > 0, s
    good = [f for f, bad in out if not bad]
    assert sum(bad for _, bad in out) >= 2
    assert all(f in frames for f in good) and len(good) >= len(frames) - 4, "a good frame damaged or lost"
    assert good == [f for f in frames if f in good], "order"


def stats(dut) -> dict[str, int]:
    return {k: int(getattr(dut, "stat_" + k).value) for k in ("deleted", "overflows", "inserted", "underflows")}


# (writer, reader): 25G MAC 390.625 MHz = 2560 ps, GT 402.83 MHz = 2482.4 ps (one word in 33
# idle); 10G MAC 156.25 MHz = 6400 ps, GT 161.13 MHz = 6206.1 ps.
CASES = {
    "tx25_mac_fast": dict(in_ps=2561, in_gated=False, out_ps=2484, out_gated=True, all_sizes=True),
    "tx25_mac_slow": dict(in_ps=2562, in_gated=False, out_ps=2484, out_gated=True, all_sizes=False, frames=300),
    "tx25_mac_faster": dict(in_ps=2558, in_gated=False, out_ps=2484, out_gated=True, all_sizes=False, frames=300),
    "rx25_gt_fast": dict(in_ps=2480, in_gated=True, out_ps=2561, out_gated=False, all_sizes=False, frames=300),
    "rx25_gt_slow": dict(in_ps=2484, in_gated=True, out_ps=2561, out_gated=False, all_sizes=False, frames=300),
    "rx10_gt_fast": dict(in_ps=6195, in_gated=True, out_ps=6400, out_gated=False, all_sizes=False, frames=200),
    "tx10_mac_slow": dict(in_ps=6401, in_gated=False, out_ps=6205, out_gated=True, all_sizes=False, frames=200),
}


@pytest.mark.parametrize("case", CASES)
def test_rate_adapter(case):
    c = dict(CASES[case], name=case)
    assert abs(ppm(c)) >= 140, ppm(c)  # the case really has the clocks apart
    run_cocotb(DESIGN, __name__, bench=c)
