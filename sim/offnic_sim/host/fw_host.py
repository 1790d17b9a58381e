"""The host's side of the control processor (issue 18) through BAR0, as a driver would
drive it: the `fw` register block (RegMapFw.scala; generated regs.py) for the firmware's
version and state, mailbox round trips, its events, its log ring and loading a new image.
Every wait is bounded: a firmware that does not answer is an error, never a hang."""
from __future__ import annotations

from cocotb.triggers import Timer

from offnic_sim.fw import defs, log as fw_log

STATUS_RUNNING, STATUS_TRAP, STATUS_CMD_PENDING, STATUS_RSP_READY, STATUS_EVENT_READY = 1, 2, 4, 8, 16


class FirmwareTimeout(AssertionError):
    pass


class FwHost:
    def __init__(self, block, poll_ns: int = 400):
        self.b = block  # regblocks.RegisterBlock of type fw
        self.poll_ns = poll_ns

    async def read(self, reg: str) -> int:
        return await self.b.read(reg)

    async def wait_for(self, what, timeout_us: float, why: str) -> None:
        """Poll `what()` (an awaitable returning a truth value) until it holds."""
        waited = 0.0
        while True:
            if await what():
                return
            if waited >= timeout_us * 1000:
                raise FirmwareTimeout(f"firmware: {why} not within {timeout_us} us")
            await Timer(self.poll_ns, "ns")
            waited += self.poll_ns

    async def wait_state(self, state: int, timeout_us: float = 200) -> None:
        async def reached():
            return await self.read("state") == state
        await self.wait_for(reached, timeout_us, f"state {state}")

    async def command(self, words: list[int], timeout_us: float = 100) -> list[int]:
        """One mailbox round trip: command words in, response words (header, status, ...) out."""
        assert 1 <= len(words) <= defs.FW_MBOX_WORDS
        status = await self.read("status")
        assert not status & (STATUS_CMD_PENDING | STATUS_RSP_READY), f"mailbox busy: status {status:#x}"
        for k in range(defs.FW_MBOX_WORDS):
            await self.b.write(f"cmd_{k}", words[k] if k < len(words) else 0)
        await self.b.write("mbox_doorbell", 1)

        async def answered():
            return await self.read("status") & STATUS_RSP_READY
        await self.wait_for(answered, timeout_us, f"response to command {words[0]:#x}")
        n = 1 + ((await self.read("rsp_0")) >> 8 & 0xFF)
        rsp = [await self.read(f"rsp_{k}") for k in range(min(n, defs.FW_MBOX_WORDS))]
        await self.b.write("mbox_ack", 1)
        return rsp

    async def events(self) -> list[tuple[int, int]]:
        """Take every waiting event (code, argument)."""
        out = []
        for _ in range(defs.FW_MBOX_WORDS):
            if not await self.read("status") & STATUS_EVENT_READY:
                break
            out.append((await self.read("event_code"), await self.read("event_arg")))
            await self.b.write("event_pop", 1)
        return out

    async def log_records(self) -> list[list[int]]:
        """The records still in the ring, oldest first; a record whose number is not the one
        its slot should hold (overwritten while read) is left out."""
        head = await self.read("log_head")
        first = max(0, head - defs.FW_LOG_RECORDS)
        out = []
        for n in range(first, head):
            base = (n % defs.FW_LOG_RECORDS) * defs.FW_LOG_RECORD_WORDS
            rec = []
            for w in range(defs.FW_LOG_RECORD_WORDS):
                await self.b.write("log_index", base + w)
                rec.append(await self.read("log_data"))
            if rec[0] == n:
                out.append(rec)
        return out

    async def log_lines(self) -> list[str]:
        return [fw_log.render(r) for r in await self.log_records()]

    async def hold(self) -> None:
        """Hold the core in reset."""
        await self.b.write("control", 0)

    async def release(self) -> None:
        await self.b.write("control", 1)

    async def load_image(self, words: list[int], release: bool = True) -> None:
        """Core held in reset, the image written word by word, released (unless `release`
        is False: the caller releases it with `release()`)."""
        imem = await self.read("imem_bytes")
        assert 4 * len(words) <= imem, f"image of {4 * len(words)} B > instruction memory {imem} B"
        await self.hold()
        for i, w in enumerate(words):
            await self.b.write("image_addr", i)
            await self.b.write("image_data", w)
        if release:
            await self.release()
