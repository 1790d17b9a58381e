package offnic.board

import chisel3._

/** The two Ethernet transceivers as Vivado generates them from constraints/<board>/ip.tcl
  * (`gtwizard_ultrascale`, module `eth_gty`: two GTY channels, raw 64-bit user data for
  * offnic's own PCS, QPLL0 at 25.78125 Gb/s and a secondary QPLL for 10.3125 Gb/s, the
  * common block and the TX user-clock helper in the core). Ports as PG182 (UltraScale
  * FPGAs Transceivers Wizard) names them for that configuration; buses carry channel 0 in
  * the low bits. The RX user clocks are built outside the core (LOCATE_RX_USER_CLOCKING =
  * EXAMPLE_DESIGN): each channel's RX runs on its own recovered clock, since raw mode has
  * no clock correction to share one (the board top buffers each `rxoutclk_out` bit with a
  * BUFG_GT). Not checked against a generated template here (no Vivado).
  */
class GtyWizard(channels: Int = 2) extends ExtModule {
  override def desiredName = "eth_gty"
  val io = FlatIO(new Bundle {
    val gtrefclk00_in = Input(Clock())
    val gtyrxp_in = Input(UInt(channels.W))
    val gtyrxn_in = Input(UInt(channels.W))
    val gtytxp_out = Output(UInt(channels.W))
    val gtytxn_out = Output(UInt(channels.W))
    // reset controller, clocked by the free-running 125 MHz clock
    val gtwiz_reset_clk_freerun_in = Input(Clock())
    val gtwiz_reset_all_in = Input(Bool())
    val gtwiz_reset_tx_pll_and_datapath_in = Input(Bool())
    val gtwiz_reset_tx_datapath_in = Input(Bool())
    val gtwiz_reset_rx_pll_and_datapath_in = Input(Bool())
    val gtwiz_reset_rx_datapath_in = Input(Bool())
    val gtwiz_reset_rx_cdr_stable_out = Output(Bool())
    val gtwiz_reset_tx_done_out = Output(Bool())
    val gtwiz_reset_rx_done_out = Output(Bool())
    // TX user clock (helper in the core): 402.83 MHz at 25.78125 Gb/s, both channels
    val gtwiz_userclk_tx_reset_in = Input(Bool())
    val gtwiz_userclk_tx_srcclk_out = Output(Clock())
    val gtwiz_userclk_tx_usrclk_out = Output(Clock())
    val gtwiz_userclk_tx_usrclk2_out = Output(Clock())
    val gtwiz_userclk_tx_active_out = Output(Bool())
    // RX user clocks (built outside): each channel's own
    val gtwiz_userclk_rx_active_in = Input(Bool())
    val rxoutclk_out = Output(UInt(channels.W))
    val rxusrclk_in = Input(UInt(channels.W))
    val rxusrclk2_in = Input(UInt(channels.W))
    // data: 64 bits per channel, bit 0 first on the wire
    val gtwiz_userdata_tx_in = Input(UInt((64 * channels).W))
    val gtwiz_userdata_rx_out = Output(UInt((64 * channels).W))
    // status and the optional ports ip.toml enables
    val gtpowergood_out = Output(UInt(channels.W))
    val rxpmaresetdone_out = Output(UInt(channels.W))
    val txpmaresetdone_out = Output(UInt(channels.W))
    val rxpolarity_in = Input(UInt(channels.W))
    val txpolarity_in = Input(UInt(channels.W))
    val drpclk_in = Input(UInt(channels.W))
    val drpaddr_in = Input(UInt((10 * channels).W))
    val drpdi_in = Input(UInt((16 * channels).W))
    val drpen_in = Input(UInt(channels.W))
    val drpwe_in = Input(UInt(channels.W))
    val drpdo_out = Output(UInt((16 * channels).W))
    val drprdy_out = Output(UInt(channels.W))
  })
}
