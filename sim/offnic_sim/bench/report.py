"""From the raw results of a workload run (workload.py) to what a NIC engineer reads:
per-stream throughput, latency, PCIe cost, drops, interrupts; the demo's text report and
plot; the bench's records, table and plot. Pure Python (+ matplotlib for the plots), no
simulator.

Definitions (also in the bench JSON's first record):
- frame size: the Ethernet frame with its FCS (RFC 2544). Gb/s counts frame bits with
  FCS; % of line rate counts each frame as size + 20 bytes (preamble, SFD and the
  12-byte average gap) against 25 Gb/s; so 64-byte frames at line rate are 37.2 Mpps.
- rates are measured over the case's window (after the settle time) by wire time: each
  frame occupies a slot of size + 20 bytes on the wire, ending 12 bytes after its last
  byte; the part of its slot inside the window counts (so a saturated port reads 100.0%
  with no quantisation). TX frames are taken at the XGMII sink; RX frames are those
  the XgmiiSource sent (offered) and the driver got a completion for (delivered).
- latency host-to-wire: the doorbell write that posted the frame -> its last byte on
  the XGMII (TX frames ending in the window). It includes time waiting in the ring: the
  driver keeps up to `in_flight` packets queued (a byte limit of ~48 KiB).
- latency wire-to-completion: the frame's last byte into the port -> the driver has its
  RX completion (after the event and MSI-X; includes interrupt moderation).
- PCIe bytes per payload byte: every TLP and DLLP on the link in both directions over
  the whole case (TLP bytes = header + payload + 8 bytes of framing: STP token with the
  sequence number, and LCRC; DLLP 8 bytes), divided by the Ethernet bytes the host and
  NIC moved (frames without FCS, as they sit in host memory).
"""
from __future__ import annotations

import math
from pathlib import Path

from offnic_sim.net.wire import IFG, LINE_GBPS, PRE, WIRE_OVERHEAD

DMA_READ_TAGS = 128  # the NIC's DMA read tags (NicParams: tags)

CORE_PERIOD_NS = 4.0

# ---- PCIe Gen3 x8: what is usable after TLP overhead
PCIE_GT = 8e9
PCIE_LANES = 8
PCIE_RAW_GBPS = PCIE_GT * PCIE_LANES * 128 / 130 / 1e9       # 63.015 Gb/s per direction
TLP_FRAMING = 8       # Gen3: 4-byte STP token (length + 12-bit sequence number) + 4-byte LCRC
HDR_MWR64 = 16        # memory write/read request with a 64-bit address: 4 DW header
HDR_CPL = 12          # completion: 3 DW header
DLLP_BYTES = 8


def pcie_theory(mps: int = 256, mrrs: int = 512, dllp_share: float | None = None) -> dict:
    """Usable PCIe Gen3 x8 throughput per direction after TLP overhead."""
    wr = PCIE_RAW_GBPS * mps / (mps + HDR_MWR64 + TLP_FRAMING)
    rd = PCIE_RAW_GBPS * mps / (mps + HDR_CPL + TLP_FRAMING)
    out = {
        "kind": "pcie_gen3_x8_usable",
        "formula": ("raw = 8 GT/s x 8 lanes x 128/130 = 63.015 Gb/s per direction; "
                    f"a TLP costs its payload + header (16 B for 64-bit-address requests, 12 B for completions) "
                    f"+ 8 B framing (Gen3 STP token carrying the 12-bit sequence number: 4 B, LCRC: 4 B); "
                    f"DMA writes of MPS={mps} B: usable = raw x {mps}/({mps}+24) = {wr:.2f} Gb/s; "
                    f"read data as completions of {mps} B: raw x {mps}/({mps}+20) = {rd:.2f} Gb/s "
                    f"(the {mrrs}-B read requests, 24 B each, travel the other way). "
                    "DLLPs (ACK and UpdateFC, 8 B each) take a few percent more (measured_dllp_share_pct: "
                    "their share of all link bytes in the 2-port cases)."),
        "raw_gbps": round(PCIE_RAW_GBPS, 3),
        "mps": mps, "mrrs": mrrs,
        "usable_write_gbps": round(wr, 2),
        "usable_read_completion_gbps": round(rd, 2),
        "usable_gbps": round(wr, 2),
        "note_axis": ("the NIC's 256-bit, 250 MHz hard-IP interface without straddling also carries a "
                      f"{mps}-B TLP plus its 16-B (RQ) or 12-B (RC) descriptor in {math.ceil((mps + 16) / 32)} beats: "
                      f"64 x {mps}/{32 * math.ceil((mps + 16) / 32)} = {64 * mps / (32 * math.ceil((mps + 16) / 32)):.1f} Gb/s"),
    }
    if dllp_share is not None:
        out["measured_dllp_share_pct"] = round(100 * dllp_share, 2)
        out["usable_gbps_after_dllps"] = round(wr * (1 - dllp_share), 2)
    return out


# ----------------------------------------------------------------------------- statistics

def pct(v: list[float], p: float) -> float | None:
    """Nearest-rank percentile of a sorted list."""
    if not v:
        return None
    return v[min(len(v) - 1, max(0, math.ceil(p / 100 * len(v)) - 1))]


def lat_summary(values: list[float]) -> dict:
    v = sorted(values)
    if not v:
        return {"count": 0, "p50": None, "p90": None, "p99": None, "max": None}
    return {"count": len(v), "p50": round(pct(v, 50), 1), "p90": round(pct(v, 90), 1),
            "p99": round(pct(v, 99), 1), "max": round(v[-1], 1)}


def slot_fraction(size: int, t_end: float, w0: float, w1: float) -> float:
    """The part of a frame's wire slot (size + 20 bytes, ending IFG bytes after its last
    byte) that lies inside [w0, w1]."""
    tau = 8 / LINE_GBPS  # ns per byte
    a = t_end - (size + PRE) * tau
    b = t_end + IFG * tau
    ov = min(b, w1) - max(a, w0)
    return max(0.0, ov) / (b - a)


