"""TCP engine commands on the TX queues (issue 17; hw/src/offnic/nic/ToeCmdUnit.scala,
docs/queues.md "TCP connection operations"): the whole NIC on the fast harness, commands
as TX descriptors (opcode 0x20 + op, command blocks read by DMA from host memory), answers
as their TX completions (sim/offnic_sim/toe/toe_cmdq.py: ToeQueue).

- handoff: a connection handed to the NIC and taken back wholly through TX-queue
  commands (reserve with the peer's data segment arriving meanwhile and held, complete,
  read, send, status, restore): the held segment stored in the receive ring in host memory
  and acknowledged, the send ring's bytes sent byte-exact, the restored state exact. Host
  frames flow alongside both ways and are checked: received ones intact and in order on the
  RX queue; sent ones on the same TX queue as the commands (in ring order with them) and on
  the other port's queue, each on the wire intact.
- bad_input: opcodes 0x28 and 0x2f (BAD_DESC), a command block misaligned or crossing
  4 KiB (BAD_DESC), a block where no memory answers (DMA_ERROR), ids never installed and
  past the connection count (NOT_LIVE), a second install of an installed 4-tuple (EXISTS,
  its id): each a completion with its status, counted per reason, the queue going on (a
  host frame behind each is sent); in FCFS mode (dma.arbitration).

In handoff_cmdq the engine's notifications are events (type 2) on an event queue of their
own, taken by the driver model's interrupt handler; with that event queue disabled for a
while, the peer's ACKs in a row come out as one merged event ("many ACKs, one message").
bad_input_cmdq reads them from the register window's FIFO. Seeds: cocotb's (OFFNIC_SEED
replays).
"""
from __future__ import annotations

import random
import struct

import cocotb
from cocotb.triggers import Timer

from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host import rings
from offnic_sim.host.driver import _layout
from offnic_sim.net.ipfrag import ipv4_header
from offnic_sim.toe.toe_cmdq import BLOCK_BYTES, ST_BAD_DESC, ST_DMA_ERROR, ToeQueue
from offnic_sim.toe.toe_model import ConnKey, handoff_tcb
from offnic_sim.toe.toe_window import (OP_COMPLETE, OP_INSTALL, OP_READ, OP_RESERVE, OP_RESTORE, OP_SEND, OP_STATUS,
                                       ST_EXISTS, ST_NOTLIVE, ST_OK, TCB_WORDS, conn_addr, unpack_tcb)
from test_nic_toe import (ACK, CONNECTIONS, LOCAL_IP, NIC, NIC_MAC, PEER_IP, PEER_MAC, PSH, RING, Rig, handoff, host_frame,
                          params, tcp_frame, tcp_of)

NOWHERE = 0x80_0000_0000     # a host address (within 40 bits) with no memory behind it: reads get UR
ESTABLISHED = 1              # ConnState (toe_model.ConnState.ESTABLISHED)


def tx_frame(rng: random.Random, tag: int) -> bytes:
    """A host frame to send: UDP to the peer, numbered so the wire's copy is recognised."""
    payload = struct.pack("!I", tag) + rng.randbytes(rng.randrange(20, 300))
    udp = struct.pack("!HHHH", 6000, 5000, 8 + len(payload), 0) + payload
    f = PEER_MAC + NIC_MAC + b"\x08\x00" + ipv4_header(bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 17, len(udp), 1) + udp
    return f + bytes(max(0, 60 - len(f)))


