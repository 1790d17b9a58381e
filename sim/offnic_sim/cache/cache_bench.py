"""The cycle-accurate part of `./offnic bench cache` (cocotb side; tasks.py runs it on the
whole NIC, `hw.Design.of("nic.Nic", addr_bits=24, board_id=0)`, as it runs workload.py).

One simulation, one NicTB (PCIe Gen3 x8 host with 1 us read latency, 25G XGMII ports,
driver model in interrupt mode, the DRAM tier behind the K3P-Q's DDR4 timing model,
host/ddr4_model.Ddr4Ram; `dram_model: "ideal"` in the settings puts cocotbext-axi's AxiRam
there instead), TX queue 0 on port 0 only. Every frame carries a tag
(bytes 14..21 of its host-built header) so the sink matches it to its doorbell.

1. Hit-path speed. Frames of each size (with FCS) from three sources, two descriptors
   per frame in every case: a header from host memory (54 B; 42 B for 64-byte frames),
   then the rest from
     host   : host memory (DATA; the baseline),
     onchip : the cache's on-chip tier (CACHE_APPEND at offsets in [0, 64 KiB)),
     dram   : the DRAM tier (CACHE_APPEND at offsets in [1 MiB, 1 MiB + 64 KiB));
   and host1: the whole frame in ONE DATA descriptor (bench base's way), to separate the
   cost of a second descriptor from the cost of the source; onchip_all / dram_all: the
   whole frame in ONE CACHE_APPEND (no host data read), for the latency probe: with a
   host header the header's 1 us host read hides the tier's latency, without it the
   tier's read is on the path.
   The TX ring is kept full with batched doorbells (`send_descs_batch`: many packets, ONE
   doorbell, at most `in_flight` packets in flight, as workload.py's tuning). Measured in
   a window after a settle time: frames on the wire (Gb/s with FCS, % of 25G counting
   20 B preamble+IFG per frame, Mpps) and PCIe TLP wire bytes per frame by direction
   (bench/pcie_tap.PcieTap). Then unloaded descriptor-to-wire latency: isolated frames, doorbell
   to the frame's end at the XGMII sink, no moderation.
2. Trace replay. Per workload, a prefix of its web trace (chosen by tasks.py) served as a
   sendfile path would: each response cut into MSS (1448 B) payloads, each packet = a
   54-byte header from host + the payload as the driver core's directory plans it
   (`cachedir.CacheDir.plan`: inserts as their own commands, run ahead up to 12 packets,
   into earlier responses too unless `insert_across` is false; then appends from cache
   and/or host), file bytes in host memory at a per-file address; run once with a
   16 MiB cache and once without (payload appended from host). Every frame is checked
   against the file's bytes. Measured: PCIe TLP wire bytes, both directions, and content
   bytes that crossed PCIe from the NIC's cache counters (bytes inserted + bytes appended
   from host - header bytes).
"""
from __future__ import annotations

import json
import random
import time

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import RisingEdge, Timer

from offnic_sim.bench.workload import run_configured
from offnic_sim.host.nic_tb import NicTB
from offnic_sim.host.rings import OP_CACHE_APPEND, OP_CACHE_INSERT, OP_DATA, Desc
from offnic_sim.cache.webserve import DRAM_BASE, HDR_BYTES, MORE, WebServer, last
from offnic_sim.bench.cases import HDR, MAX_FRAME, TAG_AT
from offnic_sim.bench.pcie_tap import PcieTap
from offnic_sim.net.wire import LINE_GBPS, WIRE_OVERHEAD

TX_RING = 1024
REGION = 64 << 10          # bytes of each tier the hit path reads
HDR_SLOTS = 1024           # header staging slots (64 B each), reused round robin
SOURCES = ("host", "onchip", "dram", "host1")  # host1: whole frame, one DATA descriptor


def now_ns() -> float:
    return get_sim_time("ns")


