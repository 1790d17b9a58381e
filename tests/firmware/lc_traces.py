"""Qlen/Cnum traces for load control, shared by the host-side test and the test on the
simulated core: a NIC whose queue grows with the connections it carries (closed loop on
the Soft_limit the firmware sets, as seed 004 Figure 6), random jumps, and hostile values
the hardware cannot produce (Qlen above the queue size, Cnum above Hard_limit)."""
from __future__ import annotations

import random


def closed_loop(rng: random.Random, hard_limit: int, queue_size: int, n: int, soft_limit_of):
    """Yields (qlen, cnum) n times; soft_limit_of() is the Soft_limit in force, read after
    each sample has been consumed. The offered load per connection changes over time so the
    NIC is pushed past saturation and back."""
    cnum, qlen = 0, 0
    load = rng.uniform(0.2, 3.0)  # queue packets per connection, relative
    for i in range(n):
        if i % max(1, n // 6) == 0:
            load = rng.uniform(0.05, 4.0)
        soft = soft_limit_of()
        arrivals = rng.randint(0, max(1, hard_limit // 16))
        leaves = rng.randint(0, max(1, cnum // 8 + 1))
        cnum = max(0, cnum - leaves)
        cnum = min(cnum + arrivals, max(cnum, soft))  # the hardware refuses installs at Soft_limit
        target = int(load * cnum * queue_size / max(1, hard_limit))
        qlen = max(0, min(queue_size, (qlen + target) // 2 + rng.randint(-queue_size // 16 - 1, queue_size // 16 + 1)))
        r = rng.random()
        if r < 0.03:
            yield rng.randint(queue_size + 1, queue_size + 1000), cnum  # hostile Qlen
        elif r < 0.05:
            yield qlen, rng.randint(hard_limit + 1, hard_limit + 1000)  # hostile Cnum
        elif r < 0.10:
            yield rng.randint(0, queue_size), rng.randint(0, hard_limit)  # a jump
        else:
            yield qlen, cnum