class CmdRig(Rig):
    async def start(self) -> None:
        await super().start()
        self.cq = ToeQueue(self.drv, q=0)
        self.tx_sent = {0: [], 1: []}     # host frames sent per port
        self.tx_wire = {0: [], 1: []}     # what the wire carried per port (engine segments apart)
        self.engine = []                  # engine segments seen on port 0 (seq, ack, flags, payload)
        self.tag = 0

    async def host_tx(self, port: int) -> None:
        """A host frame on TX queue `port` (queue 0 also carries the commands)."""
        self.tag += 1
        f = tx_frame(self.rng, self.tag)
        self.tx_sent[port].append(f)
        await self.drv.send(port, f)

    def sort_wire(self) -> None:
        for port in (0, 1):
            while (f := self.tb.ports[port].recv_nowait()) is not None:
                f = bytes(f)
                if port == 0 and f[23] == 6:       # TCP: the engine's (the host sends UDP only)
                    self.engine.append(tcp_of(f))
                else:
                    self.tx_wire[port].append(f[:len(f)])

    def check_tx(self) -> None:
        for port in (0, 1):
            got = [g[:len(s)] for g, s in zip(self.tx_wire[port], self.tx_sent[port])]
            assert len(self.tx_wire[port]) == len(self.tx_sent[port]) and got == self.tx_sent[port], \
                f"port {port}: {len(self.tx_sent[port])} host frames sent, {len(self.tx_wire[port])} on the wire"


