"""Bench: eth.EthPort, one NIC port: the MAC in its own clock domain (390.625 MHz for 25G,
156.25 MHz for 10G) and the crossings into the 250 MHz core domain.

cocotbext-eth's XgmiiSource/XgmiiSink are the link partner, cocotbext-axi's
AxiStreamSource/Sink the NIC core. Both directions run at once; the MAC clock starts at
a random phase. Checked against a Python model (port_tb.Model, eth_tb.rx_model):

- TX: random frames of 1 B .. 9 KB, s_axis idling at random, also inside frames: every
  frame appears on the wire whole (padded to 60 B, right FCS, no /E/: the MAC never
  underruns behind the store-and-forward buffer), in order; a frame longer than the
  transmit buffer is dropped unsent and counted in tx_errors;
- RX: good frames (60 .. 9014 B payload), bad FCS, runts (with and without FCS), oversize,
  /E/ and other control characters inside frames, frames cut by the next /S/, fragments:
  m_axis carries exactly the good frames, without FCS, packed; with m_axis back-pressured
  (random stalls, then a long full stop) the port drops whole frames only, and
  rx_fifo_drops counts them; a good frame longer than the receive buffer is dropped and
  counted too;
- every counter exactly equal to the model, after every phase;
- cfg_ifg / cfg_max_frame_len changed at run time cross into the MAC domain: the wire gap
  and the receive limit follow;
- throughput: back-to-back 64 B and 1518 B frames in both directions at once, logged in
  Gb/s; every transmitted frame after the first few starts exactly where the DIC rule
  puts it (line rate), also for a random mix of 64 B .. 9 KB sizes, and m_axis keeps up;
- the MAC side never stalls: the receive crossing's input is watched (it must never
  refuse a beat).
"""
import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from eth_tb import (item_bad_fcs, item_cut_by_start, item_error_char, item_fragment, item_good, item_raw_region,
                    random_payload)
from offnic_sim.harness.axis_tb import HoldCheck, frame_sizes
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design
from port_tb import PortTB, WireWatch, wire_frame_bytes

MAX_PAYLOAD = 9000


def rx_mix(count: int, max_len: int, bad: bool = True) -> list:
    """Receive-side items: mostly good frames of every size up to the limit, and (with
    `bad`) every kind of bad frame."""
    top = max_len - 4
    good_size = lambda: random.choice([random.randint(60, 200), random.randint(60, 1514), random.randint(60, top)])
    makers = [(0.55, lambda: item_good(random_payload(good_size())))]
    if bad:
        makers += [
            (0.08, lambda: item_bad_fcs(random_payload(good_size()))),
            (0.06, lambda: item_raw_region(random_payload(random.randint(0, 63)), "runt_raw")),
            (0.06, lambda: item_good(random_payload(random.randint(0, 59)), "runt_fcs")),
            (0.05, lambda: item_good(random_payload(random.randint(top + 1, top + 40)), "oversize")),
            (0.06, lambda: item_error_char(random_payload(random.randint(60, 600)))),
            (0.06, lambda: item_cut_by_start(random_payload(random.randint(60, 400)),
                                             random_payload(random.randint(60, 400)))),
            (0.03, lambda: item_fragment()),
        ]
    total = sum(w for w, _ in makers)
    items = []
    for _ in range(count):
        r = random.random() * total
        for w, make in makers:
            r -= w
            if r <= 0:
                items.append(make())
                break
        else:
            items.append(makers[0][1]())
    return items


