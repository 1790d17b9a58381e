"""Reference model of seed 004's load control (Kim & Rixner, section 3.2, Figure 3),
written from the paper's text and the firmware's documented choices where the paper is
silent (firmware/README.md), independently of firmware/src/load_control.c.

The machine keeps Qlen (NIC packets waiting) between Lowat and Hiwat by moving
Soft_limit (connections the host may hand off) in [floor, Hard_limit]:
  MONITOR:  Qlen > Hiwat -> lower Soft_limit, announce, DECREASE
            Qlen < Lowat -> raise Soft_limit, announce, INCREASE
  DECREASE: Cnum < Soft_limit -> MONITOR             (wait for connections to end)
  INCREASE: Qlen > Hiwat -> lower, announce, DECREASE (overload first)
            Cnum >= Soft_limit -> MONITOR            (wait for new connections)
Choices the paper leaves open: a change that cannot happen (Soft_limit already at
Hard_limit, or at the floor of 1) is no change: no announcement, MONITOR; steps of
Hard_limit/64 (>= 1); Hiwat 3/4 and Lowat 1/4 of the queue; inputs beyond what the
hardware can hold (Qlen > queue size, Cnum > Hard_limit) are clamped and counted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MONITOR, DECREASE, INCREASE = "MONITOR", "DECREASE", "INCREASE"
STATE_CODE = {MONITOR: 0, DECREASE: 1, INCREASE: 2}

OK, OUT_OF_RANGE, BAD_ORDER = 0, 3, 4


@dataclass
class LoadControlModel:
    hard_limit: int
    queue_size: int
    hiwat: int = -1
    lowat: int = -1
    dec_step: int = 0
    inc_step: int = 0
    soft_limit: int = field(init=False)
    state: str = field(init=False, default=MONITOR)
    clamped: int = field(init=False, default=0)
    announced: list[int] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if self.hiwat < 0:
            self.hiwat = self.queue_size - self.queue_size // 4
        if self.lowat < 0:
            self.lowat = self.queue_size // 4
        step = max(1, self.hard_limit // 64)
        self.dec_step = self.dec_step or step
        self.inc_step = self.inc_step or step
        self.soft_limit = self.hard_limit

    @property
    def floor(self) -> int:
        return min(1, self.hard_limit)

    def set_watermarks(self, hiwat: int, lowat: int) -> int:
        if not 0 <= hiwat <= self.queue_size:
            return OUT_OF_RANGE
        if hiwat < lowat:
            return BAD_ORDER
        self.hiwat, self.lowat = hiwat, lowat
        return OK

    def set_steps(self, dec: int, inc: int) -> int:
        top = max(1, self.hard_limit)
        if not (1 <= dec <= top and 1 <= inc <= top):
            return OUT_OF_RANGE
        self.dec_step, self.inc_step = dec, inc
        return OK

    def _move(self, target: int, then: str) -> bool:
        """Soft_limit to `target` (clipped to [floor, Hard_limit]); announce and go to
        `then` if it changed, else MONITOR."""
        target = max(self.floor, min(self.hard_limit, target))
        if target == self.soft_limit:
            self.state = MONITOR
            return False
        self.soft_limit, self.state = target, then
        self.announced.append(target)
        return True

    def step(self, qlen: int, cnum: int) -> bool:
        if qlen > self.queue_size:
            qlen, self.clamped = self.queue_size, self.clamped + 1
        if cnum > self.hard_limit:
            cnum, self.clamped = self.hard_limit, self.clamped + 1
        over, under = qlen > self.hiwat, qlen < self.lowat
        if self.state == MONITOR:
            if over:
                return self._move(self.soft_limit - self.dec_step, DECREASE)
            if under:
                return self._move(self.soft_limit + self.inc_step, INCREASE)
        elif self.state == DECREASE:
            if cnum < self.soft_limit:
                self.state = MONITOR
        elif self.state == INCREASE:
            if over:
                return self._move(self.soft_limit - self.dec_step, DECREASE)
            if cnum >= self.soft_limit:
                self.state = MONITOR
        return False
