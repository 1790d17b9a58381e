"""A vfio-user server (the protocol of QEMU's docs/interop/vfio-user.rst, version 0.1):
QEMU's `vfio-user-pci` device is the client; this process serves one PCI device over a
UNIX stream socket. Messages are a 16-byte header (id, command, size, flags, error) and
a command's payload; file descriptors (guest RAM for DMA, eventfds for interrupts) ride
as SCM_RIGHTS with the message they belong to.

The transport is sans-simulator: `Connection.poll()` returns whole messages without
blocking, `serve()` answers them through a `device` object (the simulated NIC in
vm/nic_device.py), awaiting its BAR reads, and awaits `idle()` when nothing is waiting,
so it runs inside a cocotb test (whose scheduler is not asyncio) as well as anywhere.

What the device offers (duck-typed): `num_regions`, `region_info(i) -> (size, flags)`,
`cfg_read(off, n)`, `cfg_write(off, data)`, `async bar_read(i, off, n)`,
`bar_write(i, off, data)`, `irq_info(i) -> (count, flags)`,
`set_irqs(index, flags, start, count, fds, data)`, `dma_map(iova, size, offset, fd,
flags)`, `dma_unmap(iova, size)`, `reset()`.
"""
from __future__ import annotations

import array
import errno
import json
import os
import socket
import struct
from dataclasses import dataclass, field

# Commands (the spec's table)
VERSION, DMA_MAP, DMA_UNMAP, DEVICE_GET_INFO, DEVICE_GET_REGION_INFO = 1, 2, 3, 4, 5
DEVICE_GET_REGION_IO_FDS, DEVICE_GET_IRQ_INFO, DEVICE_SET_IRQS = 6, 7, 8
REGION_READ, REGION_WRITE, DMA_READ, DMA_WRITE, DEVICE_RESET = 9, 10, 11, 12, 13
REGION_WRITE_MULTI, DEVICE_FEATURE = 15, 16
NAMES = {v: k for k, v in dict(
    VERSION=1, DMA_MAP=2, DMA_UNMAP=3, DEVICE_GET_INFO=4, DEVICE_GET_REGION_INFO=5, DEVICE_GET_REGION_IO_FDS=6,
    DEVICE_GET_IRQ_INFO=7, DEVICE_SET_IRQS=8, REGION_READ=9, REGION_WRITE=10, DMA_READ=11, DMA_WRITE=12,
    DEVICE_RESET=13, REGION_WRITE_MULTI=15, DEVICE_FEATURE=16).items()}

# Header flags
F_REPLY, F_NO_REPLY, F_ERROR = 0x1, 0x10, 0x20
HDR = struct.Struct("<HHIII")

# <linux/vfio.h> values the protocol reuses
DEVICE_FLAGS_RESET, DEVICE_FLAGS_PCI = 1, 2
PCI_NUM_REGIONS, PCI_NUM_IRQS = 9, 5       # BAR0-5, ROM, CONFIG, VGA; INTx, MSI, MSI-X, ERR, REQ
CONFIG_REGION = 7
INTX_IRQ, MSI_IRQ, MSIX_IRQ = 0, 1, 2
REGION_READ_F, REGION_WRITE_F, REGION_MMAP_F = 1, 2, 4
IRQ_INFO_EVENTFD, IRQ_INFO_MASKABLE, IRQ_INFO_AUTOMASKED, IRQ_INFO_NORESIZE = 1, 2, 4, 8
SET_DATA_NONE, SET_DATA_BOOL, SET_DATA_EVENTFD = 1, 2, 4
SET_ACTION_MASK, SET_ACTION_UNMASK, SET_ACTION_TRIGGER = 8, 16, 32

MAX_FDS = 16                 # what we take in one message (QEMU refuses more than its own maximum, 16)
MAX_XFER = 1 << 20


class ProtocolError(Exception):
    pass


@dataclass
class Message:
    id: int
    cmd: int
    flags: int
    error: int
    payload: bytes
    fds: list[int] = field(default_factory=list)

    @property
    def no_reply(self) -> bool:
        return bool(self.flags & F_NO_REPLY)


def pack(id_: int, cmd: int, payload: bytes = b"", flags: int = 0, error: int = 0) -> bytes:
    return HDR.pack(id_, cmd, HDR.size + len(payload), flags, error) + payload


