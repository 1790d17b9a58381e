// A module with nothing inside: its ports are an AXI4 port as hw/src/offnic/axi/Axi4IO
// has it (256-bit data, 34-bit address, 2-bit id), driven from both ends by the test
// (the master) and by cocotbext-axi's AxiRam or ddr4_model.Ddr4Ram (the slave), so the
// test can compare the slave's answers with AxiDram's.
module axi_bench (
    input logic clk,
    input logic rst,
    input logic [1:0] m_axi_awid,
    input logic [33:0] m_axi_awaddr,
    input logic [7:0] m_axi_awlen,
    input logic [2:0] m_axi_awsize,
    input logic [1:0] m_axi_awburst,
    input logic m_axi_awvalid,
    input logic m_axi_awready,
    input logic [255:0] m_axi_wdata,
    input logic [31:0] m_axi_wstrb,
    input logic m_axi_wlast,
    input logic m_axi_wvalid,
    input logic m_axi_wready,
    input logic [1:0] m_axi_bid,
    input logic [1:0] m_axi_bresp,
    input logic m_axi_bvalid,
    input logic m_axi_bready,
    input logic [1:0] m_axi_arid,
    input logic [33:0] m_axi_araddr,
    input logic [7:0] m_axi_arlen,
    input logic [2:0] m_axi_arsize,
    input logic [1:0] m_axi_arburst,
    input logic m_axi_arvalid,
    input logic m_axi_arready,
    input logic [1:0] m_axi_rid,
    input logic [255:0] m_axi_rdata,
    input logic [1:0] m_axi_rresp,
    input logic m_axi_rlast,
    input logic m_axi_rvalid,
    input logic m_axi_rready
);
endmodule
