package offnic.board

import chisel3._
import chisel3.experimental.{Analog, attach}
import offnic.{Elaboratable, Params}

/** The Cisco Nexus K3P-Q (xcku3p-ffvb676-2-e) board top. Its ports are exactly the board's
  * pins in constraints/k3pq/board.toml (tests/board checks it), wired to:
  *  - PCIe Gen3 x8 (quad 225, 100 MHz refclk, PERST#) -> [[PcieEndpoint]] -> NIC;
  *  - QSFP0 lane 0 and QSFP1 lane 0 at 25GBASE-R (quads 226/227, 161.13 MHz refclk) ->
  *    [[EthTransceivers]] -> PCS and rate adapters -> NIC ports 0 and 1;
  *  - fabric clocks from the QSFP reference clock's ODIV2 (BUFG_GT -> MMCM), as the board's
  *    reference design does: there is no other free oscillator the fabric can use (the
  *    DDR4 clock belongs to the DDR4 controller);
  *  - DDR4 (9 x8 components, 72 bits) -> [[Ddr4DramTier]] -> the payload cache's DRAM tier;
  *  - QSFP control: ModSelL low (always selected, as the reference design), ResetL held
  *    low for ~1 ms after the clocks lock then released ([[PowerUp]]), LPMode low (high
  *    power); ModPrsL and IntL are read by nothing yet; the I2C buses (both modules and the
  *    MAC-address EEPROM) are released (high impedance): no I2C master in this build;
  *  - LEDs (active high, facts §6): green = link (block lock), orange = activity.
  */
class K3pqTop(p: Params) extends RawModule {
  override def desiredName = "offnic_k3pq"
  val pcie_refclk_p = IO(Input(Bool()))
  val pcie_refclk_n = IO(Input(Bool()))
  val pcie_reset_n = IO(Input(Bool()))
  val pcie_rx_p = IO(Input(UInt(8.W)))
  val pcie_rx_n = IO(Input(UInt(8.W)))
  val pcie_tx_p = IO(Output(UInt(8.W)))
  val pcie_tx_n = IO(Output(UInt(8.W)))
  val qsfp_mgt_refclk_p = IO(Input(Bool()))
  val qsfp_mgt_refclk_n = IO(Input(Bool()))
  val eth_rx_p = IO(Input(UInt(2.W)))
  val eth_rx_n = IO(Input(UInt(2.W)))
  val eth_tx_p = IO(Output(UInt(2.W)))
  val eth_tx_n = IO(Output(UInt(2.W)))
  val qsfp_modsel_n = IO(Output(UInt(2.W)))
  val qsfp_reset_n = IO(Output(UInt(2.W)))
  val qsfp_lpmode = IO(Output(UInt(2.W)))
  val qsfp_present_n = IO(Input(UInt(2.W)))
  val qsfp_int_n = IO(Input(UInt(2.W)))
  val qsfp_i2c_scl = IO(Analog(2.W))
  val qsfp_i2c_sda = IO(Analog(2.W))
  val eeprom_i2c_scl = IO(Analog(1.W))
  val eeprom_i2c_sda = IO(Analog(1.W))
  val led_link = IO(Output(UInt(2.W)))
  val led_activity = IO(Output(UInt(2.W)))
  val clk_ddr4_p = IO(Input(Bool()))
  val clk_ddr4_n = IO(Input(Bool()))
  val ddr4_adr = IO(Output(UInt(17.W)))
  val ddr4_ba = IO(Output(UInt(2.W)))
  val ddr4_bg = IO(Output(UInt(2.W)))
  val ddr4_ck_t = IO(Output(Bool()))
  val ddr4_ck_c = IO(Output(Bool()))
  val ddr4_cke = IO(Output(Bool()))
  val ddr4_cs_n = IO(Output(Bool()))
  val ddr4_act_n = IO(Output(Bool()))
  val ddr4_odt = IO(Output(Bool()))
  val ddr4_reset_n = IO(Output(Bool()))
  val ddr4_dq = IO(Analog(72.W))
  val ddr4_dqs_t = IO(Analog(9.W))
  val ddr4_dqs_c = IO(Analog(9.W))
  val ddr4_dm_dbi_n = IO(Analog(9.W))

  private val core = Module(new BoardCore(p, BoardClocks.from161(), clockFromGtRefclk = true))
  core.pcie_refclk_p := pcie_refclk_p
  core.pcie_refclk_n := pcie_refclk_n
  core.pcie_reset_n := pcie_reset_n
  core.pcie_rx_p := pcie_rx_p
  core.pcie_rx_n := pcie_rx_n
  pcie_tx_p := core.pcie_tx_p
  pcie_tx_n := core.pcie_tx_n
  core.eth_refclk_p := qsfp_mgt_refclk_p
  core.eth_refclk_n := qsfp_mgt_refclk_n
  core.eth_rx_p := eth_rx_p
  core.eth_rx_n := eth_rx_n
  eth_tx_p := core.eth_tx_p
  eth_tx_n := core.eth_tx_n
  core.sys_clk := false.B.asClock // unused: the MMCM runs from the QSFP reference clock
  core.sys_clk_rst := false.B
  led_link := core.led_link
  led_activity := core.led_activity

  private val dram = Module(new Ddr4DramTier(core.np.cache.dramAddrBits))
  dram.core_clk := core.core_clk
  dram.core_rst := core.core_rst
  dram.sys_rst := core.freerun_rst
  dram.s_axi <> core.m_axi
  dram.clk_ddr4_p := clk_ddr4_p
  dram.clk_ddr4_n := clk_ddr4_n
  ddr4_adr := dram.ddr4_adr
  ddr4_ba := dram.ddr4_ba
  ddr4_bg := dram.ddr4_bg
  ddr4_ck_t := dram.ddr4_ck_t
  ddr4_ck_c := dram.ddr4_ck_c
  ddr4_cke := dram.ddr4_cke
  ddr4_cs_n := dram.ddr4_cs_n
  ddr4_act_n := dram.ddr4_act_n
  ddr4_odt := dram.ddr4_odt
  ddr4_reset_n := dram.ddr4_reset_n
  attach(ddr4_dq, dram.ddr4_dq)
  attach(ddr4_dqs_t, dram.ddr4_dqs_t)
  attach(ddr4_dqs_c, dram.ddr4_dqs_c)

  private val power = withClockAndReset(core.freerun_clk, core.freerun_rst) { Module(new PowerUp) }
  qsfp_modsel_n := 0.U
  qsfp_reset_n := Mux(power.release, 3.U, 0.U)
  qsfp_lpmode := 0.U
  for (pin <- Seq(qsfp_i2c_scl, qsfp_i2c_sda, eeprom_i2c_scl, eeprom_i2c_sda)) I2cPins.release(pin)
}

object K3pqTop extends Elaboratable {
  /** The NIC's parameters (nic.Nic's), plus `ber_window_cycles` (50354: 125 us at 25G). */
  def generate(p: Params): RawModule = new K3pqTop(p)
}

/** Open-drain pins with no master in this build: released (high impedance, pulled up). */
object I2cPins {
  def release(pin: Analog): Unit = {
    val w = pin.getWidth
    val b = Module(new IobufArray(w))
    BlackBoxStubs.cell("IOBUF", "module IOBUF (inout IO, input I, input T, output O);\n  assign IO = T ? 1'bz : I;\n  assign O = IO;\nendmodule\n")
    attach(b.io.pad, pin)
    b.io.i := 0.U
    b.io.t := ((BigInt(1) << w) - 1).U
  }
}
