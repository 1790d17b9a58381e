"""The real firmware image (`./offnic firmware`) on the real PicoRV32 Verilog (PyPI's
pythondata-cpu-picorv32) in Verilator, its memories in block-RAM style, loaded as the host
will load it (core in reset, image written, released); cocotb plays the NIC and the host
(fw_nic_side.py). Checked: boot, version and state; mailbox round trips, malformed commands
answered with their errors; load control on a closed-loop Qlen/Cnum trace with hostile
inputs and watermark changes, step by step against the Python model
(offnic_sim/fw/load_control_model.py), the Soft_limit announcements in the same order with
the same values under event-queue back-pressure; the log ring; the chain walk on a NIC
without the TCP engine and on a malformed chain. OFFNIC_SEED replays."""
from __future__ import annotations

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from offnic_sim import firmware
from offnic_sim.fw import defs, log as fw_log
from offnic_sim.fw.load_control_model import STATE_CODE, LoadControlModel
from offnic_sim.harness import runner
from offnic_sim.host import regs

from fw_nic_side import CLK_NS, NicSide
from lc_traces import closed_loop

HERE = firmware.hw.ROOT / "tests" / "firmware"
H = defs.hdr
BOOT_CYCLES = 50000


async def _boot(dut, **kw) -> NicSide:
    cfg = runner.bench_config()
    rng = random.Random(cocotb.RANDOM_SEED)
    cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
    nic = NicSide(dut, rng, **kw)
    cocotb.start_soon(nic.serve())
    await nic.load_and_boot(firmware.Image(*map(firmware.Path, cfg["image"]), 0, 0).words())
    return nic


async def _booted(nic: NicSide, state: int) -> None:
    await nic.wait_for(lambda: nic.fw.get(defs.FW_REG_STATE) == state, BOOT_CYCLES, f"firmware state {state}")
    await nic.wait_for(lambda: nic.events, BOOT_CYCLES, "the boot event")


def _final_checks(nic: NicSide) -> None:
    assert int(nic.dut.trap.value) == 0, "the core trapped"
    assert int(nic.dut.mem_error.value) == 0, "the firmware touched no memory or wrote its code"
    assert nic.bus_errors == 0, f"{nic.bus_errors} firmware bus accesses nothing answers"
    assert not nic.breaches, f"firmware broke the bus protocol: {nic.breaches[:5]}"


