// The binary interface between the fast NIC model (nic_fast_top.sv + dpi_bridge.cpp,
// built once per RTL) and the C++ partners (libfastsim.so, rebuilt in seconds when its
// sources change). Plain C structs, one per clock domain's call, so neither side needs
// the other's headers. Changing this file rebuilds the model.
#ifndef FASTSIM_ABI_H
#define FASTSIM_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// PCIe hard IP user interface at 256 bits (PG213), seen from the host side.
// Wide fields are little-endian arrays of 32-bit words, as DPI passes them.
struct fs_pcie_in {   // the NIC's outputs before the edge
  uint32_t cc_tdata[8], rq_tdata[8], rq_tuser[2];
  uint8_t cq_tready, cc_tvalid, cc_tkeep, cc_tlast, rq_tvalid, rq_tkeep, rq_tlast, rc_tready;
};
struct fs_pcie_out {  // the NIC's inputs from this edge on
  uint32_t cq_tdata[8], cq_tuser[3], rc_tdata[8], rc_tuser[3];
  uint32_t events;    // news for Python (fast_events)
  uint8_t cq_tvalid, cq_tkeep, cq_tlast, cc_tready, rq_tready, rc_tvalid, rc_tkeep, rc_tlast;
  uint8_t max_payload, max_read_req;
};

// The payload cache's DRAM port (AXI4, 256-bit data, 34-bit address, 2-bit id).
struct fs_axi_in {
  uint64_t awaddr, araddr;
  uint32_t wdata[8], wstrb;
  uint8_t awid, awlen, awsize, awburst, awvalid, wlast, wvalid, bready;
  uint8_t arid, arlen, arsize, arburst, arvalid, rready;
};
struct fs_axi_out {
  uint32_t rdata[8];
  uint8_t awready, wready, bid, bresp, bvalid, arready, rid, rresp, rlast, rvalid;
};

// What the library exports for the bridge (names looked up at run time).
typedef void (*fs_pcie_tick_fn)(const struct fs_pcie_in*, struct fs_pcie_out*);
typedef void (*fs_dram_tick_fn)(const struct fs_axi_in*, struct fs_axi_out*);
typedef void (*fs_port_tick_fn)(int k, uint64_t txd, uint8_t txc, uint64_t* rxd, uint8_t* rxc);
#define FS_PCIE_TICK "fastsim_pcie_tick"
#define FS_DRAM_TICK "fastsim_dram_tick"
#define FS_PORT_TICK "fastsim_port_tick"

#ifdef __cplusplus
}
#endif
#endif
