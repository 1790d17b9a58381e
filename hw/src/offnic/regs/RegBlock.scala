package offnic.regs

import chisel3._
import chisel3.util._
import scala.collection.immutable.SeqMap

/** The hardware side of a list of registers, one element per non-constant register:
  * RW -> Output (the value), RO -> Input (hardware drives it), WStrobe -> Output Valid
  * (one-cycle pulse with the written data). RegBlockHw (a block's body) and RegRecordHw
  * (one record of a block's array) are both this.
  */
abstract class RegsHw(val regs: Seq[Reg], what: String) extends Record {
  val elements: SeqMap[String, Data] = SeqMap.from(regs.flatMap { r =>
    r.access match {
      case _: Access.RW    => Some(r.name -> Output(UInt(r.width.W)))
      case Access.RO       => Some(r.name -> Input(UInt(r.width.W)))
      case Access.WStrobe  => Some(r.name -> Output(Valid(UInt(r.width.W))))
      case _: Access.Const => None
    }
  })
  def apply(name: String): Data = elements.getOrElse(name, throw new NoSuchElementException(s"$what has no register $name"))
  def value(name: String): UInt = apply(name).asInstanceOf[UInt]
  def strobe(name: String): Valid[UInt] = apply(name).asInstanceOf[Valid[UInt]]
}

/** A block's body registers (not the header; with an array, not `count` either). */
class RegBlockHw(val t: BlockType) extends RegsHw(t.hwBody, t.name)

/** One record of a block's array (RegArray.regs), same conventions as RegBlockHw. */
class RegRecordHw(regs: Seq[Reg]) extends RegsHw(regs, "array record")

/** One register block of type `t` at BAR offset `base`, with `next` as its chain pointer
  * and, for a type with an array, `count` records (1..maxCount; `entries`). Reads and
  * writes complete in one cycle (RegBus); reads of unused offsets inside the window, and
  * of records at or beyond `count`, return 0, and writes there are ignored.
  *
  * Records: the request is registered first (the record index decoded to a one-hot), and
  * in the next cycle the record registers are written and read: per record offset, the
  * records are OR-ed under the one-hot, then the offset selects one of those words. So the
  * wide mux starts at flip-flops with small fan-out, not at the bus request, and the
  * answer is still on the bus one cycle after the request. Writes to records take effect
  * one cycle later than body writes; a read in the next cycle still sees them (requests
  * stay in order), and WStrobe pulses come out in the same cycle as the body's.
  */
class RegBlock(val t: BlockType, val base: Int, val next: Int, val addrBits: Int, val count: Int = 0) extends Module {
  require(base % t.windowBytes == 0, s"${t.name} at 0x${base.toHexString} is not aligned to its 0x${t.windowBytes.toHexString} window")
  require(next == 0 || next >= base + t.windowBytes, s"${t.name}: next block 0x${next.toHexString} overlaps this one")
  require(BigInt(base + t.windowBytes) <= (BigInt(1) << addrBits), s"${t.name} at 0x${base.toHexString} is beyond the address space")
  t.array match {
    case Some(a) => require(count >= 1 && count <= a.maxCount, s"${t.name}: count $count is not in 1..${a.maxCount}")
    case None    => require(count == 0, s"${t.name} has no array, so count must be 0 (got $count)")
  }
  override def desiredName = s"RegBlock_${t.name}"

  val bus = IO(Flipped(new RegBusPort(addrBits)))
  val hw = IO(new RegBlockHw(t))
  /** The array's records (empty for a block without an array). */
  val entries = IO(Vec(count, new RegRecordHw(t.array.map(_.regs).getOrElse(Nil))))

  private val winWords = log2Ceil(t.windowBytes) - 2
  private val req = bus.req.bits
  private val selected = bus.req.valid && (req.addr >> winWords) === (base >> (winWords + 2)).U
  private val word = req.addr(winWords - 1, 0)
  private val writing = selected && req.write

  private def hits(r: Reg): Bool = word === (r.offset / 4).U

