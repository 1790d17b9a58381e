"""The TCP engine inside the whole NIC (issue 17) behind the exact model's interface
(toe_model.Engine), as toe_hwengine.HwEngine is for the engine alone: the harnesses
written for the model (the Linux rig of tests/linux/test_toe_model_linux.py) carry
connections through the NIC, PCIe included.

What differs from the block: the NIC sits between the host and the wire, so there are
two paths through it, both real:
- the host's frames (`host_tx`) go onto a TX queue through the driver model; what leaves
  port 0 is told apart (the host's frames come out in the order they were queued, intact:
  every port-0 frame that is the next one expected is the host's, any other the engine's)
  and handed out by take_host_wire() and take_wire();
- frames from the wire go into port 0 (the shared engine's `segment_in`); what the NIC
  passes to the host arrives as RX completions (take_host()).
Commands are TX-queue descriptors (toe_cmdq.ToeQueue on a TX queue of their own); the
notifications are events on an event queue of their own. The rings are host memory
(`HostRingMemory`), which the NIC reads behind the harness's read latency (1 us).

The handoff is the NIC's two-phase install: `reserve(key)` (from its answer the NIC
holds the connection's segments), `fence_rx()` (every frame steered to the host before
that answer has arrived: the host may freeze its socket), then install() completes it.
Restore mirrors it in the driver: `hold_rx(key)` keeps the connection's frames from the
host until `release_rx(key)` (its socket is live again). Every frame the host receives
is checked against the connections the NIC owns: `leaks` lists any of an installed
connection (from its fence to its restore command).

The NIC's clock runs free (FastNicTB); `cycles_per_us` sets the engine's microsecond
(1: one clock, as the block rig runs it). `SharedNicEngine` is the interface for the
rig's threads (toe_hwengine.SharedHwEngine's, plus the host's TX path and the handoff
steps above).
"""
from __future__ import annotations

import bisect
import ipaddress
import types
from collections import deque

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.task import resume
from cocotb.triggers import Timer

from offnic_sim.host.nic_tb import CORE_PERIOD_NS
from offnic_sim.net.eth import mac_bytes
from offnic_sim.toe.toe_cmdq import ToeQueue
from offnic_sim.toe.toe_hwengine import SharedHwEngine
from offnic_sim.toe.toe_model import ConnKey, EngineParams, Handoff, Memory, Outbox, Restored, St, Tcb, handoff_tcb, rto_of
from offnic_sim.toe.toe_window import (OP_CLOSE, OP_COMPLETE, OP_INSTALL, OP_READ, OP_RESERVE, OP_RESTORE, OP_SEND,
                                       OP_STATUS, ST_OK, conn_addr)

QUIET_NS = 2000          # no frame in or out for this long (twice): the NIC is done with what it had
QUIET_MAX_NS = 200_000   # (a frame the NIC never sends must not hang the rig: the checks find it)
FENCE_NS = 50_000        # the RX path delivers what it holds well within this


class HostRingMemory(Memory):
    """toe_model.Memory over the driver model's host memory: the rings are host buffers
    (`alloc` aligns each to its size, as the engine's rings need)."""

    def __init__(self, hostmem):
        self.hostmem = hostmem
        self._starts: list[int] = []
        self._bufs: list = []

    def __len__(self) -> int:
        return 1 << 40

    def alloc(self, size: int) -> int:
        buf = self.hostmem.alloc(size, size)
        i = bisect.bisect(self._starts, buf.addr)
        self._starts.insert(i, buf.addr)
        self._bufs.insert(i, buf)
        return buf.addr

    def _at(self, addr: int, n: int):
        i = bisect.bisect(self._starts, addr) - 1
        if i < 0 or addr + n > self._starts[i] + self._bufs[i].size:
            raise IndexError(f"{n} bytes at {addr:#x}: not in a ring this memory allocated")
        return self._bufs[i], addr - self._starts[i]

    def read(self, addr: int, n: int) -> bytes:
        buf, off = self._at(addr, n)
        return buf.read(off, n)

    def write(self, addr: int, data: bytes) -> None:
        buf, off = self._at(addr, len(data))
        buf.write(off, data)


