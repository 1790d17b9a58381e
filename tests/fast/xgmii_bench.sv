// A module with nothing inside: its ports carry the XGMII words that cocotbext-eth's
// XgmiiSource drives and XgmiiSink reads, so the tests can compare them with XgmiiPort.
module xgmii_bench (
    input logic clk,
    input logic rst,
    input logic [63:0] src_d,
    input logic [7:0] src_c,
    input logic [63:0] snk_d,
    input logic [7:0] snk_c
);
endmodule
