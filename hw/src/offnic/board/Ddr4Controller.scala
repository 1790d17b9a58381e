package offnic.board

import chisel3._
import chisel3.experimental.Analog

/** AXI4 with the DDR4 controller's names (`c0_ddr4_s_axi_*`), 512-bit, 8-bit IDs. */
class Ddr4AxiPorts(addrBits: Int) extends Bundle {
  val c0_ddr4_s_axi_awid = Input(UInt(8.W))
  val c0_ddr4_s_axi_awaddr = Input(UInt(addrBits.W))
  val c0_ddr4_s_axi_awlen = Input(UInt(8.W))
  val c0_ddr4_s_axi_awsize = Input(UInt(3.W))
  val c0_ddr4_s_axi_awburst = Input(UInt(2.W))
  val c0_ddr4_s_axi_awlock = Input(UInt(1.W))
  val c0_ddr4_s_axi_awcache = Input(UInt(4.W))
  val c0_ddr4_s_axi_awprot = Input(UInt(3.W))
  val c0_ddr4_s_axi_awqos = Input(UInt(4.W))
  val c0_ddr4_s_axi_awvalid = Input(Bool())
  val c0_ddr4_s_axi_awready = Output(Bool())
  val c0_ddr4_s_axi_wdata = Input(UInt(512.W))
  val c0_ddr4_s_axi_wstrb = Input(UInt(64.W))
  val c0_ddr4_s_axi_wlast = Input(Bool())
  val c0_ddr4_s_axi_wvalid = Input(Bool())
  val c0_ddr4_s_axi_wready = Output(Bool())
  val c0_ddr4_s_axi_bid = Output(UInt(8.W))
  val c0_ddr4_s_axi_bresp = Output(UInt(2.W))
  val c0_ddr4_s_axi_bvalid = Output(Bool())
  val c0_ddr4_s_axi_bready = Input(Bool())
  val c0_ddr4_s_axi_arid = Input(UInt(8.W))
  val c0_ddr4_s_axi_araddr = Input(UInt(addrBits.W))
  val c0_ddr4_s_axi_arlen = Input(UInt(8.W))
  val c0_ddr4_s_axi_arsize = Input(UInt(3.W))
  val c0_ddr4_s_axi_arburst = Input(UInt(2.W))
  val c0_ddr4_s_axi_arlock = Input(UInt(1.W))
  val c0_ddr4_s_axi_arcache = Input(UInt(4.W))
  val c0_ddr4_s_axi_arprot = Input(UInt(3.W))
  val c0_ddr4_s_axi_arqos = Input(UInt(4.W))
  val c0_ddr4_s_axi_arvalid = Input(Bool())
  val c0_ddr4_s_axi_arready = Output(Bool())
  val c0_ddr4_s_axi_rid = Output(UInt(8.W))
  val c0_ddr4_s_axi_rdata = Output(UInt(512.W))
  val c0_ddr4_s_axi_rresp = Output(UInt(2.W))
  val c0_ddr4_s_axi_rlast = Output(Bool())
  val c0_ddr4_s_axi_rvalid = Output(Bool())
  val c0_ddr4_s_axi_rready = Input(Bool())
}

/** The K3P-Q's DDR4 controller as Vivado generates it from constraints/k3pq/ip.tcl (`ddr4`,
  * module `ddr4_0`: nine x8 MT40A1G8SA-075 components, 72 bits, AXI4 512-bit with 8-bit
  * IDs, NO_DM_NO_DBI so the IP has no data-mask port: the board's dm_dbi_n pins stay
  * parked). Ports as PG150 (UltraScale Memory IP) names them. `c0_ddr4_ui_clk` is the AXI
  * clock (tCK 825 ps, 4:1: 303 MHz) with its synchronous reset. The address is 34 bits
  * (8 GiB of data; the ECC byte lane is the controller's). Not checked against a
  * generated template here (no Vivado).
  */
class Ddr4Controller(addrBits: Int = 34) extends ExtModule {
  override def desiredName = "ddr4_0"
  val io = FlatIO(new Ddr4AxiPorts(addrBits) {
    val sys_rst = Input(Bool())
    val c0_sys_clk_p = Input(Bool())
    val c0_sys_clk_n = Input(Bool())
    val c0_init_calib_complete = Output(Bool())
    val c0_ddr4_ui_clk = Output(Clock())
    val c0_ddr4_ui_clk_sync_rst = Output(Bool())
    val c0_ddr4_aresetn = Input(Bool())
    val c0_ddr4_adr = Output(UInt(17.W))
    val c0_ddr4_ba = Output(UInt(2.W))
    val c0_ddr4_bg = Output(UInt(2.W))
    val c0_ddr4_act_n = Output(Bool())
    val c0_ddr4_cke = Output(UInt(1.W))
    val c0_ddr4_cs_n = Output(UInt(1.W))
    val c0_ddr4_odt = Output(UInt(1.W))
    val c0_ddr4_ck_t = Output(UInt(1.W))
    val c0_ddr4_ck_c = Output(UInt(1.W))
    val c0_ddr4_reset_n = Output(Bool())
    val c0_ddr4_dq = Analog(72.W)
    val c0_ddr4_dqs_t = Analog(9.W)
    val c0_ddr4_dqs_c = Analog(9.W)
    val dbg_clk = Output(Clock())
    val dbg_bus = Output(UInt(512.W))
  })
}
