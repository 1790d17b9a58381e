"""Bench: CplWriter (nic.CplWriter, the queue manager's completion half): 8 TX + 8 RX
completion queues, 4 event queues / MSI-X vectors, 64 record slots, a 25-cycle
"microsecond", against an independent Python model of docs/queues.md ("Completion",
"Event", "Doorbells and interrupts") and the block's contract (CplWriter.scala header).

The bench plays every neighbour:
- the TX and RX engines: reserve completions (`reserve` port 0 for TX queues, port 1 for
  RX, as Nic.scala wires them) while `room` says so, and later send the completions on
  s_req, valid asserted at random and held until taken, with random field values;
- the DMA write engine: takes m_wr_desc with random stalls (now and then long ones),
  reports each write done (`wr_done`) in order after a random delay, sometimes holding
  them back until every slot is taken; when a write is done it reads the bytes from a
  model of the completion RAM built from ram_wr (byte strobes applied) and "lands"
  them in a host memory model;
- the host: completion rings, event rings and MSI-X table (random bases, small rings so
  that they wrap and fill, one CQ reporting to a non-existent EQ); an interrupt-driven
  driver (on an MSI-X write it reads its event queue, services the completion queues
  named there, writes cons, re-arms), some CQs only polled, a watchdog that polls
  everything, random arms, vector masks, EQ and CQ disables, and moderation settings
  (count 0..8, time 0..12 us) changed on the fly.

Checked every cycle against the model (which knows no RTL internals: per CQ the
producer index, reservations, arm flag, completions since the last event and the
moderation timer; per EQ producer index, arm flag and interrupt request; the slots in
use): `room` = enable && (prod - cons) + reserved < size; s_req.ready; whether a record
is written this cycle and which (interrupt before event before completion; lowest index
first among equals, the RTL's choice where the docs leave it open); events exactly when
mod_count completions came since the last event or the queue has been armed and pending
for mod_time_us microseconds, then disarmed; events to a full, disabled or non-existent
EQ dropped and counted in eq_overflows; an armed EQ holding events raising its vector,
a masked vector showing in msix_pending until unmasked; cq_prod, eq_prod, the stat_*
pulses; never more than 64 records in flight. Each DMA write descriptor is checked
(host address, length, RAM slot, tag) and the bytes the DMA engine reads back for it
must be exactly the record the docs define (completion fields and phase, event source,
type and phase, MSI-X data); as they land, the host checks per-queue order against what
the engines sent, that an event lands after the completions it reports and an interrupt
after the event it announces. Coverage counters must all be hit.
"""
from __future__ import annotations

import heapq
import struct

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from offnic_sim.harness.runner import bench_config, run_cocotb
from offnic_sim.harness.hw import Design
from qm_tb import Pins, bench_rng, stall_pattern, start_clock_and_reset, u16

TXQ, RXQ, NE, SLOTS, US = 8, 8, 4, 64, 25
NC = TXQ + RXQ
CPL_RAM_BASE, WR_TAG = 0x20000, 0x80
DESIGN = Design.of("nic.CplWriter", label="cpl_writer", tx_queues=TXQ, rx_queues=RXQ, eqs=NE, cpl_slots=SLOTS,
                   us_cycles=US)
RAM_BYTES = SLOTS * 16


# ---- records as docs/queues.md defines them (little endian)
def cpl_record(req: dict, phase: int) -> bytes:
    return struct.pack("<HHHBBIHBB", req["queue"], req["index"], req["len"], req["status"],
                       req["flags"] | (phase << 7), req["hash"], req["csum"], req["rssType"], 0)


def event_record(cq: int, phase: int) -> bytes:
    source, typ = (cq, 0) if cq < TXQ else (cq - TXQ, 1)
    return struct.pack("<HB4xB8x", source, typ, phase << 7)


def phase_of(idx: int, log: int) -> int:
    return 0 if (idx >> log) & 1 else 1


class CqCfg:
    __slots__ = ("base", "log", "enable", "eq", "cons", "mod_count", "mod_time", "arm")

    def __init__(self, base, log, eq):
        self.base, self.log, self.enable, self.eq = base, log, True, eq
        self.cons, self.mod_count, self.mod_time, self.arm = 0, 1, 0, False


