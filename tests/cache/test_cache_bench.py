"""`./offnic bench cache` in miniature, so CI keeps it working: the cycle-accurate part
(sim/offnic_sim/cache/cache_bench.py) on the whole NIC with a short hit-path case per cache
tier, a latency probe and a small web-trace window served with and without the cache;
then the report code (sim/offnic_sim/cache/cache_report.py) must make the records
results/bench-cache.json promises. Again over a PCIe link trained down to x2 (Fig. 7b's
set-up), where the host path must run below the 25G line rate.
"""
import json

import cocotb
import pytest

from offnic_sim.cache import cache_bench
from offnic_sim.cache import cache_report
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def tiny_cache_bench(dut):
    await cache_bench.run_from_config(dut)   # what `./offnic bench cache` runs, with this test's settings


@pytest.mark.parametrize("lanes", [8, 2])
def test_cache_bench(tmp_path, lanes):
    prefix = cache_report.trace_prefix("nasa", 1, 4, 40_000, 2 * 10**6)   # 4 requests, ~83% cached
    out = tmp_path / "raw.json"
    hit = {"sources": ["host", "onchip", "dram"], "sizes": [256], "window_us": 4.0, "settle_us": 5.0,
           "latency_sizes": [64], "latency_frames": 2} if lanes == 8 else {"sizes": [], "latency_sizes": []}
    trace = [{k: prefix[k] for k in ("workload", "cache_bytes", "file_id", "file_size", "revision",
                                     "warm_file_id", "warm_file_size", "warm_revision")}]
    run_cocotb(NIC, __name__, bench={"hit": hit, "trace": trace, "pcie_lanes": lanes, "out": str(out), "seed": 1})
    run = json.loads(out.read_text())
    assert not run["driver_errors"] and run["pcie_lanes"] == lanes
    recs = cache_report.records([], [prefix], run)
    rep = next(r for r in recs if r["case"] == "trace_replay")
    # every frame was checked against the file's bytes inside the bench; the NIC's own
    # counters must give the directory model's content reduction exactly
    assert rep["model_agrees"] and rep["sim_content_reduction_pct"] == prefix["model_content_reduction_pct"] > 50, rep
    assert rep["sim_nocache_content_reduction_pct"] == 0 and rep["inserts"] > 0, rep
    assert rep["pcie_down_bytes_cache"] < rep["pcie_down_bytes_nocache"], rep
    sv = next(r for r in recs if r["case"] == "served_throughput")
    assert sv["pcie_lanes"] == lanes and sv["served_gbps_cache"] > 0 and sv["served_gbps_nocache"] > 0, sv
    if lanes == 2:   # Gen3 x2 carries at most 15.75 Gb/s: the host path cannot fill the 25G port
        assert sv["served_gbps_nocache"] < 16, sv
        return
    hits = {r["source"]: r for r in recs if r["case"] == "hit_path"}
    assert set(hits) == {"host", "onchip", "dram"}
    assert hits["onchip"]["cache_counters"]["hits_onchip"] > 0 and hits["dram"]["cache_counters"]["hits_dram"] > 0
    for r in hits.values():
        assert r["frames"] > 10 and 0 < r["line_rate_pct"] <= 101, r
    # payload from the cache: only the header and descriptors cross PCIe
    assert hits["onchip"]["pcie_rd_bytes_per_frame"] < hits["host"]["pcie_rd_bytes_per_frame"] / 2, hits
    assert {r["source"] for r in recs if r["case"] == "latency"} == {"host", "onchip", "dram"}
    text = cache_report.tables(recs)
    assert "served Gb/s" in text and "| NASA |" in text, text
    cache_report.plot(recs, tmp_path / "cache.png")
    assert (tmp_path / "cache.png").stat().st_size > 10_000