  /** The new value of an RW register of `width` bits after a write with byte strobes. */
  private def merge(value: UInt, width: Int, wdata: UInt, wstrb: UInt): UInt = {
    val merged = Cat((3 to 0 by -1).map(i => Mux(wstrb(i), wdata(8 * i + 7, 8 * i), value.pad(32)(8 * i + 7, 8 * i))))
    merged(width - 1, 0)
  }

  private val readValues: Seq[(Reg, UInt)] = t.regs.map { r =>
    r -> (r.access match {
      case Access.Const(v)              => v.U(32.W)
      case Access.RO if r.name == "next" => next.U(32.W)
      case Access.RO if t.array.isDefined && r.name == BlockType.CountReg => count.U(32.W)
      case Access.RO                    => hw.value(r.name).pad(32)
      case Access.RW(reset) =>
        val value = RegInit(reset.U(r.width.W))
        when(writing && hits(r)) { value := merge(value, r.width, req.wdata, req.wstrb) }
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
  private val bodyRdata = RegNext(Mux(selected && !req.write, readData, 0.U), 0.U)
  private val arrayRdata: UInt = t.array.map(records).getOrElse(0.U(32.W))
  bus.resp.hit := RegNext(selected, false.B)
  bus.resp.rdata := bodyRdata | arrayRdata

  /** The array's registers; returns the read data, valid in the cycle after the request. */
  private def records(a: RegArray): UInt = {
    val strideWords = a.stride / 4
    val slotBits = log2Ceil(strideWords)
    // Stage 0 (request cycle): where in the array, as a registered one-hot record select.
    val firstWord = a.offset / 4
    val inArray = word >= firstWord.U && word < (firstWord + count * strideWords).U
    val arrayWord = (word - firstWord.U)(winWords - 1, 0)
    val recIdx = if (arrayWord.getWidth > slotBits) arrayWord >> slotBits else 0.U
    val hit = (0 until count).map(k => selected && inArray && recIdx === k.U)
    val rdHot = RegNext(VecInit(hit.map(_ && !req.write)), VecInit(Seq.fill(count)(false.B)))
    val wrHot = RegNext(VecInit(hit.map(_ && req.write)), VecInit(Seq.fill(count)(false.B)))
    val take = selected && inArray
    val slot = if (slotBits == 0) 0.U(1.W) else RegEnable(arrayWord(slotBits - 1, 0), take)
    val wdata = RegEnable(req.wdata, take)
    val wstrb = RegEnable(req.wstrb, take)

    // Stage 1: write and read the records.
    def slotIs(r: Reg): Bool = if (slotBits == 0) true.B else slot === (r.offset / 4).U
    val words: Seq[Map[Int, UInt]] = (0 until count).map { k =>
      val e = entries(k)
      val writeHere = wrHot(k)
      a.regs.map { r =>
        (r.offset / 4) -> (r.access match {
          case Access.Const(v) => v.U(32.W)
          case Access.RO       => e.value(r.name).pad(32)
          case Access.RW(reset) =>
            val value = RegInit(reset.U(r.width.W))
            when(writeHere && slotIs(r)) { value := merge(value, r.width, wdata, wstrb) }
            e.value(r.name) := value
            value.pad(32)
          case Access.WStrobe =>
            val s = e.strobe(r.name)
            s.valid := writeHere && slotIs(r)
            s.bits := wdata(r.width - 1, 0)
            0.U(32.W)
        })
      }.toMap
    }
    // Per record offset: OR of the records under the one-hot (zero when none is hot) ...
    val perSlot = (0 until (1 << slotBits)).map { j =>
      val terms = (0 until count).flatMap(k => words(k).get(j).map(v => Mux(rdHot(k), v, 0.U)))
      if (terms.isEmpty) 0.U(32.W) else terms.reduce(_ | _)
    }
    // ... then the offset picks one word.
    if (slotBits == 0) perSlot.head else VecInit(perSlot)(slot)
  }
}
