"""How fast the whole NIC simulates on each harness: core clock cycles per wall second,
idle (driver up, nothing to do) and under traffic (both ports: TX rings kept full of
1514-byte frames by the driver and 1514-byte frames sent into the NIC back to back,
every frame taken at the far end and by the driver).

    PYTHONPATH=sim .venv/bin/python -m offnic_sim.fast.speed [--harness fast,gpi-clocks,public,nic] [--idle-us N] [--traffic-us N]

prints one line per harness and workload. The figures are wall-clock speeds of the
machine it runs on (a loaded machine gives lower ones); nothing here asserts them.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import cocotb
from cocotb.triggers import Timer

from offnic_sim.harness import hw, perf
from offnic_sim.harness.runner import FAST_GPI_CLOCKS, FAST_PUBLIC, bench_config, run_cocotb
from offnic_sim.fast.fast_tb import FastNicTB
from offnic_sim.host.driver import DEFAULT_MAC
from offnic_sim.host.nic_tb import NicTB

NIC = hw.Design.of("nic.Nic", addr_bits=24, board_id=0)
FRAME = DEFAULT_MAC + bytes.fromhex("02000000aa01") + b"\x88\xb5" + bytes(range(256)) * 5 + bytes(220)  # 1514 B


def _backlog(tb, port: int) -> int:
    """Frames queued into the NIC on `port` and not yet on the wire."""
    p = tb.ports[port]
    return p.tx_pending() if hasattr(p, "tx_pending") else p.source.count()


class PerfControl:
    """`perf record --control fifo:CTL,ACK` seen from inside the simulation: sampling on
    for a window only (perf starts with it off, `-D -1`)."""

    def __init__(self, spec: str | None):
        self.ctl = self.ack = None
        if spec:
            ctl, ack = spec.split(",")
            self.ctl, self.ack = open(ctl, "w"), open(ack, "r")

    def _say(self, what: str) -> None:
        if self.ctl:
            self.ctl.write(what + "\n")
            self.ctl.flush()
            self.ack.readline()

    def enable(self) -> None:
        self._say("enable")

    def disable(self) -> None:
        self._say("disable")


async def _window(tb, us: float, perf: PerfControl | None = None) -> tuple[int, float, float]:
    """Core cycles, wall seconds and CPU seconds of `us` of simulated time. The CPU time is
    the simulator process's (model and Python alike): on a loaded machine it is the
    figure that does not depend on what else runs. `perf`: sampled for this window."""
    if perf:
        perf.enable()
    c0, t0, p0 = tb.cycle, time.perf_counter(), time.process_time()
    await Timer(us, "us")
    out = tb.cycle - c0, time.perf_counter() - t0, time.process_time() - p0
    if perf:
        perf.disable()
    return out


async def _traffic(tb, us: float, perf: PerfControl | None = None) -> dict:
    drv = tb.drv
    for p in range(2):
        await drv.open_tx_queue(p, size=256, port=p)
        await drv.open_rx_queue(p, size=256, buf_size=2048)
        await drv.set_default_queue(port=p, q=p)
    await drv.set_rss(enable=False)
    counts = {"tx_out": 0, "rx_in": 0}
    stop = False

    async def tx(p):
        while not stop:
            await drv.send_batch(p, [FRAME] * 16, max_in_flight=96)

    async def drain_port(p):
        while True:
            await tb.ports[p].recv()
            counts["tx_out"] += 1

    async def feed(p):
        while not stop:
            while _backlog(tb, p) < 4:
                await tb.ports[p].send(FRAME)
            await Timer(500, "ns")

    async def take(p):
        while True:
            await drv.recv(p, timeout_us=None)
            counts["rx_in"] += 1

    tasks = [cocotb.start_soon(f(p)) for p in range(2) for f in (tx, drain_port, feed, take)]
    await Timer(10, "us")  # warm up: rings and queues filled
    n0 = dict(counts)
    cycles, wall, cpu = await _window(tb, us, perf)
    stop = True
    for t in tasks:
        t.cancel()
    return {"cycles": cycles, "wall_s": wall, "cpu_s": cpu, "frames_out": counts["tx_out"] - n0["tx_out"],
            "frames_in": counts["rx_in"] - n0["rx_in"]}


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def speed(dut):
    cfg = bench_config()
    tb = (NicTB if cfg["harness"].startswith("nic") else FastNicTB)(dut)
    await tb.init()
    out = {}
    cycles, wall, cpu = await _window(tb, cfg["idle_us"])
    out["idle"] = {"cycles": cycles, "wall_s": wall, "cpu_s": cpu}
    out["traffic"] = await _traffic(tb, cfg["traffic_us"], PerfControl(cfg.get("perf_ctl")))
    Path(cfg["out"]).write_text(json.dumps(out))


# run_cocotb's arguments per harness: the fast one and its variants, and NicTB (cocotbext-pcie
# and -eth) with only the NIC's ports visible to cocotb, or every signal (as before issue 21)
HARNESSES = {"fast": {"fast": True}, "gpi-clocks": {"fast": FAST_GPI_CLOCKS}, "public": {"fast": FAST_PUBLIC},
             "nic": {}, "nic-public": {"internals": True}}


def measure(harness: str, idle_us: float, traffic_us: float, perf_ctl: str | None = None) -> dict:
    """One simulation on `harness` (a key of HARNESSES): {"idle": ..., "traffic": ...}.
    `perf_ctl` ("CTL,ACK" fifos of a `perf record` around this process): the traffic
    window is sampled."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "speed.json"
        run_cocotb(NIC, "offnic_sim.fast.speed",
                   bench={"harness": harness, "idle_us": idle_us, "traffic_us": traffic_us, "out": str(out),
                          "perf_ctl": perf_ctl},
                   **HARNESSES[harness])
        return json.loads(out.read_text())


