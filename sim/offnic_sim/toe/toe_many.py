"""Many offloaded connections at once against TcpPeers (issue 5: "thousands against a
Python TCP peer model in pure simulation"), for the exact model (toe_model.Engine) and the
simulated hardware (toe_hwengine.HwEngine) alike: the workload of
tests/toe/test_tcp_offload_many.py and of `./offnic bench toe`'s `offload_many` case.

`run_many(engine, seed, n)`: n connections from `toe_sim.random_conn` (random MSS,
options, ring and peer buffer sizes, handoff queues, ISNs near 2^32, close orders, some
reset by the peer, some stalled readers), each handed off at its own random moment while
the others run, through one lossy link (2% loss, 1% duplication, 0.5% corruption, 3%
reordering); every stream exact both ways and every connection closed on both sides.

Times are scaled for the hardware, where HwEngine makes one clock one microsecond, so a
timeout costs its length in simulated cycles: on both sides an RTO of 20 ms at least,
100 ms before the first sample and 200 ms at most, the engine's delayed ACK 10 ms, and
random_conn's latencies, stalls and peers' delayed ACKs times TIME_SCALE. TIME_WAIT and
FIN_WAIT_2 last 2 s on both sides, longer than the other side's retransmissions; the run
ends when every connection is closed on both sides (each side CLOSED or in TIME_WAIT) and
both applications have read everything, so those waits cost nothing. The model runs the
same workload (`python -m offnic_sim.toe.toe_many -n N --seed S`): a workload that fails
there is the workload's fault, not the RTL's.
"""
from __future__ import annotations

import random
import time
from collections import Counter

from offnic_sim.toe import toe_sim
from offnic_sim.net.tcppeer import TcpState, seq_add, seq_diff, seq_lt
from offnic_sim.toe.toe_model import EngineParams, St

TIME_SCALE = 0.1                        # random_conn's latencies 10 us..2 ms, stalls 10..300 ms
PEER = dict(time_wait=2.0, rto_initial=0.1, rto_min=0.02, rto_max=0.2, persist_max=0.2)
SPREAD_US = 100_000                     # handoffs at random moments within the first 100 ms
LINK = dict(drop=0.02, dup=0.01, corrupt=0.005, reorder=0.03, reorder_us=500)
WIRE_OVERHEAD = 4 + 20                  # FCS, preamble and inter-frame gap


def many_params(**kw) -> EngineParams:
    """The engine's parameters for the scaled workload (kw overrides). FIN_WAIT_2 outlasts
    many of the peer's RTOs: a half-closed connection still receives."""
    base = dict(rto_min_us=20_000, rto_initial_us=100_000, rto_max_us=200_000, time_wait_us=2_000_000,
                fin_wait_2_us=2_000_000, delack_us=10_000, check_tcb=False)
    base.update(kw)
    return toe_sim.sim_params(**base)


