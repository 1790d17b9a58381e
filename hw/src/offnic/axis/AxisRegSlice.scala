package offnic.axis

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.util.SkidBuffer

/** Register slice (skid buffer): breaks every combinational path between its sides —
  * data, valid and ready are all registered — at full throughput, for timing closure
  * between blocks. `stages` slices in a row add one cycle of latency each.
  */
class AxisRegSlice(val p: AxisParams, val stages: Int = 1) extends Module {
  require(stages >= 1, "AxisRegSlice needs at least one stage")
  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))

  private def slice(in: AxisIO): AxisIO = {
    val skid = Module(new SkidBuffer(new AxisBeat(p)))
    skid.in <> in.asDecoupledSink
    val out = Wire(new AxisIO(p))
    out.drivenBy(skid.out)
    out
  }

  private val last = (0 until stages).foldLeft(s_axis: AxisIO)((in, _) => slice(in))
  m_axis.tvalid := last.tvalid
  m_axis.setBeat(last.beat)
  last.tready := m_axis.tready
}

object AxisRegSlice extends Elaboratable {
  def generate(p: Params): RawModule = new AxisRegSlice(AxisParams.from(p), p.int("stages", 1))

  def apply(in: AxisIO, stages: Int = 1): AxisIO = {
    val r = Module(new AxisRegSlice(in.p, stages))
    r.s_axis <> in
    r.m_axis
  }
}
