"""Synthetic web-server traces built from the statistics of the seed paper's Table 1 (Kim,
Rixner & Pai, "Network Interface Data Caching"): Berkeley, IBM, NASA, Rice, SPECweb99 and
World Cup. Deterministic (numpy, seeded) and vectorised: the largest, IBM's 15.6 M
requests, takes about five seconds.

A trace matches Table 1 exactly in requests, distinct files, data set size (the sum of
the file sizes) and average response size, hence total response bytes. A response is
the whole file. Files have dense ids 0..F-1 in random order (not by popularity).

The five real logs ("zipf" model), parameters in WORKLOADS:
- Popularity, Zipf-like: the file of popularity rank r is requested
  1 + (N - F) r^-alpha / sum_k k^-alpha times (largest remainders, so the counts sum to N
  and each of the F files is requested at least once, as "distinct files" requires).
- Sizes: lognormal (shape SIZE_SIGMA, near measured web file sizes; SURGE fits 1.3),
  scaled to sum to the data set size, rounded to whole bytes.
- Which file gets which size: a Gaussian copula between popularity rank and size,
  key = rho z(rank) + sqrt(1 - rho^2) noise, the i-th smallest key taking the i-th
  smallest size (rho > 0: popular files are small). rho is bisected until the
  request-weighted mean size is the table's average response; the two assignments that
  bracket it are mixed linearly so that it matches to the byte (the mix keeps the sum).
- Temporal locality: each request's time is, with probability `burst`, near its file's
  own moment (normal, BURST_HOURS standard deviation), else uniform over the trace's
  duration; requests are sorted by time. Independent draws (burst 0) cannot give the
  seed's Fig. 3: with Table 1's average response, Rice at Zipf(0.9) would save ~11% with
  16 MB instead of more than 50%. Real logs are bursty, and the seed says so itself:
  splitting a trace over two NICs lowers the reduction "since splitting the traces
  reduces temporal locality", except for SPEC, which is statistically generated.

Choice of alpha and burst. The seed's Fig. 12 puts Rice and SPEC near Zipf(0.9) and the
other logs steeper. Rice keeps 0.9; each other log got the alpha that, with a burst
fraction of 0.1-0.35, puts its whole-trace reduction with dual 16 MB caches (cache_study)
where the seed's text puts it: Berkeley about 12%, World Cup 89% (its Fig. 7a
measurement), IBM and NASA above 50% and inside the 55-89% that Fig. 7a measured (we
aim near 65-70%); Rice needs burst 0.8 for ~56%. Berkeley's 0.95 is the steepest that
stays near 12%; IBM needs 1.3 because its small average response (2.9 KB against 25 KB
per file) makes its popular files small: most of its bytes are in less popular files.

SPECweb99 ("specweb99" model): the seed's trace is the benchmark's own log, so its files
and mix are the benchmark's: directories of 4 classes x 9 files, file k of class c of
k x (102.4 B, 1 KB, 10 KB, 100 KB)[c]; a request picks a directory by Zipf(1), a class
by 35/50/14/1 %, and one of the class's 9 files by Zipf(1) (SPEC_FILE_RANK). As many
directories as make the data set (984); requests per file = N x probability by largest
remainders, in random order (no bursts). Nothing is fitted, yet the average response
comes out at 14,689 B (table: 14,732), the popularity slope at ~0.9 as in Fig. 12, and
the 16 MB reduction at ~26% (seed: ~25%). Distinct files: 32,986 (table: 33,387).
Table 1's SPEC total (50,644) is in MiB: 3,604,784 x 14,732 B = 53,105 MB = 50,645 MiB.

A prefix (`requests=` or `scale=`) is a window of time: bursts of big files move its
averages (at 10% of a trace, up to about +-30%); whole traces match the table.
`modify_fraction` makes that fraction of requests modify their file first (revision + 1).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

MB = 10**6           # Table 1's megabytes: 3,184,540 requests x 25,920 B = 82,545 MB
SIZE_SIGMA = 1.5     # lognormal shape of file sizes (natural log)
BURST_HOURS = 1.0    # how long a file's burst of requests lasts (standard deviation)

# SPECweb99's file set and request mix: directories of 4 classes x 9 files; file k of
# class c has k x SPEC_CLASS_UNIT[c] bytes; a request picks a directory by Zipf(1), a
# class by SPEC_CLASS_MIX, and a file of the class by Zipf(1) over SPEC_FILE_RANK.
SPEC_CLASS_UNIT = (102.4, 1024, 10240, 102400)
SPEC_CLASS_MIX = (0.35, 0.50, 0.14, 0.01)
SPEC_FILE_RANK = (9, 6, 4, 2, 1, 3, 5, 7, 8)   # popularity rank of files 1..9 of a class


@dataclass(frozen=True)
class Workload:
    """A row of the seed's Table 1 (durations, years, sizes in its units) and the model
    parameters of its synthetic trace."""
    key: str
    label: str
    duration_hours: float
    year: int
    total_response_mb: int
    avg_response_bytes: int
    data_set_mb: int
    requests: int
    distinct_files: int
    alpha: float                 # Zipf exponent of popularity (SPEC: what its model gives)
    burst: float                 # fraction of requests placed in their file's burst
    model: str = "zipf"          # "zipf" or "specweb99" (see the module doc)

    @property
    def data_set_bytes(self) -> int:
        return self.data_set_mb * MB


WORKLOADS: dict[str, Workload] = {w.key: w for w in (
    Workload("berkeley", "Berkeley", 30 * 24, 2000, 82_545, 25_920, 6_664, 3_184_540, 97_766,
             alpha=0.95, burst=0.1),
    Workload("ibm", "IBM", 4 * 24, 1998, 44_487, 2_857, 997, 15_568_217, 39_363,
             alpha=1.3, burst=0.2),
    Workload("nasa", "NASA", 30 * 24, 1995, 96_069, 56_983, 271, 1_685_904, 4_690,
             alpha=1.1, burst=0.2),
    Workload("rice", "Rice", 30 * 24, 2000, 8_588, 34_936, 1_191, 245_820, 15_528,
             alpha=0.9, burst=0.8),
    Workload("spec", "SPECweb99", 1 / 3, 1999, 50_644, 14_732, 5_036, 3_604_784, 33_387,
             alpha=0.9, burst=0.0, model="specweb99"),
    Workload("worldcup", "World Cup", 14 * 24, 1998, 72_869, 6_847, 93, 10_641_170, 5_163,
             alpha=1.3, burst=0.35),
)}


def workload(name: str) -> Workload:
    """A workload by key or label, any case, spaces ignored ("World Cup", "spec")."""
    want = name.lower().replace(" ", "").replace("_", "")
    for w in WORKLOADS.values():
        if want in (w.key, w.label.lower().replace(" ", "")) or want == w.key + "web99":
            return w
    raise KeyError(f"unknown workload {name!r} (one of {', '.join(WORKLOADS)})")


@dataclass
class Trace:
    """Requests in order (arrays of equal length) and the file catalogue they draw on."""
    workload: Workload
    file_id: np.ndarray       # uint64, per request
    file_size: np.ndarray     # uint64, per request: the response size
    revision: np.ndarray      # uint32, per request
    catalogue: np.ndarray = field(repr=False)  # uint64 size of each file id

    def __len__(self) -> int:
        return len(self.file_id)

    def head(self, n: int) -> Trace:
        """The first n requests."""
        return Trace(self.workload, self.file_id[:n], self.file_size[:n], self.revision[:n],
                     self.catalogue)

    def split(self, parts: int) -> list[Trace]:
        """Requests dealt round robin to `parts` servers' NICs (contiguous copies)."""
        return [Trace(self.workload, np.ascontiguousarray(self.file_id[k::parts]),
                      np.ascontiguousarray(self.file_size[k::parts]),
                      np.ascontiguousarray(self.revision[k::parts]), self.catalogue)
                for k in range(parts)]

    def stats(self) -> dict:
        """Table 1's statistics of these requests (data set: the whole catalogue)."""
        seen = np.bincount(self.file_id, minlength=len(self.catalogue)) > 0
        total = int(self.file_size.sum(dtype=np.uint64))
        return {
            "requests": len(self),
            "distinct_files": int(seen.sum()),
            "data_set_bytes": int(self.catalogue.sum(dtype=np.uint64)),
            "requested_data_bytes": int(self.catalogue[seen].sum(dtype=np.uint64)),
            "total_response_bytes": total,
            "avg_response_bytes": total / len(self) if len(self) else 0.0,
        }


