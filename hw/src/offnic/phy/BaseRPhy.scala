package offnic.phy

import chisel3._

/** One Ethernet port's PHY side on a board: the MAC's XGMII (its own clock, no clock
  * enable) joined to a transceiver's raw 64-bit TX and RX, each in its own clock (TX: the
  * transceiver's TX user clock; RX: the channel's recovered clock, since raw mode has no
  * clock correction).
  *
  *   MAC xgmii_tx -> [XgmiiRateAdapter mac_clk -> tx_clk] -> BaseRPcs TX half -> serdes_tx_data
  *   MAC xgmii_rx <- [XgmiiRateAdapter rx_clk -> mac_clk] <- BaseRPcs RX half <- serdes_rx_data
  *
  * [[BaseRPcs]] is one clock; its TX and RX halves share nothing but status, so each half
  * is an instance of it in its own clock with the other half's inputs idle and outputs
  * open (synthesis removes the unused half). `status` is the RX half's, in `rx_clk`.
  * Resets: one source per direction, synchronised into each clock by the caller and
  * asserted together (the rate adapters' rule).
  */
class BaseRPhy(berWindowCycles: Int) extends RawModule {
  val mac_clk = IO(Input(Clock()))
  val mac_tx_rst = IO(Input(Bool()))
  val mac_rx_rst = IO(Input(Bool()))
  val xgmii_txd = IO(Input(UInt(64.W)))
  val xgmii_txc = IO(Input(UInt(8.W)))
  val xgmii_rxd = IO(Output(UInt(64.W)))
  val xgmii_rxc = IO(Output(UInt(8.W)))
  val tx_clk = IO(Input(Clock()))
  val tx_rst = IO(Input(Bool()))
  val serdes_tx_data = IO(Output(UInt(64.W)))
  val rx_clk = IO(Input(Clock()))
  val rx_rst = IO(Input(Bool()))
  val serdes_rx_data = IO(Input(UInt(64.W)))
  val status = IO(Output(new PcsStatus))
  /** Rate adapter counters, each in its write or read clock (see XgmiiRateAdapter). `status`
    * is in `rx_clk` but for `stat_tx_error_block`, a TX-half pulse in `tx_clk`. */
  val tx_adapter = IO(Output(new RateAdapterStats))
  val rx_adapter = IO(Output(new RateAdapterStats))

  private val idle = (BigInt(0x0707070707070707L), 0xff)

  private val txRa = Module(new XgmiiRateAdapter)
  txRa.in_clk := mac_clk
  txRa.in_rst := mac_tx_rst
  txRa.in_valid := true.B
  txRa.in_d := xgmii_txd
  txRa.in_c := xgmii_txc
  txRa.out_clk := tx_clk
  txRa.out_rst := tx_rst
  private val txPcs = withClockAndReset(tx_clk, tx_rst) { Module(new BaseRPcs(berWindowCycles)) }
  txRa.out_ready := txPcs.xgmii_tx_ready
  txPcs.xgmii_txd := txRa.out_d
  txPcs.xgmii_txc := txRa.out_c
  txPcs.serdes_rx_data := 0.U
  serdes_tx_data := txPcs.serdes_tx_data

  private val rxPcs = withClockAndReset(rx_clk, rx_rst) { Module(new BaseRPcs(berWindowCycles)) }
  rxPcs.xgmii_txd := idle._1.U
  rxPcs.xgmii_txc := idle._2.U
  rxPcs.serdes_rx_data := serdes_rx_data
  private val rxRa = Module(new XgmiiRateAdapter)
  rxRa.in_clk := rx_clk
  rxRa.in_rst := rx_rst
  rxRa.in_valid := rxPcs.xgmii_rx_valid
  rxRa.in_d := rxPcs.xgmii_rxd
  rxRa.in_c := rxPcs.xgmii_rxc
  rxRa.out_clk := mac_clk
  rxRa.out_rst := mac_rx_rst
  rxRa.out_ready := true.B
  xgmii_rxd := rxRa.out_d
  xgmii_rxc := rxRa.out_c

  status := rxPcs.status
  status.stat_tx_error_block := txPcs.status.stat_tx_error_block
  for ((io, ra) <- Seq(tx_adapter -> txRa, rx_adapter -> rxRa)) {
    io.deleted := ra.stat_deleted
    io.overflows := ra.stat_overflows
    io.inserted := ra.stat_inserted
    io.underflows := ra.stat_underflows
  }
}

class RateAdapterStats extends Bundle {
  val deleted = UInt(32.W)
  val overflows = UInt(32.W)
  val inserted = UInt(32.W)
  val underflows = UInt(32.W)
}

object BaseRPhy extends offnic.Elaboratable {
  /** `ber_window_cycles` (50354: 125 us at 402.83 MHz, 25GBASE-R). */
  def generate(p: offnic.Params): RawModule = new BaseRPhy(p.int("ber_window_cycles", 50354))
}
