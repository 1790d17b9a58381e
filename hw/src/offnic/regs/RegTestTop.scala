package offnic.regs

import chisel3._
import offnic.{Elaboratable, Params}

/** A test top for the register map: every block type of RegMap.blocks chained behind
  * AXI-Lite (device_id first), array blocks with `count` records (at most their maxCount).
  * Every RO register, in the body and in each record, reads a known pattern
  * (RegTestTop.pattern) plus the sum of the values written to the WStrobe registers of the
  * same body or record, so a bench can check every register's address, width and access.
  */
class RegTestTop(val addrBits: Int, val count: Int) extends Module {
  val s_axil = IO(Flipped(new AxiLiteIO(addrBits)))

  private val types = RegMap.blocks
  private val blocks = types.zip(RegBus.layout(types)).map { case (t, (base, next)) =>
    Module(new RegBlock(t, base, next, addrBits, t.array.map(a => math.min(count, a.maxCount)).getOrElse(0)))
  }
  private val bridge = Module(new AxilRegBridge(addrBits))
  bridge.s_axil <> s_axil
  RegBus.fanOut(bridge.reg, blocks.map(_.bus))

  private def drive(hw: RegsHw, block: Int, record: Int): Unit = {
    val strobes = hw.regs.filter(_.access == Access.WStrobe).map(r => hw.strobe(r.name))
    val acc = RegInit(0.U(32.W))
    acc := strobes.foldLeft(acc)((sum, s) => sum + Mux(s.valid, s.bits.pad(32), 0.U))
    for (r <- hw.regs if r.access == Access.RO)
      hw.value(r.name) := (RegTestTop.pattern(block, record, r.offset).U(32.W) + acc)(r.width - 1, 0)
  }

  blocks.zipWithIndex.foreach { case (b, i) =>
    drive(b.hw, i, -1)
    b.entries.zipWithIndex.foreach { case (e, k) => drive(e, i, k) }
  }
}

object RegTestTop extends Elaboratable {
  /** What RO register `offset` of block `block` (its index in RegMap.blocks) reads before
    * any strobe: record `record`, or the body for -1. tests/regs/test_regmap.py has the same.
    */
  def pattern(block: Int, record: Int, offset: Int): BigInt =
    (BigInt(block * 256 + record + 1) * 0x9e3779b1L + BigInt(offset) * 0x01000193L) & 0xffffffffL

  def generate(p: Params): RawModule = new RegTestTop(p.int("addr_bits", 24), p.int("count", 4))
}
