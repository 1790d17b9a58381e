package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisIO, AxisParams, AxisRegSlice}

/** One port's transmit input (issue 17): host frames (`s_axis_host`, from the TX engine)
  * and the TCP engine's segments (`s_axis_engine`) merged a whole frame at a time.
  * `cfg_fcfs` = 0, host first: at every frame boundary a waiting host frame goes next, an
  * engine segment only when no host frame waits, so a host frame waits at most for the one
  * engine segment already under way. `cfg_fcfs` = 1: they take turns. The output leaves
  * through a register slice (no path from m_axis_tready to the inputs' tready).
  *
  * Pulses: a host frame / an engine segment started, and an engine segment started while
  * a host frame waited (never in host-first mode).
  */
class TxMerge(val p: AxisParams) extends Module {
  val s_axis_host = IO(Flipped(new AxisIO(p)))
  val s_axis_engine = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))
  val cfg_fcfs = IO(Input(Bool()))
  val stat_host_frame = IO(Output(Bool()))
  val stat_engine_frame = IO(Output(Bool()))
  val stat_engine_over_host = IO(Output(Bool()))

  private val midFrame = RegInit(false.B)
  private val ownerEng = RegInit(false.B)
  private val lastEng = RegInit(false.B) // who sent the last whole frame (round robin)
  private val hostWaits = s_axis_host.tvalid
  private val pickEng = s_axis_engine.tvalid && (!hostWaits || (cfg_fcfs && !lastEng))
  private val grantEng = Mux(midFrame, ownerEng, pickEng)

  private val merged = Wire(new AxisIO(p))
  private def sel[T <: Data](f: AxisIO => T): T = Mux(grantEng, f(s_axis_engine), f(s_axis_host))
  merged.tvalid := sel(_.tvalid)
  merged.tdata := sel(_.tdata)
  merged.tkeep := sel(_.tkeep)
  merged.tlast := sel(_.tlast)
  merged.tuser.foreach(_ := sel(_.tuser.get))
  merged.tdest.foreach(_ := sel(_.tdest.get))
  merged.tid.foreach(_ := sel(_.tid.get))
  s_axis_host.tready := merged.tready && !grantEng
  s_axis_engine.tready := merged.tready && grantEng

  private val starts = merged.fire && !midFrame
  when(merged.fire) {
    midFrame := !merged.tlast
    ownerEng := grantEng
    when(merged.tlast) { lastEng := grantEng }
  }
  stat_host_frame := starts && !grantEng
  stat_engine_frame := starts && grantEng
  stat_engine_over_host := starts && grantEng && hostWaits

  private val slice = Module(new AxisRegSlice(p))
  slice.s_axis <> merged
  m_axis <> slice.m_axis
}

object TxMerge extends Elaboratable {
  /** AxisParams' keys (32-byte beats, tuser 1 in the NIC). */
  def generate(p: Params): RawModule = new TxMerge(AxisParams.from(p))
}
