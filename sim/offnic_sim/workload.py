"""Traffic workloads on the whole NIC, cocotb side: what `./offnic demo` and
`./offnic bench base` simulate (tasks.py runs them, report.py turns the raw results into
reports, tables and plots).

One simulation runs a list of *cases* on one NicTB (NIC + cocotbext-pcie host with 1 us
read latency + two 25G XGMII ports + the driver model in interrupt mode), one after the
other. A case is: frame sizes (one size, or a weighted mix), ports (port 0, or both), a
direction (tx, rx or bidir), and a timeline

    begin ── settle ──> window start ── window ──> window end ── tail ──> stop, drain

- TX: per port one TX queue (or `txq_per_port` of them); a feeder per queue keeps it full with `OffnicDriver.send_batch`
  (a batch of frames, one descriptor each, ONE doorbell), capped at `in_flight` packets
  in flight (a byte queue limit: ~48 KiB or 128 packets, whichever is fewer, never fewer
  than 8). TX completion moderation: `mod_count` = batch, `mod_time_us`.
- RX: per port the XgmiiSource sends back to back (line rate, 12-byte average gap)
  into one RX queue (RSS off, default queue = port), with 512 buffers the driver reposts
  as it takes completions (same moderation).
- Every frame carries a tag (bytes 14..21: case, direction, port, sequence number), so
  each frame on the TX wire is matched to its doorbell time (host-to-wire latency) and
  each RX completion to the time its last byte entered the port (wire-to-completion).
- PCIe: every TLP and DLLP on the link, both ways, is counted at the link model
  (`PcieTap`), in bytes on the wire (header + payload + 8 B framing: STP token with the
  sequence number, LCRC; DLLPs 8 B), and attributed by address to `tx0:ring`,
  `tx0:buf`, `tx0:cq`, `tx0:reg` (descriptor ring, buffers, completion ring, queue
  registers of TX queue 0) ... `rx1:reg` (completions by the tag of their request);
  events, MSI-X writes, other registers and DLLPs are "shared". The times of the NIC's
  writes into each RX completion ring are kept: the NIC's own delivery times, which
  measure RX throughput without the help of its on-chip buffers. Each TLP also counts
  the 256-bit beats it takes on the hard IP's user interface (RQ, RC, CQ, CC; no
  straddling), the other resource that can run out before the link does.
- A "probe" case measures unloaded latency: frames one at a time on port 0, each size,
  no moderation.
- NIC counters (eth_port, rx_engine, tx_engine, dma, eqs) and driver statistics are read
  before and after each case; the case's result holds their differences.

The raw results (every frame's times) go to the JSON file `out` of the bench settings;
progress (simulated time, frames) is appended as JSON lines to `progress`, which the
parent process shows as a progress bar.
"""
from __future__ import annotations

import bisect
import json
import math
import random
import time

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Timer
from cocotbext.eth import XgmiiFrame
from cocotbext.pcie.core.dllp import Dllp
from cocotbext.pcie.core.tlp import TlpType

from offnic_sim.harness import bench_config
from offnic_sim.nic_tb import CORE_PERIOD_NS, NicTB, nic_counters
from offnic_sim.webserve import WebServer

LINE_GBPS = 25.0
WIRE_OVERHEAD = 20          # preamble + SFD (8) + average inter-frame gap (12), bytes per frame
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


def now_ns() -> float:
    return get_sim_time("ns")


