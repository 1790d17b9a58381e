"""offnic.ko in a Linux VM drives the simulated NIC (issue 19, increment 2): QEMU 11.1's
vfio-user-pci client, the NIC's cycle-accurate model on the fast harness behind our
vfio-user server (sim/offnic_sim/vm/), each NIC port bridged to a TAP device in a network
namespace. The guest (Debian 12's kernel, busybox) loads the real module, brings ports up
and talks to the namespace peers; what the guest saw comes back on its serial console and
is checked here, with the NIC's MSI-X and the TAPs' counters.

Needs root (chroot, namespaces, TAP) and Debian's archive for the VM pieces
(`./offnic vm setup`); skips otherwise. Slow: each test boots a VM against a model that
runs ~10,000x slower than a board, so they are marked `vm` and run with `./offnic test -m vm`.
"""
import os

import cocotb
import pytest

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.vm import image, session
from offnic_sim.vm.session import PeerSpec

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
REASON = image.unavailable_reason()
pytestmark = [pytest.mark.vm, pytest.mark.skipif(REASON is not None, reason=f"VM unavailable: {REASON}")]

# The guest's helpers: the netdev of NIC port k is the k-th one offnic registers
# (no other NIC in the VM: QEMU runs with -nic none).
PRELUDE = r"""
set -u
insmod /lib/offnic.ko || { echo "insmod failed"; exit 10; }
n=0; while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 60 ]; do sleep 1; n=$((n+1)); done
echo "netdevs: $(ls /sys/class/net | tr '\n' ' ')"
"""


def report(dut, out: session.Outcome) -> None:
    dut._log.info(f"vm: guest exit {out.exit_code}; {out.wall_s:.1f} s wall, {out.sim_us:.0f} us simulated "
                  f"({out.sim_us_per_wall_s:.1f} us of NIC time per wall second); {out.stats}")
    print("---- guest console ----\n" + out.console[-6000:] + "\n---- end ----")


@cocotb.test()
async def probe_ping(dut):
    """offnic.ko probes the NIC (BAR0 chain walk, MSI-X), port 0 comes up, the guest pings the
    namespace peer across the NIC and the peer pings the guest."""
    script = PRELUDE + r"""
ip link set eth0 up || exit 11
ip addr add 192.0.2.2/24 dev eth0
ping -c 3 -w 240 192.0.2.1; r=$?
echo "ping exit $r"
grep -i offnic /proc/interrupts
dmesg | grep -i offnic | tail -20
exit $r
"""
    out = await session.run(dut, script, [PeerSpec("192.0.2.1/24")], name="ping", timeout_s=900)
    report(dut, out)
    assert out.exit_code == 0, f"guest script exit {out.exit_code}"
    assert " 0% packet loss" in out.console
    assert out.stats["device"]["msi"] > 0, "no MSI-X message reached the guest"
    assert out.stats["taps"][0].get("rx_frames", 0) >= 3   # the echo requests crossed the NIC into Linux


def test_probe_ping():
    run_cocotb(NIC, __name__, testcase="probe_ping", fast=True)
