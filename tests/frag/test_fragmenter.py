"""Bench: the TX Fragmenter (hw/src/offnic/offload/Fragmenter.scala) against Linux's
fragmentation as sim/offnic_sim/net/ipfrag.py reproduces it byte for byte.

The bench is the block's world: a 128 KiB TX RAM (reads answered two cycles later) in
which every frame is placed at a random word, a command per frame, and an AXI-Stream
sink that stalls at random. For each frame the expected output is computed
independently: `ipfrag.fragment(datagram, mtu)` behind the frame's Ethernet header (with
the UDP/TCP checksum over the whole datagram computed by scapy when checksum offload is
asked: the first fragment then leaves last), or the frame unchanged with its checksum
command in tuser; and its completion (status, fragments).

- random UDP datagrams of 0..65,507 payload bytes at link MTUs 68..9000 (1500 and 9000
  most), with and without checksum offload, with and without a VLAN tag, fragments of
  fragments (MF and an offset already set), padding past the total length;
- what passes whole: frames that fit, non-IPv4 frames of any size (IPv6, ARP), IPv4
  that fits once its link padding is ignored;
- what is refused with nothing sent: DF (status 1), options (2), a total length longer
  than the frame, offsets past 65,535 or the reserved flag (3); a checksum command whose
  field lies outside the first fragment: fragments sent unpatched, flagged;
- back-to-back small frames (the passthrough path) and 64 KB datagrams under stalls.
Seeds are printed by the harness (OFFNIC_SEED replays).
"""
import collections
import logging
import random
import sys
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamSink

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "offload"))  # checksum_ref
from checksum_ref import pack_cmd  # noqa: E402
from frag_frames import ETH, eth_header, udp_datagram
from offnic_sim.net import ipfrag
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.harness.hw import Design

RAM_BYTES = 128 * 1024
WORDS = RAM_BYTES // 32
OK, DF, OPTIONS, MALFORMED = 0, 1, 2, 3


class Case:
    def __init__(self, frame: bytes, mtu: int, cmd: int = 0, expect: list[bytes] | None = None,
                 status: int = OK, user: int | None = None, csum_bad: bool = False, note: str = ""):
        self.frame, self.mtu, self.cmd = frame, mtu, cmd
        self.expect = [frame] if expect is None else expect
        self.status, self.csum_bad, self.note = status, csum_bad, note
        self.user = (cmd if len(self.expect) == 1 and self.expect[0] == frame else 0) if user is None else user


def frag_case(rng: random.Random, payload: int, mtu: int, *, csum: bool, vlan: bool, mf=False, offset=0,
              pad=0) -> Case:
    full, seeded = udp_datagram(rng, payload, mf=mf, offset=offset)
    eh = eth_header(vlan, 0x0800)
    l3 = len(eh)
    frame = eh + (seeded if csum else full) + rng.randbytes(pad)
    cmd = pack_cmd(True, l3 + 20, l3 + 26) if csum else 0
    frags = ipfrag.fragment(full, mtu)
    if len(frags) == 1:   # fits: passes whole, TxChecksum downstream patches it
        return Case(frame, mtu, cmd, note=f"fits {payload} B mtu {mtu}")
    order = frags[1:] + frags[:1] if csum else frags   # with the checksum, the first fragment leaves last
    return Case(frame, mtu, cmd, [eh + f for f in order], user=0,
                note=f"{payload} B mtu {mtu} csum {csum} vlan {vlan} mf {mf} off {offset} pad {pad}")


