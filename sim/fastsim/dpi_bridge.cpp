// DPI-C imports of nic_fast_top.sv, forwarded to libfastsim.so. The library is loaded by
// Python (fastlib.py, RTLD_GLOBAL) before the clocks start; its entry points are looked up
// here by name so the model, built once per RTL, does not depend on the C++ partners'
// sources. Until the library is loaded every partner is idle (no valid, XGMII idle).
#include <dlfcn.h>
#include <string.h>

#include "Vtop__Dpi.h"
#include "fastsim_abi.h"

namespace {

template <typename F>
F lookup(F* cache, const char* name) {
  if (!*cache) *cache = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return *cache;
}

fs_pcie_tick_fn pcie_tick;
fs_dram_tick_fn dram_tick;
fs_port_tick_fn port_tick;

void copy_words(svBitVecVal* to, const uint32_t* from, int n) { memcpy(to, from, n * sizeof(uint32_t)); }

}  // namespace

void fastsim_dpi_pcie(svBit cq_tready, svBit cc_tvalid, const svBitVecVal* cc_tdata, const svBitVecVal* cc_tkeep,
                      svBit cc_tlast, svBit rq_tvalid, const svBitVecVal* rq_tdata, const svBitVecVal* rq_tkeep,
                      svBit rq_tlast, const svBitVecVal* rq_tuser, svBit rc_tready, svBit* cq_tvalid,
                      svBitVecVal* cq_tdata, svBitVecVal* cq_tkeep, svBit* cq_tlast, svBitVecVal* cq_tuser,
                      svBit* cc_tready, svBit* rq_tready, svBit* rc_tvalid, svBitVecVal* rc_tdata,
                      svBitVecVal* rc_tkeep, svBit* rc_tlast, svBitVecVal* rc_tuser, svBitVecVal* max_payload,
                      svBitVecVal* max_read_req, int* events) {
  fs_pcie_in in;
  fs_pcie_out out;
  memset(&out, 0, sizeof out);
  if (lookup(&pcie_tick, FS_PCIE_TICK)) {
    memcpy(in.cc_tdata, cc_tdata, sizeof in.cc_tdata);
    memcpy(in.rq_tdata, rq_tdata, sizeof in.rq_tdata);
    memcpy(in.rq_tuser, rq_tuser, sizeof in.rq_tuser);
    in.cq_tready = cq_tready;
    in.cc_tvalid = cc_tvalid;
    in.cc_tkeep = static_cast<uint8_t>(cc_tkeep[0]);
    in.cc_tlast = cc_tlast;
    in.rq_tvalid = rq_tvalid;
    in.rq_tkeep = static_cast<uint8_t>(rq_tkeep[0]);
    in.rq_tlast = rq_tlast;
    in.rc_tready = rc_tready;
    pcie_tick(&in, &out);
  }
  *cq_tvalid = out.cq_tvalid;
  copy_words(cq_tdata, out.cq_tdata, 8);
  cq_tkeep[0] = out.cq_tkeep;
  *cq_tlast = out.cq_tlast;
  copy_words(cq_tuser, out.cq_tuser, 3);
  *cc_tready = out.cc_tready;
  *rq_tready = out.rq_tready;
  *rc_tvalid = out.rc_tvalid;
  copy_words(rc_tdata, out.rc_tdata, 8);
  rc_tkeep[0] = out.rc_tkeep;
  *rc_tlast = out.rc_tlast;
  copy_words(rc_tuser, out.rc_tuser, 3);
  max_payload[0] = out.max_payload;
  max_read_req[0] = out.max_read_req;
  *events = static_cast<int>(out.events);
}

void fastsim_dpi_dram(const svBitVecVal* awid, const svBitVecVal* awaddr, const svBitVecVal* awlen,
                      const svBitVecVal* awsize, const svBitVecVal* awburst, svBit awvalid, const svBitVecVal* wdata,
                      const svBitVecVal* wstrb, svBit wlast, svBit wvalid, svBit bready, const svBitVecVal* arid,
                      const svBitVecVal* araddr, const svBitVecVal* arlen, const svBitVecVal* arsize,
                      const svBitVecVal* arburst, svBit arvalid, svBit rready, svBit* awready, svBit* wready,
                      svBitVecVal* bid, svBitVecVal* bresp, svBit* bvalid, svBit* arready, svBitVecVal* rid,
                      svBitVecVal* rdata, svBitVecVal* rresp, svBit* rlast, svBit* rvalid) {
  fs_axi_out out;
  memset(&out, 0, sizeof out);
  if (lookup(&dram_tick, FS_DRAM_TICK)) {
    fs_axi_in in;
    in.awid = static_cast<uint8_t>(awid[0]);
    in.awaddr = awaddr[0] | static_cast<uint64_t>(awaddr[1] & 3) << 32;
    in.awlen = static_cast<uint8_t>(awlen[0]);
    in.awsize = static_cast<uint8_t>(awsize[0]);
    in.awburst = static_cast<uint8_t>(awburst[0]);
    in.awvalid = awvalid;
    memcpy(in.wdata, wdata, sizeof in.wdata);
    in.wstrb = wstrb[0];
    in.wlast = wlast;
    in.wvalid = wvalid;
    in.bready = bready;
    in.arid = static_cast<uint8_t>(arid[0]);
    in.araddr = araddr[0] | static_cast<uint64_t>(araddr[1] & 3) << 32;
    in.arlen = static_cast<uint8_t>(arlen[0]);
    in.arsize = static_cast<uint8_t>(arsize[0]);
    in.arburst = static_cast<uint8_t>(arburst[0]);
    in.arvalid = arvalid;
    in.rready = rready;
    dram_tick(&in, &out);
  }
  *awready = out.awready;
  *wready = out.wready;
  bid[0] = out.bid;
  bresp[0] = out.bresp;
  *bvalid = out.bvalid;
  *arready = out.arready;
  rid[0] = out.rid;
  copy_words(rdata, out.rdata, 8);
  rresp[0] = out.rresp;
  *rlast = out.rlast;
  *rvalid = out.rvalid;
}

void fastsim_dpi_port(int k, long long txd, char txc, long long* rxd, char* rxc) {
  uint64_t d = 0x0707070707070707ULL;  // XGMII idle
  uint8_t c = 0xff;
  if (lookup(&port_tick, FS_PORT_TICK)) port_tick(k, static_cast<uint64_t>(txd), static_cast<uint8_t>(txc), &d, &c);
  *rxd = static_cast<long long>(d);
  *rxc = static_cast<char>(c);
}
