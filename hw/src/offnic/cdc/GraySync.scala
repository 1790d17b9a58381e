package offnic.cdc

import chisel3._
import chisel3.util._

/** Gray code helpers and the two-flop synchroniser that every clock-domain crossing in
  * offnic uses for multi-bit pointers. Only one bit of a Gray-coded counter changes per
  * step, so the synchronised value is always either the old or the new count.
  * Board constraints find these registers by the `cdc_sync` name prefix.
  */
object GraySync {
  def toGray(bin: UInt): UInt = bin ^ (bin >> 1)

  def fromGray(gray: UInt): UInt = {
    val w = gray.getWidth
    VecInit((0 until w).map(i => (gray >> i).xorR)).asUInt
  }

  /** Two registers in the current (destination) clock domain, reset to zero. */
  def apply(in: UInt, name: String): UInt = {
    val stage0 = RegNext(in, 0.U).suggestName(s"cdc_sync_${name}_0")
    val stage1 = RegNext(stage0, 0.U).suggestName(s"cdc_sync_${name}_1")
    stage1
  }
}