# ----------------------------------------------------------------------------- cases

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
    """The payload cache at work: a window of a synthetic web trace (webtrace: built from the
    log's published parameters, not the log itself; cache_report.trace_prefix: the
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


# ----------------------------------------------------------------------------- PCIe tap

class PcieTap:
    """Counts every TLP and DLLP on the PCIe link model, both directions, in wire bytes
    (cocotbext-pcie's `get_wire_size()`: TLP header + payload + 8; DLLPs 8), by stream.

    It wraps `handle_tx` of both link ends (the device's upstream port and the root
    complex port it is connected to): each call is one packet put on the wire.
    Attribution: a request by its address (`classify`), a completion by the tag of the
    request it answers, DLLPs "shared". Buckets are switched by `bucket` (None: not
    counted)."""

    def __init__(self, dev):
        self.ranges: list[tuple[int, int, str]] = []
        self._starts: list[int] = []
        self.tags: dict[tuple[str, int], str] = {}
        self.bucket: str | None = None
        self.counts: dict[str, dict] = {}
        self.watched: dict[str, list] = {}   # label -> [(t_ns, records)] of writes to it (RX completion rings)
        up = dev.upstream_port
        self._wrap(up, "up")            # NIC -> host
        self._wrap(up.other, "down")    # host -> NIC

    def add_range(self, lo: int, size: int, label: str) -> None:
        self.ranges.append((lo, lo + size, label))
        self.ranges.sort()
        self._starts = [r[0] for r in self.ranges]

    def classify(self, addr: int) -> str:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and addr < self.ranges[i][1]:
            return self.ranges[i][2]
        return "shared"

    def totals(self, bucket: str) -> dict:
        """TLP+DLLP wire bytes so far in `bucket`, by direction: up = NIC -> host, down =
        host -> NIC (and TLP counts, up_tlps/down_tlps)."""
        out = {"up": 0, "down": 0, "up_tlps": 0, "down_tlps": 0}
        for label, kinds in self.counts.get(bucket, {}).items():
            if label == "_if":
                continue
            for k, (n, b) in kinds.items():
                way = k.split("_")[0]
                out[way] += b
                out[way + "_tlps"] += n
        return out

    def _wrap(self, port, way: str) -> None:
        orig = port.handle_tx

        async def handle_tx(pkt):
            self._count(way, pkt)
            await orig(pkt)

        port.handle_tx = handle_tx

    def _count(self, way: str, pkt) -> None:
        if isinstance(pkt, Dllp):
            label, kind, size = "shared", "dllp", 8
        else:
            t = pkt.fmt_type
            size = pkt.get_wire_size()
            if t in (TlpType.CPL, TlpType.CPL_DATA):
                kind = "cpl"
                label = self.tags.get(("down" if way == "up" else "up", pkt.tag), "shared")
            elif t in (TlpType.MEM_READ, TlpType.MEM_READ_64):
                kind = "mrd"
                label = self.classify(pkt.address)
                self.tags[(way, pkt.tag)] = label
            elif t in (TlpType.MEM_WRITE, TlpType.MEM_WRITE_64):
                kind = "mwr"
                label = self.classify(pkt.address)
                w = self.watched.get(label)
                if w is not None and self.bucket is not None:
                    w.append((now_ns(), max(1, pkt.get_payload_size() // 16)))
            else:
                kind, label = "other", "shared"
        if self.bucket is None:
            return
        b = self.counts.setdefault(self.bucket, {})
        s = b.setdefault(label, {})
        k = f"{way}_{kind}"
        c = s.setdefault(k, [0, 0])
        c[0] += 1
        c[1] += size
        if kind != "dllp":
            # beats of the hard IP's 256-bit user interface (no straddling: a TLP starts on
            # a new beat): RQ/CQ descriptors are 16 B, RC/CC 12 B, then the payload
            itf = {("up", False): "rq", ("up", True): "cc", ("down", False): "cq", ("down", True): "rc"}[
                (way, kind == "cpl")]
            hdr = 12 if itf in ("rc", "cc") else 16
            x = b.setdefault("_if", {}).setdefault(itf, [0, 0])
            x[0] += -(-(hdr + pkt.get_payload_size()) // 32)
            x[1] += 1


# ----------------------------------------------------------------------------- the run

def tag_of(case_ix: int, rx: bool, port: int, seq: int) -> int:
    return case_ix << 40 | int(rx) << 36 | port << 32 | seq


class Workload:
    """One NicTB and the machinery every case uses (see the module doc)."""

    def __init__(self, dut, cfg: dict):
        self.dut = dut
        self.cfg = cfg
        self.tb = NicTB(dut, host_latency_ns=cfg.get("host_latency_ns", 1000.0))
        self.drv = self.tb.drv
        self.tap = PcieTap(self.tb.dev)
        self.blob = random.Random(cfg.get("seed", 0)).randbytes(BUF_SIZE)
        self.progress_path = cfg.get("progress")
        self.wall0 = time.monotonic()
        # per port, filled by background tasks, reset per case
        self.wire = {0: [], 1: []}      # TX frames seen at the XGMII sink: (tag, size, t_end_ns)
        self.rx_offered = {0: [], 1: []}  # RX frames fully sent into the port: (tag, size, t_end_ns)
        self.rx_done = {0: [], 1: []}   # RX completions taken by the driver: (tag, len, t_cpl_ns, status)
        self.case_ix = 0
        self.case_frac = 0.0
        self.expect: dict[int, bytes] = {}  # tag -> the frame the wire must carry (web case)
        self.mismatches = 0
        self.capture: list[bytes] | None = None  # port 0's frames, whole (frag case)
        self.rx_capture: list | None = None  # port 1's RX packets, whole (frag case)

    # ---- set-up

    async def setup(self, txq_per_port: int = 1) -> None:
        tb, drv = self.tb, self.drv
        await tb.init()
        for b in drv.blocks["eth_port"]:
            await b.write("max_frame_len", MAX_FRAME)
        await drv.set_rss(enable=False)
        self.desc_cache = await drv.block("tx_queues").read("desc_cache")
        bar = drv.fn.bar_addr[0]
        self.txqs = {p: [p + 2 * k for k in range(txq_per_port)] for p in range(2)}  # TX queues of port p
        for p in range(2):
            for q in self.txqs[p]:
                await drv.open_tx_queue(q, size=TX_RING, port=p, buf_size=BUF_SIZE, mod_count=16, mod_time_us=2)
            await drv.open_rx_queue(p, size=RX_RING, buf_size=BUF_SIZE, mod_count=16, mod_time_us=2)
            await drv.set_default_queue(port=p, q=p)
            for kind, q in [("tx", q) for q in self.txqs[p]] + [("rx", p)]:
                qs = drv.queues[kind][q]
                lab = f"{kind}{p}"
                self.tap.add_range(qs.ring.buf.addr, qs.ring.buf.size, f"{lab}:ring")
                self.tap.add_range(qs.bufs.addr, qs.bufs.size, f"{lab}:buf")
                self.tap.add_range(qs.cq.ring.buf.addr, qs.cq.ring.buf.size, f"{lab}:cq")
                for blk in (f"{kind}_queues", f"{kind}_cqs"):
                    e = drv.entry(blk, q)
                    regs_ = e.block.type.array.regs
                    lo = min(e.addr(r) for r in regs_)
                    hi = max(e.addr(r) for r in regs_) + 4
                    self.tap.add_range(bar + lo, hi - lo, f"{lab}:reg")
        for p in range(2):
            cocotb.start_soon(self._sink(p))
            cocotb.start_soon(self._rx_take(p))
        cocotb.start_soon(self._ticker())

    async def _sink(self, p: int) -> None:
        sink = self.tb.ports[p].sink
        rec = self.wire
        while True:
            f = await sink.recv()
            data = f.get_payload(strip_fcs=False)
            tag = int.from_bytes(data[TAG_AT:TAG_AT + 8], "little")
            if p == 0 and self.capture is not None:
                self.capture.append(bytes(data))
            want = self.expect.pop(tag, None)
            if want is not None and bytes(data[:len(want)]) != want:
                self.mismatches += 1
            rec[p].append((tag, len(data), f.sim_time_end / 1000.0))

    async def _rx_take(self, p: int) -> None:
        while True:
            pkt = await self.drv.recv(p, timeout_us=None)
            if p == 1 and self.rx_capture is not None:
                self.rx_capture.append(pkt)
            tag = int.from_bytes(pkt.data[TAG_AT:TAG_AT + 8], "little") if pkt.ok else -1
            self.rx_done[p].append((tag, pkt.length, pkt.cpl_time, pkt.status))

    async def _ticker(self) -> None:
        while True:
            await Timer(2, "us")
            self.progress()

    def progress(self, **extra) -> None:
        if not self.progress_path:
            return
        frames = sum(len(v) for v in self.wire.values()) + sum(len(v) for v in self.rx_done.values())
        rec = {"t_us": round(now_ns() / 1000, 2), "case": self.case_ix, "ncases": self.ncases,
               "frac": round(self.case_frac, 4), "frames": frames, "wall_s": round(time.monotonic() - self.wall0, 1),
               **extra}
        with open(self.progress_path, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def frame(self, tag: int, size: int) -> bytes:
        """A frame of `size` bytes with FCS, returned without FCS (the MAC or XgmiiFrame adds it)."""
        return HDR + tag.to_bytes(8, "little") + self.blob[:size - 4 - 22]

    # ---- counters

    async def counters(self) -> dict:
        return await nic_counters(self.drv)

    @staticmethod
    def delta(a: dict, b: dict) -> dict:
        out = {}
        for blk, regs_ in b.items():
            d = {}
            for r, v in regs_.items():
                if r.endswith("_hi") or r in ("port", "speed_mbps", "max_frame", "max_payload", "max_read_req", "count"):
                    continue
                if r.endswith("_lo"):
                    hi = r[:-3] + "_hi"
                    v0 = a[blk][r] | a[blk].get(hi, 0) << 32
                    v1 = v | regs_.get(hi, 0) << 32
                    d[r[:-3]] = (v1 - v0) % (1 << 64)
                else:
                    d[r] = (v - a[blk][r]) % (1 << 32)
            out[blk] = d
        return out

    # ---- one case

    async def run_probe(self, ix: int, case: dict) -> dict:
        """One frame at a time on port 0, TX then RX, for each size: latencies of an idle NIC."""
        drv, tb = self.drv, self.tb
        self.case_ix, self.case_frac = ix, 0.0
        q = self.txqs[0][0]
        await drv.set_moderation("tx", q, 1, 0)
        await drv.set_moderation("rx", 0, 1, 0)
        for p in range(2):
            self.wire[p], self.rx_offered[p], self.rx_done[p] = [], [], []
        out = {}
        sizes = [s for s, _ in case["sizes"]]
        n = case["frames_per_size"]
        seq = 0
        for si, size in enumerate(sizes):
            tx, rx = [], []
            for k in range(n):
                seq += 1
                tag = tag_of(ix, False, 0, seq)
                got = len(self.wire[0])
                [tok] = await drv.send_batch(q, [self.frame(tag, size)])
                await tok.wait(timeout_us=200)
                while len(self.wire[0]) == got:
                    await Timer(100, "ns")
                t, _, t_end = self.wire[0][-1]
                assert t == tag, "probe: unexpected frame on the wire"
                tx.append(t_end - tok.t_doorbell)
                await Timer(1, "us")
                tag = tag_of(ix, True, 0, seq)
                done = len(self.rx_done[0])
                ends = []
                xf = XgmiiFrame.from_payload(self.frame(tag, size), min_len=60,
                                             tx_complete=lambda fr: ends.append(fr.sim_time_end / 1000.0))
                tb.ports[0].source.send_nowait(xf)
                for _ in range(2000):
                    if len(self.rx_done[0]) > done:
                        break
                    await Timer(100, "ns")
                t, _, t_cpl, st = self.rx_done[0][-1]
                assert t == tag and st == 0 and ends, "probe: RX frame not delivered"
                rx.append(t_cpl - ends[0])
                await Timer(1, "us")
                self.case_frac = (si * n + k + 1) / (len(sizes) * n)
            out[str(size)] = {"host_to_wire_ns": tx, "wire_to_completion_ns": rx}
        self.progress(done_case=ix)
        drv.tx_done(q).clear()
        return {**case, "index": ix, "probe": out}

    async def run_web(self, ix: int, case: dict) -> dict:
        """See web_case."""
        drv = self.drv
        self.case_ix, self.case_frac = ix, 0.0
        q = self.txqs[0][0]
        await drv.set_moderation("tx", q, 16, 2)
        drv.tx_done(q).clear()
        out = {}
        seq = [0]

        def next_tag() -> int:
            seq[0] += 1
            return tag_of(ix, False, 0, seq[0])
        for k, mode in enumerate(("nocache", "cache")):
            cached = mode == "cache"
            srv = WebServer(drv, self.tb.dram, case["cache_bytes"] if cached else None)
            srv.load_files(case["file_id"], case["file_size"])
            warmed = srv.warm(case["warm_file_id"], case["warm_file_size"], case["warm_revision"]) if cached else 0
            self.wire[0] = []
            c0 = await self.counters()
            self.tap.counts = {}
            self.tap.bucket = "web"
            toks, batch = [], []
            for fid, size, rev in zip(case["file_id"], case["file_size"], case["revision"]):
                for it in srv.response(fid, rev, size, next_tag) if size else []:
                    if it.tag is not None:
                        self.expect[it.tag] = it.frame
                    batch.append((it.descs, it.length))
                    if len(batch) >= 16:
                        toks += await drv.send_descs_batch(q, batch, max_in_flight=case["in_flight"])
                        batch = []
                        self.case_frac = (k + len(self.wire[0]) / max(1, srv.packets)) / 2
            if batch:
                toks += await drv.send_descs_batch(q, batch, max_in_flight=case["in_flight"])
            t_lim = now_ns() + 2_000_000
            while (drv.tx_in_flight(q) or len(self.wire[0]) < srv.packets) and now_ns() < t_lim:
                await Timer(500, "ns")
            self.tap.bucket = None
            c1 = await self.counters()
            d = self.delta(c0, c1)
            frames = self.wire[0]
            span = frames[-1][2] - frames[0][2] if len(frames) > 1 else 0.0
            wire_b = sum(n for _, n, _ in frames[1:])
            out[mode] = {
                "requests": len(case["file_id"]), "packets": srv.packets, "frames_on_wire": len(frames),
                "content_bytes": srv.content, "inserts": srv.inserts, "warm_inserted_bytes": warmed,
                "failed": sum(1 for t in toks if t.status != 0), "missing": len(self.expect),
                "mismatches": self.mismatches,
                "served_gbps": round(wire_b * 8 / span, 3) if span else None,
                "pcie": self.tap.totals("web"), "cache": d["cache"], "tx_engine": d["tx_engine"],
                "dir_stats": srv.dir.stats() if srv.dir is not None else None,
            }
            self.expect.clear()
            srv.close()
            drv.tx_done(q).clear()
        self.case_frac = 1.0
        self.progress(done_case=ix)
        return {**{k: v for k, v in case.items() if not k.startswith(("file_", "warm_file_", "revision", "warm_rev"))},
                "index": ix, "warm_requests": len(case["warm_file_id"]), "web": out}

    async def run_frag(self, ix: int, case: dict) -> dict:
        """See frag_case."""
        from offnic_sim import ipfrag
        from offnic_sim.frag_bench import ETH, datagram, segment_points
        drv = self.drv
        self.case_ix, self.case_frac = ix, 0.0
        q = self.txqs[0][0]
        mtu = case["mtu"]
        await drv.set_moderation("tx", q, 4, 2)
        drv.tx_done(q).clear()
        old_mtu = await drv.block("tx_engine").read("mtu")
        await drv.block("tx_engine").write("mtu", (old_mtu & 0xFFFF0000) | mtu)
        rng = random.Random(self.cfg.get("seed", 0) << 20 ^ case["seed"] ^ 0xF2A6)
        self.wire[0] = []
        self.capture = []
        c0 = await self.counters()
        want, toks = [], []
        for k in range(case["datagrams"]):
            frame, full = datagram(rng, case["payload"], True)
            frags = ipfrag.fragment(full, mtu)
            want += [ETH + f for f in frags[1:] + frags[:1]]    # the first leaves last, with the checksum
            while sum(1 for t in toks if t.cpl is None) >= 4:
                await Timer(200, "ns")
            toks.append(await drv.send(q, frame, segments=segment_points(len(frame), 9000), csum=(34, 40)))
            self.case_frac = k / case["datagrams"]
        t_lim = now_ns() + 2_000_000
        while (any(t.cpl is None for t in toks) or len(self.capture) < len(want)) and now_ns() < t_lim:
            await Timer(1, "us")
        c1 = await self.counters()
        got = self.capture
        self.capture = None
        await drv.block("tx_engine").write("mtu", old_mtu)
        drv.tx_done(q).clear()
        frames = self.wire[0]
        span = frames[-1][2] - frames[0][2] if len(frames) > 1 else 0.0
        wire_b = sum(n for _, n, _ in frames[1:])
        per = len(want) // case["datagrams"]
        d = self.delta(c0, c1)["tx_engine"]
        rx = await self.reassemble(want, per, rng)
        self.case_frac = 1.0
        self.progress(done_case=ix)
        return {**case, "index": ix, "reasm": rx, "frag": {
            "fragments_per_datagram": per, "frames_on_wire": len(got), "frames_expected": len(want),
            # wire frames carry their FCS (and MAC padding below 64 B)
            "identical": sum(1 for g, w in zip(got, want) if g[:len(w)] == w and not any(g[len(w):-4])),
            "failed": sum(1 for t in toks if t.cpl is None or t.cpl.status != 0),
            "goodput_gbps": round((sum(n - 38 for _, n, _ in frames[1:]) - 8 * (len(frames) - 1) / per) * 8 / span, 3)
            if span else None,   # IP payload of each frame (less 14 + 20 + FCS) less the UDP headers
            "wire_gbps": round(wire_b * 8 / span, 3) if span else None,
            "line_rate_pct": round(100 * (wire_b + WIRE_OVERHEAD * (len(frames) - 1)) * 8 / span / LINE_GBPS, 2)
            if span else None,
            "counters": {k: d[k] for k in ("frag_datagrams", "frag_fragments", "frag_refused", "frag_csum_unpatched")},
        }}

    async def reassemble(self, frames: list[bytes], per: int, rng: random.Random) -> dict:
        """The frag case's second half: `frames` (the NIC's own fragments, `per` to a datagram)
        into port 1 shuffled within each datagram, datagrams interleaved in pairs; the
        reassembler on. Counts the completions and checks every datagram."""
        from offnic_sim import ipfrag
        drv = self.drv
        dgrams = [frames[i:i + per] for i in range(0, len(frames), per)]
        whole = []
        for fs in dgrams:
            d = ipfrag.Reassembler(max_dist=0)
            out = [x for f in fs for x in d.push(f[14:])]
            whole.append(out[0])
        order = []
        for a in range(0, len(dgrams), 2):
            pair = [list(fs) for fs in dgrams[a:a + 2]]
            for fs in pair:
                rng.shuffle(fs)
            while any(pair):
                fs = rng.choice([fs for fs in pair if fs])
                order.append(fs.pop())
        await drv.enable_reasm(16)
        c0 = await drv.counters("reasm")
        self.rx_capture = []
        for f in order:
            await self.tb.ports[1].send(f)
        t_lim = now_ns() + 500_000
        while len(self.rx_capture) < len(dgrams) and now_ns() < t_lim:
            await Timer(2, "us")
        await Timer(20, "us")  # anything more (it would be wrong) arrives too
        got, self.rx_capture = self.rx_capture, None
        c1 = await drv.counters("reasm")
        await drv.block("reasm").write("control", 0)

        def csum_ok(p) -> bool:  # the UDP checksum, from the completion's payload sum
            ip = p.data[14:]
            pseudo = ipfrag.ones_sum16(ip[12:20] + bytes([0, 17]) + (len(ip) - 20).to_bytes(2, "big"))
            s = pseudo + (p.csum or 0)
            return (s & 0xFFFF) + (s >> 16) == 0xFFFF
        return {"fragments_in": len(order), "datagrams": len(dgrams), "completions": len(got),
                "reassembled": sum(1 for p in got if p.reassembled),
                "exact": sum(1 for p in got if p.reassembled and p.data[14:] in whole),
                "distinct": len({p.data for p in got}), "csum_ok": sum(1 for p in got if p.reassembled and csum_ok(p)),
                "counters": {k: c1[k] - c0[k] for k in ("fragments", "reassembled", "bypassed", "overlap", "timeout")}}

    async def run_case(self, ix: int, case: dict) -> dict:
        if case["direction"] == "frag":
            return await self.run_frag(ix, case)
        if case["direction"] == "probe":
            return await self.run_probe(ix, case)
        if case["direction"] == "web":
            return await self.run_web(ix, case)
        drv, tb = self.drv, self.tb
        self.case_ix, self.case_frac = ix, 0.0
        rng = random.Random(self.cfg.get("seed", 0) << 20 ^ case["seed"])  # the run's seed replays it
        sizes = [s for s, _ in case["sizes"]]
        weights = [w for _, w in case["sizes"]]
        ports = case["ports"]
        do_tx = case["direction"] in ("tx", "bidir")
        do_rx = case["direction"] in ("rx", "bidir")
        txqs = {p: self.txqs[p][:case.get("txq_per_port", 1)] for p in range(2)}
        for p in range(2):
            await drv.set_moderation("rx", p, case["mod_count"], case["mod_time_us"])
            for q in self.txqs[p]:
                await drv.set_moderation("tx", q, case["mod_count"], case["mod_time_us"])
                drv.tx_done(q).clear()
            self.wire[p], self.rx_offered[p], self.rx_done[p] = [], [], []
        c0 = await self.counters()
        s0 = dict(drv.stats)
        irq0 = dict(drv.irqs)
        cyc0 = tb.cycle

        t_begin = now_ns()
        w0 = t_begin + case["settle_us"] * 1000
        w1 = w0 + case["window_us"] * 1000
        t_stop = w1 + case["tail_us"] * 1000
        span = t_stop - t_begin
        self.tap.counts = {}
        self.tap.watched = {f"rx{p}:cq": [] for p in ports}
        self.tap.bucket = "case"
        sent = {p: [] for p in ports}
        samples = []
        ring_samples = {p: [] for p in ports}
        state = {"stop": False}

        async def tx_feed(p: int, q: int, k: int) -> None:
            seq = k << 24
            while not state["stop"]:
                frames, meta = [], []
                for _ in range(case["batch"]):
                    size = sizes[0] if len(sizes) == 1 else rng.choices(sizes, weights)[0]
                    frames.append(self.frame(tag_of(ix, False, p, seq), size))
                    meta.append((seq, size))
                    seq += 1
                toks = await drv.send_batch(q, frames, max_in_flight=case["in_flight"])
                for (sq, size), tok in zip(meta, toks):
                    sent[p].append((tag_of(ix, False, p, sq), size, tok.t_doorbell))

        async def rx_feed(p: int) -> None:
            src = tb.ports[p].source
            rec = self.rx_offered[p]
            seq = 0
            small = min(sizes)
            depth = max(4, math.ceil(300 / ((small + WIRE_OVERHEAD) * 8 / LINE_GBPS)) + 2)
            while now_ns() < t_stop:
                while src.count() < depth:
                    size = sizes[0] if len(sizes) == 1 else rng.choices(sizes, weights)[0]
                    tag = tag_of(ix, True, p, seq)
                    seq += 1
                    xf = XgmiiFrame.from_payload(self.frame(tag, size), min_len=60,
                                                 tx_complete=lambda fr, t=tag, n=size: rec.append((t, n, fr.sim_time_end / 1000.0)))
                    src.send_nowait(xf)
                await Timer(200, "ns")

        async def sampler() -> None:
            hm = tb.hostmem
            while now_ns() < w1:
                if now_ns() >= w0:
                    samples.append(hm.in_flight)
                    if do_tx:
                        for p in ports:
                            ring_samples[p].append(sum(drv.tx_in_flight(q) for q in txqs[p]))
                await Timer(100, "ns")

        async def phases() -> None:
            await Timer(round(w0 - now_ns()), "ns")
            win_counts = {k: {kk: list(vv) for kk, vv in v.items()} for k, v in self.tap.counts.get("case", {}).items()}
            self.tap.counts["at_w0"] = win_counts
            await Timer(round(w1 - now_ns()), "ns")
            self.tap.counts["at_w1"] = {k: {kk: list(vv) for kk, vv in v.items()}
                                        for k, v in self.tap.counts.get("case", {}).items()}

        tasks = [cocotb.start_soon(phases()), cocotb.start_soon(sampler())]
        if do_tx:
            tasks += [cocotb.start_soon(tx_feed(p, q, k)) for p in ports for k, q in enumerate(txqs[p])]
        if do_rx:
            tasks += [cocotb.start_soon(rx_feed(p)) for p in ports]
        while now_ns() < t_stop:
            await Timer(500, "ns")
            self.case_frac = min(1.0, (now_ns() - t_begin) / span)
        state["stop"] = True

        # ---- drain: every TX packet completed and on the wire, RX quiet
        t_drain = now_ns()
        limit = t_drain + 400_000
        while now_ns() < limit:
            tx_busy = do_tx and any(sum(drv.tx_in_flight(q) for q in txqs[p]) or len(self.wire[p]) < len(sent[p])
                                    for p in ports)
            rx_busy = do_rx and any(tb.ports[p].source.count() or not tb.ports[p].source.idle() for p in ports)
            if not tx_busy and not rx_busy:
                break
            await Timer(500, "ns")
        # RX: completions may wait for moderation; wait until none came for 4 us
        last = -1
        while now_ns() < limit:
            n = sum(len(v) for v in self.rx_done.values())
            if n == last:
                break
            last = n
            await Timer(4, "us")
        for t in tasks:
            if not t.done():
                t.cancel()
        drained = now_ns() < limit
        t_end = now_ns()
        self.tap.bucket = None
        cyc1 = tb.cycle
        c1 = await self.counters()
        s1 = dict(drv.stats)
        irq1 = dict(drv.irqs)
        self.case_frac = 1.0
        self.progress(done_case=ix)

        pc = self.tap.counts
        window_pcie = {}
        for lab, kinds in pc.get("at_w1", {}).items():
            for k, (n, b) in kinds.items():
                n0, b0 = pc.get("at_w0", {}).get(lab, {}).get(k, (0, 0))
                window_pcie.setdefault(lab, {})[k] = [n - n0, b - b0]
        return {
            **case,
            "index": ix,
            "t_begin_ns": t_begin, "w0_ns": w0, "w1_ns": w1, "t_stop_ns": t_stop, "t_end_ns": t_end,
            "drained": drained,
            "core_cycles": cyc1 - cyc0,
            "tx": {p: {"sent": sent[p], "wire": self.wire[p]} for p in ports} if do_tx else {},
            "rx": {p: {"offered": self.rx_offered[p], "done": self.rx_done[p],
                       "cq_writes": self.tap.watched[f"rx{p}:cq"]} for p in ports} if do_rx else {},
            "counters": self.delta(c0, c1),
            "driver": {k: s1.get(k, 0) - s0.get(k, 0) for k in set(s0) | set(s1)},
            "irqs": sum(irq1.values()) - sum(irq0.values()),
            "pcie_case": pc.get("case", {}),
            "pcie_window": window_pcie,
            "host_reads_in_flight": {"mean": sum(samples) / len(samples) if samples else 0.0,
                                     "max": max(samples) if samples else 0, "samples": len(samples)},
            "tx_ring_in_flight_mean": {p: sum(v) / len(v) for p, v in ring_samples.items() if v},
        }

    async def run(self, cases: list[dict]) -> dict:
        self.ncases = len(cases)
        await self.setup(max(c.get("txq_per_port", 1) for c in cases))
        self.progress(phase="ready")
        results = []
        for ix, case in enumerate(cases):
            results.append(await self.run_case(ix, case))
        return {
            "host_latency_ns": self.tb.hostmem.read_latency_ns,
            "mps": self.tb.mps, "mrrs": self.tb.mrrs,
            "core_period_ns": CORE_PERIOD_NS,
            "desc_cache": self.desc_cache,
            "line_gbps": LINE_GBPS,
            "seed": self.cfg.get("seed", 0),
            "sim_ns": now_ns(),
            "wall_s": time.monotonic() - self.wall0,
            "driver_errors": list(self.drv.errors),
            "cases": results,
        }


async def run_from_config(dut) -> dict:
    """Runs the cases of the bench settings (`cases`, from tasks.py or a test) and writes
    the raw results to `out`."""
    cfg = bench_config()
    seed = cfg.get("seed")
    if seed is None:
        cfg["seed"] = random.getrandbits(32)  # cocotb seeded `random` from the run's seed
    w = Workload(dut, cfg)
    w.ncases = len(cfg["cases"])
    res = await w.run(cfg["cases"])
    with open(cfg["out"], "w") as f:
        json.dump(res, f)
    w.progress(phase="done")
    assert not res["driver_errors"], res["driver_errors"][:5]
    return res


@cocotb.test(timeout_time=500, timeout_unit="ms")
async def workload(dut):
    """The simulation of `./offnic demo` and `./offnic bench`."""
    await run_from_config(dut)
