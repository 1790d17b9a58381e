"""The TCP offload engine in hardware (hw/src/offnic/toe/TcpOffload.scala: control, the
receive-ring writer, the segment builder, rings in an AxiRam) carrying connections
handed off mid-transfer against TcpPeers, through the same harness as the exact model
(toe_sim.Sim, here with toe_hwengine.HwEngine in place of toe_model.Engine): every byte
stream exact in both directions, each close order, loss, duplication, corruption and
reordering on the link, sequence numbers across 2^32. The engine's counters, read over
its register bus as a driver reads them, are checked against what the harness saw: every
frame in went one of three ways (host, engine, dropped as bad), the bad ones dropped are
exactly the corrupted frames (by the parser's reference, tcp_parse) that did not come out
for the host, every segment steered became an event, every segment asked for left on the
wire, one table insert and delete per connection, a reset and a close notified for each.
Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import random
import time
from collections import Counter

import cocotb
from cocotb.task import bridge

from offnic_sim.toe import tcp_parse, toe_sim
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.toe.toe_hwengine import HwEngine

CONNECTIONS, BUCKETS, SLOTS = 64, 16, 256
PEER_TIME_WAIT_S = 0.4


def params():
    # Timers scaled down (a 20 ms minimum RTO, TIME_WAIT 50 ms): the hardware's microsecond
    # is one clock here, so a timeout costs its length in simulated cycles. FIN_WAIT_2
    # outlasts many of the peer's RTOs: a half-closed connection still receives.
    return toe_sim.sim_params(rto_min_us=20_000, time_wait_us=50_000, fin_wait_2_us=2_000_000,
                              delack_us=10_000, check_tcb=False)


def count_frames(hw: HwEngine) -> Counter:
    """What the harness gives the engine and takes from it, counted: frames in (and those
    the parser's reference calls bad), frames out for the host (bad ones too), frames on
    the wire."""
    seen: Counter = Counter()
    seg_in, take_host, take_wire = hw.segment_in, hw.take_host, hw.take_wire

    def bad(f: bytes) -> bool:
        return tcp_parse.expected(f)["kind"] == tcp_parse.BAD

    def counted_in(frame: bytes, now_us: int) -> None:
        seen["in"] += 1
        seen["in_bad"] += bad(frame)
        seg_in(frame, now_us)

    def counted_host() -> list[bytes]:
        out = take_host()
        seen["host"] += len(out)
        seen["host_bad"] += sum(map(bad, out))
        return out

    def counted_wire() -> list[bytes]:
        out = take_wire()
        seen["wire"] += len(out)
        return out
    hw.segment_in, hw.take_host, hw.take_wire = counted_in, counted_host, counted_wire
    return seen


def check_counters(r: dict, seen: Counter, conns: list) -> None:
    """The engine's registers against the harness's counts (module docstring)."""
    n = len(conns)
    assert r["steer_to_host"] + r["steer_to_engine"] + r["steer_bad_dropped"] == seen["in"], (r, seen)
    assert r["steer_to_host"] == seen["host"], (r, seen)
    assert r["steer_bad_dropped"] == seen["in_bad"] - seen["host_bad"], (r, seen)
    assert r["seg_events"] == r["steer_to_engine"], r
    assert r["tx_segments"] == seen["wire"], (r, seen)
    assert r["table_hits"] >= r["steer_to_engine"] + r["steer_bad_dropped"], r
    assert r["table_inserts"] == n and r["table_deletes"] == r["notes_closed"] == sum(x.engine_closed for x in conns), r
    assert r["notes_rst"] == sum(x.reset for x in conns), r
    assert r["connections"] == n - r["table_deletes"] and r["connections_peak"] == n, r
    assert not (r["commands_refused"] or r["store_errors"] or r["tx_drops"] or r["tx_read_errors"]), r
    assert r["seg_data_not_stored"] <= r["seg_events"] and r["timer_events"] > 0, r


def run_transfers(hw: HwEngine, seed: int) -> str:
    seen = count_frames(hw)
    rng = random.Random(seed)
    # The peers' TIME_WAIT (0.4 s) outlasts the engine's FIN retransmissions: with a 20 ms
    # minimum RTO, four backed-off losses in a row. A shorter one (it was 50 ms) lets a FIN
    # whose ACK was lost come back to a CLOSED peer, which rightly answers with a RST
    # (seed 1274484477: FIN corrupted, resent after 41 ms, ACK lost, resent 80 ms later).
    sim = toe_sim.Sim(rng.getrandbits(32), engine=hw, drop=0.02, dup=0.01, corrupt=0.005, reorder=0.03,
                      reorder_us=500)
    for k, close in enumerate(("host", "peer", "both", "rst")):
        sim.add(k, rng, snd_size=1 << 14, rcv_size=1 << 14, mss=1460, ts=k != 1,
                isn_e=2**32 - rng.randrange(1, 20_000), isn_p=2**32 - rng.randrange(1, 20_000),
                e_inflight=rng.randbytes(2000), e_unsent=rng.randbytes(1000), e_unread=rng.randbytes(300),
                p_unacked=rng.randbytes(1000), p_pending=rng.randbytes(rng.randrange(8_000, 20_000)),
                host_tx=rng.randbytes(rng.randrange(8_000, 20_000) + (3000 if close == "rst" else 0)),
                close=close, latency=rng.choice((200, 500)), sack=k % 2 == 0,
                peer_cfg=toe_sim.peer_config(mss=1460, timestamps=k != 1, time_wait=PEER_TIME_WAIT_S, rto_initial=0.1,
                                             rto_min=0.02))
    try:
        sim.run_all(tmax_us=toe_sim.T0 + 30_000_000)
    except AssertionError as e:
        raise AssertionError(f"{e}\n  hardware: {hw.snapshot()}") from None
    hw.settle_sync()
    sim.drain()
    r = hw.registers()
    check_counters(r, seen, sim.conns)
    moved = {k: v for k, v in r.items() if v and k not in ("next", "now_us")}
    return f"{(sim.now - toe_sim.T0) / 1e3:.0f} ms simulated; host got " + \
        ", ".join(f"{len(x.got_host)}/{len(x.got_peer)}" for x in sim.conns) + f"; registers {moved}"


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