@cocotb.test(timeout_time=1500, timeout_unit="us")
async def handoff_cmdq(dut):
    r = CmdRig(dut)
    await r.start()
    rng, drv, cq = r.rng, r.drv, r.cq
    note_eq = len(drv.eqs) - 1
    assert note_eq >= 2, "the notifications want an event queue no completion queue reports to"
    await cq.use_events(note_eq)
    snd_ring, rcv_ring = drv.alloc(RING), drv.alloc(RING)
    S, R = 2**32 - rng.randrange(1, 2000), 2**32 - rng.randrange(1, 2000)
    unsent = rng.randbytes(2000)
    for i, b in enumerate(unsent):
        snd_ring.write((S + i) % RING, bytes([b]))
    key = ConnKey(LOCAL_IP, 40000 + rng.randrange(1000), PEER_IP, 80)
    hs = handoff(snd_ring.addr, rcv_ring.addr, S, R, unsent=len(unsent))
    for _ in range(3):
        await r.host_send(host_frame(rng))
        await r.host_tx(0)
        await r.host_tx(1)

    # Reserve (the block carries the addresses): the peer's data segment meanwhile is held.
    rsp = await cq.command(OP_RESERVE, 0, 0, None, conn_addr(key, hs))
    assert rsp["status"] == ST_OK and rsp["cpl"].queue == 0, rsp
    c = rsp["id"]
    data = rng.randbytes(1000)
    await r.tb.ports[0].send(tcp_frame(key, R, S, data, ACK | PSH))
    for _ in range(3):
        await r.host_send(host_frame(rng))
        await r.host_tx(0)
        await r.host_tx(1)
    await r.settle(5)
    r.sort_wire()
    held = await cq.counters()
    assert held["steer_to_engine"] == 1 and held["seg_events"] == 0 and not r.engine, held
    # Complete (the block carries the Tcb): the held segment is decided after it.
    rsp = await cq.command(OP_COMPLETE, c, 0, handoff_tcb(hs, params()), conn_addr(key, hs))
    assert rsp["status"] == ST_OK and rsp["id"] == c and rsp["tcp_state"] == ESTABLISHED, rsp
    sent = b""
    for _ in range(200):
        await Timer(2, "us")
        await r.host_tx(1)
        r.sort_wire()
        sent = b"".join(t[3] for t in r.engine if t[3])
        if len(sent) >= len(unsent):
            break
    assert sent == unsent, (len(sent), len(unsent))
    await r.tb.ports[0].send(tcp_frame(key, R + len(data), S + len(unsent)))
    await r.host_send(host_frame(rng))
    await r.settle(20)
    r.sort_wire()
    got = b"".join(rcv_ring.read((R + i) % RING, 1) for i in range(len(data)))
    assert got == data, "receive ring in host memory differs"
    assert any(t[1] == (R + len(data)) & 0xFFFFFFFF for t in r.engine), "the held segment was not acknowledged"
    notes = await cq.notes()
    assert ("rx", c, (R + len(data)) & 0xFFFFFFFF) in notes and ("acked", c, (S + len(unsent)) & 0xFFFFFFFF) in notes, notes

    # Read, send (more bytes from the ring), status, restore: all on the TX queue, host
    # frames between them on the same queue.
    assert (await cq.command(OP_READ, c, R + len(data)))["status"] == ST_OK
    await r.host_tx(0)
    more = rng.randbytes(700)
    base = S + len(unsent)
    for i, b in enumerate(more):
        snd_ring.write((base + i) % RING, bytes([b]))
    before = len(r.engine)
    assert (await cq.command(OP_SEND, c, base + len(more)))["status"] == ST_OK
    await r.host_tx(0)
    await r.settle(20)
    r.sort_wire()
    assert b"".join(t[3] for t in r.engine[before:]) == more
    assert await cq.notes() == [], "no notification expected yet"
    # The peer acknowledges `more` in 7 steps while the notifications' event queue is
    # disabled: the 7 "acked" wait in the NIC and leave as one event with the last.
    eqr = drv.eqs[note_eq].regs
    ctrl = drv.eqs[note_eq].ctrl
    await eqr.write("control", rings.pack_fields(_layout(eqr, "control"), ctrl, enable=0))
    merged0 = await cq.h.read("notes_merged")
    for k in range(1, 8):
        await r.tb.ports[0].send(tcp_frame(key, R + len(data), base + 100 * k))
        await r.host_tx(0)
    await r.settle(10)
    assert await cq.notes() == []
    await eqr.write("control", ctrl)
    await r.settle(10)
    notes = await cq.notes()
    assert notes == [("acked", c, (base + 700) & 0xFFFFFFFF)], notes
    assert await cq.h.read("notes_merged") - merged0 == 6 and cq.merged == 6, cq.merged
    st = await cq.command(OP_STATUS, c)
    assert st["status"] == ST_OK and st["tcp_state"] == ESTABLISHED and st["tcb"].snd_nxt == (base + len(more)) & 0xFFFFFFFF, st
    rsp = await cq.command(OP_RESTORE, c)
    assert rsp["status"] == ST_OK and rsp["id"] == c, rsp
    t = rsp["tcb"]
    assert t.rcv_nxt == (R + len(data)) & 0xFFFFFFFF and t.snd_nxt == (base + len(more)) & 0xFFFFFFFF, t
    # The answer came in the block; the rsp_* registers (the last answer) agree with it, and
    # the block is a command block for the same connection.
    v = 0
    for k in range(TCB_WORDS):
        v |= await cq.h.read(f"rsp_tcb_{k}") << (32 * k)
    assert unpack_tcb(v) == t, "answer block and rsp_* registers differ"
    assert rsp["addr"] == conn_addr(key, hs) and rsp["now_us"] == await cq.h.read("rsp_now_us_lo"), rsp
    restored = drv.alloc(256, 256)
    restored.write(0, cq.block.read(0, BLOCK_BYTES))
    assert (await cq.command(OP_STATUS, c))["status"] == ST_NOTLIVE

    await r.host_send(tcp_frame(key, R + len(data), base + len(more)))   # given back: to the host
    await r.host_tx(0)
    await r.host_tx(1)
    await drv.wait_tx()
    await r.settle(20)
    r.sort_wire()
    r.check_host()
    r.check_tx()
    regs = await cq.counters()
    assert regs["cmdq_commands"] == 7 and regs["cmdq_refused"] == 1 and regs["cmd_issued"] == 0, regs
    assert regs["cmdq_bad_desc"] == regs["cmdq_block_errors"] == regs["cmdq_over_limit"] == 0, regs
    assert regs["table_inserts"] == regs["table_deletes"] == 1 and regs["connections"] == 0, regs
    assert regs["steer_to_host"] == len(r.host_sent) and regs["store_errors"] == 0, regs
    assert regs["note_count"] == 0 and regs["notes_evented"] >= 3, regs

    # The restored connection's answer block installs it again, as it was (and it goes back).
    again = await cq.raw(0x20 + OP_INSTALL, 0, 0, block_addr=restored.addr, state=False)
    assert again["status"] == ST_OK and again["tcp_state"] == ESTABLISHED, again
    st = await cq.command(OP_STATUS, again["id"])
    assert st["status"] == ST_OK and (st["tcb"].snd_nxt, st["tcb"].rcv_nxt) == (t.snd_nxt, t.rcv_nxt), st
    assert (await cq.command(OP_RESTORE, again["id"]))["status"] == ST_OK
    dut._log.info("handoff_cmdq: %d host frames received, %d + %d sent, %d engine segments", len(r.host_got),
                  len(r.tx_sent[0]), len(r.tx_sent[1]), len(r.engine))


