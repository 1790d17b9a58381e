"""The driver's side of the TCP engine's commands on the TX queues (issue 17; docs/queues.md
"TCP connection operations", docs/toe.md "Commands on the TX queues").

`ToeQueue` offers ToeWindow's calls (configure, command, notes, counters) with the other
transport for `command`: each command is one TX descriptor (opcode 0x20 + op: connection id
in `len`, the argument in bytes 12-15, for install/reserve/complete the host address of a
192-byte command block in `addr`, for restore/status that of an answer block) on a TX queue
the driver model has opened, and its answer is that descriptor's TX completion (`len`: the
id; `status`: 0, or 0x20 + the engine's status, or BAD_DESC / DMA_ERROR; `rss_hash`: our
TSval; `rss_type`: the TCP state after).

A command's full state (install, reserve, complete, restore, status answered OK) is in its
block, which the NIC overwrites with the answer before the completion: the addresses, the
engine's clock (word 7, microseconds bits 31:0) and the Tcb. `state_from="registers"` reads
it from the `toe_host` block's rsp_* registers instead (the last answer of either
transport; restore and status then name no block).

Notifications: from the window's FIFO (ToeWindow.notes) until `use_events(eq)`; then as
events (type 2) on event queue `eq`, which the driver model's interrupt handler collects
(`drv.toe_notes`): consecutive rx or acked notifications of one connection arrive merged
into one event with the latest sequence number.
"""
from __future__ import annotations

from offnic_sim.host import rings
from offnic_sim.host.rings import Desc
from offnic_sim.toe.toe_model import Tcb
from offnic_sim.toe.toe_window import (NOTE_NAMES, OP_COMPLETE, OP_INSTALL, OP_RESERVE, OP_RESTORE, OP_STATUS, ST_OK,
                                       TCB_WORDS, ToeWindow, pack_tcb, unpack_tcb)

OP_BASE = 0x20                # opcode = OP_BASE + op (TcpEngine's EngineOp); 0x28-0x2f: BAD_DESC
STATUS_BASE = 0x20            # completion status of an engine answer other than OK
BLOCK_BYTES = 192             # ToeCmdUnit.BlockBytes: 8 address words, then the Tcb's 40
# A completion that is no engine answer: the descriptor was refused (unknown opcode, a bad
# block address) or the block's read failed. Distinct from every ST_* value.
ST_BAD_DESC, ST_DMA_ERROR = 0x100 | rings.BAD_DESC, 0x100 | rings.DMA_ERROR


def pack_block(tcb: Tcb | None, addr: dict[str, int] | None) -> bytes:
    """The command block: words 0-6 as the window's cmd_dst_mac_lo .. cmd_ports, word 7
    reserved (0), words 8-47 the Tcb as cmd_tcb_0..39; little-endian 32-bit words."""
    a = addr or {}
    words = [a.get("dst_mac", 0) & 0xFFFFFFFF, a.get("dst_mac", 0) >> 32, a.get("src_mac", 0) & 0xFFFFFFFF,
             a.get("src_mac", 0) >> 32, a.get("src_ip", 0), a.get("dst_ip", 0), a.get("ports", 0), 0]
    v = pack_tcb(tcb or Tcb())
    words += [(v >> (32 * k)) & 0xFFFFFFFF for k in range(TCB_WORDS)]
    return b"".join(w.to_bytes(4, "little") for w in words)


def unpack_block(b: bytes) -> dict:
    """An answer block (pack_block's layout, word 7 the engine's clock): tcb, addr (as
    pack_block takes it) and now_us (bits 31:0)."""
    w = [int.from_bytes(b[4 * i:4 * i + 4], "little") for i in range(8 + TCB_WORDS)]
    v = sum(w[8 + k] << (32 * k) for k in range(TCB_WORDS))
    addr = dict(dst_mac=w[0] | (w[1] & 0xFFFF) << 32, src_mac=w[2] | (w[3] & 0xFFFF) << 32, src_ip=w[4],
                dst_ip=w[5], ports=w[6])
    return dict(tcb=unpack_tcb(v), addr=addr, now_us=w[7])


