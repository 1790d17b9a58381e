"""The register map's outputs agree with each other and with the hardware.

RegMap.scala is the source of truth. These tests prove that the committed Python module,
C header and Markdown reference are what the generator makes from it today, that the C
header's values equal the Python module's (compiled with the system C compiler), and
that the RTL built from the same table answers as the Python module says: a driver-model
walk of the block chain over AXI-Lite finds every block with the right type, version and
registers. `regs.RegTestTop` chains every block type of the map (array blocks with a few
records) so that every register and every record layout is checked against the RTL.
"""
import random
import subprocess

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiLiteBus, AxiLiteMaster
from cocotbext.axi.constants import AxiResp

from offnic_sim.harness import regmap_codegen
from offnic_sim.host import regs
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design
from offnic_sim.host.regblocks import discover, walk_chain

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
                checks.append((f"{p}_REG_{r.name.upper()}_{f.name.upper()}_SHIFT", f.lsb))
        a = b.array
        if a is not None:
            checks += [(f"{p}_ARRAY_OFFSET", a.offset), (f"{p}_ARRAY_STRIDE", a.stride),
                       (f"{p}_ARRAY_MAX_COUNT", a.max_count)]
            for r in a.regs.values():
                checks.append((f"{p}_ENT_{r.name.upper()}", r.offset))
                checks.append((f"{p}_ENT({a.max_count - 1}, {p}_ENT_{r.name.upper()})",
                               a.reg_offset(a.max_count - 1, r.name)))
                for f in r.fields:
                    checks.append((f"{p}_ENT_{r.name.upper()}_{f.name.upper()}_MASK", f.mask))
                    checks.append((f"{p}_ENT_{r.name.upper()}_{f.name.upper()}_SHIFT", f.lsb))
    src = tmp_path / "dump.c"
    src.write_text('#include <stdio.h>\n#include "offnic_regs.h"\nint main(void) {\n' + "".join(
        f'  printf("%s %llu\\n", "{n.replace(" ", "")}", (unsigned long long)({n}));\n' for n, _ in checks) + "  return 0;\n}\n")
    exe = tmp_path / "dump"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-I", str(regmap_codegen.C_OUT.parent), str(src),
                    "-o", str(exe)], check=True)
    got = dict(line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                       check=True).stdout.splitlines())
    for name, want in checks:
        key = name.replace(" ", "")
        assert int(got[key]) == want, f"{name}: C says {got[key]}, Python says {want}"
    assert len(checks) > 20
    assert any(b.array for b in regs.BLOCKS.values()), "the map has no register array to check"


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
    run_cocotb(Design.of("regs.DeviceRegs", addr_bits=24, **ID_PARAMS), __name__,
               testcase="chain_matches_regmap,access_types")


# ------------------------------------------------------------------ every block, with arrays

TEST_TOP_COUNT = 3  # records per array block in regs.RegTestTop: fewer than any max_count


def pattern(block: int, record: int, offset: int) -> int:
    """What an RO register of regs.RegTestTop reads before any strobe (RegTestTop.pattern):
    block = index in the map, record = -1 for the body."""
    return ((block * 256 + record + 1) * 0x9E3779B1 + offset * 0x01000193) & 0xFFFF_FFFF


def width_mask(reg) -> int:
    return (1 << reg.width) - 1


async def check_regs(view, btype_regs, block: int, record: int, acc: int, count: int | None, where: str):
    """Every register of a body (record -1) or a record reads as the map says."""
    for reg in btype_regs.values():
        got = await view.read(reg.name)
        if reg.access == "const":
            want = reg.reset
        elif reg.access == "ro" and reg.name == "next":
            continue  # checked by the chain walk
        elif reg.access == "ro" and reg.name == "count" and count is not None:
            want = count
        elif reg.access == "ro":
            want = (pattern(block, record, reg.offset) + acc) & width_mask(reg)
        elif reg.access == "wstrobe":
            want = 0
        else:
            continue  # rw: the caller knows what it wrote
        assert got == want, f"{where}.{reg.name}: read 0x{got:x}, want 0x{want:x}"


