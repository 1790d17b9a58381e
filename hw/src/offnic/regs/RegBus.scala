package offnic.regs

import chisel3._
import chisel3.util._

/** One register access: 32-bit word address (byte address / 4), data, byte strobes. */
class RegBusReq(val addrBits: Int) extends Bundle {
  val addr = UInt((addrBits - 2).W)
  val write = Bool()
  val wdata = UInt(32.W)
  val wstrb = UInt(4.W)
}

/** The answer, exactly one cycle after the request. Slaves that are not addressed answer
  * `hit = 0, rdata = 0`, so a master combines any number of slaves by OR.
  */
class RegBusResp extends Bundle {
  val hit = Bool()
  val rdata = UInt(32.W)
}

/** The internal register bus (master side): fixed one-cycle latency, no stalls. This keeps
  * register blocks tiny; the AXI-Lite bridge absorbs the handshakes. `addrBits` is the
  * byte-address width of the register space.
  */
class RegBusPort(val addrBits: Int) extends Bundle {
  val req = Output(Valid(new RegBusReq(addrBits)))
  val resp = Input(new RegBusResp)
}

object RegBus {
  /** Broadcast `master`'s requests to every slave and OR their answers. */
  def fanOut(master: RegBusPort, slaves: Seq[RegBusPort]): Unit = {
    slaves.foreach(_.req := master.req)
    master.resp.hit := slaves.map(_.resp.hit).foldLeft(false.B)(_ || _)
    master.resp.rdata := slaves.map(_.resp.rdata).foldLeft(0.U(32.W))(_ | _)
  }

  /** Bases for `types` laid out one after another from `start`, each on its own window
    * boundary, and the matching next pointers (0 after the last).
    */
  def layout(types: Seq[BlockType], start: Int = 0): Seq[(Int, Int)] = {
    val bases = types.scanLeft(start) { (at, t) => align(at, t.windowBytes) + t.windowBytes }
      .zip(types).map { case (at, t) => align(at, t.windowBytes) }
    bases.zip(bases.drop(1) :+ 0)
  }

  private def align(at: Int, to: Int): Int = (at + to - 1) / to * to
}
