"""`./offnic demo` and `./offnic bench base` in miniature, so CI keeps them working: the
workload (sim/offnic_sim/bench/workload.py) runs a short demo case (10 us window, both ports,
both directions, IMIX + jumbo), an unloaded-latency probe, the demo's payload-cache case
on a small web-trace window (4 NASA requests, ~83% of their bytes already cached), the
fragmentation case (two 20 KB datagrams at MTU 1500, cut by the NIC, then reassembled by it) and a 1518-byte bench case on the whole NIC; then the report code (sim/offnic_sim/bench/report.py)
must produce every field the demo report and the bench records promise, with sane
values, and both plots. On both whole-NIC harnesses: the fast one (the default of the
commands) and NicTB (cocotbext, `--harness nic`).
"""
import json

import cocotb
import pytest

from offnic_sim.cache import cache_report
from offnic_sim.bench import report
from offnic_sim import nic_workload
from offnic_sim.bench import cases as workload_cases
from offnic_sim.bench.workload import run_from_config
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def tiny_workload(dut):
    await run_from_config(dut, nic_workload.RUNNERS)  # what `./offnic demo` / `bench` run, with this test's cases


def check_stream(name: str, r: dict) -> None:
    assert 0 < r["gbps"] <= 25.0 * 1.01, (name, r)
    assert 0 < r["line_rate_pct"] <= 101.0, (name, r)
    assert r["mpps"] > 0, (name, r)
    assert 1.0 < r["pcie_bytes_per_payload_byte"] < 5.0, (name, r)
    lat = r["latency_ns"]
    assert lat["count"] > 0 and 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"] < 100_000, (name, lat)