@cocotb.test()
async def firmware_runs_load_control(dut):
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    hard, qsize = 256, 64
    nic = await _boot(dut, hard_limit=hard, queue_size=qsize)
    await _booted(nic, defs.FW_STATE_RUNNING)
    assert nic.fw[defs.FW_REG_VERSION] == defs.FW_VERSION
    assert nic.events[0] == (defs.FW_EVT_BOOTED, defs.FW_VERSION)
    model = LoadControlModel(hard, qsize)
    assert (nic.fw[defs.FW_REG_LC_SOFT_LIMIT], nic.fw[defs.FW_REG_LC_HIWAT], nic.fw[defs.FW_REG_LC_LOWAT]) == \
        (model.soft_limit, model.hiwat, model.lowat)

    # mailbox round trips
    rsp = await nic.command([H(defs.FW_OP_GET_VERSION, 0, 0x1234)])
    assert rsp == [H(defs.FW_OP_GET_VERSION, 3, 0x1234), defs.FW_ST_OK, defs.FW_VERSION, defs.FW_STATE_RUNNING]
    payload = [rng.getrandbits(32) for _ in range(14)]
    rsp = await nic.command([H(defs.FW_OP_ECHO, 14, 7)] + payload)
    assert rsp == [H(defs.FW_OP_ECHO, 15, 7), defs.FW_ST_OK] + payload
    commands = 2
    for words, status in [([H(0x99, 0, 1)], defs.FW_ST_UNKNOWN_OPCODE),
                          ([H(defs.FW_OP_ECHO, 60, 2)], defs.FW_ST_BAD_LENGTH),
                          ([H(defs.FW_OP_SET_STEPS, 2, 3), 0, 5], defs.FW_ST_OUT_OF_RANGE)]:
        rsp = await nic.command(words)
        assert rsp == [H(words[0] & 0xFF, 1, words[0] >> 16), status], f"{words}: {rsp}"
        commands += 1
    watermark_cmds = 0

    # load control on a trace, step by step against the model
    clamped_steps = 0
    for i, (qlen, cnum) in enumerate(closed_loop(rng, hard, qsize, 250, lambda: model.soft_limit)):
        if i in (80, 160, 200):  # the host moves the watermarks: twice sensibly, once Hiwat < Lowat
            hi, lo = {80: (40, 8), 160: (10, 30), 200: (56, 4)}[i]
            rsp = await nic.command([H(defs.FW_OP_SET_WATERMARKS, 2, i), hi, lo])
            assert rsp[1] == model.set_watermarks(hi, lo), f"SET_WATERMARKS {hi} {lo}: {rsp}"
            assert (nic.fw[defs.FW_REG_LC_HIWAT], nic.fw[defs.FW_REG_LC_LOWAT]) == (model.hiwat, model.lowat)
            commands += 1
            watermark_cmds += 1
        clamped = model.clamped
        model.step(qlen, cnum)
        clamped_steps += model.clamped != clamped
        await nic.sample(qlen, cnum)
        got = (nic.fw[defs.FW_REG_LC_SOFT_LIMIT], nic.fw[defs.FW_REG_LC_STATE])
        assert got == (model.soft_limit, STATE_CODE[model.state]), \
            f"step {i} qlen {qlen} cnum {cnum}: firmware (soft, state) {got}, model {(model.soft_limit, model.state)}"
    # the driver stops taking events: the firmware queues 8 announcements, then holds load
    # control back (the next load event is not taken) rather than drop one
    rsp = await nic.command([H(defs.FW_OP_SET_STEPS, 2, 8), 1, 1])
    assert rsp[1] == model.set_steps(1, 1) == defs.FW_ST_OK
    commands += 1
    await nic.wait_for(lambda: len(nic.events) == 1 + len(model.announced), BOOT_CYCLES, "the announcements so far")
    nic.evt_hold = True
    queued, k = 0, 0
    pattern = [(model.hiwat + 1, 0), (model.hiwat + 1, 0), (max(0, model.lowat - 1), hard), (max(0, model.lowat - 1), hard)]
    while queued < 8:
        assert k < 200, "the pattern does not move Soft_limit"
        qlen, cnum = pattern[k % 4]
        queued += model.step(qlen, cnum)
        await nic.sample(qlen, cnum)
        k += 1
    events_before = len(nic.events)
    seq = nic.post_sample(qlen, cnum)
    for _ in range(20000):
        await RisingEdge(dut.clk)
    assert nic.fw[defs.FW_REG_LC_ACK] == seq - 1, "load control ran with its announcement queue full"
    assert len(nic.events) == events_before, "an event was pushed into a full queue"
    nic.evt_hold = False
    await nic.wait_for(lambda: nic.fw.get(defs.FW_REG_LC_ACK) == seq, BOOT_CYCLES, "the held-back load event")
    model.step(qlen, cnum)
    assert (nic.fw[defs.FW_REG_LC_SOFT_LIMIT], nic.fw[defs.FW_REG_LC_STATE]) == \
        (model.soft_limit, STATE_CODE[model.state])
    rsp = await nic.command([H(defs.FW_OP_GET_LOAD, 0, 9)])
    assert rsp[1:12] == [0, STATE_CODE[model.state], model.soft_limit, hard, model.hiwat, model.lowat, qlen,
                         cnum, model.dec_step, model.inc_step, model.clamped], rsp
    commands += 1
    want = [(defs.FW_EVT_SOFT_LIMIT, s) for s in model.announced]
    await nic.wait_for(lambda: len(nic.events) >= 1 + len(want), BOOT_CYCLES, "the announcements")
    assert nic.events[1:] == want, f"announcements {nic.events[1:]} != model {want}"
    assert len(model.announced) >= 10 and len(set(model.announced)) >= 4, "the trace hardly moved Soft_limit"

    # the log: every record accounted for, the last ones read back
    head = nic.fw[defs.FW_REG_LOG_HEAD]
    assert head == 3 + commands + watermark_cmds + len(model.announced) + clamped_steps, head
    log = nic.log()
    assert len(log) == min(head, defs.FW_LOG_RECORDS)
    for rec in log[-8:]:
        dut._log.info("%s", fw_log.render(rec))
    soft_recs = [r for r in log if r[2] == defs.FW_LOG_SOFT_LIMIT]
    assert [r[5] for r in soft_recs] == model.announced[-len(soft_recs):]
    assert [r[4] for r in soft_recs[1:]] == [r[5] for r in soft_recs[:-1]], "old/new values do not chain"
    assert [r[1] for r in log] == sorted(r[1] for r in log), "log timestamps go backwards"
    assert nic.fw.get(defs.FW_REG_HEARTBEAT, 0) >= nic.cycle * CLK_NS // 1000 // 100 - 1, "the timer stalls"
    _final_checks(nic)
    dut._log.info("load control: %d steps, %d announcements, %d log records, %d event-queue stalls, %d cycles",
                  250, len(model.announced), head, nic.evt_stalls, nic.cycle)


