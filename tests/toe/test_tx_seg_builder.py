"""The TCP engine's transmit side (hw/src/offnic/toe/TxSegBuilder.scala): segment requests
in, whole Ethernet frames out, payloads read over AXI4 from send rings in memory.

Memory is cocotbext-axi's AXI RAM (read half) filled with random bytes, given a pipelined
read latency (every burst answered 100..200 cycles after its address, in order, as one ID
asks), read errors on chosen words (SLVERR with zero data, as the RAM model answers a failed
read) and random back-pressure on AR and R. Requests are random: ACKs (no payload), data
segments of 1..9,216 bytes, payloads wrapping across the ring's end, sequence numbers near
2^32, rings of 2^6..2^31 bytes at random 40-bit addresses, timestamps on/off, 0..4 SACK
blocks (and too many, which are trimmed), bad requests (payload over 9,216 bytes or over
the ring's size: dropped and counted), with random gaps on the input and back-pressure on
the frames. Every frame must be exactly `tcppeer.build_packet`'s (ident 0, TTL 64, DF) behind
the connection's Ethernet header, with the payload as memory holds it; a frame that met a
read error carries the bytes the memory returned and a TCP checksum made wrong by exactly
one (the block's rule). Then the rates: back-to-back MSS segments (1,514-byte frames) and
pure ACKs with no back-pressure and 150-cycle memory, in cycles per frame against 25G line
rate. Seeds are printed by the harness (OFFNIC_SEED replays).
"""
from __future__ import annotations

import collections
import logging
import random
import struct

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Event, FallingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiBus
from cocotbext.axi.axi_ram import AxiRamRead
from cocotbext.axi.constants import AxiResp

from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.net.tcppeer import build_packet, parse_segment
from offnic_sim.toe.toe_hw import ADDR_FIELDS, field_port, sack_port

MAX_PAYLOAD = 9216
BUF_WORDS = 1024  # the block's buffer (buf_words)
MEM_BYTES = 1 << 21  # the model memory; 40-bit addresses are taken modulo its size
PERIOD_NS = 4  # 250 MHz
WIRE_OVERHEAD = 24  # preamble + SFD, FCS, minimum inter-frame gap
M32 = (1 << 32) - 1


def cycle() -> int:
    return int(get_sim_time("ns")) // PERIOD_NS


def pauses(rng: random.Random, busy: float):
    """Pause pattern (for set_pause_generator): paused about `busy` of the time, in runs."""
    while True:
        paused = rng.random() < busy
        for _ in range(rng.randint(1, 12)):
            yield int(paused)


class LatencyRamRead(AxiRamRead):
    """cocotbext-axi's AXI RAM read side, answering every burst `latency` cycles after its
    address (pipelined: any number of bursts in flight, answered in order), and with SLVERR
    and zero data for the words in `poison`. Checks every burst the block issues."""

    def __init__(self, bus, clock, reset, size: int, rng: random.Random):
        super().__init__(bus, clock, reset, size=size)
        self.rng = rng
        self.latency = (150, 150)
        self.poison: set[int] = set()  # word numbers (address mod size // 32)
        self.generation = 0  # _process_read instances started
        self.live = 0  # AR collectors running (must be at most one)
        self.errors: list[str] = []
        self.bursts = 0
        self.beats = 0
        self.outstanding = 0
        self.max_outstanding = 0
        self.log.setLevel(logging.WARNING)

    async def _process_read(self):
        # The base class restarts this on every reset edge (it is started once before the
        # test's reset and killed by it). A collector of a killed instance could outlive it
        # and take every other AR into a queue nobody answers (OFFNIC_SEED=147473186: the
        # block then waited on R for ever), so each collector only takes ARs while its
        # instance is the current one, and `live` counts them for check().
        self.generation += 1
        gen = self.generation
        pending: collections.deque = collections.deque()
        arrived = Event()

        async def collect():
            self.live += 1
            try:
                while True:
                    await self.ar_channel.wait()
                    if gen != self.generation:
                        return
                    if self.ar_channel.empty():
                        continue
                    ar = self.ar_channel.recv_nowait()
                    take(ar)
            finally:
                self.live -= 1

        def take(ar) -> None:
            addr, length = int(ar.araddr), int(ar.arlen) + 1
            if addr % 32 or int(ar.arsize) != 5 or int(ar.arburst) != 1 or int(ar.arid) != 0:
                self.errors.append(f"burst addr {addr:#x} size {int(ar.arsize)} burst {int(ar.arburst)}")
            if length > 16 or (addr & 0xFFF) + 32 * length > 0x1000:
                self.errors.append(f"burst at {addr:#x} of {length} beats: over 16 or across 4 KiB")
            self.bursts += 1
            self.outstanding += 1
            self.max_outstanding = max(self.max_outstanding, self.outstanding)
            pending.append((cycle() + self.rng.randint(*self.latency), addr, length))
            arrived.set()

        collector = cocotb.start_soon(collect())
        try:
            ready_at = 0
            while True:
                while not pending:
                    arrived.clear()
                    await arrived.wait()
                due, addr, length = pending.popleft()
                ready_at = max(ready_at, due)  # in order
                if cycle() < ready_at:
                    await ClockCycles(self.clock, ready_at - cycle())
                for n in range(length):
                    a = (addr + 32 * n) % self.size
                    r = self.r_channel._transaction_obj()
                    r.rid = 0
                    r.rlast = n == length - 1
                    if a // 32 in self.poison:
                        r.rresp = AxiResp.SLVERR
                        r.rdata = 0
                    else:
                        r.rresp = AxiResp.OKAY
                        r.rdata = int.from_bytes(self.read(a, 32), "little")
                    await self.r_channel.send(r)
                    self.beats += 1
                self.outstanding -= 1
        finally:
            collector.kill()


