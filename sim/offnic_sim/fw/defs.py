"""The firmware's numeric #defines (firmware/include/fw_bus.h, fw_proto.h) read from the
headers themselves, so the host side and the tests never carry a second copy."""
from __future__ import annotations

import re
from pathlib import Path

INCLUDE = Path(__file__).resolve().parents[3] / "firmware" / "include"
_DEFINE = re.compile(r"^#define\s+(FW_\w+)\s+(?:FW_U32\()?(0x[0-9a-fA-F]+|\d+)u?\)?", re.M)


def _read(name: str) -> dict[str, int]:
    return {m[1]: int(m[2], 0) for m in _DEFINE.finditer((INCLUDE / name).read_text())}


DEFS: dict[str, int] = {**_read("fw_bus.h"), **_read("fw_proto.h")}


def __getattr__(name: str) -> int:  # defs.FW_REG_MAGIC etc.
    try:
        return DEFS[name]
    except KeyError:
        raise AttributeError(name) from None


def hdr(op: int, length: int, tag: int) -> int:
    return (op & 0xFF) | ((length & 0xFF) << 8) | ((tag & 0xFFFF) << 16)


def names(prefix: str) -> dict[int, str]:
    """value -> name for one family of constants, e.g. names('FW_LOG_') for log codes."""
    return {v: k for k, v in DEFS.items() if k.startswith(prefix)}
