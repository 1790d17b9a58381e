"""Shared pieces for the Ethernet MAC benches: a Python model of the MAC (padding, FCS,
DIC gap rule, receive verdicts), an XGMII recorder/parser, stat-pulse recorders and the
crafted XGMII "items" (frames with errors in them) the receive benches send.

Randomness comes from Python's `random`, seeded by cocotb from the run's seed (see
offnic_sim.harness.runner), so any failure replays with OFFNIC_SEED.
"""
from __future__ import annotations

import random
import struct
import zlib
from dataclasses import dataclass, field

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.eth import XgmiiFrame
from cocotbext.eth.constants import ETH_PREAMBLE

IDLE, START, TERM, ERROR = 0x07, 0xFB, 0xFD, 0xFE
IDLE_WORD = int.from_bytes(bytes([IDLE] * 8), "little")
MIN_PAYLOAD = 60  # padded to this, then 4 bytes of FCS: 64
PERIOD_10G_NS = 6.4  # 156.25 MHz
PERIOD_25G_NS = 2.56  # 390.625 MHz


# ----------------------------------------------------------------------- model

def fcs(data: bytes) -> bytes:
    return struct.pack("<L", zlib.crc32(data))


def tx_body(payload: bytes) -> bytes:
    """What the transmit MAC must send between SFD and /T/ for `payload`."""
    padded = bytes(payload) + bytes(max(0, MIN_PAYLOAD - len(payload)))
    return padded + fcs(padded)


def effective_ifg(cfg_ifg: int) -> int:
    """The MAC treats gaps below 8 bytes as 8 (EthMacTx)."""
    return max(cfg_ifg, 8)


def wire_bytes(payload_len: int, ifg: int) -> int:
    """Average bytes of wire per back-to-back frame: preamble+SFD, padded payload, FCS, IFG."""
    return 8 + max(payload_len, MIN_PAYLOAD) + 4 + ifg


def next_start(t_pos: int, deficit: int, ifg: int) -> int:
    """DIC rule: the earliest lane-0/lane-4 position whose gap from the /T/ at `t_pos`
    (/T/ included) is at least ifg + deficit - 3, i.e. deletes no more idles than the
    deficit leaves room for."""
    p = t_pos + ifg + deficit - 3
    return (p + 3) // 4 * 4


@dataclass
class RxVerdict:
    verdict: str  # good, fcs, runt, oversize, xgmii
    length: int  # stat_rx_bytes
    delivered: bytes | None  # m_axis frame (None: nothing delivered)


def rx_model(region: bytes, term: str, max_len: int) -> RxVerdict:
    """What the receive MAC makes of a frame whose bytes after the SFD are `region`,
    ended by the control character `term` ('T' = /T/, anything else = an XGMII error).
    Mirrors EthMacRx's rules: oversize cuts the frame in the first word past the limit."""
    n = len(region)
    k = 0
    while True:
        allowed = max_len - 8 * k
        j = n - 8 * k
        if j < 8:  # the end word: the control character is in it
            cut, over, taken = False, j > allowed, n
            break
        if allowed < 8:
            cut, over, taken = True, True, 8 * k + 8
            break
        k += 1
    if not cut and term != "T":
        verdict = "xgmii"
    elif over:
        verdict = "oversize"
    elif n < 64:
        verdict = "runt"
    elif region[-4:] != fcs(region[:-4]):
        verdict = "fcs"
    else:
        verdict = "good"
    delivered = bytes(region[: taken - 4]) if taken > 4 else None
    return RxVerdict(verdict, min(taken, 0xFFFF), delivered)


# ------------------------------------------------------------------- XGMII parse

@dataclass
class WireFrame:
    start: int  # byte position of /S/ (cycle * 8 + lane)
    lane: int
    data: bytearray = field(default_factory=bytearray)  # after /S/, preamble included
    errors: list[int] = field(default_factory=list)  # indexes into data that were /E/
    end: int = -1  # byte position of /T/

    @property
    def preamble(self) -> bytes:
        return bytes(self.data[:7])

    @property
    def body(self) -> bytes:
        return bytes(self.data[7:])


class XgmiiRecorder:
    """Records every non-idle word of an XGMII (data, ctrl) pair, with its cycle number
    counted from when the recorder started; parsed afterwards (cheap per cycle)."""

    def __init__(self, clock, data, ctrl):
        self.clock, self.data, self.ctrl = clock, data, ctrl
        self.cycle = 0
        self.words: list[tuple[int, int, int]] = []
        self._task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        edge = RisingEdge(self.clock)
        while True:
            await edge
            self.cycle += 1
            c = int(self.ctrl.value)
            d = int(self.data.value)
            if c != 0xFF or d != IDLE_WORD:
                self.words.append((self.cycle, d, c))

    def take(self) -> tuple[list[WireFrame], list[str]]:
        """Frames completed so far and any rule violations (the unfinished frame stays)."""
        frames, problems, rest = parse_xgmii(self.words)
        self.words = rest
        return frames, problems

    def stop(self) -> None:
        self._task.cancel()


