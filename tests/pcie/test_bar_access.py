"""BAR0 register access through the real PCIe path: cocotbext-pcie's root complex and
UltraScale+ hard IP model in front of the NIC core.

The driver model enumerates the device, walks the register chain through BAR0, and
checks every answer a register access can get: reads and writes of 1 to 16 words with
byte enables, reads and writes where no register is (all ones / ignored, counted),
reads too long to serve (completer abort, counted), and that the NIC keeps working
after each of them.
"""
import random

import cocotb
from cocotb.triggers import Timer
from cocotbext.axi import AxiStreamBus
from cocotbext.pcie.core import RootComplex
from cocotbext.pcie.xilinx.us import UltraScalePlusPcieDevice

from offnic_sim.host import regs
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.host.regblocks import discover

BAR0_BYTES = 16 << 20


class PcieTB:
    """The NIC core behind the UltraScale+ PCIe model and a root complex."""

    def __init__(self, dut):
        self.dut = dut
        self.dev = UltraScalePlusPcieDevice(
            pcie_generation=3, pcie_link_width=8, user_clk_frequency=250e6, alignment="dword",
            cq_straddle=False, cc_straddle=False, rq_straddle=False, rc_straddle=False,
            rc_4tlp_straddle=False, max_payload_size=256, enable_client_tag=True,
            user_clk=dut.clock, user_reset=dut.reset,
            cq_bus=AxiStreamBus.from_prefix(dut, "s_axis_cq"),
            cc_bus=AxiStreamBus.from_prefix(dut, "m_axis_cc"),
        )
        self.dev.log.setLevel("WARNING")
        self.dev.functions[0].configure_bar(0, BAR0_BYTES, ext=True, prefetch=True)
        self.rc = RootComplex()
        self.rc.log.setLevel("WARNING")
        self.rc.make_port().connect(self.dev)

    async def init(self):
        await self.rc.enumerate()
        self.fn = self.rc.find_device(self.dev.functions[0].pcie_id)
        await self.fn.enable_device()
        await self.fn.set_master()
        self.bar = self.fn.bar_window[0]
        self.blocks = await discover(self.bar.read_dword, self.bar.write_dword, regs.BLOCKS)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def enumerate_and_discover(dut):
    tb = PcieTB(dut)
    await tb.init()
    assert {"device_id", "clock", "bar_access"} <= set(tb.blocks)
    dev = tb.blocks["device_id"][0]
    assert dev.base == 0
    assert await dev.read("board_id") == 1
    assert await tb.blocks["clock"][0].read("core_freq_khz") == 250_000


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def register_reads_and_writes(dut):
    tb = PcieTB(dut)
    await tb.init()
    dev = tb.blocks["device_id"][0]
    scratch = dev.addr("scratch")
    value = 0
    for _ in range(60):
        if random.random() < 0.5:
            value = random.getrandbits(32)
            await tb.bar.write_dword(scratch, value)
        else:  # a byte-enabled write of 1-3 bytes at a random lane
            n = random.randint(1, 3)
            lane = random.randint(0, 4 - n)
            chunk = random.randbytes(n)
            await tb.bar.write(scratch + lane, chunk)
            b = bytearray(value.to_bytes(4, "little"))
            b[lane:lane + n] = chunk
            value = int.from_bytes(b, "little")
        assert await tb.bar.read_dword(scratch) == value

    # Multi-word reads (a 64-bit readq, then a 16-word burst across the block) come back
    # as one completion, in order, equal to word-by-word reads.
    words = [await tb.bar.read_dword(a) for a in range(0, 64, 4)]
    assert await tb.bar.read_qword(scratch) == value | ((await tb.bar.read_dword(scratch + 4)) << 32)
    burst = await tb.bar.read(0, 64)
    assert [int.from_bytes(burst[i:i + 4], "little") for i in range(0, 64, 4)] == words

    # A two-word write lands in both words (the second is reserved: reads 0 after).
    await tb.bar.write(scratch, (0x11223344).to_bytes(4, "little") + (0x55667788).to_bytes(4, "little"))
    assert await tb.bar.read_dword(scratch) == 0x11223344
    assert await tb.bar.read_dword(scratch + 4) == 0


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def bad_requests_are_answered_and_counted(dut):
    tb = PcieTB(dut)
    await tb.init()
    stats = tb.blocks["bar_access"][0]
    dev = tb.blocks["device_id"][0]
    await dev.write("scratch", 0xC0FFEE)
    nowhere = 0x80000  # inside BAR0, outside every register block

    assert await tb.bar.read_dword(nowhere) == 0xFFFF_FFFF
    assert await stats.read("read_errors") == 1
    await tb.bar.write_dword(nowhere, 0x1234)
    assert await stats.read("write_errors") == 1
    assert await dev.read("scratch") == 0xC0FFEE

    # Longer than a register read can be: completer abort, and the NIC carries on.
    failed = False
    try:
        await tb.bar.read(0, 128, timeout=10, timeout_unit="us")
    except Exception as e:  # the root complex reports the abort as an error
        failed = True
        dut._log.info("long read refused: %r", e)
    assert failed, "a 128-byte register read must not succeed"
    assert await stats.read("unsupported") == 1
    assert await dev.read("scratch") == 0xC0FFEE
    await Timer(100, "ns")


def test_bar_access():
    run_cocotb(Design.of("nic.Nic", addr_bits=24, board_id=1), __name__)