@cocotb.test(timeout_time=30, timeout_unit="ms")
async def duplex_traffic(dut):
    """Both directions at once: random sizes, s_axis pausing mid-frame, every kind of bad
    receive frame; then m_axis back-pressure (drops whole and counted); counters exact."""
    c = bench_config()
    tb = PortTB(dut, c["mac_ns"])
    await tb.reset()
    n = c["frames"]

    # 1. No back-pressure on m_axis: nothing may be dropped. s_axis idles, also mid-frame.
    for tx_idle in (0.0, 0.4):
        tb.back_pressure(tx_idle, 0.0)
        for size in frame_sizes(n, MAX_PAYLOAD):
            tb.send_tx(random_payload(size))
        tb.xsource.ifg = random.choice([12, 12, 8, 5])
        for item in rx_mix(n, tb.max_len):
            tb.send_rx(item)
        await tb.settle(f"duplex, s_axis idle {tx_idle}", allow_drops=False)
    assert tb.rx_dropped == 0

    # 2. m_axis back-pressured at random, good frames arriving at line rate: the receive
    #    buffer fills, and frames must be dropped whole, in between intact ones.
    hold = HoldCheck(dut, "m_axis", dut.clock)
    tb.xsource.ifg = 12
    for stall in (0.6, 0.9):
        tb.back_pressure(0.2, stall)
        for size in frame_sizes(n // 2, MAX_PAYLOAD):
            tb.send_tx(random_payload(size))
        for item in rx_mix(n, tb.max_len, bad=stall < 0.8):
            tb.send_rx(item)
        while not tb.xsource.idle():
            await ClockCycles(dut.clock, 256)
            tb.check_m_axis(allow_drops=True)
            tb.check_wire()
        tb.back_pressure(0.0, 0.0)
        await tb.settle(f"m_axis stalled {stall}", allow_drops=True)
    hold.stop()
    assert hold.stalls > 100, "m_axis was hardly ever stalled"

    # 3. m_axis stopped outright while ten jumbo frames arrive (90 KB against a 32 KiB
    #    buffer): drops are certain; then it restarts and small frames still pass.
    dropped_before = tb.rx_dropped
    tb.sink.pause = True
    for _ in range(10):
        tb.send_rx(item_good(random_payload(random.randint(8000, tb.max_len - 4))))
    while not tb.xsource.idle():
        await ClockCycles(dut.clock, 256)
    await ClockCycles(dut.clock, 200)
    assert int(dut.m_axis_tvalid.value) == 1, "a whole frame should be waiting on m_axis"
    tb.sink.pause = False
    for item in rx_mix(20, tb.max_len, bad=False):
        tb.send_rx(item)
    await tb.settle("m_axis stopped", allow_drops=True)
    assert tb.rx_dropped - dropped_before >= 5, f"only {tb.rx_dropped - dropped_before} of 10 jumbos dropped"
    dut._log.info("drops: %d good frames dropped whole in all, as counted", tb.rx_dropped)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def limits_and_config(dut):
    """Frames longer than the buffers, padding, and configuration changed at run time."""
    c = bench_config()
    tb = PortTB(dut, c["mac_ns"])
    await tb.reset()
    tx_cap, rx_cap = c["tx_buffer"], c["rx_buffer"]

    # Padding: every payload length around the 60-byte minimum, both directions.
    for size in range(1, 70):
        tb.send_tx(random_payload(size))
    for size in range(55, 70):
        tb.send_rx(item_good(random_payload(size)))  # < 60: runt (with FCS, under 64 B)
    await tb.settle("padding")

    # A TX frame longer than the transmit buffer is dropped unsent and counted; the ones
    # around it go out intact.
    tb.send_tx(random_payload(100))
    tb.send_tx(random_payload(tx_cap + random.randint(1, 500)), fits=False)
    tb.send_tx(random_payload(tx_cap))  # exactly the buffer: still goes out
    tb.send_tx(random_payload(100))
    # A good RX frame longer than the receive buffer (the MAC limit raised above it): the
    # MAC counts it good, the buffer drops it (rx_fifo_drops), the next frames pass.
    await tb.set_cfg(max_len=min(65535, rx_cap + 2000))
    tb.send_rx(item_good(random_payload(rx_cap + 100)))
    for _ in range(3):
        tb.send_rx(item_good(random_payload(random.randint(60, 300))))
    await tb.settle("longer than the buffers", allow_drops=True)
    assert tb.rx_dropped == 1

    # Receive limit lowered to 1518: longer frames become oversize, at the new limit.
    await tb.set_cfg(max_len=1518)
    for _ in range(30):
        tb.send_rx(item_good(random_payload(random.randint(1500, 1530))))
    await tb.settle("limit 1518")

    # Gap raised to 20 and lowered to 9: back-to-back frames go out exactly where the
    # deficit idle count puts them for the new cfg_ifg (average exactly cfg_ifg).
    for ifg in (20, 9):
        await tb.set_cfg(ifg=ifg, max_len=9018)
        watch = WireWatch(dut)
        sizes = [random.randint(60, 200) for _ in range(30)]
        for s in sizes:
            tb.send_tx(random_payload(s))
        frames = []
        while len(frames) < len(sizes):
            frames.append(await tb.xsink.recv())
        await ClockCycles(dut.mac_clk, 10)
        gaps = watch.back_to_back(ifg, skip=3)  # from the fourth frame on, the buffer runs ahead
        watch.stop()
        assert len(watch.frames) == len(sizes)
        dut._log.info("cfg_ifg %d: back-to-back gaps %d..%d, average %.3f", ifg, min(gaps), max(gaps),
                      sum(gaps) / len(gaps))
        for f in frames:
            tb.check_wire_frame(f)
    await tb.set_cfg(ifg=12)
    await tb.settle("ifg changes")


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def throughput(dut):
    """Back-to-back 64 B and 1518 B frames (FCS included), both directions at once: the
    wire must carry them at line rate and m_axis must keep up (no drops)."""
    c = bench_config()
    tb = PortTB(dut, c["mac_ns"])
    await tb.reset()
    gbps_line = c["gbps"]
    ifg = tb.ifg
    mac_hz = 1e9 / tb.mac_ns
    for frame_len, count in ((64, 150), (1518, 30)):
        payload_len = frame_len - 4
        tx = [random_payload(payload_len) for _ in range(count)]
        rx = [random_payload(payload_len) for _ in range(count)]
        watch = WireWatch(dut)
        for p in tx:
            tb.send_tx(p)
        tb.xsource.ifg = ifg
        for p in rx:
            tb.send_rx(item_good(p))
        wire = []
        while len(wire) < count:
            wire.append(await tb.xsink.recv())
        got = []
        while len(got) < count:
            got.append(await tb.sink.recv())
        await ClockCycles(dut.mac_clk, 10)
        for f in wire:
            tb.check_wire_frame(f)
        for f, p in zip(got, rx):
            assert bytes(f.tdata) == p
        tb.model.rx_pending.clear()
        tb.rx_done += count
        # TX: exact frame starts on the wire; after the first frames (store and forward:
        # the first frame waits to be whole) every start where DIC puts it.
        watch.back_to_back(ifg, skip=2)
        starts = [f.start for f in watch.frames]
        watch.stop()
        tx_fps = (count - 3) / ((starts[-1] - starts[2]) / 8 / mac_hz)
        # RX: frames leaving on m_axis (the sink's timestamps, in the core clock).
        rx_fps = (count - 3) / ((got[-1].sim_time_end - got[2].sim_time_end) * 1e-12)
        w = wire_frame_bytes(payload_len, ifg)
        ideal_fps = gbps_line * 1e9 / 8 / w
        for label, fps in (("TX (s_axis -> wire)", tx_fps), ("RX (wire -> m_axis)", rx_fps)):
            dut._log.info("%s %4d B frames: %.3f Mframes/s = %.2f Gb/s of frames, %.2f Gb/s on the wire "
                          "(line rate %.3f Mframes/s, %.2f%%)", label, frame_len, fps / 1e6,
                          fps * frame_len * 8 / 1e9, fps * w * 8 / 1e9, ideal_fps / 1e6, 100 * fps / ideal_fps)
        assert tx_fps >= 0.995 * ideal_fps, f"TX {frame_len} B: {tx_fps:.0f} frames/s, line rate {ideal_fps:.0f}"
        assert rx_fps >= 0.98 * ideal_fps, f"RX {frame_len} B: {rx_fps:.0f} frames/s, line rate {ideal_fps:.0f}"

    # Mixed sizes back to back (two jumbos first, then 60 B .. 9 KB at random): after the
    # first frame the buffer runs ahead of the MAC, so every start is where DIC puts it:
    # line rate whatever the order of sizes.
    sizes = [9000, 9000] + [random.choice([60, random.randint(60, 1514), random.randint(60, 9000)])
                            for _ in range(c["mixed"])]
    watch = WireWatch(dut)
    for s in sizes:
        tb.send_tx(random_payload(s))
    frames = []
    while len(frames) < len(sizes):
        frames.append(await tb.xsink.recv())
    await ClockCycles(dut.mac_clk, 10)
    gaps = watch.back_to_back(ifg, skip=1)
    starts = [f.start for f in watch.frames]
    watch.stop()
    wire_bytes = sum(wire_frame_bytes(s, ifg) for s in sizes[1:-1])
    span_bytes = starts[-1] - starts[1]
    dut._log.info("TX mixed sizes, %d frames of %d..%d B: gaps %d..%d B, %.2f Gb/s on the wire (%.2f%% of line rate)",
                  len(sizes), min(sizes) + 4, max(sizes) + 4, min(gaps), max(gaps),
                  gbps_line * wire_bytes / span_bytes, 100 * wire_bytes / span_bytes)
    for f in frames:
        tb.check_wire_frame(f)
    await tb.settle("throughput")


# The same RTL runs at either MAC clock. Buffers of the default (jumbo) build: TX 512 x 32 B,
# RX 1024 x 32 B.
CONFIGS = {
    "25g": dict(mac_ns=2.56, gbps=25, frames=100, mixed=24, tx_buffer=16384, rx_buffer=32768),
    "10g": dict(mac_ns=6.4, gbps=10, frames=60, mixed=12, tx_buffer=16384, rx_buffer=32768),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_eth_port(name):
    run_cocotb(Design.of("eth.EthPort", max_frame_len=9018), __name__, bench=CONFIGS[name], internals=True)  # watches rxCross
