"""Bench: EthMacRx (64-bit XGMII -> AXI-Stream) against a Python model (eth_tb.rx_model).

cocotbext-eth's XgmiiSource drives the XGMII (with DIC, so frames start in lanes 0 and 4)
with crafted frames; every frame's verdict and byte count must match the model exactly,
in order, and every delivered frame must be its bytes without the FCS, marked bad
(tuser) unless good:

- good frames of 60..9014 payload bytes, with the source's gap 12 and shorter ones down
  to 1 byte (below any legal gap: /T/ and the next /S/ in one word);
- bad FCS (one flipped bit anywhere, FCS included), runts (0..63 bytes, right FCS or
  none), oversize (cut at the limit), /E/ or another control character inside the frame,
  frames cut short by the next frame's /S/ (which must then arrive whole), fragments
  (/S/ with a broken preamble: nothing, not counted);
- random XGMII noise, after which good frames still arrive intact (no hang);
- beat rules on m_axis: full tkeep except the last beat, packed, tuser only on the last;
  at most one stat pulse a cycle, bytes output zero without one.
"""
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamSink
from cocotbext.eth import XgmiiSource

from eth_tb import (ERROR, IDLE, IDLE_WORD, PERIOD_10G_NS, RX_STATS, START, TERM, RxItem, StatRecorder,
                    item_bad_fcs, item_cut_by_start, item_error_char, item_fragment, item_good,
                    item_raw_region, item_tight_pair, random_payload, rx_model, fcs)
from offnic_sim.harness.axis_tb import quiet
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design


class BeatRules:
    """m_axis beat shape: tkeep 0xFF except on the last beat, where it is packed (low
    bytes); tuser only on a last beat; counts beats (and cycles with a beat)."""

    def __init__(self, dut):
        self.dut = dut
        self.problems: list[str] = []
        self.beats = 0
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        d = self.dut
        edge = RisingEdge(d.clock)
        while True:
            await edge
            if d.m_axis_tvalid.value != 1:
                continue
            self.beats += 1
            keep, last, user = int(d.m_axis_tkeep.value), int(d.m_axis_tlast.value), int(d.m_axis_tuser.value)
            if not last and (keep != 0xFF or user):
                self.problems.append(f"non-last beat with tkeep {keep:#x} tuser {user}")
            if last and (keep == 0 or keep & (keep + 1)):
                self.problems.append(f"last beat with tkeep {keep:#x}")


