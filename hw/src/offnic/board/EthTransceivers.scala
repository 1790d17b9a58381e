package offnic.board

import chisel3._
import chisel3.util._

/** The two Ethernet lanes' transceivers: the reference-clock buffer, the GT Wizard core
  * (`eth_gty`, [[GtyWizard]]) and each channel's RX user clock, with the reset sequence:
  *
  *  1. everything held (`gtwiz_reset_all_in`) until `freerun_ok` (the MMCM that makes the
  *     free-running clock is locked), synchronised to that clock;
  *  2. the core's reset controller brings up the QPLL, then TX and RX (PG182); the TX user
  *     clock helper waits for both channels' TX PMA reset to finish; each RX user clock's
  *     BUFG_GT is held cleared until its channel's RX PMA reset is done, and the core is
  *     told the RX user clocks run (`gtwiz_userclk_rx_active_in`) once both are;
  *  3. `tx_ready` / `rx_ready` (asynchronous levels): the reset controller says TX / RX
  *     are done. The PHYs synchronise them into each of their clocks.
  *
  * `refclk_fabric`: the reference clock's ODIV2 through a BUFG_GT, for a board that makes
  * its fabric clocks from it (the K3P-Q).
  *
  * `channelOf(i)`: which of the core's channels carries port i. The wizard orders the
  * channels it is given (ip.toml CHANNEL_ENABLE) by location, lowest first (PG182); the
  * AS02MC04's port 0 is the higher channel (X0Y15, port 1 X0Y14), so its ports are swapped
  * here; the K3P-Q's are in order (X0Y8, X0Y12). Pins, data and RX clocks all follow it.
  */
class EthTransceivers(lanes: Int = 2, channelOf: Seq[Int] = Seq(0, 1)) extends RawModule {
  require(channelOf.sorted == (0 until lanes), "channelOf: a permutation of the lanes")
  val refclk_p = IO(Input(Bool()))
  val refclk_n = IO(Input(Bool()))
  val rx_p = IO(Input(UInt(lanes.W)))
  val rx_n = IO(Input(UInt(lanes.W)))
  val tx_p = IO(Output(UInt(lanes.W)))
  val tx_n = IO(Output(UInt(lanes.W)))
  val refclk_fabric = IO(Output(Clock()))
  val freerun_clk = IO(Input(Clock()))
  val freerun_ok = IO(Input(Bool()))
  val tx_clk = IO(Output(Clock()))
  val rx_clk = IO(Output(Vec(lanes, Clock())))
  val tx_data = IO(Input(Vec(lanes, UInt(64.W))))
  val rx_data = IO(Output(Vec(lanes, UInt(64.W))))
  val tx_ready = IO(Output(Bool()))
  val rx_ready = IO(Output(Bool()))

  private val refBuf = BlackBoxStubs.record(Module(new IBUFDS_GTE4), cell = true)
  refBuf.io.I := refclk_p
  refBuf.io.IB := refclk_n
  refBuf.io.CEB := false.B
  private val fabBuf = BlackBoxStubs.record(Module(new BUFG_GT), cell = true)
  fabBuf.io.I := refBuf.io.ODIV2
  fabBuf.io.CE := true.B
  fabBuf.io.CEMASK := false.B
  fabBuf.io.CLR := false.B
  fabBuf.io.CLRMASK := false.B
  fabBuf.io.DIV := 0.U
  refclk_fabric := fabBuf.io.O

  private val gt = BlackBoxStubs.record(Module(new GtyWizard(lanes))).io
  gt.gtrefclk00_in := refBuf.io.O
  // Port i's bits <-> channel channelOf(i)'s.
  private def toChannels(ports: UInt): UInt = VecInit((0 until lanes).map(c => ports(channelOf.indexOf(c)))).asUInt
  private def toPorts(chans: UInt): UInt = VecInit((0 until lanes).map(i => chans(channelOf(i)))).asUInt
  gt.gtyrxp_in := toChannels(rx_p)
  gt.gtyrxn_in := toChannels(rx_n)
  tx_p := toPorts(gt.gtytxp_out)
  tx_n := toPorts(gt.gtytxn_out)

  private val freerunRst = ResetSync(freerun_clk, !freerun_ok)
  gt.gtwiz_reset_clk_freerun_in := freerun_clk
  gt.gtwiz_reset_all_in := freerunRst
  gt.gtwiz_reset_tx_pll_and_datapath_in := false.B
  gt.gtwiz_reset_tx_datapath_in := false.B
  gt.gtwiz_reset_rx_pll_and_datapath_in := false.B
  gt.gtwiz_reset_rx_datapath_in := false.B
  gt.gtwiz_userclk_tx_reset_in := !gt.txpmaresetdone_out.andR
  tx_clk := gt.gtwiz_userclk_tx_usrclk2_out

  // Each channel's RX user clock: its recovered clock through a BUFG_GT, cleared until the
  // channel's RX PMA is out of reset (what the core's own helper does, per channel).
  private val rxBufs = Seq.tabulate(lanes) { i =>
    val b = BlackBoxStubs.record(Module(new BUFG_GT), cell = true)
    b.io.I := gt.rxoutclk_out(i).asClock
    b.io.CE := true.B
    b.io.CEMASK := false.B
    b.io.CLR := !gt.rxpmaresetdone_out(i)
    b.io.CLRMASK := false.B
    b.io.DIV := 0.U
    b.io.O
  }
  for (i <- 0 until lanes) rx_clk(i) := rxBufs(channelOf(i))
  private val usr = VecInit(rxBufs.map(_.asUInt.asBool)).asUInt
  gt.rxusrclk_in := usr
  gt.rxusrclk2_in := usr
  // Active once both channels' RX PMAs are up, a few cycles of channel 0's RX user clock later.
  gt.gtwiz_userclk_rx_active_in := withClockAndReset(rxBufs.head, (!gt.rxpmaresetdone_out.andR).asAsyncReset) {
    ShiftRegister(true.B, 4, false.B, true.B)
  }

  gt.gtwiz_userdata_tx_in := Cat((0 until lanes).reverse.map(c => tx_data(channelOf.indexOf(c))))
  for (i <- 0 until lanes) rx_data(i) := gt.gtwiz_userdata_rx_out(64 * channelOf(i) + 63, 64 * channelOf(i))
  tx_ready := gt.gtwiz_reset_tx_done_out && gt.gtwiz_userclk_tx_active_out
  rx_ready := gt.gtwiz_reset_rx_done_out

  // Polarity as wired; DRP unused (in the free-running clock, as PG182 expects).
  gt.rxpolarity_in := 0.U
  gt.txpolarity_in := 0.U
  gt.drpclk_in := Fill(lanes, freerun_clk.asUInt)
  gt.drpaddr_in := 0.U
  gt.drpdi_in := 0.U
  gt.drpen_in := 0.U
  gt.drpwe_in := 0.U
}