def parse_xgmii(words: list[tuple[int, int, int]]) -> tuple[list[WireFrame], list[str], list]:
    """Frames (from /S/ to /T/) in a transmitted XGMII stream, and violations: /S/ outside
    lanes 0/4, anything but /I/ between frames, a control character other than /E/ or a
    gap (idle word) inside a frame. Returns the words of a frame still open as `rest`."""
    frames: list[WireFrame] = []
    problems: list[str] = []
    cur: WireFrame | None = None
    open_from = 0
    last_cycle = None
    for idx, (cyc, d, c) in enumerate(words):
        if cur is not None and last_cycle is not None and cyc != last_cycle + 1:
            problems.append(f"idle word inside the frame that started at byte {cur.start}")
            cur = None
        last_cycle = cyc
        for lane in range(8):
            b = (d >> (8 * lane)) & 0xFF
            k = (c >> lane) & 1
            pos = cyc * 8 + lane
            if cur is None:
                if k and b == IDLE:
                    continue
                if k and b == START:
                    if lane not in (0, 4):
                        problems.append(f"/S/ in lane {lane} at byte {pos}")
                    cur = WireFrame(pos, lane)
                    open_from = idx
                else:
                    problems.append(f"byte {b:#04x} (ctrl={k}) between frames at byte {pos}")
            else:
                if k and b == TERM:
                    cur.end = pos
                    frames.append(cur)
                    cur = None
                elif k and b == ERROR:
                    cur.errors.append(len(cur.data))
                    cur.data.append(b)
                elif k:
                    problems.append(f"control {b:#04x} inside the frame that started at byte {cur.start}")
                    cur = None
                else:
                    cur.data.append(b)
    rest = words[open_from:] if cur is not None else []
    return frames, problems, rest


def check_gaps(frames: list[WireFrame], ifg: int, back_to_back: bool, deficit: int = 0) -> tuple[list[int], int]:
    """Checks the inter-frame gaps of consecutive frames against the DIC rule: never
    shorter than ifg + deficit - 3 (the deficit as the rule keeps it, 0..3) and, when the
    source had every frame waiting (`back_to_back`), exactly the earliest aligned start.
    Returns the gaps and the final deficit."""
    gaps = []
    for prev, nxt in zip(frames, frames[1:]):
        g = nxt.start - prev.end
        assert g >= 5, f"gap of {g} bytes before the frame at byte {nxt.start}"
        assert ifg + deficit - g <= 3, \
            f"gap of {g} bytes with deficit {deficit}: more idles deleted than DIC allows (ifg {ifg})"
        if back_to_back:
            want = next_start(prev.end, deficit, ifg)
            assert nxt.start == want, (f"back-to-back frame started at byte {nxt.start}, the DIC rule says "
                                       f"{want} (previous /T/ at {prev.end}, deficit {deficit}, ifg {ifg})")
        deficit = max(0, deficit + ifg - g)
        gaps.append(g)
    return gaps, deficit


# ------------------------------------------------------------------ stat pulses

class StatRecorder:
    """Records the one-cycle stat pulses of a MAC half: for each cycle with a pulse, which
    one and the bytes value; checks at most one pulse per cycle and that the bytes output
    is zero without a pulse."""

    def __init__(self, dut, clock, pulses: dict[str, str], bytes_signal: str):
        self.clock = clock
        self.pulses = [(label, getattr(dut, name)) for label, name in pulses.items()]
        self.bytes = getattr(dut, bytes_signal)
        self.events: list[tuple[str, int]] = []
        self.problems: list[str] = []
        self._task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        edge = RisingEdge(self.clock)
        while True:
            await edge
            hit = [label for label, sig in self.pulses if sig.value == 1]
            nbytes = int(self.bytes.value)
            if len(hit) > 1:
                self.problems.append(f"several stat pulses in one cycle: {hit}")
            if hit:
                self.events.append((hit[0], nbytes))
            elif nbytes:
                self.problems.append(f"bytes output {nbytes} without a pulse")

    def take(self) -> list[tuple[str, int]]:
        got, self.events = self.events, []
        return got

    def counts(self, events: list[tuple[str, int]]) -> dict[str, int]:
        out = {label: 0 for label, _ in self.pulses}
        for label, _ in events:
            out[label] += 1
        return out