class RxTB:
    def __init__(self, dut, max_len: int):
        self.dut = dut
        self.clock = dut.clock
        self.max_len = max_len
        cocotb.start_soon(Clock(dut.clock, PERIOD_10G_NS, unit="ns").start())
        dut.cfg_max_frame_len.value = max_len
        self.source = XgmiiSource(dut.xgmii_rxd, dut.xgmii_rxc, dut.clock, dut.reset)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clock, dut.reset)
        quiet(self.source, self.sink)
        self.stats = StatRecorder(dut, dut.clock, RX_STATS, "stat_rx_bytes")
        self.rules = BeatRules(dut)
        self.expected = []
        self.kinds: dict[str, int] = {}

    async def reset(self) -> None:
        self.dut.reset.value = 1
        await ClockCycles(self.clock, 4)
        self.dut.reset.value = 0
        await ClockCycles(self.clock, 2)

    def send(self, item: RxItem) -> None:
        self.source.send_nowait(item.frame)
        self.kinds[item.kind] = self.kinds.get(item.kind, 0) + 1
        for region, term in item.expect:
            self.expected.append(rx_model(region, term, self.max_len))

    async def check(self, label: str, max_cycles: int = 400_000) -> dict[str, int]:
        """Wait for the source to finish (or fail: no hang), then compare everything the
        MAC produced with the model, frame by frame. Returns verdict counts."""
        for _ in range(max_cycles // 64):
            if self.source.idle():
                break
            await ClockCycles(self.clock, 64)
        else:
            raise AssertionError(f"{label}: source still busy after {max_cycles} cycles")
        await ClockCycles(self.clock, 40)  # pipeline
        assert not self.rules.problems, f"{label}: {self.rules.problems[:5]}"
        assert not self.stats.problems, f"{label}: {self.stats.problems[:5]}"
        events = self.stats.take()
        want = [(v.verdict, v.length) for v in self.expected]
        for i, (g, w) in enumerate(zip(events, want)):
            assert g == w, f"{label}: frame {i}: verdict/bytes {g}, model says {w}"
        assert len(events) == len(want), f"{label}: {len(events)} verdicts, expected {len(want)}"
        delivered = [v for v in self.expected if v.delivered is not None]
        for i, v in enumerate(delivered):
            assert not self.sink.empty(), f"{label}: m_axis frame {i} of {len(delivered)} missing"
            f = self.sink.recv_nowait()
            got = bytes(f.tdata)
            user = f.tuser[-1] if isinstance(f.tuser, list) else (f.tuser or 0)
            assert got == v.delivered, (f"{label}: m_axis frame {i} ({v.verdict}): {len(got)} B, expected "
                                        f"{len(v.delivered)} B" + (" (content differs)" if len(got) == len(v.delivered) else ""))
            assert user == int(v.verdict != "good"), f"{label}: m_axis frame {i} ({v.verdict}) tuser {user}"
        assert self.sink.empty(), f"{label}: {self.sink.count()} extra frames on m_axis"
        counts = {}
        for v in self.expected:
            counts[v.verdict] = counts.get(v.verdict, 0) + 1
        self.dut._log.info("%s: %d frames %s from %s", label, len(self.expected), counts, self.kinds)
        self.expected, self.kinds = [], {}
        return counts


def good_sizes(count: int, max_len: int, edges: bool = False) -> list[int]:
    """`count` random good payload sizes (60 .. max_len - 4, small ones weighted), plus the
    edge cases around the minimum, the beat width and the maximum if `edges`."""
    top = max_len - 4
    sizes = [60, 61, 63, 64, 65, 67, 68, 71, 72, 1514, top - 1, top] if edges else []
    count += len(sizes)
    while len(sizes) < count:
        r = random.random()
        sizes.append(random.randint(60, 200) if r < 0.5 else random.randint(201, min(1514, top)) if r < 0.85
                     else random.randint(min(1515, top), top))
    random.shuffle(sizes)
    return sizes


@cocotb.test(timeout_time=60, timeout_unit="ms")
async def good_frames(dut):
    """Good frames of every size, lanes 0 and 4, normal and impossibly short gaps."""
    c = bench_config()
    tb = RxTB(dut, c["max_len"])
    await tb.reset()
    for phase, (ifg, dic, offset) in enumerate(((12, True, False), (12, True, True), (8, False, False),
                                                (5, True, False), (1, False, False))):
        tb.source.ifg, tb.source.enable_dic, tb.source.force_offset_start = ifg, dic, offset
        for n in good_sizes(c["frames"] // 5, c["max_len"], edges=phase < 2):
            tb.send(item_good(random_payload(n)))
        counts = await tb.check(f"ifg {ifg} dic {dic} lane4 {offset}")
        assert set(counts) == {"good"}
    # Two frames with a gap of 1..8 bytes from /T/ to /S/: /T/ and /S/ in one word too.
    tb.source.ifg, tb.source.enable_dic, tb.source.force_offset_start = 12, True, False
    for gap in list(range(1, 9)) * 3:
        tb.send(item_tight_pair(random_payload(random.randint(60, 90)), random_payload(random.randint(60, 90)), gap))
    assert set(await tb.check("tight pairs")) == {"good"}


@cocotb.test(timeout_time=60, timeout_unit="ms")
async def bad_frames(dut):
    """Every kind of bad frame mixed with good ones: verdicts, bytes and delivery exact."""
    c = bench_config()
    max_len = c["max_len"]
    tb = RxTB(dut, max_len)
    await tb.reset()
    top = max_len - 4

    def any_size() -> int:
        return random.choice([random.randint(60, 300), random.randint(60, top)])

    makers = [
        lambda: item_good(random_payload(any_size())),
        lambda: item_bad_fcs(random_payload(any_size())),
        lambda: item_raw_region(random_payload(random.randint(0, 63)), "runt_raw"),  # random bytes, no FCS
        lambda: item_good(random_payload(random.randint(0, 59)), "runt_fcs"),
        lambda: item_good(random_payload(random.randint(top + 1, top + 20)), "oversize"),
        lambda: item_good(random_payload(random.randint(top + 21, max_len + 2000)), "oversize"),
        lambda: item_error_char(random_payload(any_size())),
        lambda: item_error_char(random_payload(random.randint(60, 200)), random.choice([IDLE, START, 0xFC, 0x9C])),
        lambda: item_cut_by_start(random_payload(any_size()), random_payload(random.randint(60, 400))),
        lambda: item_fragment(),
    ]
    for phase, (ifg, offset) in enumerate(((12, False), (12, True), (5, False))):
        tb.source.ifg, tb.source.force_offset_start = ifg, offset
        for _ in range(c["frames"] // 3):
            tb.send(random.choice(makers)())
        await tb.check(f"mixed, ifg {ifg} lane4 {offset}")

    # The exact boundaries.
    for region in (b"", b"\x00", bytes(3), bytes(4), bytes(5), random_payload(63)):
        tb.send(item_raw_region(region, "runt_edge"))
    for n in (59, 60, top, top + 1):
        tb.send(item_good(random_payload(n)))
    for n in range(max_len - 12, max_len + 12):  # oversize cut at every lane
        p = random_payload(n - 4)
        tb.send(item_raw_region(p + fcs(p), "limit"))
    counts = await tb.check("boundaries")
    assert counts == {"runt": 7, "good": 15, "oversize": 12}, counts


@cocotb.test(timeout_time=30, timeout_unit="ms")
async def noise(dut):
    """Random XGMII words (control characters anywhere, starts in lanes 0 and 4): no
    rule broken, and afterwards good frames come through intact."""
    c = bench_config()
    tb = RxTB(dut, c["max_len"])
    await tb.reset()
    codes = [IDLE, START, START, TERM, ERROR, 0x9C]
    for _ in range(6):
        for _ in range(300):
            d = ctl = 0
            for lane in range(8):
                if random.random() < (0.15 if lane in (0, 4) else 0.05):
                    d |= random.choice(codes) << (8 * lane)
                    ctl |= 1 << lane
                else:
                    d |= (0x55 if random.random() < 0.5 else random.randrange(256)) << (8 * lane)
            dut.xgmii_rxd.value = d
            dut.xgmii_rxc.value = ctl
            await RisingEdge(tb.clock)
        dut.xgmii_rxd.value = IDLE_WORD
        dut.xgmii_rxc.value = 0xFF
        await ClockCycles(tb.clock, 40)
        assert not tb.stats.problems, tb.stats.problems[:5]
        assert not tb.rules.problems, tb.rules.problems[:5]
        tb.stats.take()
        tb.sink.clear()
        for n in good_sizes(8, c["max_len"]):
            tb.send(item_good(random_payload(n)))
        await tb.check("after noise")


CONFIGS = {
    "max1518": dict(max_len=1518, frames=150, tests="good_frames,noise"),
    "max1518_bad": dict(max_len=1518, frames=300, tests="bad_frames"),
    "max9018": dict(max_len=9018, frames=80, tests="good_frames,bad_frames"),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_eth_mac_rx(name):
    c = CONFIGS[name]
    run_cocotb(Design.of("eth.EthMacRx"), __name__, testcase=c["tests"].split(","), bench=c)