class Connection:
    """One client on a connected socket: whole messages in, replies out."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        sock.setblocking(False)
        self.closed = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def _recv(self, n: int, fds: list[int]) -> bytes:
        """Up to n bytes (b"" if none are waiting), descriptors appended to `fds`. The kernel
        hands a message's descriptors to the read that takes its first byte and ends that
        read there, so reading one message at a time keeps each with its own."""
        a = array.array("i")
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(n, socket.CMSG_SPACE(MAX_FDS * a.itemsize))
        except (BlockingIOError, InterruptedError):
            return b""
        except ConnectionResetError:
            data, anc = b"", []
        if not data:
            self.closed = True
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a.frombytes(cdata[:len(cdata) - len(cdata) % a.itemsize])
        fds += list(a)
        return data

    def _exactly(self, n: int, fds: list[int]) -> bytes:
        """n bytes of a message already begun (the client writes whole messages: wait)."""
        out = bytearray()
        self.sock.setblocking(True)
        try:
            while len(out) < n and not self.closed:
                got = self._recv(n - len(out), fds)
                if not got:
                    raise ProtocolError("the client closed the socket inside a message")
                out += got
        finally:
            self.sock.setblocking(False)
        return bytes(out)

    def poll(self) -> list[Message]:
        """Every whole message that has arrived (never blocks between messages)."""
        out = []
        while not self.closed:
            fds: list[int] = []
            head = self._recv(HDR.size, fds)
            if not head:
                break
            if len(head) < HDR.size:
                head += self._exactly(HDR.size - len(head), fds)
            id_, cmd, size, flags, err = HDR.unpack(head)
            if size < HDR.size or size > MAX_XFER + 4096:
                raise ProtocolError(f"message of {size} bytes")
            payload = self._exactly(size - HDR.size, fds) if size > HDR.size else b""
            out.append(Message(id_, cmd, flags, err, payload, fds))
        return out

    def send(self, data: bytes, fds: list[int] = ()) -> None:
        self.sock.setblocking(True)
        try:
            if fds:
                self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            else:
                self.sock.sendall(data)
        finally:
            self.sock.setblocking(False)

    def reply(self, m: Message, payload: bytes = b"") -> None:
        self.send(pack(m.id, m.cmd, payload, F_REPLY))

    def error(self, m: Message, err: int) -> None:
        self.send(pack(m.id, m.cmd, b"", F_REPLY | F_ERROR, err))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
        self.sock.close()


class Listener:
    """The server's socket at `path` (removed first if stale)."""

    def __init__(self, path: str):
        self.path = path
        if os.path.exists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(1)
        self.sock.setblocking(False)

    def accept(self) -> Connection | None:
        try:
            s, _ = self.sock.accept()
        except BlockingIOError:
            return None
        return Connection(s)

    def close(self) -> None:
        self.sock.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


