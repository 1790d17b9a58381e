"""Register blocks as the driver model sees them: the types the generated module
`offnic_sim.host.regs` is made of, and discovery by walking the block chain.

The chain starts at BAR offset 0; every block begins with type, version and next
(absolute offset of the following block, 0 at the end). A driver looks blocks up by type
and checks the version's major number before using one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable

Read32 = Callable[[int], Awaitable[int]]
Write32 = Callable[[int, int], Awaitable[None]]

TYPE, VERSION, NEXT = 0x00, 0x04, 0x08
MAX_BLOCKS = 4096  # a chain longer than this is a loop: the hardware is broken


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    doc: str = ""

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Reg:
    name: str
    offset: int
    access: str            # rw, ro, const, wstrobe
    doc: str = ""
    reset: int | None = None  # rw: value after reset; const: the value
    fields: tuple[Field, ...] = ()

    @property
    def width(self) -> int:
        """Bits the hardware implements: up to the highest field, or all 32."""
        return max((f.lsb + f.width for f in self.fields), default=32)


@dataclass(frozen=True)
class RegArrayType:
    """A block's array of identical records (one per queue, vector, ...): record k's
    register r is at block offset `offset + k * stride + r.offset`. How many records a
    build has is in the block's `count` register."""
    offset: int
    max_count: int
    stride: int
    doc: str
    regs: dict[str, Reg] = field(default_factory=dict)

    def reg_offset(self, k: int, reg: str) -> int:
        if not 0 <= k < self.max_count:
            raise IndexError(f"record {k} is outside 0..{self.max_count - 1}")
        return self.offset + k * self.stride + self.regs[reg].offset


@dataclass(frozen=True)
class BlockType:
    name: str
    type_id: int
    version: int
    window_bytes: int
    doc: str
    regs: dict[str, Reg] = field(default_factory=dict)
    array: RegArrayType | None = None

    @property
    def major(self) -> int:
        return self.version >> 16


@dataclass(frozen=True)
class FoundBlock:
    type_id: int
    version: int
    base: int


async def walk_chain(read32: Read32, start: int = 0) -> list[FoundBlock]:
    """Every block in the chain, in order. Fails on a loop or a misaligned pointer."""
    found, seen, at = [], set(), start
    while True:
        if at in seen or len(found) >= MAX_BLOCKS:
            raise RuntimeError(f"register block chain loops at 0x{at:x}")
        if at % 4:
            raise RuntimeError(f"register block pointer 0x{at:x} is not 32-bit aligned")
        seen.add(at)
        found.append(FoundBlock(await read32(at + TYPE), await read32(at + VERSION), at))
        nxt = await read32(at + NEXT)
        if nxt == 0:
            return found
        at = nxt


class RegisterBlock:
    """One discovered block: register access by name, with the offsets of its type."""

    def __init__(self, btype: BlockType, base: int, read32: Read32, write32: Write32):
        self.type = btype
        self.base = base
        self._read32 = read32
        self._write32 = write32

    def addr(self, reg: str) -> int:
        return self.base + self.type.regs[reg].offset

    async def read(self, reg: str) -> int:
        return await self._read32(self.addr(reg))

    async def write(self, reg: str, value: int) -> None:
        await self._write32(self.addr(reg), value)

    def entry(self, k: int) -> "RegisterEntry":
        """Record `k` of the block's array (IndexError beyond max_count; records at or
        beyond `count()` exist in the address map but read 0 and ignore writes)."""
        if self.type.array is None:
            raise TypeError(f"block {self.type.name} has no register array")
        self.type.array.reg_offset(k, next(iter(self.type.array.regs)))  # range check
        return RegisterEntry(self, k)

    async def count(self) -> int:
        """Records this build has (the `count` register of a block with an array)."""
        return await self.read("count")


class RegisterEntry:
    """One record of a block's array: register access by name, like RegisterBlock."""

    def __init__(self, block: RegisterBlock, k: int):
        self.block = block
        self.index = k

    def addr(self, reg: str) -> int:
        return self.block.base + self.block.type.array.reg_offset(self.index, reg)

    async def read(self, reg: str) -> int:
        return await self.block._read32(self.addr(reg))

    async def write(self, reg: str, value: int) -> None:
        await self.block._write32(self.addr(reg), value)


async def discover(read32: Read32, write32: Write32, known: dict[int, BlockType]) -> dict[str, list[RegisterBlock]]:
    """Walk the chain and wrap every block whose type and major version this driver knows,
    by block name (a name maps to several blocks when a feature has several instances)."""
    blocks: dict[str, list[RegisterBlock]] = {}
    for fb in await walk_chain(read32):
        btype = known.get(fb.type_id)
        if btype is None or (fb.version >> 16) != btype.major:
            continue  # a newer or unknown feature: skip it, as a driver must
        blocks.setdefault(btype.name, []).append(RegisterBlock(btype, fb.base, read32, write32))
    return blocks
