"""The traffic case (bench/cases.make_case): frames of a size mix on one or both ports,
TX, RX or both, through the timeline begin -> settle -> window -> tail -> drain that
bench/workload.py describes. `run_traffic` is the runner; `TrafficCase` holds one case's
state and does it step by step."""
from __future__ import annotations

import math
import random

import cocotb
from cocotb.triggers import Timer
from cocotbext.eth import XgmiiFrame

from offnic_sim.bench.cases import tag_of
from offnic_sim.bench.workload import Workload, now_ns
from offnic_sim.net.wire import LINE_GBPS, WIRE_OVERHEAD

DRAIN_LIMIT_NS = 400_000   # a case that has not drained 400 us after its stop is reported undrained
RX_QUIET_US = 4            # RX is drained when no completion came for this long (moderation)


class TrafficCase:
    def __init__(self, w: Workload, ix: int, case: dict):
        self.w, self.ix, self.case = w, ix, case
        self.drv, self.tb = w.drv, w.tb
        self.seed = w.cfg.get("seed", 0) << 20 ^ case["seed"]  # the run's seed replays it
        self.rngs: dict[str, random.Random] = {}  # one per stream: its frames do not depend on the others' timing
        self.sizes = [s for s, _ in case["sizes"]]
        self.weights = [x for _, x in case["sizes"]]
        self.ports = case["ports"]
        self.do_tx = case["direction"] in ("tx", "bidir")
        self.do_rx = case["direction"] in ("rx", "bidir")
        self.txqs = {p: w.txqs[p][:case.get("txq_per_port", 1)] for p in range(2)}
        self.sent = {p: [] for p in self.ports}          # (tag, size, doorbell time) per TX frame
        self.samples = []                                # host reads in flight, sampled in the window
        self.ring_samples = {p: [] for p in self.ports}  # TX packets in flight per port, in the window
        self.stop = False

    def next_size(self, stream: str) -> int:
        """The next frame size of `stream` (tx<port>.<queue> or rx<port>): each stream draws
        from its own generator, so the frames a stream offers are the same whatever the
        NIC's and the harness's timing (the two whole-NIC harnesses offer the same frames)."""
        if len(self.sizes) == 1:
            return self.sizes[0]
        rng = self.rngs.get(stream)
        if rng is None:
            rng = self.rngs[stream] = random.Random(f"{self.seed}:{stream}")
        return rng.choices(self.sizes, self.weights)[0]

    async def prepare(self) -> None:
        """Moderation as the case says, recorders emptied, counters read."""
        w, drv, case = self.w, self.drv, self.case
        for p in range(2):
            await drv.set_moderation("rx", p, case["mod_count"], case["mod_time_us"])
            for q in w.txqs[p]:
                await drv.set_moderation("tx", q, case["mod_count"], case["mod_time_us"])
                drv.tx_done(q).clear()
            w.wire[p], w.rx_offered[p], w.rx_done[p] = [], [], []
        self.c0 = await w.counters()
        self.s0 = dict(drv.stats)
        self.irq0 = dict(drv.irqs)
        self.cyc0 = self.tb.cycle

    def plan(self) -> None:
        """The timeline from now, and the PCIe tap counting this case."""
        case, tap = self.case, self.w.tap
        self.t_begin = now_ns()
        self.w0 = self.t_begin + case["settle_us"] * 1000
        self.w1 = self.w0 + case["window_us"] * 1000
        self.t_stop = self.w1 + case["tail_us"] * 1000
        tap.reset()
        tap.watched = {f"rx{p}:cq": [] for p in self.ports}
        tap.bucket = "case"

    async def tx_feed(self, p: int, q: int, k: int) -> None:
        """Keeps TX queue q of port p full: batches of frames, one doorbell each."""
        case, w = self.case, self.w
        seq = k << 24
        while not self.stop:
            frames, meta = [], []
            for _ in range(case["batch"]):
                size = self.next_size(f"tx{p}.{q}")
                frames.append(w.frame(tag_of(self.ix, False, p, seq), size))
                meta.append((seq, size))
                seq += 1
            toks = await self.drv.send_batch(q, frames, max_in_flight=case["in_flight"])
            for (sq, size), tok in zip(meta, toks):
                self.sent[p].append((tag_of(self.ix, False, p, sq), size, tok.t_doorbell))

    async def rx_feed(self, p: int) -> None:
        """Sends into port p back to back until the stop, a few frames queued ahead."""
        src = self.tb.ports[p].source
        rec = self.w.rx_offered[p]
        seq = 0
        depth = max(4, math.ceil(300 / ((min(self.sizes) + WIRE_OVERHEAD) * 8 / LINE_GBPS)) + 2)
        while now_ns() < self.t_stop:
            while src.count() < depth:
                size = self.next_size(f"rx{p}")
                tag = tag_of(self.ix, True, p, seq)
                seq += 1
                xf = XgmiiFrame.from_payload(self.w.frame(tag, size), min_len=60,
                                             tx_complete=lambda fr, t=tag, n=size: rec.append((t, n, fr.sim_time_end / 1000.0)))
                src.send_nowait(xf)
            await Timer(200, "ns")

    async def sample(self) -> None:
        """Host reads and TX packets in flight, every 100 ns of the window."""
        hm = self.tb.hostmem
        while now_ns() < self.w1:
            if now_ns() >= self.w0:
                self.samples.append(hm.in_flight)
                if self.do_tx:
                    for p in self.ports:
                        self.ring_samples[p].append(sum(self.drv.tx_in_flight(q) for q in self.txqs[p]))
            await Timer(100, "ns")

    async def mark_window(self) -> None:
        """The PCIe tap's counts at the window's start and end."""
        tap = self.w.tap
        await Timer(round(self.w0 - now_ns()), "ns")
        self.at_w0 = tap.bucket_counts("case")
        await Timer(round(self.w1 - now_ns()), "ns")
        self.at_w1 = tap.bucket_counts("case")

    async def offer(self) -> list:
        """Starts the feeders and runs to the stop; returns their tasks."""
        tasks = [cocotb.start_soon(self.mark_window()), cocotb.start_soon(self.sample())]
        if self.do_tx:
            tasks += [cocotb.start_soon(self.tx_feed(p, q, k)) for p in self.ports for k, q in enumerate(self.txqs[p])]
        if self.do_rx:
            tasks += [cocotb.start_soon(self.rx_feed(p)) for p in self.ports]
        span = self.t_stop - self.t_begin
        while now_ns() < self.t_stop:
            await Timer(500, "ns")
            self.w.case_frac = min(1.0, (now_ns() - self.t_begin) / span)
        self.stop = True
        return tasks

    async def drain(self) -> bool:
        """Every TX packet completed and on the wire, RX quiet; False if that took too long."""
        w, drv, tb = self.w, self.drv, self.tb
        limit = now_ns() + DRAIN_LIMIT_NS
        while now_ns() < limit:
            tx_busy = self.do_tx and any(sum(drv.tx_in_flight(q) for q in self.txqs[p]) or len(w.wire[p]) < len(self.sent[p])
                                         for p in self.ports)
            rx_busy = self.do_rx and any(tb.ports[p].source.count() or not tb.ports[p].source.idle() for p in self.ports)
            if not tx_busy and not rx_busy:
                break
            await Timer(500, "ns")
        # RX: completions may wait for moderation; wait until none came for a while
        last = -1
        while now_ns() < limit:
            n = sum(len(v) for v in w.rx_done.values())
            if n == last:
                break
            last = n
            await Timer(RX_QUIET_US, "us")
        return now_ns() < limit

    def window_pcie(self) -> dict:
        """The PCIe tap's counts between the window's start and end."""
        at_w0, at_w1 = getattr(self, "at_w0", {}), getattr(self, "at_w1", {})
        out = {}
        for lab, kinds in at_w1.items():
            for k, (n, b) in kinds.items():
                n0, b0 = at_w0.get(lab, {}).get(k, (0, 0))
                out.setdefault(lab, {})[k] = [n - n0, b - b0]
        return out

    async def collect(self, drained: bool) -> dict:
        """Counters after the case, and the case's raw results."""
        w, drv, case, ports = self.w, self.drv, self.case, self.ports
        t_end = now_ns()
        w.tap.bucket = None
        cyc1 = self.tb.cycle
        c1 = await w.counters()
        s1 = dict(drv.stats)
        irq1 = dict(drv.irqs)
        w.case_frac = 1.0
        w.progress(done_case=self.ix)
        samples, s0 = self.samples, self.s0
        return {
            **case,
            "index": self.ix,
            "t_begin_ns": self.t_begin, "w0_ns": self.w0, "w1_ns": self.w1, "t_stop_ns": self.t_stop, "t_end_ns": t_end,
            "drained": drained,
            "core_cycles": cyc1 - self.cyc0,
            "tx": {p: {"sent": self.sent[p], "wire": w.wire[p]} for p in ports} if self.do_tx else {},
            "rx": {p: {"offered": w.rx_offered[p], "done": w.rx_done[p],
                       "cq_writes": w.tap.watched[f"rx{p}:cq"]} for p in ports} if self.do_rx else {},
            "counters": w.delta(self.c0, c1),
            "driver": {k: s1.get(k, 0) - s0.get(k, 0) for k in set(s0) | set(s1)},
            "irqs": sum(irq1.values()) - sum(self.irq0.values()),
            "pcie_case": w.tap.bucket_counts("case"),
            "pcie_window": self.window_pcie(),
            "host_reads_in_flight": {"mean": sum(samples) / len(samples) if samples else 0.0,
                                     "max": max(samples) if samples else 0, "samples": len(samples)},
            "tx_ring_in_flight_mean": {p: sum(v) / len(v) for p, v in self.ring_samples.items() if v},
        }


async def run_traffic(w: Workload, ix: int, case: dict) -> dict:
    w.case_ix, w.case_frac = ix, 0.0
    tc = TrafficCase(w, ix, case)
    await tc.prepare()
    tc.plan()
    tasks = await tc.offer()
    drained = await tc.drain()
    for t in tasks:
        if not t.done():
            t.cancel()
    return await tc.collect(drained)