class Server:
    """Answers one client's commands through `device`. `stats` counts commands by name."""

    def __init__(self, device, log=None):
        self.dev = device
        self.log = log
        self.stats: dict[str, int] = {}
        self.version: tuple[int, int] | None = None
        self.client_caps: dict = {}

    async def handle(self, conn: Connection, m: Message) -> None:
        name = NAMES.get(m.cmd, str(m.cmd))
        self.stats[name] = self.stats.get(name, 0) + 1
        try:
            payload, fds = await self._dispatch(m)
        except (struct.error, ValueError, IndexError) as e:   # a short or malformed payload: before the device
            self._close_fds(m)
            e = OSError(errno.EINVAL, f"malformed {name}: {e}")
            if self.log:
                self.log.warning(f"vfio-user {name}: {e}")
            if not m.no_reply:
                conn.error(m, errno.EINVAL)
            return
        except OSError as e:   # descriptors: the device owns those it was given, _dispatch closed the rest
            if self.log:
                self.log.warning(f"vfio-user {name}: {e}")
            if not m.no_reply:
                conn.error(m, e.errno or errno.EINVAL)
            return
        if not m.no_reply:
            if fds:
                conn.send(pack(m.id, m.cmd, payload, F_REPLY), fds)
            else:
                conn.reply(m, payload)

    @staticmethod
    def _close_fds(m: Message) -> None:
        for fd in m.fds:
            try:
                os.close(fd)
            except OSError:
                pass

    async def _dispatch(self, m: Message) -> tuple[bytes, list[int]]:
        """The reply's payload and descriptors. Descriptors that came with `m` are handed to
        the device (DMA_MAP, SET_IRQS), which owns them from then on, or closed here."""
        p, dev = m.payload, self.dev
        if m.cmd not in (DMA_MAP, DEVICE_SET_IRQS):
            self._close_fds(m)
        if m.cmd == VERSION:
            major, minor = struct.unpack_from("<HH", p)
            if major != 0:
                raise OSError(errno.ENOTSUP, f"protocol major {major}")
            text = p[4:].split(b"\0", 1)[0]
            self.client_caps = json.loads(text).get("capabilities", {}) if text else {}
            self.version = (0, min(minor, 1))
            caps = {"capabilities": {"max_msg_fds": MAX_FDS, "max_data_xfer_size": MAX_XFER}}
            return struct.pack("<HH", *self.version) + json.dumps(caps).encode() + b"\0", []
        if m.cmd == DMA_MAP:
            argsz, flags, offset, addr, size = struct.unpack_from("<IIQQQ", p)
            fd = m.fds[0] if m.fds else -1
            for extra in m.fds[1:]:
                os.close(extra)
            dev.dma_map(addr, size, offset, fd, flags)
            return b"", []
        if m.cmd == DMA_UNMAP:
            argsz, flags, addr, size = struct.unpack_from("<IIQQ", p)
            dev.dma_unmap(addr, size)
            return struct.pack("<IIQQ", argsz, flags, addr, size), []
        if m.cmd == DEVICE_GET_INFO:
            return struct.pack("<IIII", 16, DEVICE_FLAGS_PCI | DEVICE_FLAGS_RESET, PCI_NUM_REGIONS, PCI_NUM_IRQS), []
        if m.cmd == DEVICE_GET_REGION_INFO:
            argsz, flags, index = struct.unpack_from("<III", p)
            if index >= PCI_NUM_REGIONS:
                raise OSError(errno.EINVAL, f"region {index}")
            size, rflags = dev.region_info(index)
            return struct.pack("<IIIIQQ", 32, rflags, index, 0, size, 0), []
        if m.cmd == DEVICE_GET_IRQ_INFO:
            argsz, flags, index = struct.unpack_from("<III", p)
            if index >= PCI_NUM_IRQS:
                raise OSError(errno.EINVAL, f"irq index {index}")
            count, iflags = dev.irq_info(index)
            return struct.pack("<IIII", 16, iflags, index, count), []
        if m.cmd == DEVICE_SET_IRQS:
            argsz, flags, index, start, count = struct.unpack_from("<IIIII", p)
            data = p[20:argsz] if flags & SET_DATA_BOOL else b""
            if flags & SET_DATA_EVENTFD and m.fds and len(m.fds) != count:
                self._close_fds(m)
                raise OSError(errno.EINVAL, f"SET_IRQS: {len(m.fds)} descriptors for {count} interrupts")
            dev.set_irqs(index, flags, start, count, list(m.fds), data)
            return b"", []
        if m.cmd == REGION_READ:
            offset, region, count = struct.unpack_from("<QII", p)
            if region == CONFIG_REGION:
                data = dev.cfg_read(offset, count)
            else:
                data = await dev.bar_read(region, offset, count)
            return struct.pack("<QII", offset, region, count) + data, []
        if m.cmd == REGION_WRITE:
            offset, region, count = struct.unpack_from("<QII", p)
            data = p[16:16 + count]
            if region == CONFIG_REGION:
                dev.cfg_write(offset, data)
            else:
                dev.bar_write(region, offset, data)
            return struct.pack("<QII", offset, region, count), []
        if m.cmd == REGION_WRITE_MULTI:
            (n,) = struct.unpack_from("<Q", p)
            for k in range(n):
                offset, region, count, data = struct.unpack_from("<QII8s", p, 8 + 24 * k)
                (dev.cfg_write if region == CONFIG_REGION else
                 (lambda o, d, r=region: dev.bar_write(r, o, d)))(offset, data[:count])
            return struct.pack("<Q", n), []
        if m.cmd == DEVICE_RESET:
            dev.reset()
            return b"", []
        raise OSError(errno.ENOTSUP, f"command {m.cmd} not supported")


async def serve(listener: Listener, device, idle, log=None, stop=None) -> Server:
    """Accept one client and answer it until it disconnects (or `stop()` is true); `idle()`
    is awaited whenever nothing is waiting (in cocotb: a Timer, so simulated time runs)."""
    server = Server(device, log)
    conn = None
    while stop is None or not stop():
        if conn is None:
            conn = listener.accept()
            if conn is None:
                await idle()
                continue
        msgs = conn.poll()
        for m in msgs:
            await server.handle(conn, m)
        if conn.closed:
            conn.close()
            break
        if not msgs:
            await idle()
    return server
