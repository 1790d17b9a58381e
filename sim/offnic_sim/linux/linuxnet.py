"""Real Linux networking for tests: network namespaces, TAP ports, an ARP responder and
a seeded impairment stage (drop, duplicate, reorder, corrupt) for the bridge between a
TAP port and a simulated Ethernet port. See docs/linux-interop.md.

Everything that touches the kernel needs root, `ip` (iproute2) and /dev/net/tun;
`unavailable_reason()` says why a test must skip. `Impair`, `ArpResponder` and the frame
helpers are pure Python and work anywhere.

Cleanup: namespaces are named `ofn<pid>n<k>`. Leaving a `Namespace` context (also on an
exception) closes the TAP ports and sockets made in it and deletes it; an atexit hook
deletes any left open; and the first Namespace of a process deletes the `ofn*`
namespaces and links whose process is gone (a crashed or killed earlier run). TAP ports
are not persistent: the kernel removes one when its file descriptor closes, so a dead
process cannot leave one behind.

Running code inside a namespace: `Namespace.entered()` switches the calling thread into
the namespace with setns(2) and back on exit. A socket keeps the namespace it was made
in, so `ns.socket(...)` returns an ordinary socket of the test process that lives in the
namespace: no child process, no pipe, usable from pytest and from cocotb coroutines
alike. /proc/sys/net and /proc/thread-self/net opened while entered are the namespace's.
Only the calling thread moves (setns of a network namespace is per thread), so other
threads are unaffected. `Namespace.run()` runs a command with `ip netns exec`.
"""
from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import errno
import fcntl
import ipaddress
import os
import random
import re
import select
import shutil
import socket
import struct
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

from offnic_sim.net.eth import (ETH_HLEN, ETH_P_ARP, ETH_P_IP, eth_frame, ethertype, ip_of,  # noqa: F401
                               mac_bytes, mac_str)

PREFIX = "ofn"
NETNS_DIR = "/var/run/netns"
CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000

_libc = ctypes.CDLL(None, use_errno=True)
_counter = 0
_stale_cleaned = False
_live: dict[str, "Namespace"] = {}


# ----------------------------------------------------------------------------- availability

