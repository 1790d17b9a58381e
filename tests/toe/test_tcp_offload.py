"""The TCP offload engine in hardware (hw/src/offnic/toe/TcpOffload.scala: control, the
receive-ring writer, the segment builder, rings in an AxiRam) carrying connections
handed off mid-transfer against TcpPeers, through the same harness as the exact model
(toe_sim.Sim, here with toe_hwengine.HwEngine in place of toe_model.Engine): every byte
stream exact in both directions, each close order, loss, duplication, corruption and
reordering on the link, sequence numbers across 2^32. Seeds are printed by the harness
(OFFNIC_SEED replays).
"""
from __future__ import annotations

import random
import time

import cocotb
from cocotb.task import bridge

from offnic_sim.toe import toe_sim
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.toe.toe_hwengine import HwEngine

CONNECTIONS, BUCKETS, SLOTS = 64, 16, 256


def params():
    # Timers scaled down (a 20 ms minimum RTO, TIME_WAIT 50 ms): the hardware's microsecond
    # is one clock here, so a timeout costs its length in simulated cycles. FIN_WAIT_2
    # outlasts many of the peer's RTOs: a half-closed connection still receives.
    return toe_sim.sim_params(rto_min_us=20_000, time_wait_us=50_000, fin_wait_2_us=2_000_000,
                              delack_us=10_000, check_tcb=False)


def run_transfers(hw: HwEngine, seed: int) -> str:
    rng = random.Random(seed)
    sim = toe_sim.Sim(rng.getrandbits(32), engine=hw, drop=0.02, dup=0.01, corrupt=0.005, reorder=0.03,
                      reorder_us=500)
    for k, close in enumerate(("host", "peer", "both", "rst")):
        sim.add(k, rng, snd_size=1 << 14, rcv_size=1 << 14, mss=1460, ts=k != 1,
                isn_e=2**32 - rng.randrange(1, 20_000), isn_p=2**32 - rng.randrange(1, 20_000),
                e_inflight=rng.randbytes(2000), e_unsent=rng.randbytes(1000), e_unread=rng.randbytes(300),
                p_unacked=rng.randbytes(1000), p_pending=rng.randbytes(rng.randrange(8_000, 20_000)),
                host_tx=rng.randbytes(rng.randrange(8_000, 20_000) + (3000 if close == "rst" else 0)),
                close=close, latency=rng.choice((200, 500)), sack=k % 2 == 0,
                peer_cfg=toe_sim.peer_config(mss=1460, timestamps=k != 1, time_wait=0.05, rto_initial=0.1,
                                             rto_min=0.02))
    try:
        sim.run_all(tmax_us=toe_sim.T0 + 30_000_000)
    except AssertionError as e:
        raise AssertionError(f"{e}\n  hardware: {hw.snapshot()}") from None
    return f"{(sim.now - toe_sim.T0) / 1e3:.0f} ms simulated; host got " + \
        ", ".join(f"{len(x.got_host)}/{len(x.got_peer)}" for x in sim.conns)


@cocotb.test(timeout_time=60, timeout_unit="sec")
async def tcp_offload(dut):
    hw = HwEngine(dut, params())
    await hw.start(toe_sim.T0)
    t0 = time.monotonic()
    summary = await bridge(run_transfers)(hw, cocotb.RANDOM_SEED)
    dut._log.info(f"{summary} ({time.monotonic() - t0:.0f} s)")


def test_tcp_offload():
    run_cocotb(Design.of("toe.TcpOffload", connections=CONNECTIONS, buckets=BUCKETS, slots=SLOTS, fifo_beats=512),
               __name__)
