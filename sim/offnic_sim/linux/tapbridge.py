"""Bridges a TapPort (real Linux in a namespace) to a simulated Ethernet port inside a
cocotb test, with an optional Impair stage per direction.

cocotb's scheduler is not an asyncio loop, and a blocking read would stop simulated time
(a `cocotb.bridge` thread must finish or block in `cocotb.resume` before the simulator
runs again), so the Linux -> simulation direction polls: a non-blocking read of the TAP,
and when nothing is waiting, `await Timer(poll_ns)`. Linux answers in wall-clock time
independent of simulated time; the poll interval only bounds how much simulated time
passes between a frame's arrival at the TAP and its entry into the port (a few hundred
ns costs little simulation effort and is far below any protocol timer). The simulation
-> Linux direction needs no polling: it awaits the port's sink and writes to the TAP,
which Linux processes synchronously.

cocotb is imported inside the coroutines, so this module imports anywhere.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable

from offnic_sim.linux.linuxnet import Impair, TapPort

Send = Callable[[bytes], Awaitable[None]]   # hands one Ethernet frame (no FCS) to the port
Recv = Callable[[], Awaitable[bytes]]       # the port's next frame (no FCS)


def _now_ns() -> float:
    from cocotb.simtime import get_sim_time
    return get_sim_time("ns")


async def pump_tap_to_sim(tap: TapPort, send: Send, *, impair: Impair | None = None, poll_ns: float = 200.0) -> None:
    """Forever: frames Linux sends on `tap` -> (impair) -> send(). Run with cocotb.start_soon;
    cancel the task to stop. Time-based impairment uses simulated nanoseconds."""
    from cocotb.triggers import Timer
    while True:
        frame = tap.read_frame()
        if impair is not None:
            now = _now_ns()
            frames = impair.poll(now) if frame is None else impair.push(frame, now)
        else:
            frames = [] if frame is None else [frame]
        for f in frames:
            await send(f)
        if frame is None:
            await Timer(poll_ns, unit="ns")


async def pump_sim_to_tap(recv: Recv, tap: TapPort, *, impair: Impair | None = None) -> None:
    """Forever: frames from the simulated port -> (impair) -> Linux."""
    while True:
        frame = await recv()
        frames = [frame] if impair is None else impair.push(frame, _now_ns())
        for f in frames:
            tap.write_frame(f)


def xgmii_endpoints(source, sink) -> tuple[Send, Recv]:
    """send/recv for cocotbext-eth's XgmiiSource/XgmiiSink (FCS added and stripped; frames
    with a bad FCS are dropped here, as a real MAC would)."""
    from cocotbext.eth import XgmiiFrame

    async def send(frame: bytes) -> None:
        await source.send(XgmiiFrame.from_payload(frame))

    async def recv() -> bytes:
        while True:
            f = await sink.recv()
            if f.check_fcs():
                return bytes(f.get_payload())

    return send, recv


class TapBridge:
    """Both pumps as cocotb tasks: `bridge = TapBridge(tap, send, recv); bridge.start();
    ...; bridge.stop()`. `to_sim` / `to_linux` are the optional Impair stages."""

    def __init__(self, tap: TapPort, send: Send, recv: Recv, *, to_sim: Impair | None = None,
                 to_linux: Impair | None = None, poll_ns: float = 200.0):
        self.tap, self.send, self.recv = tap, send, recv
        self.to_sim, self.to_linux = to_sim, to_linux
        self.poll_ns = poll_ns
        self._tasks = []

    def start(self) -> "TapBridge":
        import cocotb
        self._tasks = [cocotb.start_soon(pump_tap_to_sim(self.tap, self.send, impair=self.to_sim,
                                                         poll_ns=self.poll_ns)),
                       cocotb.start_soon(pump_sim_to_tap(self.recv, self.tap, impair=self.to_linux))]
        return self

    async def flush(self) -> None:
        """Release the frames the Impair stages still hold (end of a phase)."""
        if self.to_sim is not None:
            for f in self.to_sim.flush():
                await self.send(f)
        if self.to_linux is not None:
            for f in self.to_linux.flush():
                self.tap.write_frame(f)

    def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        self._tasks = []
