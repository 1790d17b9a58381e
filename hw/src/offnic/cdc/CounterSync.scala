package offnic.cdc

import chisel3._
import chisel3.experimental.noPrefix

/** A counter from another clock domain, readable in this one: for counters that step by at
  * most one per cycle of their own clock (event counters), where a status register wants a
  * recent value, not every step.
  *
  * In the source clock the count is registered Gray-coded (one bit changes per step); here
  * it passes GraySync's two flops (`cdc_sync_<name>_0/_1`, constrained in
  * constraints/common/cdc.xdc) and is decoded into a register. Each value read is one the
  * counter really held, three or four cycles of this clock ago, as long as the Gray bits
  * arrive within one source period of each other (the XDC's max delay). A source reset
  * that jumps the count to 0 changes many bits at once: a read in that cycle may be torn.
  *
  * Call it in the destination clock domain; `name` must be unique in the module.
  */
object CounterSync {
  def apply(count: UInt, srcClock: Clock, srcReset: Bool, name: String): UInt = {
    val gray = withClockAndReset(srcClock, srcReset) {
      RegNext(GraySync.toGray(count), 0.U(count.getWidth.W)).suggestName(s"${name}_gray")
    }
    val seen = noPrefix { GraySync(gray, name) }.asTypeOf(UInt(count.getWidth.W))
    RegNext(GraySync.fromGray(seen), 0.U(count.getWidth.W)).suggestName(name)
  }
}
