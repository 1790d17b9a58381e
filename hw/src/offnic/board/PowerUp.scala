package offnic.board

import chisel3._

/** Power-up sequencing for the optical modules, in the free-running clock (125 MHz):
  * `release` rises `holdCycles` after reset ends (default 2^17 cycles, about 1 ms: a QSFP28
  * module's ResetL must be held low at least 10 us, SFF-8679; the extra time covers the
  * module's own power-up). A board drives its modules' reset pins from it.
  */
class PowerUp(holdBits: Int = 17) extends Module {
  val release = IO(Output(Bool()))
  private val count = RegInit(0.U((holdBits + 1).W))
  when(!count(holdBits)) { count := count + 1.U }
  release := RegNext(count(holdBits), false.B)
}
