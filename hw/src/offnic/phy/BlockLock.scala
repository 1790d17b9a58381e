package offnic.phy

import chisel3._
import chisel3.util._

/** Block lock: sync-header hunting (IEEE 802.3 49.2.9 and its state machine, figure
  * 49-12). Headers 01 and 10 are valid, 00 and 11 invalid. Out of lock, an invalid header
  * slips the gearbox one bit; 64 valid headers in a row give lock. In lock, headers are
  * judged in runs of 64: 16 invalid in one run lose lock (and slip).
  *
  * The slip is a registered pulse; the gearbox has cut one more block at the old boundary
  * by the time it acts, so the block after a slip is not judged (the standard waits for
  * slip_done the same way).
  */
class BlockLock extends Module {
  val valid = IO(Input(Bool()))
  val header = IO(Input(UInt(2.W)))
  val slip = IO(Output(Bool()))
  val block_lock = IO(Output(Bool()))
  /** One cycle each: an invalid header while in lock; lock lost. */
  val stat_bad_header = IO(Output(Bool()))
  val stat_lock_lost = IO(Output(Bool()))

  private val locked = RegInit(false.B)
  private val shCnt = RegInit(0.U(7.W))
  private val invCnt = RegInit(0.U(5.W))
  private val skip = RegInit(false.B)
  private val slipReg = RegInit(false.B)
  private val badReg = RegInit(false.B)
  private val lostReg = RegInit(false.B)

  private val good = header === BaseR.SyncData.U || header === BaseR.SyncCtrl.U
  private val cnt1 = shCnt + 1.U
  private val inv1 = invCnt + (!good).asUInt
  slipReg := false.B
  badReg := false.B
  lostReg := false.B
  when(valid) {
    when(skip) {
      skip := false.B
    }.otherwise {
      badReg := locked && !good
      when(!good && (inv1 === 16.U || !locked)) {
        lostReg := locked
        locked := false.B
        shCnt := 0.U
        invCnt := 0.U
        slipReg := true.B
        skip := true.B
      }.elsewhen(cnt1 === 64.U) {
        when(inv1 === 0.U) { locked := true.B }
        shCnt := 0.U
        invCnt := 0.U
      }.otherwise {
        shCnt := cnt1
        invCnt := inv1
      }
    }
  }
  slip := slipReg
  block_lock := locked
  stat_bad_header := badReg
  stat_lock_lost := lostReg
}