def rate(frames, w0: float, w1: float) -> dict:
    """frames: (size, t_end) -> Gb/s (frame bits with FCS), Mpps, % of line rate."""
    T = w1 - w0
    n = b = wire = 0.0
    for size, t_end in frames:
        f = slot_fraction(size, t_end, w0, w1)
        if f:
            n += f
            b += f * size
            wire += f * (size + WIRE_OVERHEAD)
    return {"gbps": round(b * 8 / T, 3), "mpps": round(n / T * 1000, 3),
            "line_rate_pct": round(100 * wire * 8 / (LINE_GBPS * T), 2), "frames": round(n, 1)}


def pcie_sum(counts: dict, labels=None, ways=("up", "down")) -> int:
    tot = 0
    for lab, kinds in counts.items():
        if lab.startswith("_") or labels is not None and lab.split(":")[0] not in labels:
            continue
        for k, (n, b) in kinds.items():
            if k.split("_")[0] in ways:
                tot += b
    return tot


def drops_of(counters: dict) -> dict:
    """Non-zero drop / error counters of a case (eth_port, rx_engine, tx_engine, dma, eqs)."""
    keys = {
        "port": ("tx_errors", "rx_fcs_errors", "rx_runts", "rx_oversize", "rx_xgmii_errors", "rx_fifo_drops"),
        "rx_engine": ("drop_disabled", "drop_no_desc", "drop_cq_full", "too_long", "dma_errors", "desc_fetch_errors"),
        "tx_engine": ("dma_errors", "bad_desc", "csum_bad_cmd", "csum_drop_oversize", "desc_fetch_errors"),
        "dma": ("rd_err_status", "rd_err_poisoned", "rd_err_timeout", "rd_err_malformed", "rd_unexpected",
                "rd_done_error", "wr_done_error"),
        "eqs": ("overflows",),
    }
    out = {}
    for blk, regs_ in counters.items():
        want = keys["port"] if blk.startswith("port") else keys.get(blk, ())
        for r in want:
            if regs_.get(r):
                out[f"{blk}.{r}"] = regs_[r]
    return out


def tx_stream(d: dict, w0: float, w1: float) -> dict:
    """A TX stream's figures in the window: rate by wire time, doorbell-to-wire latency,
    frames on the wire, frames lost."""
    sent = {t: tdb for t, _, tdb in d["sent"]}
    wire = d["wire"]
    r = rate(((s, te) for _, s, te in wire), w0, w1)
    lat = [te - sent[t] for t, _, te in wire if w0 <= te <= w1 and t in sent]
    r["latency_ns"] = lat_summary(lat)
    r["frames_case"] = len(wire)
    r["lost"] = len(sent) - len(wire)
    return r


def rx_stream(d: dict, w0: float, w1: float) -> dict:
    """An RX stream's figures in the window: the lower of the rate by the NIC's completion
    writes and by wire time of the frames it completed, drops, wire-to-completion latency."""
    ok = {t: (ln, tc) for t, ln, tc, st in d["done"] if st == 0}
    offered = d["offered"]
    # Delivered: by the times the NIC wrote the completions (its own pace, not helped
    # by frames its RX RAM soaked up before the window), the k-th completion written
    # being the k-th the driver took.
    times = [t for t, k in d["cq_writes"] for _ in range(k)]
    sizes = [ln + 4 for _, ln, _, st in d["done"]]
    by_cpl = rate(zip(sizes, times), w0, w1)
    by_wire = rate(((s, te) for t, s, te in offered if t in ok), w0, w1)
    # the lower of the two: accepted-by-wire-time is inflated while the RX RAM fills,
    # completed-by-NIC-time while a backlog drains
    r = dict(min(by_cpl, by_wire, key=lambda x: x["line_rate_pct"]))
    cq_time = dict(zip((t for t, _, _, _ in d["done"]), times))
    r["backlog_bytes_at_window_end"] = sum(s for t, s, te in offered
                                           if t in ok and te <= w1 and cq_time.get(t, 0) > w1)
    r["line_rate_pct_by_completion"] = by_cpl["line_rate_pct"]
    r["line_rate_pct_accepted"] = by_wire["line_rate_pct"]
    r["cq_records_vs_completions"] = [len(times), len(sizes)]
    off = rate(((s, te) for _, s, te in offered), w0, w1)
    r["offered_line_rate_pct"] = off["line_rate_pct"]
    r["offered_frames"] = off["frames"]
    win = [(t, te) for t, _, te in offered if w0 <= te <= w1]
    r["dropped_in_window"] = sum(1 for t, _ in win if t not in ok)
    r["drop_pct"] = round(100 * r["dropped_in_window"] / len(win), 2) if win else 0.0
    r["steady_drop_pct"] = round(max(0.0, 100 * (1 - r["line_rate_pct"] / off["line_rate_pct"])), 2) \
        if off["line_rate_pct"] else 0.0
    r["latency_ns"] = lat_summary([ok[t][1] - te for t, te in win if t in ok])
    r["frames_case"] = len(ok)
    r["dropped_case"] = len(offered) - len(ok)
    r["not_ok_status"] = sum(1 for _, _, _, st in d["done"] if st != 0)
    r["_payload"] = sum(ln for ln, _ in ok.values())
    return r


def pcie_figures(c: dict, streams: dict, payload: dict) -> dict:
    """PCIe per stream (its own TLPs, the shared ones: events, MSI-X, other registers,
    DLLPs, split in proportion to them) and for the case: bytes, link and interface use."""
    T = c["w1_ns"] - c["w0_ns"]
    pc = c["pcie_case"]
    own = {s: pcie_sum(pc, {s}) for s in streams}
    for s, r in streams.items():  # descriptor fetches: reads of the descriptor ring
        fetches = pc.get(f"{s}:ring", {}).get("up_mrd", [0, 0])[0]
        r["desc_fetches"] = fetches
        r["descs_per_fetch"] = round(r["frames_case"] / fetches, 1) if fetches else None
    shared = pcie_sum(pc) - sum(own.values())
    tot_own = sum(own.values()) or 1
    for s, r in streams.items():
        b = own[s] + shared * own[s] / tot_own
        r["pcie_bytes_per_payload_byte"] = round(b / payload[s], 3) if payload[s] else None
    total_payload = sum(payload.values())
    pw = c["pcie_window"]
    up_w, down_w = pcie_sum(pw, ways=("up",)), pcie_sum(pw, ways=("down",))
    dllp = sum(b for kinds in pc.values() for k, (n, b) in kinds.items() if k.endswith("dllp"))
    beats = {k: round(100 * v[0] / (T / CORE_PERIOD_NS), 1) for k, v in pw.get("_if", {}).items()}
    # Ethernet payload crossing PCIe during the window, per direction
    h2d = sum(r["gbps"] * (1 - 4 / max(1, _avg_size(c))) for s, r in streams.items() if s.startswith("tx"))
    d2h = sum(r["gbps"] * (1 - 4 / max(1, _avg_size(c))) for s, r in streams.items() if s.startswith("rx"))
    return {
        "bytes_up": pcie_sum(pc, ways=("up",)), "bytes_down": pcie_sum(pc, ways=("down",)),
        "payload_bytes": total_payload,
        "bytes_per_payload_byte": round(pcie_sum(pc) / total_payload, 3) if total_payload else None,
        "dllp_share": round(dllp / max(1, pcie_sum(pc)), 4),
        "link_util_pct_up": round(100 * up_w * 8 / (PCIE_RAW_GBPS * T), 1),
        "link_util_pct_down": round(100 * down_w * 8 / (PCIE_RAW_GBPS * T), 1),
        "payload_gbps_host_to_nic": round(h2d, 2), "payload_gbps_nic_to_host": round(d2h, 2),
        "tlps": _tlp_kinds(pc),
        "interface_busy_pct": beats,   # beats used / core cycles in the window, per hard-IP interface
    }