class EqCfg:
    __slots__ = ("base", "log", "enable", "cons", "arm")

    def __init__(self, base, log):
        self.base, self.log, self.enable, self.cons, self.arm = base, log, True, 0, False


class Msix:
    __slots__ = ("addr", "data", "mask")

    def __init__(self, addr, data):
        self.addr, self.data, self.mask = addr, data, False


class CqState:
    """Model of one completion queue (docs/queues.md, "Doorbells and interrupts")."""
    __slots__ = ("prod", "reserved", "armed", "since", "timer", "sub")

    def __init__(self):
        self.prod = self.reserved = self.since = self.timer = self.sub = 0
        self.armed = False


class EqState:
    __slots__ = ("prod", "armed", "irq")

    def __init__(self):
        self.prod = 0
        self.armed = self.irq = False


class Write:
    """A record write the model expects: its DMA descriptor and the bytes it carries."""
    __slots__ = ("kind", "who", "host", "ram", "data", "cycle", "snap", "idx")

    def __init__(self, kind, who, host, ram, data, cycle, snap=0, idx=0):
        self.kind, self.who, self.host, self.ram, self.data = kind, who, host, ram, data
        self.cycle, self.snap, self.idx = cycle, snap, idx

    def __repr__(self):
        return (f"{self.kind}({self.who}) host={self.host:#x} ram={self.ram:#x} len={len(self.data)} "
                f"decided in cycle {self.cycle}")


PHASES = {
    # wr_stall: m_wr_desc stalls; done: wr_done delay range; hold: chance per cycle of holding
    # every wr_done back for a while (slots fill up); res/req: engine rates; svc: host
    # service delay range; mask/eqoff/cqoff/mod: chance per cycle of a mask, EQ disable,
    # CQ disable, moderation change; spur: chance per cycle of a spurious arm.
    "steady": dict(wr_stall=0.1, done=(1, 20), hold=0.0, res=0.5, req=0.6, svc=(1, 40), mask=0.002, eqoff=0.0005,
                   cqoff=0.0005, mod=0.003, spur=0.005),
    "slots":  dict(wr_stall=0.05, done=(1, 10), hold=0.01, res=0.9, req=0.9, svc=(1, 20), mask=0.001, eqoff=0.0,
                   cqoff=0.0, mod=0.002, spur=0.003),
    "irqs":   dict(wr_stall=0.3, done=(1, 30), hold=0.0, res=0.2, req=0.3, svc=(5, 80), mask=0.01, eqoff=0.002,
                   cqoff=0.001, mod=0.01, spur=0.02),
    "burst":  dict(wr_stall=0.5, done=(5, 60), hold=0.003, res=0.9, req=0.9, svc=(1, 200), mask=0.003, eqoff=0.001,
                   cqoff=0.001, mod=0.005, spur=0.01),
    "lazy":   dict(wr_stall=0.2, done=(1, 20), hold=0.0, res=0.3, req=0.4, svc=(100, 600), mask=0.002, eqoff=0.001,
                   cqoff=0.0005, mod=0.005, spur=0.01),
}


