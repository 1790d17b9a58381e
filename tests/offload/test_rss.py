"""Bench: RssHash (receive-side scaling) against the Python model in rss_model.py.

First, plain pytest: the model's Toeplitz hash gives Microsoft's published RSS verification
values, and the model's frame parser agrees with scapy's dissector on random intact frames.
Then the RTL (cocotb), every frame checked twice: its data unchanged on m_axis (with its
tuser mark) and its {queue, hash, hash_type} on m_axis_rss, in order:
  - ms_vectors: Microsoft's vectors as TCP/UDP/ICMP frames, with and without a VLAN tag,
    against the published hash values, then with TCP/UDP and IPv4/IPv6 hashing disabled;
  - random_traffic: scapy frames of every kind (IPv4 with options and fragments, IPv6 with
    extension headers, VLAN, QinQ, non-IP, mangled headers, truncated, padded), a new random
    key, indirection table and enable set per batch, random back-pressure on all streams;
  - truncation_sweep: every prefix length of frames with the longest headers;
  - consumer_order: a consumer that takes each result before its frame's data, and one that
    takes it only after the frame's last beat: neither may deadlock;
  - throughput: back-to-back 64-byte frames and one-beat runts go through at one beat per
    cycle with no stall, and each result appears RESULT_LATENCY cycles after the frame's
    header beat.
Both outputs are also held to the AXI-Stream rule (HoldCheck) under back-pressure. Two
builds: the NIC's (32-byte beats, 128 x 8-bit table) and a small one (8-byte beats, so the
header spans 11 beats; 16 x 4-bit table).
"""
import ipaddress
import random

import cocotb
import pytest
from cocotb.triggers import RisingEdge

from offnic_sim.harness.axis_tb import BeatTap, HoldCheck, set_pauses
from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design
from rss_frames import Frame, ms_vector_frames, random_frame, scapy_view, truncation_templates
from rss_model import (IPV4, IPV6, MS_IPV4_VECTORS, MS_IPV6_VECTORS, MS_KEY, NONE, TCP, UDP, Enables, RssResult,
                       rss_input, toeplitz, tuple_bytes)
from rss_tb import RssTB

# Cycles from the cycle a frame's header beat (beat 2, or its last beat if shorter) is
# accepted on s_axis to the cycle its result is first valid on m_axis_rss (RssHash.scala).
RESULT_LATENCY = 6
PERIOD_PS = 4000


def cfg() -> dict:
    return bench_config()


# ------------------------------------------------------------------ the model, plain pytest

@pytest.mark.parametrize("version", ["ipv4", "ipv6"])
def test_rss_model_ms_vectors(version):
    """Microsoft's published Toeplitz verification values, 2-tuple and 4-tuple."""
    vectors = MS_IPV4_VECTORS if version == "ipv4" else MS_IPV6_VECTORS
    for src, sport, dst, dport, h2, h4 in vectors:
        assert toeplitz(MS_KEY, tuple_bytes(src, dst)) == h2, (src, dst)
        assert toeplitz(MS_KEY, tuple_bytes(src, dst, sport, dport)) == h4, (src, sport, dst, dport)
    # The example the brief names.
    assert toeplitz(MS_KEY, tuple_bytes("66.9.149.187", "161.142.100.80", 2794, 1766)) == 0x51CCC178


def test_rss_model_parser_vs_scapy():
    """On intact random frames, the model picks exactly the fields scapy's dissector finds
    (and frames built from the vectors hash to the published values)."""
    random.seed(12345)
    seen = set()
    for _ in range(1500):
        f = random_frame()
        hash_type, data = rss_input(f.data)
        seen.add(hash_type)
        if not f.intact:
            continue
        version, fields = scapy_view(f.data)
        want = b""
        if version != "none":
            want = ipaddress.ip_address(fields[0]).packed + ipaddress.ip_address(fields[1]).packed
            if len(fields) == 4:
                want += fields[2].to_bytes(2, "big") + fields[3].to_bytes(2, "big")
        assert data == want, f"model {data.hex()} != scapy {fields} for {f}"
        assert (hash_type != NONE) == (version != "none"), f
    assert seen == {NONE, IPV4, IPV6, IPV4 | TCP, IPV4 | UDP, IPV6 | TCP, IPV6 | UDP}
    for f, h2, h4 in ms_vector_frames():
        t, data = rss_input(f.data)
        assert t == ms_type(f, True) and toeplitz(MS_KEY, data) == (h4 if t & (TCP | UDP) else h2), f


