"""Connection selection (seed 004 §3.3, host/conn_select.py) against its rules, on random
streams of connection events: never more on the NIC than Soft_limit, FCFS in order of
establishment, T_n never before n packets sent, a refused connection never offered again,
policies per listening port. Seeds are printed by pytest's parametrisation."""
import random

import pytest

from offnic_sim.host.conn_select import ConnectionSelector, Fcfs, Threshold, Where


def test_fcfs_offers_in_order_until_the_limit():
    s = ConnectionSelector(soft_limit=2, default=Fcfs())
    assert [s.established(k, 80) for k in range(4)] == [True, True, False, False]
    s.handoff_done(0, True)
    s.handoff_done(1, False)                       # refused: on the host for good
    assert s.where(1) is Where.KEPT and not s.sent(1, 100)
    assert s.sent(2)                               # room again: the next send offers it
    assert s.counters["held_by_limit"] == 2 and s.counters["refused"] == 1


def test_threshold_waits_for_n_packets():
    s = ConnectionSelector(soft_limit=10, policies={80: Threshold(5)})
    assert not s.established("a", 80)
    assert [s.sent("a") for _ in range(5)] == [False, False, False, False, True]
    assert not s.established("b", 22)             # no policy for port 22: never
    assert not s.sent("b", 1000) and s.where("b") is Where.HOST


def test_lowered_limit_stops_new_handoffs_only():
    s = ConnectionSelector(soft_limit=3, default=Fcfs())
    for k in range(3):
        assert s.established(k, 80)
        s.handoff_done(k, True)
    s.set_soft_limit(1)
    assert not s.established(9, 80) and s.on_nic == 3   # nothing is taken back here
    s.closed(0)
    s.closed(1)
    assert not s.sent(9)                                 # 1 on the NIC, limit 1
    s.closed(2)
    assert s.sent(9)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_random_events_keep_the_rules(seed):
    rng = random.Random(seed)
    policies = {80: Fcfs(), 443: Threshold(rng.randrange(1, 20))}
    s = ConnectionSelector(soft_limit=rng.randrange(0, 30), policies=policies)
    alive, order, sent, refused, offered = [], [], {}, set(), []
    for step in range(5000):
        r = rng.random()
        if r < 0.2:
            conn, port = step, rng.choice((80, 443, 22))
            alive.append(conn)
            sent[conn] = 0
            room = s.on_nic < s.soft_limit
            if s.established(conn, port):
                assert room, "offered at or above Soft_limit"
                offered.append(conn)
                assert port == 80 or (port == 443 and policies[443].n <= 0)
        elif r < 0.6 and alive:
            conn = rng.choice(alive)
            n = rng.randrange(1, 4)
            before = s.where(conn)
            if before is Where.HOST:
                sent[conn] += n
            room = s.on_nic < s.soft_limit
            if s.sent(conn, n):
                assert room, "offered at or above Soft_limit"
                offered.append(conn)
                assert before is Where.HOST and conn not in refused
                if s.conns[conn].port == 443:
                    assert sent[conn] >= policies[443].n
        elif r < 0.8 and offered:
            conn = offered.pop(rng.randrange(len(offered)))
            ok = rng.random() < 0.8
            s.handoff_done(conn, ok)
            if not ok:
                refused.add(conn)
        elif r < 0.9 and alive:
            conn = alive.pop(rng.randrange(len(alive)))
            if conn in offered:
                offered.remove(conn)
            s.closed(conn)
        else:
            s.set_soft_limit(rng.randrange(0, 30))
        assert all(s.where(c) is Where.KEPT for c in refused if c in s.conns)
    assert s.counters["offered"] > 0 and s.counters["held_by_limit"] > 0