@cocotb.test(timeout_time=1500, timeout_unit="us")
async def bad_input_cmdq(dut):
    r = CmdRig(dut)
    await r.start()
    rng, drv, cq = r.rng, r.drv, r.cq
    await drv.block("dma").write("arbitration", 1)    # FCFS: command completions alternate with the ports'
    hs = handoff(drv.alloc(RING).addr, drv.alloc(RING).addr, 1000, 2000)
    key = ConnKey(LOCAL_IP, 5555, PEER_IP, 80)
    addr = conn_addr(key, hs)
    tcb = handoff_tcb(hs, params())
    ok = await cq.command(OP_INSTALL, 0, 0, tcb, addr)
    assert ok["status"] == ST_OK, ok
    block = drv.alloc(8192, 4096)
    cases = [   # (what, opcode, conn, block address, status)
        ("opcode 0x28", 0x28, ok["id"], None, ST_BAD_DESC),
        ("opcode 0x2f", 0x2F, 0, None, ST_BAD_DESC),
        ("block misaligned", 0x20 + OP_INSTALL, 0, block.addr + 16, ST_BAD_DESC),
        ("block across 4 KiB", 0x20 + OP_RESERVE, 0, block.addr + 4096 - 64, ST_BAD_DESC),
        ("block with no memory", 0x20 + OP_COMPLETE, ok["id"], NOWHERE, ST_DMA_ERROR),
        ("answer block misaligned", 0x20 + OP_RESTORE, ok["id"], block.addr + 8, ST_BAD_DESC),
        ("answer block across 4 KiB", 0x20 + OP_STATUS, ok["id"], block.addr + 4096 - 32, ST_BAD_DESC),
        ("id never installed", 0x20 + OP_STATUS, ok["id"] ^ 1, None, ST_NOTLIVE),
        ("id past the table", 0x20 + OP_SEND, CONNECTIONS + 3, None, ST_NOTLIVE),
        ("complete, not reserved", 0x20 + OP_COMPLETE, ok["id"] ^ 2, None, ST_NOTLIVE),
        ("install again", 0x20 + OP_INSTALL, 0, None, ST_EXISTS),
    ]
    rng.shuffle(cases)
    for what, opcode, conn, where, want in cases:
        rsp = await cq.raw(opcode, conn, 0, tcb, addr, block_addr=where, state=False)
        assert rsp["status"] == want, (what, rsp)
        if want == ST_EXISTS:
            assert rsp["id"] == ok["id"], (what, rsp)
        await r.host_tx(0)
        await r.host_send(host_frame(rng))
    assert (await cq.command(OP_STATUS, ok["id"]))["status"] == ST_OK      # unharmed
    assert (await cq.command(OP_RESTORE, ok["id"]))["status"] == ST_OK
    await drv.wait_tx()
    await r.settle(20)
    r.sort_wire()
    r.check_host()
    r.check_tx()
    assert not r.engine or all(not t[3] for t in r.engine), "the engine sent data it had not been given"
    regs = await cq.counters()
    assert regs["cmdq_commands"] == len(cases) + 3, regs
    assert regs["cmdq_bad_desc"] == 6 and regs["cmdq_block_errors"] == 1, regs
    # the engine's refusals: exists, never installed, complete not reserved (an id past the
    # table is refused by the unit and never reaches the engine)
    assert regs["cmdq_refused"] == 3, regs
    assert regs["connections"] == 0 and regs["table_inserts"] == 1, regs
    assert (await drv.counters("tx_engine"))["bad_desc"] == 0, "a command counted as a bad packet"


def test_nic_toe_cmdq():
    run_cocotb(NIC, __name__, fast=True)
