"""The workloads' PCIe tap on the fast harness: bench/pcie_tap.PcieTap's interface over the
counts the C++ PCIe host keeps (sim/fastsim/pcie_host.h, PcieTap), so a workload counts
its PCIe traffic the same way on either harness.

The arithmetic is PcieTap's: every TLP put on the link, both ways, in wire bytes (header +
payload + 8), attributed to a label by its address or, a completion, by its request's tag,
into the bucket the workload has switched to; plus the hard IP interface's beats per TLP
and the times of the NIC's writes into watched labels (when each starts on the link, as
NicTB's tap sees it). What differs, because the fast
link model has none: no DLLPs (NicTB's tap counts each ACK and flow-control update as 8
"shared" bytes), no "other" TLPs (configuration requests: the fast harness does not
simulate configuration space). `log` (the cache bench's diagnosis) is not offered.
"""
from __future__ import annotations

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import ReadOnly, RisingEdge

from offnic_sim.host.addr_ranges import AddressRanges
from offnic_sim.host.nic_tb import CORE_PERIOD_NS

WAYS = ("up", "down")
KINDS = ("mrd", "mwr", "cpl", "other")   # pcie_host.h PcieTap::Kind
ITFS = ("rq", "cc", "cq", "rc")          # pcie_host.h PcieTap::Itf


class FastPcieTap:
    """PcieTap's interface (`add_range`, `classify`, `bucket`, `reset`, `bucket_counts`,
    `totals`, `watched`) on a FastNicTB."""

    def __init__(self, tb):
        self._tb = tb
        self._lib = tb.lib
        self._labels = ["shared"]          # label id -> name (id 0: "shared")
        self._ids = {"shared": 0}
        self._buckets: dict[str, int] = {}
        self._bucket: str | None = None
        self._watched: dict[str, list] = {}
        self._edge: tuple[int, int] | None = None  # (sim time in ps, the C++ host's cycle) at one core edge
        self.ranges = AddressRanges()
        self.log = None                    # PcieTap's diagnosis log: not offered here
        cocotb.start_soon(self._calibrate())

    async def _calibrate(self) -> None:
        """The sim time of one core clock edge with the C++ host's cycle count at it: turns
        the cycles the host records into times."""
        await RisingEdge(self._tb.clock)
        await ReadOnly()
        self._edge = (get_sim_time("ps"), self._lib.host_stats()["cycle"])

    def _time_ns(self, host_ps: int) -> float:
        """Sim time of a time of the C++ host's clock (its cycle count x the core period)."""
        t, c = self._edge
        return (t + host_ps - c * round(CORE_PERIOD_NS * 1000)) / 1000.0

    def _label(self, name: str) -> int:
        if name not in self._ids:
            if len(self._labels) >= self._lib.lib.fastsim_tap_max_labels():
                raise RuntimeError(f"PCIe tap: too many labels for the C++ tap ({len(self._labels)})")
            self._ids[name] = len(self._labels)
            self._labels.append(name)
        return self._ids[name]

    def add_range(self, lo: int, size: int, label: str) -> None:
        self._lib.lib.fastsim_tap_range(lo, size, self._label(label))
        self.ranges.add(lo, size, label)

    def classify(self, addr: int) -> str:
        return self.ranges.classify(addr)

    @property
    def bucket(self) -> str | None:
        return self._bucket

    @bucket.setter
    def bucket(self, name: str | None) -> None:
        self._bucket = name
        if name is not None and name not in self._buckets:
            self._buckets[name] = len(self._buckets)
        self._lib.lib.fastsim_tap_bucket(-1 if name is None else self._buckets[name])

    def reset(self) -> None:
        """Every bucket's counts to nothing (PcieTap.reset)."""
        self._lib.lib.fastsim_tap_clear()

    def bucket_counts(self, bucket: str) -> dict:
        """PcieTap.bucket_counts: label -> {"up_mrd": [TLPs, bytes], ...}, and "_if" ->
        {"rq": [beats, TLPs], ...}; only what was counted."""
        got = self._lib.tap_counts(self._buckets[bucket]) if bucket in self._buckets else None
        if got is None:
            return {}
        n, itf = got
        out: dict = {}
        for lab, per in enumerate(n[:len(self._labels)]):
            for k, (tlps, nbytes) in enumerate(per):
                if tlps:
                    out.setdefault(self._labels[lab], {})[f"{WAYS[k // 4]}_{KINDS[k % 4]}"] = [tlps, nbytes]
        for name, (beats, tlps) in zip(ITFS, itf):
            if tlps:
                out.setdefault("_if", {})[name] = [beats, tlps]
        return out

    def totals(self, bucket: str) -> dict:
        """PcieTap.totals: wire bytes and TLPs so far in `bucket`, by direction."""
        out = {"up": 0, "down": 0, "up_tlps": 0, "down_tlps": 0}
        for label, kinds in self.bucket_counts(bucket).items():
            if label == "_if":
                continue
            for k, (n, b) in kinds.items():
                way = k.split("_")[0]
                out[way] += b
                out[way + "_tlps"] += n
        return out

    @property
    def watched(self) -> dict[str, list]:
        """label -> [(t_ns, 16-byte records)] of the NIC's writes into it while counting."""
        for lab, host_ps, records in self._lib.tap_watched():
            w = self._watched.get(self._labels[lab])
            if w is not None:
                w.append((self._time_ns(host_ps), records))
        return self._watched

    @watched.setter
    def watched(self, labels: dict[str, list]) -> None:
        self._lib.tap_watched()            # what the last labels collected is dropped
        for name in self._watched:
            self._lib.lib.fastsim_tap_watch(self._label(name), 0)
        self._watched = labels
        for name in labels:
            self._lib.lib.fastsim_tap_watch(self._label(name), 1)
