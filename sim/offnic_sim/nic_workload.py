"""The cocotb test that `./offnic demo` and `./offnic bench base` run on the whole NIC
(tasks.simulate): the workload of bench/workload.py with a runner for every kind of
case. It sits above the offloads' packages because the demo uses them all."""
import cocotb

from offnic_sim.bench.probe import run_probe
from offnic_sim.bench.traffic import run_traffic
from offnic_sim.bench.workload import run_from_config
from offnic_sim.cache.web_case import run_web
from offnic_sim.frag.frag_case import run_frag

RUNNERS = {"tx": run_traffic, "rx": run_traffic, "bidir": run_traffic,
           "probe": run_probe, "web": run_web, "frag": run_frag}


@cocotb.test(timeout_time=500, timeout_unit="ms")
async def workload(dut):
    """The simulation of `./offnic demo` and `./offnic bench`."""
    await run_from_config(dut, RUNNERS)
