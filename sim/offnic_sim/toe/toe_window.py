"""The driver's side of the TCP engine inside the NIC (issue 17): the `toe_host` register
block's interim command window (docs/toe.md, "In the NIC"), its settings and notification
FIFO, and the engine's counters, through the driver model's register access (BAR0).

A Tcb crosses the window as RegMap.ToeTcbWords 32-bit words: the Chisel bundle's bits
(hw/src/offnic/toe/Tcb.scala: first field in the most significant bits, `ooo` element 3
before element 0), word 0 holding bits 31:0. TCB_WIDTHS is that bundle's layout; the
hardware's `tcb_bits` register is checked against it.
"""
from __future__ import annotations

import ipaddress

from cocotb.triggers import Timer

from offnic_sim.net.eth import mac_bytes
from offnic_sim.toe import toe_hw
from offnic_sim.toe.toe_model import NIL, ConnKey, EngineParams, Handoff, Tcb

TCB_WORDS = 40
OP_INSTALL, OP_RESTORE, OP_SEND, OP_READ, OP_CLOSE, OP_STATUS, OP_RESERVE, OP_COMPLETE = range(8)
# 5: the NIC's Soft_limit (NicToe); 6: the engine's reserve table is full (TcpEngine.Reserves ids);
# 7: the rings refused (overlapping, past 2^40, outside toe_host.rings_*: ToeCmdUnit, TX-queue commands only)
ST_OK, ST_EXISTS, ST_FULL, ST_NOID, ST_NOTLIVE, ST_OVER_LIMIT, ST_RESERVES_FULL, ST_BAD_RINGS = range(8)
NOTE_NAMES = {v: k for k, v in toe_hw.NOTE_KINDS.items()}

# Tcb.scala's fields and widths, in bundle order (the model's field order but `ooo`).
_SCALAR_WIDTHS = dict(
    state=3, finQueued=1, sndUna=32, sndNxt=32, sndMax=32, writeSeq=32, sndWnd=30, maxWindow=30, sndWl1=32,
    sndWl2=32, sndWscale=4, rcvNxt=32, rcvWup=32, rcvWf=16, readSeq=32, rcvWscale=4, rcvMss=16, mss=16, tsOk=1,
    tsOffset=32, tsRecent=32, tsRecentOk=1, tsRecentAge=16, cwnd=32, ssthresh=32, caAcc=32, dupacks=2, recover=32,
    inRecovery=1, partialSeen=1, srtt8=32, rttvar4=32, backoff=4, retries=5, rttValid=1, rttSeq=32, rttTime=32,
    delackOn=1, delackDue=32, stKind=2, stDue=32, sndBase=40, sndLog2=5, rcvBase=40, rcvLog2=5, sackOk=1,
    oooRecent=4, oooN=3)
_PORT_OF = {port: name for name, port in toe_hw.TCB_PORTS}
TCB_LAYOUT: list[tuple[str, int]] = [(_PORT_OF[p], w) for p, w in _SCALAR_WIDTHS.items()] + \
    [(_PORT_OF[f"ooo_{k}_{e}"], 32) for k in (3, 2, 1, 0) for e in ("start", "end")]
TCB_BITS = sum(w for _, w in TCB_LAYOUT)


def pack_tcb(t: Tcb) -> int:
    v = 0
    for name, w in TCB_LAYOUT:
        x = getattr(t, name)
        if not 0 <= x < 1 << w:
            raise ValueError(f"Tcb.{name} = {x} does not fit {w} bits")
        v = v << w | x
    return v


def unpack_tcb(v: int) -> Tcb:
    t = Tcb()
    for name, w in reversed(TCB_LAYOUT):
        setattr(t, name, v & ((1 << w) - 1))
        v >>= w
    t.wh_prev = t.wh_next = NIL
    return t


def conn_addr(key: ConnKey, hs: Handoff) -> dict[str, int]:
    """The install's addresses (TcpEngine's ConnAddr)."""
    return dict(dst_mac=int.from_bytes(mac_bytes(hs.remote_mac), "big"), src_mac=int.from_bytes(mac_bytes(hs.local_mac), "big"),
                src_ip=int(ipaddress.IPv4Address(key.local_ip)), dst_ip=int(ipaddress.IPv4Address(key.remote_ip)),
                ports=key.local_port << 16 | key.remote_port)


