"""The TCP offload engine in hardware (TcpOffload) carrying many connections at once
against TcpPeers: toe_many's workload (random_conn connections handed off at random
moments, a lossy link, scaled timers), every byte stream exact both ways and every
connection closed on both sides. Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import os
import time

import cocotb
from cocotb.task import bridge

from offnic_sim.toe import toe_many
from offnic_sim.toe import toe_sim
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

CONNECTIONS, BUCKETS, SLOTS = 64, 16, 256     # test_tcp_offload's build
MANY = int(os.environ.get("OFFNIC_TOE_MANY", 32))


@cocotb.test(timeout_time=300, timeout_unit="sec")
async def tcp_offload_many(dut):
    hw = toe_many.hw_engine(dut, mem_size=(MANY + 1) << 19)
    await hw.start(toe_sim.T0)
    t0 = time.monotonic()
    c0 = cocotb.utils.get_sim_time("ns")
    r = await bridge(toe_many.run_many)(hw, cocotb.RANDOM_SEED, MANY, log=dut._log.info)
    cycles = round((cocotb.utils.get_sim_time("ns") - c0) / 4)
    g = toe_many.workload_rate(r, cycles)
    dut._log.info(f"{MANY} connections, seed {cocotb.RANDOM_SEED}: {cycles} cycles, "
                  f"{r['bytes_engine_to_peer']} B out, {r['bytes_peer_to_engine']} B in, {g['workload_gbps']} Gb/s in the workload's time base (1 clock = 1 us), "
                  f"link {r['link']}, closes {r['closes']} ({time.monotonic() - t0:.0f} s)")


def test_tcp_offload_many():
    run_cocotb(Design.of("toe.TcpOffload", connections=CONNECTIONS, buckets=BUCKETS, slots=SLOTS, fifo_beats=512),
               __name__)
