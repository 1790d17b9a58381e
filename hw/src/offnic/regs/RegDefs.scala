package offnic.regs

/** The vocabulary of the register map. Every register is 32 bits wide and 32-bit aligned.
  * A register block starts with a common header (type, version, next), so software finds
  * each feature by walking the chain from BAR0 offset 0 instead of hard-coding addresses.
  */
sealed trait Access { def name: String }
object Access {
  /** Software reads and writes; the value drives hardware. */
  case class RW(reset: BigInt = 0) extends Access { def name = "rw" }
  /** Hardware drives the value; software writes are ignored. */
  case object RO extends Access { def name = "ro" }
  /** Fixed by the register map itself (block type, version, sizes known at design time). */
  case class Const(value: BigInt) extends Access { def name = "const" }
  /** A write produces a one-cycle strobe with the written value (commands, doorbells);
    * reads return 0.
    */
  case object WStrobe extends Access { def name = "wstrobe" }
}

/** A named bit field inside a register, for documentation and generated masks. */
case class Field(name: String, lsb: Int, width: Int, doc: String) {
  require(lsb >= 0 && width >= 1 && lsb + width <= 32, s"field $name [$lsb +: $width] does not fit 32 bits")
}

case class Reg(name: String, offset: Int, access: Access, doc: String, fields: Seq[Field] = Nil) {
  require(offset % 4 == 0, s"register $name offset 0x${offset.toHexString} is not 32-bit aligned")
  require(name.matches("[a-z][a-z0-9_]*"), s"register name '$name' must be lower_snake_case")
  require(fields.combinations(2).forall {
    case Seq(a, b) => a.lsb + a.width <= b.lsb || b.lsb + b.width <= a.lsb
  }, s"register $name has overlapping fields")

  /** Bits the hardware implements: up to the highest field, or all 32 without fields.
    * Bits above read as 0 and ignore writes.
    */
  def width: Int = if (fields.isEmpty) 32 else fields.map(f => f.lsb + f.width).max
}

/** A block's array of identical records (one per queue, vector, ...): record k's register r is at
  * block offset `offset + k * stride + r.offset`. The elaborated count is in the block's `count` register.
  */
case class RegArray(offset: Int, maxCount: Int, stride: Int, regs: Seq[Reg], doc: String) {
  require(offset % 4 == 0, s"array offset 0x${offset.toHexString} is not 32-bit aligned")
  require(maxCount >= 1, s"array maxCount $maxCount must be at least 1")
  require(stride >= 4 && Integer.bitCount(stride) == 1, s"array stride 0x${stride.toHexString} must be a power of two >= 4")
  require(regs.nonEmpty, "an array record needs at least one register")
  require(regs.forall(r => r.offset + 4 <= stride), s"array record registers must lie inside the 0x${stride.toHexString} stride")
  require(regs.map(_.offset).distinct.size == regs.size, "array record has two registers at one offset")
  require(regs.map(_.name).distinct.size == regs.size, "array record has two registers with one name")

  /** Block offset just past the last possible record. */
  def end: Int = offset + maxCount * stride
  def reg(name: String): Reg = regs.find(_.name == name).getOrElse(throw new NoSuchElementException(s"array has no register $name"))
}

/** A block type: what the driver looks for in the chain. `version` is bumped whenever the
  * layout changes incompatibly (major in bits 31:16, minor in 15:0). `array`, if any, is a
  * table of identical records after the body registers (see RegArray); such a block has a
  * body register `count` (RO) that the hardware drives with the number of records built.
  */
case class BlockType(name: String, typeId: Long, version: Long, doc: String, body: Seq[Reg],
                     array: Option[RegArray] = None) {
  import BlockType._
  require(name.matches("[a-z][a-z0-9_]*"), s"block name '$name' must be lower_snake_case")
  require(body.forall(_.offset >= HeaderBytes), s"block $name: registers must start at 0x${HeaderBytes.toHexString}")
  val regs: Seq[Reg] = header(typeId, version) ++ body
  require(regs.map(_.offset).distinct.size == regs.size, s"block $name has two registers at one offset")
  require(regs.map(_.name).distinct.size == regs.size, s"block $name has two registers with one name")
  array.foreach { a =>
    require(regs.forall(_.offset + 4 <= a.offset), s"block $name: the array at 0x${a.offset.toHexString} must start after the body registers")
    require(body.exists(r => r.name == CountReg && r.access == Access.RO),
      s"block $name has an array, so it needs a body register '$CountReg' (RO)")
  }

  /** Body registers the hardware drives or sees (RegBlockHw): all but the header and, with
    * an array, `count` (RegBlock drives it with the elaborated record count).
    */
  def hwBody: Seq[Reg] = body.filterNot(r => array.isDefined && r.name == CountReg)

  /** Bytes the block decodes: a power of two covering every register and every record. */
  val windowBytes: Int = {
    val end = math.max(regs.map(_.offset).max + 4, array.map(_.end).getOrElse(0))
    Integer.highestOneBit(math.max(end, 16) * 2 - 1)
  }
}

object BlockType {
  val HeaderBytes = 0x0c
  val NextOffset = 0x08
  /** The body register of a block with an array that holds the elaborated record count. */
  val CountReg = "count"
  def header(typeId: Long, version: Long): Seq[Reg] = Seq(
    Reg("type", 0x00, Access.Const(typeId), "Block type identifier."),
    Reg("version", 0x04, Access.Const(version), "Block layout version (major 31:16, minor 15:0)."),
    // The next pointer depends on where the block sits in the chain, which the top decides.
    Reg("next", NextOffset, Access.RO, "Absolute BAR offset of the next block; 0 ends the chain.")
  )
}
