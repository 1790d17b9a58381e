"""The payload-cache directory (sw-driver/cache), the web traces and the Fig. 3 study.

- The C unit tests (`make test`, and under ASan/UBSan when the compiler has them).
- The ctypes binding against RefDir, an independent pure-Python model of the directory
  written from the header's contract, on randomised packet streams for several cache
  sizes: every command and every counter must agree.
- The trace generator against the seed's Table 1, and a small Fig. 3 point.
"""
from __future__ import annotations

import json
import random
import subprocess
from collections import Counter, OrderedDict

import numpy as np
import pytest

from offnic_sim.cache import cache_study
from offnic_sim.host import cachedir
from offnic_sim.cache import webtrace
from offnic_sim.host.cachedir import APPEND_CACHE, APPEND_HOST, INSERT, CacheDir, Cmd

MIB = 1 << 20


# ----------------------------------------------------------------------------- C tests

def test_c_unit_tests(tmp_path):
    out = subprocess.run(["make", "-s", "-C", str(cachedir.SRC), f"O={tmp_path}", "test"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "all checks passed" in out.stdout
    # `make test` runs the randomised part with seed 1; once more with a fresh seed.
    seed = random.randrange(1, 1 << 30)
    print(f"seed {seed}")
    out = subprocess.run([str(tmp_path / "test_cache_dir"), str(seed), "5000"], capture_output=True, text=True)
    assert out.returncode == 0, f"seed {seed}:\n" + out.stdout + out.stderr


def _has_sanitizers(tmp_path) -> bool:
    src = tmp_path / "probe.c"
    src.write_text("int main(void) { return 0; }\n")
    probe = subprocess.run(["cc", "-fsanitize=address,undefined", "-o", str(tmp_path / "probe"), str(src)],
                           capture_output=True)
    return probe.returncode == 0


def test_c_unit_tests_sanitized(tmp_path):
    if not _has_sanitizers(tmp_path):
        pytest.skip("the C compiler has no AddressSanitizer/UBSan runtime")
    out = subprocess.run(["make", "-s", "-C", str(cachedir.SRC), f"O={tmp_path}", "test-asan"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# ----------------------------------------------------------------------------- reference

class RefDir:
    """The directory as cache_dir.h specifies it, the plainest way: a list of blocks and
    an OrderedDict for the LRU order (oldest first). Empty blocks start oldest in offset
    order; eagerly invalidated ones become the oldest."""

    def __init__(self, cache_bytes: int, block_bytes: int = 4096):
        self.bs = block_bytes
        self.n = cache_bytes // block_bytes
        self.limit = self.n * block_bytes
        self.key: list[tuple[int, int] | None] = [None] * self.n
        self.where: dict[tuple[int, int], int] = {}  # key -> block
        self.rev = [0] * self.n
        self.lru = OrderedDict((i, None) for i in range(self.n))
        self.stats = Counter()

    def _find(self, file_id: int, block: int) -> int | None:
        return self.where.get((file_id, block))

    def _set(self, i: int, key: tuple[int, int] | None) -> None:
        self.where.pop(self.key[i], None)
        self.key[i] = key
        if key is not None:
            self.where[key] = i

    def plan(self, file_id, revision, file_size, off, length, host) -> list[Cmd]:
        if length == 0:
            return []
        self.stats["content_bytes"] += length
        if file_size > self.limit:
            self.stats["bytes_from_host"] += length
            self.stats["uncacheable_bytes"] += length
            return [Cmd(APPEND_HOST, host + off, 0, length)]
        blocks = range(off // self.bs, (off + length - 1) // self.bs + 1)
        pinned = {i for b in blocks if (i := self._find(file_id, b)) is not None}
        inserts, appends = [], []
        for b in blocks:
            i = self._find(file_id, b)
            fresh = i is not None and self.rev[i] == revision
            if i is None:
                i = next((j for j in self.lru if j not in pinned), None)
            if fresh:
                self.stats["hits"] += 1
            else:
                self.stats["misses"] += 1
                if i is None:
                    self.stats["alloc_failures"] += 1
                else:
                    if self.key[i] == (file_id, b):
                        self.stats["invalidations"] += 1
                    elif self.key[i] is not None:
                        self.stats["evictions"] += 1
                    self._set(i, (file_id, b))
                    self.rev[i] = revision
                    end = min((b + 1) * self.bs, file_size)
                    self.stats["inserts"] += 1
                    self.stats["bytes_inserted"] += end - b * self.bs
                    inserts.append(Cmd(INSERT, host + b * self.bs, i * self.bs, end - b * self.bs))
            lo, hi = max(off, b * self.bs), min((b + 1) * self.bs, off + length)
            if i is None:
                self.stats["bytes_from_host"] += hi - lo
                piece = Cmd(APPEND_HOST, host + lo, 0, hi - lo)
            else:
                pinned.add(i)
                self.lru.move_to_end(i)
                self.stats["bytes_from_cache"] += hi - lo
                piece = Cmd(APPEND_CACHE, 0, i * self.bs + lo - b * self.bs, hi - lo)
            appends.append(piece)
        return inserts + self._merge(appends)

    @staticmethod
    def _merge(pieces: list[Cmd]) -> list[Cmd]:
        out: list[Cmd] = []
        for p in pieces:
            if out and out[-1].op == p.op:
                last = out[-1]
                end = last.host_addr + last.len if p.op == APPEND_HOST else last.cache_off + last.len
                if end == (p.host_addr if p.op == APPEND_HOST else p.cache_off):
                    out[-1] = last._replace(len=last.len + p.len)
                    continue
            out.append(p)
        return out

    def invalidate_file(self, file_id: int) -> None:
        for i, k in enumerate(self.key):
            if k is not None and k[0] == file_id:
                self._set(i, None)
                self.stats["invalidations"] += 1
                self.lru.move_to_end(i, last=False)

    def replay_response(self, file_id, revision, file_size, mss) -> None:
        self.stats["requests"] += 1
        for off in range(0, file_size, mss):
            self.plan(file_id, revision, file_size, off, min(mss, file_size - off), 0)

    def counters(self) -> dict[str, int]:
        return {name: self.stats.get(name, 0) for name in cachedir.STATS_FIELDS}


def random_stream(rng: random.Random, cache_bytes: int, bs: int, steps: int):
    """Packets of whole responses and of random ranges, with revision bumps, eager
    invalidations and changes of the file limit; files from one block to a little over
    the cache."""
    files = {f: rng.randint(1, cache_bytes + 2 * bs) for f in range(24)}
    revs = dict.fromkeys(files, 0)
    for _ in range(steps):
        f = rng.randrange(len(files))
        roll = rng.random()
        if roll < 0.03:
            revs[f] += 1
        elif roll < 0.05:
            yield ("invalidate", f)
            continue
        elif roll < 0.06:
            yield ("limit", rng.choice([cache_bytes, 1 << 62]))
            continue
        size = files[f]
        if roll < 0.5:
            mss = rng.choice([536, 1448, bs, 9000])
            for off in range(0, size, mss):
                yield ("plan", f, revs[f], size, off, min(mss, size - off))
        else:
            off = rng.randrange(size + 1)
            yield ("plan", f, revs[f], size, off, rng.randint(0, min(size - off, 5 * bs)))


@pytest.mark.parametrize("blocks,bs", [(1, 4096), (2, 4096), (3, 4096), (8, 4096), (33, 4096), (5, 512)])
def test_binding_matches_reference(blocks, bs):
    seed = random.randrange(1 << 30)
    print(f"seed {seed} ({blocks} blocks of {bs} B)")
    rng = random.Random(seed)
    with CacheDir(blocks * bs, bs) as d:
        ref = RefDir(blocks * bs, bs)
        assert d.cache_bytes == ref.limit and d.block_bytes == bs
        for n, step in enumerate(random_stream(rng, blocks * bs, bs, 600)):
            if step[0] == "invalidate":
                d.invalidate_file(step[1])
                ref.invalidate_file(step[1])
                continue
            if step[0] == "limit":
                d.set_file_limit(step[1])
                ref.limit = step[1]
                continue
            host = rng.randrange(1 << 20) << 12
            got, want = d.plan(*step[1:], host), ref.plan(*step[1:], host)
            assert got == want, f"seed {seed}, step {n}: {step}"
        assert d.stats() == ref.counters(), f"seed {seed}"
        assert d.cached_blocks == sum(k is not None for k in ref.key)


def test_replay_trace_matches_reference():
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    trace = webtrace.generate("nasa", seed=seed % 1000 + 1, requests=1500, modify_fraction=0.02)
    for cache in (64 << 10, 1 * MIB):
        ref = RefDir(cache)
        for f, r, s in zip(trace.file_id.tolist(), trace.revision.tolist(), trace.file_size.tolist()):
            ref.replay_response(f, r, s, 1448)
        with CacheDir(cache) as d:
            d.replay_trace(trace.file_id, trace.revision, trace.file_size, 1448)
            assert d.stats() == ref.counters(), f"seed {seed}, cache {cache}"


def test_plan_api_edges():
    with CacheDir(4 * 4096) as d:
        assert d.plan(1, 0, 10_000, 10_000, 0, 0) == []
        with pytest.raises(ValueError):
            d.plan(1, 0, 10_000, 9_000, 2_000, 0)
        d.set_file_limit(1 << 62)  # files stream through: six blocks into four
        cmds = d.plan(1, 0, 6 * 4096, 0, 6 * 4096, 0x1000_0000)
        assert [c.op for c in cmds] == [INSERT] * 4 + [APPEND_CACHE, APPEND_HOST]
        assert cmds[-1] == Cmd(APPEND_HOST, 0x1000_0000 + 4 * 4096, 0, 2 * 4096)
        assert d.stats()["alloc_failures"] == 2
    with pytest.raises(ValueError):
        CacheDir(100, 4096)
    d = CacheDir(1 * MIB)
    d.close()
    with pytest.raises(ValueError):
        d.stats()


# ----------------------------------------------------------------------------- traces

def zipf_slope(counts: np.ndarray, lo: int = 10, hi: int = 1000) -> float:
    """Fitted exponent of requests vs popularity rank over ranks lo..hi (log-log)."""
    f = np.sort(counts[counts > 0])[::-1].astype(float)
    r = np.arange(1, len(f) + 1)
    sel = (r >= lo) & (r <= hi)
    return float(-np.polyfit(np.log(r[sel]), np.log(f[sel]), 1)[0])


def test_traces_match_table1():
    """Whole traces: Table 1 exactly (SPECweb99's structural model: within 2%), the
    popularity slope near the workload's alpha (Fig. 12), and a quarter prefix within
    40% of the average response (a prefix is a window of time, and bursts of big files
    move its average)."""
    for key, w in webtrace.WORKLOADS.items():
        trace = webtrace.generate(key)
        s = trace.stats()
        exact = w.model == "zipf"
        assert s["requests"] == w.requests, key
        assert s["distinct_files"] == pytest.approx(w.distinct_files, rel=0 if exact else 0.02), key
        assert s["data_set_bytes"] == pytest.approx(w.data_set_bytes, rel=0 if exact else 0.001), key
        assert s["avg_response_bytes"] == pytest.approx(w.avg_response_bytes, rel=1e-4 if exact else 0.005), key
        # Table 1 gives SPEC's total in MiB (requests x average = 53,105 MB = 50,645 MiB).
        unit = 2**20 if key == "spec" else webtrace.MB
        assert w.requests * w.avg_response_bytes / unit == pytest.approx(w.total_response_mb, rel=0.001), key
        assert s["total_response_bytes"] == pytest.approx(w.requests * w.avg_response_bytes, rel=1e-4 if exact else 0.005), key
        assert np.array_equal(trace.file_size, trace.catalogue[trace.file_id]), key
        assert zipf_slope(np.bincount(trace.file_id)) == pytest.approx(w.alpha, abs=0.12), key
        part = trace.head(w.requests // 4).stats()
        assert part["avg_response_bytes"] == pytest.approx(w.avg_response_bytes, rel=0.4), key
        assert part["distinct_files"] <= s["distinct_files"]


def test_trace_prefix_seed_and_revisions():
    full = webtrace.generate("Rice")
    again = webtrace.generate("rice", requests=10_000)
    assert np.array_equal(again.file_id, full.file_id[:10_000])
    assert len(webtrace.generate("rice", scale=0.1)) == round(0.1 * len(full))
    other = webtrace.generate("rice", seed=2, requests=10_000)
    assert not np.array_equal(other.file_id, again.file_id)
    assert not full.revision.any()

    mod = webtrace.generate("rice", modify_fraction=0.05)
    assert np.array_equal(mod.file_id, full.file_id)
    for f in np.unique(mod.file_id[:2000])[:50]:
        revs = mod.revision[mod.file_id == f]
        assert np.all(np.diff(revs.astype(np.int64)) >= 0) and np.all(np.diff(revs.astype(np.int64)) <= 1)
    bumps = sum(int(mod.revision[mod.file_id == f].max()) for f in np.unique(mod.file_id))
    assert bumps == pytest.approx(0.05 * len(mod), rel=0.05)
    halves = full.split(2)
    assert np.array_equal(halves[1].file_id, full.file_id[1::2])


# ----------------------------------------------------------------------------- Fig. 3

def test_fig3_point(tmp_path):
    """Rice, the smallest trace, whole: the study's records and plot, and the seed's claim
    ("more than 50 percent" with dual 16 MB caches)."""
    recs = cache_study.run_fig3(tmp_path / "fig3.json", tmp_path / "fig3.png",
                                workloads=["rice"], sizes=[256 << 10, 16 * MIB], log=lambda *_: None)
    assert json.loads((tmp_path / "fig3.json").read_text()) == recs
    assert (tmp_path / "fig3.png").stat().st_size > 10_000
    small, big = recs
    for r in recs:
        assert {"workload", "cache_bytes", "model_content_reduction_pct"} <= r.keys()
        st = r["model_stats"]
        assert st["requests"] == webtrace.WORKLOADS["rice"].requests
        assert st["content_bytes"] == st["bytes_from_cache"] + st["bytes_from_host"]
    assert 0 < small["model_content_reduction_pct"] < big["model_content_reduction_pct"]
    assert big["model_dual_content_reduction_pct"] > cache_study.SEED_MIN_PCT
    assert big["model_dual_content_reduction_pct"] <= big["model_content_reduction_pct"]
    assert big["seed_says"] and small["seed_says"] is None