def opts_of(r: dict) -> bytes:
    n = min(r["sackN"], 3 if r["tsPresent"] else 4)
    o = b""
    if r["tsPresent"]:
        o += b"\x01\x01\x08\x0a" + struct.pack("!II", r["tsVal"], r["tsEcr"])
    if n:
        o += b"\x01\x01\x05" + bytes([2 + 8 * n]) + b"".join(struct.pack("!II", *r["sack"][k]) for k in range(n))
    return o


def pieces(r: dict) -> list[tuple[int, int]]:
    """(address, bytes) of the payload's one or two pieces in the ring."""
    size = 1 << r["sndLog2"]
    off = r["seq"] % size
    n1 = min(r["payloadLen"], size - off)
    out = [(r["sndBase"] + off, n1)]
    if r["payloadLen"] > n1:
        out.append((r["sndBase"], r["payloadLen"] - n1))
    return out


def is_bad(r: dict) -> bool:
    return r["payloadLen"] > MAX_PAYLOAD or r["payloadLen"] > (1 << r["sndLog2"])


class TB:
    def __init__(self, dut, rng: random.Random):
        self.d = dut
        self.rng = rng
        Clock(dut.clock, PERIOD_NS, unit="ns").start()
        self.mem = LatencyRamRead(AxiBus.from_prefix(dut, "m_axi").read, dut.clock, dut.reset, MEM_BYTES, rng)
        self.mem.write(0, rng.randbytes(MEM_BYTES))
        self.todo: collections.deque = collections.deque()
        self.accepted: list[tuple[dict, int]] = []  # (request, cycle taken)
        self.frames: list[tuple[bytes, int, int]] = []  # (bytes, first beat's cycle, last beat's)
        self.gap = 0.0
        self.stall = 0.0
        self.stat_drop = 0
        self.stat_read_error = 0
        self.room_waits = 0  # cycles a data segment waited for buffer room
        self.max_used = 0  # buffer words allocated at most
        self.error: BaseException | None = None

    async def start(self) -> None:
        d = self.d
        d.reset.value = 1
        d.s_req_valid.value = 0
        d.m_axis_tready.value = 0
        await ClockCycles(d.clock, 4)
        await FallingEdge(d.clock)
        d.reset.value = 0
        self.tasks = [cocotb.start_soon(self._guard(self._drive())), cocotb.start_soon(self._guard(self._watch()))]

    async def _guard(self, coro) -> None:
        try:
            await coro
        except BaseException as e:  # a start_soon task's failure does not fail the test
            self.error = e
            raise

    def check(self) -> None:
        if self.error is not None:
            raise self.error
        assert not self.mem.errors, self.mem.errors[:5]
        assert self.mem.live <= 1, f"{self.mem.live} AR collectors in the memory model"


    def _set(self, r: dict) -> None:
        d = self.d
        for k in ("seq", "ack", "flags", "window", "tsPresent", "tsVal", "tsEcr", "sackN", "payloadLen",
                  "sndBase", "sndLog2", "id"):
            getattr(d, field_port("s_req_bits_seg", k)).value = r[k]
        for i, (a, b) in enumerate(r["sack"]):
            getattr(d, sack_port("s_req_bits_seg", i, "start")).value = a
            getattr(d, sack_port("s_req_bits_seg", i, "end")).value = b
        for k in ADDR_FIELDS:
            getattr(d, field_port("s_req_bits", k)).value = r[k]

    async def _drive(self) -> None:
        """One request per clock at most; inputs change at falling edges, `ready` is sampled
        once per clock, 1 ns after it."""
        d = self.d
        cur = None
        while True:
            await FallingEdge(d.clock)
            if cur is None and self.todo and not (self.gap and self.rng.random() < self.gap):
                cur = self.todo.popleft()
                self._set(cur)
            d.s_req_valid.value = int(cur is not None)
            await Timer(1, "ns")
            if cur is not None and int(d.s_req_ready.value):
                self.accepted.append((cur, cycle() + 1))
                cur = None

    async def _watch(self) -> None:
        """Frames out: tready at falling edges, one sample per clock 1 ns after; tkeep must
        be whole on every beat but the last and contiguous from lane 0 on the last."""
        d = self.d
        stall = pauses(self.rng, 0.0)
        cur_stall = 0.0
        buf, first = b"", None
        while True:
            await FallingEdge(d.clock)
            if self.stall != cur_stall:
                cur_stall = self.stall
                stall = pauses(self.rng, cur_stall)
            ready = not next(stall)
            d.m_axis_tready.value = int(ready)
            await Timer(1, "ns")
            self.stat_drop += int(d.stat_drop.value)
            self.stat_read_error += int(d.stat_read_error.value)
            assert not int(d.m_axi_awvalid.value) and not int(d.m_axi_wvalid.value), "a write on m_axi"
            # (internal state, for coverage only: the dispatch waiting for buffer room)
            used = (int(d.allocW.value) - int(d.freedW.value)) % (1 << len(d.allocW))
            self.max_used = max(self.max_used, used)
            if (int(d.pv.value) and not int(d.second.value) and not int(d.p_bad.value) and int(d.p_hasPay.value)
                    and int(d.p_nWords.value) > BUF_WORDS - used):
                self.room_waits += 1
            if not (ready and int(d.m_axis_tvalid.value)):
                continue
            keep = int(d.m_axis_tkeep.value)
            last = int(d.m_axis_tlast.value)
            n = keep.bit_length()
            assert keep == (1 << n) - 1 and n >= 1, f"tkeep {keep:#010x} not contiguous from lane 0"
            assert last or n == 32, f"tkeep {keep:#010x} short on a beat that is not the last"
            data = int(d.m_axis_tdata.value).to_bytes(32, "little")
            if first is None:
                first = cycle()
            buf += data[:n]
            if last:
                self.frames.append((buf, first, cycle()))
                buf, first = b"", None

    # ------------------------------------------------------------------ the model
    def payload(self, r: dict) -> tuple[bytes, bool]:
        """The payload as the memory returns it, and whether any of its words failed."""
        out, err = bytearray(), False
        for a, n in pieces(r):
            for w in range(a // 32, (a + n - 1) // 32 + 1):
                if (32 * w % MEM_BYTES) // 32 in self.mem.poison:
                    err = True
            for i in range(n):
                m = (a + i) % MEM_BYTES
                out.append(0 if m // 32 in self.mem.poison else self.mem.mem[m])
        return bytes(out), err

    def expected(self, r: dict) -> tuple[bytes, bool]:
        payload, err = self.payload(r) if r["payloadLen"] else (b"", False)
        p = build_packet(r["srcIp"].to_bytes(4, "big"), r["dstIp"].to_bytes(4, "big"), r["sport"], r["dport"],
                         r["seq"], r["ack"], r["flags"], r["window"], payload, options=opts_of(r), ident=0)
        parse_segment(p)  # (its checksums verify)
        f = bytearray(r["dstMac"].to_bytes(6, "big") + r["srcMac"].to_bytes(6, "big") + b"\x08\x00" + p)
        if err:  # the block's rule: the payload sum one more (one's complement), so the checksum is wrong
            good = (~((f[50] << 8) | f[51])) & 0xFFFF
            bad = (good % 0xFFFF) + 1
            f[50:52] = ((~bad) & 0xFFFF).to_bytes(2, "big")
        return bytes(f), err

    async def run(self, reqs: list[dict], limit: int = 400_000) -> list[tuple[dict, bytes, int, int, int]]:
        """Send `reqs`, wait for their frames, check every one; returns (request, frame,
        cycle taken, first beat's cycle, last beat's cycle) per frame."""
        n_acc, n_frames = len(self.accepted), len(self.frames)
        drops0, errs0 = int(self.d.status_drops.value), int(self.d.status_read_errors.value)
        want = [r for r in reqs if not is_bad(r)]
        self.todo.extend(reqs)
        t0 = cycle()
        while len(self.frames) - n_frames < len(want) or len(self.accepted) - n_acc < len(reqs):
            await ClockCycles(self.d.clock, 50)
            self.check()
            assert cycle() - t0 < limit, (f"{len(self.frames) - n_frames} of {len(want)} frames, "
                                          f"{len(self.accepted) - n_acc} of {len(reqs)} requests taken "
                                          f"after {limit} cycles")
        await ClockCycles(self.d.clock, 300)  # nothing more may come
        self.check()
        assert len(self.frames) - n_frames == len(want), "frames beyond the requests"
        taken = [t for r, t in self.accepted[n_acc:] if not is_bad(r)]
        out, n_err = [], 0
        for i, (r, (got, f0, f1), t) in enumerate(zip(want, self.frames[n_frames:], taken)):
            exp, err = self.expected(r)
            n_err += err
            if got != exp:
                at = next((k for k in range(min(len(got), len(exp))) if got[k] != exp[k]), min(len(got), len(exp)))
                raise AssertionError(f"frame {i}: {len(got)} bytes, want {len(exp)}; first difference at byte {at}\n"
                                     f" got  {got[max(0, at - 8):at + 24].hex()}\n want {exp[max(0, at - 8):at + 24].hex()}\n"
                                     f" request { {k: v for k, v in r.items() if k != 'sack'} }")
            out.append((r, got, t, f0, f1))
        n_bad = len(reqs) - len(want)
        assert int(self.d.status_drops.value) - drops0 == n_bad, (int(self.d.status_drops.value) - drops0, n_bad)
        assert int(self.d.status_read_errors.value) - errs0 == n_err, (int(self.d.status_read_errors.value) - errs0, n_err)
        assert self.stat_drop == int(self.d.status_drops.value)
        assert self.stat_read_error == int(self.d.status_read_errors.value)
        return out


# ---------------------------------------------------------------------- requests

def base_req(rng: random.Random) -> dict:
    ts = rng.random() < 0.5
    n = rng.randrange(4 if ts else 5)
    if rng.random() < 0.05:
        n = rng.randrange((3 if ts else 4) + 1, 8)  # more than fit: trimmed
    return {"id": rng.randrange(4096), "seq": rng.getrandbits(32), "ack": rng.getrandbits(32),
            "flags": rng.choice([0x10, 0x18, 0x11, 0x19, 0x14, rng.randrange(256)]), "window": rng.randrange(65536),
            "tsPresent": int(ts), "tsVal": rng.getrandbits(32), "tsEcr": rng.getrandbits(32), "sackN": n,
            "sack": [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(4)], "payloadLen": 0,
            "sndBase": rng.getrandbits(40), "sndLog2": rng.randrange(32),
            "dstMac": rng.getrandbits(48), "srcMac": rng.getrandbits(48), "srcIp": rng.getrandbits(32),
            "dstIp": rng.getrandbits(32), "sport": rng.randrange(65536), "dport": rng.randrange(65536)}


def set_ring(rng: random.Random, r: dict, log2: int) -> None:
    r["sndLog2"] = log2
    r["sndBase"] = rng.getrandbits(40) & ~((1 << log2) - 1)


def data_req(rng: random.Random) -> dict:
    r = base_req(rng)
    n = rng.choice([rng.randrange(1, 33), rng.randrange(1, 1461), 1460, 1448, rng.randrange(1, MAX_PAYLOAD + 1),
                    rng.randrange(1, MAX_PAYLOAD + 1), MAX_PAYLOAD, 1])
    r["payloadLen"] = n
    lo = max(6, (n - 1).bit_length())
    set_ring(rng, r, rng.choice([lo, min(31, lo + 1), rng.randrange(lo, 21), rng.randrange(lo, 32), 31]))
    size = 1 << r["sndLog2"]
    u = rng.random()
    if u < 0.3 and n > 1:  # wrap across the ring's end
        r["seq"] = (rng.getrandbits(32) & ~(size - 1) & M32) | (size - rng.randrange(1, n))
    elif u < 0.45:  # sequence numbers across 2^32
        r["seq"] = (1 << 32) - rng.randrange(1, n + 64)
    return r


def bad_req(rng: random.Random) -> dict:
    r = base_req(rng)
    if rng.random() < 0.5:
        r["payloadLen"] = rng.randrange(MAX_PAYLOAD + 1, 65536)
        set_ring(rng, r, rng.randrange(16, 32))
    else:
        log2 = rng.randrange(6, 13)
        set_ring(rng, r, log2)
        r["payloadLen"] = rng.randrange((1 << log2) + 1, min(MAX_PAYLOAD, 1 << (log2 + 1)) + 1)
    return r


def random_reqs(rng: random.Random, n: int) -> list[dict]:
    out = []
    for _ in range(n):
        u = rng.random()
        out.append(base_req(rng) if u < 0.35 else bad_req(rng) if u < 0.4 else data_req(rng))
    return out


def cover(cov: collections.Counter, r: dict, err: bool) -> None:
    n = r["payloadLen"]
    ts = r["tsPresent"]
    cov[f"hdr ts={ts} sack={min(r['sackN'], 3 if ts else 4)}"] += 1
    if r["sackN"] > (3 if ts else 4):
        cov["sack trimmed"] += 1
    if is_bad(r):
        cov["drop: over max" if n > MAX_PAYLOAD else "drop: over ring"] += 1
        return
    if n == 0:
        cov["ack"] += 1
        return
    cov["data"] += 1
    ps = pieces(r)
    cov["wraps ring end" if len(ps) == 2 else "one piece"] += 1
    if r["seq"] + n > (1 << 32):
        cov["seq across 2^32"] += 1
    if n == MAX_PAYLOAD:
        cov["max payload"] += 1
    if n == 1:
        cov["one byte"] += 1
    lane = (54 + len(opts_of(r))) % 32  # the payload's first lane in the frame
    if lane + n <= 32:
        cov["payload in header's last beat"] += 1
    if r["sndLog2"] == 6:
        cov["ring 64 B"] += 1
    if r["sndLog2"] == 31:
        cov["ring 2 GiB"] += 1
    cov["memory lane < frame lane" if ps[0][0] % 32 < lane else "memory lane >= frame lane"] += 1
    if err:
        cov["read error"] += 1


GOALS = ["ack", "data", "wraps ring end", "one piece", "seq across 2^32", "max payload", "one byte",
         "payload in header's last beat", "ring 64 B", "ring 2 GiB", "memory lane < frame lane",
         "memory lane >= frame lane", "read error", "waits for buffer room", "drop: over max", "drop: over ring", "sack trimmed"] + \
        [f"hdr ts=1 sack={k}" for k in range(4)] + [f"hdr ts=0 sack={k}" for k in range(5)]


@cocotb.test(timeout_time=400, timeout_unit="ms")
async def tx_seg_builder(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = TB(dut, rng)
    log = dut._log
    await tb.start()

    # ---- rates: back-to-back MSS segments and pure ACKs, 150-cycle memory, no back-pressure
    def mss(ts: bool) -> dict:
        r = base_req(rng)
        r.update(tsPresent=int(ts), sackN=0, payloadLen=1448 if ts else 1460)
        set_ring(rng, r, 20)
        return r

    rates = {}
    for name, make, count in (("MSS 1460", lambda: mss(False), 200), ("MSS 1448 + TS", lambda: mss(True), 100),
                              ("9000-byte payload", lambda: dict(mss(False), payloadLen=9000), 40),
                              ("ACK", lambda: dict(base_req(rng), sackN=0, tsPresent=0), 400),
                              ("ACK + TS", lambda: dict(base_req(rng), sackN=0, tsPresent=1), 400),
                              ("ACK + 3 SACK", lambda: dict(base_req(rng), sackN=3, tsPresent=1), 200)):
        res = await tb.run([make() for _ in range(count)])
        k0 = count // 4  # steady state: after the pipeline has filled
        span = res[-1][4] - res[k0][4]
        cpf = span / (count - 1 - k0)
        size = len(res[0][1])
        gbps = size * 8 / (cpf * PERIOD_NS)
        line = (size + WIRE_OVERHEAD) * 8 / 25e9 / (PERIOD_NS * 1e-9)  # cycles per frame at 25G
        lat = res[0][3] - res[0][2]
        rates[name] = cpf
        log.info(f"{name}: {size}-byte frames, {cpf:.2f} cycles/frame in steady state "
                 f"({(size + 31) // 32} beats: {(size + 31) // 32 / cpf:.3f} beats/cycle), {gbps:.1f} Gb/s at 250 MHz "
                 f"= {line / cpf:.2f}x 25G line rate ({line:.1f} cycles/frame at 25G); "
                 f"first frame {lat} cycles from its request; {tb.mem.max_outstanding} bursts in flight at most")
    # Lone segments: the latency with nothing ahead.
    for name, make in (("lone ACK", lambda: base_req(rng)), ("lone MSS", lambda: mss(False))):
        res = await tb.run([make()])
        log.info(f"{name}: first beat {res[0][3] - res[0][2]} cycles after the request was taken, "
                 f"last {res[0][4] - res[0][2]}")
    assert rates["MSS 1460"] < 52, f"MSS segments at {rates['MSS 1460']:.1f} cycles/frame, want about 48"
    assert rates["ACK"] <= 2.2 and rates["ACK + TS"] <= 3.2, f"ACKs at {rates['ACK']:.1f} cycles/frame"

    # ---- random traffic, back-pressure everywhere, until every coverage goal is met
    cov: collections.Counter = collections.Counter()
    checked = 0
    configs = [(0.0, 0.0, 0.0, 0.0, False), (0.3, 0.3, 0.2, 0.3, False), (0.0, 0.6, 0.5, 0.1, True),
               (0.5, 0.1, 0.0, 0.6, True), (0.1, 0.2, 0.3, 0.3, False)]
    for batch in range(40):
        gap, stall, ar_busy, r_busy, poison = configs[batch % len(configs)]
        tb.gap, tb.stall = gap, stall
        for ch, busy in ((tb.mem.ar_channel, ar_busy), (tb.mem.r_channel, r_busy)):
            ch.set_pause_generator(pauses(rng, busy) if busy else None)
            if not busy:
                ch.pause = False  # (clearing the generator leaves the last pause standing)
        tb.mem.latency = (100, 200)
        tb.mem.poison = {rng.randrange(MEM_BYTES // 32) for _ in range(600)} if poison else set()
        reqs = random_reqs(rng, 120)
        res = await tb.run(reqs)
        for r in reqs:
            cover(cov, r, bool(r["payloadLen"]) and not is_bad(r) and tb.payload(r)[1])
        checked += len(res)
        cov["waits for buffer room"] = tb.room_waits
        missing = [g for g in GOALS if not cov[g]]
        log.info(f"batch {batch}: gap {gap} stall {stall} AR {ar_busy} R {r_busy} poison {poison}: "
                 f"{len(res)} frames checked ({checked} in all); missing {missing}")
        if not missing and batch >= 2 * len(configs) - 1:
            break
    cov["waits for buffer room"] = tb.room_waits
    missing = [g for g in GOALS if not cov[g]]
    assert not missing, f"coverage not reached: {missing}"
    log.info(f"coverage: {dict(sorted(cov.items()))}")
    log.info(f"{checked} random frames checked byte for byte, {int(dut.status_drops.value)} requests dropped, "
             f"{int(dut.status_read_errors.value)} frames with a read error; "
             f"{tb.mem.bursts} bursts, {tb.mem.beats} beats read, {tb.mem.max_outstanding} bursts in flight at most, "
             f"buffer {tb.max_used} of {BUF_WORDS} words at most, {tb.room_waits} cycles waiting for room")


def test_tx_seg_builder():
    run_cocotb(Design.of("toe.TxSegBuilder", connections=4096), __name__)
