package offnic.phy

import chisel3._
import chisel3.util._

/** The BER monitor (IEEE 802.3 49.2.14.2 and figure 49-13): while in block lock, `hi_ber`
  * rises when `threshold` invalid sync headers come within one window of `windowCycles`
  * clock cycles (windows follow each other from lock; 10GBASE-R: 16 in 125 us, the
  * xus_timer), and falls at the end of the first window with fewer. Out of lock it is low
  * and the window restarts.
  */
class BerMonitor(val windowCycles: Int, val threshold: Int = 16) extends Module {
  require(windowCycles >= 2 && threshold >= 1)
  val valid = IO(Input(Bool()))
  val header = IO(Input(UInt(2.W)))
  val block_lock = IO(Input(Bool()))
  val hi_ber = IO(Output(Bool()))
  /** One cycle when hi_ber rises. */
  val stat_hi_ber = IO(Output(Bool()))

  private val timer = RegInit(0.U(log2Ceil(windowCycles).W))
  private val cnt = RegInit(0.U(log2Ceil(threshold + 1).W))
  private val hi = RegInit(false.B)
  private val rise = RegInit(false.B)

  private val bad = valid && header =/= BaseR.SyncData.U && header =/= BaseR.SyncCtrl.U
  private val reached = cnt === threshold.U
  private val cnt1 = Mux(bad && !reached, cnt + 1.U, cnt)
  private val done = timer === (windowCycles - 1).U
  rise := false.B
  when(!block_lock) {
    timer := 0.U
    cnt := 0.U
    hi := false.B
  }.otherwise {
    timer := Mux(done, 0.U, timer + 1.U)
    cnt := Mux(done, 0.U, cnt1)
    when(cnt1 === threshold.U) {
      hi := true.B
      rise := !hi
    }.elsewhen(done) {
      hi := false.B
    }
  }
  hi_ber := hi
  stat_hi_ber := rise
}
