"""A tiny run of `./offnic bench toe --part nic` (sim/offnic_sim/toe/toe_nic_bench.py) on
the nic-toe build: Table 1's saturated load (128-byte segments from both ports) in both modes, one offloaded connection
both ways at MSS 1448 against the host path, short windows, and a few handoffs through the TX queues. The bench itself asserts
what it moved (every host frame intact, every receive ring byte for byte, every byte the
NIC sent from its send ring); this checks that it ran and that its report has the
fields the results file and docs/toe.md quote. No timing is asserted.
"""
from __future__ import annotations

import json


from offnic_sim.harness import hw
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.toe import toe_nic_report


def test_nic_toe_bench_smoke(tmp_path):
    out = tmp_path / "nic.json"
    cfg = {"out": str(out), "seed": 7, "cases": ["table1", "one_conn", "handoffs"], "warm_us": 5.0,
           "window_us": 15.0, "loads": ["saturated_128"], "one_warm_us": 5.0, "one_window_us": 15.0, "mss": [1448],
           "handoff_seq": 4, "handoff_pipe": 8}
    run_cocotb(toe_nic_report.design(), "offnic_sim.toe.toe_nic_bench", testcase="nic", bench=cfg, fast=True)
    res = json.loads(out.read_text())
    assert [(r["load"], r["mode"]) for r in res["table1"]] == [("saturated_128", "host_first"), ("saturated_128", "fcfs")]
    for r in res["table1"]:
        assert r["offloaded_connections"] == 16 and r["qlen_samples"] > 0, r
        assert r["host_rx"]["corrupted"] == 0 and r["host_tx"]["missing_or_wrong_port"] == 0, r
        assert r["host_rx"]["measured"] > 0 and r["host_tx"]["measured"] > 0, r
        assert r["offload_bytes_checked"] > 0 and r["nic_packets_queued"] > 0, r
        for k in ("median_ns", "p99_ns"):
            assert r["host_rx"][k] is not None and r["host_tx"][k] is not None, r
    # host first loses no host frame; the NIC packets it could not queue are counted
    hf = res["table1"][0]
    assert hf["host_rx"]["lost"] == 0 and hf["port_fifo_drops"] == 0, hf
    got = {(r["path"], r["direction"]) for r in res["one_conn"]}
    assert got == {("offload", "tx"), ("offload", "rx"), ("host", "tx"), ("host", "rx")}, got
    for r in res["one_conn"]:
        assert r["bytes_in_window"] > 0 and r["pcie_bytes_per_payload_byte"] > 0, r
    # handoffs through the TX queues (the bench checks each answer in host memory)
    h = res["handoffs"]
    assert h["sequential"]["connections"] == 4 and h["pipelined"]["connections"] == 8, h
    assert h["counters"]["cmdq_commands"] == 3 * 4 + 2 * 8 and h["counters"]["table_deletes"] == 12, h
    assert h["sequential"]["handoffs_per_s"] > 0 and h["pipelined"]["handoffs_per_s"] > 0, h
    assert toe_nic_report.table({"table1": res["table1"], "one_conn": res["one_conn"], "handoffs": h,
                                 "goal": None}).count("\n") > 10
    assert hw.load_config("nic-toe")[0] == toe_nic_report.design()


def test_nic_toe_host_first_64_both_ports(tmp_path):
    """Host first, 64-byte segments of offloaded connections at line rate into both ports
    with host frames among them (Table 1's (c), short): every host frame delivered, no port
    FIFO drop, and every NIC packet the lookup steered either queued or dropped and counted.
    (With the SteerSeg as prefix beats in the NIC-packet queue, the lookup waited and the
    port FIFOs dropped host frames here: docs/toe.md, "The engine in the NIC: figures".)"""
    out = tmp_path / "nic.json"
    cfg = {"out": str(out), "seed": 7, "cases": ["table1"], "warm_us": 5.0, "window_us": 20.0,
           "loads": ["saturated"], "modes": [True]}
    run_cocotb(toe_nic_report.design(), "offnic_sim.toe.toe_nic_bench", testcase="nic", bench=cfg, fast=True)
    [r] = json.loads(out.read_text())["table1"]
    c = r["counters"]
    assert r["mode"] == "host_first" and r["segments_per_us_per_port"] > 0, r
    assert r["host_rx"]["frames"] > 0 and r["host_rx"]["lost"] == 0 and r["host_rx"]["corrupted"] == 0, r
    assert r["port_fifo_drops"] == 0, r
    assert c.get("steer_to_host", 0) == r["host_rx"]["frames"], c
    assert c["steer_to_engine"] == r["nic_packets_queued"] + r["nic_packet_drops"] > 0, c
    assert r["nic_packet_drops"] > 0, "the engine was not saturated: the case tests nothing"


def test_nic_toe_fcfs_restore_under_backlog(tmp_path):
    """FCFS, 64-byte segments filling both ports, then restores at once (the port FIFOs
    still full, Qlen at its limit): every restore must be answered. (It was not, before
    TcpSteer stopped deciding frames for a full FCFS queue: docs/toe.md, "the FCFS
    deadlock".)"""
    out = tmp_path / "nic.json"
    cfg = {"out": str(out), "seed": 7, "cases": ["table1"], "warm_us": 5.0, "window_us": 20.0,
           "loads": ["saturated"], "modes": [False], "restore_without_drain": True, "command_timeout_us": 300}
    run_cocotb(toe_nic_report.design(), "offnic_sim.toe.toe_nic_bench", testcase="nic", bench=cfg, fast=True)
    r = json.loads(out.read_text())["table1"][0]
    assert r["restore_hang"] is None, r["restore_hang"]


def test_nic_toe_commands_beside_host_frames(tmp_path):
    """Host first, installs and restores back to back on a TX queue of their own (command
    blocks read, answers written, completions) while host frames cross the NIC both ways on
    both ports: every command answered and checked (the bench asserts each), every host frame
    delivered intact on its port, and no engine DMA descriptor admitted while a host one
    waited (dma.eng_over_host). Handoff commands come after host packets."""
    out = tmp_path / "nic.json"
    cfg = {"out": str(out), "seed": 11, "cases": ["table1"], "warm_us": 5.0, "window_us": 40.0,
           "loads": ["commands"], "modes": [True, False]}
    run_cocotb(toe_nic_report.design(), "offnic_sim.toe.toe_nic_bench", testcase="nic", bench=cfg, fast=True)
    r, fcfs = json.loads(out.read_text())["table1"]
    # (FCFS, the same load: engine descriptors do go ahead of waiting host ones, so the
    # counter is read and could fail)
    assert fcfs["mode"] == "fcfs" and fcfs["counters"].get("dma_eng_over_host", 0) > 0, fcfs["counters"]
    assert r["commands_flooded"]["commands"] >= 32, r["commands_flooded"]   # a round is ~30 us
    assert r["host_rx"]["lost"] == 0 and r["host_rx"]["corrupted"] == 0 and r["host_tx"]["missing_or_wrong_port"] == 0, r
    assert r["host_rx"]["measured"] > 0 and r["host_tx"]["measured"] > 0, r
    assert r["mode"] == "host_first" and r["counters"].get("dma_eng_over_host", 0) == 0, r["counters"]
    assert r["counters"]["cmdq_commands"] >= r["commands_flooded"]["commands"] and "cmdq_refused" not in r["counters"], \
        r["counters"]