def status_of(cpl_status: int) -> int:
    """A completion's status as ToeWindow's (ST_*), or ST_BAD_DESC / ST_DMA_ERROR."""
    if cpl_status == rings.OK:
        return ST_OK
    if cpl_status >= STATUS_BASE:
        return cpl_status - STATUS_BASE
    return 0x100 | cpl_status


class ToeQueue(ToeWindow):
    """ToeWindow with commands on TX queue `q` (opened by the driver model)."""

    def __init__(self, drv, q: int = 0, poll_ns: int = 200):
        super().__init__(drv, poll_ns)
        self.drv = drv
        self.q = q
        self.block = drv.alloc(256, 256)     # one command at a time: one block, reused
        self.state_from = "block"            # or "registers": toe_host.rsp_* (restore/status name no block)
        self.events = False
        self.merged = 0                      # notifications the NIC merged into the events taken

    async def use_events(self, eq: int = 0) -> None:
        """Notifications as events on event queue `eq` (toe_host.note_mode, note_eq)."""
        await self.h.write("note_eq", eq)
        await self.h.write("note_mode", 1)
        self.events = True

    async def notes(self) -> list[tuple]:
        """Every notification waiting, oldest first, as ToeWindow.notes gives them."""
        if not self.events:
            return await super().notes()
        return self.take_events()

    def take_events(self) -> list[tuple]:
        """notes() with the notifications as events: what the interrupt handler has
        collected, taken without waiting (callable outside a coroutine)."""
        out = []
        taken, self.drv.toe_notes[:] = list(self.drv.toe_notes), []
        for cid, kind, seq, merged in taken:
            name = NOTE_NAMES[kind]
            self.merged += merged - 1
            if name in ("rx", "acked"):
                out.append((name, cid, seq))
            elif name == "error":
                out.append((name, cid, "timeout"))
            else:
                out.append((name, cid))
        return out

    async def command(self, op: int, conn: int = 0, arg: int = 0, tcb: Tcb | None = None,
                      addr: dict[str, int] | None = None, timeout_us: float = 2000, state: bool = True) -> dict:
        """One command as a TX descriptor, and its answer from the completion (status, id,
        ts_val, tcp_state, cpl: the completion; with `state`, for install, reserve,
        complete, restore and status answered OK: tcb, addr and now_us from the answer block
        (now_us: its 32 bits), or tcb and now_us from the rsp_* registers)."""
        return await self.raw(OP_BASE + op, conn, arg, tcb, addr, timeout_us=timeout_us, state=state)

    async def raw(self, opcode: int, conn: int = 0, arg: int = 0, tcb: Tcb | None = None,
                  addr: dict[str, int] | None = None, block_addr: int | None = None, timeout_us: float = 2000,
                  state: bool = True) -> dict:
        """`command` with any opcode and, for bad-input tests, any block address."""
        op = opcode - OP_BASE
        has_block = op in (OP_INSTALL, OP_RESERVE, OP_COMPLETE) or \
            (op in (OP_RESTORE, OP_STATUS) and (self.state_from == "block" or block_addr is not None))
        if has_block and block_addr is None:
            self.block.write(0, pack_block(tcb, addr))
        where = (self.block.addr if block_addr is None else block_addr) if has_block else 0
        tok = await self.drv.send_descs(self.q, [Desc.with_arg(where, conn & 0xFFFF, opcode, arg & 0xFFFFFFFF)])
        cpl = await tok.wait(timeout_us)
        rsp = dict(op=op, status=status_of(cpl.status), id=cpl.len, ts_val=cpl.rss_hash, tcp_state=cpl.rss_type, cpl=cpl)
        if state and has_block and block_addr is None and self.state_from == "block" and rsp["status"] == ST_OK:
            rsp.update(unpack_block(self.block.read(0, BLOCK_BYTES)))
        elif state and op in (OP_INSTALL, OP_COMPLETE, OP_RESTORE, OP_STATUS) and rsp["status"] == ST_OK:
            v = 0
            for k in range(TCB_WORDS):
                v |= await self.h.read(f"rsp_tcb_{k}") << (32 * k)
            rsp["tcb"] = unpack_tcb(v)
            rsp["now_us"] = await self.h.read("rsp_now_us_lo") | await self.h.read("rsp_now_us_hi") << 32
        return rsp
