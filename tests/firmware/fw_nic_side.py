"""cocotb's side of tests/firmware/fw_bench.sv: the NIC around the control processor.
It answers the firmware bus (firmware/include/fw_bus.h): the firmware's registers, the
mailbox with its doorbells, the event queue to the driver (random back-pressure), the
load-control inputs, the log ring; and the NIC's register map at FW_NIC_BASE as a chain of
blocks from the generated offnic_sim.host.regs (device_id, clock, then `toe` whose
`connections` is Cnum). It also plays the host: mailbox commands and log reads. Every
access the bus could not serve, and every protocol breach by the firmware, is counted."""
from __future__ import annotations

import random

from cocotb.triggers import RisingEdge

from offnic_sim.fw import defs
from offnic_sim.host import regs

CLK_NS = 4  # 250 MHz, the NIC's core clock


class NicSide:
    def __init__(self, dut, rng: random.Random, hard_limit: int, queue_size: int,
                 chain: list[tuple[int, int]] | None = None, evt_full_prob: float = 0.3,
                 evt_stall_prob: float = 0.05):
        self.dut, self.rng = dut, rng
        self.cycle = 0
        self.evt_full_prob = evt_full_prob
        self.fw = {defs.FW_REG_LC_HARD_LIMIT: hard_limit, defs.FW_REG_LC_QUEUE_SIZE: queue_size}
        self.h2f = self.f2h = False
        self.cmd = [0] * defs.FW_MBOX_WORDS
        self.events: list[tuple[int, int]] = []
        self.evt_full = False
        self.evt_stall_prob = evt_stall_prob
        self.evt_stall = 0
        self.evt_stalls = 0
        self.evt_hold = False
        self.qlen = 0
        self.cnum = 0
        self.lc_seq = 0
        self.breaches: list[str] = []
        self.bus_errors = 0
        # The NIC's map: [(offset, type id)] in chain order; default device_id, clock, toe.
        chain = chain if chain is not None else [(0, regs.DEVICE_ID.type_id), (0x100, regs.CLOCK.type_id),
                                                 (0x200, regs.TOE.type_id)]
        self.nic: dict[int, int] = {}
        for i, (off, type_id) in enumerate(chain):
            self.nic[off + regs.DEVICE_ID.regs["type"].offset] = type_id
            self.nic[off + regs.DEVICE_ID.regs["version"].offset] = 0x00010000
            self.nic[off + regs.DEVICE_ID.regs["next"].offset] = chain[i + 1][0] if i + 1 < len(chain) else 0
        self.toe_base = next((off for off, t in chain if t == regs.TOE.type_id), None)
        self.dut.per_ready.value = 0
        self.dut.per_rdata.value = 0
        self.dut.load_valid.value = 0
        self.dut.load_addr.value = 0
        self.dut.load_data.value = 0

    # ------------------------------------------------------------------ the bus
    def _read(self, addr: int) -> int:
        if defs.FW_NIC_BASE <= addr < defs.FW_NIC_BASE + defs.FW_NIC_WINDOW:
            off = addr - defs.FW_NIC_BASE
            if self.toe_base is not None and off == self.toe_base + regs.TOE.regs["connections"].offset:
                return self.cnum
            if off not in self.nic:
                self.bus_errors += 1
            return self.nic.get(off, 0)
        if not defs.FW_BUS_BASE <= addr < defs.FW_BUS_BASE + defs.FW_BUS_WINDOW:
            self.bus_errors += 1
            return 0
        off = addr - defs.FW_BUS_BASE
        if off == defs.FW_REG_MAGIC:
            return defs.FW_BUS_MAGIC
        if off == defs.FW_REG_TIME_US:
            return (self.cycle * CLK_NS // 1000) & 0xFFFFFFFF
        if off == defs.FW_REG_BUS_ERRORS:
            return self.bus_errors
        if off == defs.FW_REG_MBOX_STATUS:
            return (defs.FW_MBOX_STATUS_H2F if self.h2f else 0) | (defs.FW_MBOX_STATUS_F2H if self.f2h else 0)
        if off == defs.FW_REG_EVT_STATUS:
            # the driver sometimes stops taking events for a while (a stall longer than the
            # firmware's own queue), else the queue is full now and then
            if self.evt_hold:  # the test holds the driver's event queue full
                self.evt_full = True
                return defs.FW_EVT_STATUS_FULL
            if self.evt_stall == 0 and self.rng.random() < self.evt_stall_prob:
                self.evt_stall = self.rng.randint(20, 120)
                self.evt_stalls += 1
            if self.evt_stall:
                self.evt_stall -= 1
                self.evt_full = True
            else:
                self.evt_full = self.rng.random() < self.evt_full_prob
            return defs.FW_EVT_STATUS_FULL if self.evt_full else 0
        if off == defs.FW_REG_LC_SEQ:
            return self.lc_seq
        if off == defs.FW_REG_LC_QLEN:
            return self.qlen
        if defs.FW_CMD_BUF <= off < defs.FW_CMD_BUF + 4 * defs.FW_MBOX_WORDS:
            if not self.h2f:
                self.breaches.append(f"command buffer read with no command waiting (cycle {self.cycle})")
            return self.cmd[(off - defs.FW_CMD_BUF) // 4]
        return self.fw.get(off, 0)

    def _write(self, addr: int, value: int, wstrb: int) -> None:
        if wstrb != 0xF:
            self.bus_errors += 1
            return
        if not defs.FW_BUS_BASE <= addr < defs.FW_BUS_BASE + defs.FW_BUS_WINDOW:
            self.bus_errors += 1  # the NIC map is read-only to the firmware here
            return
        off = addr - defs.FW_BUS_BASE
        if off == defs.FW_REG_MBOX_H2F_ACK:
            self.h2f = False
        elif off == defs.FW_REG_MBOX_F2H_DOORBELL:
            if self.f2h:
                self.breaches.append("response doorbell rung while the last response was not taken")
            self.f2h = True
        elif off == defs.FW_REG_EVT_PUSH:
            if self.evt_full:
                self.breaches.append(f"event pushed into a full queue (cycle {self.cycle})")
            self.events.append((self.fw.get(defs.FW_REG_EVT_CODE, 0), self.fw.get(defs.FW_REG_EVT_ARG, 0)))
        elif defs.FW_RSP_BUF <= off < defs.FW_RSP_BUF + 4 * defs.FW_MBOX_WORDS and self.f2h:
            self.breaches.append("response buffer written while the host had not taken the last one")
            self.fw[off] = value
        elif off in (defs.FW_REG_MAGIC, defs.FW_REG_TIME_US, defs.FW_REG_BUS_ERRORS, defs.FW_REG_MBOX_STATUS,
                     defs.FW_REG_EVT_STATUS, defs.FW_REG_LC_SEQ, defs.FW_REG_LC_QLEN,
                     defs.FW_REG_LC_QUEUE_SIZE, defs.FW_REG_LC_HARD_LIMIT) or \
                defs.FW_CMD_BUF <= off < defs.FW_CMD_BUF + 4 * defs.FW_MBOX_WORDS:
            self.breaches.append(f"write to read-only register {off:#x}")
        else:
            self.fw[off] = value

    async def serve(self) -> None:
        """Answers one request per handshake: ready for one cycle, then one idle edge."""
        dut, answered = self.dut, False
        while True:
            await RisingEdge(dut.clk)
            self.cycle += 1
            if answered:
                dut.per_ready.value = 0
                answered = False
                continue
            if dut.per_valid.value == 1:
                addr, wstrb = int(dut.per_addr.value), int(dut.per_wstrb.value)
                rdata = 0
                if wstrb:
                    self._write(addr, int(dut.per_wdata.value), wstrb)
                else:
                    rdata = self._read(addr)
                dut.per_rdata.value = rdata
                dut.per_ready.value = 1
                answered = True

    # ------------------------------------------------------------------ the host
    async def load_and_boot(self, words: list[int]) -> None:
        dut = self.dut
        dut.resetn.value = 0
        for _ in range(4):
            await RisingEdge(dut.clk)
        for i, w in enumerate(words):
            dut.load_valid.value, dut.load_addr.value, dut.load_data.value = 1, 4 * i, w
            await RisingEdge(dut.clk)
        dut.load_valid.value = 0
        await RisingEdge(dut.clk)
        dut.resetn.value = 1

    async def wait_for(self, what, cycles: int, why: str) -> None:
        for _ in range(cycles):
            if what():
                return
            assert int(self.dut.trap.value) == 0, f"the core trapped while waiting for {why}"
            await RisingEdge(self.dut.clk)
        raise AssertionError(f"{why}: not within {cycles} cycles")

    async def command(self, words: list[int], cycles: int = 20000) -> list[int]:
        """One mailbox round trip as the driver makes it; returns the response words."""
        assert not self.h2f and not self.f2h
        self.cmd = list(words) + [0] * (defs.FW_MBOX_WORDS - len(words))
        self.h2f = True  # the host's doorbell
        await self.wait_for(lambda: self.f2h, cycles, f"response to {words[0]:#x}")
        n = 1 + ((self.fw.get(defs.FW_RSP_BUF, 0) >> 8) & 0xFF)
        rsp = [self.fw.get(defs.FW_RSP_BUF + 4 * i, 0) for i in range(min(n, defs.FW_MBOX_WORDS))]
        self.f2h = False  # the host's acknowledgement
        return rsp

    def post_sample(self, qlen: int, cnum: int) -> int:
        """A load event: new Qlen and Cnum; returns its sequence number."""
        self.qlen, self.cnum = qlen, cnum
        self.lc_seq = (self.lc_seq + 1) & 0xFFFFFFFF
        return self.lc_seq

    async def sample(self, qlen: int, cnum: int, cycles: int = 100000) -> None:
        """A load event, and wait until the firmware has run on it."""
        seq = self.post_sample(qlen, cnum)
        await self.wait_for(lambda: self.fw.get(defs.FW_REG_LC_ACK) == seq, cycles, f"load event {seq}")

    def log(self) -> list[list[int]]:
        """The records still in the ring, oldest first, each checked for its number."""
        head = self.fw.get(defs.FW_REG_LOG_HEAD, 0)
        out = []
        for n in range(max(0, head - defs.FW_LOG_RECORDS), head):
            base = defs.FW_LOG_RING + (n % defs.FW_LOG_RECORDS) * defs.FW_LOG_RECORD_BYTES
            rec = [self.fw.get(base + 4 * i, 0) for i in range(defs.FW_LOG_RECORD_WORDS)]
            assert rec[0] == n, f"log record {n} holds number {rec[0]}"
            out.append(rec)
        return out
