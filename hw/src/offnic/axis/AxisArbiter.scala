package offnic.axis

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}

sealed trait ArbiterMode
object ArbiterMode {
  /** Lowest-numbered waiting input wins: input 0 is the "host first" path. */
  case object Priority extends ArbiterMode
  /** Inputs take turns, starting after the last one served. */
  case object RoundRobin extends ArbiterMode
  def parse(s: String): ArbiterMode = s match {
    case "priority"    => Priority
    case "round_robin" => RoundRobin
    case other         => throw new IllegalArgumentException(s"arbiter mode '$other' is not priority or round_robin")
  }
}

/** Merges `ports` AXI-Stream inputs (`s_axis_0` ...) into one output, a whole frame at a
  * time: once a frame starts, its input keeps the output until `tlast`. A new frame can
  * start in the cycle after the previous one ends its last beat, so back-to-back frames
  * run without bubbles.
  *
  * With `tagSource`, the output `tid` carries the input number (inputs then have no tid).
  * The output goes through a register slice, so no path runs from m_axis_tready to any
  * s_axis_tready.
  */
class AxisArbiter(val p: AxisParams, val ports: Int, val mode: ArbiterMode, val tagSource: Boolean = false)
    extends Module {
  require(ports >= 2, s"AxisArbiter needs at least 2 inputs, got $ports")
  require(!tagSource || p.idWidth == 0, "with tagSource the arbiter sets tid itself; inputs must have none")
  val out: AxisParams = if (tagSource) p.copy(idWidth = log2Ceil(ports)) else p

  val s_axis = IO(Vec(ports, Flipped(new AxisIO(p))))
  val m_axis = IO(new AxisIO(out))
  /** The input that sent the last beat (pulses with it), for per-source statistics. */
  val stat_grant = IO(Output(Valid(UInt(log2Ceil(ports).W))))

  private val midFrame = RegInit(false.B)
  private val owner = RegInit(0.U(log2Ceil(ports).W))
  private val lastServed = RegInit((ports - 1).U(log2Ceil(ports).W))
  private val waiting = VecInit(s_axis.map(_.tvalid)).asUInt

  private val pick: UInt = mode match {
    case ArbiterMode.Priority => PriorityEncoder(waiting)
    case ArbiterMode.RoundRobin =>
      // Inputs after the last one served first, then wrap around.
      val upTo = VecInit((0 until ports).map(k => ((BigInt(1) << (k + 1)) - 1).U(ports.W)))(lastServed)
      val after = waiting & ~upTo
      Mux(after.orR, PriorityEncoder(after), PriorityEncoder(waiting))
  }
  private val grant = Mux(midFrame, owner, pick)

  private val merged = Wire(new AxisIO(out))
  merged.tvalid := s_axis(grant).tvalid
  merged.tdata := VecInit(s_axis.map(_.tdata))(grant)
  merged.tkeep := VecInit(s_axis.map(_.tkeep))(grant)
  merged.tlast := VecInit(s_axis.map(_.tlast))(grant)
  merged.tuser.foreach(_ := VecInit(s_axis.map(_.tuser.get))(grant))
  merged.tdest.foreach(_ := VecInit(s_axis.map(_.tdest.get))(grant))
  merged.tid.foreach(_ := (if (tagSource) grant else VecInit(s_axis.map(_.tid.get))(grant)))
  for ((s, i) <- s_axis.zipWithIndex) s.tready := merged.tready && grant === i.U

  when(merged.fire) {
    midFrame := !merged.tlast
    owner := grant
    when(merged.tlast) { lastServed := grant }
  }
  stat_grant.valid := merged.fire
  stat_grant.bits := grant

  private val slice = Module(new AxisRegSlice(out))
  slice.s_axis <> merged
  m_axis <> slice.m_axis
}

object AxisArbiter extends Elaboratable {
  def generate(p: Params): RawModule = new AxisArbiter(
    AxisParams.from(p),
    ports = p.int("ports", 2),
    mode = ArbiterMode.parse(p.str("mode", "priority")),
    tagSource = p.bool("tag_source", false)
  )
}
