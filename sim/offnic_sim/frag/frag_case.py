"""The demo's fragmentation case (bench/cases.frag_case), run on the workload's NIC: 64 KB
datagrams cut by the NIC, then the same fragments reassembled by it."""
from __future__ import annotations

import random

from cocotb.triggers import Timer

from offnic_sim.bench.workload import Workload, now_ns
from offnic_sim.frag.frag_bench import ETH, datagram, segment_points
from offnic_sim.net import ipfrag
from offnic_sim.net.wire import LINE_GBPS, WIRE_OVERHEAD


async def run_frag(w: Workload, ix: int, case: dict) -> dict:
    """See frag_case."""
    drv = w.drv
    w.case_ix, w.case_frac = ix, 0.0
    q = w.txqs[0][0]
    mtu = case["mtu"]
    await drv.set_moderation("tx", q, 4, 2)
    drv.tx_done(q).clear()
    old_mtu = await drv.block("tx_engine").read("mtu")
    await drv.block("tx_engine").write("mtu", (old_mtu & 0xFFFF0000) | mtu)
    rng = random.Random(w.cfg.get("seed", 0) << 20 ^ case["seed"] ^ 0xF2A6)
    w.wire[0] = []
    w.capture = []
    c0 = await w.counters()
    want, toks = [], []
    for k in range(case["datagrams"]):
        frame, full = datagram(rng, case["payload"], True)
        frags = ipfrag.fragment(full, mtu)
        want += [ETH + f for f in frags[1:] + frags[:1]]    # the first leaves last, with the checksum
        while sum(1 for t in toks if t.cpl is None) >= 4:
            await Timer(200, "ns")
        toks.append(await drv.send(q, frame, segments=segment_points(len(frame), 9000), csum=(34, 40)))
        w.case_frac = k / case["datagrams"]
    t_lim = now_ns() + 2_000_000
    while (any(t.cpl is None for t in toks) or len(w.capture) < len(want)) and now_ns() < t_lim:
        await Timer(1, "us")
    c1 = await w.counters()
    got = w.capture
    w.capture = None
    await drv.block("tx_engine").write("mtu", old_mtu)
    drv.tx_done(q).clear()
    frames = w.wire[0]
    span = frames[-1][2] - frames[0][2] if len(frames) > 1 else 0.0
    wire_b = sum(n for _, n, _ in frames[1:])
    per = len(want) // case["datagrams"]
    d = w.delta(c0, c1)["tx_engine"]
    rx = await reassemble(w, want, per, rng)
    w.case_frac = 1.0
    w.progress(done_case=ix)
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


async def reassemble(w: Workload, frames: list[bytes], per: int, rng: random.Random) -> dict:
    """The frag case's second half: `frames` (the NIC's own fragments, `per` to a datagram)
    into port 1 shuffled within each datagram, datagrams interleaved in pairs; the
    reassembler on. Counts the completions and checks every datagram."""
    drv = w.drv
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
    w.rx_capture = []
    for f in order:
        await w.tb.ports[1].send(f)
    t_lim = now_ns() + 500_000
    while len(w.rx_capture) < len(dgrams) and now_ns() < t_lim:
        await Timer(2, "us")
    await Timer(20, "us")  # anything more (it would be wrong) arrives too
    got, w.rx_capture = w.rx_capture, None
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

