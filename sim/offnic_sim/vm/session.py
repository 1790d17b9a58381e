"""One VM session inside a cocotb test on the fast harness: the simulated NIC served over
vfio-user, QEMU (11.1, by chroot into the Debian 13 root) booting Debian 12's kernel with
the initramfs that carries offnic.ko and the test's guest script, and each NIC port
bridged to a TAP device in its own network namespace (the Linux peers).

The guest script's output comes back on the serial console (a file); the session ends
when the script prints its exit status (image.INIT) or QEMU exits. Wall-clock time runs
independently of simulated time: the guest's timers are wall time, the NIC's is
simulated, about 10,000x slower than a board (measured and printed per session).
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Timer

from offnic_sim.linux.linuxnet import Namespace, TapPort
from offnic_sim.linux.tapbridge import TapBridge
from offnic_sim.vm import image, vfio_user
from offnic_sim.vm.nic_device import serve_nic

EXIT_RE = re.compile(r"offnic-vm: script exit (\d+)")
POLL_NS = 200.0         # simulated time between looks at the socket when it is quiet
GUEST_MB = 512


@dataclass
class PeerSpec:
    """The Linux end of NIC port k: a namespace with a TAP device at `addr`."""
    addr: str
    mtu: int = 1500


@dataclass
class Outcome:
    exit_code: int | None
    console: str
    wall_s: float
    sim_us: float
    stats: dict = field(default_factory=dict)

    @property
    def sim_us_per_wall_s(self) -> float:
        return self.sim_us / self.wall_s if self.wall_s else 0.0


def qemu_command(im: image.Images, sock: str, initrd: str, append: str = "", smp: int = 1) -> list[str]:
    dev = '{"driver":"vfio-user-pci","socket":{"path":"%s","type":"unix"},"x-msg-timeout":600000}' % sock
    return ["chroot", str(im.root), "qemu-system-x86_64", "-accel", "tcg", "-smp", str(smp), "-m", str(GUEST_MB),
            "-object", f"memory-backend-memfd,id=mem,size={GUEST_MB}M,share=on",
            "-machine", "pc,memory-backend=mem", "-nic", "none", "-display", "none", "-monitor", "none",
            "-serial", "stdio", "-no-reboot", "-kernel", im.in_root(im.kernel), "-initrd", initrd,
            "-append", f"console=ttyS0 panic=-1 loglevel=4 {append}".strip(), "-device", dev]


async def run(dut, script: str, peers: list[PeerSpec], *, name: str = "vm", timeout_s: float = 600.0,
              during=None, smp: int = 1) -> Outcome:
    """Boot the guest (`smp` vCPUs; TCG) with `script` against the NIC of `dut` and wait for the script's end.
    `during(ctx)`: an optional coroutine run beside the guest, with ctx holding 'ns'
    (namespaces by port), 'taps', 'device' and 'console' (a callable returning the text so far)."""
    im = image.ensure()
    dev = await serve_nic(dut, log=dut._log)
    tb = dev.tb
    run_dir = im.root / image.RUN_IN_ROOT.lstrip("/") / "run"
    run_dir.mkdir(exist_ok=True)
    tag = f"{name}-{os.getpid()}"
    sock = run_dir / f"{tag}.sock"
    initrd = run_dir / f"{tag}.cpio"
    console = Path.cwd() / f"{name}.console"     # the cocotb run directory
    console.unlink(missing_ok=True)
    initrd.write_bytes(im.initramfs.read_bytes() + image.script_cpio(script))
    stack = ExitStack()
    listener = vfio_user.Listener(str(sock))
    stack.callback(listener.close)
    stack.callback(lambda: initrd.unlink(missing_ok=True))
    namespaces, taps, bridges = [], [], []
    try:
        for k, spec in enumerate(peers):
            ns = stack.enter_context(Namespace())
            tap = stack.enter_context(TapPort(ns, mtu=spec.mtu, addr=spec.addr, answer_arp=False))
            port = tb.ports[k]
            br = TapBridge(tap, port.send, port.recv)
            br.start()
            namespaces.append(ns)
            taps.append(tap)
            bridges.append(br)
        out = open(console, "wb")
        stack.callback(out.close)
        t0, sim0 = time.monotonic(), get_sim_time("ns")
        qemu = subprocess.Popen(qemu_command(im, im.in_root(sock), im.in_root(initrd), smp=smp), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT)
        stack.callback(lambda: qemu.poll() is None and (qemu.kill(), qemu.wait()))  # a failed test leaves none
        dut._log.info(f"vm: QEMU pid {qemu.pid}, console {console}")

        def text() -> str:
            return console.read_text(errors="replace")

        def done() -> bool:
            return qemu.poll() is not None or time.monotonic() - t0 > timeout_s

        async def idle() -> None:
            await Timer(POLL_NS, unit="ns")

        ctx = {"ns": namespaces, "taps": taps, "device": dev, "console": text, "tb": tb}
        side = cocotb.start_soon(during(ctx)) if during else None
        server = await vfio_user.serve(listener, dev, idle, log=dut._log, stop=done)
        while not done():       # the client left (the guest powers off): let QEMU finish
            await idle()
        wall, sim_us = time.monotonic() - t0, (get_sim_time("ns") - sim0) / 1000
        if qemu.poll() is None:
            qemu.kill()
            qemu.wait()
        if side is not None and not side.done():
            side.cancel()
        for br in bridges:
            br.stop()
        log = text()
        m = EXIT_RE.search(log)
        stats = {"vfio_user": server.stats, "device": dict(dev.counts), "msi_per_vector": list(dev.msi_count),
                 "taps": [dict(t.counters) for t in taps], "qemu_rc": qemu.returncode}
        return Outcome(int(m.group(1)) if m else None, log, wall, sim_us, stats)
    finally:
        stack.close()
