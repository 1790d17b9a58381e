package offnic.util

import chisel3._
import chisel3.util._

/** Sets kept as one UInt with a bit per member (slots, tags), written for a simulator: a few
  * wide operations per cycle instead of a multiplexer or a write decode per member, as a
  * Vec of Bools gets. Every bit of the temporaries is used (Verilator -Wall checks).
  */
object BitMask {
  /** Whether any bit of `x` is set, and the index of the lowest one (n - 1 when none is, as
    * DmaUtil.lowestSet's tree answers): x & -x isolates it, OR trees give its index. */
  def lowestSet(x: UInt): (Bool, UInt) = {
    val n = x.getWidth
    require(n >= 2 && isPow2(n))
    val lowest = x & (~x +% 1.U)
    val any = lowest.orR // x =/= 0, from the sum so that all its bits are used
    (any, Mux(any, OHToUInt(lowest), (n - 1).U(log2Ceil(n).W)))
  }

  /** Bit `i` of `x`. */
  def bit(x: UInt, i: UInt): Bool = (x & UIntToOH(i, x.getWidth)).orR

  /** Bit `i` alone of an n-bit mask when `en`, else none. */
  def only(i: UInt, n: Int, en: Bool): UInt = Mux(en, UIntToOH(i, n), 0.U(n.W))
}
