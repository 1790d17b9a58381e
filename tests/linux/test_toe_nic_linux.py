"""Real Linux connections handed to the TCP engine inside the whole NIC (issue 17,
"Software in simulation"): test_toe_hw_linux's scenarios with the nic-toe build on the
fast harness (PCIe with the C++ host model, host memory behind 1 us reads, XGMII ports)
where the engine block was.

The rig is the model test's (namespaces A and B on TAPs, the Python wire, the checked
byte streams), with the NIC between them: A is the host, its frames go onto the NIC's TX
queue through the driver model and the NIC's RX completions come back to it through the
TAP; B is the far end on port 0's wire, with the model rig's loss, duplication and
reordering between it and the NIC (both ways, every frame). The rig's Nic drives the NIC
through `toe_nicengine.SharedNicEngine`: commands as TX-queue descriptors (ToeQueue),
notifications as events, each connection's rings in host memory.

Nobody holds the wire. A handoff is the NIC's two-phase install: reserve (from its
answer the NIC holds the connection's segments), the RX path drained to A (every frame
steered to the host before the answer delivered), freeze and release A's socket
(TCP_REPAIR), complete. A restore: the driver holds the connection's received frames from
the restore command until the restored socket is live, then hands them on.

Checked besides the scenarios' own checks: the NIC's counters against the rig's counts
(test_toe_model_linux.check_engine_registers: inserts, deletes, closes, resets, every
engine segment seen on the wire, every steered segment decided or dropped at the
NIC-packet queue's bound and counted); no frame of an offloaded connection reached the
host's RX queue while it was installed; every host frame queued left port 0 intact, no TX
or RX error; and a host connection beside them (an echo between A and B, not offloaded)
kept working throughout, while connections were offloaded too.

Time: the NIC simulates some 10-30 k clocks per wall second; as in test_toe_hw_linux the
engine's microsecond is one clock and its timers and the RTTs handed over are scaled.
Needs root (skips otherwise). Seeds: OFFNIC_SEED (printed by the harness).
"""
from __future__ import annotations

import random
import socket
import threading
import time

import cocotb
import pytest
from cocotb.task import bridge

from offnic_sim.fast.fast_tb import FastNicTB
from offnic_sim.harness import hw
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.linux import linuxnet
from offnic_sim.linux.tcprepair import freeze, release, restore
from offnic_sim.toe.toe_model import ConnKey
from offnic_sim.toe.toe_nicengine import NicEngine, SharedNicEngine

from test_tcprepair import A_MAC, B_MAC, handshake
from test_toe_hw_linux import SCENARIOS, SIZE, SLOW, params
from test_toe_model_linux import Nic, Rig

REASON = linuxnet.unavailable_reason()
needs_linux = pytest.mark.skipif(REASON is not None, reason=f"real Linux networking unavailable: {REASON}")

CONFIG = "nic-toe"
RTT_SCALE = 0.015        # the engine's microseconds per wall-clock one, roughly (one clock each, 10-20 k/s)
ECHO_PORT = 5900         # the host connection beside the offloaded ones
ECHO_BYTES = 2000
ECHO_PAUSE_S = 0.05


class Echo:
    """A host connection A -> B that stays with the host: A sends a message, B echoes it,
    A checks it, again and again until stopped (rounds: how many, and how many while a
    connection was offloaded)."""

    def __init__(self, na, nb, nic: "NicRig", seed: int):
        self.nic = nic
        self.a, self.b = handshake(na, nb, port=ECHO_PORT)
        self.a.settimeout(60)
        self.b.settimeout(60)
        self.rng = random.Random(seed)
        self.rounds = self.rounds_offloaded = 0
        self.error: str | None = None
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=f, name=n, daemon=True)
                         for f, n in ((self._a, "echo-a"), (self._b, "echo-b"))]
        for t in self._threads:
            t.start()

    def _a(self) -> None:
        try:
            while not self._stop.is_set():
                msg = self.rng.randbytes(ECHO_BYTES)
                self.a.sendall(msg)
                got = b""
                while len(got) < len(msg):
                    d = self.a.recv(len(msg) - len(got))
                    if not d:
                        raise OSError("echo: EOF")
                    got += d
                if got != msg:
                    raise AssertionError(f"echo round {self.rounds}: the echo differs")
                self.rounds += 1
                if self.nic.apps:
                    self.rounds_offloaded += 1
                self._stop.wait(ECHO_PAUSE_S)
        except BaseException as e:          # noqa: BLE001 (checked by the test)
            if not self._stop.is_set():
                self.error = repr(e)

    def _b(self) -> None:
        try:
            while not self._stop.is_set():
                d = self.b.recv(1 << 16)
                if not d:
                    return
                self.b.sendall(d)
        except OSError as e:
            if not self._stop.is_set():
                self.error = repr(e)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(5)


