"""Reference model of the firmware's active restore (firmware/src/active_restore.h, issue
18), written from the header's contract, not from the C: which connections the NIC asks
the host to take back while load control waits in DECREASE.

A round asks for min(Cnum - Soft_limit - pending, max_per_round, room for pending); its
picks are the offered connections (each offered once) with the highest non-zero cost,
not already pending, ties to the lower index; they stay pending until answered
or older than the timeout (a wrapping 32-bit microsecond clock)."""
from __future__ import annotations

from dataclasses import dataclass, field

MAX_PICK, MAX_PENDING = 8, 16
DECREASE = 1  # load control's state code (load_control_model.STATE_CODE)
OK, OUT_OF_RANGE, NOT_PENDING = 0, 3, 5


@dataclass
class ActiveRestoreModel:
    enabled: bool = False
    max_per_round: int = 1
    timeout_us: int = 10_000
    pending: dict[int, int] = field(default_factory=dict)  # conn -> since (insertion order = age)
    offers: dict[int, int] = field(default_factory=dict)  # this round's first offers
    want: int = 0
    requested: int = 0
    answered: int = 0
    expired: int = 0
    bad_answers: int = 0

    def configure(self, enabled: int, max_per_round: int, timeout_us: int) -> int:
        if enabled not in (0, 1) or not 1 <= max_per_round <= MAX_PICK or timeout_us < 1:
            return OUT_OF_RANGE
        self.enabled, self.max_per_round, self.timeout_us = bool(enabled), max_per_round, timeout_us
        return OK

    def wanted(self, lc_state: int, soft_limit: int, cnum: int) -> int:
        if not self.enabled or lc_state != DECREASE:
            return 0
        return max(0, min(cnum - soft_limit - len(self.pending), self.max_per_round, MAX_PENDING - len(self.pending)))

    def begin(self, want: int) -> None:
        self.want, self.offers = min(want, MAX_PICK), {}

    def offer(self, conn: int, cost: int) -> None:
        if cost and conn not in self.pending:
            self.offers[conn] = cost

    def finish(self, now_us: int) -> list[tuple[int, int]]:
        ranked = sorted(self.offers.items(), key=lambda kv: (-kv[1], kv[0]))
        picks = ranked[:min(self.want, MAX_PENDING - len(self.pending))]
        for conn, _ in picks:
            self.pending[conn] = now_us
        self.requested += len(picks)
        self.want, self.offers = 0, {}
        return picks

    def answer(self, conn: int) -> int:
        if self.pending.pop(conn, None) is None:
            self.bad_answers += 1
            return NOT_PENDING
        self.answered += 1
        return OK

    def expire(self, now_us: int) -> int:
        old = [c for c, t in self.pending.items() if (now_us - t) % (1 << 32) >= self.timeout_us]
        for c in old:
            del self.pending[c]
        self.expired += len(old)
        return len(old)
