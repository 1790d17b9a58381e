package offnic.phy

import chisel3._

/** The self-synchronising scrambler of the 64-bit block payload, G(x) = 1 + x^39 + x^58
  * (IEEE 802.3 49.2.6; the sync header is not scrambled). Bit i of a word is the i-th on
  * the wire; the 58 most recent scrambled bits are the state.
  */
object Scrambling {
  /** Scrambled bits from `in` and the state `s` (s(57) most recent): out(i) = in(i) ^
    * out(i - 39) ^ out(i - 58), reaching back into the state for i < 58. */
  def scramble(in: UInt, s: UInt): UInt = {
    val out = Array.fill[Bool](64)(false.B)
    def prev(i: Int): Bool = if (i >= 0) out(i) else s(58 + i)
    for (i <- 0 until 64) out(i) = in(i) ^ prev(i - 39) ^ prev(i - 58)
    VecInit(out.toSeq).asUInt
  }

  /** Descrambled bits: in(i) ^ in(i - 39) ^ in(i - 58), the state being received bits. */
  def descramble(in: UInt, s: UInt): UInt = {
    def prev(i: Int): Bool = if (i >= 0) in(i) else s(58 + i)
    VecInit((0 until 64).map(i => in(i) ^ prev(i - 39) ^ prev(i - 58))).asUInt
  }
}

/** TX: scrambles each block's payload when `en` (the gearbox takes a block); registered. */
class BaseRScrambler extends Module {
  val en = IO(Input(Bool()))
  val in = IO(Input(new BaseRBlock))
  val out = IO(Output(new BaseRBlock))

  private val state = RegInit(0.U(58.W))
  // Reset to a control header, so the first words on the wire have valid sync headers.
  private val outReg = RegInit({ val b = Wire(new BaseRBlock); b.header := BaseR.SyncCtrl.U; b.payload := 0.U; b })
  when(en) {
    val s = Scrambling.scramble(in.payload, state)
    state := s(63, 6)
    outReg.payload := s
    outReg.header := in.header
  }
  out := outReg
}

/** RX: descrambles each block's payload when `en` (a block from the gearbox); registered.
  * Self-synchronising: right after 58 received bits, whatever the start state. */
class BaseRDescrambler extends Module {
  val en = IO(Input(Bool()))
  val in = IO(Input(new BaseRBlock))
  val out = IO(Output(new BaseRBlock))

  private val state = RegInit(0.U(58.W))
  private val outReg = Reg(new BaseRBlock)
  when(en) {
    state := in.payload(63, 6)
    outReg.payload := Scrambling.descramble(in.payload, state)
    outReg.header := in.header
  }
  out := outReg
}
