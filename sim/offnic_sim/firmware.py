"""Builds the control processor's firmware (firmware/) with Debian's bare-metal RISC-V GCC:
an ELF, a raw binary and a hex memory image (one 32-bit word per line, $readmemh's format)
for the instruction memory, cached under build/firmware/ by the sources' digest; and
builds the firmware's pure-C parts (load control, mailbox commands) as a host shared
library for the tests."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from offnic_sim.harness import hw

SRC = hw.ROOT / "firmware"
OUT = hw.BUILD / "firmware"
REGS_H = hw.ROOT / "sw-driver" / "include"
PREFIX = "riscv64-unknown-elf-"
DEFAULT_IMEM_BYTES = 16 << 10
DEFAULT_DMEM_BYTES = 8 << 10

# PicoRV32 as configured for the NIC: RV32IM (ENABLE_MUL/ENABLE_DIV), no compressed
# instructions. GCC 12 wants the CSR extension spelled out (shared/TOOLCHAIN.md).
ARCH = ["-march=rv32im_zicsr", "-mabi=ilp32"]
WARN = ["-Wall", "-Wextra", "-Werror", "-std=c11"]
CFLAGS = ARCH + WARN + [
    "-Os", "-ffreestanding", "-nostdlib", "-fno-builtin",
    "-fno-tree-loop-distribute-patterns",  # else GCC turns memcpy's own loop into a memcpy call
    "-ffunction-sections", "-fdata-sections", "-mno-relax",
    f"-I{SRC / 'include'}", f"-I{SRC / 'src'}", f"-I{REGS_H}",
]
FW_SOURCES = ["start.S", "main.c", "load_control.c", "mailbox_cmd.c", "fw_log.c", "timer.c",
              "nic_chain.c", "libc_min.c"]
# The parts with no hardware access, compiled for the host too.
PURE_SOURCES = ["load_control.c", "mailbox_cmd.c", "active_restore.c"]
HOST_CFLAGS = WARN + ["-O2", "-fPIC", "-shared", f"-I{SRC / 'include'}", f"-I{SRC / 'src'}"]


@dataclass
class Image:
    elf: Path
    bin: Path
    hex: Path
    imem_bytes: int
    dmem_bytes: int

    def words(self) -> list[int]:
        """The instruction memory's contents from address 0, as 32-bit words."""
        return [int(line, 16) for line in self.hex.read_text().split()]


def _inputs() -> list[Path]:
    files = sorted(p for p in SRC.rglob("*") if p.is_file() and p.suffix in (".c", ".h", ".S", ".in"))
    return files + [REGS_H / "offnic_regs.h"]


def build(imem_bytes: int = DEFAULT_IMEM_BYTES, dmem_bytes: int = DEFAULT_DMEM_BYTES) -> Image:
    """The firmware image for these memory sizes (built now if its sources changed)."""
    for name, n in (("imem", imem_bytes), ("dmem", dmem_bytes)):
        if n <= 0 or n % 4 or n > 1 << 20:
            raise ValueError(f"{name} size {n}: a multiple of 4 bytes up to 1 MiB (fw_bus.h)")
    gcc = shutil.which(PREFIX + "gcc")
    if gcc is None:
        raise RuntimeError(f"{PREFIX}gcc not found: run ./offnic setup (Debian gcc-riscv64-unknown-elf)")
    key = hw.digest(*(p.read_bytes() for p in _inputs()), CFLAGS, imem_bytes, dmem_bytes,
                    subprocess.run([gcc, "--version"], capture_output=True, text=True).stdout)[:16]
    d = OUT / f"fw-{key}"
    img = Image(d / "offnic_fw.elf", d / "offnic_fw.bin", d / "offnic_fw.hex", imem_bytes, dmem_bytes)
    OUT.mkdir(parents=True, exist_ok=True)
    with FileLock(str(d) + ".lock"):
        if img.hex.exists():
            return img
        d.mkdir(parents=True, exist_ok=True)
        ld = d / "link.ld"
        subprocess.run([gcc, "-E", "-P", "-x", "c", "-undef", "-DFW_LINKER_SCRIPT", f"-DFW_IMEM_BYTES={imem_bytes}",
                        f"-DFW_DMEM_BYTES={dmem_bytes}", f"-I{SRC / 'include'}", str(SRC / "link.ld.in"),
                        "-o", str(ld)], check=True)
        cc = subprocess.run([gcc, *CFLAGS, "-Wl,--gc-sections", "-Wl,--fatal-warnings", f"-T{ld}",
                             *(str(SRC / "src" / s) for s in FW_SOURCES), "-lgcc",
                             "-o", str(img.elf)], capture_output=True, text=True)
        if cc.returncode != 0:
            raise RuntimeError(f"firmware build failed:\n{cc.stdout}{cc.stderr}")
        subprocess.run([PREFIX + "objcopy", "-O", "binary", "--only-section=.text", "--only-section=.data",
                        str(img.elf), str(img.bin)], check=True)
        raw = img.bin.read_bytes()
        if len(raw) > imem_bytes:
            raise RuntimeError(f"firmware image {len(raw)} B > instruction memory {imem_bytes} B")
        raw += bytes(-len(raw) % 4)
        tmp = img.hex.with_suffix(".tmp")
        tmp.write_text("".join(f"{int.from_bytes(raw[i:i + 4], 'little'):08x}\n" for i in range(0, len(raw), 4)))
        tmp.rename(img.hex)
    return img


