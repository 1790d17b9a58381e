"""Shared fixtures of the driver tests: a seeded random generator (OFFNIC_SEED replays)."""
import os
import random

import pytest


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("OFFNIC_SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"seed {seed} (replay: OFFNIC_SEED={seed} ./offnic test -n 0 '{request.node.nodeid}')")
    r = random.Random(seed)
    r.seed_value = seed
    return r
