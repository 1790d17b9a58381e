package offnic.phy

import chisel3._
import offnic.{Elaboratable, Params}
import offnic.regs.{AxiLiteIO, AxilRegBridge, RegBus}

/** [[BaseRPcs]] with its register block behind AXI-Lite, one clock: the top level for the
  * bench (tests/phy/test_pcs.py), lint and synthesis (hw/configs/phy.toml). The XGMII and
  * raw serdes ports are the PCS's; `status_*` mirror the levels the registers read.
  */
class PcsTestTop(val berWindowCycles: Int, val addrBits: Int) extends Module {
  val xgmii_txd = IO(Input(UInt(64.W)))
  val xgmii_txc = IO(Input(UInt(8.W)))
  val xgmii_tx_ready = IO(Output(Bool()))
  val xgmii_rxd = IO(Output(UInt(64.W)))
  val xgmii_rxc = IO(Output(UInt(8.W)))
  val xgmii_rx_valid = IO(Output(Bool()))
  val serdes_tx_data = IO(Output(UInt(64.W)))
  val serdes_rx_data = IO(Input(UInt(64.W)))
  val status_rx_block_lock = IO(Output(Bool()))
  val status_rx_hi_ber = IO(Output(Bool()))
  val s_axil = IO(Flipped(new AxiLiteIO(addrBits)))

  private val pcs = Module(new BaseRPcs(berWindowCycles))
  pcs.xgmii_txd := xgmii_txd
  pcs.xgmii_txc := xgmii_txc
  xgmii_tx_ready := pcs.xgmii_tx_ready
  xgmii_rxd := pcs.xgmii_rxd
  xgmii_rxc := pcs.xgmii_rxc
  xgmii_rx_valid := pcs.xgmii_rx_valid
  serdes_tx_data := pcs.serdes_tx_data
  pcs.serdes_rx_data := serdes_rx_data
  status_rx_block_lock := pcs.status.rx_block_lock
  status_rx_hi_ber := pcs.status.rx_hi_ber

  private val bridge = Module(new AxilRegBridge(addrBits))
  private val regs = Module(new PcsRegs(0, 0, addrBits))
  bridge.s_axil <> s_axil
  RegBus.fanOut(bridge.reg, Seq(regs.bus))
  regs.counters := PcsCounters.sameClock(pcs.status)
}

object PcsTestTop extends Elaboratable {
  /** `ber_window_cycles`: the BER monitor's window in PCS clock cycles (default 20142:
    * 125 us at 161.13 MHz, 10GBASE-R; 50354 for 25GBASE-R); `addr_bits` (8). */
  def generate(p: Params): RawModule = new PcsTestTop(p.int("ber_window_cycles", 20142), p.int("addr_bits", 8))
}