def unavailable_reason() -> str | None:
    """Why real Linux networking cannot be used here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and TAP devices)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    if not os.path.exists("/dev/net/tun"):
        return "/dev/net/tun is missing (no TUN/TAP support)"
    if not hasattr(_libc, "setns"):
        return "libc has no setns()"
    return None


def _unique(kind: str) -> str:
    """A name no other process uses: ofn<pid><kind><k>, at most 15 characters (IFNAMSIZ-1)."""
    global _counter
    _counter += 1
    name = f"{PREFIX}{os.getpid()}{kind}{_counter}"
    assert len(name) <= 15, name
    return name


def _pid_of(name: str) -> int | None:
    m = re.match(rf"{PREFIX}(\d+)[a-z]", name)
    return int(m.group(1)) if m else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cleanup_stale() -> list[str]:
    """Delete the ofn* namespaces and root-namespace links whose creating process is gone.
    Returns what was deleted."""
    gone = []
    names = os.listdir(NETNS_DIR) if os.path.isdir(NETNS_DIR) else []
    for ns in names:
        pid = _pid_of(ns)
        if pid is not None and not _alive(pid):
            if subprocess.run(["ip", "netns", "del", ns], capture_output=True).returncode == 0:
                gone.append(ns)
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    for m in re.finditer(rf"^\d+: ({PREFIX}[^:@ ]+)", links, re.M):
        pid = _pid_of(m.group(1))
        if pid is not None and not _alive(pid):
            # deleting one end of a veth pair takes the other with it: that one then fails
            if subprocess.run(["ip", "link", "del", m.group(1)], capture_output=True).returncode == 0:
                gone.append(m.group(1))
    return gone


@atexit.register
def _cleanup_live() -> None:
    for ns in list(_live.values()):
        ns.close()


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"setns: {os.strerror(e)}")


def _ip(*args: str) -> str:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


# ----------------------------------------------------------------------------- namespace

class Namespace:
    """A network namespace for the life of a `with` block.

    On entry the namespace gets `lo` up, IPv6 disabled (no router solicitations, DAD or
    MLD frames on its links) and, unless told otherwise, the IPv4 fragment settings the
    reassembly tests rely on. Everything registered with `own()` (TapPorts, sockets made
    by `socket()`) is closed before the namespace is deleted."""

    def __init__(self, name: str | None = None, *, frag_high_thresh: int | None = 64 << 20):
        self.name = name or _unique("n")
        self.path = f"{NETNS_DIR}/{self.name}"
        self.frag_high_thresh = frag_high_thresh
        self._owned: list = []
        self._open = False

    # -- lifetime
    def __enter__(self) -> "Namespace":
        global _stale_cleaned
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        if not _stale_cleaned:
            cleanup_stale()
            _stale_cleaned = True
        _ip("netns", "add", self.name)
        self._open = True
        _live[self.name] = self
        try:
            self.ip("link", "set", "lo", "up")
            self.sysctl("net/ipv6/conf/all/disable_ipv6", 1)
            self.sysctl("net/ipv6/conf/default/disable_ipv6", 1)
            if self.frag_high_thresh is not None:
                # Room for the tests' deliberately incomplete datagrams: above the 4 MB
                # default Linux would refuse every fragment, not just new datagrams.
                self.sysctl("net/ipv4/ipfrag_high_thresh", self.frag_high_thresh)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def own(self, thing):
        """Close `thing` (anything with close()) before the namespace goes."""
        self._owned.append(thing)
        return thing

    def close(self) -> None:
        while self._owned:
            with contextlib.suppress(Exception):
                self._owned.pop().close()
        if self._open:
            self._open = False
            _live.pop(self.name, None)
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True)

    # -- running things inside
    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """Run the body with the calling thread inside the namespace."""
        back = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(self.path, os.O_RDONLY)
        try:
            _setns(target)
            try:
                yield
            finally:
                _setns(back)
        finally:
            os.close(target)
            os.close(back)

    def call(self, fn: Callable, *args, **kwargs):
        """fn(*args, **kwargs) run inside the namespace (same thread, same process)."""
        with self.entered():
            return fn(*args, **kwargs)

    def socket(self, family: int = socket.AF_INET, type: int = socket.SOCK_DGRAM, proto: int = 0) -> socket.socket:
        """A socket living in the namespace, closed with it."""
        with self.entered():
            s = socket.socket(family, type, proto)
        return self.own(s)

    def run(self, *cmd: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
        """A command run inside the namespace (`ip netns exec`)."""
        return subprocess.run(["ip", "netns", "exec", self.name, *cmd], check=check, capture_output=True,
                              text=True, **kw)

    def ip(self, *args: str) -> str:
        """`ip -n NAME args...`; raises with ip's message on failure."""
        return _ip("-n", self.name, *args)

    def sysctl(self, key: str, value=None) -> str:
        """Read (value None) or write a /proc/sys entry, e.g. 'net/ipv4/ipfrag_time'."""
        path = "/proc/sys/" + key.replace(".", "/") if "/" not in key else "/proc/sys/" + key
        with self.entered():
            if value is not None:
                with open(path, "w") as f:
                    f.write(f"{value}\n")
            with open(path) as f:
                return f.read().strip()

    def mib(self) -> dict[str, int]:
        """The namespace's IP/UDP MIB counters, flattened from /proc/net/snmp and netstat
        (e.g. 'Ip.ReasmOKs', 'IpExt.ReasmOverlaps', 'Udp.InCsumErrors')."""
        out: dict[str, int] = {}
        with self.entered():
            for name in ("snmp", "netstat"):
                with open(f"/proc/thread-self/net/{name}") as f:
                    lines = f.read().splitlines()
                for head, vals in zip(lines[::2], lines[1::2]):
                    group, keys = head.split(":", 1)
                    for k, v in zip(keys.split(), vals.split(":", 1)[1].split()):
                        out[f"{group}.{k}"] = int(v)
        return out


# ----------------------------------------------------------------------------- frames: net/eth.py


