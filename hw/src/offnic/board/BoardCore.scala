package offnic.board

import chisel3._
import offnic.Params
import offnic.axi.Axi4IO
import offnic.cpu.ControlProcessor
import offnic.nic.{Nic, NicParams}
import offnic.phy.{BaseRPhy, PhyPortRegs}
import offnic.regs.{DeviceRegs, RegBus, RegMap}

/** What both boards share: the PCIe endpoint, the NIC core (unchanged), two Ethernet lanes
  * (transceivers, PCS, rate adapters), the fabric clocks and resets, the port LEDs. The
  * board tops (K3pqTop, As02mc04Top) add their pins, their clock source and the DRAM tier.
  * Each port's PCS status and counters are a pcs register block (PhyPortRegs) at the end of
  * the NIC's chain (Nic's `outerBlocks`), crossed into the core clock.
  *
  * Clock domains:
  *  - `user_clk` 250 MHz (PCIe IP): the NIC core;
  *  - `mac_clk` 390.625 MHz (BoardClocks): both MACs;
  *  - the transceivers' TX user clock (402.83 MHz, both lanes) and each lane's RX user
  *    clock (recovered): the PCS halves;
  *  - `freerun_clk` 125 MHz (BoardClocks): the transceivers' reset controller, power-up timers.
  * Resets, each asserted asynchronously and released in step with its clock (ResetSync):
  *  - core and MAC domains from one source, `user_reset` (link down, PERST#) or the MMCM
  *    unlocked, so the NIC's MAC-to-core FIFOs are reset on both sides together;
  *  - each lane's TX path (MAC side and TX user clock side) from "TX not ready or MMCM
  *    unlocked"; its RX path (RX user clock side and MAC side) from "RX not ready or MMCM
  *    unlocked": the rate adapters' two sides together.
  */