class CplWriterTB:
    def __init__(self, dut, conf: dict):
        self.dut, self.pins, self.rng = dut, Pins(dut), bench_rng()
        rng = self.rng
        self.c = 0
        logs = conf["cq_logs"]
        # CQ NC-1 reports to an event queue that does not exist: its events are all dropped
        self.cq = [CqCfg(self.page(), rng.choice(logs), c % NE if c != NC - 1 else 7) for c in range(NC)]
        # EQ 0 has room for 2 events and 4 CQs report to it: it overflows now and then
        self.eq = [EqCfg(self.page(), 1 if e == 0 else rng.choice(conf["eq_logs"])) for e in range(NE)]
        self.msix = [Msix(0xFEE0_0000 + 0x100 * e + (rng.getrandbits(44) << 20), rng.getrandbits(32))
                     for e in range(NE)]
        for cfg in self.cq:
            cfg.mod_count, cfg.mod_time = rng.randint(0, 8), rng.choice([0, 0, 1, 2, 5, 12])
        self.mode = ["poll" if rng.random() < 0.2 or c == NC - 1 else "irq" for c in range(NC)]
        # model state
        self.m = [CqState() for _ in range(NC)]
        self.e = [EqState() for _ in range(NE)]
        self.overflows = 0
        self.head = self.tail = 0
        self.out: Write | None = None
        self.ram = bytearray(RAM_BYTES)
        # neighbours
        self.ph = PHASES["steady"]
        self.ready_gen = stall_pattern(rng, 0.0)
        self.ready = 0
        self.dma: list[list] = []  # accepted writes in order: [Write, done cycle]
        self.hold_until = 0
        self.res_open = [[] for _ in range(NC)]  # per CQ: reserved, not yet sent
        self.sent = [[] for _ in range(NC)]  # per CQ: requests taken, not yet landed
        self.req: dict | None = None  # the request on s_req
        self.req_cq = 0
        self.serial = 0
        # host
        self.mem: dict[int, bytes] = {}
        self.hcons = [0] * NC
        self.heq_cons = [0] * NE
        self.landed_cpl = [0] * NC
        self.landed_evt = [0] * NE
        self.sched: list = []
        self.seq = 0
        self.pulses: list[str] = []
        self.was_masked = [False] * NE  # the vector's interrupt waited behind its mask
        self.armed_pending = [False] * NE  # armed by the host while holding events
        self.check_out_next = False
        self.enable_at: dict = {}
        self.cov = {k: 0 for k in (
            "cpl", "ev_count", "ev_time", "ev_time0", "ev_dropped_full", "ev_dropped_disabled", "ev_dropped_bad_eq",
            "irq", "irq_after_unmask", "irq_on_arm", "slots_full", "prio_irq_over_event", "prio_event_over_cpl",
            "cq_wraps", "eq_wraps", "room_full", "cpl_disabled_cq", "stall_cycles")}

    def page(self) -> int:
        return (self.rng.getrandbits(50) << 12) & ((1 << 64) - (1 << 16))

    # ---------------------------------------------------------------- pins
    def drive_all(self) -> None:
        p = self.pins
        for c, cfg in enumerate(self.cq):
            for f in ("base", "enable", "eq", "cons"):
                p.set(f"cq_{c}_{f}", int(getattr(cfg, f)))
            p.set(f"cq_{c}_logSize", cfg.log)
            p.set(f"cq_{c}_modCount", cfg.mod_count)
            p.set(f"cq_{c}_modTimeUs", cfg.mod_time)
            p.set(f"cq_{c}_arm", 0)
        for e, cfg in enumerate(self.eq):
            p.set(f"eq_{e}_base", cfg.base)
            p.set(f"eq_{e}_logSize", cfg.log)
            p.set(f"eq_{e}_enable", int(cfg.enable))
            p.set(f"eq_{e}_cons", cfg.cons)
            p.set(f"eq_{e}_arm", 0)
            p.set(f"msix_{e}_addr", self.msix[e].addr)
            p.set(f"msix_{e}_data", self.msix[e].data)
            p.set(f"msix_{e}_mask", int(self.msix[e].mask))
        for n in ("reserve_0_valid", "reserve_0_bits", "reserve_1_valid", "reserve_1_bits", "s_req_valid",
                  "m_wr_desc_ready", "wr_done"):
            p.set(n, 0)

    def set_cq(self, c: int, field: str, value) -> None:
        setattr(self.cq[c], field, value)
        pin = {"log": "logSize", "mod_count": "modCount", "mod_time": "modTimeUs"}.get(field, field)
        self.pins.set(f"cq_{c}_{pin}", int(value))

    def set_eq(self, e: int, field: str, value) -> None:
        setattr(self.eq[e], field, value)
        self.pins.set(f"eq_{e}_{field}", int(value))

    def arm_cq(self, c: int) -> None:
        self.cq[c].arm = True
        self.pins.set(f"cq_{c}_arm", 1)
        self.pulses.append(("cq", c))

    def arm_eq(self, e: int) -> None:
        self.eq[e].arm = True
        self.pins.set(f"eq_{e}_arm", 1)
        self.pulses.append(("eq", e))

    def set_mask(self, e: int, mask: bool) -> None:
        self.msix[e].mask = mask
        self.pins.set(f"msix_{e}_mask", int(mask))

    async def reset(self) -> None:
        self.drive_all()
        await start_clock_and_reset(self.dut, self.pins)

    def set_phase(self, name: str) -> None:
        self.ph = PHASES[name]
        self.ready_gen = stall_pattern(self.rng, self.ph["wr_stall"])

    def at(self, delay: int, fn, *args) -> None:
        self.seq += 1
        heapq.heappush(self.sched, (self.c + max(1, delay), self.seq, fn, args))

    # ---------------------------------------------------------------- one cycle
    async def step(self) -> None:
        await FallingEdge(self.dut.clock)
        self.c += 1
        for kind, k in self.pulses:
            if kind == "cq":
                self.cq[k].arm = False
                self.pins.set(f"cq_{k}_arm", 0)
            else:
                self.eq[k].arm = False
                self.pins.set(f"eq_{k}_arm", 0)
        self.pulses = []
        wr_done = self.dma_step()
        self.host_step()
        res = self.engine_step()
        await ReadOnly()
        self.check_and_advance(wr_done, res)

    # ---------------------------------------------------------------- the model
    def room(self, c: int) -> bool:
        cfg, s = self.cq[c], self.m[c]
        return cfg.enable and u16(s.prod - cfg.cons) + s.reserved < (1 << cfg.log)

    def fires(self, c: int) -> bool:
        cfg, s = self.cq[c], self.m[c]
        return (cfg.enable and s.armed and s.prod != cfg.cons
                and (s.since >= max(1, cfg.mod_count) or s.timer >= cfg.mod_time))

    def eq_ok(self, e: int) -> bool:
        if e >= NE:
            return False
        cfg = self.eq[e]
        return cfg.enable and u16(self.e[e].prod - cfg.cons) < (1 << cfg.log)

    def check_and_advance(self, wr_done: int, res: list) -> None:
        p, c = self.pins, self.c
        # ---- registered outputs: state of this cycle
        for k in range(NC):
            got = p.get(f"cq_prod_{k}")
            assert got == self.m[k].prod, f"cycle {c}: cq_prod_{k} = {got:#x}, model {self.m[k].prod:#x}"
        for e in range(NE):
            got = p.get(f"eq_prod_{e}")
            assert got == self.e[e].prod, f"cycle {c}: eq_prod_{e} = {got:#x}, model {self.e[e].prod:#x}"
        got = p.get("eq_overflows")
        assert got == self.overflows, f"cycle {c}: eq_overflows = {got}, model {self.overflows}"
        pend = sum(1 << e for e in range(NE) if self.e[e].irq and self.msix[e].mask)
        got = p.get("msix_pending")
        assert got == pend, f"cycle {c}: msix_pending = {got:#x}, model {pend:#x}"
        valid = p.get("m_wr_desc_valid")
        assert valid == (self.out is not None), f"cycle {c}: m_wr_desc_valid = {valid}, model expects {self.out}"
        # ---- room, per CQ
        for k in range(NC):
            want = self.room(k)
            got = p.get(f"room_{k}")
            assert got == want, (f"cycle {c}: room_{k} = {got}, model {int(want)} (enable {self.cq[k].enable}, prod "
                                 f"{self.m[k].prod:#x}, cons {self.cq[k].cons:#x}, reserved {self.m[k].reserved}, "
                                 f"size {1 << self.cq[k].log})")
            if self.cq[k].enable and not want:
                self.cov["room_full"] += 1
        # ---- what the writer does in this cycle
        go = self.head - self.tail < SLOTS and (self.out is None or self.ready)
        irqs = [e for e in range(NE) if self.e[e].irq and not self.msix[e].mask]
        fires = [k for k in range(NC) if self.fires(k)]
        want_ready = go and not irqs and not fires
        got = p.get("s_req_ready")
        assert got == want_ready, (f"cycle {c}: s_req_ready = {got}, model {int(want_ready)} (slots in use "
                                   f"{self.head - self.tail}, out {self.out is not None}, ready {self.ready}, "
                                   f"interrupts due {irqs}, CQs firing {fires})")
        if self.head - self.tail == SLOTS and (irqs or fires or self.req):
            self.cov["slots_full"] += 1
        action, w = None, None
        if go and irqs:
            e = irqs[0]
            action = ("irq", e)
            w = Write("irq", e, self.msix[e].addr, 0, self.msix[e].data.to_bytes(4, "little"), c, snap=self.e[e].prod)
            if self.was_masked[e]:
                self.cov["irq_after_unmask"] += 1
                self.was_masked[e] = False
            if fires:
                self.cov["prio_irq_over_event"] += 1
        elif go and fires:
            k = fires[0]
            e = self.cq[k].eq
            ok = self.eq_ok(e)
            action = ("event", k, e, ok)
            if ok:
                cfg = self.eq[e]
                idx = self.e[e].prod
                w = Write("event", k, cfg.base + (idx % (1 << cfg.log)) * 16, 0,
                          event_record(k, phase_of(idx, cfg.log)), c, snap=self.m[k].prod, idx=idx)
            if self.req is not None:
                self.cov["prio_event_over_cpl"] += 1
        elif go and self.req is not None:
            k = self.req_cq
            cfg = self.cq[k]
            idx = self.m[k].prod
            action = ("cpl", k)
            w = Write("cpl", k, cfg.base + (idx % (1 << cfg.log)) * 16, 0,
                      cpl_record(self.req, phase_of(idx, cfg.log)), c, idx=idx)
        stats = (p.get("stat_completion"), p.get("stat_event"), p.get("stat_interrupt"))
        want_stats = (int(action is not None and action[0] == "cpl"),
                      int(action is not None and action[0] == "event" and action[3]),
                      int(action is not None and action[0] == "irq"))
        assert stats == want_stats, (f"cycle {c}: stat_completion/event/interrupt = {stats}, model {want_stats} "
                                     f"(model action {action}; interrupts due {irqs}, CQs firing {fires}, "
                                     f"request {'on' if self.req else 'off'}, slots {self.head - self.tail})")
        if w is not None:
            w.ram = CPL_RAM_BASE + (self.head % SLOTS) * 16  # slots are taken in order
        en = p.get("ram_wr_en")
        assert en == (w is not None), f"cycle {c}: ram_wr_en = {en}, model expects {w}"
        if en:
            addr, strb, data = p.get("ram_wr_addr"), p.get("ram_wr_strb"), p.get("ram_wr_data")
            word = data.to_bytes(32, "little")
            for b in range(32):
                if strb >> b & 1:
                    self.ram[addr * 32 + b] = word[b]
        for e in range(NE):
            if self.e[e].irq and self.msix[e].mask:
                self.was_masked[e] = True
        # ---- the s_req handshake
        if self.req is not None and want_ready:
            assert action is not None and action[0] == "cpl"
            self.sent[self.req_cq].append(self.req)
            self.req = None
        # ---- the rising edge: model state of the next cycle
        eq_pending = [self.e[e].prod != self.eq[e].cons for e in range(NE)]
        if self.out is not None and self.ready:
            self.dma.append([self.out, None])
            self.out = None
        if wr_done:
            self.tail += 1
        if w is not None:
            self.head += 1
            self.out = w
        if action is not None:
            if action[0] == "irq":
                self.e[action[1]].irq = False
                self.cov["irq"] += 1
            elif action[0] == "event":
                _, k, e, ok = action
                s, cfg = self.m[k], self.cq[k]
                if ok:
                    self.e[e].prod = u16(self.e[e].prod + 1)
                else:
                    self.overflows += 1
                    self.cov["ev_dropped_bad_eq" if e >= NE else
                             "ev_dropped_disabled" if not self.eq[e].enable else "ev_dropped_full"] += 1
                if s.since >= max(1, cfg.mod_count):
                    self.cov["ev_count"] += 1
                else:
                    self.cov["ev_time0" if cfg.mod_time == 0 else "ev_time"] += 1
            else:
                self.cov["cpl"] += 1
                if not self.cq[action[1]].enable:
                    self.cov["cpl_disabled_cq"] += 1
        for k in range(NC):
            s, cfg = self.m[k], self.cq[k]
            done = action is not None and action[0] == "cpl" and action[1] == k
            pending = s.prod != cfg.cons
            s.reserved += (k in res) - done
            assert s.reserved >= 0
            if done:
                s.prod = u16(s.prod + 1)
                s.since = min(s.since + 1, 0xFFFF)
            if s.armed and pending:
                s.sub += 1
                if s.sub == US:
                    s.sub = 0
                    s.timer = min(s.timer + 1, 0xFFFF)
            else:
                s.timer = s.sub = 0
            if cfg.arm:
                s.armed = True
            if action is not None and action[0] == "event" and action[1] == k:
                s.armed = False
                s.since = s.timer = s.sub = 0
        for e in range(NE):
            s, cfg = self.e[e], self.eq[e]
            pending, armed0 = eq_pending[e], s.armed
            if cfg.arm:
                s.armed = True
                if not armed0 and pending and cfg.enable:
                    self.armed_pending[e] = True
            if armed0 and pending and cfg.enable:
                if self.armed_pending[e]:
                    self.cov["irq_on_arm"] += 1
                    self.armed_pending[e] = False
                s.irq = True
                s.armed = cfg.arm
        # the new m_wr_desc (registered at this edge) is checked in the next cycle
        self.check_out_next = w is not None

    # ---------------------------------------------------------------- DMA write engine
    def dma_step(self) -> int:
        """m_wr_desc_ready for this cycle, the descriptor registered at the last edge
        checked, and wr_done for the oldest write whose time has come (its bytes land)."""
        p, rng = self.pins, self.rng
        if self.check_out_next or (self.out is not None and not self.ready):
            # a new descriptor, or one held through a stall: must be the model's
            w = self.out
            got = (p.get("m_wr_desc_bits_host_addr"), p.get("m_wr_desc_bits_ram_addr"), p.get("m_wr_desc_bits_len"),
                   p.get("m_wr_desc_bits_tag"))
            want = (w.host, w.ram, len(w.data), WR_TAG)
            assert got == want, f"cycle {self.c}: m_wr_desc (host, ram, len, tag) = {tuple(map(hex, got))}, model {w}"
            self.check_out_next = False
        for d in self.dma:
            if d[1] is None:
                lo, hi = self.ph["done"]
                d[1] = self.c + rng.randint(lo, hi)
        if self.ph["hold"] and rng.random() < self.ph["hold"]:
            self.hold_until = self.c + rng.randint(50, 300)
        done = 0
        if self.dma and self.dma[0][1] <= self.c and self.c >= self.hold_until:
            w = self.dma.pop(0)[0]
            self.land(w)
            done = 1
        p.set("wr_done", done)
        self.ready = 0 if next(self.ready_gen) else 1
        if self.out is not None and not self.ready:
            self.cov["stall_cycles"] += 1
        p.set("m_wr_desc_ready", self.ready)
        return done

    def land(self, w: Write) -> None:
        """The DMA engine has read the record from the RAM and written it to the host."""
        off = w.ram - CPL_RAM_BASE
        data = bytes(self.ram[off:off + len(w.data)])
        assert data == w.data, (f"cycle {self.c}: the completion RAM holds {data.hex()} for {w}, "
                                f"expected {w.data.hex()}")
        self.mem[w.host] = data
        if w.kind == "cpl":
            k = w.who
            req = self.sent[k][0] if self.sent[k] else None
            assert req is not None, f"{w}: a completion for CQ {k} that no engine sent"
            cfg = self.cq[k]
            want = cpl_record(req, phase_of(w.idx, cfg.log))
            assert data == want, f"{w}: landed {data.hex()}, the engine's next completion for CQ {k} is {want.hex()}"
            self.sent[k].pop(0)
            self.landed_cpl[k] = u16(self.landed_cpl[k] + 1)
            if phase_of(w.idx, cfg.log) == 0 and w.idx % (1 << cfg.log) == 0:
                self.cov["cq_wraps"] += 1
        elif w.kind == "event":
            k = w.who
            assert u16(self.landed_cpl[k] - w.snap) < 0x8000, \
                f"{w}: event for CQ {k} lands before the completions it reports ({self.landed_cpl[k]:#x} < {w.snap:#x})"
            e = self.cq[k].eq
            self.landed_evt[e] = u16(self.landed_evt[e] + 1)
            if phase_of(w.idx, self.eq[e].log) == 0 and w.idx % (1 << self.eq[e].log) == 0:
                self.cov["eq_wraps"] += 1
        else:
            e = w.who
            assert u16(self.landed_evt[e] - w.snap) < 0x8000, \
                f"{w}: MSI-X write for vector {e} lands before its events ({self.landed_evt[e]:#x} < {w.snap:#x})"
            self.at(self.rng.randint(*self.ph["svc"]), self.service_eq, e)

    # ---------------------------------------------------------------- engines
    def engine_step(self) -> list:
        """Reservations (port 0: TX CQs, port 1: RX CQs, while room says so) and the
        request on s_req (held until taken). The two ports never name the same CQ in one
        cycle, as in Nic.scala: the RTL would count that as one reservation."""
        p, rng, ph = self.pins, self.rng, self.ph
        res = []
        for port, lo in ((0, 0), (1, TXQ)):
            k = None
            if rng.random() < ph["res"]:
                k = lo + rng.randrange(TXQ)
                if not self.room(k) or len(self.res_open[k]) >= 6:
                    k = None
            if k is None:
                p.set(f"reserve_{port}_valid", 0)
            else:
                p.set(f"reserve_{port}_valid", 1)
                p.set(f"reserve_{port}_bits", k)
                self.res_open[k].append(self.c)
                res.append(k)
        if self.req is None and rng.random() < ph["req"]:
            ks = [k for k in range(NC) if self.res_open[k]]
            if ks:
                k = rng.choice(ks)
                self.res_open[k].pop(0)
                self.serial += 1
                self.req = dict(queue=k % TXQ, index=rng.getrandbits(16), len=rng.getrandbits(16),
                                status=rng.randint(0, 3), flags=rng.getrandbits(7), hash=rng.getrandbits(32),
                                csum=rng.getrandbits(16), rssType=rng.getrandbits(8))
                self.req_cq = k
                p.set("s_req_bits_rx", int(k >= TXQ))
                for f in ("queue", "index", "len", "status", "flags", "hash", "csum", "rssType"):
                    p.set(f"s_req_bits_{f}", self.req[f])
        p.set("s_req_valid", int(self.req is not None))
        return res

    # ---------------------------------------------------------------- the host
    def host_step(self) -> None:
        rng, ph = self.rng, self.ph
        while self.sched and self.sched[0][0] <= self.c:
            _, _, fn, args = heapq.heappop(self.sched)
            fn(*args)
        if rng.random() < ph["spur"]:
            if rng.random() < 0.5:
                self.arm_cq(rng.randrange(NC))
            else:
                self.arm_eq(rng.randrange(NE))
        if rng.random() < ph["mask"]:
            e = rng.randrange(NE)
            if not self.msix[e].mask:
                self.set_mask(e, True)
                self.at(rng.randint(20, 400), self.set_mask, e, False)
        if rng.random() < ph["eqoff"]:
            e = rng.randrange(NE)
            if self.eq[e].enable:
                self.set_eq(e, "enable", False)
                self.at(rng.randint(10, 200), self.set_eq, e, "enable", True)
        if rng.random() < ph["cqoff"]:
            k = rng.randrange(NC)
            if self.cq[k].enable:
                self.set_cq(k, "enable", False)
                self.at(rng.randint(5, 100), self.set_cq, k, "enable", True)
        if rng.random() < ph["mod"]:
            k = rng.randrange(NC)
            self.set_cq(k, "mod_count", rng.choice([0, 1, 1, 2, 3, 5, 8]))
            self.set_cq(k, "mod_time", rng.choice([0, 0, 1, 2, 3, 7, 12]))
        if self.c % 97 == 0:
            for k in range(NC):
                if self.mode[k] == "poll" and rng.random() < 0.5:
                    self.service_cq(k, arm=False)
        if self.c % 1009 == 0:
            # the watchdog: poll everything, arm everything (lost events are recovered)
            for k in range(NC):
                self.service_cq(k, arm=self.mode[k] == "irq")
            for e in range(NE):
                self.service_eq(e)

    def service_cq(self, k: int, arm: bool = True) -> None:
        """Take every new completion of CQ k (by its phase bit), write cons, re-arm."""
        cfg = self.cq[k]
        size = 1 << cfg.log
        n = 0
        while True:
            i = self.hcons[k]
            rec = self.mem.get(cfg.base + (i % size) * 16, bytes(16))
            if rec[7] >> 7 != phase_of(i, cfg.log):
                break
            self.hcons[k] = u16(i + 1)
            n += 1
        assert u16(self.landed_cpl[k] - self.hcons[k]) < 0x8000, f"CQ {k}: host took more records than landed"
        if n:
            self.set_cq(k, "cons", self.hcons[k])
        if arm and self.mode[k] == "irq":
            self.at(self.rng.randint(1, 10), self.arm_cq, k)

    def service_eq(self, e: int) -> None:
        """Interrupt handler of vector e: take its events, service the CQs they name,
        write cons, re-arm."""
        cfg = self.eq[e]
        size = 1 << cfg.log
        n = 0
        while True:
            i = self.heq_cons[e]
            rec = self.mem.get(cfg.base + (i % size) * 16, bytes(16))
            if rec[7] >> 7 != phase_of(i, cfg.log):
                break
            src, typ = struct.unpack_from("<HB", rec)
            k = src + (TXQ if typ else 0)
            assert typ in (0, 1) and src < TXQ and self.cq[k].eq == e, f"EQ {e}: event for CQ {k} ({rec.hex()})"
            self.at(self.rng.randint(1, 20), self.service_cq, k)
            self.heq_cons[e] = u16(i + 1)
            n += 1
        if n:
            self.set_eq(e, "cons", self.heq_cons[e])
        self.at(self.rng.randint(1, 20), self.arm_eq, e)

    # ---------------------------------------------------------------- phases
    async def run(self, cycles: int) -> None:
        for _ in range(cycles):
            await self.step()

    async def drain(self, max_cycles: int = 20000) -> None:
        """Engines stop reserving; everything sent must land and be taken by the host."""
        self.ph = dict(self.ph, res=0.0, req=0.9, hold=0.0, mask=0.0, eqoff=0.0, cqoff=0.0, spur=0.0)
        for e in range(NE):
            self.at(1, self.set_mask, e, False)
            self.at(1, self.set_eq, e, "enable", True)
        for k in range(NC):
            self.at(1, self.set_cq, k, "enable", True)
        for _ in range(max_cycles):
            await self.step()
            if (not any(self.res_open) and self.req is None and self.out is None and not self.dma
                    and not any(self.sent)):
                break
        else:
            raise AssertionError(f"drain: {sum(map(len, self.sent))} completions never landed")
        for k in range(NC):
            self.at(1, self.service_cq, k, False)
        await self.run(3)
        for k in range(NC):
            assert self.hcons[k] == self.m[k].prod, f"CQ {k}: host took {self.hcons[k]:#x} of {self.m[k].prod:#x}"
            assert self.m[k].reserved == 0, f"CQ {k}: {self.m[k].reserved} reservations left"