def analyze_case(c: dict) -> dict:
    """Everything report and bench need from one raw case."""
    w0, w1 = c["w0_ns"], c["w1_ns"]
    streams = {}
    payload = {}     # stream -> Ethernet bytes moved over PCIe during the whole case (no FCS)
    for p, d in c.get("tx", {}).items():
        streams[f"tx{p}"] = tx_stream(d, w0, w1)
        payload[f"tx{p}"] = sum(s - 4 for _, s, _ in d["wire"])
    for p, d in c.get("rx", {}).items():
        r = rx_stream(d, w0, w1)
        payload[f"rx{p}"] = r.pop("_payload")
        streams[f"rx{p}"] = r
    pcie = pcie_figures(c, streams, payload)
    packets = sum(r["frames_case"] for r in streams.values())
    drv = c["driver"]
    return {
        "streams": streams,
        "pcie": pcie,
        "drops": drops_of(c["counters"]),
        "interrupts": c["irqs"], "events": drv.get("events", 0), "packets": packets,
        "interrupts_per_packet": round(c["irqs"] / packets, 4) if packets else None,
        "events_per_packet": round(drv.get("events", 0) / packets, 4) if packets else None,
        "doorbells": drv.get("tx_doorbells", 0),
        "host_reads_in_flight": c["host_reads_in_flight"],
        "tx_lat_all": _merge_lat(c, "tx"), "rx_lat_all": _merge_lat(c, "rx"),
    }


def _avg_size(c: dict) -> float:
    w = sum(x[1] for x in c["sizes"])
    return sum(s * x for s, x in c["sizes"]) / w


def _tlp_kinds(pc: dict) -> dict:
    out = {}
    for lab, kinds in pc.items():
        if lab.startswith("_"):
            continue
        for k, (n, b) in kinds.items():
            o = out.setdefault(k, [0, 0])
            o[0] += n
            o[1] += b
    return out


def _merge_lat(c: dict, kind: str) -> dict:
    """Latency percentiles over every stream of `kind` in the window."""
    w0, w1 = c["w0_ns"], c["w1_ns"]
    v = []
    if kind == "tx":
        for d in c.get("tx", {}).values():
            sent = {t: tdb for t, _, tdb in d["sent"]}
            v += [te - sent[t] for t, _, te in d["wire"] if w0 <= te <= w1 and t in sent]
    else:
        for d in c.get("rx", {}).values():
            ok = {t: tc for t, ln, tc, st in d["done"] if st == 0}
            v += [ok[t] - te for t, _, te in d["offered"] if w0 <= te <= w1 and t in ok]
    return lat_summary(v)


def latencies(c: dict, stream: str) -> list[float]:
    """Every latency sample (ns) of one stream in the window, for plots."""
    w0, w1 = c["w0_ns"], c["w1_ns"]
    p = stream[2:]
    if stream.startswith("tx"):
        d = c["tx"][p]
        sent = {t: tdb for t, _, tdb in d["sent"]}
        return [te - sent[t] for t, _, te in d["wire"] if w0 <= te <= w1 and t in sent]
    d = c["rx"][p]
    ok = {t: tc for t, ln, tc, st in d["done"] if st == 0}
    return [ok[t] - te for t, _, te in d["offered"] if w0 <= te <= w1 and t in ok]


# ----------------------------------------------------------------------------- bench

def bench_record(c: dict, run: dict) -> dict:
    a = analyze_case(c)
    st = a["streams"]
    nstreams = len(st)
    gbps = sum(r["gbps"] for r in st.values())
    mpps = sum(r["mpps"] for r in st.values())
    line = sum(r["line_rate_pct"] for r in st.values()) / nstreams if nstreams else 0.0
    usable = pcie_theory(run["mps"], run["mrrs"])["usable_gbps"]
    rec = {
        "kind": "case",
        "name": c["name"],
        "frame_size": c["sizes"][0][0],
        "ports": len(c["ports"]),
        "direction": c["direction"],
        "gbps": round(gbps, 3),
        "mpps": round(mpps, 3),
        "line_rate_pct": round(line, 2),
        "line_rate_gbps": LINE_GBPS * nstreams,
        "pcie_bytes_per_payload_byte": a["pcie"]["bytes_per_payload_byte"],
        "latency_host_to_wire_ns": a["tx_lat_all"] if c["direction"] != "rx" else None,
        "latency_wire_to_completion_ns": a["rx_lat_all"] if c["direction"] != "tx" else None,
        "rx_drop_pct": _rx_drop_pct(st) if c["direction"] != "tx" else None,
        "drops": {"rx_frames_not_delivered_in_window": sum(r.get("dropped_in_window", 0) for r in st.values()),
                  "rx_frames_not_delivered_case": sum(r.get("dropped_case", 0) for r in st.values()),
                  "tx_frames_lost": sum(r.get("lost", 0) for r in st.values()),
                  **a["drops"]},
        "streams": {s: {k: v for k, v in r.items()} for s, r in st.items()},
        "pcie": a["pcie"],
        "interrupts_per_packet": a["interrupts_per_packet"],
        "events_per_packet": a["events_per_packet"],
        "host_reads_in_flight_mean": round(a["host_reads_in_flight"]["mean"], 2),
        "host_reads_in_flight_max": a["host_reads_in_flight"]["max"],
        "window_us": c["window_us"], "settle_us": c["settle_us"],
        "core_cycles": c["core_cycles"],
        "tx_in_flight": c["in_flight"], "tx_batch": c["batch"],
        "moderation": {"count": c["mod_count"], "time_us": c["mod_time_us"]},
        "seed": run["seed"], "case_seed": c["seed"],
    }
    if len(c["ports"]) == 2:
        busiest = max(a["pcie"]["payload_gbps_host_to_nic"], a["pcie"]["payload_gbps_nic_to_host"])
        rec["pcie_usable_pct"] = round(100 * busiest / usable, 1)
    return rec