TX_STATS = {"frame": "stat_tx_frame", "error": "stat_tx_error"}
RX_STATS = {"good": "stat_rx_frame_good", "fcs": "stat_rx_fcs_error", "runt": "stat_rx_runt",
            "oversize": "stat_rx_oversize", "xgmii": "stat_rx_xgmii_error"}


# --------------------------------------------------------- receive-side traffic

@dataclass
class RxItem:
    """One XgmiiFrame for XgmiiSource (which puts /S/ over its first byte and appends
    /T/) and the MAC frames it holds, as (region bytes, terminating control) pairs."""
    frame: XgmiiFrame
    expect: list[tuple[bytes, str]]
    kind: str


def _raw(parts: list[tuple[bytes, int]]) -> XgmiiFrame:
    data, ctrl = bytearray(), []
    for chunk, k in parts:
        data.extend(chunk)
        ctrl.extend([k] * len(chunk))
    return XgmiiFrame(data, ctrl)


def item_good(payload: bytes, kind: str = "good") -> RxItem:
    """A frame with its right FCS (a runt or oversize if `payload` is short or long)."""
    region = bytes(payload) + fcs(payload)
    return RxItem(_raw([(ETH_PREAMBLE + region, 0)]), [(region, "T")], kind)


def item_bad_fcs(payload: bytes) -> RxItem:
    region = bytearray(bytes(payload) + fcs(payload))
    bit = random.randrange(len(region) * 8)  # one flipped bit anywhere, FCS included
    region[bit // 8] ^= 1 << (bit % 8)
    return RxItem(_raw([(ETH_PREAMBLE + region, 0)]), [(bytes(region), "T")], "bad_fcs")


def item_raw_region(region: bytes, kind: str) -> RxItem:
    """Any bytes after the SFD, ended by /T/ (runts of 0..63 bytes, no-FCS frames...)."""
    return RxItem(_raw([(ETH_PREAMBLE + region, 0)]), [(bytes(region), "T")], kind)


def item_error_char(payload: bytes, code: int = ERROR) -> RxItem:
    """A control character (normally /E/) replaces one byte of the frame or its FCS; the
    rest follows as data, then /T/."""
    region = bytes(payload) + fcs(payload)
    p = random.randrange(len(region))
    if code == START:  # keep it out of lanes 0 and 4, where it would start a frame
        p = random.choice([k for k in range(len(region)) if k % 4])
    parts = [(ETH_PREAMBLE + region[:p], 0), (bytes([code]), 1), (region[p + 1:], 0)]
    return RxItem(_raw(parts), [(region[:p], "E")], "error_char")


def item_cut_by_start(payload1: bytes, payload2: bytes) -> RxItem:
    """A frame cut short by the /S/ of the next, whole frame. The second /S/ is placed a
    multiple of 4 bytes after the first, so it lands in lane 0 or 4 as the first does."""
    region1 = bytes(payload1) + fcs(payload1)
    cut = random.randrange(0, len(region1) // 4 + 1) * 4  # bytes of frame 1 before the /S/
    region2 = bytes(payload2) + fcs(payload2)
    parts = [(ETH_PREAMBLE + region1[:cut], 0), (bytes([START]), 1), (ETH_PREAMBLE[1:] + region2, 0)]
    return RxItem(_raw(parts), [(region1[:cut], "S"), (region2, "T")], "cut_by_start")


def item_tight_pair(payload1: bytes, payload2: bytes, gap: int | None = None) -> RxItem:
    """Two good frames with a gap of 1..8 bytes (/T/ included) between them, shorter than
    any transmitter may leave: /T/ and the next /S/ can share a word."""
    region1 = bytes(payload1) + fcs(payload1)
    region2 = bytes(payload2) + fcs(payload2)
    pos_t = 8 + len(region1)  # /T/ position from the item's /S/
    g = (-pos_t) % 4 or 4
    if gap is not None and gap > g:
        g += (gap - g + 3) // 4 * 4
    parts = [(ETH_PREAMBLE + region1, 0), (bytes([TERM] + [IDLE] * (g - 1) + [START]), 1),
             (ETH_PREAMBLE[1:] + region2, 0)]
    return RxItem(_raw(parts), [(region1, "T"), (region2, "T")], "tight_pair")


def item_fragment() -> RxItem:
    """/S/ and part of a preamble, then a control character: not a frame, not counted."""
    k = random.randint(1, 7)
    parts = [(ETH_PREAMBLE[:k], 0)]
    if random.random() < 0.5:
        parts.append((bytes([ERROR]), 1))
    return RxItem(_raw(parts), [], "fragment")


def random_payload(n: int) -> bytes:
    return random.randbytes(n)

