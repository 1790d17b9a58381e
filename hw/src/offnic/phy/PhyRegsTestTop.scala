package offnic.phy

import chisel3._
import offnic.{Elaboratable, Params}
import offnic.regs.{AxiLiteIO, AxilRegBridge, RegBus}

/** A board port's PHY with its pcs register block as the board tops build them ([[BaseRPhy]]
  * and [[PhyPortRegs]]), the registers behind AXI-Lite in this module's clock (the core
  * clock), the PHY in its three: the bench of the crossings (tests/phy/test_phy_regs.py).
  * The PHY's ports are BaseRPhy's; `status_*` are its RX levels (in `rx_clk`) and
  * `tx_adapter_*`/`rx_adapter_*` the rate adapters' own counters (each in its clock), for
  * the bench to compare the registers with.
  */
class PhyRegsTestTop(berWindowCycles: Int, addrBits: Int) extends Module {
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
  val status_rx_block_lock = IO(Output(Bool()))
  val status_rx_hi_ber = IO(Output(Bool()))
  val tx_adapter = IO(Output(new RateAdapterStats))
  val rx_adapter = IO(Output(new RateAdapterStats))
  val s_axil = IO(Flipped(new AxiLiteIO(addrBits)))

  private val phy = Module(new BaseRPhy(berWindowCycles))
  phy.mac_clk := mac_clk
  phy.mac_tx_rst := mac_tx_rst
  phy.mac_rx_rst := mac_rx_rst
  phy.xgmii_txd := xgmii_txd
  phy.xgmii_txc := xgmii_txc
  xgmii_rxd := phy.xgmii_rxd
  xgmii_rxc := phy.xgmii_rxc
  phy.tx_clk := tx_clk
  phy.tx_rst := tx_rst
  serdes_tx_data := phy.serdes_tx_data
  phy.rx_clk := rx_clk
  phy.rx_rst := rx_rst
  phy.serdes_rx_data := serdes_rx_data
  status_rx_block_lock := phy.status.rx_block_lock
  status_rx_hi_ber := phy.status.rx_hi_ber
  tx_adapter := phy.tx_adapter
  rx_adapter := phy.rx_adapter

  private val bridge = Module(new AxilRegBridge(addrBits))
  private val regs = Module(new PhyPortRegs(0, 0, 0, addrBits))
  bridge.s_axil <> s_axil
  RegBus.fanOut(bridge.reg, Seq(regs.bus))
  regs.attach(phy, mac_clk, mac_tx_rst, mac_rx_rst, tx_clk, tx_rst, rx_clk, rx_rst)
}

object PhyRegsTestTop extends Elaboratable {
  /** `ber_window_cycles` (the BER monitor's window in RX clock cycles; 50354: 125 us at
    * 402.83 MHz), `addr_bits` (8). */
  def generate(p: Params): RawModule = new PhyRegsTestTop(p.int("ber_window_cycles", 50354), p.int("addr_bits", 8))
}
