package offnic.axis

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}

/** Synchronous AXI-Stream FIFO in a `Mem` (LUT-RAM or block RAM after synthesis: the read
  * is registered by the output stage, which synthesis folds into the RAM).
  *
  * Plain mode: a beat is visible at the output two cycles after it entered. Capacity is
  * `depth` beats in the RAM plus one in the output register.
  *
  * Packet mode (`packet`): a frame becomes visible only once its last beat is in, so the
  * output never stalls mid-frame waiting for the input. A frame longer than `depth` beats
  * can never be held whole; it is accepted and discarded (stat_drop_oversize). With
  * `dropBad`, a frame whose last beat has `tuser(0)` set (the MAC's "bad frame" mark) is
  * discarded (stat_drop_bad).
  *
  * No combinational path from input to output: s_axis_tready depends only on state, and
  * m_axis is driven from registers.
  */
class AxisFifo(val p: AxisParams, val depth: Int, val packet: Boolean = false, val dropBad: Boolean = false)
    extends Module {
  require(depth >= 2 && isPow2(depth), s"AxisFifo depth must be a power of two >= 2, got $depth")
  require(!dropBad || packet, "dropBad needs packet mode: a bad frame is known only at its end")
  require(!dropBad || p.userWidth >= 1, "dropBad needs tuser(0) as the bad-frame mark")

  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))
  /** Beats held (RAM + output register). */
  val status_occupancy = IO(Output(UInt(log2Ceil(depth + 2).W)))
  /** One-cycle pulses: a whole frame entered and will be delivered / was discarded. */
  val stat_frame = IO(Output(Bool()))
  val stat_drop_bad = IO(Output(Bool()))
  val stat_drop_oversize = IO(Output(Bool()))

  private val ptrBits = log2Ceil(depth) + 1 // one extra bit tells full from empty
  private val beatType = new AxisBeat(p)
  private val ram = Mem(depth, UInt(beatType.getWidth.W))

  private val wrPtr = RegInit(0.U(ptrBits.W)) // next slot to write, including an unfinished frame
  private val wrCommit = RegInit(0.U(ptrBits.W)) // end of the last whole frame the reader may see
  private val rdPtr = RegInit(0.U(ptrBits.W))
  private val discarding = RegInit(false.B) // swallowing the rest of an oversize frame

  private val full = (wrPtr - rdPtr) === depth.U
  // The unfinished frame alone fills the RAM: it can never complete, so drop it.
  private val oversize = packet.B && (wrPtr - wrCommit) === depth.U

  s_axis.tready := discarding || oversize || !full
  private val accept = s_axis.fire && !discarding && !oversize
  private val beat = s_axis.beat
  private val isBad = dropBad.B && beat.tuser.map(_(0)).getOrElse(false.B)

  when(accept) {
    ram.write(wrPtr(ptrBits - 2, 0), beat.asUInt)
    wrPtr := wrPtr + 1.U
  }

  stat_frame := false.B
  stat_drop_bad := false.B
  stat_drop_oversize := false.B
  if (packet) {
    when(accept && beat.tlast) {
      when(isBad) {
        wrPtr := wrCommit
        stat_drop_bad := true.B
      }.otherwise {
        wrCommit := wrPtr + 1.U
        stat_frame := true.B
      }
    }
    when(s_axis.fire && oversize) {
      wrPtr := wrCommit
      discarding := !beat.tlast
      stat_drop_oversize := true.B
    }
    when(s_axis.fire && discarding && beat.tlast) {
      discarding := false.B
    }
  } else {
    stat_frame := accept && beat.tlast
  }

  // Output stage: one register, loaded straight from the RAM (a registered read).
  private val visible = if (packet) wrCommit else wrPtr
  private val outValid = RegInit(false.B)
  private val outBeat = Reg(UInt(beatType.getWidth.W))
  private val load = visible =/= rdPtr && (!outValid || m_axis.tready)
  when(load) {
    outBeat := ram.read(rdPtr(ptrBits - 2, 0))
    rdPtr := rdPtr + 1.U
  }
  outValid := load || (outValid && !m_axis.tready)

  m_axis.tvalid := outValid
  m_axis.setBeat(outBeat.asTypeOf(beatType))
  status_occupancy := ((wrPtr - rdPtr) +& outValid)(status_occupancy.getWidth - 1, 0)
}

object AxisFifo extends Elaboratable {
  def generate(p: Params): RawModule = new AxisFifo(
    AxisParams.from(p),
    depth = p.int("depth", 64),
    packet = p.bool("packet", false),
    dropBad = p.bool("drop_bad", false)
  )

  /** `AxisFifo(in, depth)` returns the FIFO's output, for one-line wiring. */
  def apply(in: AxisIO, depth: Int, packet: Boolean = false, dropBad: Boolean = false): AxisIO = {
    val q = Module(new AxisFifo(in.p, depth, packet, dropBad))
    q.s_axis <> in
    q.m_axis
  }
}