def frame_key(frame: bytes) -> ConnKey | None:
    """The connection table's key of an IPv4/TCP frame from the peer (local = its
    destination), or None."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
        return None
    ihl = (frame[14] & 15) * 4
    t = 14 + ihl
    if len(frame) < t + 4:
        return None
    return ConnKey(str(ipaddress.IPv4Address(frame[30:34])), int.from_bytes(frame[t + 2:t + 4], "big"),
                   str(ipaddress.IPv4Address(frame[26:30])), int.from_bytes(frame[t:t + 2], "big"))


class NicEngine(Outbox):
    """toe_model.Engine's interface on the whole NIC of a FastNicTB (or NicTB). Create it
    and `await start()` in the cocotb test; the sync calls are for a bridge thread
    (SharedNicEngine serves them)."""

    def __init__(self, tb, params: EngineParams, *, local_mac: str, port: int = 0, cycles_per_us: int = 1):
        super().__init__()
        if params.tick_us != 64 or params.ts_tick_us != 1000:
            raise ValueError("the hardware's clocks are 64 us ticks and a 1 ms timestamp clock")
        self.tb = tb
        self.drv = tb.drv
        self.p = params
        self.port = port
        self.local_mac = local_mac
        self.cycles_per_us = cycles_per_us
        self.free_run = True
        self.mem = HostRingMemory(tb.hostmem)
        self.src = tb.ports[port].source
        self.host_q, self.cmd_q, self.rx_q = port, 2, port
        self.cq: ToeQueue | None = None
        self.counters = {}
        self.refused = 0                       # commands the engine answered with a status other than OK
        self.to_wire_host: list[bytes] = []    # the host's frames as they left port 0
        self.tx_box: deque[bytes] = deque()    # the host's frames waiting for the TX queue
        self._tx_expect: deque[bytes] = deque()   # the host's frames queued, not yet seen on the wire
        self.host_tx_frames = 0
        self.tx_errors = 0                     # the host's frames whose TX completion was not OK
        self.rx_frames = 0                     # RX completions taken (every queue)
        self.rx_errors = 0
        self.leaks: list[tuple[ConnKey, bytes]] = []   # frames of an installed connection that reached the host
        self.fence_timeouts = 0
        self.held_at_complete: list[int] = []   # the NIC-packet queue's length as each install completed
        self.rx_held = 0                       # frames the driver held from the host during restores
        self._live: dict[int, tuple[ConnKey, bool, bool, str, str]] = {}
        self._reserved: dict[ConnKey, int] = {}
        self._owned: set[ConnKey] = set()      # installed, fenced: none of their frames may reach the host
        self._rx_hold: dict[ConnKey, list[bytes]] = {}
        self._clock0 = 0.0
        self._offset = 0

    # ------------------------------------------------------------------ set-up (async)
    async def start(self, now_us: int) -> None:
        tb, drv = self.tb, self.drv
        await tb.init()
        await drv.set_rss(enable=False)
        await drv.set_mac(self.port, mac_bytes(self.local_mac))
        note_eq = len(drv.eqs) - 1            # the notifications' events alone on the last
        if note_eq < 1:
            raise RuntimeError(f"{len(drv.eqs)} event queue: none left for the notifications alone")
        await drv.open_tx_queue(self.host_q, size=256, port=self.port, buf_size=2048, eq=0)
        await drv.open_tx_queue(self.cmd_q, size=64, port=self.port, buf_size=256, eq=0)
        await drv.open_rx_queue(self.rx_q, size=512, buf_size=2048, eq=0)
        await drv.set_default_queue(port=self.port, q=self.rx_q)
        self.cq = ToeQueue(drv, q=self.cmd_q)
        await self.cq.configure(self.p, cycles_per_us=self.cycles_per_us)
        await self.cq.use_events(note_eq)
        r = await self.cq.t.read("now_us")
        self._clock0 = self._cycles() / self.cycles_per_us - r
        self._offset = now_us - self._hw_now()
        cocotb.start_soon(self._tx_pump())

    def _cycles(self) -> float:
        return get_sim_time("ns") / CORE_PERIOD_NS

    def _hw_now(self) -> int:
        """The engine's clock (its now_us), from the simulation's time."""
        return int(self._cycles() / self.cycles_per_us - self._clock0)

    async def _tx_pump(self) -> None:
        """The host's frames onto its TX queue, in order, a batch per doorbell."""
        drv = self.drv
        while True:
            if not self.tx_box:
                await Timer(SharedNicEngine.PUMP_NS, "ns")
                continue
            frames = []
            while self.tx_box and len(frames) < 64:
                frames.append(self.tx_box.popleft())
            self._tx_expect.extend(frames)
            self.host_tx_frames += len(frames)
            await drv.send_batch(self.host_q, frames, max_in_flight=192)

    # ------------------------------------------------------------------ what came out
    def _collect(self) -> None:
        done = self.drv.tx_done(self.host_q)
        for tok in done:
            if tok.cpl.status != 0:
                self.tx_errors += 1
        done.clear()
        port = self.tb.ports[self.port]
        while (f := port.recv_nowait()) is not None:
            f = bytes(f)
            h = self._tx_expect[0] if self._tx_expect else None
            if h is not None and f[:len(h)] == h and not any(f[len(h):]):
                self._tx_expect.popleft()
                self.to_wire_host.append(f)
            else:
                self.to_wire.append(f)
        rxq = self.drv.queues["rx"][self.rx_q]
        while self.drv.rx_pending(self.rx_q):
            pkt = rxq.packets.get_nowait()
            self.rx_frames += 1
            if not pkt.ok:
                self.rx_errors += 1
                continue
            data = bytes(pkt.data)
            key = frame_key(data)
            if key in self._owned:
                self.leaks.append((key, data))
            if key in self._rx_hold:
                self._rx_hold[key].append(data)
                self.rx_held += 1
            else:
                self.to_host.append(data)
        if self.drv.toe_notes:
            for note in self.cq.take_events():
                self.notifications.append(note)
                if note[0] == "closed":
                    gone = self._live.pop(note[1], None)
                    if gone is not None:
                        self._owned.discard(gone[0])

    def take_host_wire(self) -> list[bytes]:
        out, self.to_wire_host = self.to_wire_host, []
        return out

    def host_tx_pending(self) -> int:
        """The host's frames queued and not yet seen leaving port 0."""
        return len(self.tx_box) + len(self._tx_expect)

    async def _quiet(self) -> None:
        """Until the frames queued into the port have gone in and nothing has come out for
        two QUIET_NS in a row."""
        calm, t0 = 0, get_sim_time("ns")
        while calm < 2 and get_sim_time("ns") - t0 < QUIET_MAX_NS:
            n = len(self.to_wire) + len(self.to_wire_host) + len(self.to_host) + self.rx_frames
            await Timer(QUIET_NS, "ns")
            self._collect()
            busy = (not self.src.idle() or self.host_tx_pending()
                    or n != len(self.to_wire) + len(self.to_wire_host) + len(self.to_host) + self.rx_frames)
            calm = 0 if busy else calm + 1

    # ------------------------------------------------------------------ commands (async)
    async def _command(self, op: int, conn: int = 0, arg: int = 0, tcb: Tcb | None = None, addr: dict | None = None,
                       state: bool = False) -> dict:
        rsp = await self.cq.command(op, conn, arg, tcb, addr, timeout_us=5000, state=state)
        if rsp["status"] != ST_OK:
            self.refused += 1
        return rsp

    async def _reserve(self, key: ConnKey, local_mac: str, remote_mac: str) -> int:
        macs = types.SimpleNamespace(local_mac=local_mac, remote_mac=remote_mac)
        rsp = await self._command(OP_RESERVE, 0, 0, None, conn_addr(key, macs))
        if rsp["status"] != ST_OK:
            raise RuntimeError(f"reserve of {key}: status {rsp['status']}")
        self._reserved[key] = rsp["id"]
        return rsp["id"]

    async def _fence_rx(self, key: ConnKey) -> None:
        """Until the host has every frame the NIC steered to it before now (its RX
        completions in); from then on no frame of `key` may reach the host."""
        target = await self.cq.t.read("steer_to_host")
        t0 = get_sim_time("ns")
        while (self.rx_frames - target) & 0xFFFFFFFF > 1 << 31:
            if get_sim_time("ns") - t0 > FENCE_NS:
                self.fence_timeouts += 1
                break
            await Timer(SharedNicEngine.PUMP_NS, "ns")
            self._collect()
        self._owned.add(key)

    async def _install(self, key: ConnKey, hs: Handoff) -> int:
        tcb = handoff_tcb(hs, self.p)
        arg = hs.ts_val if hs.timestamps else 0
        c = self._reserved.pop(key, None)
        if c is None:
            rsp = await self._command(OP_INSTALL, 0, arg, tcb, conn_addr(key, hs))
        else:
            self.held_at_complete.append(await self.cq.h.read("nicq_qlen"))
            rsp = await self._command(OP_COMPLETE, c, arg, tcb, conn_addr(key, hs))
        if rsp["status"] != ST_OK:
            raise RuntimeError(f"install of {key}: status {rsp['status']}")
        c = rsp["id"]
        self._live[c] = (key, bool(hs.wscale_ok), bool(hs.sack_ok), hs.local_mac, hs.remote_mac)
        self._owned.add(key)
        return c

    async def _restore(self, conn: int) -> Restored:
        key, ws, sack, lmac, rmac = self._live[conn]
        self._owned.discard(key)
        rsp = await self._command(OP_RESTORE, conn, state=True)
        if rsp["status"] != ST_OK:
            raise RuntimeError(f"restore of {conn}: status {rsp['status']}")
        del self._live[conn]
        t = rsp["tcb"]
        return Restored.of(key, lmac, rmac, t, ts_val=rsp["ts_val"], time_us=rsp["now_us"] + self._offset,
                           rto_us=rto_of(t, self.p), wscale_ok=ws, sack_ok=sack)

    async def _host(self, op: int, conn: int, arg: int) -> dict:
        rsp = await self._command(op, conn, arg)
        if rsp["status"] != ST_OK:
            raise RuntimeError(f"command {op} on {conn}: status {rsp['status']}")
        return rsp

    async def aregisters(self) -> dict[str, int]:
        """Every counter of the engine's blocks (toe, toe_host), read over BAR0."""
        return await self.cq.counters()

    # ------------------------------------------------------------------ the Engine interface (a bridge thread's)
    def reserve(self, key: ConnKey, local_mac: str, remote_mac: str) -> int:
        return resume(self._reserve)(key, local_mac, remote_mac)

    def fence_rx(self, key: ConnKey) -> None:
        resume(self._fence_rx)(key)

    def install(self, key: ConnKey, hs: Handoff, now_us: int | None = None, conn_id: int | None = None) -> int:
        if conn_id is not None:
            raise ValueError("the hardware's table chooses the id")
        c = resume(self._install)(key, hs)
        self.counters["installs"] = self.counters.get("installs", 0) + 1
        return c

    def restore(self, conn: int, now_us: int | None = None) -> Restored:
        rec = resume(self._restore)(conn)
        self.counters["restores"] = self.counters.get("restores", 0) + 1
        return rec

    def host_send(self, conn: int, write_seq: int, now_us: int | None = None) -> None:
        resume(self._host)(OP_SEND, conn, write_seq)

    def host_read(self, conn: int, read_seq: int, now_us: int | None = None) -> None:
        resume(self._host)(OP_READ, conn, read_seq)

    def host_close(self, conn: int, now_us: int | None = None) -> None:
        resume(self._host)(OP_CLOSE, conn, 0)

    def status(self, conn: int) -> Tcb | None:
        rsp = resume(self._command)(OP_STATUS, conn, state=True)
        return rsp["tcb"] if rsp["status"] == ST_OK else None

    def state_of(self, conn: int) -> St:
        """The TCP state the NIC answers a status command with (its completion's)."""
        if conn not in self._live:
            return St.CLOSED
        rsp = resume(self._command)(OP_STATUS, conn)
        return St(rsp["tcp_state"]) if rsp["status"] == ST_OK else St.CLOSED

    def conn_of(self, key: ConnKey) -> int | None:
        return next((c for c, v in self._live.items() if v[0] == key), None)

    def registers(self) -> dict[str, int]:
        return resume(self.aregisters)()


