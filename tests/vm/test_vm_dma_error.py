"""DMA errors injected under offnic.ko in a VM (issue 19): the host side of the simulated
PCIe link answers the NIC's reads with Unsupported Request (sim/fastsim PcieHost's read
faults, vm/nic_device.py `set_read_faults`), as a root complex answers a read its IOMMU
refuses. What the NIC does with that (hw, docs/queues.md): a failed packet read completes
`DMA_ERROR` and nothing is sent; a failed descriptor fetch stops the queue with
`status.error` and no event. What the driver must do: count the first as a TX error, and
find and restart the stopped queues (offnic_health.c); the kernel keeps running and
traffic works afterwards.

One VM boot, two phases, the guest and the host taking turns. The guest cannot be
released over the network (while packet reads fail it cannot answer a connection), so it
polls a register with `offnic-ctl read` (BAR0 reads need no DMA): the fw block's mailbox
word cmd_15, which the firmware reads only when a doorbell rings and the host writes as
a turn counter:
1. packet reads fail, descriptor rings exempt: the guest's pings complete DMA_ERROR;
2. every read fails while the guest pings and the peer sends to the guest: TX and RX
   descriptor fetches fail and stop queues; the fault is lifted, the driver restarts
   them, pings work and 24 UDP flows all arrive, each on the RX queue the RSS reference
   model names for the NIC's key and the driver's default table.

Marked `vm`; needs root and the VM pieces (tests/vm/test_vm.py says more).
"""
import re
import subprocess
import sys
from pathlib import Path

import cocotb
import pytest

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.vm import guest_output, image, session
from offnic_sim.vm.session import PeerSpec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "offload"))   # rss_model

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
REASON = image.unavailable_reason()
pytestmark = [pytest.mark.vm, pytest.mark.skipif(REASON is not None, reason=f"VM unavailable: {REASON}")]

GUEST_RAM = session.GUEST_MB << 20
FLOWS, FLOW_PORT0 = 24, 41000
FAULTED_READS = 20     # phase 2 lasts until this many reads failed

SCRIPT = r"""
set -u
insmod /lib/offnic.ko || { echo "insmod failed"; exit 10; }
n=0; while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 60 ]; do sleep 1; n=$((n+1)); done
ip link set eth0 up || exit 11
ip addr add 192.0.2.2/24 dev eth0
ping -c 2 -W 60 -w 240 192.0.2.1 || exit 12
turn=$(( $(offnic-ctl blocks | awk '$2 == "fw" {print $1}') + 0xbc ))
wait_turn() {
  n=0; until [ $(( $(offnic-ctl read $turn) )) -ge $1 ]; do n=$((n+1)); [ $n -ge 600 ] && exit 9; sleep 1; done
}
echo "PHASE1"
wait_turn 1
ping -c 3 -W 5 192.0.2.1; echo "PING1-RC $?"
echo "PHASE1-DONE"
wait_turn 2
ethtool -S eth0 | grep -e nic_tx_dma_errors -e nic_dma_rd_err_status
echo "TXERR $(cat /sys/class/net/eth0/statistics/tx_errors)"
ping -c 2 -W 60 -w 240 192.0.2.1 || exit 15
echo "PHASE2"
wait_turn 3
ping -c 3 -W 5 192.0.2.1; echo "PING2-RC $?"
echo "PHASE2-DONE"
wait_turn 4
n=0; while [ $n -lt 120 ]; do dmesg | grep -q "TX queue .*restarting" && break; sleep 1; n=$((n+1)); done
ping -c 3 -W 60 -w 240 192.0.2.1 || exit 18
echo "RSS-NOW"
ethtool -x eth0
np0=$(awk '/^Udp: [0-9]/ {print $3}' /proc/net/snmp)
echo "RSS-BEFORE"
ethtool -S eth0 | grep rxq
echo "FLOWS-READY"
n=0; while [ $n -lt 300 ]; do np=$(awk '/^Udp: [0-9]/ {print $3}' /proc/net/snmp); [ $((np - np0)) -ge %(flows)d ] && break; sleep 1; n=$((n+1)); done
echo "UDP-AFTER $((np - np0))"
echo "RSS-AFTER"
ethtool -S eth0 | grep rxq
ethtool -S eth0 | grep -e restarts -e desc_fetch -e dma_err -e rd_err -e drop
offnic-ctl queues
dmesg | grep -i offnic | tail -20
""" % {"flows": FLOWS}


def _send_flows(ns, port0: int, count: int) -> None:
    code = (f"import socket\nfor i in range({count}):\n"
            f"    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('192.0.2.1', {port0} + i))\n"
            f"    s.sendto(bytes(64), ('192.0.2.2', 9)); s.close()\n")
    subprocess.run(["ip", "netns", "exec", ns.name, sys.executable, "-c", code], check=True)


