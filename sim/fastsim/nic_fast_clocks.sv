// nic_fast_top with its clocks made in SystemVerilog (Verilator --timing) instead of by
// cocotb: the variant the fast harness measured against cocotb's Clock (fast_tb.py
// says which it uses). Core clock 250 MHz, both MAC clocks 390.625 MHz (25G); resets
// stay Python's.
module nic_fast_clocks (
  output bit        clock,
  input  bit        reset,
  output bit        port_mac_clk_0,
  output bit        port_mac_clk_1,
  input  bit        port_mac_rst_0,
  input  bit        port_mac_rst_1,
  output bit [31:0] fast_events
);
  initial forever #2.0 clock = ~clock;
  initial forever #1.28 port_mac_clk_0 = ~port_mac_clk_0;
  initial begin
    #0.5;  // the two ports' clocks are not in phase, as on a board
    forever #1.28 port_mac_clk_1 = ~port_mac_clk_1;
  end

  nic_fast_top top (.*);
endmodule
