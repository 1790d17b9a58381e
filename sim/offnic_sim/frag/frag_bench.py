"""The cycle-accurate part of `./offnic bench frag` (cocotb side; frag_report.py runs it
on the whole NIC as tasks.py runs workload.py): the fragmentation offload's goodput.

One NicTB (PCIe Gen3 x8 host with 1 us read latency, 25G XGMII ports, driver model in
interrupt mode). Every case sends a warm-up of datagrams that is not counted, then the
measured datagrams (as many as `measure_us` of line-rate wire time needs), and checks
every byte: a case fails if anything is missing, differs or arrives twice.

The measured window of each case (what makes a figure honest, so it can never show more
than the line carries):
- TX (the Fragmenter): from the first byte of the first measured datagram's first
  fragment on the wire (start of its preamble at the port's XGMII) to the last byte of
  the measured datagrams' last fragment; the link partner is where they are delivered.
  Only datagrams whose every fragment left byte-exact (equal to `ipfrag.fragment()`) are
  counted. The wire occupancy in that window is each fragment with FCS and preamble and
  the gaps between them; "% of line" is that over the window's 25G capacity.
- RX (the Reassembler, or the host stack): from the first byte of the first measured
  datagram on the port's wire to the driver taking the completion of the last measured
  datagram; only datagrams the driver got byte-exact are counted. The window therefore
  holds every measured byte's wire time plus the last datagram's latency through the NIC
  and interrupt moderation once (`tail_us`), so goodput sits below the line by about
  tail / window and can never exceed it. "% of line" is of the most UDP payload a 25G link
  carries in these fragments (their headers, FCS, preamble and gap deducted).
A case whose figure exceeds the line (beyond the resolution of its window's ends: one
XGMII word each, and the 3 bytes a deficit idle count may borrow) fails the bench.

TX cases: TX queue 0 on port 0; per case (link MTU, UDP payload size, checksum offload
on or off) the driver keeps the ring fed with the same datagram (an Ethernet frame of up
to 65,549 bytes, in descriptors of at most 16,000 bytes; at most 4 datagrams in flight:
the 192 KiB TX RAM holds two of 64 KB), the NIC cuts each into fragments.

RX cases: port 0 receives datagrams cut by `ipfrag.fragment()` back to back at 25G (each
datagram a new identification), RX queue 0 (1,024 buffers of 9,216 B, interrupt
moderation 8 completions / 5 us), 64 reassembly buffers. With the offload the driver gets
one completion per datagram; without, every fragment, and the host stack
(`ipfrag.Reassembler`, Linux's rules) reassembles. Completions and interrupts per MB are
counted over the whole case, warm-up included. What the host path's figure models: the
NIC, PCIe and driver work of taking every fragment (one DMA write, completion and RX
buffer each, under the same moderation); what it does not: the host CPU's cost of
software reassembly (Linux's ip_defrag, per-fragment skb handling, copying the datagram
together) - the host stack here is a Python model that costs no simulated time, so the
host path's goodput is what the NIC and PCIe deliver to a host that keeps up, an upper
bound for a real one; completions and interrupts per MB stand for that cost.
`flood`: one never-completed fragment (a new key each) after every N good frames:
contexts run out and good datagrams continue through the host path; every one must
still arrive. Latency: one datagram at a time, from its last fragment leaving the
simulated link (XgmiiSource idle) to the driver taking the completion (moderation off).
"""
from __future__ import annotations

import json
import random
import struct
import time

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Timer
from cocotbext.eth import XgmiiFrame

from offnic_sim.net import ipfrag
from offnic_sim.bench.workload import run_configured
from offnic_sim.host.nic_tb import NicTB
from offnic_sim.net.wire import LINE_GBPS, WIRE_OVERHEAD

ETH = bytes.fromhex("020000000001" "020000000002" "0800")  # to the driver model's station address
SEG = 16000
PREAMBLE, IFG = 8, 12  # bytes: preamble + SFD before each frame, the gap after it (WIRE_OVERHEAD = 20)
# What a window's ends can be off by, in wire bytes: one 8-byte XGMII word at each end
# (frame times are taken per lane, starts align to lane 0 or 4), and the up to 3 bytes
# of gap a deficit idle count lets a start borrow from the average.
RESOLUTION_BYTES = 8 + 8 + 3


