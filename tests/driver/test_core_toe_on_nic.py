"""The driver core's TCP engine commands (sw-driver/core/offnic_toe.c, the C offnic.ko
runs) on the simulated nic-toe NIC (fast harness), the core doing everything as in
test_core_on_nic.py: discovery, the engine's settings, queues, the command descriptors,
the command blocks it builds from a handoff description, the answers and notification
events it decodes. The driver model is not used.

A connection handed to the NIC and taken back: the ring window set, an install whose
rings leave it refused (0x27) and a status of an id never installed refused (0x24);
reserve, the peer's data segment arriving before complete held and then stored in the
receive ring in host memory and acknowledged; the send ring's unsent bytes on the wire
byte-exact; read; send of more bytes, on the wire byte-exact; status; restore with hold
(the peer's next segment held, not given to the host), release, the peer's segment then
received by the host through the core; the restored answer block installing the
connection again. Answers (completion, answer block) checked against what was installed.
Notifications: events of type 2 on an event queue of their own. Seeds: cocotb's
(OFFNIC_SEED replays)."""
import ctypes
import random
import sys
from pathlib import Path

import cocotb
from cocotb._bridge import bridge, resume
from cocotb.triggers import Timer

from offnic_sim.fast.fast_tb import FastBar, FastNicTB
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host import drvcore, regs, rings
from offnic_sim.host.drvcore import RX, TX, ToeAddr, ToeAnswer, ToeConfig, ToeNote, ToeParams
from offnic_sim.toe import toe_hw
from offnic_sim.toe.toe_model import ConnKey, handoff_tcb
from offnic_sim.toe.toe_window import TCB_LAYOUT, pack_tcb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "nic"))
sys.path.insert(0, str(HERE))
from test_core_toe import c_addr, c_handoff  # noqa: E402  (Handoff -> the core's structs)
from test_nic_toe import (ACK, CONNECTIONS, LOCAL_IP, NIC, NIC_MAC, PEER_IP, PSH, RING,  # noqa: E402
                          handoff, params, tcp_frame, tcp_of)

LOG = 6                  # 64-record rings
BUF = 2048
PORT1_MAC = bytes.fromhex("020000000003")   # port 1 apart: the block's local MAC picks port 0
INSTALL, RESTORE, SEND, READ, CLOSE, STATUS, RESERVE, COMPLETE = range(8)
OK, EXISTS, FULL, NOID, NOTLIVE, OVER_LIMIT, RESERVES_FULL, BAD_RINGS = range(8)
ESTABLISHED = 1
HOLD = 1                 # restore's arg bit 0
NOTE_RX, NOTE_ACKED = 0, 1
Words = ctypes.c_uint32 * drvcore.TOE_TCB_WORDS
FIELD = {name: k for k, (name, _) in enumerate(TCB_LAYOUT)}
# Fields the engine keeps as installed until data moves (the rest: its clock, timers, ...)
KEPT = ("snd_una", "write_seq", "snd_wscale", "rcv_wscale", "mss", "rcv_mss", "ts_ok", "sack_ok", "snd_base",
        "snd_log2", "rcv_base", "rcv_log2", "ssthresh", "read_seq")


