"""A short run of `./offnic bench loadctl` (sim/offnic_sim/toe/loadctl_bench.py) on the
nic-toe build, load control on and off (the quick mode's phases and lives). The bench
itself asserts what it moved (every host probe frame intact, every offloaded connection's
receive ring byte for byte when it closes and at the end). This checks the firmware's
machine in the NIC against the seed's rules and the host's selection against Soft_limit:

- on: the firmware lowers Soft_limit below Hard_limit during the overload, announces
  each change (the driver polls), the hardware refuses exactly the installs the host
  offered too late (Soft_limit fell after the host last heard), and Cnum never exceeds
  Soft_limit by more than what was in flight (one decrease step, and one increase step
  between the two register reads);
- off (Hiwat = queue size, Lowat = 0 through the mailbox): Soft_limit stays at Hard_limit,
  nothing is announced or refused;
- both: connections were offloaded, carried data and closed (Cnum follows them down), and
  host first lost no host probe frame.
No timing is asserted.
"""
from __future__ import annotations

from offnic_sim.harness import hw
from offnic_sim.toe import loadctl_report


def test_nic_loadctl_bench_quick(tmp_path):
    settings = {**loadctl_report.QUICK, **loadctl_report.COMMON}
    on, off = loadctl_report.simulate(settings, seed=18, work=tmp_path)
    assert on["load_control"] and not off["load_control"]
    hard = on["lc_settings"]["hard_limit"]
    assert hard == 64 and off["lc_settings"]["hiwat"] == off["lc_settings"]["queue_size"] == 64
    assert off["lc_settings"]["lowat"] == 0
    for r in (on, off):
        s = r["stats"]
        assert s["installs"] > hard and s["ended_on_nic"] > 0 and s["bytes_checked"] > 0, s
        # host first: no probe frame lost, overloaded or not
        assert r["host_rx"]["corrupted"] == 0 and r["host_rx"]["lost"] == 0 and r["host_rx"]["frames"] > 0, r["host_rx"]
        assert r["cnum_max"] <= hard, r["cnum_max"]
        assert r["installs_over_limit_hw"] == s["refused_over_limit"], (r["installs_over_limit_hw"], s)
        assert r["selector"]["accepted"] == s["installs"], (r["selector"], s)
    # Load control on: Soft_limit below Hard_limit in the overload, each change announced.
    high = next(p for p in on["phases"] if p["name"] == "high")
    assert high["soft_limit_min"] is not None and high["soft_limit_min"] < hard, high
    ev = [v for _, v in on["soft_limit_events"]]
    assert ev and min(ev) <= on["soft_limit_min"] < hard, (ev, on["soft_limit_min"])   # samples every 20 us
    prev = hard
    for v in ev:   # the firmware's steps are 1 connection (Hard_limit / 64), both ways
        assert abs(v - prev) == on["lc_settings"]["dec_step"], (prev, v, ev)
        prev = v
    lc = on["lc_settings"]
    assert on["cnum_over_soft_limit_max"] <= lc["dec_step"] + lc["inc_step"], on["cnum_over_soft_limit_max"]
    # Load control off: Soft_limit stays at Hard_limit.
    assert all(w["soft_limit"] == hard for w in off["windows"]), [w["soft_limit"] for w in off["windows"]]
    assert off["soft_limit_events"] == [] and off["stats"]["refused_over_limit"] == 0
    # Both ran into overload (the queue full), or the comparison tests nothing.
    assert on["qlen_max"] == off["qlen_max"] == lc["queue_size"], (on["qlen_max"], off["qlen_max"])
    assert loadctl_report.table({"summary": [loadctl_report.summary(r) for r in (on, off)]}).count("\n") == 3
    assert hw.load_config("nic-toe")[0] == loadctl_report.design()
