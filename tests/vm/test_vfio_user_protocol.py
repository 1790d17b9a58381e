"""The vfio-user server and the NIC device without QEMU (fast; in the default suite): a
client written here from the protocol spec speaks to vm/vfio_user.py over a real UNIX
socket, with the NIC's model on the fast harness as the device. Checked: the version
handshake and its capabilities; device, region and IRQ info; configuration space (IDs,
class, BAR0 sizing, the MSI-X capability pointing at the NIC's msix block); BAR0 reads
answered by the model (the register chain's first block type); a memfd shared with
DMA_MAP is the harness's host memory at its address (written on one side, read on the
other), and unmapped again; an eventfd given with SET_IRQS is signalled by a trigger and
the NIC's table entry is programmed; bad requests (an unknown command, a truncated one, a
foreign major version, reads past BAR0, a vector past the table) are answered with
errors, and the server answers on after them."""
import array
import json
import mmap
import os
import random
import select
import socket
import struct
import tempfile

import cocotb
from cocotb.triggers import Timer

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host import regs
from offnic_sim.vm import vfio_user as vu
from offnic_sim.vm.nic_device import serve_nic

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)


class Client:
    """A minimal vfio-user client: one request at a time, its reply awaited (the server
    runs in the same process, so waiting is simulated time passing)."""

    def __init__(self, path: str):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.s.setblocking(False)
        self.id = 0

    def send(self, cmd: int, payload: bytes = b"", fds=(), flags: int = 0) -> int:
        self.id += 1
        msg = struct.pack("<HHIII", self.id, cmd, 16 + len(payload), flags, 0) + payload
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        self.s.sendmsg([msg], anc)
        return self.id

    async def reply(self, want_id: int):
        buf = b""
        for _ in range(200000):
            try:
                buf += self.s.recv(1 << 16)
            except BlockingIOError:
                await Timer(100, unit="ns")
                continue
            if len(buf) >= 16:
                id_, cmd, size, flags, err = struct.unpack_from("<HHIII", buf)
                if len(buf) >= size:
                    assert id_ == want_id and flags & vu.F_REPLY
                    return flags, err, buf[16:size]
        raise AssertionError("no reply")

    async def call(self, cmd, payload=b"", fds=()):
        return await self.reply(self.send(cmd, payload, fds))


