"""The NIC's reassembler (hw/src/offnic/offload/Reassembler.scala) as Python: Linux's
rules from `ipfrag.Reassembler`, plus the hardware's structure where it changes what
happens to a fragment:

- contexts live in a 2-way set-associative table: a fragment of a new datagram opens a
  context only if its set has a free way and a buffer is in the pool, else it bypasses
  to the host;
- bypass is remembered per hash bucket (not per key) until `timeout` after the bucket's
  latest bypassed fragment: every key in a live bucket bypasses;
- the set and the bucket are a Toeplitz hash of the 88-bit key with the 119-bit
  `hash_key` (the `cfg_hash_key` register);
- a datagram longer than 65,515 payload bytes is dropped at once (`early_oversize`);
- Linux's per-source distance rule (ipfrag_max_dist) is not applied.

Times are in the hardware's microsecond ticks (or any unit the caller keeps)."""
from __future__ import annotations

from offnic_sim.net import ipfrag
from offnic_sim.net.toeplitz import toeplitz

KEY_BITS = 88
HASH_KEY_BITS = KEY_BITS + 32 - 1
# The reset value of the hash key register: any fixed bits; drivers should program a
# random one (an attacker who knows the key can aim all datagrams at one set).
DEFAULT_HASH_KEY = 0x6D5A56DA255B0EC24167253D43A38FB0D0CA2BCBAE7B30B477CB2DA38030F20C6A42B73BBEAC01FA >> (320 - HASH_KEY_BITS)


def key_int(key: tuple) -> int:
    """The hardware's 88-bit key: source, destination, protocol, identification."""
    src, dst, proto, ident = key
    return int.from_bytes(src, "big") << 56 | int.from_bytes(dst, "big") << 24 | proto << 16 | ident


class NicReassembler(ipfrag.Reassembler):
    early_oversize = True

    def __init__(self, *, contexts: int = 64, buckets: int = 256, buffers: int = 256,
                 hash_key: int = DEFAULT_HASH_KEY, timeout: float = 1000.0, max_bytes: int | None = None,
                 max_frags: int | None = None):
        super().__init__(timeout=timeout, max_bytes=max_bytes, max_frags=max_frags, max_dist=0)
        self.sets = contexts // 2
        self.set_bits = self.sets.bit_length() - 1
        self.bucket_bits = buckets.bit_length() - 1
        self.hash_key = hash_key
        self.pool = buffers                      # free buffers
        self._bucket_until: dict[int, float] = {}
        self._set_of: dict[tuple, int] = {}

    def place(self, key: tuple) -> tuple[int, int]:
        h = toeplitz(key_int(key), self.set_bits + self.bucket_bits, self.hash_key, KEY_BITS, HASH_KEY_BITS)
        return h >> self.bucket_bits, h & ((1 << self.bucket_bits) - 1)

    def post(self, n: int = 1) -> None:
        """The driver gives `n` buffers (back) to the pool."""
        self.pool += n

    def expire(self, now: float) -> None:
        before = set(self._contexts)
        super().expire(now)
        self.pool += len(before - set(self._contexts))
        for b, until in list(self._bucket_until.items()):
            if until <= now:
                del self._bucket_until[b]

    def _open(self, key: tuple):
        s, b = self.place(key)
        in_set = sum(1 for k in self._contexts if self.place(k)[0] == s)
        if b in self._bucket_until or in_set >= 2 or self.pool == 0:
            self._bucket_until[b] = self._now + self.timeout
            return None
        self.pool -= 1
        self._seq += 1
        ctx = ipfrag._Context(key, self._now + self.timeout, self._seq)
        self._contexts[key] = ctx
        return ctx

    # Buffers: a dropped or evicted context's buffer returns to the pool; a delivered
    # datagram's goes to the host (the driver posts it again).
    def _drop(self, ctx, why: str) -> str:
        if ctx.key in self._contexts:
            self.pool += 1
        return super()._drop(ctx, why)

    def _evict_oldest(self, current=None):
        self.pool += 1
        return super()._evict_oldest(current)

    def _reassemble(self, ctx) -> str:
        out = super()._reassemble(ctx)
        if out != ipfrag.REASSEMBLED:
            self.pool += 1
        return out
