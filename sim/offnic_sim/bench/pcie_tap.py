"""Every TLP and DLLP on the PCIe link model, counted in wire bytes by stream (the
workloads' PCIe figures)."""
from __future__ import annotations

from cocotb.simtime import get_sim_time
from cocotbext.pcie.core.dllp import Dllp
from cocotbext.pcie.core.tlp import TlpType

from offnic_sim.host.addr_ranges import AddressRanges


class PcieTap:
    """Counts every TLP and DLLP on the PCIe link model, both directions, in wire bytes
    (cocotbext-pcie's `get_wire_size()`: TLP header + payload + 8; DLLPs 8), by stream.

    It wraps `handle_tx` of both link ends (the device's upstream port and the root
    complex port it is connected to): each call is one packet put on the wire.
    Attribution: a request by its address (`classify`), a completion by the tag of the
    request it answers, DLLPs "shared". Buckets are switched by `bucket` (None: not
    counted). fast/fast_tap.FastPcieTap offers the same interface on the fast harness."""

    def __init__(self, dev):
        self.ranges = AddressRanges()
        self.tags: dict[tuple[str, int], str] = {}
        self.bucket: str | None = None
        self.counts: dict[str, dict] = {}
        self.watched: dict[str, list] = {}   # label -> [(t_ns, records)] of writes to it (RX completion rings)
        self.log: list | None = None          # diagnosis: [(t_ns, way, kind, addr or tag, bytes)] of reads/completions
        up = dev.upstream_port
        self._wrap(up, "up")            # NIC -> host
        self._wrap(up.other, "down")    # host -> NIC

    def add_range(self, lo: int, size: int, label: str) -> None:
        self.ranges.add(lo, size, label)

    def classify(self, addr: int) -> str:
        return self.ranges.classify(addr)

    def reset(self) -> None:
        """Every bucket's counts to nothing."""
        self.counts = {}

    def bucket_counts(self, bucket: str) -> dict:
        """A copy of `bucket`'s counts: label -> {"up_mrd": [TLPs, bytes], ...}, and "_if" ->
        {"rq": [beats, TLPs], ...}."""
        return {k: {kk: list(vv) for kk, vv in v.items()} for k, v in self.counts.get(bucket, {}).items()}

    def totals(self, bucket: str) -> dict:
        """TLP+DLLP wire bytes so far in `bucket`, by direction: up = NIC -> host, down =
        host -> NIC (and TLP counts, up_tlps/down_tlps)."""
        out = {"up": 0, "down": 0, "up_tlps": 0, "down_tlps": 0}
        for label, kinds in self.counts.get(bucket, {}).items():
            if label == "_if":
                continue
            for k, (n, b) in kinds.items():
                way = k.split("_")[0]
                out[way] += b
                out[way + "_tlps"] += n
        return out

    def _wrap(self, port, way: str) -> None:
        orig = port.handle_tx

        async def handle_tx(pkt):
            self._count(way, pkt)
            await orig(pkt)

        port.handle_tx = handle_tx

    def _count(self, way: str, pkt) -> None:
        if isinstance(pkt, Dllp):
            label, kind, size = "shared", "dllp", 8
        else:
            t = pkt.fmt_type
            size = pkt.get_wire_size()
            if t in (TlpType.CPL, TlpType.CPL_DATA):
                kind = "cpl"
                label = self.tags.get(("down" if way == "up" else "up", pkt.tag), "shared")
                if self.log is not None:
                    self.log.append((get_sim_time("ns"), way, kind, pkt.tag, pkt.get_payload_size()))
            elif t in (TlpType.MEM_READ, TlpType.MEM_READ_64):
                kind = "mrd"
                label = self.classify(pkt.address)
                self.tags[(way, pkt.tag)] = label
                if self.log is not None:
                    self.log.append((get_sim_time("ns"), way, kind, pkt.address, pkt.length * 4, pkt.tag))
            elif t in (TlpType.MEM_WRITE, TlpType.MEM_WRITE_64):
                kind = "mwr"
                label = self.classify(pkt.address)
                w = self.watched.get(label)
                if w is not None and self.bucket is not None:
                    w.append((get_sim_time("ns"), max(1, pkt.get_payload_size() // 16)))
            else:
                kind, label = "other", "shared"
        if self.bucket is None:
            return
        b = self.counts.setdefault(self.bucket, {})
        s = b.setdefault(label, {})
        k = f"{way}_{kind}"
        c = s.setdefault(k, [0, 0])
        c[0] += 1
        c[1] += size
        if kind != "dllp":
            # beats of the hard IP's 256-bit user interface (no straddling: a TLP starts on
            # a new beat): RQ/CQ descriptors are 16 B, RC/CC 12 B, then the payload
            itf = {("up", False): "rq", ("up", True): "cc", ("down", False): "cq", ("down", True): "rc"}[
                (way, kind == "cpl")]
            hdr = 12 if itf in ("rc", "cc") else 16
            x = b.setdefault("_if", {}).setdefault(itf, [0, 0])
            x[0] += -(-(hdr + pkt.get_payload_size()) // 32)
            x[1] += 1

