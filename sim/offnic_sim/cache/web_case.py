"""The demo's payload-cache case (bench/cases.web_case), run on the workload's NIC: a web
server's responses without and with the cache, every frame checked."""
from __future__ import annotations

from cocotb.triggers import Timer

from offnic_sim.bench.cases import tag_of
from offnic_sim.bench.workload import Workload, now_ns
from offnic_sim.cache.webserve import WebServer


async def run_web(w: Workload, ix: int, case: dict) -> dict:
    """See web_case."""
    drv = w.drv
    w.case_ix, w.case_frac = ix, 0.0
    q = w.txqs[0][0]
    await drv.set_moderation("tx", q, 16, 2)
    drv.tx_done(q).clear()
    out = {}
    seq = [0]

    def next_tag() -> int:
        seq[0] += 1
        return tag_of(ix, False, 0, seq[0])
    for k, mode in enumerate(("nocache", "cache")):
        cached = mode == "cache"
        srv = WebServer(drv, w.tb.dram, case["cache_bytes"] if cached else None)
        srv.load_files(case["file_id"], case["file_size"])
        warmed = srv.warm(case["warm_file_id"], case["warm_file_size"], case["warm_revision"]) if cached else 0
        w.wire[0] = []
        c0 = await w.counters()
        w.tap.reset()
        w.tap.bucket = "web"
        toks, batch = [], []
        # a server with a backlog of requests: inserts may run ahead into earlier responses'
        # packets, as in `bench cache` (docs/cache.md, "Why the cache can cost throughput")
        reqs = [(fid, rev, size) for fid, size, rev in zip(case["file_id"], case["file_size"], case["revision"]) if size]
        for it in srv.responses(reqs, next_tag):
            if it.tag is not None:
                w.expect[it.tag] = it.frame
            batch.append((it.descs, it.length))
            if len(batch) >= 16:
                toks += await drv.send_descs_batch(q, batch, max_in_flight=case["in_flight"])
                batch = []
                w.case_frac = (k + len(w.wire[0]) / max(1, srv.packets)) / 2
        if batch:
            toks += await drv.send_descs_batch(q, batch, max_in_flight=case["in_flight"])
        t_lim = now_ns() + 2_000_000
        while (drv.tx_in_flight(q) or len(w.wire[0]) < srv.packets) and now_ns() < t_lim:
            await Timer(500, "ns")
        w.tap.bucket = None
        c1 = await w.counters()
        d = w.delta(c0, c1)
        frames = w.wire[0]
        span = frames[-1][2] - frames[0][2] if len(frames) > 1 else 0.0
        wire_b = sum(n for _, n, _ in frames[1:])
        out[mode] = {
            "requests": len(case["file_id"]), "packets": srv.packets, "frames_on_wire": len(frames),
            "content_bytes": srv.content, "inserts": srv.inserts, "warm_inserted_bytes": warmed,
            "failed": sum(1 for t in toks if t.status != 0), "missing": len(w.expect),
            "mismatches": w.mismatches,
            "served_gbps": round(wire_b * 8 / span, 3) if span else None,
            "pcie": w.tap.totals("web"), "cache": d["cache"], "tx_engine": d["tx_engine"],
            "dir_stats": srv.dir.stats() if srv.dir is not None else None,
        }
        w.expect.clear()
        srv.close()
        drv.tx_done(q).clear()
    w.case_frac = 1.0
    w.progress(done_case=ix)
    return {**{k: v for k, v in case.items() if not k.startswith(("file_", "warm_file_", "revision", "warm_rev"))},
            "index": ix, "warm_requests": len(case["warm_file_id"]), "web": out}

