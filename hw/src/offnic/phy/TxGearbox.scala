package offnic.phy

import chisel3._
import chisel3.util._

/** 66 -> 64 bits for the GTY's raw 64-bit TX interface (its own gearbox unused, docs/phy.md):
  * a 64-bit word leaves every cycle, bit 0 first on the wire; a block (sync header first)
  * is taken when `ready`. 32 blocks fill 33 words, so `ready` is low one cycle in 33, when
  * the 64 bits already held make a whole word. `ready` comes from a register.
  */
class TxGearbox extends Module {
  val in = IO(Input(new BaseRBlock))
  val ready = IO(Output(Bool()))
  val out = IO(Output(UInt(64.W)))

  // Bits held (not yet sent), the oldest in bit 0; `held` is 0, 2, .. 64. Bits above
  // `held` are zero, so a new block is OR-ed in.
  private val buf = RegInit(0.U(64.W))
  private val held = RegInit(0.U(7.W))
  private val outReg = Reg(UInt(64.W))
  ready := held =/= 64.U

  private val block = Cat(in.payload, in.header)
  // The block placed after the held bits (held is even, below 64: 32 positions).
  private val placed = VecInit((0 until 32).map(k => (block << (2 * k)).pad(128)))(held(5, 1))
  private val joined = placed | buf.pad(128)
  when(ready) {
    outReg := joined(63, 0)
    buf := joined(127, 64)
    held := held + 2.U
  }.otherwise {
    outReg := buf
    buf := 0.U
    held := 0.U
  }
  out := outReg
}
