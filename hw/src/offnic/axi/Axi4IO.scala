package offnic.axi

import chisel3._
import chisel3.reflect.DataMirror

/** An AXI4 manager port (the signals a DDR4 controller's AXI slave needs; lock, cache, prot,
  * qos and region are left to the interconnect's defaults). Flat names (`m_axi_awaddr` when
  * the port is called `m_axi`), as cocotbext-axi's `AxiBus.from_prefix` and Vivado's
  * interface inference expect. Data is 256 bits wide: one word of the NIC's datapath.
  */
class Axi4IO(val addrBits: Int, val idBits: Int) extends Bundle {
  val awid = Output(UInt(idBits.W))
  val awaddr = Output(UInt(addrBits.W))
  val awlen = Output(UInt(8.W))
  val awsize = Output(UInt(3.W))
  val awburst = Output(UInt(2.W))
  val awvalid = Output(Bool())
  val awready = Input(Bool())
  val wdata = Output(UInt(256.W))
  val wstrb = Output(UInt(32.W))
  val wlast = Output(Bool())
  val wvalid = Output(Bool())
  val wready = Input(Bool())
  val bid = Input(UInt(idBits.W))
  val bresp = Input(UInt(2.W))
  val bvalid = Input(Bool())
  val bready = Output(Bool())
  val arid = Output(UInt(idBits.W))
  val araddr = Output(UInt(addrBits.W))
  val arlen = Output(UInt(8.W))
  val arsize = Output(UInt(3.W))
  val arburst = Output(UInt(2.W))
  val arvalid = Output(Bool())
  val arready = Input(Bool())
  val rid = Input(UInt(idBits.W))
  val rdata = Input(UInt(256.W))
  val rresp = Input(UInt(2.W))
  val rlast = Input(Bool())
  val rvalid = Input(Bool())
  val rready = Output(Bool())
}

object Axi4 {
  val BurstIncr = 1
  /** 32 bytes per beat */
  val Size32 = 5
  /** Anything but OKAY: SLVERR, DECERR, and EXOKAY (never right: no access is exclusive). */
  def isError(resp: UInt): Bool = resp =/= 0.U

  /** One manager port shared by a manager that only writes and one that only reads:
    * `port`'s AW, W and B channels are `writes`', its AR and R channels `reads`'; each
    * manager's other channels see an idle subordinate (never ready, never valid). */
  def join(port: Axi4IO, writes: Axi4IO, reads: Axi4IO): Unit = {
    require(port.addrBits == writes.addrBits && port.addrBits == reads.addrBits)
    for ((name, wire) <- port.elements) {
      val writeSide = name.startsWith("aw") || name.startsWith("w") || name.startsWith("b")
      val (used, idle) = if (writeSide) (writes, reads) else (reads, writes)
      if (DataMirror.specifiedDirectionOf(wire) == SpecifiedDirection.Output) {
        wire := used.elements(name)
      } else {
        used.elements(name) := wire
        idle.elements(name) := 0.U
      }
    }
  }
}
