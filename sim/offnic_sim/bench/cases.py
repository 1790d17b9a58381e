"""The cases of a whole-NIC workload simulation (what `./offnic demo` and `./offnic bench
base` run, bench/workload.py explains a case's timeline): their settings as plain dicts,
the frame format every case uses (a local EtherType and a tag at byte 14) and the
driver's tuning per frame-size mix."""
from __future__ import annotations

from offnic_sim.net.wire import LINE_GBPS, WIRE_OVERHEAD

TX_RING = 256
RX_RING = 512
BUF_SIZE = 9216             # host bytes per TX/RX descriptor: the longest frame fits
MAX_FRAME = 9018            # ports' max_frame_len (with FCS): 9000-byte payload + 14 + 4
IN_FLIGHT_BYTES = 48 * 1024
PROBE_FRAMES = 8            # frames per size of an unloaded-latency probe
TAG_AT = 14                 # the tag's byte offset in every frame
HDR = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\xb5"   # EtherType 0x88b5 (local)

IMIX = [[64, 7], [576, 4], [1500, 1], [9000, 0.25]]  # demo mix: IMIX 7:4:1 plus some jumbo frames
BENCH_SIZES = [64, 128, 256, 512, 1024, 1518, 9000]



def mean_size(sizes: list[list[float]]) -> float:
    w = sum(x[1] for x in sizes)
    return sum(s * x for s, x in sizes) / w


def tuning(sizes: list[list[float]]) -> dict:
    """Driver settings for a frame-size mix: packets in flight per TX queue, a byte limit
    like Linux's byte queue limits: ~48 KiB (about 15 us of line rate; with 32 KiB both
    ports no longer hold line rate at 1518 and 9000 B), 8..128 packets; batch =
    completions per interrupt = in_flight / 4."""
    avg = mean_size(sizes)
    in_flight = int(max(8, min(128, round(IN_FLIGHT_BYTES / avg))))
    batch = max(1, in_flight // 4)
    return {"in_flight": in_flight, "batch": batch, "mod_count": batch, "mod_time_us": 2}


def make_case(name: str, sizes: list[list[float]], ports: int, direction: str, window_us: float,
              settle_us: float | None = None, tail_us: float = 1.0, seed: int = 0, txq_per_port: int = 1) -> dict:
    biggest = max(s for s, _ in sizes)
    frame_us = (biggest + WIRE_OVERHEAD) * 8 / (LINE_GBPS * 1000)
    if settle_us is None:  # the TX path's start-up (~3 us: doorbell, descriptor and data reads) and ramp
        settle_us = max(6.0, 3 + 2 * frame_us)
    return {"name": name, "sizes": sizes, "ports": list(range(ports)), "direction": direction,
            "settle_us": settle_us, "window_us": window_us, "tail_us": max(tail_us, frame_us),
            "seed": seed, "txq_per_port": txq_per_port, **tuning(sizes)}


def probe_case(sizes: list[int], seed: int = 0) -> dict:
    """Unloaded latency: on port 0, frames one at a time (each waits for the previous to
    complete), no interrupt moderation: host-to-wire and wire-to-completion of an idle NIC."""
    return {"name": "probe", "sizes": [[s, 1] for s in sizes], "ports": [0], "direction": "probe",
            "frames_per_size": PROBE_FRAMES, "seed": seed, "txq_per_port": 1}


def expected_us(case: dict) -> float:
    """Roughly how much simulated time a case takes (for progress bars)."""
    if case["direction"] == "probe":
        return sum(4.5 + 2 + (s + 20) * 8 / (LINE_GBPS * 1000) * 2 for s, _ in case["sizes"]) * case["frames_per_size"]
    if case["direction"] == "web":  # both modes at about line rate
        return 2 * (10 + sum(case["file_size"]) * 1.05 * 8 / (LINE_GBPS * 1000))
    if case["direction"] == "frag":
        return 10 + case["datagrams"] * case["payload"] * 1.05 * 8 / (LINE_GBPS * 1000)
    return case["settle_us"] + case["window_us"] + case["tail_us"] + 8.0


def web_case(trace: dict, seed: int = 0) -> dict:
    """The payload cache at work: a window of a web trace (cache_report.trace_prefix: the
    requests, and the warm-up the directory has already served) sent the sendfile way on
    port 0 (webserve.WebServer: 54-byte headers from host memory, payloads in MSS pieces),
    first without the cache, then with it (the directory warmed, its blocks in the DRAM
    tier); every frame checked byte for byte."""
    return {"name": "web", "direction": "web", "ports": [0], "seed": seed, "txq_per_port": 1,
            "sizes": [[1502, 1]], "in_flight": 64, **trace}


def frag_case(datagrams: int = 12, payload: int = 65507, mtu: int = 1500, seed: int = 0) -> dict:
    """The fragmentation offload at work: `datagrams` UDP datagrams of `payload` bytes
    (one frame each, the UDP checksum left to the NIC as Linux does) on port 0 with the
    port's MTU set to `mtu`; the NIC cuts them (frag_bench.py measures the same at length),
    every fragment is compared with Linux's (ipfrag.fragment). Then the same fragments come
    back in on port 1 in random order, two datagrams interleaved, and the NIC reassembles
    them (docs/frag.md): one completion per datagram, each checked byte for byte and its
    UDP checksum verified from the completion's payload sum."""
    return {"name": "frag", "direction": "frag", "ports": [0], "seed": seed, "txq_per_port": 1,
            "sizes": [[mtu + 14, 1]], "datagrams": datagrams, "payload": payload, "mtu": mtu}


def demo_cases(window_us: float = 100.0, seed: int = 0, trace: dict | None = None,
               frag: bool = True) -> list[dict]:
    cases = [make_case("demo", IMIX, 2, "bidir", window_us, settle_us=5.0, seed=seed),
             probe_case([64, 1500], seed)]
    if trace is not None:
        cases.append(web_case(trace, seed))
    if frag:
        cases.append(frag_case(seed=seed))
    return cases


def bench_cases(sizes: list[int] = BENCH_SIZES, window_us: float = 20.0, jumbo_frames: int = 20,
                seed: int = 0) -> list[dict]:
    """An unloaded-latency probe of every size, then RFC 2544-style cases: each size x
    ports 1, 2 x tx, rx, bidir. The window holds at least `jumbo_frames` frames of the
    size (longer windows for 9000 B)."""
    cases = [probe_case(sizes, seed)]
    for size in sizes:
        w = max(window_us, jumbo_frames * (size + WIRE_OVERHEAD) * 8 / (LINE_GBPS * 1000))
        for ports in (1, 2):
            for d in ("tx", "rx", "bidir"):
                cases.append(make_case(f"{size}B-{ports}p-{d}", [[size, 1]], ports, d, round(w, 1),
                                       seed=seed + len(cases)))
    return cases


def tag_of(case_ix: int, rx: bool, port: int, seq: int) -> int:
    """A frame's tag (bytes 14..21): case, direction, port, sequence number."""
    return case_ix << 40 | int(rx) << 36 | port << 32 | seq