# ----------------------------------------------------------------------------- model

def largest_remainders(total: int, p: np.ndarray) -> np.ndarray:
    """Whole counts summing to `total`, as near to total * p / sum(p) as can be."""
    share = total * (p / p.sum())
    counts = np.floor(share).astype(np.int64)
    left = total - int(counts.sum())
    counts[np.argsort(counts - share, kind="stable")[:left]] += 1
    return counts


def request_counts(requests: int, files: int, alpha: float) -> np.ndarray:
    """Requests per popularity rank: one each, the rest Zipf(alpha)."""
    if requests < files:
        raise ValueError(f"{requests} requests cannot reach {files} distinct files")
    return 1 + largest_remainders(requests - files, np.arange(1, files + 1, dtype=np.float64) ** -alpha)


def _assign(sizes: np.ndarray, rho: float, score: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Sizes by popularity rank under the copula with correlation rho (sizes sorted)."""
    key = rho * score + math.sqrt(max(0.0, 1.0 - rho * rho)) * noise
    order = np.argsort(key, kind="stable")
    out = np.empty_like(sizes)
    out[order] = sizes
    return out


def assign_sizes(sizes: np.ndarray, counts: np.ndarray, mean: float,
                 rng: np.random.Generator) -> np.ndarray:
    """Sizes per popularity rank such that sum(counts * size) / sum(counts) == mean."""
    sizes = np.sort(sizes)
    score = np.sort(rng.standard_normal(len(sizes)))  # rank 1 gets the lowest
    noise = rng.standard_normal(len(sizes))
    n = counts.sum()

    def weighted_mean(rho: float) -> float:
        return float(counts @ _assign(sizes, rho, score, noise)) / n

    lo, hi = -1.0, 1.0  # the weighted mean falls as rho rises
    if not weighted_mean(hi) <= mean <= weighted_mean(lo):
        raise ValueError(f"mean response {mean:.0f} B is out of reach of these sizes "
                         f"({weighted_mean(hi):.0f}..{weighted_mean(lo):.0f} B)")
    for _ in range(40):
        mid = (lo + hi) / 2
        if weighted_mean(mid) > mean:
            lo = mid
        else:
            hi = mid
    a, b = _assign(sizes, lo, score, noise), _assign(sizes, hi, score, noise)
    ma, mb = float(counts @ a) / n, float(counts @ b) / n
    mix = 1.0 if ma == mb else (mean - mb) / (ma - mb)
    return mix * a + (1.0 - mix) * b


def whole_bytes(sizes: np.ndarray, total: int, counts: np.ndarray) -> np.ndarray:
    """Round to whole bytes (at least 1) summing to `total`; the rounding error goes to
    the largest of the least requested files, where it moves the mean response least."""
    out = np.maximum(1, np.rint(sizes)).astype(np.int64)
    least = np.flatnonzero(counts == counts.min())
    out[least[np.argmax(out[least])]] += total - int(out.sum())
    return out.astype(np.uint64)


def request_order(counts: np.ndarray, w: Workload, rng: np.random.Generator) -> np.ndarray:
    """Popularity ranks of the requests in time order (see the module doc)."""
    ranks = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    if w.burst <= 0.0:
        return rng.permutation(ranks)
    t = rng.random(len(ranks))
    bursty = rng.random(len(ranks)) < w.burst
    moment = rng.random(len(counts))
    width = BURST_HOURS / w.duration_hours
    t[bursty] = (moment[ranks[bursty]] + width * rng.standard_normal(int(bursty.sum()))) % 1.0
    return ranks[np.argsort(t)]  # equal times have probability 0: any sort will do


def modifications(file_id: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Revision per request when each request first modifies its file with probability
    `fraction`: the number of modifications of that file so far."""
    changed = (rng.random(len(file_id)) < fraction).astype(np.uint32)
    if not changed.any():
        return np.zeros(len(file_id), dtype=np.uint32)
    order = np.argsort(file_id, kind="stable")
    ids, runs = file_id[order], np.cumsum(changed[order], dtype=np.uint64)
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    before = np.repeat(runs[starts] - changed[order][starts], np.diff(np.r_[starts, len(ids)]))
    revision = np.empty(len(file_id), dtype=np.uint32)
    revision[order] = (runs - before).astype(np.uint32)
    return revision


def specweb99_files(w: Workload) -> tuple[np.ndarray, np.ndarray]:
    """SPECweb99's catalogue: sizes and request counts per file. As many directories as
    make the data set size; counts are N x probability, by largest remainders."""
    per_class = np.array([[int(k * unit) for k in range(1, 10)] for unit in SPEC_CLASS_UNIT])
    dirs = round(w.data_set_bytes / int(per_class.sum()))
    p_dir = 1.0 / np.arange(1, dirs + 1)
    p_file = 1.0 / np.array(SPEC_FILE_RANK, dtype=np.float64)
    p = (p_dir[:, None, None] / p_dir.sum()) * np.array(SPEC_CLASS_MIX)[None, :, None] \
        * (p_file / p_file.sum())[None, None, :]
    counts = largest_remainders(w.requests, p.ravel())
    sizes = np.tile(per_class.ravel(), dirs).astype(np.uint64)
    return sizes, counts


def zipf_files(w: Workload, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The generic catalogue: sizes and request counts per file, most popular first."""
    counts = request_counts(w.requests, w.distinct_files, w.alpha)
    raw = rng.lognormal(0.0, SIZE_SIGMA, w.distinct_files)
    sizes = assign_sizes(raw * (w.data_set_bytes / raw.sum()), counts, w.avg_response_bytes, rng)
    return whole_bytes(sizes, w.data_set_bytes, counts), counts


def generate(name: str, seed: int = 1, requests: int | None = None, scale: float | None = None,
             modify_fraction: float = 0.0) -> Trace:
    """The trace of a workload (WORKLOADS key or label). `requests` (or `scale`, a fraction
    of the full count) keeps only the first requests of the full trace, so a short trace
    is a prefix of the long one. `modify_fraction` of the requests bump their file's
    revision first."""
    w = workload(name)
    rng = np.random.default_rng([seed, zlib.crc32(w.key.encode())])
    sizes, counts = specweb99_files(w) if w.model == "specweb99" else zipf_files(w, rng)
    id_of_file = rng.permutation(len(sizes)).astype(np.uint64)
    catalogue = np.empty(len(sizes), dtype=np.uint64)
    catalogue[id_of_file] = sizes
    files = request_order(counts, w, rng)

    keep = len(files)
    if scale is not None:
        keep = int(round(scale * len(files)))
    if requests is not None:
        keep = min(keep, requests)
    files = files[:keep]
    file_id = id_of_file[files]
    revision = modifications(file_id, modify_fraction, rng) if modify_fraction else \
        np.zeros(keep, dtype=np.uint32)
    return Trace(w, file_id, sizes[files], revision, catalogue)
