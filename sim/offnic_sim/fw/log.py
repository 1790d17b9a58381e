"""The firmware's log records (firmware/include/fw_bus.h FW_LOG_RING, fw_proto.h FW_LOG_*)
as the lines a driver or a demo prints."""
from __future__ import annotations

from offnic_sim.fw import defs

_ARGS = {
    defs.FW_LOG_BOOT: "version {0:#010x}, imem {1} B, dmem {2} B",
    defs.FW_LOG_NIC: "toe block at {0:#x} ({1} blocks walked, chain error {2})",
    defs.FW_LOG_LC_INIT: "load control: Hard_limit {0}, queue {1}, Hiwat {2}, Lowat {3}",
    defs.FW_LOG_SOFT_LIMIT: "Soft_limit {0} -> {1}, state {2}, Qlen {3}",
    defs.FW_LOG_CMD: "mailbox command {0:#04x}: status {1}, tag {2}",
    defs.FW_LOG_WATERMARKS: "set watermarks Hiwat {0}, Lowat {1}: status {2}",
    defs.FW_LOG_CLAMPED: "input out of range: Qlen {0}, Cnum {1} ({2} clamped so far)",
}
_STATES = {0: "MONITOR", 1: "DECREASE", 2: "INCREASE"}


def render(rec: list[int]) -> str:
    """One record (FW_LOG_RECORD_WORDS words: number, time, code, nargs, args) as a line."""
    n, t_us, code, nargs = rec[:4]
    args = list(rec[4:4 + min(nargs, 4)]) + [0] * 4
    if code == defs.FW_LOG_SOFT_LIMIT:
        args[2] = _STATES.get(args[2], args[2])
    fmt = _ARGS.get(code)
    text = fmt.format(*args) if fmt else f"code {code} args {rec[4:4 + min(nargs, 4)]}"
    return f"fw[{n}] {t_us} us: {text}"