CONFIGS = {
    # completion ring sizes (log2) and event ring sizes
    "small_rings": dict(cq_logs=[1, 2, 3, 4], eq_logs=[1, 2], cycles=5000),
    "mixed_rings": dict(cq_logs=[2, 4, 6, 8], eq_logs=[1, 2, 3, 5], cycles=5000),
}


@cocotb.test(timeout_time=4, timeout_unit="ms")
async def random_traffic(dut):
    conf = bench_config()
    tb = CplWriterTB(dut, conf)
    await tb.reset()
    for e in range(NE):
        tb.at(1, tb.arm_eq, e)
    for k in range(NC):
        if tb.mode[k] == "irq":
            tb.at(1, tb.arm_cq, k)
    for name in ("steady", "slots", "irqs", "burst", "lazy", "steady", "irqs", "slots"):
        tb.set_phase(name)
        await tb.run(conf["cycles"])
    await tb.drain()
    dut._log.info("cycles %d, coverage %s, overflows %d", tb.c, tb.cov, tb.overflows)
    missing = [k for k, v in tb.cov.items() if v == 0]
    assert not missing, f"coverage holes: {missing} ({tb.cov})"


@pytest.mark.parametrize("name", CONFIGS)
def test_cpl_writer(name):
    run_cocotb(DESIGN, __name__, testcase="random_traffic", bench=CONFIGS[name])
