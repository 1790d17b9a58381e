// Test fixture (not NIC hardware): the wires between a cocotb AXI4 master on s_axi and a
// cocotb AXI4 slave model on m_axi (256-bit data, 34-bit addresses, 4-bit IDs, as the NIC's
// m_axi), so a bus model such as sim/offnic_sim/host/ddr4_model.py can be tested on its own.
// clock and reset only clock the cocotb models.
/* verilator lint_off UNUSEDSIGNAL */
module axi4_wire (
  input  wire clock,
  input  wire reset,
  input  wire [3:0] s_axi_awid,
  output wire [3:0] m_axi_awid,
  input  wire [33:0] s_axi_awaddr,
  output wire [33:0] m_axi_awaddr,
  input  wire [7:0] s_axi_awlen,
  output wire [7:0] m_axi_awlen,
  input  wire [2:0] s_axi_awsize,
  output wire [2:0] m_axi_awsize,
  input  wire [1:0] s_axi_awburst,
  output wire [1:0] m_axi_awburst,
  input  wire s_axi_awvalid,
  output wire m_axi_awvalid,
  input  wire m_axi_awready,
  output wire s_axi_awready,
  input  wire [255:0] s_axi_wdata,
  output wire [255:0] m_axi_wdata,
  input  wire [31:0] s_axi_wstrb,
  output wire [31:0] m_axi_wstrb,
  input  wire s_axi_wlast,
  output wire m_axi_wlast,
  input  wire s_axi_wvalid,
  output wire m_axi_wvalid,
  input  wire m_axi_wready,
  output wire s_axi_wready,
  input  wire [3:0] m_axi_bid,
  output wire [3:0] s_axi_bid,
  input  wire [1:0] m_axi_bresp,
  output wire [1:0] s_axi_bresp,
  input  wire m_axi_bvalid,
  output wire s_axi_bvalid,
  input  wire s_axi_bready,
  output wire m_axi_bready,
  input  wire [3:0] s_axi_arid,
  output wire [3:0] m_axi_arid,
  input  wire [33:0] s_axi_araddr,
  output wire [33:0] m_axi_araddr,
  input  wire [7:0] s_axi_arlen,
  output wire [7:0] m_axi_arlen,
  input  wire [2:0] s_axi_arsize,
  output wire [2:0] m_axi_arsize,
  input  wire [1:0] s_axi_arburst,
  output wire [1:0] m_axi_arburst,
  input  wire s_axi_arvalid,
  output wire m_axi_arvalid,
  input  wire m_axi_arready,
  output wire s_axi_arready,
  input  wire [3:0] m_axi_rid,
  output wire [3:0] s_axi_rid,
  input  wire [255:0] m_axi_rdata,
  output wire [255:0] s_axi_rdata,
  input  wire [1:0] m_axi_rresp,
  output wire [1:0] s_axi_rresp,
  input  wire m_axi_rlast,
  output wire s_axi_rlast,
  input  wire m_axi_rvalid,
  output wire s_axi_rvalid,
  input  wire s_axi_rready,
  output wire m_axi_rready
);
  assign m_axi_awid = s_axi_awid;
  assign m_axi_awaddr = s_axi_awaddr;
  assign m_axi_awlen = s_axi_awlen;
  assign m_axi_awsize = s_axi_awsize;
  assign m_axi_awburst = s_axi_awburst;
  assign m_axi_awvalid = s_axi_awvalid;
  assign s_axi_awready = m_axi_awready;
  assign m_axi_wdata = s_axi_wdata;
  assign m_axi_wstrb = s_axi_wstrb;
  assign m_axi_wlast = s_axi_wlast;
  assign m_axi_wvalid = s_axi_wvalid;
  assign s_axi_wready = m_axi_wready;
  assign s_axi_bid = m_axi_bid;
  assign s_axi_bresp = m_axi_bresp;
  assign s_axi_bvalid = m_axi_bvalid;
  assign m_axi_bready = s_axi_bready;
  assign m_axi_arid = s_axi_arid;
  assign m_axi_araddr = s_axi_araddr;
  assign m_axi_arlen = s_axi_arlen;
  assign m_axi_arsize = s_axi_arsize;
  assign m_axi_arburst = s_axi_arburst;
  assign m_axi_arvalid = s_axi_arvalid;
  assign s_axi_arready = m_axi_arready;
  assign s_axi_rid = m_axi_rid;
  assign s_axi_rdata = m_axi_rdata;
  assign s_axi_rresp = m_axi_rresp;
  assign s_axi_rlast = m_axi_rlast;
  assign s_axi_rvalid = m_axi_rvalid;
  assign m_axi_rready = s_axi_rready;
endmodule