class SharedNicEngine(SharedHwEngine):
    """SharedHwEngine on a NicEngine: the model's Engine interface for the rig's threads,
    plus the host's TX path (`host_tx`, take_host_wire) and the handoff's steps (reserve,
    fence_rx, hold_rx, release_rx). Polls the rig's calls every 200 ns of simulated time
    (50 clocks): the whole NIC simulates some 10-30 k clocks per wall second."""

    POLL_NS = 200
    PUMP_NS = 200

    def __init__(self, hw: NicEngine):
        super().__init__(hw)
        self._host_wire: list[bytes] = []

    def _move(self) -> None:
        hw = self.hw
        hw._collect()
        self.now_us = hw._hw_now() + hw._offset
        if hw.to_wire or hw.to_host or hw.notifications or hw.to_wire_host:
            with self._lock:
                self._wire += hw.take_wire()
                self._host += hw.take_host()
                self._notes += hw.take_notifications()
                self._host_wire += hw.take_host_wire()

    def host_tx(self, frame: bytes) -> None:
        """A frame from the host's stack onto its TX queue (any thread; no wait)."""
        self.hw.tx_box.append(frame)

    def take_host_wire(self) -> list[bytes]:
        with self._lock:
            out, self._host_wire = self._host_wire, []
        return out

    def reserve(self, key: ConnKey, local_mac: str, remote_mac: str) -> int:
        return self._call(self.hw.reserve, key, local_mac, remote_mac)

    def fence_rx(self, key: ConnKey) -> None:
        """Every frame the NIC steered to the host so far is in take_host()."""
        self._call(self.hw.fence_rx, key)
        self._call(self._move)

    def hold_rx(self, key: ConnKey) -> None:
        """The driver keeps `key`'s frames from the host from now on (a restore)."""
        self._call(self.hw._rx_hold.setdefault, key, [])

    def release_rx(self, key: ConnKey) -> None:
        """... and hands them on in order (the host's socket is live)."""
        def release():
            held = self.hw._rx_hold.pop(key, [])
            with self._lock:
                self._host += held
        self._call(release)

    def leaks(self) -> list[tuple[ConnKey, bytes]]:
        return list(self.hw.leaks)
