// The whole NIC for the fast harness (issue 21): the Chisel `Nic` with every per-cycle
// partner in C++ (sim/fastsim), called through DPI-C at the rising edge of its clock.
//
// Sampling: a DPI call at an edge sees the NIC's outputs from before the edge (the
// NIC's registers update with non-blocking assignments) and its results reach the NIC
// through non-blocking assignments too, so the NIC sees them from this edge on -- as a
// cocotb coroutine that awaits RisingEdge and writes signals would.
//
// The C++ side lives in a shared library Python loads (fastlib.py); dpi_bridge.cpp, built
// into this model, forwards the calls to it. `fast_events` is a counter the C++ side
// bumps when it has news for Python: one Python coroutine awaits its changes.
module nic_fast_top (
  input  bit        clock,
  input  bit        reset,
  input  bit        port_mac_clk_0,
  input  bit        port_mac_clk_1,
  input  bit        port_mac_rst_0,
  input  bit        port_mac_rst_1,
  output bit [31:0] fast_events
);
  // ---------------------------------------------------------------- the C++ partners
  import "DPI-C" function void fastsim_dpi_pcie(
    input  bit         cq_tready,
    input  bit         cc_tvalid, input bit [255:0] cc_tdata, input bit [7:0] cc_tkeep, input bit cc_tlast,
    input  bit         rq_tvalid, input bit [255:0] rq_tdata, input bit [7:0] rq_tkeep, input bit rq_tlast,
    input  bit [61:0]  rq_tuser,
    input  bit         rc_tready,
    output bit         cq_tvalid, output bit [255:0] cq_tdata, output bit [7:0] cq_tkeep, output bit cq_tlast,
    output bit [87:0]  cq_tuser,
    output bit         cc_tready, output bit rq_tready,
    output bit         rc_tvalid, output bit [255:0] rc_tdata, output bit [7:0] rc_tkeep, output bit rc_tlast,
    output bit [74:0]  rc_tuser,
    output bit [2:0]   max_payload, output bit [2:0] max_read_req,
    output int         events);

  import "DPI-C" function void fastsim_dpi_dram(
    input  bit [1:0]   awid, input bit [33:0] awaddr, input bit [7:0] awlen, input bit [2:0] awsize,
    input  bit [1:0]   awburst, input bit awvalid,
    input  bit [255:0] wdata, input bit [31:0] wstrb, input bit wlast, input bit wvalid, input bit bready,
    input  bit [1:0]   arid, input bit [33:0] araddr, input bit [7:0] arlen, input bit [2:0] arsize,
    input  bit [1:0]   arburst, input bit arvalid, input bit rready,
    output bit         awready, output bit wready, output bit [1:0] bid, output bit [1:0] bresp, output bit bvalid,
    output bit         arready, output bit [1:0] rid, output bit [255:0] rdata, output bit [1:0] rresp,
    output bit         rlast, output bit rvalid);

  import "DPI-C" function void fastsim_dpi_port(
    input int k, input longint txd, input byte txc, output longint rxd, output byte rxc);

  // ---------------------------------------------------------------- the NIC's inputs
  bit         cq_tvalid, cq_tlast, cc_tready, rq_tready, rc_tvalid, rc_tlast;
  bit [255:0] cq_tdata, rc_tdata;
  bit [7:0]   cq_tkeep, rc_tkeep;
  bit [87:0]  cq_tuser;
  bit [74:0]  rc_tuser;
  bit [2:0]   max_payload, max_read_req;
  bit         awready, wready, bvalid, arready, rlast, rvalid;
  bit [1:0]   bid, bresp, rid, rresp;
  bit [255:0] rdata;
  bit [63:0]  rxd_0, rxd_1;
  bit [7:0]   rxc_0, rxc_1;

  // ---------------------------------------------------------------- the NIC's outputs
  wire         s_axis_cq_tready, m_axis_cc_tvalid, m_axis_cc_tlast, m_axis_rq_tvalid, m_axis_rq_tlast;
  wire         s_axis_rc_tready;
  wire [255:0] m_axis_cc_tdata, m_axis_rq_tdata;
  wire [7:0]   m_axis_cc_tkeep, m_axis_rq_tkeep;
  wire [32:0]  m_axis_cc_tuser;
  wire [61:0]  m_axis_rq_tuser;
  wire [63:0]  txd_0, txd_1;
  wire [7:0]   txc_0, txc_1;
  wire [1:0]   m_axi_awid, m_axi_awburst, m_axi_arid, m_axi_arburst;
  wire [33:0]  m_axi_awaddr, m_axi_araddr;
  wire [7:0]   m_axi_awlen, m_axi_arlen;
  wire [2:0]   m_axi_awsize, m_axi_arsize;
  wire         m_axi_awvalid, m_axi_wlast, m_axi_wvalid, m_axi_bready, m_axi_arvalid, m_axi_rready;
  wire [255:0] m_axi_wdata;
  wire [31:0]  m_axi_wstrb;

  Nic nic (
    .clock(clock), .reset(reset),
    .s_axis_cq_tvalid(cq_tvalid), .s_axis_cq_tready(s_axis_cq_tready), .s_axis_cq_tdata(cq_tdata),
    .s_axis_cq_tkeep(cq_tkeep), .s_axis_cq_tlast(cq_tlast), .s_axis_cq_tuser(cq_tuser),
    .m_axis_cc_tvalid(m_axis_cc_tvalid), .m_axis_cc_tready(cc_tready), .m_axis_cc_tdata(m_axis_cc_tdata),
    .m_axis_cc_tkeep(m_axis_cc_tkeep), .m_axis_cc_tlast(m_axis_cc_tlast), .m_axis_cc_tuser(m_axis_cc_tuser),
    .m_axis_rq_tvalid(m_axis_rq_tvalid), .m_axis_rq_tready(rq_tready), .m_axis_rq_tdata(m_axis_rq_tdata),
    .m_axis_rq_tkeep(m_axis_rq_tkeep), .m_axis_rq_tlast(m_axis_rq_tlast), .m_axis_rq_tuser(m_axis_rq_tuser),
    .s_axis_rc_tvalid(rc_tvalid), .s_axis_rc_tready(s_axis_rc_tready), .s_axis_rc_tdata(rc_tdata),
    .s_axis_rc_tkeep(rc_tkeep), .s_axis_rc_tlast(rc_tlast), .s_axis_rc_tuser(rc_tuser),
    .cfg_max_payload(max_payload), .cfg_max_read_req(max_read_req),
    .port_mac_clk_0(port_mac_clk_0), .port_mac_clk_1(port_mac_clk_1),
    .port_mac_rst_0(port_mac_rst_0), .port_mac_rst_1(port_mac_rst_1),
    .port_xgmii_txd_0(txd_0), .port_xgmii_txd_1(txd_1), .port_xgmii_txc_0(txc_0), .port_xgmii_txc_1(txc_1),
    .port_xgmii_rxd_0(rxd_0), .port_xgmii_rxd_1(rxd_1), .port_xgmii_rxc_0(rxc_0), .port_xgmii_rxc_1(rxc_1),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen), .m_axi_awsize(m_axi_awsize),
    .m_axi_awburst(m_axi_awburst), .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(awready),
    .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast), .m_axi_wvalid(m_axi_wvalid),
    .m_axi_wready(wready), .m_axi_bid(bid), .m_axi_bresp(bresp), .m_axi_bvalid(bvalid), .m_axi_bready(m_axi_bready),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen), .m_axi_arsize(m_axi_arsize),
    .m_axi_arburst(m_axi_arburst), .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(arready),
    .m_axi_rid(rid), .m_axi_rdata(rdata), .m_axi_rresp(rresp), .m_axi_rlast(rlast), .m_axi_rvalid(rvalid),
    .m_axi_rready(m_axi_rready)
  );

  // ---------------------------------------------------------------- core clock: PCIe host, DRAM
  always @(posedge clock) begin
    bit         n_cq_tvalid, n_cq_tlast, n_cc_tready, n_rq_tready, n_rc_tvalid, n_rc_tlast;
    bit [255:0] n_cq_tdata, n_rc_tdata;
    bit [7:0]   n_cq_tkeep, n_rc_tkeep;
    bit [87:0]  n_cq_tuser;
    bit [74:0]  n_rc_tuser;
    bit [2:0]   n_max_payload, n_max_read_req;
    int         n_events;
    bit         n_awready, n_wready, n_bvalid, n_arready, n_rlast, n_rvalid;
    bit [1:0]   n_bid, n_bresp, n_rid, n_rresp;
    bit [255:0] n_rdata;
    if (reset) begin
      cq_tvalid <= 1'b0; cc_tready <= 1'b0; rq_tready <= 1'b0; rc_tvalid <= 1'b0;
      awready <= 1'b0; wready <= 1'b0; bvalid <= 1'b0; arready <= 1'b0; rvalid <= 1'b0;
    end else begin
      fastsim_dpi_pcie(s_axis_cq_tready,
                       m_axis_cc_tvalid, m_axis_cc_tdata, m_axis_cc_tkeep, m_axis_cc_tlast,
                       m_axis_rq_tvalid, m_axis_rq_tdata, m_axis_rq_tkeep, m_axis_rq_tlast, m_axis_rq_tuser,
                       s_axis_rc_tready,
                       n_cq_tvalid, n_cq_tdata, n_cq_tkeep, n_cq_tlast, n_cq_tuser,
                       n_cc_tready, n_rq_tready,
                       n_rc_tvalid, n_rc_tdata, n_rc_tkeep, n_rc_tlast, n_rc_tuser,
                       n_max_payload, n_max_read_req, n_events);
      cq_tvalid <= n_cq_tvalid; cq_tdata <= n_cq_tdata; cq_tkeep <= n_cq_tkeep; cq_tlast <= n_cq_tlast;
      cq_tuser <= n_cq_tuser; cc_tready <= n_cc_tready; rq_tready <= n_rq_tready;
      rc_tvalid <= n_rc_tvalid; rc_tdata <= n_rc_tdata; rc_tkeep <= n_rc_tkeep; rc_tlast <= n_rc_tlast;
      rc_tuser <= n_rc_tuser; max_payload <= n_max_payload; max_read_req <= n_max_read_req;
      fast_events <= n_events;
      fastsim_dpi_dram(m_axi_awid, m_axi_awaddr, m_axi_awlen, m_axi_awsize, m_axi_awburst, m_axi_awvalid,
                       m_axi_wdata, m_axi_wstrb, m_axi_wlast, m_axi_wvalid, m_axi_bready,
                       m_axi_arid, m_axi_araddr, m_axi_arlen, m_axi_arsize, m_axi_arburst, m_axi_arvalid,
                       m_axi_rready,
                       n_awready, n_wready, n_bid, n_bresp, n_bvalid, n_arready, n_rid, n_rdata, n_rresp,
                       n_rlast, n_rvalid);
      awready <= n_awready; wready <= n_wready; bid <= n_bid; bresp <= n_bresp; bvalid <= n_bvalid;
      arready <= n_arready; rid <= n_rid; rdata <= n_rdata; rresp <= n_rresp; rlast <= n_rlast;
      rvalid <= n_rvalid;
    end
  end

  // ---------------------------------------------------------------- MAC clocks: the ports' far ends
  localparam bit [63:0] XGMII_IDLE_D = 64'h0707070707070707;
  always @(posedge port_mac_clk_0) begin
    longint d; byte c;
    if (port_mac_rst_0) begin
      rxd_0 <= XGMII_IDLE_D; rxc_0 <= 8'hff;
    end else begin
      fastsim_dpi_port(0, txd_0, txc_0, d, c);
      rxd_0 <= d; rxc_0 <= c;
    end
  end
  always @(posedge port_mac_clk_1) begin
    longint d; byte c;
    if (port_mac_rst_1) begin
      rxd_1 <= XGMII_IDLE_D; rxc_1 <= 8'hff;
    end else begin
      fastsim_dpi_port(1, txd_1, txc_1, d, c);
      rxd_1 <= d; rxc_1 <= c;
    end
  end

  wire _unused = &{1'b0, m_axis_cc_tuser};
endmodule
