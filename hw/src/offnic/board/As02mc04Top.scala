package offnic.board

import chisel3._
import chisel3.experimental.Analog
import chisel3.util._
import offnic.{Elaboratable, Params}

/** The Alibaba AS02MC04 (xcku3p-ffvb676-1-e) board top. Its ports are exactly the board's
  * pins in constraints/as02mc04/board.toml (tests/board checks it), wired to:
  *  - PCIe Gen3 x8 (quad 225, 100 MHz refclk on MGTREFCLK1, PERST#) -> NIC;
  *  - SFP0 and SFP1 at 25GBASE-R (quad 227 channels 3 and 2, 156.25 MHz refclk) -> NIC
  *    ports 0 and 1;
  *  - fabric clocks from the 100 MHz oscillator (LVDS, IBUFDS -> MMCM); the button (SW1,
  *    low = pressed) resets that MMCM, and with it everything but the PCIe IP;
  *  - no DRAM (facts §5): the payload cache keeps its on-chip tier only (the board's
  *    configuration sets `cache_dram_mib = 0`); the NIC's DRAM port is tied off;
  *  - SFP status pins (present, TX fault, LOS) are read by nothing yet; TX disable and
  *    rate select have no known pin (facts §11); the SFP and FRU I2C buses are released;
  *  - LEDs, active low (to confirm, facts §6): link and activity per cage, a heartbeat
  *    (about 1 Hz from the free-running clock: the FPGA is configured and clocked).
  */
class As02mc04Top(p: Params) extends RawModule {
  override def desiredName = "offnic_as02mc04"
  val pcie_refclk_p = IO(Input(Bool()))
  val pcie_refclk_n = IO(Input(Bool()))
  val pcie_reset_n = IO(Input(Bool()))
  val pcie_rx_p = IO(Input(UInt(8.W)))
  val pcie_rx_n = IO(Input(UInt(8.W)))
  val pcie_tx_p = IO(Output(UInt(8.W)))
  val pcie_tx_n = IO(Output(UInt(8.W)))
  val sfp_mgt_refclk_p = IO(Input(Bool()))
  val sfp_mgt_refclk_n = IO(Input(Bool()))
  val eth_rx_p = IO(Input(UInt(2.W)))
  val eth_rx_n = IO(Input(UInt(2.W)))
  val eth_tx_p = IO(Output(UInt(2.W)))
  val eth_tx_n = IO(Output(UInt(2.W)))
  val sfp_present_n = IO(Input(UInt(2.W)))
  val sfp_tx_fault = IO(Input(UInt(2.W)))
  val sfp_los = IO(Input(UInt(2.W)))
  val sfp_i2c_scl = IO(Analog(2.W))
  val sfp_i2c_sda = IO(Analog(2.W))
  val fru_i2c_scl = IO(Analog(1.W))
  val fru_i2c_sda = IO(Analog(1.W))
  val clk_100mhz_p = IO(Input(Bool()))
  val clk_100mhz_n = IO(Input(Bool()))
  val button_reset_n = IO(Input(Bool()))
  val led_link_n = IO(Output(UInt(2.W)))
  val led_activity_n = IO(Output(UInt(2.W)))
  val led_heartbeat_n = IO(Output(Bool()))

  require(p.int("cache_dram_mib", 16) == 0, "the AS02MC04 has no DRAM: build it with cache_dram_mib = 0")

  private val osc = BlackBoxStubs.record(Module(new IBUFDS), cell = true)
  osc.io.I := clk_100mhz_p
  osc.io.IB := clk_100mhz_n

  // Port 0 (SFP0) is channel X0Y15, the core's second (EthTransceivers).
  private val core = Module(new BoardCore(p, BoardClocks.from100(), clockFromGtRefclk = false, gtChannelOf = Seq(1, 0)))
  core.pcie_refclk_p := pcie_refclk_p
  core.pcie_refclk_n := pcie_refclk_n
  core.pcie_reset_n := pcie_reset_n
  core.pcie_rx_p := pcie_rx_p
  core.pcie_rx_n := pcie_rx_n
  pcie_tx_p := core.pcie_tx_p
  pcie_tx_n := core.pcie_tx_n
  core.eth_refclk_p := sfp_mgt_refclk_p
  core.eth_refclk_n := sfp_mgt_refclk_n
  core.eth_rx_p := eth_rx_p
  core.eth_rx_n := eth_rx_n
  eth_tx_p := core.eth_tx_p
  eth_tx_n := core.eth_tx_n
  core.sys_clk := osc.io.O.asClock
  core.sys_clk_rst := !button_reset_n
  led_link_n := ~core.led_link
  led_activity_n := ~core.led_activity

  // No DRAM tier: nothing answers, and nothing asks (a DRAM-tier offset is a range error).
  core.m_axi.awready := false.B
  core.m_axi.wready := false.B
  core.m_axi.bid := 0.U
  core.m_axi.bresp := 0.U
  core.m_axi.bvalid := false.B
  core.m_axi.arready := false.B
  core.m_axi.rid := 0.U
  core.m_axi.rdata := 0.U
  core.m_axi.rresp := 0.U
  core.m_axi.rlast := false.B
  core.m_axi.rvalid := false.B

  led_heartbeat_n := withClockAndReset(core.freerun_clk, core.freerun_rst) {
    val n = RegInit(0.U(27.W)) // 2^26 cycles of 125 MHz each half: 0.93 Hz
    n := n + 1.U
    RegNext(!n(26), true.B)
  }
  for (pin <- Seq(sfp_i2c_scl, sfp_i2c_sda, fru_i2c_scl, fru_i2c_sda)) I2cPins.release(pin)
}

object As02mc04Top extends Elaboratable {
  /** The NIC's parameters (nic.Nic's; `cache_dram_mib` must be 0), plus `ber_window_cycles`. */
  def generate(p: Params): RawModule = new As02mc04Top(p)
}
