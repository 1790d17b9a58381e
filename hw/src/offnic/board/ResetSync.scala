package offnic.board

import chisel3._

/** A reset for one clock domain: asserted at once (asynchronously) when `rst_in` rises,
  * released in step with `clock`, `stages` cycles after `rst_in` falls, so every flop of
  * the domain leaves reset on the same edge. The stages are named `cdc_sync_rst_*`:
  * constraints/common/cdc.xdc marks them ASYNC_REG. */
class ResetSync(stages: Int = 4) extends RawModule {
  val clock = IO(Input(Clock()))
  val rst_in = IO(Input(Bool()))
  val rst_out = IO(Output(Bool()))
  private val chain = withClockAndReset(clock, rst_in.asAsyncReset) {
    Seq.tabulate(stages)(i => RegInit(true.B).suggestName(s"cdc_sync_rst_$i"))
  }
  chain.head := false.B
  chain.zip(chain.tail).foreach { case (a, b) => b := a }
  rst_out := chain.last
}

object ResetSync {
  def apply(clock: Clock, rstIn: Bool): Bool = {
    val s = Module(new ResetSync)
    s.clock := clock
    s.rst_in := rstIn
    s.rst_out
  }
}

/** A level from another domain (or a pin) made safe to use in this one: two flops named
  * `cdc_sync_*` (constraints/common/cdc.xdc). */
object LevelSync {
  def apply(in: Bool, name: String): Bool =
    RegNext(RegNext(in, false.B).suggestName(s"cdc_sync_${name}_0"), false.B).suggestName(s"cdc_sync_${name}_1")
}
