"""A board's facts (constraints/<board>/board.toml): its part, its top level's ports with
their package pins and I/O standards, its input clocks, bitstream settings and the
vendor IP's configuration. Loaded and checked here; xdc.py and vivado.py render them."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

CONSTRAINTS = Path(__file__).resolve().parents[3] / "constraints"
BOARDS = ("k3pq", "as02mc04")
GT = "GT"  # transceiver and its reference clock pins: a package pin, no I/O standard

# FFVB676: rows A..AF without the letters Xilinx packages skip (I O Q S X Z), columns 1..26
_ROWS = [r for r in "ABCDEFGHJKLMNPRTUVWY"] + ["A" + r for r in "ABCDEF"]
_PIN = re.compile(r"^([A-Z]{1,2})([0-9]{1,2})$")
IOSTANDARDS = {"LVCMOS12", "LVCMOS18", "LVCMOS33", "LVDS", "SSTL12_DCI", "DIFF_SSTL12_DCI", "POD12_DCI",
               "DIFF_POD12_DCI", GT}


def valid_pin(pin: str) -> bool:
    m = _PIN.match(pin)
    return bool(m) and m.group(1) in _ROWS and 1 <= int(m.group(2)) <= 26


@dataclass(frozen=True)
class Port:
    name: str
    dir: str                    # in | out | inout
    pins: tuple[str, ...]       # one per bit, bit 0 first
    io: str
    pullup: bool = False
    slew: str | None = None
    drive: int | None = None
    async_: bool = False        # no timing relation to any clock: false path

    @property
    def width(self) -> int:
        return len(self.pins)

    def bits(self) -> list[tuple[str, str]]:
        """(Vivado port name, pin) per bit; a one-bit port is not a bus."""
        if self.width == 1:
            return [(self.name, self.pins[0])]
        return [(f"{self.name}[{i}]", p) for i, p in enumerate(self.pins)]


@dataclass(frozen=True)
class Clock:
    port: str
    name: str
    period_ns: float


@dataclass
class Board:
    name: str
    title: str
    part: str
    ports_used: int
    dram: bool
    ports: list[Port]
    clocks: list[Clock]
    bitstream: dict[str, str]
    flash: dict
    ip: dict[str, dict[str, str]] = field(default_factory=dict)

    def port(self, name: str) -> Port:
        return next(p for p in self.ports if p.name == name)

    def problems(self) -> list[str]:
        """Everything wrong with the facts as constraints: bad or reused pins, unknown
        standards, clocks on no port, options that make no sense for a direction."""
        out, used = [], {}
        names = [p.name for p in self.ports]
        out += [f"port {n} declared twice" for n in sorted({n for n in names if names.count(n) > 1})]
        for p in self.ports:
            if p.dir not in ("in", "out", "inout"):
                out.append(f"{p.name}: direction {p.dir!r}")
            if p.io not in IOSTANDARDS:
                out.append(f"{p.name}: unknown I/O standard {p.io}")
            if p.io == GT and (p.pullup or p.slew or p.drive or p.async_):
                out.append(f"{p.name}: a transceiver pin takes no I/O options")
            if p.dir == "in" and (p.slew or p.drive):
                out.append(f"{p.name}: slew/drive on an input")
            for bit, pin in p.bits():
                if not valid_pin(pin):
                    out.append(f"{bit}: {pin} is not an FFVB676 pin")
                if pin in used:
                    out.append(f"{bit}: pin {pin} already used by {used[pin]}")
                used[pin] = bit
        for c in self.clocks:
            if c.port not in names:
                out.append(f"clock {c.name} on no port ({c.port})")
            elif self.port(c.port).dir != "in":
                out.append(f"clock {c.name}: {c.port} is not an input")
        return out


def vendor_ip(board_ip: dict[str, dict]) -> dict[str, dict]:
    """The board's vendor IP: constraints/common/ip.toml's settings, which both boards
    share, with the board's own added or overriding them, IP by IP."""
    common = tomllib.loads((CONSTRAINTS / "common" / "ip.toml").read_text())["ip"]
    return {key: {**common.get(key, {}), **board_ip.get(key, {})} for key in {**common, **board_ip}}


def load(board: str) -> Board:
    path = CONSTRAINTS / board / "board.toml"
    d = tomllib.loads(path.read_text())
    b = d["board"]
    ports = [Port(name=p["name"], dir=p["dir"], pins=tuple(p["pins"]), io=p["io"], pullup=p.get("pullup", False),
                  slew=p.get("slew"), drive=p.get("drive"), async_=p.get("async", False)) for p in d["port"]]
    clocks = [Clock(c["port"], c["name"], float(c["period_ns"])) for c in d.get("clock", [])]
    return Board(name=b["name"], title=b["title"], part=b["part"], ports_used=b["ports_used"], dram=b["dram"],
                 ports=ports, clocks=clocks, bitstream=d.get("bitstream", {}), flash=d.get("flash", {}),
                 ip=vendor_ip(d.get("ip", {})))
