"""The control processor inside the whole NIC (issue 18), on the fast harness, driven only
through BAR0 as a driver would (offnic_sim.host.fw_host): the default image baked into the
instruction memory boots by itself; the host reads its version, state and log lines; mailbox
commands get their responses, malformed ones their error statuses (unknown opcode, bad
length, out of range), never a hang; an image write while the core runs is refused; an
image loaded through BAR0 runs (a broken one traps, the real one boots again) while frames
go both ways on both ports, every one checked. The firmware's chain walk over the NIC's
own register map (the second master on the register bus) must find every block the host
finds, with no bus error. OFFNIC_SEED replays."""
import random

import cocotb
from cocotb.triggers import Timer, with_timeout

from offnic_sim import firmware
from offnic_sim.fast.fast_tb import FastNicTB
from offnic_sim.fw import defs
from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.host.fw_host import STATUS_RUNNING, STATUS_TRAP, FwHost

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)  # the NIC's default build has the processor
H = defs.hdr


def frame(n: int, rng: random.Random) -> bytes:
    return b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\xb5" + rng.randbytes(n - 14)


async def traffic(tb: FastNicTB, rng: random.Random, rounds: int) -> int:
    """Frames out of and into both ports, each compared byte for byte; returns the count."""
    drv, moved = tb.drv, 0
    for _ in range(rounds):
        for port in range(2):
            f = frame(rng.choice([60, 64, 333, 1514]), rng)
            tok = await drv.send(port, f)
            got = await with_timeout(tb.ports[port].recv(), 100, "us")
            assert got[:len(f)] == f, f"port {port}: TX frame differs"
            assert (await tok.wait()).status == 0
            f = frame(rng.choice([60, 64, 333, 1514]), rng)
            await tb.ports[port].send(f)
            pkt = await drv.recv(port, timeout_us=100)
            assert pkt.ok and pkt.data == f and pkt.port == port, f"port {port}: RX frame differs"
            moved += 2
    return moved