class ArpResponder:
    """Answers ARP requests for the simulated side's addresses, so Linux resolves them the
    ordinary way and no static neighbour entry is needed. `table` maps IPv4 address ->
    MAC. The reply goes back to the requester; requests for other addresses are left
    alone (None)."""

    def __init__(self, table: Mapping[str, str]):
        self.table = {ipaddress.IPv4Address(ip).packed: mac_bytes(mac) for ip, mac in table.items()}
        self.answered = 0

    def reply(self, frame: bytes) -> bytes | None:
        if ethertype(frame) != ETH_P_ARP or len(frame) < ETH_HLEN + 28:
            return None
        htype, ptype, hlen, plen, oper = struct.unpack("!HHBBH", frame[14:22])
        if (htype, ptype, hlen, plen, oper) != (1, ETH_P_IP, 6, 4, 1):
            return None
        sha, spa, tpa = frame[22:28], frame[28:32], frame[38:42]
        mac = self.table.get(tpa)
        if mac is None:
            return None
        self.answered += 1
        arp = struct.pack("!HHBBH", 1, ETH_P_IP, 6, 4, 2) + mac + tpa + sha + spa
        return eth_frame(sha, mac, ETH_P_ARP, arp)


# ----------------------------------------------------------------------------- TAP port

class TapPort:
    """A TAP device inside `ns`, configured as the Linux end of a simulated link.

    The device is created from inside the namespace (open /dev/net/tun and TUNSETIFF
    while `ns.entered()`), so it never exists in the root namespace; creating it in the
    root namespace and moving it with `ip link set dev X netns NS` works as well (the
    descriptor stays attached) but leaves a short window where a crash leaks a root link.
    IFF_NO_PI: reads and writes are bare Ethernet frames without FCS. No offloads are
    enabled (no TUNSETOFFLOAD), so Linux hands over only MTU-sized frames with complete
    checksums, and fragments IP itself.

    The Linux side gets `mac` and `addr` (e.g. '192.0.2.1/24'); the simulated side is
    `sim_mac` with the addresses `sim_ips`, for which the built-in ArpResponder answers
    (read_frame() consumes those requests). `static_neigh=True` adds permanent neighbour
    entries instead, for tests that want no ARP at all.

    Frames written with write_frame() are processed by the kernel synchronously: when
    the write returns, the frame has gone through IP and, if it completed a datagram,
    that datagram is in the receiving socket's queue."""

    def __init__(self, ns: Namespace, name: str | None = None, *, mtu: int = 1500,
                 mac: str = "02:0f:4e:00:00:01", addr: str = "192.0.2.1/24",
                 sim_mac: str = "02:0f:4e:00:00:02", sim_ips: tuple[str, ...] = ("192.0.2.2",),
                 answer_arp: bool = True, static_neigh: bool = False, txqueuelen: int = 10000):
        self.ns = ns
        self.name = name or _unique("t")
        self.mtu = mtu
        self.mac = mac
        self.iface = ipaddress.IPv4Interface(addr)
        self.ip = str(self.iface.ip)
        self.sim_mac = sim_mac
        self.sim_ips = tuple(sim_ips)
        self.arp = ArpResponder({ip: sim_mac for ip in sim_ips}) if answer_arp else None
        self.static_neigh = static_neigh
        self.txqueuelen = txqueuelen
        self.fd = -1
        self.counters: Counter[str] = Counter()

    def __enter__(self) -> "TapPort":
        with self.ns.entered():
            fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", self.name.encode(), IFF_TAP | IFF_NO_PI))
            except BaseException:
                os.close(fd)
                raise
        self.fd = fd
        self.ns.own(self)
        try:
            # Test traffic comes from many made-up sources; Linux uses the larger of the
            # "all" and per-device reverse-path settings, so both go off.
            self.ns.sysctl(f"net/ipv4/conf/{self.name}/rp_filter", 0)
            self.ns.sysctl("net/ipv4/conf/all/rp_filter", 0)
            self.ns.ip("link", "set", "dev", self.name, "address", self.mac, "mtu", str(self.mtu),
                       "txqueuelen", str(self.txqueuelen))
            self.ns.ip("addr", "add", str(self.iface), "dev", self.name)
            if self.static_neigh:
                for ip in self.sim_ips:
                    self.ns.ip("neigh", "replace", ip, "lladdr", self.sim_mac, "dev", self.name, "nud", "permanent")
            self.ns.ip("link", "set", "dev", self.name, "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def fileno(self) -> int:
        return self.fd

    # -- frames
    def read_frame(self) -> bytes | None:
        """The next frame Linux sent, or None when none is waiting (never blocks). ARP
        requests for the simulated addresses are answered here and not returned."""
        while True:
            try:
                frame = os.read(self.fd, 65536 + ETH_HLEN)
            except BlockingIOError:
                return None
            if self.arp is not None:
                reply = self.arp.reply(frame)
                if reply is not None:
                    self.counters["arp_answered"] += 1
                    self.write_frame(reply)
                    continue
            self.counters["rx_frames"] += 1
            return frame

    def read_frames(self) -> list[bytes]:
        """Every frame waiting now."""
        out = []
        while (f := self.read_frame()) is not None:
            out.append(f)
        return out

    def wait_frame(self, timeout: float = 1.0) -> bytes | None:
        """Block up to `timeout` wall-clock seconds for a frame (for tests without a
        simulator; inside cocotb use tapbridge's polling instead)."""
        deadline = time.monotonic() + timeout
        while True:
            f = self.read_frame()
            if f is not None:
                return f
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            select.select([self.fd], [], [], left)

    def write_frame(self, frame: bytes) -> None:
        """Hand one Ethernet frame (no FCS) to Linux as if received on the link."""
        try:
            n = os.write(self.fd, frame)
        except OSError as e:
            # EINVAL: Linux rejects frames shorter than an Ethernet header or over the
            # device's limits; count it like a frame the link dropped.
            if e.errno not in (errno.EINVAL, errno.EIO, errno.EAGAIN):
                raise
            self.counters["tx_rejected"] += 1
            return
        assert n == len(frame)
        self.counters["tx_frames"] += 1

    def send_ip(self, packet: bytes, src_mac: str | None = None) -> None:
        """Write an IPv4 packet to Linux inside an Ethernet frame from the simulated side."""
        self.write_frame(eth_frame(self.mac, src_mac or self.sim_mac, ETH_P_IP, packet))

    async def arecv_frame(self) -> bytes:
        """The next frame, awaited on an asyncio event loop (loop.add_reader); not for
        cocotb, whose scheduler is not asyncio (see tapbridge.py)."""
        loop = asyncio.get_running_loop()
        while True:
            f = self.read_frame()
            if f is not None:
                return f
            ready = loop.create_future()
            loop.add_reader(self.fd, lambda: ready.done() or ready.set_result(None))
            try:
                await ready
            finally:
                loop.remove_reader(self.fd)


# ----------------------------------------------------------------------------- impairment

DROP, DUPLICATE, REORDER, CORRUPT, PASS = "drop", "duplicate", "reorder", "corrupt", "pass"


@dataclass
class ImpairConfig:
    """What one direction of a bridge does to frames. Probabilities are per frame.

    reorder holds a frame back: by `reorder_by` positions (1..reorder_by, uniformly, of
    later input frames; released right after the frame `k` positions later has been
    handled, whether that one was emitted or dropped), or by `delay` time units when
    `delay` is set (released by push()/poll() once now >= arrival + delay).
    duplicate emits a second copy right after the frame's own slot; when the frame is
    also held back the copy goes out first (a duplicate overtaking its original).
    corrupt flips one bit at or after byte `corrupt_from` (14 keeps the Ethernet header,
    so the frame still reaches IP).
    `select` limits impairments to matching frames; others pass untouched (they still
    count as positions). `script` forces actions per input index (0-based), e.g.
    {3: "drop", 5: ("reorder", 2), 7: "duplicate", 9: "corrupt", 11: "pass"}."""

    drop: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_by: int = 3
    delay: float | None = None
    corrupt: float = 0.0
    corrupt_from: int = ETH_HLEN
    select: Callable[[bytes], bool] | None = None
    script: Mapping[int, str | tuple] = field(default_factory=dict)


@dataclass
class _Held:
    frame: bytes
    release_at: int       # input index after which it goes out (position mode)
    due: float            # time it goes out (delay mode)


class Impair:
    """A deterministic impairment stage for one direction of a bridge.

    Every input frame draws the same number of random values from its own seeded
    generator whatever the configuration, so the fate of frame i depends only on the
    seed, i and the probabilities that concern it: raising the drop rate does not change
    which frames get reordered. Counters: in, out, dropped, duplicated, reordered,
    corrupted, untouched (not selected)."""

    def __init__(self, config: ImpairConfig | None = None, seed: int = 0):
        self.config = config or ImpairConfig()
        self.seed = seed
        self.rng = random.Random(seed)
        self.counters: Counter[str] = Counter()
        self._held: list[_Held] = []
        self._index = 0

    @property
    def held(self) -> int:
        return len(self._held)

    def _decide(self, frame: bytes, index: int) -> tuple[list[str], int, int]:
        c = self.config
        draws = [self.rng.random() for _ in range(7)]
        r_drop, r_corrupt, r_dup, r_reorder, r_by, r_pos, r_bit = draws
        by = 1 + int(r_by * max(c.reorder_by, 1))
        pos = c.corrupt_from + int(r_pos * max(len(frame) - c.corrupt_from, 1))
        bit = int(r_bit * 8)
        forced = c.script.get(index)
        if forced is not None:
            if isinstance(forced, tuple):
                forced, by = forced[0], forced[1]
            return [forced], by, pos * 8 + bit
        if c.select is not None and not c.select(frame):
            return ["untouched"], by, 0
        if r_drop < c.drop:
            return [DROP], by, 0
        acts = []
        if r_corrupt < c.corrupt:
            acts.append(CORRUPT)
        if r_dup < c.duplicate:
            acts.append(DUPLICATE)
        if r_reorder < c.reorder:
            acts.append(REORDER)
        return acts, by, pos * 8 + bit

    def push(self, frame: bytes, now: float = 0.0) -> list[bytes]:
        """Feed one frame; returns the frames to send on now, in order."""
        index = self._index
        self._index += 1
        self.counters["in"] += 1
        out = [h.frame for h in self._due(now)]
        acts, by, bitpos = self._decide(frame, index)
        if "untouched" in acts:
            self.counters["untouched"] += 1
            out.append(frame)
        elif DROP in acts:
            self.counters["dropped"] += 1
        else:
            if CORRUPT in acts and len(frame) > self.config.corrupt_from:
                b = bytearray(frame)
                pos = min(bitpos // 8, len(b) - 1)
                b[pos] ^= 1 << (bitpos % 8)
                frame = bytes(b)
                self.counters["corrupted"] += 1
            if REORDER in acts:
                self.counters["reordered"] += 1
                due = now + self.config.delay if self.config.delay is not None else float("inf")
                release = index + by if self.config.delay is None else -1
                self._held.append(_Held(frame, release, due))
            else:
                out.append(frame)
            if DUPLICATE in acts:
                self.counters["duplicated"] += 1
                out.append(frame)
        if self.config.delay is None:
            ready = [h for h in self._held if h.release_at <= index]
            self._held = [h for h in self._held if h.release_at > index]
            out += [h.frame for h in ready]
        self.counters["out"] += len(out)
        return out

    def _due(self, now: float) -> list[_Held]:
        if self.config.delay is None:
            return []
        ready = [h for h in self._held if h.due <= now]
        self._held = [h for h in self._held if h.due > now]
        return ready

    def poll(self, now: float) -> list[bytes]:
        """Frames held by time that are due at `now`."""
        out = [h.frame for h in self._due(now)]
        self.counters["out"] += len(out)
        return out

    def flush(self) -> list[bytes]:
        """Every held frame, in the order they were held (end of a test phase)."""
        out = [h.frame for h in self._held]
        self._held = []
        self.counters["out"] += len(out)
        return out
