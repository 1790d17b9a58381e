package offnic.regs

import chisel3._
import chisel3.util._

/** AXI-Lite slave to RegBus master. One access at a time (register traffic is sparse);
  * reads and writes alternate when both wait, so neither starves. An address that no
  * block claims answers DECERR, so a driver bug shows up as a bus error, not as zeros.
  * Address bits 1:0 are ignored: as AXI allows, a narrow access may carry an unaligned
  * address, and WSTRB alone says which bytes it writes.
  */
class AxilRegBridge(val addrBits: Int) extends Module {
  val s_axil = IO(Flipped(new AxiLiteIO(addrBits)))
  val reg = IO(new RegBusPort(addrBits))

  private val busy = RegInit(false.B)      // request issued, answer due this cycle
  private val busyWrite = Reg(Bool())
  private val preferRead = RegInit(false.B)
  private val bvalid = RegInit(false.B)
  private val rvalid = RegInit(false.B)
  private val resp = Reg(UInt(2.W))
  private val rdata = Reg(UInt(32.W))

  private val idle = !busy && !bvalid && !rvalid
  private val canWrite = s_axil.awvalid && s_axil.wvalid
  private val canRead = s_axil.arvalid
  private val doWrite = idle && canWrite && (!canRead || !preferRead)
  private val doRead = idle && canRead && !doWrite

  s_axil.awready := doWrite
  s_axil.wready := doWrite
  s_axil.arready := doRead

  reg.req.valid := doWrite || doRead
  reg.req.bits.addr := Mux(doWrite, s_axil.awaddr, s_axil.araddr) >> 2
  reg.req.bits.write := doWrite
  reg.req.bits.wdata := s_axil.wdata
  reg.req.bits.wstrb := Mux(doWrite, s_axil.wstrb, 0.U)

  when(doWrite || doRead) {
    busy := true.B
    busyWrite := doWrite
    preferRead := doWrite
  }
  when(busy) {
    busy := false.B
    resp := Mux(reg.resp.hit, AxiLiteIO.RespOkay.U, AxiLiteIO.RespDecErr.U)
    rdata := reg.resp.rdata
    bvalid := busyWrite
    rvalid := !busyWrite
  }
  when(s_axil.bvalid && s_axil.bready) { bvalid := false.B }
  when(s_axil.rvalid && s_axil.rready) { rvalid := false.B }

  s_axil.bvalid := bvalid
  s_axil.bresp := resp
  s_axil.rvalid := rvalid
  s_axil.rresp := resp
  s_axil.rdata := rdata
}