# ------------------------------------------------------------------ the RTL, cocotb

def ms_type(f: Frame, ports: bool) -> int:
    ip = IPV4 if "ipv4" in f.desc else IPV6
    if not ports:
        return ip
    return ip | (TCP if "/tcp" in f.desc else UDP if "/udp" in f.desc else 0)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def ms_vectors(dut):
    """The published values decide here, not the model."""
    tb = RssTB(dut)
    await tb.do_reset()
    vectors = ms_vector_frames()
    for ports in (True, False):
        tb.new_boards(f"ms vectors ports={ports}")
        await tb.configure(MS_KEY, tb.random_table(), Enables(tcp=ports, udp=ports))
        for f, h2, h4 in vectors:
            t = ms_type(f, ports)
            h = h4 if t & (TCP | UDP) else h2
            tb.send(f, result=RssResult(tb.table[h % tb.table_size], h, t))
        await tb.drain()

    # One IP version off: its frames are "none" (hash 0, queue table[0]).
    for en in (Enables(ipv4=False), Enables(ipv6=False)):
        tb.new_boards(f"{en}")
        await tb.configure(MS_KEY, tb.random_table(), en)
        for f, h2, h4 in vectors:
            off = (not en.ipv4 and "ipv4" in f.desc) or (not en.ipv6 and "ipv6" in f.desc)
            t = NONE if off else ms_type(f, True)
            h = 0 if off else h4 if t & (TCP | UDP) else h2
            tb.send(f, result=RssResult(tb.table[h % tb.table_size], h, t))
        await tb.drain()


BATCHES = [  # (source idle, m_axis stall, m_axis_rss stall)
    (0.0, 0.0, 0.0),
    (0.5, 0.0, 0.0),
    (0.0, 0.6, 0.0),
    (0.0, 0.0, 0.85),
    (0.3, 0.5, 0.5),
    (0.0, 0.3, 0.95),
]


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def random_traffic(dut):
    c = cfg()
    tb = RssTB(dut)
    holds = [HoldCheck(dut, p, tb.clock, tb.reset) for p in ("m_axis", "m_axis_rss")]
    await tb.do_reset()
    counts: dict[int, int] = {}
    for i, (idle, stall, rss_stall) in enumerate(BATCHES):
        key = MS_KEY if i == 0 else random.randbytes(40)
        en = Enables() if i < 3 else Enables(*(random.random() < 0.75 for _ in range(4)))
        tb.new_boards(f"batch {i} idle={idle} stall={stall} rss_stall={rss_stall} {en}")
        await tb.configure(key, tb.random_table(), en)
        tb.back_pressure(idle, stall)
        set_pauses([tb.rss], rss_stall)
        for _ in range(c["frames"]):
            f = random_frame()
            tb.send(f, bad=random.random() < 0.1)
            t = tb.result_board.notes[-1][0].hash_type
            counts[t] = counts.get(t, 0) + 1
        await tb.drain()
        dut._log.info("%s: %d frames", tb.result_board.name, tb.result_board.received)
    tb.back_pressure(0, 0)
    set_pauses([tb.rss], 0)
    assert set(counts) == {NONE, IPV4, IPV6, IPV4 | TCP, IPV4 | UDP, IPV6 | TCP, IPV6 | UDP}, counts
    assert all(h.stalls > 0 for h in holds), "the hold check never saw a stall"
    dut._log.info("hash types seen: %s", counts)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def truncation_sweep(dut):
    """Every prefix of frames with the longest headers: each length must give the defined
    type (hash over what is there, or "none") and nothing may hang."""
    tb = RssTB(dut)
    await tb.do_reset()
    await tb.configure(random.randbytes(40), tb.random_table(), Enables())
    tb.back_pressure(0.2, 0.2)
    set_pauses([tb.rss], 0.3)
    for t in truncation_templates():
        for n in range(1, len(t.data) + 1):
            tb.send(Frame(t.data[:n], f"{t.desc} cut to {n} B", intact=n == len(t.data)))
    await tb.drain()


