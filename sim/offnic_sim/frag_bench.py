"""The cycle-accurate part of `./offnic bench frag` (cocotb side; frag_report.py runs it
on the whole NIC as tasks.py runs workload.py): the TX fragmentation offload's goodput.

One NicTB (PCIe Gen3 x8 host with 1 us read latency, 25G XGMII ports, driver model in
interrupt mode), TX queue 0 on port 0. Per case (link MTU, UDP payload size, checksum
offload on or off): the driver keeps the ring fed with the same datagram (an Ethernet
frame of up to 65,549 bytes, in descriptors of at most 16,000 bytes; at most 4 datagrams
in flight: the 192 KiB TX RAM holds two of 64 KB), the NIC cuts each into fragments. In a
window after a settle time: fragments on the wire and their bytes (with FCS), so Gb/s on
the wire, % of 25G counting 20 B of preamble and gap per frame, and goodput = the UDP
payload the window's fragments carry (their IP payload less each datagram's UDP header)
over the window. Every fragment is compared with `ipfrag.fragment()` of the datagram.
"""
from __future__ import annotations

import json
import random
import struct
import time

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Timer

from offnic_sim import ipfrag
from offnic_sim.harness import bench_config
from offnic_sim.nic_tb import NicTB
from offnic_sim.workload import LINE_GBPS, WIRE_OVERHEAD

ETH = bytes.fromhex("020000000002" "020000000001" "0800")
SEG = 16000


def now_ns() -> float:
    return get_sim_time("ns")


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
        self.wire: list[tuple[int, float]] = []   # (bytes with FCS, end time ns)
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
            if self.expect:
                want = self.expect.pop(0)
                if data[:len(want)] != want:
                    self.bad += 1
            self.wire.append((len(data), f.sim_time_end / 1000.0))

    async def case(self, mtu: int, payload: int, csum: bool, window_us: float, settle_us: float) -> dict:
        drv = self.drv
        await drv.block("tx_engine").write("mtu", mtu | mtu << 16)
        frame, full = datagram(self.rng, payload, csum)
        frags = ipfrag.fragment(full, mtu)
        order = frags[1:] + frags[:1] if csum and len(frags) > 1 else frags
        out = [ETH + f for f in order]
        points = segment_points(len(frame))
        c0 = await drv.counters("tx_engine")
        self.wire = []
        t0 = now_ns()
        w0, w1 = t0 + settle_us * 1000, t0 + (settle_us + window_us) * 1000
        toks = []
        sent = 0
        while now_ns() < w1:
            while len([t for t in toks if t.cpl is None]) >= 4:
                await Timer(200, "ns")
            self.expect += out
            toks.append(await drv.send(0, frame, segments=points, csum=(34, 40) if csum else None))
            sent += 1
        while any(t.cpl is None for t in toks):
            await Timer(1, "us")
        n = -1
        while n != len(self.wire):
            n = len(self.wire)
            await Timer(3, "us")
        c1 = await drv.counters("tx_engine")
        assert not self.bad and not self.expect, f"MTU {mtu} {payload} B: {self.bad} fragments differ, {len(self.expect)} missing"
        assert all(t.cpl.status == 0 for t in toks)
        win = [(b, t) for b, t in self.wire if w0 < t <= w1]
        nf = len(win) - 1
        ns = win[-1][1] - win[0][1]
        wire_b = sum(b for b, _ in win[1:])
        per = len(out)
        datagrams = nf / per
        return {"case": f"tx_mtu{mtu}_{payload + 28}B{'_csum' if csum else ''}", "direction": "tx", "mtu": mtu,
                "datagram_size": payload + 28, "udp_payload": payload, "csum_offload": csum,
                "fragments_per_datagram": per, "frames": nf, "window_us": window_us,
                # UDP payload: each frame's IP payload (frame - 14 - 20 - FCS) less the
                # UDP header of each datagram's first fragment
                "gbps": round((sum(b - 38 for b, _ in win[1:]) - 8 * datagrams) * 8 / ns, 3),
                "wire_gbps": round(wire_b * 8 / ns, 3),
                "line_rate_pct": round(100 * (wire_b + WIRE_OVERHEAD * nf) * 8 / ns / LINE_GBPS, 2),
                "datagrams_per_s": round(datagrams / ns * 1e9),
                "frag_datagrams": c1["frag_datagrams"] - c0["frag_datagrams"],
                "frag_fragments": c1["frag_fragments"] - c0["frag_fragments"], "datagrams_sent": sent}

    async def run(self) -> dict:
        await self.setup()
        out = []
        for c in self.cfg["cases"]:
            self.progress(phase=f"MTU {c['mtu']} {c['payload']} B csum {c['csum']}")
            out.append(await self.case(c["mtu"], c["payload"], c["csum"], c.get("window_us", 60.0),
                                       c.get("settle_us", 10.0)))
        return {"tx": out, "seed": self.cfg.get("seed", 0), "sim_ns": now_ns(),
                "wall_s": round(time.monotonic() - self.wall0, 1), "driver_errors": list(self.drv.errors)}


async def run_from_config(dut) -> dict:
    cfg = bench_config()
    if cfg.get("seed") is None:
        cfg["seed"] = random.getrandbits(32)
    b = FragBench(dut, cfg)
    res = await b.run()
    with open(cfg["out"], "w") as f:
        json.dump(res, f)
    b.progress(phase="done")
    assert not res["driver_errors"], res["driver_errors"][:5]
    return res


@cocotb.test(timeout_time=2000, timeout_unit="ms")
async def frag_bench(dut):
    """The simulation of `./offnic bench frag`."""
    await run_from_config(dut)
