"""The hardware TCP offload engine (hw/src/offnic/toe/TcpOffload.scala) behind the exact
model's interface (toe_model.Engine), so the harnesses written for the model (toe_sim.Sim
with TcpPeers, the Linux rig) carry the simulated hardware unchanged.

The harnesses are plain blocking Python; the hardware lives in a cocotb simulation. The
harness runs in a `cocotb.task.bridge` thread and every engine call `resume`s the
simulation: time runs up to the call's `now_us` (1 clock = 1 us: cfg_cycles_per_us = 1),
the call's frame or command goes in, and the clock runs on until the engine is quiet.
What the hardware sends meanwhile (segments, frames for the host, notifications,
command answers) is collected by monitors and handed out by take_wire() and friends,
as the model does. The engine's time runs ahead of the harness's by the cycles a call
takes (tens of us per segment): later calls happen at the hardware's time.

The rings live in the AxiRam on the engine's memory port; `HwMemory` gives the harness
the model's `Memory` view of it. The engine's counters are read as a driver reads them:
through its register bus (`reg`), by walking the block chain to the `toe` block
(`registers()`).

`SharedHwEngine` is the same engine for harnesses of several threads in real time (the
Linux rig): one bridge thread owns the simulation and the hardware's clock runs free.
"""
from __future__ import annotations

import ipaddress
import logging
import queue
import threading
from collections import Counter, deque

import cocotb
from cocotb.clock import Clock
from cocotb.task import resume
from cocotb.triggers import ClockCycles, FallingEdge, First, RisingEdge, Timer
from cocotbext.axi import AxiBus, AxiRam, AxiStreamBus, AxiStreamSink, AxiStreamSource

from offnic_sim.toe import conntable_model as ctm
from offnic_sim.toe import toe_hw
from offnic_sim.host import regblocks, regs
from offnic_sim.net.eth import mac_bytes
from offnic_sim.toe.toe_model import ConnKey, EngineParams, Handoff, Memory, Outbox, Restored, St, Tcb, handoff_tcb, rto_of

# EngineOp / EngineStatus (TcpEngine.scala)
OP_INSTALL, OP_RESTORE, OP_SEND, OP_READ, OP_CLOSE, OP_STATUS = range(6)
ST_OK, ST_EXISTS, ST_FULL, ST_NOID, ST_NOTLIVE = range(5)
NOTE_NAMES = {v: k for k, v in toe_hw.NOTE_KINDS.items()}
QUIET_CYCLES = 24          # no activity for this long after a call: the engine is done with it


class HwMemory(Memory):
    """toe_model.Memory over the AxiRam: its ring arithmetic and allocator, the AxiRam's
    bytes."""

    def __init__(self, ram: AxiRam, size: int):
        self.ram = ram
        self.size = size
        self._next = 0

    def __len__(self) -> int:
        return self.size

    def read(self, addr: int, n: int) -> bytes:
        return bytes(self.ram.read(addr, n))

    def write(self, addr: int, data: bytes) -> None:
        self.ram.write(addr, data)