def _rx_drop_pct(st: dict) -> float:
    """Steady-state RX loss: 1 - delivered / offered (by wire time, all RX streams)."""
    off = sum(r["offered_line_rate_pct"] for s, r in st.items() if s.startswith("rx"))
    got = sum(r["line_rate_pct"] for s, r in st.items() if s.startswith("rx"))
    return round(max(0.0, 100 * (1 - got / off)), 2) if off else 0.0


def probe_latencies(runs: list[dict]) -> dict[int, dict]:
    """Unloaded latencies by frame size from the probe cases: {size: {"host_to_wire_ns": {...},
    "wire_to_completion_ns": {...}}} (percentiles)."""
    out = {}
    for run in runs:
        for c in run["cases"]:
            for size, d in c.get("probe", {}).items():
                out[int(size)] = {k: lat_summary(v) for k, v in d.items()}
    return out


def bench_records(runs: list[dict]) -> list[dict]:
    probes = probe_latencies(runs)
    recs = [bench_record(c, run) for run in runs for c in run["cases"] if c["direction"] != "probe"]
    for r in recs:
        pr = probes.get(r["frame_size"])
        if pr:
            r["latency_unloaded_host_to_wire_ns"] = pr["host_to_wire_ns"]
            r["latency_unloaded_wire_to_completion_ns"] = pr["wire_to_completion_ns"]
    order = {"tx": 0, "rx": 1, "bidir": 2}
    recs.sort(key=lambda r: (r["frame_size"], r["ports"], order[r["direction"]]))
    two = [r for r in recs if r["ports"] == 2]
    run = runs[0]
    # the fast harness's link has no DLLPs: their share is NicTB's to measure
    share = sum(r["pcie"]["dllp_share"] for r in two) / len(two) if two and not run.get("harness", "nic").startswith("fast") else None
    theory = pcie_theory(run["mps"], run["mrrs"], share)
    meta = {"kind": "run", "host_read_latency_ns": run["host_latency_ns"], "mps": run["mps"], "mrrs": run["mrrs"],
            "line_gbps_per_port": LINE_GBPS, "seeds": [r["seed"] for r in runs],
            "sim_us": round(sum(r["sim_ns"] for r in runs) / 1000, 1),
            "definitions": __doc__.split("Definitions (also in the bench JSON's first record):")[1].strip()}
    return [theory, meta] + recs


def _fmt(v, nd=1) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def bench_table(recs: list[dict]) -> str:
    theory = next(r for r in recs if r["kind"] == "pcie_gen3_x8_usable")
    rows = [r for r in recs if r["kind"] == "case"]
    lines = [f"{'size':>5} {'ports':>5} {'dir':>5} {'Gb/s':>7} {'Mpps':>7} {'line%':>6} {'PCIe%':>6} {'B/B':>5} "
             f"{'h2w p50':>8} {'h2w p99':>8} {'w2c p50':>8} {'w2c p99':>8} {'drop%':>6} {'irq/pkt':>7}"]
    for r in rows:
        h, w = r["latency_host_to_wire_ns"] or {}, r["latency_wire_to_completion_ns"] or {}
        lines.append(
            f"{r['frame_size']:>5} {r['ports']:>5} {r['direction']:>5} {r['gbps']:>7.2f} {r['mpps']:>7.2f} "
            f"{r['line_rate_pct']:>6.1f} {_fmt(r.get('pcie_usable_pct')):>6} {_fmt(r['pcie_bytes_per_payload_byte'], 2):>5} "
            f"{_fmt(h.get('p50'), 0):>8} {_fmt(h.get('p99'), 0):>8} {_fmt(w.get('p50'), 0):>8} {_fmt(w.get('p99'), 0):>8} "
            f"{_fmt(r['rx_drop_pct']):>6} {_fmt(r['interrupts_per_packet'], 3):>7}")
    lines.append("")
    lines.append(f"Gb/s, Mpps: all streams of the case together (frame bits with FCS); line%: of "
                 f"(ports x directions) x 25 Gb/s; PCIe%: Ethernet payload on the busier PCIe direction as a % of "
                 f"{theory['usable_gbps']} Gb/s usable (Gen3 x8, MPS {theory['mps']}); B/B: PCIe link bytes per payload byte; "
                 f"h2w/w2c: host-to-wire / wire-to-completion latency, ns (under load: include ring and RX-buffer queueing); "
                 f"drop%: RX frames offered at line rate and not delivered (steady state).")
    return "\n".join(lines)