def tuning(size: int) -> dict:
    """~48 KiB or 8..400 packets in flight, a quarter per doorbell. Two descriptors per
    packet and ~5 us from doorbell to the driver taking the completion (moderated) need
    about 200 small packets in flight at 37 Mpps: the 1024-entry ring holds 400."""
    in_flight = int(max(8, min(400, round(48 * 1024 / size))))
    return {"in_flight": in_flight, "batch": max(1, in_flight // 4)}


class CacheBench:
    def __init__(self, dut, cfg: dict):
        self.cfg = cfg
        self.tb = NicTB(dut, host_latency_ns=cfg.get("host_latency_ns", 1000.0), pcie_lanes=cfg.get("pcie_lanes", 8),
                        dram=cfg.get("dram_model", "ddr4"))
        self.drv = self.tb.drv
        self.tap = PcieTap(self.tb.dev)
        self.rng = random.Random(cfg.get("seed", 0))
        self.wire = []            # (tag, bytes with FCS, t_end_ns)
        self.expect = {}          # tag -> expected frame (trace replay checks)
        self.mismatches = []
        self.wall0 = time.monotonic()
        self.seq = 0
        self.phase = ""

    def progress(self, **kw) -> None:
        p = self.cfg.get("progress")
        if not p:
            return
        with open(p, "a") as f:
            f.write(json.dumps({"t_us": round(now_ns() / 1000, 1), "wall_s": round(time.monotonic() - self.wall0, 1),
                                "phase": self.phase, "frames": len(self.wire), **kw}) + "\n")

    async def setup(self) -> None:
        tb, drv = self.tb, self.drv
        await tb.init()
        for b in drv.blocks["eth_port"]:
            await b.write("max_frame_len", MAX_FRAME)
        await drv.open_tx_queue(0, size=TX_RING, port=0, buf_size=64, mod_count=16, mod_time_us=2)
        self.hdrs = drv.alloc(HDR_SLOTS * 64)
        self.fbuf = drv.alloc(256 * 9216)        # whole frames of the one-descriptor baseline
        self.blob = drv.alloc(REGION + 16384)   # host-source payload bytes (hit path)
        self.blob_bytes = self.rng.randbytes(self.blob.size)
        self.blob.write(0, self.blob_bytes)
        c = await drv.counters("cache")
        self.onchip_bytes = c["onchip_bytes"]
        assert self.onchip_bytes == DRAM_BASE, c
        self.tap.bucket = "x"
        cocotb.start_soon(self._sink())

        async def ticker():
            while True:
                await Timer(5, "us")
                self.progress()
        cocotb.start_soon(ticker())

    async def _sink(self) -> None:
        sink = self.tb.ports[0].sink
        while True:
            f = await sink.recv()
            data = bytes(f.get_payload(strip_fcs=False))
            tag = int.from_bytes(data[TAG_AT:TAG_AT + 8], "little")
            want = self.expect.pop(tag, None)
            if want is not None and data[:len(want)] != want:
                self.mismatches.append(tag)
            self.wire.append((tag, len(data), f.sim_time_end / 1000.0))

    def header(self, n: int = HDR_BYTES) -> tuple[int, int, bytes]:
        """A fresh tag and a header of n bytes carrying it, staged in host memory: (tag, address, bytes)."""
        self.seq += 1
        tag = self.seq
        h = (HDR + tag.to_bytes(8, "little") + bytes(64))[:n]
        slot = (self.seq % HDR_SLOTS) * 64
        self.hdrs.write(slot, h)
        return tag, self.hdrs.addr + slot, h

    async def wait_idle(self, limit_us: float = 2000) -> None:
        t_lim = now_ns() + limit_us * 1000
        while self.drv.tx_in_flight(0) and now_ns() < t_lim:
            await Timer(500, "ns")
        assert not self.drv.tx_in_flight(0), "TX did not drain"
        n = -1
        while n != len(self.wire):  # completed frames may still wait in the TX RAM: until the wire is quiet
            n = len(self.wire)
            await Timer(3, "us")

    # ------------------------------------------------------------------ hit path

    async def prefill(self) -> None:
        """REGION bytes of the blob into each tier (32 KiB inserts)."""
        pk = []
        for base in (0, DRAM_BASE):
            for at in range(0, REGION, 32768):
                pk.append(([Desc.with_arg(self.blob.addr + at, 32768, OP_CACHE_INSERT, base + at)], 32768))
        toks = await self.drv.send_descs_batch(0, pk)
        for t in toks:
            assert (await t.wait(timeout_us=500)).status == 0

    def hit_packet(self, source: str, size: int) -> tuple[int, list[Desc], int]:
        flen = size - 4
        h = 42 if size <= 64 else HDR_BYTES
        pay = flen - h
        tag, haddr, hb = self.header(h)
        if source == "host1":
            slot = (self.seq % 256) * 9216
            self.fbuf.write(slot, hb + self.blob_bytes[:flen - h])
            return tag, [Desc(self.fbuf.addr + slot, flen, OP_DATA)], flen
        if source in ("onchip_all", "dram_all"):
            # the whole frame from the cache, no host data read: the tier's latency is then
            # on the path (doorbell, descriptor fetch, cache read, wire) instead of hidden
            # behind the header's host read; the frame carries no tag (isolated frames only)
            self.seq += 1
            off = (self.seq * 4099) % (REGION - flen)
            base = DRAM_BASE if source == "dram_all" else 0
            return self.seq, [Desc(base + off, flen, OP_CACHE_APPEND, 0)], flen
        off = (self.seq * 4099) % (REGION - pay)
        if source == "host":
            p = Desc(self.blob.addr + off, pay, OP_DATA, MORE)
        else:
            p = Desc(off + (DRAM_BASE if source == "dram" else 0), pay, OP_CACHE_APPEND, MORE)
        return tag, last([Desc(haddr, h, OP_DATA, MORE), p]), flen

    async def hit_case(self, source: str, size: int, window_us: float, settle_us: float) -> dict:
        drv = self.drv
        tn = tuning(size)
        await drv.set_moderation("tx", 0, tn["batch"], 2)
        self.wire = []
        c0 = await drv.counters("cache")
        t0 = now_ns()
        w0 = t0 + settle_us * 1000
        w1 = w0 + window_us * 1000
        snaps = {}
        state = {"stop": False}

        async def feed():
            while not state["stop"]:
                pk = [self.hit_packet(source, size) for _ in range(tn["batch"])]
                await drv.send_descs_batch(0, [(d, n) for _, d, n in pk], max_in_flight=tn["in_flight"])

        async def marks():
            await Timer(round(w0 - now_ns()), "ns")
            snaps["w0"] = self.tap.totals("x")
            await Timer(round(w1 - now_ns()), "ns")
            snaps["w1"] = self.tap.totals("x")

        feeder = cocotb.start_soon(feed())
        mk = cocotb.start_soon(marks())
        while "w1" not in snaps:
            await Timer(1, "us")
        state["stop"] = True
        await feeder
        await self.wait_idle()
        c1 = await drv.counters("cache")
        # Rate between the first and the last frame end inside the window: the frames after
        # the first, over that span (no partial frames at the edges).
        win = [(t, n, te) for t, n, te in self.wire if w0 < te <= w1]
        assert len(win) >= 3, f"hit {source} {size}: {len(win)} frames in the window"
        nf = len(win) - 1
        nbytes = sum(n for _, n, _ in win[1:])
        ns = win[-1][2] - win[0][2]
        up = snaps["w1"]["up"] - snaps["w0"]["up"]
        down = snaps["w1"]["down"] - snaps["w0"]["down"]
        del mk
        return {
            "case": "hit_path", "source": source, "frame_bytes": size, "window_us": window_us,
            "frames": nf,
            "gbps": round(nbytes * 8 / ns, 3),
            "line_rate_pct": round(100 * (nbytes + WIRE_OVERHEAD * nf) * 8 / ns / LINE_GBPS, 2),
            "mpps": round(nf / ns * 1000, 3),
            "pcie_rd_bytes_per_frame": round(down / max(1, nf), 1),   # host -> NIC (read completions, MMIO writes)
            "pcie_wr_bytes_per_frame": round(up / max(1, nf), 1),     # NIC -> host (read requests, completions, events)
            "in_flight": tn["in_flight"], "batch": tn["batch"],
            "cache_counters": {k: (c1[k] - c0[k]) % (1 << 32) for k in ("hits_onchip", "hits_dram", "appends")},
        }

    async def latency(self, source: str, size: int, n: int) -> dict:
        drv = self.drv
        await drv.set_moderation("tx", 0, 1, 0)
        lat = []
        for _ in range(n):
            tag, descs, flen = self.hit_packet(source, size)
            got = len(self.wire)
            [tok] = await drv.send_descs_batch(0, [(descs, flen)])
            await tok.wait(timeout_us=200)
            while len(self.wire) == got:
                await Timer(50, "ns")
            t, _, t_end = self.wire[got]
            assert (t == tag or source.endswith("_all")) and len(self.wire) == got + 1, \
                "latency: unexpected frame on the wire"
            lat.append(t_end - tok.t_doorbell)
            await Timer(1, "us")
        s = sorted(lat)
        return {"case": "latency", "source": source, "frame_bytes": size, "samples": n,
                "latency_ns": round(s[len(s) // 2], 1), "latency_min_ns": round(s[0], 1),
                "latency_max_ns": round(s[-1], 1)}

    # ------------------------------------------------------------------ trace replay

    async def replay(self, wl: dict, cached: bool) -> dict:
        """One workload's requests, with (cached) or without the cache (webserve.WebServer:
        the directory's offsets [0, 16 MiB) are the DRAM tier's [1 MiB, 17 MiB), so the
        warm-up fills it through the DRAM model's backdoor). Served throughput: wire bytes
        (with FCS) from the first frame's end to the last's, over that span."""
        drv = self.drv
        await drv.set_moderation("tx", 0, 16, 2)
        base = self.cfg.get("replay_cache_base", DRAM_BASE)   # 0: the on-chip tier (no warm-up then)
        srv = WebServer(drv, self.tb.dram, wl.get("cache_bytes", 16 << 20) if cached else None, cache_base=base)
        srv.load_files(wl["file_id"], wl["file_size"])
        warmed = srv.warm(wl["warm_file_id"], wl["warm_file_size"], wl["warm_revision"]) \
            if cached and base >= DRAM_BASE else 0
        c0 = await drv.counters("cache")
        p0 = self.tap.totals("x")
        t0 = now_ns()
        wire0 = len(self.wire)
        batch, toks = [], []
        tl = {"items": [], "dram": []} if self.cfg.get("timeline") else None
        mon = cocotb.start_soon(self._dram_monitor(tl["dram"], t0)) if tl is not None else None
        self.tap.log = [] if tl is not None else None

        def next_tag() -> int:
            self.seq += 1
            return self.seq

        async def flush():
            if batch:
                toks.extend(await drv.send_descs_batch(0, batch, max_in_flight=self.cfg.get("replay_in_flight", 64)))
                batch.clear()

        reqs = [(fid, rev, size) for fid, size, rev in zip(wl["file_id"], wl["file_size"], wl["revision"]) if size]
        across = self.cfg.get("insert_across", True)
        for it in srv.responses(reqs, next_tag, across=across):
            if it.tag is not None:
                self.expect[it.tag] = it.frame
            batch.append((it.descs, it.length))
            if tl is not None:
                tl["items"].append([it.tag, it.length, [(d.opcode, d.len, d.addr) for d in it.descs]])
            if len(batch) >= 16:
                await flush()
        await flush()
        await self.wait_idle(20000)
        bad = [t for t in toks if t.status != 0]
        assert not bad, f"{wl['workload']}: {len(bad)} commands failed, first status {bad[0].status}"
        assert not self.mismatches, f"{wl['workload']}: {len(self.mismatches)} frames differ from the file bytes"
        missing = len(self.expect)
        assert not missing, f"{wl['workload']}: {missing} frames never reached the wire"
        c1 = await drv.counters("cache")
        p1 = self.tap.totals("x")

        def cdelta(name: str) -> int:
            return (c1[name + "_lo"] | c1.get(name + "_hi", 0) << 32) - (c0[name + "_lo"] | c0.get(name + "_hi", 0) << 32)
        host_b, cache_b, ins_b = cdelta("host_bytes"), cdelta("cache_bytes"), cdelta("insert_bytes")
        crossed = ins_b + host_b - HDR_BYTES * srv.packets
        frames = self.wire[wire0:]
        span = frames[-1][2] - frames[0][2] if len(frames) > 1 else 0.0
        wire_b = sum(n for _, n, _ in frames[1:])
        rec = {
            "mode": "cache" if cached else "nocache", "requests": len(wl["file_id"]), "packets": srv.packets,
            "content_bytes": srv.content, "inserts": srv.inserts, "warm_requests": len(wl.get("warm_file_id", [])),
            "warm_inserted_bytes": warmed,
            "nic_host_bytes": host_b, "nic_cache_bytes": cache_b, "nic_insert_bytes": ins_b,
            "content_crossed_bytes": crossed,
            "pcie_up_bytes": p1["up"] - p0["up"], "pcie_down_bytes": p1["down"] - p0["down"],
            "pcie_bytes": p1["up"] + p1["down"] - p0["up"] - p0["down"],
            "sim_us": round((now_ns() - t0) / 1000, 1),
            "served_gbps": round(wire_b * 8 / span, 3) if span else None,
            "served_line_rate_pct": round(100 * (wire_b + WIRE_OVERHEAD * (len(frames) - 1)) * 8 / span / LINE_GBPS, 2)
            if span else None,
            "content_gbps": round(srv.content * 8 / span, 3) if span else None,
        }
        rec["order_wait_cycles"] = (c1["order_waits"] - c0["order_waits"]) & 0xFFFFFFFF
        if tl is not None:
            mon.kill()
            tl["frames"] = [(tag, n, round(t - t0, 1)) for tag, n, t in frames]
            tl["pcie"] = [(round(e[0] - t0, 1), *e[1:]) for e in self.tap.log]
            self.tap.log = None
            tl["tokens"] = [(round(t.t_doorbell - t0, 1), round(t.t_complete - t0, 1)) for t in toks]
            rec["timeline"] = tl
        if srv.dir is not None:
            rec["dir_stats"] = srv.dir.stats()
        srv.close()
        return rec

    async def _dram_monitor(self, out: list, t0: float) -> None:
        """Diagnosis (cfg `timeline`): the cache's AXI4 handshakes, (ns since t0, channel, id, addr)."""
        d = self.tb.dut
        while True:
            await RisingEdge(d.clock)
            t = round(now_ns() - t0, 1)
            if d.m_axi_awvalid.value and d.m_axi_awready.value:
                out.append((t, "aw", int(d.m_axi_awid.value), int(d.m_axi_awaddr.value)))
            if d.m_axi_bvalid.value and d.m_axi_bready.value:
                out.append((t, "b", int(d.m_axi_bid.value), 0))
            if d.m_axi_arvalid.value and d.m_axi_arready.value:
                out.append((t, "ar", int(d.m_axi_arlen.value) + 1, int(d.m_axi_araddr.value)))
            if d.m_axi_rvalid.value and d.m_axi_rready.value and d.m_axi_rlast.value:
                out.append((t, "rlast", 0, 0))

    # ------------------------------------------------------------------ all

    async def run(self) -> dict:
        cfg = self.cfg
        await self.setup()
        self.phase = "prefill"
        await self.prefill()
        out = {"hit": [], "latency": [], "trace": []}
        hc = cfg.get("hit", {})
        for source in hc.get("sources", SOURCES):
            for size in hc.get("sizes", []):
                self.phase = f"hit {source} {size}"
                self.progress()
                w = max(hc.get("window_us", 20.0), 20 * (size + WIRE_OVERHEAD) * 8 / (LINE_GBPS * 1000))
                out["hit"].append(await self.hit_case(source, size, round(w, 1), hc.get("settle_us", 8.0)))
        for source in hc.get("sources", SOURCES):
            for size in hc.get("latency_sizes", []):
                self.phase = f"latency {source} {size}"
                self.progress()
                out["latency"].append(await self.latency(source, size, hc.get("latency_frames", 20)))
        trace = cfg.get("trace", [])
        if cfg.get("trace_file"):
            with open(cfg["trace_file"]) as f:
                trace = json.load(f)
        for wl in trace:
            for cached in (True, False):
                self.phase = f"trace {wl['workload']} {'cache' if cached else 'nocache'}"
                self.progress()
                r = await self.replay(wl, cached)
                r["workload"] = wl["workload"]
                out["trace"].append(r)
        out.update(seed=cfg.get("seed", 0), sim_ns=now_ns(), wall_s=round(time.monotonic() - self.wall0, 1),
                   driver_errors=list(self.drv.errors), host_latency_ns=self.tb.hostmem.read_latency_ns,
                   pcie_lanes=self.tb.pcie_lanes, dram_model=self.tb.dram_model,
                   dram_counts=dict(self.tb.dram.timing.counts) if self.tb.dram_model == "ddr4" else None)
        return out


async def run_from_config(dut) -> dict:
    """Runs the bench settings (from tasks.py or a test) and writes the raw results to `out`."""
    return await run_configured(lambda cfg: CacheBench(dut, cfg))


@cocotb.test(timeout_time=2000, timeout_unit="ms")
async def cache_bench(dut):
    """The simulation of `./offnic bench cache`."""
    await run_from_config(dut)