@cocotb.test()
async def firmware_boot_log_without_toe(dut):
    """No TCP engine in the chain: the firmware says so, keeps Soft_limit 0, still answers."""
    nic = await _boot(dut, hard_limit=4096, queue_size=512,
                      chain=[(0, regs.DEVICE_ID.type_id), (0x100, regs.CLOCK.type_id)])
    await _booted(nic, defs.FW_STATE_NO_TOE)
    await nic.sample(500, 0)
    assert nic.fw[defs.FW_REG_LC_SOFT_LIMIT] == 0 and nic.events == [(defs.FW_EVT_BOOTED, defs.FW_VERSION)]
    rsp = await nic.command([H(defs.FW_OP_GET_VERSION, 0, 5)])
    assert rsp[3] == defs.FW_STATE_NO_TOE
    log = nic.log()
    for rec in log:
        dut._log.info("%s", fw_log.render(rec))
    assert [r[2] for r in log[:3]] == [defs.FW_LOG_BOOT, defs.FW_LOG_NIC, defs.FW_LOG_LC_INIT]
    assert fw_log.render(log[0]).endswith("version 0x00010000, imem 16384 B, dmem 8192 B")
    assert log[0][3:7] == [3, defs.FW_VERSION, 16384, 8192]
    assert log[1][3:7] == [3, 0, 2, 0], "NIC record: toe offset 0, 2 blocks walked, no chain error"
    _final_checks(nic)


@cocotb.test()
async def firmware_survives_a_looping_chain(dut):
    """A chain whose `next` points backwards: the walk stops, reports it, no hang."""
    nic = await _boot(dut, hard_limit=64, queue_size=32,
                      chain=[(0, regs.DEVICE_ID.type_id), (0x100, regs.CLOCK.type_id), (0x80, regs.TOE.type_id)])
    await _booted(nic, defs.FW_STATE_NO_TOE)
    assert nic.log()[1][3:7] == [3, 0, 2, 1]
    _final_checks(nic)


def test_firmware_on_picorv32():
    img = firmware.build()
    runner.run_sv_bench([firmware.picorv32_verilog(), HERE / "fw_bench.sv"], "fw_bench", __name__,
                        bench={"image": [str(img.elf), str(img.bin), str(img.hex)]})