def bench_plot(recs: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    rows = [r for r in recs if r["kind"] == "case"]
    sizes = sorted({r["frame_size"] for r in rows})
    fig, axs = plt.subplots(2, 2, figsize=(13, 9))
    styles = {"tx": "o-", "rx": "s-", "bidir": "^-"}
    for ports, ax in ((1, axs[0][0]), (2, axs[0][1])):
        for d in ("tx", "rx", "bidir"):
            pts = [(r["frame_size"], r["line_rate_pct"]) for r in rows if r["ports"] == ports and r["direction"] == d]
            pts.sort()
            ax.plot([str(s) for s, _ in pts], [v for _, v in pts], styles[d], label=d)
        ax.axhline(100, color="grey", lw=0.8, ls="--")
        ax.set_ylim(0, 110)
        ax.set_title(f"{ports} port{'s' if ports > 1 else ''}: % of line rate (25G per port and direction)")
        ax.set_xlabel("frame size (bytes, with FCS)")
        ax.set_ylabel("% of line rate")
        ax.legend()
        ax.grid(alpha=0.3)
    fmt = matplotlib.ticker.FormatStrFormatter("%g")
    ax = axs[1][0]
    line_mpps = [LINE_GBPS * 1000 / ((s + WIRE_OVERHEAD) * 8) for s in sizes]
    ax.plot([str(s) for s in sizes], line_mpps, "k--", lw=1, label="line rate (one port, one way)")
    for ports in (1, 2):
        for d in ("tx", "rx", "bidir"):
            pts = sorted((r["frame_size"], r["mpps"] / len(r["streams"])) for r in rows
                         if r["ports"] == ports and r["direction"] == d)
            ax.plot([str(s) for s, _ in pts], [v for _, v in pts], styles[d], label=f"{ports}p {d}",
                    alpha=1 if ports == 2 else 0.45)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_title("packet rate per port and direction (Mpps)")
    ax.set_xlabel("frame size (bytes)")
    ax.legend(ncol=2, fontsize=8)
    ax.grid(alpha=0.3, which="both")
    ax = axs[1][1]
    for key, lab, st in (("latency_host_to_wire_ns", "host->wire", "o"), ("latency_wire_to_completion_ns", "wire->cpl", "s")):
        for q, ls in (("p50", "-"), ("p99", ":")):
            pts = sorted((r["frame_size"], r[key][q] / 1000) for r in rows
                         if r["ports"] == 2 and r["direction"] == "bidir" and r[key] and r[key][q] is not None)
            ax.plot([str(s) for s, _ in pts], [v for _, v in pts], st + ls, label=f"{lab} {q}, loaded")
    for key, lab, st in (("latency_unloaded_host_to_wire_ns", "host->wire", "o"),
                         ("latency_unloaded_wire_to_completion_ns", "wire->cpl", "s")):
        pts = sorted({r["frame_size"]: r[key]["p50"] / 1000 for r in rows if r.get(key)}.items())
        if pts:
            ax.plot([str(s) for s, _ in pts], [v for _, v in pts], st + "--", color="grey", alpha=0.8,
                    label=f"{lab} p50, unloaded")
    ax.set_title("latency, 2 ports bidir (us)")
    ax.set_xlabel("frame size (bytes)")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3, which="both")
    fig.suptitle("offnic bench base: 2 x 25G, PCIe Gen3 x8 (simulated), host read latency 1 us")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------- demo

STREAM_NAMES = {"tx": "TX host->wire", "rx": "RX wire->host"}


FW_STATES = {0: "RESET", 1: "BOOTING", 2: "RUNNING", 3: "NO_TOE (running; no TCP engine in the NIC: load control idle)"}


def firmware_lines(fw: dict) -> list[str]:
    """The control processor as the host read it through BAR0 after the run (issue 18)."""
    v = fw["version"]
    trap = ", TRAPPED" if fw.get("status", 0) & 2 else ""
    L = [f"  control processor (PicoRV32 in the NIC): firmware {v >> 16}.{v >> 8 & 0xff}.{v & 0xff}, "
         f"state {FW_STATES.get(fw['state'], fw['state'])}{trap}, bus errors {fw.get('bus_errors', 0)}; its log ring:"]
    L += [f"    {line}" for line in fw["log"]]
    return L