class HwEngine(Outbox):
    """toe_model.Engine's interface on the simulated TcpOffload. Create it and `await
    start()` in the cocotb test, then run the blocking harness with `cocotb.task.bridge`."""

    def __init__(self, dut, params: EngineParams, mem_size: int = 64 << 20, free_run: bool = False):
        super().__init__()
        self.dut = dut
        self.p = params
        self.free_run = free_run                # the clock runs on its own: calls neither advance nor wait for it
        if params.tick_us != 64 or params.ts_tick_us != 1000:
            raise ValueError("the hardware's clocks are 64 us ticks and a 1 ms timestamp clock")
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clock, dut.reset, size=mem_size)
        self.mem = HwMemory(self.ram, mem_size)
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clock, dut.reset)
        self.wire_sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_tx"), dut.clock, dut.reset)
        self.host_sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_host"), dut.clock, dut.reset)
        for x in (self.src, self.wire_sink, self.host_sink, self.ram.write_if, self.ram.read_if):
            x.log.setLevel(logging.WARNING)
        self.counters: Counter[str] = Counter()
        self.refused = 0                        # commands the hardware answered with a status other than OK
        self.tcbs: dict[int, Tcb] = {}          # (the model's; the hardware's are read by status())
        self.final: dict[int, Tcb] = {}
        self._live: dict[int, tuple[ConnKey, bool, bool, str, str]] = {}   # id -> key, wscale_ok, sack_ok, macs
        self._offset = 0                        # harness us - hardware us
        self._rsp: list[dict] = []
        self._toe_regs: regblocks.RegisterBlock | None = None

    # ------------------------------------------------------------------ set-up (async)
    async def start(self, now_us: int) -> None:
        d = self.dut
        Clock(d.clock, 4, unit="ns").start()
        d.reset.value = 1
        d.s_cmd_valid.value = 0
        d.m_rsp_ready.value = 1
        d.m_note_ready.value = 1
        for name, v in toe_hw.cfg_values(self.p).items():
            getattr(d, f"cfg_{name}").value = v
        d.cfg_cycles_per_us.value = 1
        d.reg_req_valid.value = 0
        d.cfg_hash_key.value = ctm.DEFAULT_HASH_KEY >> (ctm.HASH_KEY_BITS - len(d.cfg_hash_key))
        await ClockCycles(d.clock, 4)
        await FallingEdge(d.clock)
        d.reset.value = 0
        while not d.status_ready.value:
            await ClockCycles(d.clock, 64)
        cocotb.start_soon(self._watch())
        self._offset = now_us - self._hw_now()

    async def _watch(self) -> None:
        """Notifications and command answers (always ready): what is valid after a
        falling edge transfers at the next rising edge. One sample per clock, and none
        while neither is valid (most clocks are timers running out)."""
        d = self.dut
        while True:
            await FallingEdge(d.clock)
            await Timer(1, "ns")
            if not (d.m_note_valid.value or d.m_rsp_valid.value):
                await First(RisingEdge(d.m_note_valid), RisingEdge(d.m_rsp_valid))
                if d.clock.value:            # rose at a rising edge: sampled after the next fall
                    continue
                await Timer(1, "ns")         # rose at a falling edge: sampled 1 ns in, as above
            if d.m_note_valid.value:
                kind = NOTE_NAMES[int(d.m_note_bits_kind.value)]
                c = int(d.m_note_bits_id.value)
                if kind in ("rx", "acked"):
                    self.notifications.append((kind, c, int(d.m_note_bits_seq.value)))
                elif kind == "error":
                    self.notifications.append((kind, c, "timeout"))
                else:
                    self.notifications.append((kind, c))
                if kind == "closed":
                    self._live.pop(c, None)
            if d.m_rsp_valid.value:
                self._rsp.append(dict(status=int(d.m_rsp_bits_status.value), id=int(d.m_rsp_bits_id.value),
                                      tcb=toe_hw.read_tcb(d, "m_rsp_bits_tcb"), ts_val=int(d.m_rsp_bits_tsVal.value),
                                      now_us=int(d.m_rsp_bits_nowUs.value)))

    # ------------------------------------------------------------------ registers (as a driver)
    async def reg_read32(self, addr: int) -> int:
        """One register read on the RegBus: the request at a rising edge, the answer in
        the cycle after it (RegBus's fixed latency)."""
        d = self.dut
        await FallingEdge(d.clock)
        d.reg_req_valid.value = 1
        d.reg_req_bits_addr.value = addr >> 2
        d.reg_req_bits_write.value = 0
        d.reg_req_bits_wdata.value = 0
        d.reg_req_bits_wstrb.value = 0
        await FallingEdge(d.clock)
        d.reg_req_valid.value = 0
        if not d.reg_resp_hit.value:
            raise RuntimeError(f"register read at {addr:#x}: no block answered")
        return int(d.reg_resp_rdata.value)

    async def reg_write32(self, addr: int, value: int) -> None:
        d = self.dut
        await FallingEdge(d.clock)
        d.reg_req_valid.value = 1
        d.reg_req_bits_addr.value = addr >> 2
        d.reg_req_bits_write.value = 1
        d.reg_req_bits_wdata.value = value & 0xFFFFFFFF
        d.reg_req_bits_wstrb.value = 0xF
        await FallingEdge(d.clock)
        d.reg_req_valid.value = 0
        if not d.reg_resp_hit.value:
            raise RuntimeError(f"register write at {addr:#x}: no block answered")

    async def toe_block(self) -> regblocks.RegisterBlock:
        """The engine's register block, found by walking the chain from offset 0."""
        if self._toe_regs is None:
            found = await regblocks.discover(self.reg_read32, self.reg_write32, regs.BLOCKS)
            if "toe" not in found:
                raise RuntimeError(f"no toe register block in the chain: {sorted(found)}")
            self._toe_regs = found["toe"][0]
        return self._toe_regs

    async def aregisters(self) -> dict[str, int]:
        """Every read-only register of the engine's block (counters, connections), read
        over the register bus."""
        b = await self.toe_block()
        return {name: await b.read(name) for name, r in b.type.regs.items()
                if r.access == "ro" and name != "next"}

    def registers(self) -> dict[str, int]:
        """aregisters() from the harness's thread."""
        return resume(self.aregisters)()

    def snapshot(self) -> str:
        """The handshakes between the engine's parts (for a failure's message)."""
        d = self.dut
        out = []
        for inst, ports in (("engine", ("m_seg", "m_rxw", "m_tx", "m_note")), ("writer", ("s_cmd", "m_done")),
                            ("builder", ("s_req",))):
            for port in ports:
                try:
                    h = getattr(d, inst)
                    v, r = getattr(h, f"{port}_valid", None), getattr(h, f"{port}_ready", None)
                    out.append(f"{inst}.{port} v{v.value if v is not None else '?'} r{r.value if r is not None else '?'}")
                except AttributeError:
                    pass
        for name in ("s_axis", "m_axis_host", "m_axis_tx"):
            out.append(f"{name} v{getattr(d, name + '_tvalid').value} r{getattr(d, name + '_tready').value}")
        for inst, port in (("engine", "m_axis_seg"), ("writer", "s_axis")):
            try:
                h = getattr(d, inst)
                out.append(f"{inst}.{port} v{getattr(h, port + '_tvalid').value} r{getattr(h, port + '_tready').value}")
            except AttributeError:
                pass
        out.append(f"axi aw v{d.m_axi_awvalid.value} w v{d.m_axi_wvalid.value} b v{d.m_axi_bvalid.value} "
                   f"busy {d.status_busy.value} storeErrors {int(d.status_storeErrors.value)}")
        return ", ".join(out)

    def _hw_now(self) -> int:
        return int(self.dut.status_nowUs.value)

    # ------------------------------------------------------------------ the clock (async)
    async def _run_to(self, now_us: int) -> None:
        if self.free_run:
            return
        ahead = now_us - self._offset - self._hw_now()
        if ahead > 0:                        # (one timer, not a count of edges)
            await Timer(4 * ahead - 1, "ns")
            await RisingEdge(self.dut.clock)
        self._collect()

    async def _quiet(self) -> None:
        d = self.dut
        calm = 0
        while calm < QUIET_CYCLES:
            await RisingEdge(d.clock)
            busy = (not self.src.idle() or d.status_busy.value or d.m_axis_tx_tvalid.value
                    or d.m_axis_host_tvalid.value or d.s_axis_tvalid.value or d.m_axi_arvalid.value
                    or d.m_axi_rvalid.value or d.m_axi_awvalid.value or d.m_axi_wvalid.value
                    or d.m_axi_bvalid.value)
            calm = 0 if busy else calm + 1
        self._collect()

    def _collect(self) -> None:
        for sink, out in ((self.wire_sink, self.to_wire), (self.host_sink, self.to_host)):
            while not sink.empty():
                out.append(bytes(sink.recv_nowait().tdata))

    async def _frame(self, frame: bytes, now_us: int) -> None:
        await self._run_to(now_us)
        await self.src.send(frame)
        await self.src.wait()
        await self._quiet()

    async def _command(self, op: int, conn: int = 0, arg: int = 0, tcb: Tcb | None = None,
                       addr: dict | None = None, now_us: int | None = None, quiet: bool = True) -> dict:
        d = self.dut
        if now_us is not None:
            await self._run_to(now_us)
        await FallingEdge(d.clock)
        d.s_cmd_bits_op.value = op
        d.s_cmd_bits_id.value = conn
        d.s_cmd_bits_arg.value = arg & 0xFFFFFFFF
        toe_hw.drive_tcb(d, "s_cmd_bits_tcb", tcb or Tcb())
        for k, v in (addr or dict.fromkeys(("dstMac", "srcMac", "srcIp", "dstIp", "sport", "dport"), 0)).items():
            getattr(d, f"s_cmd_bits_addr_{k}").value = v
        d.s_cmd_valid.value = 1
        while True:
            await Timer(1, "ns")
            taken = bool(d.s_cmd_ready.value)
            await FallingEdge(d.clock)
            if taken:
                break
        d.s_cmd_valid.value = 0
        while not self._rsp:
            await RisingEdge(d.clock)
        rsp = self._rsp.pop(0)
        if rsp["status"] != ST_OK:
            self.refused += 1
        if quiet and not self.free_run:
            await self._quiet()
        return rsp

    # ------------------------------------------------------------------ async use (benches)
    async def command(self, op: int, conn: int = 0, arg: int = 0, tcb: Tcb | None = None,
                      addr: dict | None = None, quiet: bool = True) -> dict:
        """One command and its answer (quiet: and run until the engine is quiet)."""
        return await self._command(op, conn, arg, tcb, addr, quiet=quiet)

    async def ainstall(self, key: ConnKey, hs: Handoff, quiet: bool = True) -> int:
        rsp = await self._command(OP_INSTALL, 0, hs.ts_val if hs.timestamps else 0, handoff_tcb(hs, self.p),
                                  _addr(key, hs), quiet=quiet)
        if rsp["status"] != ST_OK:
            raise RuntimeError(f"install of {key}: status {rsp['status']}")
        self._live[rsp["id"]] = (key, bool(hs.wscale_ok), bool(hs.sack_ok), hs.local_mac, hs.remote_mac)
        return rsp["id"]

    async def settle(self) -> None:
        """Run until the engine is quiet."""
        await self._quiet()

    def settle_sync(self) -> None:
        """settle() from the harness's thread."""
        resume(self._quiet)()

    # ------------------------------------------------------------------ toe_model.Engine's interface
    def install(self, key: ConnKey, hs: Handoff, now_us: int | None = None, conn_id: int | None = None) -> int:
        if conn_id is not None:
            raise ValueError("the hardware's table chooses the id")
        t = handoff_tcb(hs, self.p)
        rsp = resume(self._command)(OP_INSTALL, 0, hs.ts_val if hs.timestamps else 0, t, _addr(key, hs), now_us)
        if rsp["status"] != ST_OK:
            raise RuntimeError(f"install of {key}: status {rsp['status']}")
        c = rsp["id"]
        self._live[c] = (key, bool(hs.wscale_ok), bool(hs.sack_ok), hs.local_mac, hs.remote_mac)
        self.counters["installs"] += 1
        return c

    def restore(self, conn: int, now_us: int | None = None) -> Restored:
        key, ws, sack, lmac, rmac = self._live[conn]
        rsp = resume(self._command)(OP_RESTORE, conn, now_us=now_us)
        if rsp["status"] != ST_OK:
            raise RuntimeError(f"restore of {conn}: status {rsp['status']}")
        del self._live[conn]
        self.counters["restores"] += 1
        t = rsp["tcb"]
        return Restored.of(key, lmac, rmac, t, ts_val=rsp["ts_val"], time_us=rsp["now_us"] + self._offset,
                           rto_us=rto_of(t, self.p), wscale_ok=ws, sack_ok=sack)

    def segment_in(self, frame: bytes, now_us: int) -> None:
        resume(self._frame)(frame, now_us)

    def poll(self, now_us: int) -> None:
        """With no connection installed the clock waits (the next command catches it up):
        the peers' TIME_WAITs after the last connection cost no cycles."""
        if self._live:
            resume(self._run_to)(now_us)

    def host_send(self, conn: int, write_seq: int, now_us: int | None = None) -> None:
        self._host(OP_SEND, conn, write_seq, now_us)

    def host_read(self, conn: int, read_seq: int, now_us: int | None = None) -> None:
        self._host(OP_READ, conn, read_seq, now_us)

    def host_close(self, conn: int, now_us: int | None = None) -> None:
        self._host(OP_CLOSE, conn, 0, now_us)

    def _host(self, op: int, conn: int, arg: int, now_us: int | None) -> None:
        rsp = resume(self._command)(op, conn, arg, now_us=now_us)
        if rsp["status"] != ST_OK:
            raise RuntimeError(f"command {op} on {conn}: status {rsp['status']}")

    def status(self, conn: int) -> Tcb | None:
        rsp = resume(self._command)(OP_STATUS, conn)
        return rsp["tcb"] if rsp["status"] == ST_OK else None

    def state_of(self, conn: int) -> St:
        if conn not in self._live:
            return St.CLOSED
        t = self.status(conn)
        return St(t.state) if t is not None else St.CLOSED

    def conn_of(self, key: ConnKey) -> int | None:
        return next((c for c, v in self._live.items() if v[0] == key), None)

    def next_deadline_us(self) -> int | None:
        """The hardware's timers run on their own: poll each millisecond while a
        connection is installed."""
        return self._hw_now() + self._offset + 1000 if self._live else None


