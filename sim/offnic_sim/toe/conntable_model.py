"""The TCP offload engine's connection table (hw/src/offnic/toe/ConnTable.scala), exactly:
which bucket and slot every insert takes, every cuckoo move, which inserts fail.

Two tables of `buckets` buckets of 4 slots; a key lives in bucket h0(key) of table 0 or
h1(key) of table 1 — two bit fields of one Toeplitz hash of the 96-bit key (local IP,
remote IP, local port, remote port, local IP in the most significant bits). An insert
takes the emptier bucket (table 0 on a tie) at its lowest free slot; when both are full
it walks: the key goes into table 0's bucket at the way given by a 16-bit LFSR, the
resident it displaces goes to its bucket in the other table, and so on for at most
`max_kicks` moves; a walk that finds no room is undone, leaving the table as it was.

Connection ids are the hardware's to choose (an id pool); the model takes them from the
hardware's responses and checks only that they are unique and in range.
"""
from __future__ import annotations

from dataclasses import dataclass

from offnic_sim.net.toeplitz import toeplitz

KEY_BITS = 96
HASH_KEY_BITS = KEY_BITS + 31
WAYS = 4
# Ours, random: the driver sets a fresh one at start-up; tests use this one.
DEFAULT_HASH_KEY = 0x5A3C_96E1_0F4B_D287_19C6_E35A_7B2D_804F & ((1 << HASH_KEY_BITS) - 1)

OK, EXISTS, FULL, NO_ID, MISSING = range(5)
STATUS_NAMES = ["ok", "exists", "full", "no_id", "missing"]
STATS = ["lookups", "hits", "inserts", "insert_exists", "insert_full", "insert_no_id", "deletes",
         "delete_missing", "kicks"]


def conn_key(local_ip: int, remote_ip: int, local_port: int, remote_port: int) -> int:
    return local_ip << 64 | remote_ip << 32 | local_port << 16 | remote_port


def lfsr_next(x: int) -> int:
    """The walk's LFSR: shift left, new bit 0 = bit15 ^ bit13 ^ bit12 ^ bit10."""
    return ((x << 1) & 0xFFFF) | (((x >> 15) ^ (x >> 13) ^ (x >> 12) ^ (x >> 10)) & 1)


@dataclass
class Outcome:
    status: int
    kicks: int = 0
    table: int | None = None  # where the command's key ended up (insert OK) or was (delete OK)
    bucket: int | None = None


class ConnTableModel:
    def __init__(self, *, connections: int = 4096, buckets: int = 1024, max_kicks: int = 64,
                 hash_key: int = DEFAULT_HASH_KEY):
        self.connections, self.buckets, self.max_kicks = connections, buckets, max_kicks
        self.hash_key = hash_key
        self.bb = buckets.bit_length() - 1
        assert 1 << self.bb == buckets
        # slot: None or the key
        self.tables = [[[None] * WAYS for _ in range(buckets)] for _ in range(2)]
        self.where: dict[int, tuple[int, int]] = {}  # key -> (table, bucket)
        self.ids: dict[int, int] = {}  # key -> id
        self.lfsr = 0xACE1
        self.stats = dict.fromkeys(STATS, 0)

    # ---- hashing
    def buckets_of(self, key: int) -> tuple[int, int]:
        h = toeplitz(key, 2 * self.bb, self.hash_key, KEY_BITS, HASH_KEY_BITS)
        m = self.buckets - 1
        return h & m, (h >> self.bb) & m

    # ---- queries
    def lookup(self, key: int) -> int | None:
        return self.ids.get(key)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def load_factor(self) -> float:
        return len(self.ids) / (2 * self.buckets * WAYS)

    # ---- commands
    def insert(self, key: int, new_id: int | None = None) -> Outcome:
        """`new_id`: the id the hardware gave (OK); checked to be free."""
        if key in self.ids:
            self.stats["insert_exists"] += 1
            return Outcome(EXISTS)
        if len(self.ids) >= self.connections:
            self.stats["insert_no_id"] += 1
            return Outcome(NO_ID)
        b = self.buckets_of(key)
        f0 = self.tables[0][b[0]].count(None)
        f1 = self.tables[1][b[1]].count(None)
        if f0 or f1:
            t = 0 if f0 and f0 >= f1 else 1
            self._place(t, b[t], key)
            return self._ok(key, new_id, 0, t, b[t])
        # Walk, recording each move to undo it.
        home, t, bucket, moves = key, 0, b[0], []
        while True:
            way = self.lfsr & 3
            self.lfsr = lfsr_next(self.lfsr)
            slot = self.tables[t][bucket]
            home, slot[way] = slot[way], home
            self.where[slot[way]] = (t, bucket)
            moves.append((t, bucket, way))
            self.stats["kicks"] += 1
            t = 1 - t
            bucket = self.buckets_of(home)[t]
            if None in self.tables[t][bucket]:
                self._place(t, bucket, home)
                return self._ok(key, new_id, len(moves), *self.where[key])
            if len(moves) == self.max_kicks:
                break
        for t, bucket, way in reversed(moves):
            slot = self.tables[t][bucket]
            home, slot[way] = slot[way], home
            self.where[slot[way]] = (t, bucket)
        assert home == key
        self.where.pop(key, None)
        self.stats["insert_full"] += 1
        return Outcome(FULL, len(moves))

    def delete(self, key: int) -> Outcome:
        if key not in self.ids:
            self.stats["delete_missing"] += 1
            return Outcome(MISSING)
        t, bucket = self.where.pop(key)
        slot = self.tables[t][bucket]
        slot[slot.index(key)] = None
        del self.ids[key]
        self.stats["deletes"] += 1
        return Outcome(OK, 0, t, bucket)

    def _place(self, t: int, bucket: int, key: int) -> None:
        slot = self.tables[t][bucket]
        slot[slot.index(None)] = key
        self.where[key] = (t, bucket)

    def _ok(self, key: int, new_id: int | None, kicks: int, t: int, bucket: int) -> Outcome:
        if new_id is not None:
            assert 0 <= new_id < self.connections, f"id {new_id} out of range"
            assert new_id not in self.ids.values(), f"id {new_id} given twice"
        self.ids[key] = new_id if new_id is not None else -1
        self.stats["inserts"] += 1
        return Outcome(OK, kicks, t, bucket)


def fill_to_failure(rng, **kw) -> tuple[ConnTableModel, int]:
    """Insert random keys until the first Full: (the table, keys placed)."""
    m = ConnTableModel(**kw)
    m.connections = 2 * m.buckets * WAYS + 1
    while m.insert(rng.getrandbits(KEY_BITS)).status == OK:
        pass
    return m, len(m)
