// extern "C" entry points over XgmiiPort and AxiDram for the tests' ctypes bindings (the
// harness has its own API, fastsim_api.cpp); built into a test-only shared library.
#include <cstring>

#include "axi_dram.h"
#include "xgmii_port.h"

using fastsim::AxiDram;
using fastsim::AxiMaster;
using fastsim::AxiSlave;
using fastsim::EthFrame;
using fastsim::XgmiiPort;

extern "C" {

void* xg_new() { return new XgmiiPort(); }
void xg_free(void* p) { delete static_cast<XgmiiPort*>(p); }
void xg_reset(void* p) { static_cast<XgmiiPort*>(p)->reset(); }
void xg_send(void* p, const uint8_t* d, size_t n, int pad, int bad_fcs) {
  static_cast<XgmiiPort*>(p)->send(d, n, pad != 0, bad_fcs != 0);
}
void xg_tick(void* p, uint64_t txd, uint8_t txc, uint64_t* rxd, uint8_t* rxc) {
  static_cast<XgmiiPort*>(p)->tick(txd, txc, rxd, rxc);
}
// Copies the oldest received frame (up to cap bytes) and its attributes; 0 when none.
// meta: [len, fcs_ok, start_cycle, end_cycle, start_lane, end_lane, ctrl_error]
int xg_recv(void* p, uint8_t* buf, size_t cap, uint64_t* meta) {
  EthFrame f;
  if (!static_cast<XgmiiPort*>(p)->recv(&f)) return 0;
  size_t n = f.data.size() < cap ? f.data.size() : cap;
  if (n) std::memcpy(buf, f.data.data(), n);
  meta[0] = f.data.size();
  meta[1] = f.fcs_ok;
  meta[2] = f.start_cycle;
  meta[3] = f.end_cycle;
  meta[4] = f.start_lane;
  meta[5] = f.end_lane;
  meta[6] = f.ctrl_error;
  return 1;
}
size_t xg_tx_pending(void* p) { return static_cast<XgmiiPort*>(p)->tx_pending(); }
// [tx_frames, tx_bytes, tx_bad_fcs, rx_frames, rx_bytes, rx_bad_fcs, rx_error_chars, rx_runts]
void xg_counters(void* p, uint64_t* out) {
  const auto& c = static_cast<XgmiiPort*>(p)->counters();
  uint64_t v[8] = {c.tx_frames, c.tx_bytes, c.tx_bad_fcs, c.rx_frames,
                   c.rx_bytes, c.rx_bad_fcs, c.rx_error_chars, c.rx_runts};
  std::memcpy(out, v, sizeof v);
}

void* ax_new(uint64_t bytes, int ddr4, double period_ns) { return new AxiDram(bytes, ddr4 != 0, period_ns); }
void ax_free(void* p) { delete static_cast<AxiDram*>(p); }
void ax_set_now_ns(void* p, double t) { static_cast<AxiDram*>(p)->set_now_ns(t); }
void ax_tick(void* p, const AxiMaster* m, AxiSlave* s) { static_cast<AxiDram*>(p)->tick(*m, s); }
uint8_t* ax_mem(void* p) { return static_cast<AxiDram*>(p)->mem(); }
// [reads, writes, read_beats, write_beats, slverr]
void ax_counters(void* p, uint64_t* out) {
  const auto& c = static_cast<AxiDram*>(p)->counters();
  uint64_t v[5] = {c.reads, c.writes, c.read_beats, c.write_beats, c.slverr};
  std::memcpy(out, v, sizeof v);
}

}  // extern "C"