def demo_report(run: dict, wall_s: float | None = None, png: str | None = None) -> tuple[str, dict]:
    c = next(x for x in run["cases"] if x["direction"] not in ("probe", "web", "frag"))
    a = analyze_case(c)
    st = a["streams"]
    mix = ", ".join(f"{s} B x{w:g}" for s, w in c["sizes"])

    def us(v):
        return "-" if v is None else f"{v / 1000:.2f}"
    L = []
    L.append(f"offnic demo: the whole NIC, 2 x 25G ports, TX and RX at once on both, frame mix {mix} "
             f"(avg {_avg_size(c):.0f} B)")
    harness = {"fast": "the fast harness (C++ partners)", "nic": "NicTB (cocotbext-pcie/-eth)",
               "fast-gpi-clocks": "the fast harness with cocotb's clocks"}.get(run.get("harness", "nic"))
    L.append(f"  simulated {run['sim_ns'] / 1000:.1f} us in {wall_s if wall_s is not None else run['wall_s']:.0f} s of "
             f"simulation on {harness}; "
             f"measured window {(c['w0_ns'] - c['t_begin_ns']) / 1000:.0f}..{(c['w1_ns'] - c['t_begin_ns']) / 1000:.0f} us "
             f"of traffic ({c['core_cycles']} core cycles in the case); seed {run['seed']}; host read latency "
             f"{run['host_latency_ns']:.0f} ns; MPS {run['mps']}, MRRS {run['mrrs']}")
    L.append(f"  driver: TX rings kept full (send_batch: {c['batch']} frames per doorbell, up to {c['in_flight']} in flight "
             f"per port), RX 512 buffers per port; moderation {c['mod_count']} completions / {c['mod_time_us']} us")
    L.append("")
    L.append(f"  {'stream':<22} {'Gb/s':>6} {'line%':>6} {'Mpps':>6} {'PCIe B/B':>8}   "
             f"{'latency us: p50':>15} {'p90':>6} {'p99':>6} {'max':>6}   drops")
    for s in sorted(st, key=lambda x: (x[2:], x[:2])):
        r = st[s]
        lat = r["latency_ns"]
        drops = f"{r['dropped_in_window']} ({r['drop_pct']:.1f}%)" if s.startswith("rx") else f"{r['lost']}"
        L.append(f"  port {s[2:]} {STREAM_NAMES[s[:2]]:<15} {r['gbps']:>6.2f} {r['line_rate_pct']:>6.1f} {r['mpps']:>6.2f} "
                 f"{_fmt(r['pcie_bytes_per_payload_byte'], 3):>8}   {us(lat['p50']):>15} {us(lat['p90']):>6} "
                 f"{us(lat['p99']):>6} {us(lat['max']):>6}   {drops}")
    L.append(f"  {'all 4 streams':<22} {sum(r['gbps'] for r in st.values()):>6.2f} "
             f"{sum(r['line_rate_pct'] for r in st.values()) / len(st):>6.1f} "
             f"{sum(r['mpps'] for r in st.values()):>6.2f} {_fmt(a['pcie']['bytes_per_payload_byte'], 3):>8}")
    L.append("")
    L.append("  host->wire: doorbell -> last byte on the XGMII, under load (includes waiting behind the frames "
             "queued before it);")
    L.append("  wire->completion: last byte into the port -> the driver has the RX completion (includes moderation "
             "and any backlog in the NIC's RX buffer)")
    probe = next((x for x in run["cases"] if x["direction"] == "probe"), None)
    if probe:
        parts = []
        for size, d in probe["probe"].items():
            h, w = lat_summary(d["host_to_wire_ns"]), lat_summary(d["wire_to_completion_ns"])
            parts.append(f"{size} B host->wire {us(h['p50'])} us, wire->completion {us(w['p50'])} us")
        L.append("  unloaded (one frame at a time, no moderation, p50): " + "; ".join(parts))
    back = [(s, r["backlog_bytes_at_window_end"]) for s, r in st.items() if r.get("backlog_bytes_at_window_end")]
    if any(b > 16384 for _, b in back):
        L.append("  RX Gb/s counts frames as the NIC completes them; at the window's end the RX buffer still held "
                 + ", ".join(f"port {s[2:]} {b / 1024:.0f} KiB" for s, b in back) + " (accepted, delivered later)")
    d = a["drops"]
    L.append("  drops and errors (non-zero NIC counters): " +
             (", ".join(f"{k} {v}" for k, v in d.items()) if d else "none"))
    L.append(f"  interrupts {a['interrupts']} ({_fmt(a['interrupts_per_packet'], 3)} per packet), "
             f"events {a['events']} ({_fmt(a['events_per_packet'], 3)} per packet), TX doorbells {a['doorbells']}, "
             f"packets {a['packets']}")
    p = a["pcie"]
    usable = pcie_theory(run["mps"], run["mrrs"])["usable_gbps"]
    L.append(f"  PCIe Gen3 x8 in the window: host->NIC link {p['link_util_pct_down']:.0f}% busy "
             f"(Ethernet payload {p['payload_gbps_host_to_nic']:.1f} Gb/s), NIC->host {p['link_util_pct_up']:.0f}% "
             f"(payload {p['payload_gbps_nic_to_host']:.1f} Gb/s); usable after TLP overhead: {usable} Gb/s per direction")
    k = p["tlps"]

    def n(key):
        return k.get(key, [0, 0])[0]
    L.append(f"  TLPs in the case: NIC->host {n('up_mrd')} read requests, {n('up_mwr')} writes (data, completions, "
             f"events, MSI-X); host->NIC {n('down_cpl')} read completions, {n('down_mwr')} register writes; "
             + (f"{n('up_dllp') + n('down_dllp')} DLLPs ({100 * p['dllp_share']:.1f}% of link bytes)"
                if not run.get("harness", "nic").startswith("fast") else "no DLLPs (the fast harness's link has none)"))
    ib = p["interface_busy_pct"]
    L.append(f"  hard-IP interface (256 bit, 250 MHz) beats used in the window: RQ (NIC requests) {ib.get('rq', 0):.0f}%, "
             f"RC (read data) {ib.get('rc', 0):.0f}%, CQ (register writes) {ib.get('cq', 0):.0f}%")
    hr = a["host_reads_in_flight"]
    fetch = ", ".join(f"{s} {r['descs_per_fetch']}" for s, r in sorted(st.items()) if r.get("descs_per_fetch"))
    L.append(f"  DMA reads waiting at the host: mean {hr['mean']:.1f}, max {hr['max']} (the NIC has {DMA_READ_TAGS} tags); "
             f"descriptors per fetch: {fetch} (on-chip cache: {run.get('desc_cache', '?')} per queue)")
    near = [(v, f"{name} {v:.0f}%") for v, name in (
        (ib.get("rq", 0), "RQ interface (every DMA write and read request)"), (ib.get("rc", 0), "RC interface (read data)"),
        (p["link_util_pct_up"], "PCIe link NIC->host"), (p["link_util_pct_down"], "PCIe link host->NIC"))
        if v >= 85]
    if hr["max"] >= DMA_READ_TAGS and hr["mean"] >= DMA_READ_TAGS // 2:
        near.append((100 * hr["mean"] / DMA_READ_TAGS,
                     f"DMA read tags (all {DMA_READ_TAGS} in use at times, {hr['mean']:.0f} on average)"))
    L.append("  near their limit in the window: " + (", ".join(x for _, x in sorted(near, reverse=True)) if near else "nothing"))
    web = next((x for x in run["cases"] if x["direction"] == "web"), None)
    if web:
        L += [""] + web_lines(web)
    frag = next((x for x in run["cases"] if x["direction"] == "frag"), None)
    if frag:
        L += [""] + frag_lines(frag)
    fw = run.get("firmware")
    if fw:
        L += [""] + firmware_lines(fw)
    if run.get("toe"):
        L += [""] + toe_lines(run["toe"])
    if run.get("driver_errors"):
        L.append(f"  DRIVER ERRORS: {run['driver_errors'][:3]}")
    if png:
        L.append(f"  plot: {png}")
    return "\n".join(L), a


WEB_HDR_BYTES = 54  # webserve.HDR_BYTES: the header every packet takes from host memory


