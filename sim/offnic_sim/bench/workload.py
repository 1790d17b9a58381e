"""Traffic workloads on the whole NIC, cocotb side: what `./offnic demo` and
`./offnic bench base` simulate (tasks.py runs them, bench/report.py turns the raw results into
reports, tables and plots).

One simulation runs a list of *cases* on one whole-NIC bench (NIC + PCIe host with 1 us
read latency + two 25G XGMII ports + the driver model in interrupt mode), one after the
other: FastNicTB (the bench settings' `harness` "fast": the partners in C++, sim/fastsim)
or NicTB ("nic", the default here: cocotbext-pcie and cocotbext-eth). A case is: frame sizes (one size, or a weighted mix), ports (port 0, or both), a
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
  (`PcieTap`; on the fast harness the C++ host's counts, fast/fast_tap.FastPcieTap, the
  same arithmetic without DLLPs), in bytes on the wire (header + payload + 8 B framing: STP token with the
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

Here is the machinery every case shares (the NIC, the queues, the wire and completion
recorders, counters, progress); each kind of case has its runner (`runners`, by the
case's direction): bench/traffic.py, bench/probe.py, cache/web_case.py, frag/frag_case.py,
put together by nic_workload.py.
"""
from __future__ import annotations

import json
import random
import time
from typing import Awaitable, Callable

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Timer

from offnic_sim.bench.cases import BUF_SIZE, HDR, MAX_FRAME, RX_RING, TAG_AT, TX_RING
from offnic_sim.bench.pcie_tap import PcieTap
from offnic_sim.harness.runner import bench_config
from offnic_sim.host.fw_host import FwHost
from offnic_sim.host.nic_tb import CORE_PERIOD_NS, NicTB, nic_counters
from offnic_sim.net.wire import LINE_GBPS

# A case runner: (the workload, the case's index, the case) -> the case's raw results.
Runner = Callable[["Workload", int, dict], Awaitable[dict]]


def now_ns() -> float:
    return get_sim_time("ns")


class Workload:
    """One NicTB and the machinery every case uses (see the module doc)."""

    def __init__(self, dut, cfg: dict, runners: dict[str, Runner]):
        self.runners = runners  # case direction -> its runner
        self.dut = dut
        self.cfg = cfg
        self.harness = cfg.get("harness", "nic")
        if self.harness.startswith("fast"):
            from offnic_sim.fast.fast_tb import FastNicTB  # builds libfastsim: only when asked for
            self.tb = FastNicTB(dut, host_latency_ns=cfg.get("host_latency_ns", 1000.0))
            self.tap = self.tb.make_pcie_tap()
        else:
            self.tb = NicTB(dut, host_latency_ns=cfg.get("host_latency_ns", 1000.0))
            self.tap = PcieTap(self.tb.dev)
        self.drv = self.tb.drv
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

    async def firmware(self) -> dict | None:
        """The control processor's version, state and log lines, read through BAR0 at the
        end of the run (None if the NIC has no processor)."""
        if "fw" not in self.drv.blocks:
            return None
        fw = FwHost(self.drv.block("fw"))
        return {"version": await fw.read("fw_version"), "state": await fw.read("state"),
                "status": await fw.read("status"), "bus_errors": await fw.read("bus_errors"),
                "log": await fw.log_lines()}

    # ---- one case

    async def run(self, cases: list[dict] | None = None) -> dict:
        cases = self.cfg["cases"] if cases is None else cases
        self.ncases = len(cases)
        await self.setup(max(c.get("txq_per_port", 1) for c in cases))
        self.progress(phase="ready")
        results = []
        for ix, case in enumerate(cases):
            c0, t0, p0, s0 = self.tb.cycle, time.monotonic(), time.process_time(), now_ns()
            res = await self.runners[case["direction"]](self, ix, case)
            # how fast this case simulated (bench sim): core cycles, wall and CPU seconds of
            # the simulator process (model, harness and Python alike)
            res["speed"] = {"sim_us": round((now_ns() - s0) / 1000, 3), "cycles": self.tb.cycle - c0,
                            "wall_s": round(time.monotonic() - t0, 3), "cpu_s": round(time.process_time() - p0, 3)}
            results.append(res)
        fw = await self.firmware()
        return {
            "firmware": fw,
            "host_latency_ns": self.tb.hostmem.read_latency_ns,
            "mps": self.tb.mps, "mrrs": self.tb.mrrs,
            "core_period_ns": CORE_PERIOD_NS,
            "desc_cache": self.desc_cache,
            "line_gbps": LINE_GBPS,
            "seed": self.cfg.get("seed", 0),
            "harness": self.harness,
            "sim_ns": now_ns(),
            "wall_s": time.monotonic() - self.wall0,
            "driver_errors": list(self.drv.errors),
            "cases": results,
        }




async def run_configured(make) -> dict:
    """The body of every whole-NIC bench's cocotb test: take the bench settings (from
    tasks.py or a test; a seed drawn from cocotb's seeded `random` if none), build the
    bench with `make(cfg)` (an object with `async run() -> dict` and `progress(**kw)`),
    run it, write its raw results to `out`, and fail if the driver saw a protocol error."""
    cfg = bench_config()
    if cfg.get("seed") is None:
        cfg["seed"] = random.getrandbits(32)
    b = make(cfg)
    res = await b.run()
    with open(cfg["out"], "w") as f:
        json.dump(res, f)
    b.progress(phase="done")
    assert not res["driver_errors"], res["driver_errors"][:5]
    return res


async def run_from_config(dut, runners: dict[str, Runner]) -> dict:
    """Runs the cases of the bench settings (`cases`) with `runners` (one per case
    direction) and writes the raw results to `out`."""
    return await run_configured(lambda cfg: Workload(dut, cfg, runners))
