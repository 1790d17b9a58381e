"""The bridge's Impair stage and ArpResponder (sim/offnic_sim/linux/linuxnet.py): pure Python,
no kernel, no root.

- identity when nothing is configured; frames conserved: in + duplicated = out + dropped
  + held, always;
- scripted actions do exactly what they say: drop, duplicate, corrupt (one bit, at or past
  corrupt_from), reorder by k positions (released right after input k later, even if
  that one was dropped), reorder by time (push/poll/flush);
- random impairments are reproducible from the seed, roughly at the configured rates,
  and independent of each other (raising the drop rate changes no reordering decision);
- `select` shields other frames completely;
- ArpResponder answers requests for its addresses only, with a well-formed reply.
"""
from __future__ import annotations

import random
import struct

import pytest

from offnic_sim.linux.linuxnet import (ETH_P_ARP, ETH_P_IP, ArpResponder, Impair, ImpairConfig, eth_frame, ethertype,
                                 ip_of, mac_bytes, mac_str)

SEED = 7331


def frames(n: int, size: int = 64) -> list[bytes]:
    """Distinct frames: the index in the first two bytes after the Ethernet header."""
    rng = random.Random(n)
    return [eth_frame("02:00:00:00:00:01", "02:00:00:00:00:02", ETH_P_IP, i.to_bytes(2, "big") + rng.randbytes(size))
            for i in range(n)]


def index(frame: bytes) -> int:
    return int.from_bytes(frame[14:16], "big")


def run(impair: Impair, fs: list[bytes], now_step: float = 0.0) -> list[bytes]:
    out = []
    for i, f in enumerate(fs):
        out += impair.push(f, i * now_step)
    return out + impair.flush()


def conserved(impair: Impair) -> bool:
    c = impair.counters
    return c["in"] + c["duplicated"] == c["out"] + c["dropped"] + impair.held


def test_identity():
    fs = frames(50)
    imp = Impair(seed=SEED)
    assert run(imp, fs) == fs
    assert imp.counters["in"] == imp.counters["out"] == 50 and conserved(imp)


def test_script_drop_duplicate_corrupt():
    fs = frames(10)
    imp = Impair(ImpairConfig(script={2: "drop", 4: "duplicate", 6: "corrupt", 8: "pass"}), seed=SEED)
    out = run(imp, fs)
    assert [index(f) for f in out] == [0, 1, 3, 4, 4, 5, 6, 7, 8, 9]
    changed = [(a, b) for a, b in zip(fs[6], out[6]) if a != b]
    assert len(changed) == 1 and bin(changed[0][0] ^ changed[0][1]).count("1") == 1
    assert out[6][:14] == fs[6][:14]          # corrupt_from=14 keeps the Ethernet header
    assert dict(imp.counters) == {"in": 10, "out": 10, "dropped": 1, "duplicated": 1, "corrupted": 1}


@pytest.mark.parametrize("k", [1, 3, 7])
def test_reorder_by_positions(k):
    fs = frames(12)
    imp = Impair(ImpairConfig(script={2: ("reorder", k)}), seed=SEED)
    out = [index(f) for f in run(imp, fs)]
    order = [i for i in range(12) if i != 2]
    order.insert(order.index(2 + k) + 1, 2)
    assert out == order


def test_reorder_release_survives_a_drop_and_flush_keeps_order():
    fs = frames(8)
    imp = Impair(ImpairConfig(script={1: ("reorder", 2), 2: ("reorder", 9), 3: "drop"}), seed=SEED)
    out = []
    for f in fs[:4]:
        out += imp.push(f)
    assert [index(f) for f in out] == [0, 1]   # 1 went out after input 3, which was dropped
    assert imp.held == 1 and conserved(imp)
    assert [index(f) for f in imp.flush()] == [2]
    assert conserved(imp)


def test_reorder_with_duplicate_copy_overtakes():
    fs = frames(6)
    imp = Impair(ImpairConfig(script={1: ("reorder", 2)}, duplicate=0.0), seed=SEED)
    assert [index(f) for f in run(imp, fs)] == [0, 2, 3, 1, 4, 5]
    imp = Impair(ImpairConfig(duplicate=1.0, reorder=1.0, reorder_by=1), seed=SEED)
    out = imp.push(fs[0]) + imp.push(fs[1])
    assert [index(f) for f in out] == [0, 1, 0]   # copy of 0, then 1's copy, then held 0