@cocotb.test(timeout_time=1500, timeout_unit="us")
async def core_hands_off(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = FastNicTB(dut)
    await tb._out_of_reset
    for port in tb.ports:
        await port.reset()
    tb.lib.lib.fastsim_set_sizes(1, 2)
    bar = FastBar(tb)
    base = tb.lib.lib.fastsim_host_mem()

    @resume
    async def read32(off):
        return await bar.read_dword(off)

    def write32(off, v):
        tb.lib.lib.fastsim_mmio_write(off, (v & 0xFFFF_FFFF).to_bytes(4, "little"), 4)

    def alloc(size):
        b = tb.hostmem.alloc(size, 4096)
        return base + b.addr, b.addr

    core = drvcore.Core(read32, write32, bar_len=1 << 24, log=tb.dut._log, dma_alloc=alloc)
    lib, h = core.lib, core.hw_p
    st = {}

    @bridge
    def bring_up():
        assert core.probe() == 0, core.lines
        assert lib.offnic_toe_check(h) == 0, core.lines
        c = toe_hw.cfg_values(params())
        cfg = ToeConfig(1, c["delackUs"], c["rtoMinUs"], c["rtoMaxUs"], c["rtoInitialUs"], c["timeWaitUs"],
                        c["finWait2Us"] if c["finWait2On"] else 0, c["maxRetries"])
        assert lib.offnic_toe_configure(h, ctypes.byref(cfg)) == 0
        eqs = [core.ring_alloc(LOG) for _ in range(2)]
        for k, eq in enumerate(eqs):        # 0: the completion queues', 1: the engine's notes
            assert lib.offnic_eq_open(h, k, ctypes.byref(eq)) == 0
        rings_ = {}
        for kind in (TX, RX):
            cq, ring = core.ring_alloc(LOG), core.ring_alloc(LOG)
            assert lib.offnic_cq_open(h, kind, 0, ctypes.byref(cq), 0, 1, 0) == 0
            assert lib.offnic_queue_open(h, kind, 0, ctypes.byref(ring), 0) == 0
            rings_[kind] = (cq, ring)
        assert lib.offnic_rss_set_control(h, 0) == 0
        assert lib.offnic_set_default_queue(h, 0, 0) == 0
        for port, mac in ((0, NIC_MAC), (1, PORT1_MAC)):
            assert lib.offnic_port_set_mac(h, port, mac) == 0
            assert lib.offnic_port_set_rx_filter(h, port, 0, 0, 1, 0) == 0
        rxbuf = tb.hostmem.alloc(BUF << LOG)
        _, rxring = rings_[RX]
        for _ in range(1 << LOG):
            d = drvcore.Desc(rxbuf.addr + rings.slot(rxring.prod, LOG) * BUF, BUF, 0, 0, 0, 0)
            lib.offnic_ring_put_desc(ctypes.byref(rxring), ctypes.byref(d))
        lib.offnic_queue_doorbell(h, RX, 0, rxring.prod)
        assert lib.offnic_toe_set_notes(h, 1, 1) == 0
        assert lib.offnic_toe_set_notes(h, 1, core.hw.n_eqs) != 0   # no such event queue
        blocks = {t: off for t, _, off, known in core.blocks() if known}
        st.update(eqs=eqs, rings=rings_, rxbuf=rxbuf, toe=blocks[regs.TOE.type_id],
                  toe_host=blocks[regs.TOE_HOST.type_id])
        assert lib.offnic_toe_host(h) == st["toe_host"]
        assert 0 < lib.offnic_toe_soft_limit(h) <= CONNECTIONS, lib.offnic_toe_soft_limit(h)

    await bring_up()
    eqs, rings_, rxbuf = st["eqs"], st["rings"], st["rxbuf"]

    @bridge
    def counters():
        """The engine's read-only registers (both blocks) through the core's BAR0 access."""
        out = {}
        for block, at in ((regs.TOE, st["toe"]), (regs.TOE_HOST, st["toe_host"])):
            for name, r in block.regs.items():
                if r.access == "ro" and name != "next" and not name.startswith("rsp_"):
                    out[name] = read32(at + r.offset)
        return out

    @bridge
    def ring_window(addr, size):
        return lib.offnic_toe_set_ring_window(h, addr, size)

    async def next_cpl(kind: int, wait_us: int = 200) -> drvcore.Cpl | None:
        cq, _ = rings_[kind]
        cpl = drvcore.Cpl()
        for _ in range(wait_us):
            if lib.offnic_cq_next(ctypes.byref(cq), ctypes.byref(cpl)):
                cq.cons = rings.idx_add(cq.cons, 1)
                lib.offnic_cq_done(h, kind, 0, cq.cons, 0)
                return cpl
            await Timer(1, "us")
        return None

    def host_rx() -> list[bytes]:
        """Frames the host got (RX completions waiting), their buffers reposted."""
        cq, rxring = rings_[RX]
        out, cpl = [], drvcore.Cpl()
        while lib.offnic_cq_next(ctypes.byref(cq), ctypes.byref(cpl)):
            cq.cons = rings.idx_add(cq.cons, 1)
            assert cpl.status == 0, cpl.status
            out.append(rxbuf.read(rings.slot(cpl.index, LOG) * BUF, cpl.len))
            d = drvcore.Desc(rxbuf.addr + rings.slot(rxring.prod, LOG) * BUF, BUF, 0, 0, 0, 0)
            lib.offnic_ring_put_desc(ctypes.byref(rxring), ctypes.byref(d))
        if out:
            lib.offnic_cq_done(h, RX, 0, cq.cons, 0)
            lib.offnic_queue_doorbell(h, RX, 0, rxring.prod)
        return out

    def notes() -> list[tuple[int, int, int, int]]:
        """The engine's notification events on event queue 1, decoded by the core."""
        eq, ev, out = eqs[1], drvcore.Event(), []
        while lib.offnic_eq_next(ctypes.byref(eq), ctypes.byref(ev)):
            rec = ctypes.string_at(eq.cpu + rings.slot(eq.cons, LOG) * 16, 16)
            n = ToeNote()
            assert lib.offnic_toe_note_unpack(rec, ctypes.byref(n)) == 0, f"event type {ev.type} on the notes' queue"
            out.append((n.kind, n.id, n.seq, n.merged))
            eq.cons = rings.idx_add(eq.cons, 1)
        lib.offnic_eq_done(h, 1, eq.cons, 0)
        return out

    block = tb.hostmem.alloc(256, 256)       # the command block, reused

    def pack(addr: ToeAddr, tcb) -> None:
        lib.offnic_toe_block_pack(base + block.addr, ctypes.byref(addr), tcb)

    def unpack(where=None) -> tuple[ToeAddr, int, list[int]]:
        a, now, tcb = ToeAddr(), ctypes.c_uint32(), Words()
        lib.offnic_toe_block_unpack(base + (where or block).addr, ctypes.byref(a), ctypes.byref(now), tcb)
        return a, now.value, tcb

    def field(tcb, name: str) -> int:
        return lib.offnic_tcb_get(tcb, FIELD[name])

    commands = 0

    async def command(op: int, cid: int = 0, arg: int = 0, where=None) -> ToeAnswer:
        """One command as a TX descriptor the core encodes; its completion as the core decodes it."""
        nonlocal commands
        _, txring = rings_[TX]
        d = drvcore.Desc()
        assert lib.offnic_toe_desc(ctypes.byref(d), op, cid, arg, where.addr if where else 0) == 0
        first = txring.prod
        lib.offnic_ring_put_desc(ctypes.byref(txring), ctypes.byref(d))
        lib.offnic_queue_doorbell(h, TX, 0, txring.prod)
        cpl = await next_cpl(TX)
        assert cpl is not None, f"command {op} on {cid}: no completion"
        assert (cpl.queue, cpl.index) == (0, first), (cpl.queue, cpl.index, first)
        ans = ToeAnswer()
        lib.offnic_toe_answer_of(ctypes.byref(cpl), ctypes.byref(ans))
        commands += 1
        return ans

    def engine_frames() -> list[tuple[int, int, int, bytes]]:
        out = []
        while (f := tb.ports[0].recv_nowait()) is not None:
            f = bytes(f)
            assert f[23] == 6, "only the engine sends here"
            out.append(tcp_of(f))
        assert tb.ports[1].recv_nowait() is None, "a frame on port 1"
        return out

    # Rings and the host's ring window: 16 pages, the connection's rings inside.
    pool = tb.hostmem.alloc(16 * 4096, 4096)
    outside = tb.hostmem.alloc(2 * RING, 4096)
    snd_addr, rcv_addr = pool.addr + RING, pool.addr + 3 * RING
    assert await ring_window(pool.addr + 8, 16 * 4096) != 0          # not page aligned: refused by the core
    assert await ring_window(pool.addr, 16 * 4096) == 0
    S, R = 2**32 - rng.randrange(1, 2000), 2**32 - rng.randrange(1, 2000)
    unsent = rng.randbytes(2000)
    for i, b in enumerate(unsent):
        pool.write(RING + (S + i) % RING, bytes([b]))
    key = ConnKey(LOCAL_IP, 40000 + rng.randrange(1000), PEER_IP, 80)
    hs = handoff(snd_addr, rcv_addr, S, R, unsent=len(unsent))
    addr = c_addr(key, hs)
    tcb = Words()
    par = ToeParams(params().init_cwnd, int(params().sack))
    assert lib.offnic_toe_tcb_of(tcb, ctypes.byref(c_handoff(hs)), ctypes.byref(par)) == 0
    assert sum(tcb[k] << (32 * k) for k in range(40)) == pack_tcb(handoff_tcb(hs, params()))

    # Refusals: rings outside the window (0x27, nothing done), an id never installed (0x24).
    bad_hs = handoff(outside.addr, outside.addr + RING, 5, 7)
    bad_tcb = Words()
    assert lib.offnic_toe_tcb_of(bad_tcb, ctypes.byref(c_handoff(bad_hs)), ctypes.byref(par)) == 0
    pack(c_addr(ConnKey(LOCAL_IP, 7000, PEER_IP, 80), bad_hs), bad_tcb)
    ans = await command(INSTALL, 0, 0, block)
    assert ans.status == BAD_RINGS, ans.status
    ans = await command(STATUS, 5, 0, block)
    assert ans.status == NOTLIVE, ans.status
    c0 = await counters()
    assert c0["cmdq_bad_rings"] == 1 and c0["connections"] == 0 and c0["table_inserts"] == 0, c0

    # Reserve (addresses only); the peer's data segment meanwhile is held on the NIC.
    pack(addr, Words())
    ans = await command(RESERVE, 0, 0, block)
    assert ans.status == OK, ans.status
    cid = ans.id
    data = rng.randbytes(1000)
    await tb.ports[0].send(tcp_frame(key, R, S, data, ACK | PSH))
    await Timer(10, "us")
    held = await counters()
    assert held["steer_to_engine"] == 1 and held["seg_events"] == 0, held
    assert not engine_frames() and not host_rx(), "the held segment was answered or given to the host"

    # Complete with the handoff's Tcb: the answer is what was installed.
    pack(addr, tcb)
    ans = await command(COMPLETE, cid, 0, block)
    assert (ans.status, ans.id, ans.tcp_state) == (OK, cid, ESTABLISHED), (ans.status, ans.id, ans.tcp_state)
    got_addr, _, got = unpack()
    assert bytes(got_addr) == bytes(addr), "answer block: other addresses"
    for name in KEPT:
        assert field(got, name) == field(tcb, name), f"complete's answer: {name}"
    # the engine may have started sending the ring's bytes (and taken the held segment) already
    assert (field(got, "snd_nxt") - S) % 2**32 <= len(unsent), field(got, "snd_nxt")
    assert field(got, "rcv_nxt") in (R, (R + len(data)) % 2**32), field(got, "rcv_nxt")
    sent, seen = b"", []
    for _ in range(200):
        await Timer(2, "us")
        seen += engine_frames()
        sent = b"".join(t[3] for t in seen if t[3])
        if len(sent) >= len(unsent):
            break
    assert sent == unsent, f"send ring's unsent bytes: {len(sent)} of {len(unsent)} on the wire, or others"
    await tb.ports[0].send(tcp_frame(key, R + len(data), S + len(unsent)))
    await Timer(20, "us")
    seen += engine_frames()
    got_data = b"".join(pool.read(3 * RING + (R + i) % RING, 1) for i in range(len(data)))
    assert got_data == data, "the held segment's bytes in the receive ring differ"
    assert any(t[1] == (R + len(data)) & 0xFFFFFFFF for t in seen), "the held segment was not acknowledged"
    got_notes = {(k, c, s) for k, c, s, _ in notes()}
    assert (NOTE_RX, cid, (R + len(data)) & 0xFFFFFFFF) in got_notes, got_notes
    assert (NOTE_ACKED, cid, (S + len(unsent)) & 0xFFFFFFFF) in got_notes, got_notes
    assert not host_rx()

    # Read, send more, status.
    assert (await command(READ, cid, (R + len(data)) & 0xFFFFFFFF)).status == OK
    more = rng.randbytes(700)
    top = S + len(unsent)
    for i, b in enumerate(more):
        pool.write(RING + (top + i) % RING, bytes([b]))
    assert (await command(SEND, cid, (top + len(more)) & 0xFFFFFFFF)).status == OK
    seen = []
    for _ in range(100):
        await Timer(2, "us")
        seen += engine_frames()
        if sum(len(t[3]) for t in seen) >= len(more):
            break
    assert b"".join(t[3] for t in seen) == more, "sent bytes differ"
    await tb.ports[0].send(tcp_frame(key, R + len(data), top + len(more)))
    await Timer(10, "us")
    ans = await command(STATUS, cid, 0, block)
    assert (ans.status, ans.id, ans.tcp_state) == (OK, cid, ESTABLISHED)
    got_addr, _, got = unpack()
    assert bytes(got_addr) == bytes(addr)
    assert field(got, "snd_nxt") == field(got, "snd_una") == (top + len(more)) & 0xFFFFFFFF
    assert field(got, "rcv_nxt") == (R + len(data)) & 0xFFFFFFFF

    # Restore with hold: the answer is the connection's state; the id is held, the peer's
    # next segment stays on the NIC; release; the segment then goes to the host.
    restored = tb.hostmem.alloc(256, 256)
    before = await counters()
    ans = await command(RESTORE, cid, HOLD, restored)
    assert (ans.status, ans.id) == (OK, cid), ans.status
    got_addr, _, got = unpack(restored)
    assert bytes(got_addr) == bytes(addr)
    assert field(got, "snd_nxt") == (top + len(more)) & 0xFFFFFFFF
    assert field(got, "rcv_nxt") == (R + len(data)) & 0xFFFFFFFF
    for name in KEPT:
        if name not in ("snd_una", "read_seq", "write_seq", "rcv_mss"):   # moved by the traffic, send and read
            assert field(got, name) == field(tcb, name), f"restore's answer: {name}"
    assert field(got, "read_seq") == (R + len(data)) & 0xFFFFFFFF
    assert field(got, "write_seq") == field(got, "snd_una") == (top + len(more)) & 0xFFFFFFFF
    assert (await command(STATUS, cid)).status == NOTLIVE
    late = tcp_frame(key, R + len(data), top + len(more), b"held" * 100)
    await tb.ports[0].send(late)
    await Timer(10, "us")
    moved = await counters()
    assert moved["steer_to_engine"] - before["steer_to_engine"] == 1, moved
    assert moved["seg_events"] == before["seg_events"], moved
    assert not host_rx() and not engine_frames()
    assert (await command(RESTORE, cid)).status == OK                   # release
    await Timer(5, "us")
    await tb.ports[0].send(late)                                          # the peer resends: to the host now
    got_host = []
    for _ in range(50):
        await Timer(1, "us")
        got_host += host_rx()
        if got_host:
            break
    assert got_host == [late], "the given-back connection's segment did not reach the host intact"
    after = await counters()
    assert after["seg_stale_drops"] - before["seg_stale_drops"] == 1 and after["connections"] == 0, after

    # The restore's answer block installs the connection again, as it was.
    ans = await command(INSTALL, 0, 0, restored)
    assert (ans.status, ans.tcp_state) == (OK, ESTABLISHED), ans.status
    again = ans.id
    ans = await command(STATUS, again, 0, block)
    assert ans.status == OK
    _, _, st2 = unpack()
    assert (field(st2, "snd_nxt"), field(st2, "rcv_nxt")) == (field(got, "snd_nxt"), field(got, "rcv_nxt"))
    assert (await command(RESTORE, again)).status == OK
    await Timer(5, "us")
    end = await counters()
    assert end["cmdq_commands"] == commands, (end["cmdq_commands"], commands)
    assert end["cmdq_bad_desc"] == end["cmdq_block_errors"] == end["cmdq_over_limit"] == 0, end
    assert end["cmdq_refused"] == 2 and end["cmdq_bad_rings"] == 1, end   # the two statuses not live
    assert end["connections"] == 0 and end["table_inserts"] == 2, end
    dut._log.info("core hands off: %d commands, counters %s", commands, {k: v for k, v in end.items() if v})


def test_core_toe_on_nic():
    run_cocotb(NIC, __name__, fast=True)
