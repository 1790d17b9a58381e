package offnic.regs

import chisel3._
import chisel3.util.PopCount

/** A statistics counter: counts one-cycle `stat_*` event pulses, wrapping at 2^width
  * (software reads it periodically and takes differences, as for any NIC counter).
  */
object StatCounter {
  def apply(event: Bool, width: Int = 32): UInt = {
    val count = RegInit(0.U(width.W))
    when(event) { count := count + 1.U }
    count
  }

  /** One counter for several sources whose events may coincide (e.g. one per port). */
  def apply(events: Seq[Bool]): UInt = {
    val count = RegInit(0.U(32.W))
    count := count + PopCount(events)
    count
  }
}