def web_lines(c: dict) -> list[str]:
    """The demo's payload-cache case (bench/cases.web_case) as report lines."""
    w = c["web"]
    nc, ca = w["nocache"], w["cache"]
    L = [f"payload cache (docs/cache.md): a web server sends {nc['requests']} responses of a synthetic trace with {c['label']}'s published parameters "
         f"({nc['content_bytes'] / 1000:.0f} KB in {nc['packets']} packets: a {WEB_HDR_BYTES} B header from host "
         f"memory + up to 1448 B of file) on port 0,",
         f"  after {c['warm_requests']:,} requests' warm-up of a "
         f"{c['cache_bytes'] >> 20} MiB directory (blocks in the DRAM tier); the driver core's directory plans every packet",
         f"  {'':<20} {'Gb/s':>6} {'PCIe bytes':>11} {'host->NIC':>10} {'per file B':>10} "
         f"{'file bytes over PCIe':>21} {'inserts':>14} {'hits DRAM':>9}"]

    def crossed(r):
        k = r["cache"]
        return k["insert_bytes"] + k["host_bytes"] - WEB_HDR_BYTES * r["packets"]
    for name, r in (("without the cache", nc), ("with the cache", ca)):
        k, p = r["cache"], r["pcie"]
        tot = p["up"] + p["down"]
        x = crossed(r)
        ins = f"{k['inserts']} ({k['insert_bytes'] / 1000:.0f} KB)" if k["inserts"] else "-"
        L.append(f"  {name:<20} {r['served_gbps'] or 0:>6.2f} {tot:>11,} {p['down']:>10,} "
                 f"{tot / max(1, r['content_bytes']):>10.3f} {x:>12,} ({100 * x / max(1, r['content_bytes']):5.1f}%) "
                 f"{ins:>14} {k['hits_dram'] + k['hits_onchip']:>9}")
    red = 100 * (1 - (ca["pcie"]["up"] + ca["pcie"]["down"]) / max(1, nc["pcie"]["up"] + nc["pcie"]["down"]))
    cred = 100 * (1 - crossed(ca) / max(1, crossed(nc)))
    errs = {k: ca["cache"][k] + nc["cache"][k] for k in ("range_errors", "read_errors", "write_errors")}
    bad = sum(r["failed"] + r["missing"] for r in (nc, ca)) + ca["mismatches"]
    L.append(f"  with the cache: PCIe traffic {-red:+.1f}%, file bytes over PCIe {-cred:+.1f}% (the directory model "
             f"predicted {-c['model_content_reduction_pct']:+.1f}%); frames "
             + ("byte-exact on the wire" if not bad else f"WRONG: {bad} failed, missing or different")
             + "; cache errors: " + (", ".join(f"{k} {v}" for k, v in errs.items() if v) or "none"))
    return L


def frag_lines(c: dict) -> list[str]:
    """The demo's fragmentation case (bench/cases.frag_case) as report lines."""
    f = c["frag"]
    k = f["counters"]
    ok = f["identical"] == f["frames_expected"] == f["frames_on_wire"] and not f["failed"]
    return [f"fragmentation offload (docs/frag.md): {c['datagrams']} UDP datagrams of {c['payload'] + 28:,} B, one frame "
            f"each with the UDP checksum left to the NIC, port 0's MTU set to {c['mtu']}:",
            f"  cut into {f['fragments_per_datagram']} fragments each ({f['frames_on_wire']} frames; counters: "
            f"{k['frag_datagrams']} datagrams, {k['frag_fragments']} fragments, {k['frag_refused']} refused), "
            f"{f['goodput_gbps'] or 0:.2f} Gb/s of UDP payload, {f['line_rate_pct'] or 0:.1f}% of 25G line rate on the wire;",
            "  every fragment " + ("identical to Linux's (ip_do_fragment), the checksum in the first, sent last"
                                   if ok else f"WRONG: {f['identical']} of {f['frames_expected']} identical, "
                                              f"{f['failed']} failed")] + reasm_lines(c.get("reasm"))


def reasm_lines(r: dict | None) -> list[str]:
    """The demo's reassembly half (workload.Workload.reassemble) as report lines."""
    if not r:
        return []
    ok = r["exact"] == r["csum_ok"] == r["distinct"] == r["completions"] == r["datagrams"]
    k = r["counters"]
    return [f"  the same {r['fragments_in']} fragments into port 1, shuffled, two datagrams interleaved: the NIC "
            f"reassembled them with {r['completions']} completions (the host stack would take {r['fragments_in']}); "
            f"reasm counters: {k['reassembled']} reassembled, {k['bypassed']} bypassed, {k['overlap']} overlaps;",
            "  every datagram " + ("byte-exact, its UDP checksum verified from the completion's payload sum" if ok else
                                   f"WRONG: {r['exact']} of {r['datagrams']} exact, {r['csum_ok']} checksums good, "
                                   f"{r['completions']} completions")]


def demo_plot(run: dict, path: Path, bin_us: float = 10.0) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    c = next(x for x in run["cases"] if x["direction"] not in ("probe", "web", "frag"))
    t0 = c["t_begin_ns"]
    end = max(c["t_stop_ns"], c["w1_ns"])
    nb = int(math.ceil((end - t0) / (bin_us * 1000)))
    toe = run.get("toe")
    fig, axes = plt.subplots(1, 3 if toe else 2, figsize=(21 if toe else 14, 5.5))
    ax1, ax2 = axes[:2]
    if toe:
        toe_panel(axes[2], toe)
    top = LINE_GBPS * 1.1
    for kind in ("tx", "rx"):
        for p, d in c.get(kind, {}).items():
            if kind == "tx":
                frames = [(s, te) for _, s, te in d["wire"]]
            else:  # as the NIC completes them (what the report counts)
                times = [t for t, k in d["cq_writes"] for _ in range(k)]
                frames = list(zip([ln + 4 for _, ln, _, st in d["done"]], times))
            xs, ys = [], []
            for i in range(nb):
                a, b = t0 + i * bin_us * 1000, t0 + (i + 1) * bin_us * 1000
                xs.append((a + b) / 2 / 1000 - t0 / 1000)
                ys.append(rate(frames, a, b)["gbps"])
            top = max(top, max(ys, default=0) * 1.05)
            ax1.step(xs, ys, where="mid", label=f"port {p} {STREAM_NAMES[kind]}"
                     + (" (at the wire)" if kind == "tx" else " (NIC completions)"))
    ax1.axhline(LINE_GBPS, color="grey", lw=0.8, ls="--")
    ax1.axvspan((c["w0_ns"] - t0) / 1000, (c["w1_ns"] - t0) / 1000, color="green", alpha=0.06, label="window")
    ax1.set_xlabel("simulated time since traffic start (us)")
    ax1.set_ylabel(f"Gb/s (frame bits with FCS, {bin_us:g} us bins)")
    ax1.set_ylim(0, top)
    ax1.set_title("throughput over time (RX above 25: the NIC catching up on a backlog)")
    ax1.legend(fontsize=8, loc="lower right")
    ax1.grid(alpha=0.3)
    for kind in ("tx", "rx"):
        for p in c.get(kind, {}):
            v = sorted(x / 1000 for x in latencies(c, f"{kind}{p}"))
            if v:
                ax2.plot(v, [(i + 1) / len(v) for i in range(len(v))],
                         label=f"port {p} {'host->wire' if kind == 'tx' else 'wire->completion'}")
    ax2.set_xscale("log")
    ax2.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax2.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax2.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax2.set_xlabel("latency (us)")
    ax2.set_ylabel("fraction of frames")
    ax2.set_title("latency CDF (window)")
    ax2.legend(fontsize=8)
    ax2.grid(alpha=0.3, which="both")
    fig.suptitle("offnic demo: 2 x 25G, IMIX + jumbo, both directions")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------- the TCP offload part

