package offnic.eth

import chisel3._
import offnic.{Elaboratable, Params}
import offnic.axis.AxisIO

/** The NIC's port MAC: [[EthMacTx]] and [[EthMacRx]] side by side in the MAC clock domain
  * (156.25 MHz for 10G, 390.625 MHz for 25G; the logic is the same). One `clock`, one
  * synchronous `reset`; the XGMII transmit and receive clocks are both this clock (the
  * PCS/transceiver wrapper puts them on it).
  *
  * Configuration: with `cfgPorts` the inputs `cfg_ifg` and `cfg_max_frame_len` come from
  * the port's register block (whose reset values should be `ifg` and `maxFrameLen`);
  * without, the MAC is built with those two values fixed and has no such inputs.
  *
  * Statistics: the pulses of both halves (see their documentation), for the port's
  * counters.
  */
class EthMac(val cfgPorts: Boolean = true, val ifg: Int = 12, val maxFrameLen: Int = 1518) extends Module {
  require(ifg >= 8 && ifg <= 255, s"ifg must be 8..255 bytes (802.3: 12), got $ifg")
  require(maxFrameLen >= 64 && maxFrameLen <= 65535, s"max frame length must be 64..65535, got $maxFrameLen")

  val s_axis = IO(Flipped(new AxisIO(Xgmii.axisParams)))
  val m_axis = IO(new AxisNoReadyIO(Xgmii.axisParams))
  val xgmii_txd = IO(Output(UInt(64.W)))
  val xgmii_txc = IO(Output(UInt(8.W)))
  val xgmii_rxd = IO(Input(UInt(64.W)))
  val xgmii_rxc = IO(Input(UInt(8.W)))
  val cfg_ifg = Option.when(cfgPorts)(IO(Input(UInt(8.W))))
  val cfg_max_frame_len = Option.when(cfgPorts)(IO(Input(UInt(16.W))))

  val stat_tx_frame = IO(Output(Bool()))
  val stat_tx_error = IO(Output(Bool()))
  val stat_tx_bytes = IO(Output(UInt(16.W)))
  val stat_rx_frame_good = IO(Output(Bool()))
  val stat_rx_fcs_error = IO(Output(Bool()))
  val stat_rx_runt = IO(Output(Bool()))
  val stat_rx_oversize = IO(Output(Bool()))
  val stat_rx_xgmii_error = IO(Output(Bool()))
  val stat_rx_bytes = IO(Output(UInt(16.W)))

  private val tx = Module(new EthMacTx)
  private val rx = Module(new EthMacRx)

  tx.s_axis <> s_axis
  xgmii_txd := tx.xgmii_txd
  xgmii_txc := tx.xgmii_txc
  tx.cfg_ifg := cfg_ifg.getOrElse(ifg.U(8.W))
  stat_tx_frame := tx.stat_tx_frame
  stat_tx_error := tx.stat_tx_error
  stat_tx_bytes := tx.stat_tx_bytes

  rx.xgmii_rxd := xgmii_rxd
  rx.xgmii_rxc := xgmii_rxc
  m_axis <> rx.m_axis
  rx.cfg_max_frame_len := cfg_max_frame_len.getOrElse(maxFrameLen.U(16.W))
  stat_rx_frame_good := rx.stat_rx_frame_good
  stat_rx_fcs_error := rx.stat_rx_fcs_error
  stat_rx_runt := rx.stat_rx_runt
  stat_rx_oversize := rx.stat_rx_oversize
  stat_rx_xgmii_error := rx.stat_rx_xgmii_error
  stat_rx_bytes := rx.stat_rx_bytes
}

object EthMac extends Elaboratable {
  def generate(p: Params): RawModule = new EthMac(
    cfgPorts = p.bool("cfg_ports", true),
    ifg = p.int("ifg", 12),
    maxFrameLen = p.int("max_frame_len", 1518)
  )
}
