package offnic.regs

import chisel3._

/** AXI4-Lite, 32-bit data, master's view. As `Flipped(...)` under the name `s_axil` it
  * maps onto cocotbext-axi's `AxiLiteBus.from_prefix(dut, "s_axil")`. PROT is not used.
  */
class AxiLiteIO(val addrBits: Int) extends Bundle {
  val awaddr = Output(UInt(addrBits.W))
  val awvalid = Output(Bool())
  val awready = Input(Bool())
  val wdata = Output(UInt(32.W))
  val wstrb = Output(UInt(4.W))
  val wvalid = Output(Bool())
  val wready = Input(Bool())
  val bresp = Input(UInt(2.W))
  val bvalid = Input(Bool())
  val bready = Output(Bool())
  val araddr = Output(UInt(addrBits.W))
  val arvalid = Output(Bool())
  val arready = Input(Bool())
  val rdata = Input(UInt(32.W))
  val rresp = Input(UInt(2.W))
  val rvalid = Input(Bool())
  val rready = Output(Bool())
}

object AxiLiteIO {
  val RespOkay = 0
  val RespSlvErr = 2
  val RespDecErr = 3
}