TOE_MODE = {"host_first": "host first", "fcfs": "FCFS"}
TOE_PHASES = ("before", "handoff", "during", "after")
TOE_GOAL_PCT = 10   # issue 17: host first at saturation, a host packet's median delay at most +10%


def toe_goal(m: dict) -> float | None:
    """The rise of the median host RX delay from before the handoff to during it, in %."""
    b, d = (m["phases"][p]["host_rx"]["median_ns"] for p in ("before", "during"))
    return None if not b or d is None else round(100 * (d / b - 1), 1)


def toe_lines(t: dict) -> list[str]:
    """The demo report's TCP offload part (toe/toe_demo.py's results)."""
    s = t["settings"]

    def us(v):
        return "-" if v is None else f"{v / 1000:.2f}"
    L = [f"TCP offload ({t['config']}: the NIC with the TCP engine; a second simulation, {t['sim_us']:.0f} us simulated "
         f"in {t['wall_s']:.0f} s, seed {t['seed']})"]
    m0 = t["modes"][0] if t["modes"] else None
    if m0:
        h = m0["handoff"]
        L.append(f"  {s['connections']} connections handed to the NIC mid-transfer while host frames (512 B, one per port "
                 f"and direction per us) cross it:")
        L.append(f"  reserve (the entry live; the peers' segments held: {h['held_segments']} in {s['freeze_us']:g} us, {h['decided_while_held']} decided), complete "
                 f"with the state; carried for {s['during_us']:g} us, the peers sending {s['payload']}-byte segments "
                 f"on both ports ({m0['offered_gbps']:g} Gb/s")
        L.append(f"  of payload beside the host frames: the engine saturated, Table 1's (c)), {s['queued']} B per "
                 f"connection waiting in its send ring in host memory; then given back (restore with")
        L.append("  the state). Commands as TX descriptors on queue 0 (toe_cmdq); dma.arbitration selects the mode.")
    for m in t["modes"]:
        h, ph = m["handoff"], m["phases"]
        cu = h["command_us"]
        per = m["per_connection"]
        L.append(f"  {TOE_MODE[m['mode']]}: the NIC received {m['bytes_received']} B "
                 f"({', '.join(str(c['received_bytes']) for c in per)} per connection; each receive ring byte for byte "
                 f"up to the restored rcv_nxt)")
        L.append(f"    and sent {m['bytes_sent']} B acknowledged ({', '.join(str(c['sent_acked_bytes']) for c in per)}; "
                 f"every byte on the wire against the send ring); restored state agrees with both ends: "
                 f"{'yes' if m['all_checked'] else 'NO'}")
        L.append(f"    commands, mean us each: reserve {cu['reserve']}, complete {cu['complete']}, restore {cu['restore']}")
        L.append(f"    during: Qlen max {ph['during']['qlen_max']} (mean {ph['during']['qlen_mean']}), NIC packets dropped "
                 f"{ph['during']['nic_packet_drops']}, offload goodput {ph['during']['offload_goodput_gbps']:.2f} Gb/s, "
                 f"peers' go-back-N restarts {sum(c['peer_go_back'] for c in per)}")
        for way, what in (("host_rx", "host RX wire->completion"), ("host_tx", "host TX doorbell->wire")):
            parts = []
            for p in TOE_PHASES:
                r = ph[p][way]
                lost = f", {r['lost_in_window']} of {r['in_window']} lost" if r.get("lost_in_window") else ""
                parts.append(f"{p} {us(r['median_ns'])} / {us(r['p99_ns'])} ({r['measured']}{lost})")
            L.append(f"    {what:<25} median / p99 us (frames measured): " + "; ".join(parts))
        if m["host_rx_lost"] or m["port_fifo_drops"]:
            L.append(f"    host frames lost in the whole run: {m['host_rx_lost']} of {m['host_rx_frames']} into the ports "
                     f"(port FIFO drops {m['port_fifo_drops']}: the shared queue full, the lookup waits, the port FIFOs "
                     f"overflow)")
    g = {m["mode"]: toe_goal(m) for m in t["modes"]}
    if g.get("host_first") is not None:
        verdict = "met" if g["host_first"] <= TOE_GOAL_PCT else "NOT met"
        L.append(f"  median host RX delay during vs before: host first {g['host_first']:+.1f}% (issue 17's goal: at most "
                 f"+{TOE_GOAL_PCT}%: {verdict})" + (f", FCFS {g['fcfs']:+.1f}%" if g.get("fcfs") is not None else ""))
    L.append("  left out: the peers are a packet generator (go-back-N after 10 us without progress), not Linux; the "
             "notifications are popped")
    L.append("  over MMIO (the interim window; the restored state comes from each restore's answer block in host "
             "memory); host memory ideal behind 1 us read latency")
    for f in t.get("failures") or []:
        L.append(f"  FAILED: {f}")
    return L


def toe_panel(ax, t: dict) -> None:
    """Host RX delay (wire to completion), median and p99, per phase and mode (log scale)."""
    labels, med, p99 = [], [], []
    for m in t["modes"]:
        for p in TOE_PHASES:
            r = m["phases"][p]["host_rx"]
            labels.append(f"{TOE_MODE[m['mode']]}\n{p}\n({r['measured']})")
            med.append((r["median_ns"] or 0) / 1000)
            p99.append((r["p99_ns"] or 0) / 1000)
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], med, width=0.4, label="median")
    ax.bar([i + 0.2 for i in x], p99, width=0.4, label="p99")
    ax.set_xticks(list(x), labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("host packet RX delay, us (wire -> completion); (frames measured)")
    n = t["modes"][0]["connections"] if t["modes"] else 0
    ax.set_title(f"TCP offload: {n} connections handed off (during) and back;\nhost packets' delay through the NIC",
                 fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y", which="both")