@pytest.mark.parametrize("harness", ["fast", "nic"])
def test_workload(tmp_path, harness):
    out = tmp_path / "raw.json"
    trace = cache_report.trace_prefix("nasa", 1, 4, 40_000, 2 * 10**6)
    cases = workload_cases.demo_cases(window_us=10.0, trace=trace, frag=False) + [
        workload_cases.frag_case(datagrams=2, payload=20000),
        workload_cases.make_case("1518B-2p-bidir", [[1518, 1]], 2, "bidir", 10.0)]
    cases[1]["frames_per_size"] = 2   # the probe: two frames per size
    run_cocotb(NIC, __name__, bench={"cases": cases, "out": str(out), "seed": 1, "harness": harness},
               fast=harness == "fast")
    run = json.loads(out.read_text())
    assert run["harness"] == harness
    assert not run["driver_errors"], run["driver_errors"]
    demo, probe, web, frag, bench = run["cases"]

    # the fragmentation case: every fragment as Linux makes it, counted by the NIC
    f = frag["frag"]
    assert f["fragments_per_datagram"] == 14 and f["frames_expected"] == f["frames_on_wire"] == 28, f
    assert f["identical"] == 28 and f["failed"] == 0, f
    assert f["counters"]["frag_datagrams"] == 2 and f["counters"]["frag_fragments"] == 28, f
    assert any("identical to Linux's" in line for line in report.frag_lines(frag))
    # ... and back in on port 1, shuffled: reassembled by the NIC, one completion each
    r = frag["reasm"]
    assert r["completions"] == r["reassembled"] == r["exact"] == r["csum_ok"] == r["distinct"] == 2, r
    assert r["counters"]["reassembled"] == 2 and r["counters"]["fragments"] == 28, r
    assert any("byte-exact" in line for line in report.frag_lines(frag))

    # the payload-cache case: every frame byte-exact both ways, the file bytes that crossed
    # PCIe exactly what the directory model predicts, hits and inserts counted by the NIC
    nc, ca = web["web"]["nocache"], web["web"]["cache"]
    for r in (nc, ca):
        assert r["failed"] == r["missing"] == r["mismatches"] == 0 and r["frames_on_wire"] == r["packets"], r
        assert r["content_bytes"] == sum(trace["file_size"]), r
    assert nc["cache"]["inserts"] == nc["cache"]["hits_dram"] == nc["cache"]["cache_bytes"] == 0, nc["cache"]
    assert ca["cache"]["inserts"] == ca["inserts"] > 0 and ca["cache"]["hits_dram"] > 0, ca["cache"]
    lines = report.web_lines(web)
    crossed = ca["cache"]["insert_bytes"] + ca["cache"]["host_bytes"] - report.WEB_HDR_BYTES * ca["packets"]
    assert round(100 * (1 - crossed / ca["content_bytes"]), 2) == trace["model_content_reduction_pct"], lines
    # PCIe down bytes follow the payload that crossed: the cache's inserts and misses against
    # every byte without it (here the window's first response inserts its whole file, so
    # the two can be equal); TLP framing and DLLPs differ by timing, hence the allowance.
    payload_nc = nc["cache"]["host_bytes"]
    payload_ca = ca["cache"]["insert_bytes"] + ca["cache"]["host_bytes"]
    assert payload_ca <= payload_nc, (ca["cache"], nc["cache"])
    framing = 4 * 24 + 4 * 8  # a few TLP headers and DLLPs
    assert ca["pcie"]["down"] - nc["pcie"]["down"] <= payload_ca - payload_nc + framing, (ca["pcie"], nc["pcie"])

    # the demo's report: every stream, its numbers, the text and the plot
    text, a = report.demo_report(run, wall_s=1.0, png="demo.png")
    assert sorted(a["streams"]) == ["rx0", "rx1", "tx0", "tx1"]
    for s, r in a["streams"].items():
        check_stream(s, r)
    assert a["packets"] > 100 and a["interrupts"] > 0 and a["events"] > 0
    assert 0 < a["interrupts_per_packet"] < 1
    assert a["pcie"]["bytes_per_payload_byte"] > 1.0
    assert set(a["pcie"]["interface_busy_pct"]) >= {"rq", "rc"}
    for key in ("port 0 TX host->wire", "port 1 RX wire->host", "unloaded", "drops and errors", "interrupts",
                "PCIe Gen3 x8", "DMA reads waiting", "payload cache", "byte-exact on the wire"):
        assert key in text, (key, text)
    for size in ("64", "1500"):
        d = probe["probe"][size]
        assert len(d["host_to_wire_ns"]) == 2 and all(1000 < x < 20_000 for x in d["host_to_wire_ns"]), d
        assert all(0 < x < 10_000 for x in d["wire_to_completion_ns"]), d
    png = tmp_path / "demo.png"
    report.demo_plot(run, png)
    assert png.stat().st_size > 10_000

    # a bench record: the fields results/bench-base.json promises
    recs = report.bench_records([{**run, "cases": [bench]}])
    theory, meta, rec = recs
    assert theory["kind"] == "pcie_gen3_x8_usable" and 57 < theory["usable_gbps"] < 58
    assert meta["kind"] == "run"
    for k in ("frame_size", "ports", "direction", "gbps", "mpps", "line_rate_pct", "pcie_bytes_per_payload_byte",
              "latency_host_to_wire_ns", "latency_wire_to_completion_ns", "drops", "pcie_usable_pct"):
        assert k in rec, k
    assert rec["frame_size"] == 1518 and rec["ports"] == 2 and rec["direction"] == "bidir"
    # 1518-byte frames: the NIC holds line rate on both ports, both ways (measured 98-100%)
    assert rec["line_rate_pct"] > 90, rec
    assert 1.1 < rec["pcie_bytes_per_payload_byte"] < 1.4, rec
    assert rec["latency_host_to_wire_ns"]["p50"] > 0 and rec["latency_wire_to_completion_ns"]["p99"] > 0
    assert rec["rx_drop_pct"] < 5, rec
    print(report.bench_table(recs))
    report.bench_plot(recs, tmp_path / "bench.png")
    assert (tmp_path / "bench.png").stat().st_size > 10_000
