package offnic.board

import chisel3._
import chisel3.experimental.{Analog, attach}
import offnic.axi.Axi4IO

/** The payload cache's DRAM tier on the K3P-Q: the NIC's 256-bit AXI4 port (core clock)
  * through [[AxiUpsizer]] (clock crossing and 256 -> 512 bits) to the DDR4 controller
  * ([[Ddr4Controller]]), whose pins are the board's `ddr4_*`. The controller calibrates
  * after `sys_rst` falls; until `c0_init_calib_complete` its AXI port does not answer, and
  * the cache's requests wait (a read of the DRAM tier before calibration is only late).
  * `ddr4_dm_dbi_n`: the controller is built without data mask (NO_DM_NO_DBI), so the pins
  * are left undriven (their pull-ups from the bitstream's unused-pin setting).
  */
class Ddr4DramTier(addrBits: Int) extends RawModule {
  val core_clk = IO(Input(Clock()))
  val core_rst = IO(Input(Bool()))
  val sys_rst = IO(Input(Bool()))
  val s_axi = IO(Flipped(new Axi4IO(addrBits, 2)))
  val calib_done = IO(Output(Bool()))
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

  private val mc = BlackBoxStubs.record(Module(new Ddr4Controller(addrBits))).io
  mc.sys_rst := sys_rst
  mc.c0_sys_clk_p := clk_ddr4_p
  mc.c0_sys_clk_n := clk_ddr4_n
  ddr4_adr := mc.c0_ddr4_adr
  ddr4_ba := mc.c0_ddr4_ba
  ddr4_bg := mc.c0_ddr4_bg
  ddr4_ck_t := mc.c0_ddr4_ck_t(0)
  ddr4_ck_c := mc.c0_ddr4_ck_c(0)
  ddr4_cke := mc.c0_ddr4_cke(0)
  ddr4_cs_n := mc.c0_ddr4_cs_n(0)
  ddr4_act_n := mc.c0_ddr4_act_n
  ddr4_odt := mc.c0_ddr4_odt(0)
  ddr4_reset_n := mc.c0_ddr4_reset_n
  attach(ddr4_dq, mc.c0_ddr4_dq)
  attach(ddr4_dqs_t, mc.c0_ddr4_dqs_t)
  attach(ddr4_dqs_c, mc.c0_ddr4_dqs_c)
  calib_done := mc.c0_init_calib_complete

  private val uiRst = mc.c0_ddr4_ui_clk_sync_rst
  mc.c0_ddr4_aresetn := withClockAndReset(mc.c0_ddr4_ui_clk, uiRst) { RegNext(true.B, false.B) }

  private val up = BlackBoxStubs.record(Module(new AxiUpsizer(addrBits, 2))).io
  up.s_axi_aclk := core_clk
  up.s_axi_aresetn := !core_rst
  up.m_axi_aclk := mc.c0_ddr4_ui_clk
  up.m_axi_aresetn := mc.c0_ddr4_aresetn
  up.s_axi_awid := s_axi.awid
  up.s_axi_awaddr := s_axi.awaddr
  up.s_axi_awlen := s_axi.awlen
  up.s_axi_awsize := s_axi.awsize
  up.s_axi_awburst := s_axi.awburst
  up.s_axi_awvalid := s_axi.awvalid
  s_axi.awready := up.s_axi_awready
  up.s_axi_wdata := s_axi.wdata
  up.s_axi_wstrb := s_axi.wstrb
  up.s_axi_wlast := s_axi.wlast
  up.s_axi_wvalid := s_axi.wvalid
  s_axi.wready := up.s_axi_wready
  s_axi.bid := up.s_axi_bid
  s_axi.bresp := up.s_axi_bresp
  s_axi.bvalid := up.s_axi_bvalid
  up.s_axi_bready := s_axi.bready
  up.s_axi_arid := s_axi.arid
  up.s_axi_araddr := s_axi.araddr
  up.s_axi_arlen := s_axi.arlen
  up.s_axi_arsize := s_axi.arsize
  up.s_axi_arburst := s_axi.arburst
  up.s_axi_arvalid := s_axi.arvalid
  s_axi.arready := up.s_axi_arready
  s_axi.rid := up.s_axi_rid
  s_axi.rdata := up.s_axi_rdata
  s_axi.rresp := up.s_axi_rresp
  s_axi.rlast := up.s_axi_rlast
  s_axi.rvalid := up.s_axi_rvalid
  up.s_axi_rready := s_axi.rready

  mc.c0_ddr4_s_axi_awid := 0.U
  mc.c0_ddr4_s_axi_awaddr := up.m_axi_awaddr
  mc.c0_ddr4_s_axi_awlen := up.m_axi_awlen
  mc.c0_ddr4_s_axi_awsize := up.m_axi_awsize
  mc.c0_ddr4_s_axi_awburst := up.m_axi_awburst
  mc.c0_ddr4_s_axi_awlock := 0.U
  mc.c0_ddr4_s_axi_awcache := 3.U // bufferable, modifiable
  mc.c0_ddr4_s_axi_awprot := 0.U
  mc.c0_ddr4_s_axi_awqos := 0.U
  mc.c0_ddr4_s_axi_awvalid := up.m_axi_awvalid
  up.m_axi_awready := mc.c0_ddr4_s_axi_awready
  mc.c0_ddr4_s_axi_wdata := up.m_axi_wdata
  mc.c0_ddr4_s_axi_wstrb := up.m_axi_wstrb
  mc.c0_ddr4_s_axi_wlast := up.m_axi_wlast
  mc.c0_ddr4_s_axi_wvalid := up.m_axi_wvalid
  up.m_axi_wready := mc.c0_ddr4_s_axi_wready
  up.m_axi_bresp := mc.c0_ddr4_s_axi_bresp
  up.m_axi_bvalid := mc.c0_ddr4_s_axi_bvalid
  mc.c0_ddr4_s_axi_bready := up.m_axi_bready
  mc.c0_ddr4_s_axi_arid := 0.U
  mc.c0_ddr4_s_axi_araddr := up.m_axi_araddr
  mc.c0_ddr4_s_axi_arlen := up.m_axi_arlen
  mc.c0_ddr4_s_axi_arsize := up.m_axi_arsize
  mc.c0_ddr4_s_axi_arburst := up.m_axi_arburst
  mc.c0_ddr4_s_axi_arlock := 0.U
  mc.c0_ddr4_s_axi_arcache := 3.U
  mc.c0_ddr4_s_axi_arprot := 0.U
  mc.c0_ddr4_s_axi_arqos := 0.U
  mc.c0_ddr4_s_axi_arvalid := up.m_axi_arvalid
  up.m_axi_arready := mc.c0_ddr4_s_axi_arready
  up.m_axi_rdata := mc.c0_ddr4_s_axi_rdata
  up.m_axi_rresp := mc.c0_ddr4_s_axi_rresp
  up.m_axi_rlast := mc.c0_ddr4_s_axi_rlast
  up.m_axi_rvalid := mc.c0_ddr4_s_axi_rvalid
  mc.c0_ddr4_s_axi_rready := up.m_axi_rready
}
