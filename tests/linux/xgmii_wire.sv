// A simulated cable for test_tapbridge.py: two registered 64-bit XGMII lanes, a -> b and
// b -> a, one cycle of latency each. Test-only RTL; no part of the NIC.
module xgmii_wire (
    input  logic        clk,
    input  logic [63:0] a_txd,
    input  logic [7:0]  a_txc,
    output logic [63:0] b_rxd,
    output logic [7:0]  b_rxc,
    input  logic [63:0] b_txd,
    input  logic [7:0]  b_txc,
    output logic [63:0] a_rxd,
    output logic [7:0]  a_rxc
);
  always_ff @(posedge clk) begin
    b_rxd <= a_txd;
    b_rxc <= a_txc;
    a_rxd <= b_txd;
    a_rxc <= b_txc;
  end
endmodule