class FragTB:
    def __init__(self, dut, seed: int):
        self.dut = dut
        self.rng = random.Random(seed)
        self.ram = bytearray(self.rng.randbytes(RAM_BYTES))
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clock, dut.reset)
        self.sink.log.setLevel(logging.WARNING)
        self.done = []
        self.reads = collections.deque()

    async def start(self) -> None:
        d = self.dut
        Clock(d.clock, 4, unit="ns").start()
        d.reset.value = 1
        d.s_cmd_valid.value = 0
        d.ram_rd_data.value = 0
        await ClockCycles(d.clock, 4)
        await FallingEdge(d.clock)
        d.reset.value = 0
        cocotb.start_soon(self._ram())

    async def _ram(self) -> None:
        """Data two cycles after the read; done records sampled mid-cycle."""
        d = self.dut
        while True:
            await FallingEdge(d.clock)
            self.reads.append(int(d.ram_rd_addr.value) if int(d.ram_rd_en.value) else None)
            if len(self.reads) > 2:
                a = self.reads.popleft()
                if a is not None:
                    d.ram_rd_data.value = int.from_bytes(self.ram[32 * a:32 * a + 32], "little")
            if int(d.m_done_valid.value):
                self.done.append((int(d.m_done_bits_status.value), int(d.m_done_bits_fragments.value),
                                  int(d.m_done_bits_csumBad.value)))

    def write(self, w: int, frame: bytes) -> None:
        """The frame at word w, wrapping at the RAM's end."""
        for i in range(0, len(frame), 32):
            at = (w * 32 + i) % RAM_BYTES
            self.ram[at:at + min(32, len(frame) - i)] = frame[i:i + 32]

    async def run(self, cases: list[Case], stall: float = 0.0) -> None:
        """Every case through the block, the sink stalling a `stall` fraction of cycles;
        checks every frame, tuser and completion. If the frames fit in the RAM together
        they are placed one after the other and their commands go back to back; otherwise
        each waits for the previous one's completion (the block reads a frame while it
        works on it)."""
        d = self.dut
        rng = self.rng
        self.sink.set_pause_generator(iter(lambda: rng.random() < stall, None) if stall else None)
        await FallingEdge(d.clock)   # commands are driven at falling edges
        together = sum(-(-len(c.frame) // 32) + 1 for c in cases) <= WORDS
        at = rng.randrange(WORDS)
        done0 = len(self.done)
        for c in cases:
            if together:
                w = at
                self.write(w, c.frame)
                at = (at + -(-len(c.frame) // 32)) % WORDS
            else:
                w = rng.randrange(WORDS)
                self.write(w, c.frame)
            d.s_cmd_bits_word.value = w
            d.s_cmd_bits_len.value = len(c.frame)
            d.s_cmd_bits_mtu.value = c.mtu
            d.s_cmd_bits_csum_enable.value = c.cmd & 1
            d.s_cmd_bits_csum_start.value = (c.cmd >> 1) & 0xFFFF
            d.s_cmd_bits_csum_offset.value = c.cmd >> 17
            d.s_cmd_valid.value = 1
            # at a falling edge: ready (from the block's state) says whether the next rising edge takes it
            while not int(d.s_cmd_ready.value):
                await FallingEdge(d.clock)
            await FallingEdge(d.clock)
            d.s_cmd_valid.value = 0
            if not together:
                await self.wait_done(done0 + 1, c.note)
                done0 += 1
                for _ in range(4):   # the last reads' data is back before the RAM is reused
                    await FallingEdge(d.clock)
        if together:
            await self.wait_done(done0 + len(cases), "batch: " + "; ".join(c.note for c in cases[:3]) + " ...")
        got_done = self.done[-len(cases):]
        for c, got in zip(cases, got_done):
            assert got[0] == c.status, f"{c.note}: status {got[0]}, want {c.status}"
            nf = len(c.expect) if c.status == OK else 0
            assert got[1] == nf, f"{c.note}: {got[1]} fragments, want {nf}"
            assert got[2] == int(c.csum_bad), f"{c.note}: csumBad {got[2]}"
        expect = [(c, f) for c in cases if c.status == OK for f in c.expect]
        for i, (c, want) in enumerate(expect):
            f = await with_timeout(self.sink.recv(), 5, "ms")
            got = bytes(f.tdata)
            if got != want:
                diff = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
                raise AssertionError(f"{c.note}: frame {i}: {len(got)} B, want {len(want)} B, first difference at "
                                     f"byte {diff}: got {got[diff:diff + 8].hex()} want {want[diff:diff + 8].hex()}")
            users = f.tuser if isinstance(f.tuser, list) else [f.tuser]
            assert int(users[0]) == c.user, f"{c.note}: tuser {int(users[0]):#x}, want {c.user:#x}"
        await ClockCycles(d.clock, 20)
        assert self.sink.empty(), "frames beyond the expected ones"
        cut = [c for c in cases if c.status == OK and len(c.expect) > 1]
        self.dut._log.info(f"{len(cases)} frames: {len(cut)} cut into {sum(len(c.expect) for c in cut)} fragments "
                           f"({sum(1 for c in cut if c.cmd & 1)} with the checksum patched in), "
                           f"{sum(1 for c in cases if c.status != OK)} refused, {len(expect)} frames checked")

    async def wait_done(self, n: int, what: str) -> None:
        for _ in range(400_000):
            if len(self.done) >= n:
                return
            await FallingEdge(self.dut.clock)
        raise AssertionError(f"no completion for {what} (a hang?): {len(self.done)} of {n} completions, "
                             f"last {self.done[-3:]}, sink holds {self.sink.count()} frames; " + self.debug())

    def debug(self) -> str:
        out = []
        for n in ("st", "eReads", "inflight", "s_cmd_valid", "s_cmd_ready", "m_axis_tvalid", "m_axis_tready",
                  "eEmit", "afterEmit"):
            try:
                out.append(f"{n}={int(getattr(self.dut, n).value)}")
            except Exception:
                pass
        return " ".join(out)


def random_cases(rng: random.Random, n: int, max_payload: int) -> list[Case]:
    out = []
    for _ in range(n):
        mtu = rng.choice([1500, 1500, 9000, 576, 68, rng.randrange(68, 9001)])
        size = rng.choice([rng.randrange(0, max_payload + 1), rng.randrange(0, 3 * mtu), mtu - 28,
                           mtu - 27, max_payload])
        size = max(0, min(size, max_payload))
        mf = rng.random() < 0.15
        offset = 8 * rng.randrange(0, 512) if mf or rng.random() < 0.1 else 0
        if offset + 28 + size > 65535:
            offset = 0
        # checksum offload only where the datagram starts with its UDP header
        out.append(frag_case(rng, size, mtu, csum=not mf and not offset and rng.random() < 0.5, vlan=rng.random() < 0.25, mf=mf,
                             offset=offset, pad=rng.choice([0, 0, 0, rng.randrange(1, 40)])))
    return out


def special_cases(rng: random.Random) -> list[Case]:
    cs = []
    # non-IPv4, larger than the MTU: untouched, command in tuser
    big = rng.randbytes(3000)
    cs.append(Case(eth_header(False, 0x86DD) + big, 1500, pack_cmd(True, 54, 60), note="IPv6 3000 B"))
    cs.append(Case(eth_header(True, 0x0806) + big[:100], 68, note="ARP behind VLAN over the MTU"))
    # DF, too big: refused
    full, _ = udp_datagram(rng, 2000, df=True)
    cs.append(Case(eth_header(False, 0x0800) + full, 1500, expect=[], status=DF, note="DF 2000 B"))
    # DF but fits: passes
    full, _ = udp_datagram(rng, 1000, df=True)
    cs.append(Case(eth_header(False, 0x0800) + full, 1500, note="DF fits"))
    # options (IHL 6): refused
    full, _ = udp_datagram(rng, 3000)
    h = bytearray(full[:20])
    h[0] = 0x46
    h[2:4] = (len(full) + 4).to_bytes(2, "big")
    opt = ipfrag.with_checksum(h + b"\x01\x01\x01\x00")
    cs.append(Case(eth_header(False, 0x0800) + opt + full[20:], 1500, expect=[], status=OPTIONS, note="options"))
    # total length past the frame: malformed
    t = bytearray(eth_header(False, 0x0800) + full)
    t[16:18] = (len(full) + 100).to_bytes(2, "big")
    cs.append(Case(bytes(t), 1500, expect=[], status=MALFORMED, note="total length past the frame"))
    # offset + length past 65535
    full, _ = udp_datagram(rng, 3000, mf=True, offset=64000)
    cs.append(Case(eth_header(False, 0x0800) + full, 1500, expect=[], status=MALFORMED, note="offset past 65535"))
    # reserved flag
    full, _ = udp_datagram(rng, 3000, reserved=True)
    cs.append(Case(eth_header(False, 0x0800) + full, 1500, expect=[], status=MALFORMED, note="reserved flag"))
    # checksum field outside the first fragment: sent unpatched, flagged
    full, _ = udp_datagram(rng, 3000)
    frame = eth_header(False, 0x0800) + full
    cs.append(Case(frame, 1500, pack_cmd(True, 34, 2000), [ETH + b"\x08\x00" + f for f in ipfrag.fragment(full, 1500)],
                   user=0, csum_bad=True, note="checksum field past the first fragment"))
    return cs


@cocotb.test(timeout_time=300, timeout_unit="ms")
async def fragmenter(dut):
    seed = cocotb.RANDOM_SEED
    tb = FragTB(dut, seed)
    await tb.start()
    rng = random.Random(seed ^ 0x5A5A)
    await tb.run(special_cases(rng))
    # back-to-back small frames (the passthrough path) and datagrams cut at once
    await tb.run([frag_case(rng, rng.randrange(0, 1400), 1500, csum=rng.random() < 0.5, vlan=False)
                  for _ in range(40)])
    await tb.run(random_cases(rng, 40, 20_000), stall=0.3)
    await tb.run([frag_case(rng, 65507, mtu, csum=c, vlan=v) for mtu, c, v in
                  ((1500, True, False), (9000, False, True), (576, True, True))], stall=0.5)


def test_fragmenter():
    run_cocotb(Design.of("offload.Fragmenter", ram_addr_bits=17), __name__)