async def full_map(dut):
    """(blocks in chain order as (index, type, RegisterBlock), RegsTB)"""
    tb = RegsTB(dut)
    await tb.reset()
    chain = await walk_chain(tb.read32)
    assert [c.type_id for c in chain] == list(regs.BLOCKS), "the chain is not RegMap.blocks in order"
    found = await discover(tb.read32, tb.write32, regs.BLOCKS)
    order = []
    for i, btype in enumerate(regs.BLOCKS.values()):
        (blk,) = found[btype.name]
        assert blk.base == chain[i].base and blk.base % btype.window_bytes == 0
        order.append((i, btype, blk))
    return order, tb


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def map_walk_full(dut):
    order, tb = await full_map(dut)
    for i, btype, blk in order:
        n = min(TEST_TOP_COUNT, btype.array.max_count) if btype.array else None
        await check_regs(blk, btype.regs, i, -1, 0, n, btype.name)
        for reg in btype.regs.values():
            if reg.access == "rw":
                assert await blk.read(reg.name) == reg.reset, f"{btype.name}.{reg.name} reset value"
        a = btype.array
        if a is None:
            continue
        assert await blk.count() == n
        for k in range(n):
            ent = blk.entry(k)
            await check_regs(ent, a.regs, i, k, 0, None, f"{btype.name}[{k}]")
            for reg in a.regs.values():
                if reg.access == "rw":
                    assert await ent.read(reg.name) == reg.reset, f"{btype.name}[{k}].{reg.name} reset value"
        # Offsets of a record no register uses, records beyond count, and the rest of the
        # window read 0.
        used = {r.offset for r in a.regs.values()}
        for off in range(0, a.stride, 4):
            if off not in used:
                assert await tb.read32(blk.base + a.offset + off) == 0, f"{btype.name}[0] +0x{off:x}"
        for k in sorted({n, a.max_count - 1}):
            for reg in a.regs.values():
                assert await blk.entry(k).read(reg.name) == 0, f"{btype.name}[{k}] (beyond count).{reg.name}"
        with_pytest_raises(IndexError, lambda: blk.entry(a.max_count))
        end = a.offset + a.max_count * a.stride
        if end < btype.window_bytes:
            assert await tb.read32(blk.base + end) == 0
            assert await tb.read32(blk.base + btype.window_bytes - 4) == 0
        spare = max(r.offset for r in btype.regs.values()) + 4
        if spare < a.offset:
            assert await tb.read32(blk.base + spare) == 0


def with_pytest_raises(exc, fn):
    try:
        fn()
    except exc:
        return
    raise AssertionError(f"expected {exc.__name__}")


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def record_arrays(dut):
    order, tb = await full_map(dut)
    for i, btype, blk in order:
        a = btype.array
        if a is None:
            continue
        n = min(TEST_TOP_COUNT, a.max_count)
        rw = [r for r in a.regs.values() if r.access == "rw"]
        # Distinct values in every RW register of every record, then all read back: no
        # record or register aliases another.
        want = {}
        for k in range(n):
            for reg in rw:
                v = random.getrandbits(32)
                await blk.entry(k).write(reg.name, v)
                want[k, reg.name] = v & width_mask(reg)
        # Writes beyond count and to the body's RO registers change nothing.
        for k in sorted({n, a.max_count - 1}):
            for reg in rw:
                await blk.entry(k).write(reg.name, 0xFFFF_FFFF)
                assert await blk.entry(k).read(reg.name) == 0
        await blk.write("count", 0xFFFF_FFFF)
        assert await blk.count() == n
        for k in range(n):
            for reg in rw:
                got = await blk.entry(k).read(reg.name)
                assert got == want[k, reg.name], f"{btype.name}[{k}].{reg.name}: 0x{got:x}"
        # Byte-strobed writes into one record's register.
        k, reg = n - 1, rw[0]
        value = want[k, reg.name]
        for _ in range(8):
            nbytes = random.choice([1, 2])
            lane = random.randrange(0, 4 // nbytes) * nbytes
            chunk = random.getrandbits(8 * nbytes).to_bytes(nbytes, "little")
            w = await tb.axil.write(blk.entry(k).addr(reg.name) + lane, chunk)
            assert w.resp == AxiResp.OKAY
            as_bytes = bytearray(value.to_bytes(4, "little"))
            as_bytes[lane:lane + nbytes] = chunk
            value = int.from_bytes(as_bytes, "little") & width_mask(reg)
            assert await blk.entry(k).read(reg.name) == value
        # Strobes: a write reaches the hardware once, in its own record only (RegTestTop
        # adds the written values to the record's RO registers).
        acc = [0] * n
        for reg in (r for r in a.regs.values() if r.access == "wstrobe"):
            for k in (1 % n, 0, 1 % n):
                v = random.getrandbits(32)
                await blk.entry(k).write(reg.name, v)
                acc[k] += v & width_mask(reg)
                for j in range(n):
                    await check_regs(blk.entry(j), a.regs, i, j, acc[j], None, f"{btype.name}[{j}]")

    # Body strobes work the same (clock.control, rss.indir_write).
    for i, btype, blk in order:
        strobes = [r for r in btype.regs.values() if r.access == "wstrobe"]
        acc = 0
        for reg in strobes:
            v = random.getrandbits(32)
            await blk.write(reg.name, v)
            acc += v & width_mask(reg)
        n = min(TEST_TOP_COUNT, btype.array.max_count) if btype.array else None
        await check_regs(blk, btype.regs, i, -1, acc, n, btype.name)

    # Outside every block: DECERR.
    last = order[-1][2]
    r = await tb.axil.read(last.base + last.type.window_bytes, 4)
    assert r.resp == AxiResp.DECERR


def test_full_map_rtl():
    run_cocotb(Design.of("regs.RegTestTop", addr_bits=24, count=TEST_TOP_COUNT), __name__,
               testcase="map_walk_full,record_arrays")