@cocotb.test()
async def protocol_against_nic(dut):
    rng = random.Random(random.getrandbits(32))
    dev = await serve_nic(dut, log=dut._log)
    path = os.path.join(tempfile.mkdtemp(), "nic.sock")
    listener = vu.Listener(path)
    done = []

    async def idle():
        await Timer(200, unit="ns")

    server_task = cocotb.start_soon(vu.serve(listener, dev, idle, log=dut._log, stop=lambda: bool(done)))
    c = Client(path)

    # version: major 0, minor no higher than offered; capabilities QEMU accepts (max_msg_fds <= 16)
    f, e, p = await c.call(vu.VERSION, struct.pack("<HH", 0, 0) + json.dumps(
        {"capabilities": {"max_msg_fds": 8, "max_data_xfer_size": 1 << 20}}).encode() + b"\0")
    major, minor = struct.unpack_from("<HH", p)
    caps = json.loads(p[4:].rstrip(b"\0"))["capabilities"]
    assert (major, minor) == (0, 0) and 1 <= caps["max_msg_fds"] <= 16, (major, minor, caps)
    f, e, p = await c.call(vu.VERSION, struct.pack("<HH", 1, 0))
    assert f & vu.F_ERROR, "a major version other than 0 must be refused"

    f, e, p = await c.call(vu.DEVICE_GET_INFO, struct.pack("<IIII", 16, 0, 0, 0))
    argsz, flags, nreg, nirq = struct.unpack("<IIII", p)
    assert flags & vu.DEVICE_FLAGS_PCI and nreg == 9 and nirq == 5
    f, e, p = await c.call(vu.DEVICE_GET_REGION_INFO, struct.pack("<IIIIQQ", 32, 0, 0, 0, 0, 0))
    assert struct.unpack("<IIIIQQ", p)[4] == 16 << 20
    f, e, p = await c.call(vu.DEVICE_GET_REGION_INFO, struct.pack("<IIIIQQ", 32, 0, 42, 0, 0, 0))
    assert f & vu.F_ERROR

    async def cfg(off, n):
        f, e, p = await c.call(vu.REGION_READ, struct.pack("<QII", off, vu.CONFIG_REGION, n))
        return p[16:]

    ids = struct.unpack("<HH", await cfg(0, 4))
    assert ids == (0x10EE, 0x0F10)
    assert int.from_bytes(await cfg(0x09, 3), "little") == 0x020000
    # BAR0 sizing: all ones written, the size mask read back
    await c.call(vu.REGION_WRITE, struct.pack("<QII", 0x10, vu.CONFIG_REGION, 4) + b"\xff" * 4)
    assert int.from_bytes(await cfg(0x10, 4), "little") == (~((16 << 20) - 1) & 0xFFFFFFFF) | 0xC
    cap = (await cfg(0x34, 1))[0]
    cid, nxt, ctrl, table, pba = struct.unpack("<BBHII", await cfg(cap, 12))
    assert cid == 0x11 and ctrl & 0x7FF == dev.n_msix - 1
    assert table == dev.blocks[regs.MSIX.type_id][0] + regs.MSIX.array.offset and table & 7 == 0

    # BAR0: the chain's first block is the device id block, read through the model
    f, e, p = await c.call(vu.REGION_READ, struct.pack("<QII", 0, 0, 4))
    assert int.from_bytes(p[16:20], "little") == regs.DEVICE_ID.type_id
    f, e, p = await c.call(vu.REGION_READ, struct.pack("<QII", 16 << 20, 0, 4))
    assert f & vu.F_ERROR, "a read past BAR0 must fail"

    # DMA: a memfd shared at a random page-aligned address is the host memory there
    size = 1 << 20
    iova = rng.randrange(1, 64) << 20
    mfd = os.memfd_create("guest")
    os.ftruncate(mfd, size)
    view = mmap.mmap(mfd, size)
    f, e, p = await c.call(vu.DMA_MAP, struct.pack("<IIQQQ", 32, 3, 0, iova, size), fds=[mfd])
    assert not f & vu.F_ERROR
    host = dev.tb.lib.host_mem()
    data = rng.randbytes(4096)
    off = rng.randrange(0, size - 4096, 8)
    view[off:off + 4096] = data
    assert bytes(host[iova + off:iova + off + 4096]) == data
    back = rng.randbytes(64)
    host[iova + 64:iova + 128] = back
    assert view[64:128] == back
    f, e, p = await c.call(vu.DMA_UNMAP, struct.pack("<IIQQ", 24, 0, iova, size))
    assert struct.unpack("<IIQQ", p)[2:] == (iova, size)
    view[0:8] = b"\x55" * 8
    assert bytes(host[iova:iova + 8]) != b"\x55" * 8, "an unmapped region still aliases guest memory"

    # MSI-X: an eventfd for vector 1; the NIC's entry is programmed; a trigger signals it
    efd = os.eventfd(0, os.EFD_NONBLOCK)
    f, e, p = await c.call(vu.DEVICE_SET_IRQS, struct.pack("<IIIII", 20, vu.SET_DATA_EVENTFD | vu.SET_ACTION_TRIGGER,
                                                           vu.MSIX_IRQ, 1, 1), fds=[efd])
    assert not f & vu.F_ERROR
    ent = table + 16
    words = [int.from_bytes((await c.call(vu.REGION_READ, struct.pack("<QII", ent + 4 * i, 0, 4)))[2][16:20],
                            "little") for i in range(4)]
    assert words == [dev.msi_addr & 0xFFFFFFFF, dev.msi_addr >> 32, 1, 0], words
    await c.call(vu.DEVICE_SET_IRQS, struct.pack("<IIIII", 20, vu.SET_DATA_NONE | vu.SET_ACTION_TRIGGER,
                                                  vu.MSIX_IRQ, 1, 1))
    assert select.select([efd], [], [], 0)[0] and os.eventfd_read(efd) == 1
    f, e, p = await c.call(vu.DEVICE_SET_IRQS, struct.pack("<IIIII", 20, vu.SET_DATA_EVENTFD | vu.SET_ACTION_TRIGGER,
                                                           vu.MSIX_IRQ, dev.n_msix, 1), fds=[os.eventfd(0)])
    assert f & vu.F_ERROR, "a vector past the table must be refused"
    f, e, p = await c.call(99)
    assert f & vu.F_ERROR, "an unknown command must be answered with an error"
    f, e, p = await c.call(vu.REGION_READ, b"\x01\x02")
    assert f & vu.F_ERROR and e == 22, "a truncated request must be answered with EINVAL"
    f, e, p = await c.call(vu.REGION_READ, struct.pack("<QII", 0, 0, 4))
    assert int.from_bytes(p[16:20], "little") == regs.DEVICE_ID.type_id, "the server stopped answering"

    done.append(True)
    c.s.close()
    await server_task
    listener.close()
    assert dev.counts["dma_maps"] == 1 and dev.counts["bar_reads"] == 6   # block type twice + 4 table words


def test_vfio_user_protocol():
    run_cocotb(NIC, __name__, fast=True)