def picorv32_verilog() -> Path:
    """picorv32.v from the pinned PyPI package (pins.toml)."""
    return hw.picorv32_verilog()


def size_report(img: Image) -> str:
    out = subprocess.run([PREFIX + "size", "-A", str(img.elf)], capture_output=True, text=True, check=True).stdout
    return out


def build_host_lib() -> Path:
    """The pure parts (PURE_SOURCES) as a host shared library (ctypes), warnings errors."""
    srcs = [SRC / "src" / s for s in PURE_SOURCES]
    deps = srcs + [SRC / "src" / "load_control.h", SRC / "src" / "mailbox_cmd.h", SRC / "src" / "active_restore.h",
                   SRC / "include" / "fw_proto.h", SRC / "include" / "fw_bus.h"]
    key = hw.digest(*(p.read_bytes() for p in deps), HOST_CFLAGS)[:16]
    lib = OUT / f"libfw_host-{key}.so"
    OUT.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lib) + ".lock"):
        if not lib.exists():
            tmp = lib.with_suffix(".tmp")
            subprocess.run(["gcc", *HOST_CFLAGS, *map(str, srcs), "-o", str(tmp)], check=True)
            tmp.rename(lib)
    return lib


# The default image the NIC's instruction memory holds from reset: a generated Scala source
# (like the register map's outputs), so the hardware's sources and the generated RTL carry
# the image itself. `./offnic firmware` rewrites it; tests/cpu checks it is current.
DEFAULT_IMAGE_SCALA = hw.ROOT / "hw" / "src" / "offnic" / "cpu" / "DefaultFirmware.scala"


def default_image_scala(img: Image) -> str:
    words = img.words()
    text = "".join(f"{w:08x}" for w in words)
    chunks = [text[i:i + 96] for i in range(0, len(text), 96)] or [""]
    body = " +\n    ".join(f'"{c}"' for c in chunks)
    return (
        "package offnic.cpu\n\n"
        "// Generated by `./offnic firmware` (sim/offnic_sim/firmware.py) from firmware/: do not edit.\n\n"
        "/** The default firmware image, baked into the control processor's instruction memory. */\n"
        "object DefaultFirmware {\n"
        f"  val imemBytes = {img.imem_bytes}\n"
        f"  val dmemBytes = {img.dmem_bytes}\n"
        f"  /** {len(words)} words from address 0, 8 hex digits each. */\n"
        f"  private val hex: String =\n    {body}\n"
        "  def words: Seq[Long] = hex.grouped(8).map(java.lang.Long.parseLong(_, 16)).toSeq\n"
        "}\n")


def write_default_image(img: Image | None = None) -> bool:
    """Rewrite DefaultFirmware.scala from the default build; True if it changed."""
    img = img or build()
    text = default_image_scala(img)
    if DEFAULT_IMAGE_SCALA.exists() and DEFAULT_IMAGE_SCALA.read_text() == text:
        return False
    DEFAULT_IMAGE_SCALA.write_text(text)
    return True