class ToeWindow:
    """The engine's blocks on a driver model (`drv.block`): settings, commands, notes."""

    def __init__(self, drv, poll_ns: int = 200):
        self.h = drv.block("toe_host")
        self.t = drv.block("toe")
        self.poll_ns = poll_ns
        self._tcb_words: list[int] | None = None   # what the window holds now (writes only what changes)

    async def configure(self, p: EngineParams, cycles_per_us: int) -> None:
        if await self.h.read("tcb_bits") != TCB_BITS:
            raise RuntimeError(f"the hardware's Tcb has {await self.h.read('tcb_bits')} bits, toe_window's {TCB_BITS}")
        c = toe_hw.cfg_values(p)
        for reg, v in (("cycles_per_us", cycles_per_us), ("delack_us", c["delackUs"]), ("rto_min_us", c["rtoMinUs"]),
                       ("rto_max_us", c["rtoMaxUs"]), ("rto_initial_us", c["rtoInitialUs"]),
                       ("time_wait_us", c["timeWaitUs"]), ("fin_wait2_us", c["finWait2Us"]),
                       ("engine_control", c["finWait2On"] | c["maxRetries"] << 8)):
            await self.h.write(reg, v)

    async def command(self, op: int, conn: int = 0, arg: int = 0, tcb: Tcb | None = None,
                      addr: dict[str, int] | None = None, timeout_us: float = 2000, state: bool = True) -> dict:
        """One command through the window and its answer (status, id; with `state`, for
        install, complete, restore and status: tcb, ts_val, now_us)."""
        h = self.h
        await h.write("cmd_op", op)
        await h.write("cmd_id", conn)
        await h.write("cmd_arg", arg & 0xFFFFFFFF)
        if op in (OP_INSTALL, OP_RESERVE, OP_COMPLETE):
            a = addr or {}
            await h.write("cmd_dst_mac_lo", a.get("dst_mac", 0) & 0xFFFFFFFF)
            await h.write("cmd_dst_mac_hi", a.get("dst_mac", 0) >> 32)
            await h.write("cmd_src_mac_lo", a.get("src_mac", 0) & 0xFFFFFFFF)
            await h.write("cmd_src_mac_hi", a.get("src_mac", 0) >> 32)
            await h.write("cmd_src_ip", a.get("src_ip", 0))
            await h.write("cmd_dst_ip", a.get("dst_ip", 0))
            await h.write("cmd_ports", a.get("ports", 0))
            v = pack_tcb(tcb or Tcb())
            words = [(v >> (32 * k)) & 0xFFFFFFFF for k in range(TCB_WORDS)]
            for k, w in enumerate(words):
                if self._tcb_words is None or self._tcb_words[k] != w:
                    await h.write(f"cmd_tcb_{k}", w)
            self._tcb_words = words
        await h.write("cmd_go", 1)
        waited = 0.0
        while not (await h.read("cmd_state")) & 2:
            await Timer(self.poll_ns, "ns")
            waited += self.poll_ns / 1000
            if waited > timeout_us:
                raise TimeoutError(f"command {op} on {conn}: no answer in {timeout_us} us")
        st = await h.read("rsp_status")
        rsp = dict(op=st & 7, status=st >> 8 & 7, id=await h.read("rsp_id"))
        if state and op in (OP_INSTALL, OP_COMPLETE, OP_RESTORE, OP_STATUS) and rsp["status"] == ST_OK:
            v = 0
            for k in range(TCB_WORDS):
                v |= await h.read(f"rsp_tcb_{k}") << (32 * k)
            rsp["tcb"] = unpack_tcb(v)
            rsp["ts_val"] = await h.read("rsp_ts_val")
            rsp["now_us"] = await h.read("rsp_now_us_lo") | await h.read("rsp_now_us_hi") << 32
        return rsp

    async def notes(self) -> list[tuple]:
        """Every notification waiting, oldest first, as the model writes them."""
        out = []
        for _ in range(await self.h.read("note_count")):
            head = await self.h.read("note_head")
            kind, c = NOTE_NAMES[head & 7], head >> 16
            if kind in ("rx", "acked"):
                out.append((kind, c, await self.h.read("note_seq")))
            elif kind == "error":
                out.append((kind, c, "timeout"))
            else:
                out.append((kind, c))
            await self.h.write("note_pop", 1)
        return out

    async def counters(self) -> dict[str, int]:
        """Every read-only register of both blocks (the window's answer words left out)."""
        out = {}
        for b in (self.t, self.h):
            for name, r in b.type.regs.items():
                if r.access == "ro" and name != "next" and not name.startswith("rsp_"):
                    out[name] = await b.read(name)
        return out
