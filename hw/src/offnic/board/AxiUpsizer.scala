package offnic.board

import chisel3._

/** The payload cache's DRAM-tier port (256-bit AXI4 in the NIC's 250 MHz clock) onto the
  * DDR4 controller's 512-bit port in its own clock: Vivado's AXI data width converter
  * (`axi_dwidth_converter`, module `axi_dram_upsizer`, constraints/k3pq/ip.tcl: upsizer
  * with an asynchronous packet FIFO, ACLK_ASYNC). Ports as PG059 (AXI Interconnect, the
  * data width converter) names them; the master side's names are the controller's
  * `Ddr4AxiPorts` with `m_axi_` for `c0_ddr4_s_axi_`. Not checked against a generated
  * template here (no Vivado).
  */
class AxiUpsizer(addrBits: Int = 34, idBits: Int = 8) extends ExtModule {
  override def desiredName = "axi_dram_upsizer"
  val io = FlatIO(new Bundle {
    val s_axi_aclk = Input(Clock())
    val s_axi_aresetn = Input(Bool())
    val m_axi_aclk = Input(Clock())
    val m_axi_aresetn = Input(Bool())
    val s_axi_awid = Input(UInt(idBits.W))
    val s_axi_awaddr = Input(UInt(addrBits.W))
    val s_axi_awlen = Input(UInt(8.W))
    val s_axi_awsize = Input(UInt(3.W))
    val s_axi_awburst = Input(UInt(2.W))
    val s_axi_awvalid = Input(Bool())
    val s_axi_awready = Output(Bool())
    val s_axi_wdata = Input(UInt(256.W))
    val s_axi_wstrb = Input(UInt(32.W))
    val s_axi_wlast = Input(Bool())
    val s_axi_wvalid = Input(Bool())
    val s_axi_wready = Output(Bool())
    val s_axi_bid = Output(UInt(idBits.W))
    val s_axi_bresp = Output(UInt(2.W))
    val s_axi_bvalid = Output(Bool())
    val s_axi_bready = Input(Bool())
    val s_axi_arid = Input(UInt(idBits.W))
    val s_axi_araddr = Input(UInt(addrBits.W))
    val s_axi_arlen = Input(UInt(8.W))
    val s_axi_arsize = Input(UInt(3.W))
    val s_axi_arburst = Input(UInt(2.W))
    val s_axi_arvalid = Input(Bool())
    val s_axi_arready = Output(Bool())
    val s_axi_rid = Output(UInt(idBits.W))
    val s_axi_rdata = Output(UInt(256.W))
    val s_axi_rresp = Output(UInt(2.W))
    val s_axi_rlast = Output(Bool())
    val s_axi_rvalid = Output(Bool())
    val s_axi_rready = Input(Bool())
    val m_axi_awaddr = Output(UInt(addrBits.W))
    val m_axi_awlen = Output(UInt(8.W))
    val m_axi_awsize = Output(UInt(3.W))
    val m_axi_awburst = Output(UInt(2.W))
    val m_axi_awvalid = Output(Bool())
    val m_axi_awready = Input(Bool())
    val m_axi_wdata = Output(UInt(512.W))
    val m_axi_wstrb = Output(UInt(64.W))
    val m_axi_wlast = Output(Bool())
    val m_axi_wvalid = Output(Bool())
    val m_axi_wready = Input(Bool())
    val m_axi_bresp = Input(UInt(2.W))
    val m_axi_bvalid = Input(Bool())
    val m_axi_bready = Output(Bool())
    val m_axi_araddr = Output(UInt(addrBits.W))
    val m_axi_arlen = Output(UInt(8.W))
    val m_axi_arsize = Output(UInt(3.W))
    val m_axi_arburst = Output(UInt(2.W))
    val m_axi_arvalid = Output(Bool())
    val m_axi_arready = Input(Bool())
    val m_axi_rdata = Input(UInt(512.W))
    val m_axi_rresp = Input(UInt(2.W))
    val m_axi_rlast = Input(Bool())
    val m_axi_rvalid = Input(Bool())
    val m_axi_rready = Output(Bool())
  })
}