class BoardCore(p: Params, clocks: => BoardClocks, clockFromGtRefclk: Boolean, gtChannelOf: Seq[Int] = Seq(0, 1))
    extends RawModule {
  val pcie_refclk_p = IO(Input(Bool()))
  val pcie_refclk_n = IO(Input(Bool()))
  val pcie_reset_n = IO(Input(Bool()))
  val pcie_rx_p = IO(Input(UInt(8.W)))
  val pcie_rx_n = IO(Input(UInt(8.W)))
  val pcie_tx_p = IO(Output(UInt(8.W)))
  val pcie_tx_n = IO(Output(UInt(8.W)))
  val eth_refclk_p = IO(Input(Bool()))
  val eth_refclk_n = IO(Input(Bool()))
  val eth_rx_p = IO(Input(UInt(2.W)))
  val eth_rx_n = IO(Input(UInt(2.W)))
  val eth_tx_p = IO(Output(UInt(2.W)))
  val eth_tx_n = IO(Output(UInt(2.W)))
  /** The MMCM's input when it is not the Ethernet reference clock, and its reset. */
  val sys_clk = IO(Input(Clock()))
  val sys_clk_rst = IO(Input(Bool()))
  val freerun_clk = IO(Output(Clock()))
  val freerun_rst = IO(Output(Bool()))
  val led_link = IO(Output(UInt(2.W)))
  val led_activity = IO(Output(UInt(2.W)))
  /** The payload cache's DRAM tier, in `core_clk` with `core_rst`. */
  val core_clk = IO(Output(Clock()))
  val core_rst = IO(Output(Bool()))
  val np = NicParams.from(p)
  val m_axi = IO(new Axi4IO(np.cache.dramAddrBits, 2))

  private val berWindow = p.int("ber_window_cycles", 50354) // 125 us at 402.83 MHz (25GBASE-R)

  private val pcie = Module(new PcieEndpoint)
  pcie.refclk_p := pcie_refclk_p
  pcie.refclk_n := pcie_refclk_n
  pcie.perst_n := pcie_reset_n
  pcie.rx_p := pcie_rx_p
  pcie.rx_n := pcie_rx_n
  pcie_tx_p := pcie.tx_p
  pcie_tx_n := pcie.tx_n

  private val gt = Module(new EthTransceivers(2, gtChannelOf))
  gt.refclk_p := eth_refclk_p
  gt.refclk_n := eth_refclk_n
  gt.rx_p := eth_rx_p
  gt.rx_n := eth_rx_n
  eth_tx_p := gt.tx_p
  eth_tx_n := gt.tx_n

  private val clk = Module(clocks)
  clk.clk_in := (if (clockFromGtRefclk) gt.refclk_fabric else sys_clk)
  clk.rst := sys_clk_rst
  gt.freerun_clk := clk.freerun_clk
  gt.freerun_ok := clk.locked
  freerun_clk := clk.freerun_clk
  freerun_rst := ResetSync(clk.freerun_clk, !clk.locked)

  private val macClk = clk.mac_clk
  private val coreSrc = pcie.user_reset || !clk.locked
  private val coreRst = ResetSync(pcie.user_clk, coreSrc)
  private val macRst = ResetSync(macClk, coreSrc)
  core_clk := pcie.user_clk
  core_rst := coreRst

  private val cpu = if (p.bool("cpu", true)) Some(ControlProcessor.params(p)) else None
  private val mbps = Seq(p.int("port0_mbps", 25000), p.int("port1_mbps", 25000))
  require(mbps.forall(_ == 25000), "board tops run both ports at 25G (BoardClocks makes only the 25G MAC clock)")
  private val nic = withClockAndReset(pcie.user_clk, coreRst) {
    Module(new Nic(DeviceRegs.params(p), np, mbps, cpu, Seq.fill(2)(RegMap.Pcs)))
  }
  nic.s_axis_cq <> pcie.m_axis_cq
  pcie.s_axis_cc <> nic.m_axis_cc
  pcie.s_axis_rq <> nic.m_axis_rq
  nic.s_axis_rc <> pcie.m_axis_rc
  nic.cfg_max_payload := pcie.cfg_max_payload
  nic.cfg_max_read_req := pcie.cfg_max_read_req
  m_axi <> nic.m_axi

  private val txSrc = !gt.tx_ready || !clk.locked
  private val rxSrc = !gt.rx_ready || !clk.locked
  private val links = Seq.tabulate(2) { i =>
    val phy = Module(new BaseRPhy(berWindow))
    val (macTxRst, macRxRst) = (ResetSync(macClk, txSrc), ResetSync(macClk, rxSrc))
    val (txRst, rxRst) = (ResetSync(gt.tx_clk, txSrc), ResetSync(gt.rx_clk(i), rxSrc))
    phy.mac_clk := macClk
    phy.mac_tx_rst := macTxRst
    phy.mac_rx_rst := macRxRst
    phy.tx_clk := gt.tx_clk
    phy.tx_rst := txRst
    phy.rx_clk := gt.rx_clk(i)
    phy.rx_rst := rxRst
    // The port's pcs block, in the core clock at the place the NIC's chain left for it.
    val (base, next) = nic.outerPlaces(i)
    val regs = withClockAndReset(pcie.user_clk, coreRst) {
      Module(new PhyPortRegs(i, base, next, DeviceRegs.params(p).addrBits))
    }
    regs.attach(phy, macClk, macTxRst, macRxRst, gt.tx_clk, txRst, gt.rx_clk(i), rxRst)
    gt.tx_data(i) := phy.serdes_tx_data
    phy.serdes_rx_data := gt.rx_data(i)
    nic.port_mac_clk(i) := macClk
    nic.port_mac_rst(i) := macRst
    phy.xgmii_txd := nic.port_xgmii_txd(i)
    phy.xgmii_txc := nic.port_xgmii_txc(i)
    nic.port_xgmii_rxd(i) := phy.xgmii_rxd
    nic.port_xgmii_rxc(i) := phy.xgmii_rxc

    val leds = withClockAndReset(macClk, macRst) { Module(new StatusLeds) }
    leds.link_in := phy.status.rx_block_lock && !phy.status.rx_hi_ber
    leds.tx_c := nic.port_xgmii_txc(i)
    leds.rx_c := phy.xgmii_rxc
    (leds.led_link, leds.led_activity, regs.bus)
  }
  led_link := VecInit(links.map(_._1)).asUInt
  led_activity := VecInit(links.map(_._2)).asUInt
  RegBus.fanOut(nic.outer_reg.get, links.map(_._3))
}