@cocotb.test()
async def dma_errors(dut):
    """Packet-read errors, then descriptor-fetch errors on TX and RX, under traffic; the
    driver counts the first, restarts the queues the second stopped, and the kernel and
    traffic survive (pings, and UDP flows on the queues RSS picks, afterwards)."""
    from cocotb.triggers import Timer
    from offnic_sim.host import regs
    from rss_model import toeplitz, tuple_bytes
    seen = {}

    async def wait_for(ctx, marker: str) -> None:
        while marker not in ctx["console"]():
            await Timer(20, unit="us")

    async def host_side(ctx):
        dev, ns = ctx["device"], ctx["ns"][0]
        turn_reg = dev.blocks[regs.FW.type_id][0] + regs.FW.regs["cmd_15"].offset

        def give_turn(n: int) -> None:
            dev.bar_write(0, turn_reg, n.to_bytes(4, "little"))

        await wait_for(ctx, "PHASE1")
        # phase 1: the rings (TX and RX queues' descriptors) exempt, every other read fails
        rules = []
        for block in (regs.TX_QUEUES, regs.RX_QUEUES):
            lo = await dev.read_records(block, "base_lo")
            hi = await dev.read_records(block, "base_hi")
            ctrl = await dev.read_records(block, "control")
            rules += [((h << 32) | l, 16 << (c & 0xF), False) for l, h, c in zip(lo, hi, ctrl) if c & (1 << 8)]
        seen["exempt"] = len(rules)
        dev.set_read_faults(rules + [(0, GUEST_RAM, True)])
        f0 = dev.faulted_reads
        give_turn(1)
        await wait_for(ctx, "PHASE1-DONE")
        dev.set_read_faults([])
        seen["faulted1"] = dev.faulted_reads - f0
        give_turn(2)
        # phase 2: every read fails while the guest pings and the peer sends to every RX queue
        await wait_for(ctx, "PHASE2")
        dev.set_read_faults([(0, GUEST_RAM, True)])
        f0 = dev.faulted_reads
        give_turn(3)
        _send_flows(ns, FLOW_PORT0, 40)
        await wait_for(ctx, "PHASE2-DONE")
        while dev.faulted_reads - f0 < FAULTED_READS and "offnic-vm: script exit" not in ctx["console"]():
            await Timer(20, unit="us")
        dev.set_read_faults([])
        seen["faulted2"] = dev.faulted_reads - f0
        give_turn(4)
        await wait_for(ctx, "FLOWS-READY")
        _send_flows(ns, FLOW_PORT0 + 100, FLOWS)

    out = await session.run(dut, SCRIPT, [PeerSpec("192.0.2.1/24")], name="dmaerr", timeout_s=1200, during=host_side)
    print("---- guest console ----\n" + out.console[-7000:] + "\n---- end ----")
    dut._log.info(f"vm: guest exit {out.exit_code}; {out.wall_s:.1f} s wall; host: {seen}; {out.stats}")
    assert out.exit_code == 0, f"guest script exit {out.exit_code}"
    assert "Call Trace" not in out.console and "BUG" not in out.console
    ctr = {k: int(v) for k, v in re.findall(r"^\s+(\w+): (\d+)$", out.console, re.M)}
    # phase 1: packet reads failed, descriptors did not: DMA_ERROR completions, counted as TX errors
    assert seen.get("exempt", 0) >= 5 and seen.get("faulted1", 0) >= 1, seen
    assert "PING1-RC 0" not in out.console, "pings answered while every packet read failed"
    assert ctr.get("nic_tx_dma_errors", 0) >= 1, ctr
    m = re.search(r"^TXERR (\d+)$", out.console, re.M)
    assert m and int(m.group(1)) >= 1, "the driver did not count the DMA_ERROR completions as TX errors"
    # phase 2: descriptor fetches failed and stopped queues; the driver restarted them
    assert seen.get("faulted2", 0) >= FAULTED_READS, seen
    assert ctr.get("nic_tx_desc_fetch_errors", 0) >= 1 and ctr.get("tx_queue_restarts", 0) >= 1, ctr
    if ctr.get("nic_rx_desc_fetch_errors", 0):
        assert ctr.get("rx_queue_restarts", 0) >= 1, ctr
    assert "ERROR" not in out.console.split("FLOWS-READY", 1)[-1], "a queue is still stopped"
    # afterwards: pings, and every flow arrived (RSS spreads them over all RX queues)
    m = re.search(r"^UDP-AFTER (\d+)$", out.console, re.M)
    assert m and int(m.group(1)) >= FLOWS, "UDP datagrams lost after the recovery"
    # ... each on the RX queue the RSS model names for the NIC's key and the driver's table
    key, table = guest_output.rss_key(out.console, "RSS-NOW"), guest_output.indir_table(out.console, "RSS-NOW")
    want = {q: 0 for q in range(8)}
    for i in range(FLOWS):
        want[table[toeplitz(key, tuple_bytes("192.0.2.1", "192.0.2.2", FLOW_PORT0 + 100 + i, 9)) % len(table)]] += 1
    before = guest_output.rxq_packets(out.console, "RSS-BEFORE")
    after = guest_output.rxq_packets(out.console, "RSS-AFTER")
    got = {q: after.get(q, 0) - before.get(q, 0) for q in range(8)}
    dut._log.info(f"after the recovery: frames per RX queue {got}, the RSS model's {want} (key {key.hex()})")
    assert all(got[q] == want[q] for q in range(1, 8)) and got[0] >= want[0], f"per-queue {got} != model {want}"
    assert out.console.count("3 packets transmitted, 3 packets received") >= 1


def test_dma_errors():
    run_cocotb(NIC, __name__, testcase="dma_errors", fast=True)