class NicRig(Nic):
    """The rig's Nic with the whole NIC: A's frames through its TX queue, what leaves
    port 0 (the host's frames and the engine's) impaired on to B, the NIC's handoff."""

    def __init__(self, wire, **kw):
        super().__init__(wire, **kw)
        self.echo = Echo(wire.taps["ab"].ns, wire.taps["ba"].ns, self, seed=kw.get("seed", 0))

    def close(self) -> None:
        self.echo.stop()
        super().close()

    def _hook(self, way: str, frame: bytes) -> bool:
        if way == "ab":                        # A's frame: onto the NIC's TX queue
            self.seen["host_tx"] += 1
            self.eng.host_tx(frame)
            return True
        return super()._hook(way, frame)

    def _drain(self) -> None:
        super()._drain()
        for f in self.eng.take_host_wire():   # A's frames as they left port 0
            self.seen["host_out"] += 1
            self._impair("b", f)

    def hand_off(self, wire, sock: socket.socket, sa):
        """Reserve, the RX path drained into A, freeze and release A's socket, complete."""
        sa.park()
        key = ConnKey(*sock.getsockname(), *sock.getpeername())
        self.eng.reserve(key, A_MAC, B_MAC)
        self.eng.fence_rx(key)
        with self.lock:
            self._drain()                      # (a TAP write is taken by Linux at once)
        state = freeze(sock)
        release(sock)
        return self.install(state, sa.tx, sa.rx, sa.tx_pos, sa.rx_pos)

    def take_back(self, wire, na, app, sa) -> socket.socket:
        """The connection's frames held by the driver from the restore command until the
        restored socket is live."""
        t = self.templates[app.conn]
        key = ConnKey(t.local_ip, t.local_port, t.remote_ip, t.remote_port)
        self.eng.hold_rx(key)
        rec, st = self.restore(app)
        a2 = restore(na, st)
        sa.tx_pos, sa.rx_pos = app.tx_pos, app.rx_pos
        sa.resume(a2)
        self.eng.release_rx(key)
        with self.lock:
            self._drain()
        return a2


async def carry(dut, scenario) -> None:
    """Run `scenario(rig)` in a thread against the whole NIC; this coroutine serves the
    NIC until the scenario ends, then checks what the NIC did besides."""
    tb = FastNicTB(dut)
    nic_hw = NicEngine(tb, params(), local_mac=A_MAC)
    eng = SharedNicEngine(nic_hw)
    await eng.start(time.monotonic_ns() // 1000)
    nics: list[NicRig] = []

    def make(wire, **kw):
        nics.append(NicRig(wire, engine=eng, poll_s=0.002, rtt_scale=RTT_SCALE, **kw))
        return nics[-1]

    rig = Rig(make_nic=make, slow=SLOW, size=SIZE, holds_wire=False)
    out: dict = {}

    def body():
        try:
            out["value"] = scenario(rig)
            eng.settle()
        except BaseException as e:            # raised in the test below
            out["error"] = e
        finally:
            eng.stop()

    t0, c0 = time.monotonic(), nic_hw._hw_now()
    th = threading.Thread(target=body, name="rig", daemon=True)
    th.start()
    await bridge(eng.serve)()
    th.join(10)
    secs, cycles = time.monotonic() - t0, nic_hw._hw_now() - c0
    if "error" in out:
        if hasattr(out["error"], "add_note"):
            out["error"].add_note(f"NIC: {await tb.snapshot()}")
        raise out["error"]
    r = await nic_hw.aregisters()
    dut._log.info(f"{scenario.__name__}: {secs:.1f} s wall, {cycles} clocks ({cycles / secs / 1e3:.1f} k/s); "
                  f"host frames {nic_hw.host_tx_frames} out, {nic_hw.rx_frames} in, {nic_hw.rx_held} held by the "
                  f"driver at restores; Qlen at each complete {nic_hw.held_at_complete}; echo rounds (all, while offloaded) "
                  f"{[(n.echo.rounds, n.echo.rounds_offloaded) for n in nics]}; fence timeouts "
                  f"{nic_hw.fence_timeouts}; NIC: steered to the engine {r['steer_to_engine']}, to the host "
                  f"{r['steer_to_host']}, NIC-packet drops {r['nicq_drops']}, stale {r['seg_stale_drops']}, "
                  f"engine segments {r['tx_segments']}, commands {r['cmdq_commands']}, events {r['notes_evented']} "
                  f"({r['notes_merged']} merged)")
    assert not nic_hw.leaks, f"frames of installed connections reached the host: {nic_hw.leaks[:3]}"
    assert nic_hw.host_tx_pending() == 0 and nic_hw.tx_errors == 0 and nic_hw.rx_errors == 0, \
        (nic_hw.host_tx_pending(), nic_hw.tx_errors, nic_hw.rx_errors)
    for n in nics:
        assert n.echo.error is None, n.echo.error
        assert n.echo.rounds_offloaded > 0, "the host connection made no round while a connection was offloaded"


@cocotb.test()
async def mid_transfer(dut):
    await carry(dut, SCENARIOS["mid_transfer"])


@cocotb.test()
async def lossy(dut):
    await carry(dut, SCENARIOS["lossy"])


@cocotb.test()
async def closes(dut):
    await carry(dut, SCENARIOS["closes"])


def hostile_then_rst_scenario(rig):
    from test_toe_model_linux import hostile_then_rst
    # A's stream longer than its ring: with the hardware rig's 157 KB, A's application had put
    # all of it in the ring and the NIC carried both streams to their ends before the attack
    return hostile_then_rst(rig, sizes=(1_500_000, 300_000))


@cocotb.test()
async def hostile_then_rst(dut):
    await carry(dut, hostile_then_rst_scenario)


@cocotb.test()
async def zero_windows(dut):
    await carry(dut, SCENARIOS["zero_windows"])


@cocotb.test()
async def near_wrap(dut):
    await carry(dut, SCENARIOS["near_wrap"])


def many_scenario(rig):
    from test_toe_model_linux import many_connections
    # a dozen, not the hardware rig's two dozen: through the whole NIC 24 took 2-5 minutes
    # (Linux's RTOs after a lost FIN back off to seconds here), over the suite's budget
    return many_connections(12, rig, sizes=(100_000, 80_000), warm=5_000, far=20_000)


@cocotb.test()
async def many(dut):
    await carry(dut, many_scenario)


@needs_linux
@pytest.mark.parametrize("case", ["mid_transfer", "lossy", "closes", "hostile_then_rst", "zero_windows", "near_wrap",
                                  "many"])
def test_toe_nic_linux(case):
    run_cocotb(hw.load_config(CONFIG)[0], __name__, testcase=case, fast=True)