def test_reorder_by_time():
    fs = frames(5)
    imp = Impair(ImpairConfig(script={0: "reorder"}, delay=10.0), seed=SEED)
    assert imp.push(fs[0], now=0.0) == []
    assert imp.push(fs[1], now=5.0) == [fs[1]]
    assert imp.poll(9.9) == []
    assert imp.poll(10.0) == [fs[0]]
    imp2 = Impair(ImpairConfig(script={0: "reorder"}, delay=10.0), seed=SEED)
    imp2.push(fs[0], now=0.0)
    assert imp2.push(fs[1], now=12.0) == [fs[0], fs[1]]     # due before the new frame arrived
    assert conserved(imp) and conserved(imp2)


def test_seeded_and_reproducible():
    fs = frames(400)
    cfg = ImpairConfig(drop=0.1, duplicate=0.1, reorder=0.2, reorder_by=5, corrupt=0.05)
    a = run(Impair(cfg, seed=SEED), fs)
    assert a == run(Impair(cfg, seed=SEED), fs)
    assert a != run(Impair(cfg, seed=SEED + 1), fs)


def test_rates_roughly_as_configured():
    n = 4000
    imp = Impair(ImpairConfig(drop=0.1, duplicate=0.05, reorder=0.2, corrupt=0.02), seed=SEED)
    run(imp, frames(n, size=32))
    c = imp.counters
    for key, p in (("dropped", 0.1), ("duplicated", 0.05 * 0.9), ("reordered", 0.2 * 0.9), ("corrupted", 0.02 * 0.9)):
        assert abs(c[key] / n - p) < 4 * (p * (1 - p) / n) ** 0.5 + 0.002, f"{key}: {c[key]} of {n}"
    assert conserved(imp) and imp.held == 0


def test_decisions_are_independent():
    """Raising the drop rate drops more frames but reorders the same survivors."""
    fs = frames(300)
    held = []
    for drop in (0.0, 0.3):
        imp = Impair(ImpairConfig(drop=drop, reorder=0.2, reorder_by=3), seed=SEED)
        mine = set()
        for f in fs:
            before = imp.counters["reordered"]
            imp.push(f)
            if imp.counters["reordered"] > before:
                mine.add(index(f))
        imp.flush()
        held.append(mine)
    assert held[1] and held[1] <= held[0]


def test_select_shields_other_frames():
    fs = frames(50)
    arp = eth_frame("ff:ff:ff:ff:ff:ff", "02:00:00:00:00:02", ETH_P_ARP, bytes(28))
    stream = [arp if i % 5 == 0 else f for i, f in enumerate(fs)]
    imp = Impair(ImpairConfig(drop=1.0, select=lambda f: ethertype(f) == ETH_P_IP), seed=SEED)
    assert run(imp, stream) == [f for f in stream if f is arp]
    assert imp.counters["untouched"] == 10 and imp.counters["dropped"] == 40


def test_corrupt_never_touches_header_and_keeps_length():
    fs = frames(200, size=20)
    imp = Impair(ImpairConfig(corrupt=1.0, corrupt_from=20), seed=SEED)
    out = run(imp, fs)
    for a, b in zip(fs, out):
        assert len(a) == len(b) and a[:20] == b[:20] and a != b


def arp_request(sha: str, spa: str, tpa: str) -> bytes:
    ip = lambda s: bytes(int(x) for x in s.split("."))
    body = struct.pack("!HHBBH", 1, ETH_P_IP, 6, 4, 1) + mac_bytes(sha) + ip(spa) + bytes(6) + ip(tpa)
    return eth_frame("ff:ff:ff:ff:ff:ff", sha, ETH_P_ARP, body)


def test_arp_responder():
    r = ArpResponder({"192.0.2.2": "02:0f:4e:00:00:02"})
    rep = r.reply(arp_request("02:0f:4e:00:00:01", "192.0.2.1", "192.0.2.2"))
    assert rep is not None and ethertype(rep) == ETH_P_ARP
    assert mac_str(rep[0:6]) == "02:0f:4e:00:00:01" and mac_str(rep[6:12]) == "02:0f:4e:00:00:02"
    htype, ptype, hlen, plen, oper = struct.unpack("!HHBBH", rep[14:22])
    assert (htype, ptype, hlen, plen, oper) == (1, ETH_P_IP, 6, 4, 2)
    assert mac_str(rep[22:28]) == "02:0f:4e:00:00:02" and rep[28:32] == bytes([192, 0, 2, 2])
    assert mac_str(rep[32:38]) == "02:0f:4e:00:00:01" and rep[38:42] == bytes([192, 0, 2, 1])
    assert r.reply(arp_request("02:0f:4e:00:00:01", "192.0.2.1", "192.0.2.9")) is None
    assert r.reply(frames(1)[0]) is None
    assert ip_of(frames(1)[0]) == frames(1)[0][14:] and ip_of(rep) is None
    assert r.answered == 1