def now_ns() -> float:
    return get_sim_time("ns")


def wire_ns(frames: list[bytes]) -> float:
    """Line-rate wire time of these frames (without FCS) on a 25G link: padding, FCS,
    preamble and the average gap each."""
    return sum((max(len(f), 60) + 4 + WIRE_OVERHEAD) * 8 / LINE_GBPS for f in frames)


def count_for(us: float, per_datagram_ns: float, least: int) -> int:
    """How many datagrams fill `us` of wire time (at least `least`)."""
    return max(least, -(-int(us * 1000) // max(1, int(per_datagram_ns))))


def check_line(what: str, pct: float, window_bytes: float) -> None:
    """A figure above the line is a measuring error, not a result: fail the bench."""
    limit = 100.0 * (1 + RESOLUTION_BYTES / window_bytes)
    assert pct <= limit, f"{what}: {pct:.4f}% of line rate, above the {limit:.4f}% the window can show"


def segment_points(n: int, seg: int = SEG) -> list[int] | None:
    """Split points of an n-byte frame into descriptors of at most `seg` bytes."""
    return list(range(seg, n, seg)) or None


def datagram(rng: random.Random, payload: int, csum: bool) -> tuple[bytes, bytes]:
    """(the frame the host hands over, the datagram as it must leave: UDP checksum filled)."""
    src, dst = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    full = ipfrag.udp_datagram(src, dst, 40000, 9, rng.randbytes(payload), rng.randrange(65536))
    if not csum:
        return ETH + full, full
    ulen = 8 + payload
    seed = ipfrag.ones_sum16(src + dst + struct.pack("!BBH", 0, ipfrag.PROTO_UDP, ulen))
    return ETH + full[:26] + seed.to_bytes(2, "big") + full[28:], full


class FragBench:
    def __init__(self, dut, cfg: dict):
        self.cfg = cfg
        self.tb = NicTB(dut, host_latency_ns=cfg.get("host_latency_ns", 1000.0))
        self.drv = self.tb.drv
        self.rng = random.Random(cfg.get("seed", 0))
        self.wire: list[tuple[int, float, float, bool]] = []  # (bytes with FCS, start ns, end ns, as expected)
        self.expect: list[bytes] = []
        self.bad = 0
        self.wall0 = time.monotonic()

    def progress(self, **kw) -> None:
        p = self.cfg.get("progress")
        if p:
            with open(p, "a") as f:
                f.write(json.dumps({"t_us": round(now_ns() / 1000, 1), "wall_s": round(time.monotonic() - self.wall0, 1),
                                    **kw}) + "\n")

    async def setup(self) -> None:
        await self.tb.init()
        await self.drv.open_tx_queue(0, size=256, port=0, buf_size=16384, mod_count=4, mod_time_us=2)
        for b in self.drv.blocks["eth_port"]:
            await b.write("max_frame_len", 9018)
        cocotb.start_soon(self._sink())

    async def _sink(self) -> None:
        sink = self.tb.ports[0].sink
        while True:
            f = await sink.recv()
            data = bytes(f.get_payload(strip_fcs=False))
            good = False
            if self.expect:
                want = self.expect.pop(0)
                good = data[:len(want)] == want and f.check_fcs()
                self.bad += not good
            self.wire.append((len(data), f.sim_time_start / 1000.0, f.sim_time_end / 1000.0, good))

    async def case(self, mtu: int, payload: int, csum: bool, measure_us: float, warmup_us: float) -> dict:
        drv = self.drv
        await drv.block("tx_engine").write("mtu", mtu | mtu << 16)
        frame, full = datagram(self.rng, payload, csum)
        frags = ipfrag.fragment(full, mtu)
        order = frags[1:] + frags[:1] if csum and len(frags) > 1 else frags
        out = [ETH + f for f in order]
        per = len(out)
        one_ns = wire_ns(out)
        warm, n = count_for(warmup_us, one_ns, 2), count_for(measure_us, one_ns, self.cfg.get("min_datagrams", 10))
        points = segment_points(len(frame))
        c0 = await drv.counters("tx_engine")
        self.wire = []
        toks = []
        for _ in range(warm + n):
            while len([t for t in toks if t.cpl is None]) >= 4:
                await Timer(200, "ns")
            self.expect += out
            toks.append(await drv.send(0, frame, segments=points, csum=(34, 40) if csum else None))
        while any(t.cpl is None for t in toks):
            await Timer(1, "us")
        m = -1
        while m != len(self.wire):
            m = len(self.wire)
            await Timer(3, "us")
        c1 = await drv.counters("tx_engine")
        assert not self.bad and not self.expect, f"MTU {mtu} {payload} B: {self.bad} fragments differ, {len(self.expect)} missing"
        assert all(t.cpl.status == 0 for t in toks)
        assert len(self.wire) == (warm + n) * per, f"{len(self.wire)} frames on the wire, {(warm + n) * per} expected"
        # the measured datagrams' fragments: all there and byte-exact (asserted above)
        win = self.wire[warm * per:]
        ok = sum(all(g for *_, g in win[k * per:(k + 1) * per]) for k in range(n))
        ns = win[-1][2] - win[0][1]
        fcs_b = sum(b for b, *_ in win)                       # frames with FCS
        occupied = fcs_b + PREAMBLE * len(win) + IFG * (len(win) - 1)  # the wire between the window's ends
        gbps = ok * payload * 8 / ns
        pct = 100 * occupied * 8 / ns / LINE_GBPS
        name = f"tx_mtu{mtu}_{payload + 28}B{'_csum' if csum else ''}"
        check_line(name, pct, occupied)
        check_line(name + " goodput", 100 * gbps / (payload * 8 / one_ns), occupied)
        return {"case": name, "direction": "tx", "mtu": mtu,
                "datagram_size": payload + 28, "udp_payload": payload, "csum_offload": csum,
                "fragments_per_datagram": per, "warmup_datagrams": warm, "datagrams": n, "datagrams_ok": ok,
                "frames": len(win), "window_us": round(ns / 1000, 2),
                "gbps": round(gbps, 3),                    # UDP payload of the measured datagrams
                "wire_gbps": round(fcs_b * 8 / ns, 3),     # frames with FCS
                "line_rate_pct": round(pct, 2),            # frames + preamble + gaps, of 25G
                "datagrams_per_s": round(ok / ns * 1e9),
                "frag_datagrams": c1["frag_datagrams"] - c0["frag_datagrams"],
                "frag_fragments": c1["frag_fragments"] - c0["frag_fragments"], "datagrams_sent": warm + n}

    # ------------------------------------------------------------------ RX: reassembly
    async def rx_setup(self) -> None:
        drv = self.drv
        await drv.set_rss(enable=False)
        await drv.set_default_queue(port=0, q=0)
        await drv.open_rx_queue(0, size=1024, buf_size=9216, mod_count=8, mod_time_us=5)
        await drv.enable_reasm(64)
        await Timer(40, "us")  # the reassembler clears its bitmaps for 33 us after reset
        self.host_stack = ipfrag.Reassembler(max_dist=0)

    def rx_datagrams(self, mtu: int, payload: int, n: int) -> list[tuple[bytes, list[bytes]]]:
        out = []
        for k in range(n):
            src, dst = bytes([10, 0, 1, 1]), bytes([10, 0, 1, 2])
            d = ipfrag.udp_datagram(src, dst, 40000, 9, self.rng.randbytes(payload), (self.ident + k) & 0xFFFF)
            out.append((d, [ETH + f for f in ipfrag.fragment(d, mtu)]))
        self.ident += n
        return out

    def _rx_take(self, pkts, got: list) -> None:
        for p in pkts:
            ds = [p.data[14:]] if p.reassembled else self.host_stack.push(p.data[14:])
            got += [(d, p.cpl_time) for d in ds]

    async def _rx_drain(self, got: list, idle_us: float = 25.0) -> int:
        pkts, quiet = 0, 0.0
        while quiet < idle_us:
            await Timer(1, "us")
            new = []
            while self.drv.rx_pending(0):
                new.append(await self.drv.recv(0))
            pkts += len(new)
            self._rx_take(new, got)
            quiet = 0.0 if new else quiet + 1.0
        return pkts

    async def rx_case(self, mtu: int, payload: int, offload: bool, measure_us: float, warmup_us: float,
                      flood: int = 0) -> dict:
        drv = self.drv
        await drv.block("reasm").write("control", int(offload))
        for b in drv.blocks["eth_port"]:
            await b.write("max_frame_len", 9022)
        port = self.tb.ports[0]
        one = self.rx_datagrams(mtu, payload, 1)[0][1]
        per = len(one)
        one_ns = wire_ns(one)  # one datagram on the wire at line rate
        warm, n = count_for(warmup_us, one_ns, 2), count_for(measure_us, one_ns, self.cfg.get("min_datagrams", 10))
        dgrams = self.rx_datagrams(mtu, payload, warm + n)
        frames, flooded = [], 0
        first_measured = last_measured = None  # their indices in `frames`
        for k, (d, fs) in enumerate(dgrams):
            for f in fs:
                if k == warm and first_measured is None:
                    first_measured = len(frames)
                last_measured = len(frames)
                frames.append(f)
                if flood and len(frames) % (flood + 1) == flood:
                    # a first fragment of a datagram that never completes, a new key each
                    src = bytes([10, 9, self.rng.randrange(256), self.rng.randrange(256)])
                    h = ipfrag.ipv4_header(src, bytes([10, 0, 1, 2]), ipfrag.PROTO_UDP, 64,
                                           self.rng.randrange(65536), frag_off=ipfrag.IP_MF)
                    frames.append(ETH + h + self.rng.randbytes(64))
                    flooded += 1
        c0, irq0 = await drv.counters("reasm"), sum(drv.irqs.values())
        got: list = []
        on_wire: dict[str, float] = {}

        async def feed():
            for i, f in enumerate(frames):
                xf = XgmiiFrame.from_payload(f, min_len=60)
                if i == first_measured:  # the window opens at its first byte on the wire
                    xf.tx_complete = lambda fr: on_wire.__setitem__("first_start", fr.sim_time_start / 1000.0)
                elif i == last_measured:
                    xf.tx_complete = lambda fr: on_wire.__setitem__("last_end", fr.sim_time_end / 1000.0)
                await port.source.send(xf)
        feeder = cocotb.start_soon(feed())
        pkts = 0
        while not feeder.done() or not port.source.idle():
            await Timer(2, "us")
            new = []
            while drv.rx_pending(0):
                new.append(await drv.recv(0))
            pkts += len(new)
            self._rx_take(new, got)
        await port.source.wait()
        pkts += await self._rx_drain(got)
        c1, irq1 = await drv.counters("reasm"), sum(drv.irqs.values())
        sent = {d: k for k, (d, _) in enumerate(dgrams)}
        ok = [d for d, _ in got if d in sent]
        missing = len(sent) - len(set(ok))
        if missing or len(ok) != len(sent) or len(got) != len(ok):
            ids = {d[4:6]: d for d in sent}
            for d, _ in got:
                if d not in sent:
                    w = ids.get(d[4:6])
                    diff = next((i for i in range(min(len(d), len(w or b""))) if d[i] != w[i]), None) if w else None
                    print(f"[bench] bad datagram id {d[4:6].hex()} len {len(d)} vs {len(w) if w else None}: "
                          f"first difference at {diff}: got {d[diff:diff+16].hex() if diff is not None else ''} "
                          f"want {w[diff:diff+16].hex() if diff is not None else ''}", flush=True)
            ports = await drv.port_counters(0)
            raise AssertionError(f"RX MTU {mtu} offload {offload}: {missing} of {len(sent)} datagrams missing, "
                                 f"{len(ok) - len(set(ok))} twice, {len(got) - len(ok)} not sent; reasm {c1}; "
                                 f"rx_engine {await drv.counters('rx_engine')}; "
                                 f"port 0 drops {ports['rx_fifo_drops']}, oversize {ports['rx_oversize']}")
        # The window: the first measured byte on the wire to the driver taking the last
        # measured datagram (delivered byte-exact: `sent` holds exactly what was sent).
        measured = [t for d, t in got if sent[d] >= warm]
        t0, t_end = on_wire["first_start"], max(measured)
        ns = t_end - t0
        gbps = len(measured) * payload * 8 / ns
        pct = 100 * gbps / (payload * 8 / one_ns)
        name = f"rx_mtu{mtu}_{payload + 28}B_{'offload' if offload else 'host'}{'_flood' if flood else ''}"
        check_line(name, pct, ns * LINE_GBPS / 8)
        mb = sum(len(d) - 28 for d, _ in got) / 1e6
        return {"case": name, "direction": "rx", "mtu": mtu, "datagram_size": payload + 28, "udp_payload": payload,
                "offload": offload, "fragments_per_datagram": per, "flood_fragments": flooded,
                "warmup_datagrams": warm, "datagrams": len(measured),
                "window_us": round(ns / 1000, 2),
                # from the measured datagrams' last byte on the wire to the driver taking the last
                "tail_us": round((t_end - on_wire["last_end"]) / 1000, 2),
                "gbps": round(gbps, 3),
                # of the most UDP payload a 25G link carries in these fragments
                "line_rate_pct": round(pct, 2),
                # over the whole case, warm-up included
                f"completions_per_mb_{'offload' if offload else 'host'}": round(pkts / mb, 2),
                "interrupts_per_mb": round((irq1 - irq0) / mb, 2),
                "reassembled_by_nic": c1["reassembled"] - c0["reassembled"],
                "bypassed": c1["bypassed"] - c0["bypassed"], "timeouts": c1["timeout"] - c0["timeout"]}

    async def rx_latency(self, mtu: int, payload: int, count: int = 4) -> dict:
        drv = self.drv
        await drv.block("reasm").write("control", 1)
        await drv.set_moderation("rx", 0, count=1, time_us=0)
        port = self.tb.ports[0]
        lat = []
        for d, fs in self.rx_datagrams(mtu, payload, count):
            for f in fs:
                await port.send(f)
            await port.source.wait()
            t_last = now_ns()
            p = await drv.recv(0, timeout_us=200)
            assert p.reassembled and p.data[14:] == d
            lat.append(p.cpl_time - t_last)
        await drv.set_moderation("rx", 0, count=8, time_us=5)
        return {"case": f"rx_latency_mtu{mtu}_{payload + 28}B", "direction": "rx", "mtu": mtu,
                "datagram_size": payload + 28, "latency_ns": round(sum(lat) / len(lat), 1),
                "latency_ns_max": round(max(lat), 1), "gbps": None, "line_rate_pct": None}

    async def run(self) -> dict:
        await self.setup()
        self.ident = self.rng.randrange(65536)
        out = []
        rx = []
        if self.cfg.get("rx_cases"):
            await self.rx_setup()
            for c in self.cfg["rx_cases"]:
                self.progress(phase=f"RX MTU {c['mtu']} {c['payload']} B offload {c['offload']} flood {c.get('flood', 0)}")
                if c.get("latency"):
                    rx.append(await self.rx_latency(c["mtu"], c["payload"]))
                else:
                    rx.append(await self.rx_case(c["mtu"], c["payload"], c["offload"], c.get("measure_us", 200.0),
                                                 c.get("warmup_us", 40.0), c.get("flood", 0)))
        for c in self.cfg.get("cases", []):
            self.progress(phase=f"MTU {c['mtu']} {c['payload']} B csum {c['csum']}")
            out.append(await self.case(c["mtu"], c["payload"], c["csum"], c.get("measure_us", 200.0),
                                       c.get("warmup_us", 40.0)))
        return {"tx": out, "rx": rx, "seed": self.cfg.get("seed", 0), "sim_ns": now_ns(),
                "wall_s": round(time.monotonic() - self.wall0, 1), "driver_errors": list(self.drv.errors)}


async def run_from_config(dut) -> dict:
    """Runs the bench settings (from tasks.py or a test) and writes the raw results to `out`."""
    return await run_configured(lambda cfg: FragBench(dut, cfg))


@cocotb.test(timeout_time=2000, timeout_unit="ms")
async def frag_bench(dut):
    """The simulation of `./offnic bench frag`."""
    await run_from_config(dut)
