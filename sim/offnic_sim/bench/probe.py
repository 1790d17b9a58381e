"""The unloaded-latency probe case (bench/cases.probe_case): frames one at a time on
port 0, each size, no moderation."""
from __future__ import annotations

from cocotb.triggers import Timer
from cocotbext.eth import XgmiiFrame

from offnic_sim.bench.cases import tag_of
from offnic_sim.bench.workload import Workload


async def run_probe(w: Workload, ix: int, case: dict) -> dict:
    """One frame at a time on port 0, TX then RX, for each size: latencies of an idle NIC."""
    drv, tb = w.drv, w.tb
    w.case_ix, w.case_frac = ix, 0.0
    q = w.txqs[0][0]
    await drv.set_moderation("tx", q, 1, 0)
    await drv.set_moderation("rx", 0, 1, 0)
    for p in range(2):
        w.wire[p], w.rx_offered[p], w.rx_done[p] = [], [], []
    out = {}
    sizes = [s for s, _ in case["sizes"]]
    n = case["frames_per_size"]
    seq = 0
    for si, size in enumerate(sizes):
        tx, rx = [], []
        for k in range(n):
            seq += 1
            tag = tag_of(ix, False, 0, seq)
            got = len(w.wire[0])
            [tok] = await drv.send_batch(q, [w.frame(tag, size)])
            await tok.wait(timeout_us=200)
            while len(w.wire[0]) == got:
                await Timer(100, "ns")
            t, _, t_end = w.wire[0][-1]
            assert t == tag, "probe: unexpected frame on the wire"
            tx.append(t_end - tok.t_doorbell)
            await Timer(1, "us")
            tag = tag_of(ix, True, 0, seq)
            done = len(w.rx_done[0])
            ends = []
            xf = XgmiiFrame.from_payload(w.frame(tag, size), min_len=60,
                                         tx_complete=lambda fr: ends.append(fr.sim_time_end / 1000.0))
            tb.ports[0].source.send_nowait(xf)
            for _ in range(2000):
                if len(w.rx_done[0]) > done:
                    break
                await Timer(100, "ns")
            t, _, t_cpl, st = w.rx_done[0][-1]
            assert t == tag and st == 0 and ends, "probe: RX frame not delivered"
            rx.append(t_cpl - ends[0])
            await Timer(1, "us")
            w.case_frac = (si * n + k + 1) / (len(sizes) * n)
        out[str(size)] = {"host_to_wire_ns": tx, "wire_to_completion_ns": rx}
    w.progress(done_case=ix)
    drv.tx_done(q).clear()
    return {**case, "index": ix, "probe": out}