async def strict_consumer(tb: RssTB, mode: str, counts: list) -> None:
    """Drives both tready signals as a consumer that pairs results with frames: in
    "result_first" it takes frame k's data only after result k; in "data_first" it takes
    result k only after frame k's last beat. Random stalls on top."""
    dut = tb.dut
    frames_out = results_out = 0
    while True:
        await RisingEdge(tb.clock)
        if dut.m_axis_tvalid.value == 1 and dut.m_axis_tready.value == 1 and dut.m_axis_tlast.value == 1:
            frames_out += 1
        if dut.m_axis_rss_tvalid.value == 1 and dut.m_axis_rss_tready.value == 1:
            results_out += 1
        counts[:] = [frames_out, results_out]
        stall = random.random() < 0.3
        if mode == "result_first":
            data_ready = results_out > frames_out and not stall
            rss_ready = random.random() < 0.7
        else:
            rss_ready = frames_out > results_out and not stall
            data_ready = random.random() < 0.7
        dut.m_axis_tready.value = int(data_ready)
        dut.m_axis_rss_tready.value = int(rss_ready)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def consumer_order(dut):
    c = cfg()
    tb = RssTB(dut, monitors=True)
    await tb.do_reset()
    for mode in ("result_first", "data_first"):
        tb.new_boards(mode)
        await tb.configure(random.randbytes(40), tb.random_table(), Enables())
        counts = [0, 0]
        task = cocotb.start_soon(strict_consumer(tb, mode, counts))
        tb.back_pressure(0.2, 0)
        for _ in range(c["frames"] // 2):
            tb.send(random_frame())
        await tb.drain(max_cycles=50_000)
        task.cancel()
        dut.m_axis_tready.value = 0
        dut.m_axis_rss_tready.value = 0
        assert counts[0] == counts[1] == c["frames"] // 2, counts


def _consecutive(times: list[int]) -> bool:
    return all(b - a == PERIOD_PS for a, b in zip(times, times[1:]))


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def throughput(dut):
    """Back-to-back 64-byte frames, then one-beat runts, no back-pressure anywhere: a beat
    in and out every cycle, a result per frame at the stated latency."""
    tb = RssTB(dut)
    await tb.do_reset()
    await tb.configure(random.randbytes(40), tb.random_table(), Enables())
    taps = {p: BeatTap(dut, p, tb.clock) for p in ("s_axis", "m_axis", "m_axis_rss")}
    w = tb.width
    header_beats = (82 + w - 1) // w  # RssParser.HdrEnd: bytes 12 until 82
    for name, size, count in (("64-byte", 64, 150), ("runt", w, 150)):
        tb.new_boards(name)
        frames = []
        while len(frames) < count:
            f = random_frame()
            if len(f.data) >= size:
                frames.append(Frame(f.data[:size], f.desc + f" cut to {size} B", intact=False))
        hashed = 0
        for f in frames:
            tb.send(f)
            hashed += tb.result_board.notes[-1][0].hash_type != NONE
        assert size < 34 or hashed > count // 2, f"only {hashed} of {count} frames hashed"
        await tb.drain()
        beats_per_frame = size // w
        ins, outs, results = (taps[p].take() for p in ("s_axis", "m_axis", "m_axis_rss"))
        assert len(ins) == len(outs) == count * beats_per_frame
        assert _consecutive([b.time_ps for b in ins]), f"{name}: s_axis stalled or idled"
        assert _consecutive([b.time_ps for b in outs]), f"{name}: m_axis had gaps"
        assert len(results) == count
        hdr_idx = min(header_beats, beats_per_frame) - 1
        for k, r in enumerate(results):
            hdr_time = ins[k * beats_per_frame + hdr_idx].time_ps
            latency = (r.time_ps - hdr_time) // PERIOD_PS
            assert latency == RESULT_LATENCY, f"{name} frame {k}: result {latency} cycles after its header beat"
        dut._log.info("%s: %d frames in %d cycles", name, count, len(ins))


CONFIGS = {
    "b32_t128_q8": dict(bytes=32, table_size=128, queue_bits=8, frames=250),
    "b8_t16_q4": dict(bytes=8, table_size=16, queue_bits=4, frames=120),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_rss_hash(name):
    c = CONFIGS[name]
    design = Design.of("offload.RssHash", bytes=c["bytes"], user=1, table_size=c["table_size"],
                       queue_bits=c["queue_bits"])
    run_cocotb(design, __name__, bench=c)
