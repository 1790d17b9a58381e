"""`./offnic firmware`'s image: RV32IM for PicoRV32 as configured (32-bit instructions only:
no compressed ISA in the core), the hex image the same words as the binary, memory sizes
that are parameters, and a clean refusal when the firmware does not fit."""
from __future__ import annotations

import re
import subprocess

import pytest

from offnic_sim import firmware


def test_image_is_rv32im_without_compressed_instructions():
    img = firmware.build()
    hdr = subprocess.run([firmware.PREFIX + "readelf", "-h", str(img.elf)], capture_output=True, text=True,
                         check=True).stdout
    assert "ELF32" in hdr and "RISC-V" in hdr
    flags = int(re.search(r"Flags:\s+(0x[0-9a-f]+)", hdr)[1], 16)
    assert flags & 0x1 == 0, "compressed instructions flagged (EF_RISCV_RVC)"
    dis = subprocess.run([firmware.PREFIX + "objdump", "-d", str(img.elf)], capture_output=True, text=True,
                         check=True).stdout
    insns = re.findall(r"^\s+[0-9a-f]+:\s+([0-9a-f]+)\s+(\S+)", dis, re.M)
    assert len(insns) > 200
    # (constants in .text, e.g. a switch's jump table, show as .2byte/.word: not code)
    short = [i for i in insns if len(i[0]) != 8 and not i[1].startswith(".")]
    assert not short, f"16-bit instructions: {short[:5]}"
    # PicoRV32 without IRQs: no mret/wfi/fences it would trap on or ignore
    assert not {m for _, m in insns} & {"mret", "wfi", "fence.i", "ecall"}
    raw = img.bin.read_bytes() + bytes(-img.bin.stat().st_size % 4)
    assert img.words() == [int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4)]
    assert len(raw) <= img.imem_bytes


def test_memory_sizes_are_parameters():
    small = firmware.build(4 << 10, 2 << 10)
    syms = subprocess.run([firmware.PREFIX + "nm", str(small.elf)], capture_output=True, text=True,
                          check=True).stdout
    assert re.search(r"^00100800 \w __stack_top$", syms, re.M), "stack top = DMEM base + 2 KiB"
    with pytest.raises(RuntimeError, match="data memory too small"):
        firmware.build(4 << 10, 1 << 10)
    with pytest.raises(RuntimeError, match="will not fit|overflowed|too small"):
        firmware.build(1 << 10, 8 << 10)
    with pytest.raises(ValueError):
        firmware.build(4097, 8 << 10)
