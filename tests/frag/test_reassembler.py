"""Bench: the RX reassembler (hw/src/offnic/offload/Reassembler.scala) against the
hardware-exact model `offnic_sim.frag.reasm_model.NicReassembler` (Linux's rules from
`ipfrag.Reassembler`, checked against Linux in tests/linux/test_ipfrag.py).

The bench plays the RX engine and the driver: frames go in on `s_axis` (random gaps),
`m_axis` is drained with random stalls and must carry every frame unchanged; each
frame's verdict (random back-pressure) is paired with the frame and with the model's
outcome for it: Host for non-fragments and bypassed fragments, Drop for bad, duplicate
and dropped ones, Place for the rest. Placements are carried out into a host-memory
model of the buffers the bench posted; at a completion the driver's header fix-up
(`reasm_fixup.rebuild`) must give exactly the model's reassembled datagram, with the
payload sum in the verdict. At the end every counter equals the model's.

- random UDP datagrams 0..20,000 B (and 65,507 B) at MTUs 576/1500/9000, fragments in
  forward, reverse and random order, interleaved across datagrams and sources, exact
  duplicates, VLAN-tagged frames, non-fragments in between;
- hostile: overlaps (teardrop), ping of death, tiny and empty fragments, a second last
  fragment with another end, data past the end, non-last payloads not a multiple of 8
  (trimmed, as Linux), ID collisions across sources, bad header checksums, truncated
  frames, ECN mixes;
- caps: a fragment-count cap; a byte cap with oldest-first eviction; contexts full
  (a 16-context build): bypass to the host, and later fragments follow; the pool empty;
- timeout: contexts expire `cfg_timeout_us` after their first fragment.
Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import logging
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from offnic_sim.net import ipfrag
from offnic_sim.frag import reasm_model
from offnic_sim.host import reasm_fixup
from reasm_frames import datagram, eth, frag, hostile, interleave, random_traffic
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

STATS = ["requests", "reassembled", "queued", "duplicate", "trimmed", "overlap", "bad_last", "beyond_end",
         "empty", "oversize", "ecn_mix", "too_many_frags", "timeout", "evicted", "bypassed", "bad_header",
         "bad_checksum", "truncated", "post_dropped"]
HOST, DROP, PLACE = 0, 1, 2
ETH = bytes.fromhex("020000000002" "020000000001")
NO_CAP_BYTES = (1 << 24) - 1
CONTEXTS, BUFFERS, BUCKETS = 16, 64, 64


def eth(packet: bytes, vlan: bool = False) -> bytes:
    return ETH + (struct.pack(">HH", 0x8100, 5) if vlan else b"") + b"\x08\x00" + packet


def expected_action(outcome: str) -> int:
    if outcome in (ipfrag.NOT_FRAGMENT, ipfrag.BYPASSED):
        return HOST
    if outcome in (ipfrag.QUEUED, ipfrag.REASSEMBLED):
        return PLACE
    return DROP


class ReasmTB:
    def __init__(self, dut, seed: int, contexts: int):
        self.dut = dut
        self.rng = random.Random(seed)
        self.contexts = contexts
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clock, dut.reset)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clock, dut.reset)
        for x in (self.src, self.sink):
            x.log.setLevel(logging.WARNING)
        Clock(dut.clock, 4, unit="ns").start()
        self.verdicts: list[dict] = []
        self.verdict_stall = 0.0
        cocotb.start_soon(self._verdict_monitor())

    async def reset(self, *, buffers: int = 64, timeout_us: int = (1 << 22), tick: int = 250,
                    max_frags: int = 255, max_bytes: int = NO_CAP_BYTES, stall: float = 0.2) -> None:
        d = self.dut
        await FallingEdge(d.clock)
        d.reset.value = 1
        d.cfg_enable.value = 1
        d.cfg_timeout_us.value = timeout_us
        d.cfg_tick_cycles.value = tick
        d.cfg_max_frags.value = max_frags
        d.cfg_max_bytes.value = max_bytes
        d.cfg_hash_key.value = reasm_model.DEFAULT_HASH_KEY
        d.buf_post_valid.value = 0
        d.buf_return_valid.value = 0
        await ClockCycles(d.clock, 4)
        await FallingEdge(d.clock)
        d.reset.value = 0
        self.verdicts.clear()
        self.sink.clear()
        self.sink.set_pause_generator(self._pauses(stall))
        self.verdict_stall = stall
        self.checked, self.pending, self.to_repost = 0, [], []
        self.model_now, self.delivered = 0, 0
        self.model = reasm_model.NicReassembler(contexts=self.contexts, buckets=BUCKETS, buffers=0,
                                                timeout=timeout_us,
                                                max_bytes=None if max_bytes == NO_CAP_BYTES else max_bytes,
                                                max_frags=None if max_frags == 255 else max_frags)
        self.mem: dict[int, bytearray] = {}
        self.base: dict[int, int] = {}
        await self.post(range(buffers))
        await ClockCycles(d.clock, CONTEXTS * 128)  # the bitmaps are cleared after reset

    def _pauses(self, p: float):
        while True:
            yield self.rng.random() < p

    async def post(self, ids) -> None:
        d = self.dut
        for i in ids:
            await FallingEdge(d.clock)
            self.base[i] = self.rng.randrange(1 << 20, 1 << 44) & ~7
            self.mem[i] = bytearray(reasm_fixup.BUFFER_BYTES)
            d.buf_post_valid.value = 1
            d.buf_post_bits_id.value = i
            d.buf_post_bits_addr.value = self.base[i]
            self.model.post(1)
        await FallingEdge(d.clock)
        d.buf_post_valid.value = 0

    async def _verdict_monitor(self) -> None:
        """At each falling edge: pick `ready` for the coming rising edge; when `valid` is
        up too, that edge transfers the verdict now on the bits (stable until then)."""
        d = self.dut
        fields = ["action", "ramOffset", "len", "hostAddr", "complete", "bufId", "start", "frameLen", "csum",
                  "ecn", "df"]
        while True:
            await FallingEdge(d.clock)
            ready = self.rng.random() >= self.verdict_stall
            d.m_verdict_ready.value = int(ready)
            if ready and d.reset.value == 0 and d.m_verdict_valid.value:
                self.verdicts.append({f: int(getattr(d, "m_verdict_bits_" + f).value) for f in fields})

    async def run(self, frames: list[bytes], *, gap: int = 0, wait_us: dict[int, int] | None = None) -> None:
        """Send the frames (Ethernet), check every verdict against the model."""
        d = self.dut
        first = len(self.verdicts)
        sent = 0
        for i, fr in enumerate(frames):
            if wait_us and i in wait_us:
                # Let the engine finish, then time pass (expiries are checked when idle).
                await self._drain(first + i)
                await ClockCycles(d.clock, wait_us[i] * int(d.cfg_tick_cycles.value))
            await self.src.send(AxiStreamFrame(fr))
            sent += 1
            if gap and self.rng.random() < 0.3:
                await self.src.wait()
                await ClockCycles(d.clock, self.rng.randrange(gap))
        await self._drain(first + len(frames))
        for i, fr in enumerate(frames):
            got = self.sink.recv_nowait() if not self.sink.empty() else None
            assert got is not None and bytes(got.tdata) == fr, f"frame {i} not passed through unchanged"
        assert self.sink.empty()

    async def _drain(self, n: int) -> None:
        d = self.dut
        for _ in range(200_000):
            self._check_new()
            if len(self.verdicts) >= n:
                return
            await ClockCycles(d.clock, 8)
        raise AssertionError(f"verdicts stopped at {len(self.verdicts)} of {n}")

    def _check_new(self) -> None:
        while self.checked < len(self.verdicts):
            v = self.verdicts[self.checked]
            fr = self.pending[self.checked]
            self.checked += 1
            self._check(fr, v)

    def _check(self, fr: bytes, v: dict) -> None:
        h = 18 if fr[12:14] == b"\x81\x00" else 14
        if fr[h - 2:h] != b"\x08\x00":
            assert v["action"] == HOST, f"non-IPv4 frame: verdict {v}"
            return
        out = self.model.push(fr[h:], now=self.model_now)
        outcome = self.model.last
        want = expected_action(outcome)
        assert v["action"] == want, (f"frame {self.checked - 1}: verdict {v} for outcome {outcome} ({len(fr)} B)"
                                     f"; hw counters {self.hw_counters()}")
        if want == PLACE:
            buf = self.mem[v["bufId"]]
            at = v["hostAddr"] - self.base[v["bufId"]]
            assert 0 <= at and at + v["len"] <= len(buf), f"placement {at}+{v['len']} outside the buffer"
            buf[at:at + v["len"]] = fr[v["ramOffset"]:v["ramOffset"] + v["len"]]
            assert bool(v["complete"]) == (outcome == ipfrag.REASSEMBLED)
            if v["complete"]:
                frame = reasm_fixup.rebuild(bytes(buf), v["start"], v["frameLen"], v["ecn"], v["df"])
                hh = 18 if frame[12:14] == b"\x81\x00" else 14
                assert out and frame[hh:] == out[0], "reassembled datagram differs from the model's"
                ip = ipfrag.parse(out[0])
                assert v["csum"] == ipfrag.ones_sum16(out[0][ip.ihl:]), "payload sum"
                self.delivered += 1
                self.to_repost.append(v["bufId"])

    async def send(self, frames: list[bytes], **kw) -> None:
        self.pending.extend(frames)
        await self.run(frames, **kw)
        if self.to_repost:
            ids, self.to_repost = self.to_repost, []
            await self.post(ids)

    def hw_counters(self) -> dict[str, int]:
        return {name: int(getattr(self.dut, f"counters_{i}").value) for i, name in enumerate(STATS)}

    def check_counters(self) -> None:
        got = self.hw_counters()
        want = {name: self.model.counters[name] for name in STATS}
        assert got == want, "counters differ: " + ", ".join(
            f"{k} hw {got[k]} model {want[k]}" for k in STATS if got[k] != want[k])
        assert int(self.dut.status_open.value) == self.model.pending
        assert int(self.dut.status_bytes.value) == self.model.bytes_held


# ---------------------------------------------------------------------------- tests
async def make(dut, contexts: int) -> ReasmTB:
    return ReasmTB(dut, cocotb.RANDOM_SEED, contexts)


@cocotb.test(timeout_time=400, timeout_unit="ms")
async def reassembler(dut):
    tb = await make(dut, CONTEXTS)
    rng = random.Random(cocotb.RANDOM_SEED ^ 0x7E57)

    # Linux's rules, hostile sequences, then random traffic with gaps and stalls.
    await tb.reset(stall=0.2)
    await tb.send(hostile(rng), gap=20)
    await tb.send(random_traffic(rng, 6), gap=40)
    await tb.send(random_traffic(rng, 30), gap=10)
    await tb.send([eth(f) for f in ipfrag.fragment(datagram(rng, 65507), 9000)][::-1])
    tb.check_counters()
    assert tb.delivered > 10

    # Caps: fragment count, then bytes held with oldest-first eviction.
    await tb.reset(max_frags=4, stall=0.1)
    await tb.send(random_traffic(rng, 12, 8000), gap=10)
    tb.check_counters()
    await tb.reset(max_bytes=5_000, stall=0.1)
    await tb.send(random_traffic(rng, 12, 8000), gap=10)
    tb.check_counters()
    assert tb.model.counters[ipfrag.EVICTED] > 0

    # Contexts full (16): many datagrams at once bypass, and their fragments follow.
    await tb.reset(stall=0.1)
    await tb.send(random_traffic(rng, 60, 6000, dups=0), gap=5)
    tb.check_counters()
    assert tb.model.counters[ipfrag.BYPASSED] > 0

    # The pool empty: 2 buffers, no reposts until the end.
    await tb.reset(buffers=2, stall=0.1)
    streams = [[eth(f) for f in ipfrag.fragment(datagram(rng, 3000), 1500)] for _ in range(4)]
    await tb.send(interleave(rng, streams))
    tb.check_counters()
    assert tb.model.counters[ipfrag.BYPASSED] > 0

    # Timeout: 1 tick = 1 cycle, contexts live 400 ticks.
    await tb.reset(tick=1, timeout_us=400, stall=0.0)
    d1, d2 = datagram(rng, 3000), datagram(rng, 3000)
    f1, f2 = ipfrag.fragment(d1, 1500), ipfrag.fragment(d2, 1500)
    tb.model_now = 0
    await tb.send([eth(f1[0]), eth(f2[0])])
    await ClockCycles(dut.clock, 1000)
    tb.model_now = 10_000
    await tb.send([eth(f1[1]), eth(f1[2])])  # a new context, incomplete
    await ClockCycles(dut.clock, 1000)
    tb.model_now = 20_000
    tb.model.expire(20_000)
    tb.check_counters()
    assert tb.model.counters[ipfrag.TIMEOUT] == 3


def test_reassembler():
    run_cocotb(Design.of("offload.Reassembler", contexts=CONTEXTS, buffers=BUFFERS, buckets=BUCKETS), __name__)