# Where a simulator process's time goes, by the shared object (and symbol) perf found it in.
def _component(dso: str, sym: str) -> str:
    if dso.startswith("libpython") or dso.startswith("python"):
        return "Python interpreter"
    if "cocotb" in dso or "gpi" in dso.lower() or dso.startswith("simulator."):
        return "cocotb GPI"
    if dso.startswith("libfastsim"):
        return "fast harness (C++)"
    if dso.startswith(("libc.", "libc-", "libstdc++", "libm.", "ld-linux", "libgcc")):
        return "C/C++ libraries"
    if "___024root" in sym:
        return "model evaluation"
    if "Verilated" in sym or "vl_" in sym.lower() or "Vl" in sym:
        return "Verilator runtime"
    if sym.startswith(("fs_", "dpi_")) or "fastsim" in sym:
        return "fast harness (C++)"
    if dso.startswith("_") or ".cpython-" in dso:
        return "Python extensions"
    return "other"


def where_time_goes(harness: str, traffic_us: float) -> dict:
    """`perf record` (user-space CPU clock, every process of the run) around one speed
    simulation on `harness`, sampling its traffic window only; the samples by component:
    model evaluation, Verilator runtime, fast harness (C++), cocotb GPI, Python, libraries."""
    import os
    import subprocess
    from collections import Counter
    with tempfile.TemporaryDirectory() as d:
        ctl, ack, data = Path(d) / "ctl", Path(d) / "ack", Path(d) / "perf.data"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        code = (f"import sys; sys.path.insert(0, {str(hw.ROOT / 'sim')!r}); from offnic_sim.fast import speed; "
                f"speed.measure({harness!r}, 1.0, {traffic_us!r}, perf_ctl={f'{ctl},{ack}'!r})")
        subprocess.run(["perf", "record", "-q", "-D", "-1", "--control", f"fifo:{ctl},{ack}", "-e", "cpu-clock:u",
                        "-F", "999", "-o", str(data), "--", sys.executable, "-c", code],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=hw.ROOT)
        by: Counter = Counter()
        for pct, dso, sym in perf.samples(data):
            by[_component(dso, sym)] += pct
    total = sum(by.values())
    return {"harness": harness, "traffic_us": traffic_us, "tool": "perf record -e cpu-clock:u, traffic window only",
            "by_component_pct": {k: round(100 * v / total, 1) for k, v in by.most_common() if total}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--harness", default="fast,nic", help="fast, gpi-clocks, public (the fast harness and its variants: harness/runner.py), nic, nic-public")
    ap.add_argument("--idle-us", type=float, default=50.0)
    ap.add_argument("--traffic-us", type=float, default=20.0)
    a = ap.parse_args()
    sys.modules.setdefault("offnic_sim.fast.speed", sys.modules["__main__"])
    for h in a.harness.split(","):
        r = measure(h, a.idle_us, a.traffic_us)
        for w, v in r.items():
            extra = f", {v['frames_out']} frames out, {v['frames_in']} in" if "frames_out" in v else ""
            print(f"{h:10s} {w:8s} {v['cycles'] / v['wall_s']:9.0f} core cycles/s "
                  f"({v['cycles']} cycles in {v['wall_s']:.1f} s{extra})", flush=True)


if __name__ == "__main__":
    main()
