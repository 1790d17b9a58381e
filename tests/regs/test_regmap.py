"""The register map's outputs agree with each other and with the hardware.

RegMap.scala is the source of truth. These tests prove that the committed Python module,
C header and Markdown reference are what the generator makes from it today, that the C
header's values equal the Python module's (compiled with the system C compiler), and
that the RTL built from the same table answers as the Python module says: a driver-model
walk of the block chain over AXI-Lite finds every block with the right type, version and
registers.
"""
import random
import subprocess

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiLiteBus, AxiLiteMaster
from cocotbext.axi.constants import AxiResp

from offnic_sim import regmap_codegen, regs
from offnic_sim.harness import run_cocotb
from offnic_sim.hw import Design
from offnic_sim.regblocks import discover, walk_chain

ID_PARAMS = dict(fpga_id=0x04A63093, board_id=1, board_version=2, build_date=1_795_000_000,
                 git_hash=0x1234ABCD, core_freq_khz=250_000)


def test_generated_outputs_are_current():
    m = regmap_codegen.load_json()
    for path, render in regmap_codegen.OUTPUTS:
        assert path.read_text() == render(m), f"{path} is stale: run ./offnic regmap and commit the result"


def test_c_header_matches_python(tmp_path):
    checks = []
    for b in regs.BLOCKS.values():
        p = f"OFFNIC_RB_{b.name.upper()}"
        checks += [(f"{p}_TYPE", b.type_id), (f"{p}_VERSION", b.version), (f"{p}_WINDOW", b.window_bytes)]
        for r in b.regs.values():
            checks.append((f"{p}_REG_{r.name.upper()}", r.offset))
            for f in r.fields:
                checks.append((f"{p}_REG_{r.name.upper()}_{f.name.upper()}_MASK", f.mask))
    src = tmp_path / "dump.c"
    src.write_text('#include <stdio.h>\n#include "offnic_regs.h"\nint main(void) {\n' + "".join(
        f'  printf("%s %llu\\n", "{n}", (unsigned long long)({n}));\n' for n, _ in checks) + "  return 0;\n}\n")
    exe = tmp_path / "dump"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-I", str(regmap_codegen.C_OUT.parent), str(src),
                    "-o", str(exe)], check=True)
    got = dict(line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                       check=True).stdout.splitlines())
    for name, want in checks:
        assert int(got[name]) == want, f"{name}: C says {got[name]}, Python says {want}"
    assert len(checks) > 20


class RegsTB:
    def __init__(self, dut):
        self.dut = dut
        cocotb.start_soon(Clock(dut.clock, 4, unit="ns").start())
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clock, dut.reset)

    async def reset(self):
        self.dut.reset.value = 1
        await ClockCycles(self.dut.clock, 4)
        self.dut.reset.value = 0
        await ClockCycles(self.dut.clock, 2)

    async def read32(self, addr: int) -> int:
        r = await self.axil.read(addr, 4)
        assert r.resp == AxiResp.OKAY, f"read 0x{addr:x}: {r.resp}"
        return int.from_bytes(r.data, "little")

    async def write32(self, addr: int, value: int) -> None:
        w = await self.axil.write(addr, value.to_bytes(4, "little"))
        assert w.resp == AxiResp.OKAY, f"write 0x{addr:x}: {w.resp}"


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def chain_matches_regmap(dut):
    tb = RegsTB(dut)
    await tb.reset()
    chain = await walk_chain(tb.read32)
    assert [c.type_id for c in chain] == [regs.DEVICE_ID.type_id, regs.CLOCK.type_id]
    assert chain[0].base == 0, "device_id must be the first block, at offset 0"
    blocks = await discover(tb.read32, tb.write32, regs.BLOCKS)
    for name, btype in (("device_id", regs.DEVICE_ID), ("clock", regs.CLOCK)):
        (blk,) = blocks[name]
        assert blk.base % btype.window_bytes == 0
        assert await blk.read("version") == btype.version
        for reg in btype.regs.values():
            if reg.access == "const":
                assert await blk.read(reg.name) == reg.reset, f"{name}.{reg.name}"
            if reg.access == "rw":
                assert await blk.read(reg.name) == reg.reset, f"{name}.{reg.name} reset value"

    dev = blocks["device_id"][0]
    for reg, want in ID_PARAMS.items():
        if reg in regs.DEVICE_ID.regs:
            assert await dev.read(reg) == want, f"device_id.{reg}"
    clk = blocks["clock"][0]
    assert await clk.read("core_freq_khz") == ID_PARAMS["core_freq_khz"]


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def access_types(dut):
    tb = RegsTB(dut)
    await tb.reset()
    blocks = await discover(tb.read32, tb.write32, regs.BLOCKS)
    dev, clk = blocks["device_id"][0], blocks["clock"][0]

    # rw: full writes and byte-strobed writes read back exactly.
    value = 0
    for _ in range(40):
        data = random.getrandbits(32)
        nbytes = random.choice([1, 2, 4])
        lane = random.randrange(0, 5 - nbytes) if nbytes < 4 else 0
        lane -= lane % nbytes
        chunk = data.to_bytes(4, "little")[lane:lane + nbytes]
        w = await tb.axil.write(dev.addr("scratch") + lane, chunk)
        assert w.resp == AxiResp.OKAY
        as_bytes = bytearray(value.to_bytes(4, "little"))
        as_bytes[lane:lane + nbytes] = chunk
        value = int.from_bytes(as_bytes, "little")
        assert await dev.read("scratch") == value

    # ro and const: writes are ignored.
    before = await dev.read("board_id")
    await dev.write("board_id", before ^ 0xFFFF_FFFF)
    await dev.write("type", 0)
    assert await dev.read("board_id") == before
    assert await dev.read("type") == regs.DEVICE_ID.type_id

    # ro from hardware: the cycle counter runs; the wstrobe command restarts it.
    a = await clk.read("cycle_count")
    b = await clk.read("cycle_count")
    assert b > a
    await clk.write("control", regs.CLOCK.regs["control"].fields[0].mask)
    c = await clk.read("cycle_count")
    assert c < b, f"clear_cycles did not restart the counter ({b} -> {c})"
    assert await clk.read("control") == 0, "a wstrobe register reads 0"

    # unused offsets inside a block read 0; outside every block, DECERR, and nothing changes.
    spare = max(r.offset for r in regs.DEVICE_ID.regs.values()) + 4
    assert spare < regs.DEVICE_ID.window_bytes
    assert await tb.read32(dev.base + spare) == 0
    r = await tb.axil.read(0x10000, 4)
    assert r.resp == AxiResp.DECERR
    w = await tb.axil.write(0x10000, b"\x01\x02\x03\x04")
    assert w.resp == AxiResp.DECERR
    assert await dev.read("scratch") == value, "a write outside every block changed a register"


def test_device_regs_rtl():
    run_cocotb(Design.of("regs.DeviceRegs", addr_bits=24, **ID_PARAMS), __name__)