def _addr(key: ConnKey, hs: Handoff) -> dict:
    """A connection's ConnAddr ports."""
    return dict(dstMac=int.from_bytes(mac_bytes(hs.remote_mac), "big"),
                srcMac=int.from_bytes(mac_bytes(hs.local_mac), "big"),
                srcIp=int(ipaddress.IPv4Address(key.local_ip)), dstIp=int(ipaddress.IPv4Address(key.remote_ip)),
                sport=key.local_port, dport=key.remote_port)


class _Job:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args
        self.done = threading.Event()
        self.value = self.error = None


class SharedHwEngine:
    """HwEngine for a harness of several threads in real time (the Linux rig): the
    model's Engine interface, callable from any thread.

    cocotb lets only a bridge thread drive the simulation, and the simulation stands
    still while that thread runs plain Python. So `serve()` is the one bridge thread: it
    takes the harness's calls from a queue and runs each on the HwEngine, and while
    there is none it lets the clock run. The hardware's clock runs free (1 clock = 1 us
    of the engine's time, however fast the simulation goes: 4-36 k clocks per wall
    second in the Linux rig, 30-250 times slower than the wall clock): scale the
    engine's timers, and any times handed over from the wall clock, to that. Frames
    from the wire are queued and go in as the hardware takes them, without waiting for
    an answer, so back-to-back segments pipeline as they would on a port; what the
    engine sends is collected every few clocks and handed out by take_wire() and
    friends."""

    POLL_NS = 32             # while no call waits, check for one this often (8 clocks)
    PUMP_NS = 16             # frames in and out every 4 clocks

    def __init__(self, hw: HwEngine):
        if not hw.free_run:
            raise ValueError("SharedHwEngine needs HwEngine(free_run=True)")
        self.hw = hw
        self.mem = hw.mem
        self.p = hw.p
        self.counters = hw.counters
        self.now_us = 0
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._inbox: deque[bytes] = deque()
        self._lock = threading.Lock()
        self._wire: list[bytes] = []
        self._host: list[bytes] = []
        self._notes: list[tuple] = []
        self._stopped = False

    # ------------------------------------------------------------------ the simulation's side
    async def start(self, now_us: int) -> None:
        await self.hw.start(now_us)
        cocotb.start_soon(self._pump())

    async def _pump(self) -> None:
        """Every 4 clocks: queued frames into the source, what came out into the shared lists."""
        hw = self.hw
        while True:
            await Timer(self.PUMP_NS, "ns")
            while self._inbox:
                hw.src.send_nowait(self._inbox.popleft())
            self._move()

    def _move(self) -> None:
        hw = self.hw
        hw._collect()
        self.now_us = hw._hw_now() + hw._offset
        if hw.to_wire or hw.to_host or hw.notifications:
            with self._lock:
                self._wire += hw.take_wire()
                self._host += hw.take_host()
                self._notes += hw.take_notifications()

    async def _run_free(self) -> None:
        while self._jobs.empty() and not self._stopped:
            await Timer(self.POLL_NS, "ns")

    def serve(self) -> None:
        """The bridge thread's loop (`await bridge(shared.serve)()`), until stop()."""
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                if self._stopped:
                    return
                resume(self._run_free)()
                continue
            try:
                job.value = job.fn(*job.args)
            except BaseException as e:        # handed to the caller
                job.error = e
            job.done.set()

    def stop(self) -> None:
        self._stopped = True

    def _call(self, fn, *args):
        if self._stopped:
            raise RuntimeError("the simulation has stopped serving")
        job = _Job(fn, args)
        self._jobs.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.value

    # ------------------------------------------------------------------ toe_model.Engine's interface
    def install(self, key: ConnKey, hs: Handoff, now_us: int | None = None, conn_id: int | None = None) -> int:
        return self._call(self.hw.install, key, hs, None, conn_id)

    def restore(self, conn: int, now_us: int | None = None) -> Restored:
        return self._call(self.hw.restore, conn, None)

    def host_send(self, conn: int, write_seq: int, now_us: int | None = None) -> None:
        self._call(self.hw.host_send, conn, write_seq)

    def host_read(self, conn: int, read_seq: int, now_us: int | None = None) -> None:
        self._call(self.hw.host_read, conn, read_seq)

    def host_close(self, conn: int, now_us: int | None = None) -> None:
        self._call(self.hw.host_close, conn)

    def status(self, conn: int) -> Tcb | None:
        return self._call(self.hw.status, conn)

    def registers(self) -> dict[str, int]:
        """The engine's counters and connection counts, read over its register bus."""
        return self._call(self.hw.registers)

    def refused(self) -> int:
        """Commands the hardware refused (a status other than OK), as the caller saw them."""
        return self.hw.refused

    tcb = status

    def state_of(self, conn: int) -> St:
        return self._call(self.hw.state_of, conn)

    def conn_of(self, key: ConnKey) -> int | None:
        return self._call(self.hw.conn_of, key)

    def segment_in(self, frame: bytes, now_us: int | None = None) -> None:
        self._inbox.append(frame)

    def poll(self, now_us: int | None = None) -> None:
        """The clock runs on its own: nothing to do."""

    def settle(self) -> None:
        """Wait until the frames queued so far are in and the engine is quiet."""
        async def quiet():
            while self._inbox or not self.hw.src.idle():
                await Timer(self.POLL_NS, "ns")
            await self.hw._quiet()
            self._move()
        self._call(resume(quiet))

    def take_wire(self) -> list[bytes]:
        with self._lock:
            out, self._wire = self._wire, []
        return out

    def take_host(self) -> list[bytes]:
        with self._lock:
            out, self._host = self._host, []
        return out

    def take_notifications(self) -> list[tuple]:
        with self._lock:
            out, self._notes = self._notes, []
        return out

    @property
    def to_wire(self) -> list[bytes]:
        return self._wire

    @property
    def to_host(self) -> list[bytes]:
        return self._host

    @property
    def notifications(self) -> list[tuple]:
        return self._notes
