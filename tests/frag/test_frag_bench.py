"""`./offnic bench frag` in miniature, so CI keeps it working: frag_bench.py on the whole
NIC with two short TX cases (20 KB datagrams at MTU 1500 with checksum offload, at MTU 9000
without) and three RX cases (20 KB datagrams at MTU 1500 reassembled by the NIC and by the
host stack, and the latency probe); every fragment and datagram is checked inside the
bench; the records must carry what results/bench-frag.json promises (the offload's
completions per MB far below the host path's), and the plot must be drawn."""
import json

import cocotb

from offnic_sim.frag import frag_bench
from offnic_sim.frag import frag_report
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def tiny_frag_bench(dut):
    await frag_bench.run_from_config(dut)


def test_frag_bench(tmp_path):
    out = tmp_path / "raw.json"
    cases = [{"mtu": 1500, "payload": 20000, "csum": True, "window_us": 20.0, "settle_us": 8.0},
             {"mtu": 9000, "payload": 20000, "csum": False, "window_us": 20.0, "settle_us": 8.0}]
    rx = [{"mtu": 1500, "payload": 20000, "offload": True, "window_us": 20.0, "settle_us": 8.0},
          {"mtu": 1500, "payload": 20000, "offload": False, "window_us": 20.0, "settle_us": 8.0},
          {"mtu": 1500, "payload": 20000, "offload": True, "latency": True}]
    run_cocotb(NIC, __name__, bench={"cases": cases, "rx_cases": rx, "out": str(out), "seed": 1})
    run = json.loads(out.read_text())
    assert not run["driver_errors"]
    a, b = run["tx"]
    assert a["fragments_per_datagram"] == 14 and b["fragments_per_datagram"] == 3, (a, b)
    for r in (a, b):
        assert r["frag_datagrams"] == r["datagrams_sent"] and r["frag_fragments"] == r["datagrams_sent"] * \
            r["fragments_per_datagram"], r
        assert 0 < r["gbps"] < r["wire_gbps"] <= 25.0 and 0 < r["line_rate_pct"] <= 101, r
        for k in ("case", "mtu", "datagram_size", "gbps", "line_rate_pct"):
            assert k in r
    on, off, lat = run["rx"]
    assert on["reassembled_by_nic"] == on["datagrams"] and on["bypassed"] == 0, str(on)
    assert off["reassembled_by_nic"] == 0, off
    assert 0 < on["completions_per_mb_offload"] * 5 < off["completions_per_mb_host"], (on, off)
    for r in (on, off):
        assert 0 < r["gbps"] <= 25.0 and "interrupts_per_mb" in r, r
    assert lat["latency_ns"] > 0, lat
    frag_report.plot(run["tx"] + run["rx"], tmp_path / "frag.png")
    assert (tmp_path / "frag.png").stat().st_size > 10_000