class ManySim(toe_sim.Sim):
    """toe_sim.Sim counting what goes on the link, per direction (before loss): frames,
    wire bytes (with FCS, preamble and gap), payload bytes, and retransmissions (a
    segment with payload or FIN starting below the highest sequence number that
    direction of the connection has sent since the handoff)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.stats = {d: Counter() for d in ("engine", "peer")}
        self._high: dict[tuple[str, int], int] = {}

    def link(self, kind: str, x: toe_sim.Conn, frame: bytes) -> None:
        d = "engine" if kind == "p" else "peer"
        ip = frame[14:]
        ihl = (ip[0] & 15) * 4
        tot = int.from_bytes(ip[2:4], "big")
        tcp = ip[ihl:]
        n = tot - ihl - (tcp[12] >> 4) * 4
        fin = tcp[13] & 1
        seq = int.from_bytes(tcp[4:8], "big")
        s = self.stats[d]
        s["frames"] += 1
        s["wire_bytes"] += max(len(frame), 60) + WIRE_OVERHEAD
        s["payload_bytes"] += n
        if n or fin:
            s["data_frames"] += 1
            end = seq_add(seq, n + fin)
            hi = self._high.get((d, x.k))
            if hi is not None and seq_lt(seq, hi):
                s["retransmits"] += 1
            if hi is None or seq_diff(end, hi) > 0:
                self._high[(d, x.k)] = end
        super().link(kind, x, frame)


def run_many(engine, seed: int, n: int, *, params: EngineParams | None = None, spread_us: int = SPREAD_US,
             time_scale: float = TIME_SCALE, tmax_us: int = toe_sim.T0 + 60_000_000,
             log=None) -> dict:
    """n random connections handed off at random moments to `engine` (None: the exact
    model with `params`); asserts every stream and close; returns the figures. A
    connection's draws, its moment and the link's all follow from the seed."""
    rng = random.Random(seed)
    sim = ManySim(rng.getrandbits(32), params or many_params(), engine=engine, mem=(n + 1) << 19, **LINK)
    unread0: dict[int, int] = {}
    peak = 0
    t_wall = time.monotonic()

    def handoff(k: int, r: random.Random) -> None:
        nonlocal peak
        x = toe_sim.random_conn(sim, k, r, peer=PEER, time_scale=time_scale)
        peak = max(peak, len(sim.by_id))
        # bytes the host had not read at the handoff: in the ring already, never on the link
        unread0[k] = seq_diff(x.data_end, x.read_seq) + len(x.got_host)
        if log and len(sim.conns) % max(1, n // 8) == 0:
            log(f"  {len(sim.conns)}/{n} handed off at {(sim.now - toe_sim.T0) / 1e3:.1f} ms "
                f"({time.monotonic() - t_wall:.0f} s wall), {sum(x.done for x in sim.conns)} done")

    for k in range(n):
        at = toe_sim.T0 + rng.randrange(spread_us)
        sim.at(at, lambda k=k, r=random.Random(rng.getrandbits(64)): handoff(k, r))
    tw: dict[int, str] = {}              # k -> the side left in TIME_WAIT at the end
    asked: dict[int, int] = {}
    pending: list[toe_sim.Conn] = []
    seen = 0

    def finished(x: toe_sim.Conn) -> bool:
        """Closed on both sides, both applications done reading: each side CLOSED or in
        TIME_WAIT. A side reaches TIME_WAIT only with its FIN acknowledged and the
        other's received, so nothing more will be sent; the TIME_WAITs are long (they
        must outlast the other side's retransmissions) and waiting them out would only
        cost idle cycles."""
        if sim.now < x.stall_until or seq_diff(x.data_end, x.read_seq) or x.peer.recv_buffered:
            return False                # an application has not read everything yet
        if x.done:
            tw.pop(x.k, None)
            return True
        if x.engine_closed:
            if x.peer.state is TcpState.TIME_WAIT:
                tw[x.k] = "peer"
            return x.k in tw
        if x.peer.state not in (TcpState.CLOSED, TcpState.TIME_WAIT) or x.conn not in sim.by_id \
                or x.host_stack is not None:
            return False
        if tw.get(x.k) in ("engine", "both"):
            return True
        if sim.now - asked.get(x.k, -1 << 62) >= 10_000:       # a status command at most each 10 ms
            asked[x.k] = sim.now
            if sim.eng.state_of(x.conn) is St.TIME_WAIT:
                tw[x.k] = "engine" if x.peer.state is TcpState.CLOSED else "both"
        return tw.get(x.k) in ("engine", "both")

    def done() -> bool:
        nonlocal seen
        pending.extend(sim.conns[seen:])
        seen = len(sim.conns)
        while pending and finished(pending[-1]):
            pending.pop()
        return seen == n and not pending

    try:
        sim.run(done, tmax_us)
        for x in sim.conns:
            x.check()
    except AssertionError as e:
        snap = f"\n  hardware: {engine.snapshot()}" if hasattr(engine, "snapshot") else ""
        raise AssertionError(f"seed {seed}, {n} connections: {e}{snap}") from None
    to_peer = sum(len(x.to_peer) for x in sim.conns)
    to_host = sum(len(x.to_host) - unread0[x.k] for x in sim.conns)
    mss = Counter(x.peer.cfg.mss for x in sim.conns)
    return {"connections": n, "peak_installed": peak, "seed": seed, "spread_us": spread_us, "time_scale": time_scale,
            "harness_us": sim.now - toe_sim.T0, "bytes_engine_to_peer": to_peer, "bytes_peer_to_engine": to_host,
            "closes": dict(Counter(x.close for x in sim.conns)),
            "time_wait_at_end": dict(Counter(tw.values())), "mss_mix": {str(k): v for k, v in mss.items()},
            "link": {d: dict(s) for d, s in sim.stats.items()},
            "peer_counters": dict(sum((Counter(x.peer.counters) for x in sim.conns), Counter())),
            "engine_counters": dict(sim.eng.counters), "wall_s": round(time.monotonic() - t_wall, 1)}


def hw_engine(dut, params: EngineParams | None = None, mem_size: int = 1 << 28):
    """toe_hwengine.HwEngine for this workload."""
    from offnic_sim.toe.toe_hwengine import HwEngine
    return HwEngine(dut, params or many_params(), mem_size=mem_size)


def goodput(rec: dict, cycles: int, clock_mhz: float = 250.0) -> dict:
    """Aggregate goodput over `cycles` at the clock, and what a full-duplex 25G port would
    carry with this traffic's frame mix (each direction's payload / wire bytes)."""
    ns = cycles * 1e3 / clock_mhz
    gbps = (rec["bytes_engine_to_peer"] + rec["bytes_peer_to_engine"]) * 8 / ns
    line = sum(25.0 * s["payload_bytes"] / s["wire_bytes"] for s in rec["link"].values() if s.get("wire_bytes"))
    return {"cycles": cycles, "simulated_us_at_clock": round(ns / 1e3, 1), "gbps": round(gbps, 3),
            "gbps_engine_to_peer": round(rec["bytes_engine_to_peer"] * 8 / ns, 3),
            "gbps_peer_to_engine": round(rec["bytes_peer_to_engine"] * 8 / ns, 3),
            "line_rate_gbps": round(line, 2), "line_rate_pct": round(100 * gbps / line, 2) if line else None}


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="the many-connections workload on the exact model")
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    r = run_many(None, a.seed, a.n, log=print)
    print(r)
    print(goodput(r, r["harness_us"]))
