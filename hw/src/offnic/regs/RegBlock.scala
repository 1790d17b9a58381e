package offnic.regs

import chisel3._
import chisel3.util._
import scala.collection.immutable.SeqMap

/** The hardware side of a register block, one element per non-header register:
  * RW -> Output (the value), RO -> Input (hardware drives it), WStrobe -> Output Valid
  * (one-cycle pulse with the written data).
  */
class RegBlockHw(val t: BlockType) extends Record {
  val elements: SeqMap[String, Data] = SeqMap.from(t.body.flatMap { r =>
    r.access match {
      case _: Access.RW    => Some(r.name -> Output(UInt(r.width.W)))
      case Access.RO       => Some(r.name -> Input(UInt(r.width.W)))
      case Access.WStrobe  => Some(r.name -> Output(Valid(UInt(r.width.W))))
      case _: Access.Const => None
    }
  })
  def apply(name: String): Data = elements.getOrElse(name, throw new NoSuchElementException(s"${t.name} has no register $name"))
  def value(name: String): UInt = apply(name).asInstanceOf[UInt]
  def strobe(name: String): Valid[UInt] = apply(name).asInstanceOf[Valid[UInt]]
}

/** One register block of type `t` at BAR offset `base`, with `next` as its chain pointer.
  * Reads and writes complete in one cycle (RegBus); reads of unused offsets inside the
  * window return 0.
  */
class RegBlock(val t: BlockType, val base: Int, val next: Int, val addrBits: Int) extends Module {
  require(base % t.windowBytes == 0, s"${t.name} at 0x${base.toHexString} is not aligned to its 0x${t.windowBytes.toHexString} window")
  require(next == 0 || next >= base + t.windowBytes, s"${t.name}: next block 0x${next.toHexString} overlaps this one")
  require(BigInt(base + t.windowBytes) <= (BigInt(1) << addrBits), s"${t.name} at 0x${base.toHexString} is beyond the address space")
  override def desiredName = s"RegBlock_${t.name}"

  val bus = IO(Flipped(new RegBusPort(addrBits)))
  val hw = IO(new RegBlockHw(t))

  private val winWords = log2Ceil(t.windowBytes) - 2
  private val req = bus.req.bits
  private val selected = bus.req.valid && (req.addr >> winWords) === (base >> (winWords + 2)).U
  private val word = req.addr(winWords - 1, 0)
  private val writing = selected && req.write

  private def hits(r: Reg): Bool = word === (r.offset / 4).U

  private val readValues: Seq[(Reg, UInt)] = t.regs.map { r =>
    r -> (r.access match {
      case Access.Const(v)              => v.U(32.W)
      case Access.RO if r.name == "next" => next.U(32.W)
      case Access.RO                    => hw.value(r.name).pad(32)
      case Access.RW(reset) =>
        val value = RegInit(reset.U(r.width.W))
        when(writing && hits(r)) {
          val merged = Cat((3 to 0 by -1).map(i => Mux(req.wstrb(i), req.wdata(8 * i + 7, 8 * i), value.pad(32)(8 * i + 7, 8 * i))))
          value := merged(r.width - 1, 0)
        }
        hw.value(r.name) := value
        value.pad(32)
      case Access.WStrobe =>
        val s = hw.strobe(r.name)
        s.valid := RegNext(writing && hits(r), false.B)
        s.bits := RegEnable(req.wdata(r.width - 1, 0), writing && hits(r))
        0.U(32.W)
    })
  }

  private val readData = readValues.map { case (r, v) => Mux(hits(r), v, 0.U) }.reduce(_ | _)
  bus.resp.hit := RegNext(selected, false.B)
  bus.resp.rdata := RegNext(Mux(selected && !req.write, readData, 0.U), 0.U)
}
