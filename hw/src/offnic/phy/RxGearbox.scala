package offnic.phy

import chisel3._
import chisel3.util._

/** 64 -> 66 bits from the GTY's raw 64-bit RX interface: a 64-bit word arrives every cycle
  * (bit 0 first on the wire), a block leaves with `valid` in 32 cycles of 33. `slip` (a
  * one-cycle pulse from block lock) moves the block boundary one bit later, for the blocks
  * formed from the next cycle on; the one formed in the cycle of the pulse still has the
  * old boundary.
  *
  * The last three words stay in a 192-bit window; `pos` is where the next block starts in
  * it (0..66). A block is cut when it starts in the oldest word (pos < 64); the window then
  * moves one word on, so pos grows by 2 per block (66 - 64) until it passes 63.
  */
class RxGearbox extends Module {
  val in = IO(Input(UInt(64.W)))
  val slip = IO(Input(Bool()))
  val out = IO(Output(new BaseRBlock))
  val valid = IO(Output(Bool()))

  private val w = Reg(Vec(3, UInt(64.W))) // w(0) oldest
  private val pos = RegInit(0.U(7.W))
  private val fill = RegInit(0.U(2.W)) // words in the window after reset (3 = full)
  w(0) := w(1)
  w(1) := w(2)
  w(2) := in
  when(fill =/= 3.U) { fill := fill + 1.U }

  private val window = Cat(w(2), w(1), w(0))
  private val cut = fill === 3.U && pos < 64.U
  private val bits = VecInit((0 until 64).map(k => window(k + 65, k)))(pos(5, 0))
  private val outReg = Reg(new BaseRBlock)
  private val validReg = RegInit(false.B)
  validReg := cut
  when(cut) {
    outReg.header := bits(1, 0)
    outReg.payload := bits(65, 2)
  }
  when(fill === 3.U) {
    pos := Mux(cut, pos + 2.U, pos - 64.U) + slip.asUInt
  }
  out := outReg
  valid := validReg
}
