"""`./offnic vm`: boot the VM against the simulated NIC by hand. The guest runs a script
(default: load offnic.ko, bring both ports up with addresses, ping each port's namespace
peer, show ethtool and the interrupts; `--script FILE` runs yours instead) and the
console is printed. `./offnic vm setup` only builds the VM pieces (image.ensure).

The cocotb test below is what the command runs on the fast harness's model."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

DEFAULT_SCRIPT = r"""
insmod /lib/offnic.ko || exit 10
n=0; while [ ! -e /sys/class/net/eth1 ] && [ $n -lt 60 ]; do sleep 1; n=$((n+1)); done
ip link set eth0 up; ip addr add 192.0.2.2/24 dev eth0
ip link set eth1 up; ip addr add 198.51.100.2/24 dev eth1
ip -s link show eth0
ping -c 2 -w 240 192.0.2.1; a=$?
ping -c 2 -w 240 198.51.100.1; b=$?
ethtool -g eth0 2>/dev/null; ethtool -c eth0 2>/dev/null
grep -i offnic /proc/interrupts
dmesg | grep -i offnic | tail
[ $a = 0 ] && [ $b = 0 ]
"""
SCRIPT_ENV = "OFFNIC_VM_SCRIPT"
SMP_ENV = "OFFNIC_VM_SMP"


def main(args: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="offnic vm", description="offnic.ko in a Linux VM against the simulated NIC")
    ap.add_argument("what", nargs="?", choices=["run", "setup"], default="run")
    ap.add_argument("--script", type=Path, help="the guest's shell script (busybox sh) instead of the default")
    ap.add_argument("--smp", type=int, default=1, help="guest vCPUs (TCG: each costs host CPU; default 1)")
    a = ap.parse_args(args)
    from offnic_sim.vm import image
    reason = image.unavailable_reason()
    if reason:
        print(f"[offnic] vm: {reason}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    im = image.ensure()
    print(f"[offnic] vm: pieces ready in {time.monotonic() - t0:.0f} s: {im.root}, {im.kernel.name}, "
          f"{im.initramfs.name} (offnic.ko {im.module})")
    if a.what == "setup":
        return 0
    from offnic_sim.harness.hw import Design
    from offnic_sim.harness.runner import run_cocotb
    script = a.script.read_text() if a.script else DEFAULT_SCRIPT
    try:
        run_cocotb(Design.of("nic.Nic", addr_bits=24, board_id=0), "offnic_sim.vm.vm_run", testcase="manual_vm",
                   fast=True, env={SCRIPT_ENV: script, SMP_ENV: str(a.smp)})
    except AssertionError as e:
        print(f"[offnic] vm: {e}", file=sys.stderr)
        return 1
    return 0


try:
    import cocotb
except ImportError:   # the CLI side imports this module before the venv's cocotb matters
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def manual_vm(dut):
        from offnic_sim.vm import session
        script = os.environ.get(SCRIPT_ENV, DEFAULT_SCRIPT)
        out = await session.run(dut, script, [session.PeerSpec("192.0.2.1/24"), session.PeerSpec("198.51.100.1/24")],
                                name="manual", timeout_s=1800, smp=int(os.environ.get(SMP_ENV, "1")))
        print(out.console)
        print(f"[offnic] vm: guest exit {out.exit_code}; {out.wall_s:.1f} s wall, {out.sim_us:.0f} us of NIC time "
              f"({out.sim_us_per_wall_s:.1f} us per wall second); {out.stats}", flush=True)
        assert out.exit_code == 0, f"guest script exit {out.exit_code}"