async def booted(fw: FwHost, tb: FastNicTB, blocks_on_chain: int) -> list[str]:
    """Checks a fresh boot: state, version, the BOOTED event, the first log records."""
    await fw.wait_state(defs.FW_STATE_NO_TOE)  # no TCP engine in the NIC yet: load control idle
    assert await fw.read("fw_version") == defs.FW_VERSION
    status = await fw.read("status")
    assert status & STATUS_RUNNING and not status & STATUS_TRAP, f"status {status:#x}"
    seen = []

    async def boot_event():  # announced before the state, pushed by the main loop just after
        seen.extend(await fw.events())
        return (defs.FW_EVT_BOOTED, defs.FW_VERSION) in seen
    await fw.wait_for(boot_event, 50, "the BOOTED event")
    assert seen == [(defs.FW_EVT_BOOTED, defs.FW_VERSION)], seen
    recs = await fw.log_records()
    codes = [r[2] for r in recs]
    assert codes[:3] == [defs.FW_LOG_BOOT, defs.FW_LOG_NIC, defs.FW_LOG_LC_INIT], codes
    assert recs[0][4:7] == [defs.FW_VERSION, 16384, 8192], recs[0]
    # toe block: none (offset 0); blocks walked: every block the host's driver found; no chain error
    assert recs[1][4:7] == [0, blocks_on_chain, 0], (recs[1], blocks_on_chain)
    return await fw.log_lines()


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def processor_in_the_nic(dut):
    rng = random.Random(random.getrandbits(64))
    tb = FastNicTB(dut)
    await tb.init()
    drv = tb.drv
    await drv.open_queue_per_port()
    fw = FwHost(drv.block("fw"))
    blocks_on_chain = sum(len(v) for v in drv.blocks.values())
    assert await fw.read("imem_bytes") == 16384 and await fw.read("dmem_bytes") == 8192

    # The default image boots from reset.
    for line in await booted(fw, tb, blocks_on_chain):
        dut._log.info("%s", line)
    notified = await fw.read("notify_count")

    # Mailbox: good commands and malformed ones, each answered.
    rsp = await fw.command([H(defs.FW_OP_GET_VERSION, 0, 0x1234)])
    assert rsp == [H(defs.FW_OP_GET_VERSION, 3, 0x1234), defs.FW_ST_OK, defs.FW_VERSION, defs.FW_STATE_NO_TOE]
    payload = [rng.getrandbits(32) for _ in range(14)]
    rsp = await fw.command([H(defs.FW_OP_ECHO, 14, 7)] + payload)
    assert rsp == [H(defs.FW_OP_ECHO, 15, 7), defs.FW_ST_OK] + payload
    bad = [([H(0x99, 0, 1)], defs.FW_ST_UNKNOWN_OPCODE),
           ([H(defs.FW_OP_ECHO, 60, 2)], defs.FW_ST_BAD_LENGTH),
           ([H(defs.FW_OP_SET_WATERMARKS, 1, 3), 5], defs.FW_ST_BAD_LENGTH),
           ([H(defs.FW_OP_SET_STEPS, 2, 4), 0, 5], defs.FW_ST_OUT_OF_RANGE),
           ([H(defs.FW_OP_SET_WATERMARKS, 2, 5), 1000, 10], defs.FW_ST_OUT_OF_RANGE)]
    for words, st in bad:
        rsp = await fw.command(words)
        assert rsp == [H(words[0] & 0xFF, 1, words[0] >> 16), st], f"{words}: {rsp}"
    assert await fw.read("notify_count") == notified + 2 + len(bad)  # one doorbell per response
    cmd_logs = [r for r in await fw.log_records() if r[2] == defs.FW_LOG_CMD]
    assert [(r[4], r[5]) for r in cmd_logs[-len(bad):]] == [(w[0] & 0xFF, st) for w, st in bad]
    beat = await fw.read("heartbeat")
    await Timer(250, "us")
    assert await fw.read("heartbeat") > beat, "the heartbeat stands still"

    # An image write while the core runs is refused; the core runs on.
    refused = await fw.read("image_refused")
    await drv.block("fw").write("image_addr", 0)
    await drv.block("fw").write("image_data", 0)
    assert await fw.read("image_refused") == refused + 1
    rsp = await fw.command([H(defs.FW_OP_GET_VERSION, 0, 9)])
    assert rsp[1] == defs.FW_ST_OK

    # A broken image (illegal instructions from address 0): the core traps on it.
    await fw.load_image([0] * 16)
    async def trapped():
        return await fw.read("status") & STATUS_TRAP
    await fw.wait_for(trapped, 50, "the trap of an image of zeros")
    assert await fw.read("state") == defs.FW_STATE_RESET and await fw.read("log_head") == 0

    # The real image through BAR0 while frames flow both ways on both ports, and while the
    # host hammers a register during the boot, when the firmware walks the NIC's map: both
    # masters on the register bus at once, each must get its own answers.
    moved = await traffic(tb, rng, 2)
    loader = cocotb.start_soon(fw.load_image(firmware.build().words(), release=False))
    moved += await traffic(tb, rng, 6)
    await loader
    scratch, hammered = drv.block("device_id"), 0
    await fw.release()
    while await fw.read("state") != defs.FW_STATE_NO_TOE:
        v = rng.getrandbits(32)
        await scratch.write("scratch", v)
        assert await scratch.read("scratch") == v, "the host's register access was disturbed"
        hammered += 1
    assert hammered >= 3, f"the boot was over after {hammered} host accesses: nothing overlapped"
    dut._log.info("host register accesses checked while the firmware booted: %d pairs", hammered)
    for line in await booted(fw, tb, blocks_on_chain):
        dut._log.info("after reload: %s", line)
    for i in range(4):  # mailbox and traffic at once
        echo = cocotb.start_soon(fw.command([H(defs.FW_OP_ECHO, 3, 100 + i), 1, 2, 3]))
        moved += await traffic(tb, rng, 1)
        assert await echo == [H(defs.FW_OP_ECHO, 4, 100 + i), defs.FW_ST_OK, 1, 2, 3]
    assert await fw.read("bus_errors") == 0, "the firmware touched what nothing answers"
    assert not await fw.read("status") & STATUS_TRAP
    assert await drv.block("bar_access").read("read_errors") == 0
    assert await drv.block("bar_access").read("write_errors") == 0
    dut._log.info("frames moved and checked while the processor ran: %d", moved)


def test_nic_cpu():
    run_cocotb(NIC, __name__, fast=True)
