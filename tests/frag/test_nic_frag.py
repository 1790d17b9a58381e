"""The TX fragmentation offload on the whole NIC (docs/frag.md), through PCIe (driver
model) and the XGMII ports, against Linux's fragmentation as sim/offnic_sim/net/ipfrag.py
reproduces it:

- both ports with their own MTU (`tx_engine.mtu`): random UDP/IPv4 datagrams of
  0..65,507 payload bytes (IPv4's limit; the frame up to tx_engine.max_frame = 65,568),
  some behind a VLAN tag,
  some handed over as Linux does with CHECKSUM_PARTIAL (the whole datagram's checksum
  must land in the first fragment, which leaves last), split into 1..4 scatter/gather
  segments; every frame on the wire must equal `ipfrag.fragment()` of the datagram
  behind its Ethernet header (the MAC pads short fragments with zeros), every completion
  OK with the packet's length, and the counters count datagrams and fragments exactly;
- MTU 65535 (the reset value) cuts nothing: a 9 KB datagram leaves whole;
- refusals: DF over the MTU (rings.FRAG_DF), options (rings.FRAG_OPTIONS), a total length past the
  frame (rings.FRAG_MALFORMED): nothing sent, counted, and the queue carries on.
"""
import random
import sys
from pathlib import Path

import cocotb
from cocotb.triggers import Timer, with_timeout

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "offload"))

from frag_frames import eth_header, udp_datagram  # noqa: E402

from offnic_sim.net import ipfrag  # noqa: E402
from offnic_sim.host import rings  # noqa: E402
from offnic_sim.harness.runner import run_cocotb  # noqa: E402
from offnic_sim.harness.hw import Design  # noqa: E402
from offnic_sim.fast.fast_tb import FastNicTB  # noqa: E402

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
MAX_TX = 65568



async def setup(dut) -> FastNicTB:
    tb = FastNicTB(dut)
    await tb.init()
    for port in range(2):
        await tb.drv.open_tx_queue(port, size=64, port=port, buf_size=16384)
    for b in tb.drv.blocks["eth_port"]:
        await b.write("max_frame_len", 9018)
    return tb


async def set_mtu(tb: FastNicTB, mtu0: int, mtu1: int) -> None:
    await tb.drv.block("tx_engine").write("mtu", mtu0 | mtu1 << 16)


def segments(rng: random.Random, n: int) -> list[int] | None:
    """Split points: every 16,000 bytes at least (the TX buffers hold 16 KiB), and up to
    three more at random."""
    extra = rng.sample(range(1, n), min(n - 1, rng.randrange(0, 4))) if n > 1 else []
    pts = sorted(set(range(16000, n, 16000)) | set(extra))
    return pts or None


async def expect_frames(tb: FastNicTB, port: int, want: list[bytes], what: str) -> None:
    for i, w in enumerate(want):
        got = await with_timeout(tb.ports[port].recv(), 200, "us")
        assert got[:len(w)] == w and not any(got[len(w):]), \
            f"{what}: frame {i} of {len(want)}: {len(got)} B, want {len(w)} B"


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def fragments_like_linux(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    drv = tb.drv
    mtus = (1500, rng.choice([576, 1280, 68 + 8 * rng.randrange(0, 1100)]))
    await set_mtu(tb, *mtus)
    c0 = await drv.counters("tx_engine")
    datagrams = fragments = unpatched = 0
    for i in range(40):
        port = i % 2
        mtu = mtus[port]
        vlan = rng.random() < 0.2
        eh = eth_header(vlan, 0x0800)
        payload = rng.choice([rng.randrange(0, 65508), 65507, rng.randrange(0, 3 * mtu), rng.randrange(0, 3 * mtu),
                              mtu - 28, mtu - 27])
        full, seeded = udp_datagram(rng, max(0, min(payload, 65507)))
        csum = rng.random() < 0.5
        frame = eh + (seeded if csum else full)
        frags = ipfrag.fragment(full, mtu)
        if len(frags) > 1:
            datagrams += 1
            fragments += len(frags)
            want = [eh + f for f in (frags[1:] + frags[:1] if csum else frags)]
        else:
            # whole: the checksum offload downstream fills the field as for any frame
            want = [eh + full] if csum else [frame]
        l3 = len(eh)
        tok = await drv.send(port, frame, segments=segments(rng, len(frame)),
                             csum=(l3 + 20, l3 + 26) if csum else None)
        await expect_frames(tb, port, want, f"datagram {i}: {payload} B, MTU {mtu}, csum {csum}, vlan {vlan}")
        cpl = await tok.wait(200)
        assert cpl.status == rings.OK and cpl.len == len(frame), cpl
    await Timer(2, "us")
    c1 = await drv.counters("tx_engine")
    assert c1["frag_datagrams"] - c0["frag_datagrams"] == datagrams, (c0, c1)
    assert c1["frag_fragments"] - c0["frag_fragments"] == fragments, (c0, c1)
    assert c1["frag_csum_unpatched"] - c0["frag_csum_unpatched"] == unpatched
    assert c1["frag_refused"] == c0["frag_refused"]


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def off_and_refusals(dut):
    rng = random.Random(random.getrandbits(64))
    tb = await setup(dut)
    drv = tb.drv
    eh = eth_header(False, 0x0800)
    # reset value: never cut
    full, _ = udp_datagram(rng, 9000)
    tok = await drv.send(0, eh + full)
    await expect_frames(tb, 0, [eh + full], "MTU 65535")
    assert (await tok.wait(200)).status == rings.OK
    await set_mtu(tb, 1500, 1500)
    c0 = await drv.counters("tx_engine")
    bad = []
    full, _ = udp_datagram(rng, 3000, df=True)
    bad.append((eh + full, rings.FRAG_DF))
    h = bytearray(full[:20])
    h[0], h[6] = 0x46, 0
    h[2:4] = (len(full) + 4).to_bytes(2, "big")
    bad.append((eh + ipfrag.with_checksum(h + b"\x01\x01\x01\x00") + full[20:], rings.FRAG_OPTIONS))
    t = bytearray(eh + full)
    t[20] = 0
    t[16:18] = (len(full) + 64).to_bytes(2, "big")
    bad.append((bytes(t), rings.FRAG_MALFORMED))
    for frame, status in bad:
        tok = await drv.send(0, frame)
        cpl = await tok.wait(200)
        assert cpl.status == status and cpl.len == len(frame), (status, cpl)
    # the queue carries on; a DF datagram that fits goes out
    full, _ = udp_datagram(rng, 1000, df=True)
    tok = await drv.send(0, eh + full)
    await expect_frames(tb, 0, [eh + full], "DF that fits")
    assert (await tok.wait(200)).status == rings.OK
    await Timer(2, "us")
    assert tb.ports[0].sink.empty(), "a refused datagram reached the wire"
    c1 = await drv.counters("tx_engine")
    assert c1["frag_refused"] - c0["frag_refused"] == len(bad), (c0, c1)


def test_nic_frag():
    run_cocotb(NIC, __name__, fast=True)
