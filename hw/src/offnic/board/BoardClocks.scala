package offnic.board

import chisel3._

/** The fabric clocks that do not come from the PCIe IP or the transceivers, from one MMCM:
  *  - `freerun_clk`, 125 MHz: the transceivers' reset controller and DRP, power-up timers;
  *  - `mac_clk`, 390.625 MHz: both MACs at 25G (64 bits a cycle = 25 Gb/s exactly). The
  *    MAC has no clock enable, so it runs on a clock of its own at the XGMII word rate and
  *    the rate adapters in [[offnic.phy.BaseRPhy]] meet the transceiver's 402.83 MHz user
  *    clock (32 words in 33).
  * The VCO is 1171.875 MHz for both boards (CLKOUT0 / 9.375 = 125, CLKOUT1 / 3 = 390.625):
  * from 161.1328125 MHz (the K3P-Q's QSFP reference clock) x 80 / 11, or from 100 MHz (the
  * AS02MC04's oscillator) x 93.75 / 8. `rst`: asynchronous, high; `locked` is asynchronous
  * to everything (synchronise before use).
  */
class BoardClocks(inPeriodNs: Double, mult: Double, divclk: Int) extends RawModule {
  val clk_in = IO(Input(Clock()))
  val rst = IO(Input(Bool()))
  val freerun_clk = IO(Output(Clock()))
  val mac_clk = IO(Output(Clock()))
  val locked = IO(Output(Bool()))

  private val vcoMhz = 1000.0 / inPeriodNs * mult / divclk
  require(math.abs(vcoMhz - 1171.875) < 0.01, s"VCO $vcoMhz MHz, want 1171.875")
  require(1000.0 / inPeriodNs / divclk >= 10.0, "MMCM phase detector below 10 MHz")

  private val mmcm = BlackBoxStubs.record(Module(new MMCME4_BASE(inPeriodNs, mult, divclk, 9.375, 3)), cell = true)
  private val fbBuf = BlackBoxStubs.record(Module(new BUFG), cell = true)
  private val freeBuf = BlackBoxStubs.record(Module(new BUFG), cell = true)
  private val macBuf = BlackBoxStubs.record(Module(new BUFG), cell = true)
  mmcm.io.CLKIN1 := clk_in
  mmcm.io.RST := rst
  mmcm.io.PWRDWN := false.B
  fbBuf.io.I := mmcm.io.CLKFBOUT
  mmcm.io.CLKFBIN := fbBuf.io.O
  freeBuf.io.I := mmcm.io.CLKOUT0
  macBuf.io.I := mmcm.io.CLKOUT1
  freerun_clk := freeBuf.io.O
  mac_clk := macBuf.io.O
  locked := mmcm.io.LOCKED
}

object BoardClocks {
  /** From 161.1328125 MHz (6.206 ns as constrained; the MMCM takes the exact period). */
  def from161(): BoardClocks = new BoardClocks(1000.0 / 161.1328125, 80.0, 11)
  /** From 100 MHz. */
  def from100(): BoardClocks = new BoardClocks(10.0, 93.75, 8)
}
