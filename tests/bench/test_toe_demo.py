"""`./offnic demo`'s TCP offload part in miniature (sim/offnic_sim/toe/toe_demo.py on the
nic-toe build, fast harness; toe_demo_run.MINI: 4 connections, short phases), so CI keeps
it working. The part itself checks what it moved (every receive ring byte for byte up to
the restored rcv_nxt, every engine byte against the send ring, the restored state against
both ends, every host frame) and records any mismatch in `failures`; this asserts that
none was recorded, that each phase and mode has its fields, that the connections carried
data both ways while held segments waited for the install to complete, and that the
report and the plot take it. No timing is asserted.
"""
from __future__ import annotations

from offnic_sim.bench import report
from offnic_sim.toe import toe_demo_run


def test_toe_demo_mini(tmp_path):
    res = toe_demo_run.simulate(tmp_path, seed=17, settings=toe_demo_run.MINI)
    assert res["failures"] == [], res["failures"]
    assert [m["mode"] for m in res["modes"]] == ["host_first", "fcfs"]
    for m in res["modes"]:
        assert m["all_checked"] and len(m["per_connection"]) == 4, m["per_connection"]
        for c in m["per_connection"]:
            assert c["received_bytes"] > 0 and c["sent_acked_bytes"] > 0 and c["ring_checked"], c
        h = m["handoff"]
        assert h["held_segments"] > 0 and h["decided_while_held"] == 0, h   # held until complete
        for k in ("reserve", "complete", "restore"):
            assert h["command_us"][k] is not None, h
        for name in ("before", "handoff", "during", "after"):
            p = m["phases"][name]
            rx = p["host_rx"]
            assert rx["in_window"] > 0 and rx["measured"] + rx["lost_in_window"] == rx["in_window"], (name, rx)
            # every host frame measured, except where FCFS loses them (a full port FIFO behind the shared queue)
            ways = ("host_rx", "host_tx") if m["mode"] == "host_first" or name in ("before", "after") else ("host_tx",)
            for way in ways:
                assert p[way]["measured"] > 0 and p[way]["median_ns"] is not None and p[way]["p99_ns"] is not None, (name, p)
        assert m["phases"]["during"]["qlen_max"] > 0 and m["phases"]["before"]["qlen_max"] == 0, m["phases"]
        assert m["host_rx_corrupted"] == 0 and m["host_tx_missing"] == 0, m
    assert res["modes"][0]["host_rx_lost"] == 0     # host first loses no host frame
    lines = report.toe_lines(res)
    assert sum("host first" in x or "FCFS" in x for x in lines) >= 2 and not any("FAIL" in x for x in lines), lines
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    report.toe_panel(ax, res)
    png = tmp_path / "toe.png"
    fig.savefig(png)
    plt.close(fig)
    assert png.stat().st_size > 0
