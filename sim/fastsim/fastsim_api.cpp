// libfastsim's entry points: the per-edge calls dpi_bridge.cpp forwards from the model
// (fastsim_*_tick) and the C API Python calls through ctypes (fastlib.py). One NIC per
// process, so the partners are one global instance, made by fastsim_init.
#include <cstring>
#include <memory>

#include "fastsim_abi.h"
#include "pcie_host.h"
#ifndef FASTSIM_NO_PORTS
#include "xgmii_port.h"
#endif
#ifndef FASTSIM_NO_DRAM
#include "axi_dram.h"
#endif

namespace {

struct Partners {
  std::unique_ptr<fastsim::PcieHost> host;
#ifndef FASTSIM_NO_PORTS
  fastsim::XgmiiPort ports[2];
#endif
#ifndef FASTSIM_NO_DRAM
  std::unique_ptr<fastsim::AxiDram> dram;
#endif
};

Partners* g;

}  // namespace

extern "C" {

// ------------------------------------------------------------------ per edge (from the model)

void fastsim_pcie_tick(const fs_pcie_in* in, fs_pcie_out* out) {
  if (g) g->host->tick(*in, out);
}

void fastsim_dram_tick(const fs_axi_in* in, fs_axi_out* out) {
#ifndef FASTSIM_NO_DRAM
  if (!g || !g->dram) return;
  fastsim::AxiMaster m;
  m.awid = in->awid;
  m.awaddr = in->awaddr;
  m.awlen = in->awlen;
  m.awsize = in->awsize;
  m.awburst = in->awburst;
  m.awvalid = in->awvalid;
  std::memcpy(m.wdata, in->wdata, sizeof m.wdata);
  m.wstrb = in->wstrb;
  m.wlast = in->wlast;
  m.wvalid = in->wvalid;
  m.bready = in->bready;
  m.arid = in->arid;
  m.araddr = in->araddr;
  m.arlen = in->arlen;
  m.arsize = in->arsize;
  m.arburst = in->arburst;
  m.arvalid = in->arvalid;
  m.rready = in->rready;
  fastsim::AxiSlave s;
  g->dram->tick(m, &s);
  out->awready = s.awready;
  out->wready = s.wready;
  out->bid = static_cast<uint8_t>(s.bid);
  out->bresp = static_cast<uint8_t>(s.bresp);
  out->bvalid = s.bvalid;
  out->arready = s.arready;
  out->rid = static_cast<uint8_t>(s.rid);
  std::memcpy(out->rdata, s.rdata, sizeof out->rdata);
  out->rresp = static_cast<uint8_t>(s.rresp);
  out->rlast = s.rlast;
  out->rvalid = s.rvalid;
#else
  (void)in;
  (void)out;  // no DRAM: nothing answers on m_axi
#endif
}

void fastsim_port_tick(int k, uint64_t txd, uint8_t txc, uint64_t* rxd, uint8_t* rxc) {
#ifndef FASTSIM_NO_PORTS
  if (!g || k < 0 || k > 1) return;
  fastsim::XgmiiPort& p = g->ports[k];
  size_t before = p.rx_pending(), sent = p.tx_done_pending();
  p.tick(txd, txc, rxd, rxc);
  if (p.rx_pending() > before) g->host->notify(fastsim::HostEvent{fastsim::HostEvent::kPort, static_cast<uint32_t>(k), 0, {}});
  if (p.tx_done_pending() > sent)
    g->host->notify(fastsim::HostEvent{fastsim::HostEvent::kPortSent, static_cast<uint32_t>(k), 0, {}});
#else
  (void)k;
  (void)txd;
  (void)txc;
  (void)rxd;
  (void)rxc;  // no port model: the bridge's idle words stay
#endif
}

// ------------------------------------------------------------------ setup

// Host memory of `host_bytes` at bus address 0; DRAM of `dram_bytes` behind m_axi (0: none).
int fastsim_init(uint64_t host_bytes, double core_period_ns, uint64_t dram_bytes, int dram_ddr4) {
  delete g;
  g = new Partners;
  g->host.reset(new fastsim::PcieHost(host_bytes, core_period_ns));
#ifndef FASTSIM_NO_DRAM
  if (dram_bytes) g->dram.reset(new fastsim::AxiDram(dram_bytes, dram_ddr4 != 0, core_period_ns));
#else
  (void)dram_bytes;
  (void)dram_ddr4;
#endif
  return 0;
}

int fastsim_have(const char* what) {
#ifndef FASTSIM_NO_PORTS
  if (!std::strcmp(what, "ports")) return 1;
#endif
#ifndef FASTSIM_NO_DRAM
  if (!std::strcmp(what, "dram")) return g && g->dram ? 1 : 0;
#endif
  (void)what;
  return 0;
}

// ------------------------------------------------------------------ PCIe host

uint8_t* fastsim_host_mem() { return g->host->mem(); }
uint64_t fastsim_host_mem_size() { return g->host->mem_size(); }
uint64_t fastsim_bar0_addr() { return fastsim::PcieHost::kBar0Addr; }
uint64_t fastsim_msi_addr() { return fastsim::PcieHost::kMsiAddr; }
void fastsim_host_reset() { g->host->reset(); }
void fastsim_set_read_latency(double ns, double jitter_ns) { g->host->set_read_latency(ns, jitter_ns); }
void fastsim_set_link(int lanes) { g->host->set_link(lanes); }
void fastsim_set_seed(uint64_t seed) { g->host->set_seed(seed); }
void fastsim_set_sizes(int mps_code, int mrrs_code) { g->host->set_sizes(mps_code, mrrs_code); }
void fastsim_set_host_mps(int code) { g->host->set_host_mps(code); }
void fastsim_add_read_fault(uint64_t lo, uint64_t hi, int fault) { g->host->add_read_fault(lo, hi, fault != 0); }
void fastsim_clear_read_faults() { g->host->clear_read_faults(); }
void fastsim_mmio_write(uint64_t offset, const uint8_t* data, uint64_t n) { g->host->mmio_write(offset, data, n); }
void fastsim_mmio_read(uint64_t offset, uint64_t n, uint32_t id) { g->host->mmio_read(offset, n, id); }

// The oldest news for Python: returns its kind (0: none), fills id/status and up to `cap`
// bytes of data (*len: the data's full length).
int fastsim_next_event(uint32_t* id, uint32_t* status, uint8_t* data, uint64_t cap, uint64_t* len) {
  if (!g) return 0;
  fastsim::HostEvent ev;
  if (!g->host->next_event(&ev)) return 0;
  *id = ev.id;
  *status = ev.status;
  *len = ev.data.size();
  std::memcpy(data, ev.data.data(), ev.data.size() < cap ? ev.data.size() : cap);
  return static_cast<int>(ev.kind);
}

// reads, in_flight, max_in_flight, rq_tlps, rc_tlps, cq_tlps, cc_tlps, rq_beats, rc_beats, msi, bad_requests, cycle,
// faulted_reads
void fastsim_host_stats(uint64_t* out) {
  const fastsim::PcieHostStats& s = g->host->stats();
  const uint64_t v[] = {s.reads, s.in_flight, s.max_in_flight, s.rq_tlps, s.rc_tlps, s.cq_tlps,
                        s.cc_tlps, s.rq_beats, s.rc_beats, s.msi, s.bad_requests, g->host->cycle(),
                        s.faulted_reads};
  std::memcpy(out, v, sizeof v);
}

// ------------------------------------------------------------------ the workloads' PCIe tap

// Label 0 is "shared"; labels 1.. are the workload's names (fastlib keeps them).
void fastsim_tap_range(uint64_t lo, uint64_t size, uint32_t label) { g->host->tap().add_range(lo, size, label); }
void fastsim_tap_bucket(int bucket) { g->host->tap().bucket = bucket; }  // -1: not counted
void fastsim_tap_clear() { g->host->tap().buckets.clear(); }             // every bucket's counts
void fastsim_tap_watch(uint32_t label, int on) { g->host->tap().watch.at(label) = on != 0; }
int fastsim_tap_max_labels() { return fastsim::PcieTap::kMaxLabels; }
// A bucket's counts: n[label][way * 4 + kind][TLPs, bytes] (kMaxLabels * 16 values) and
// itf[rq, cc, cq, rc][beats, TLPs] (8 values); returns 0 if the bucket has counted nothing.
int fastsim_tap_counts(int bucket, uint64_t* n, uint64_t* itf) {
  fastsim::PcieTap& t = g->host->tap();
  if (bucket < 0 || static_cast<size_t>(bucket) >= t.buckets.size() || t.buckets[bucket].n.empty()) return 0;
  const fastsim::PcieTap::Bucket& b = t.buckets[bucket];
  std::memcpy(n, b.n.data(), b.n.size() * sizeof(uint64_t));
  std::memcpy(itf, b.itf, sizeof b.itf);
  return 1;
}
// The NIC's writes into watched labels since the last call: up to `cap` of them (label,
// when it started on the link in ps of the host's clock, cycle x period; 16-byte records);
// returns how many.
uint64_t fastsim_tap_watched(uint32_t* label, uint64_t* t_ps, uint32_t* records, uint64_t cap) {
  std::vector<fastsim::PcieTap::Watched>& w = g->host->tap().watched;
  uint64_t n = w.size() < cap ? w.size() : cap;
  for (uint64_t i = 0; i < n; ++i) {
    label[i] = w[i].label;
    t_ps[i] = w[i].t_ps;
    records[i] = w[i].records;
  }
  w.erase(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(n));
  return n;
}

// ------------------------------------------------------------------ ports

#ifndef FASTSIM_NO_PORTS
void fastsim_port_reset(int k) { g->ports[k].reset(); }
void fastsim_port_send(int k, const uint8_t* d, uint64_t n, int pad, int bad_fcs) {
  g->ports[k].send(d, n, pad != 0, bad_fcs != 0);
}
// The oldest frame port k received from the NIC: its length (-1: none); up to `cap` bytes
// copied; fcs_ok, the cycles of its start and end.
static int g_recv_lanes[2][2];  // the START and end lanes of the frame each port's last recv returned

int64_t fastsim_port_recv(int k, uint8_t* d, uint64_t cap, int* fcs_ok, uint64_t* start, uint64_t* end) {
  fastsim::EthFrame f;
  if (!g->ports[k].recv(&f)) return -1;
  g_recv_lanes[k][0] = f.start_lane;
  g_recv_lanes[k][1] = f.end_lane;
  std::memcpy(d, f.data.data(), f.data.size() < cap ? f.data.size() : cap);
  *fcs_ok = f.fcs_ok && !f.ctrl_error;
  *start = f.start_cycle;
  *end = f.end_cycle;
  return static_cast<int64_t>(f.data.size());
}
// The lanes of the START and of the ending character of the frame fastsim_port_recv last
// returned for port k (XgmiiSink's sim_time_start/end add lane x period / 8 to the edge).
void fastsim_port_recv_lanes(int k, int* start_lane, int* end_lane) {
  *start_lane = g_recv_lanes[k][0];
  *end_lane = g_recv_lanes[k][1];
}
uint64_t fastsim_port_tx_pending(int k) { return g->ports[k].tx_pending(); }
uint64_t fastsim_port_tx_queued(int k) { return g->ports[k].tx_queued(); }
// The oldest frame port k finished sending into the NIC (XgmiiSource's tx_complete): 1 and
// the cycle and lane of its TERMINATE, or 0 if none is left to report.
int fastsim_port_sent(int k, uint64_t* cycle, int* lane) {
  fastsim::TxDone d;
  if (!g->ports[k].tx_done_pop(&d)) return 0;
  *cycle = d.cycle;
  *lane = d.lane;
  return 1;
}
uint64_t fastsim_port_rx_pending(int k) { return g->ports[k].rx_pending(); }
uint64_t fastsim_port_cycle(int k) { return g->ports[k].cycle(); }
#endif

// ------------------------------------------------------------------ DRAM

#ifndef FASTSIM_NO_DRAM
uint8_t* fastsim_dram_mem() { return g->dram ? g->dram->mem() : nullptr; }
uint64_t fastsim_dram_size() { return g->dram ? g->dram->size() : 0; }
void fastsim_dram_reset() {
  if (g->dram) g->dram->reset();
}
#endif

}  // extern "C"
