package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisBeat, AxisIO, AxisParams}

/** The NIC-packet queue of seed 004's Figure 2 (issue 17): frames the lookup sends to the
  * TCP engine wait here, apart from host frames. It never back-pressures its input (so the
  * lookup, and the host frames behind it, never wait for the engine): a frame that finds
  * the queue at its frame limit, or does not fit in the beats left, is dropped whole and
  * counted (TCP recovers), never a part of it delivered.
  *
  * Qlen (`status_qlen`) is the number of whole frames waiting (a frame leaves the count as
  * its last beat leaves); `cfg_max_frames` bounds it (0 or anything above `maxFrames`:
  * `maxFrames`). Beats are held in a `Mem` of `depth` beats (at least one largest frame)
  * with a registered output, as [[offnic.axis.AxisFifo]] in packet mode: a frame is
  * visible once its last beat is in.
  */
class NicPacketQueue(val p: AxisParams, val depth: Int, val maxFrames: Int) extends Module {
  require(depth >= 2 && isPow2(depth), s"depth must be a power of two >= 2, got $depth")
  require(maxFrames >= 1 && maxFrames <= depth, "maxFrames 1..depth")
  private val qBits = log2Ceil(maxFrames + 1)

  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))
  val cfg_max_frames = IO(Input(UInt(16.W)))
  /** Qlen: whole frames waiting. */
  val status_qlen = IO(Output(UInt(qBits.W)))
  /** One-cycle pulses: a whole frame was queued / dropped (at its last beat). */
  val stat_frame = IO(Output(Bool()))
  val stat_drop = IO(Output(Bool()))

  private val ptrBits = log2Ceil(depth) + 1
  private val beatType = new AxisBeat(p)
  private val ram = Mem(depth, UInt(beatType.getWidth.W))
  private val wrPtr = RegInit(0.U(ptrBits.W))    // next slot, including the frame coming in
  private val wrCommit = RegInit(0.U(ptrBits.W)) // end of the last whole frame
  private val rdPtr = RegInit(0.U(ptrBits.W))
  private val qlen = RegInit(0.U(qBits.W))
  private val midFrame = RegInit(false.B)
  private val dropping = RegInit(false.B)        // the frame coming in is being dropped

  private val limit = Mux(cfg_max_frames === 0.U || cfg_max_frames > maxFrames.U, maxFrames.U, cfg_max_frames)
  s_axis.tready := true.B
  private val in = s_axis.fire
  private val beat = s_axis.beat
  private val full = (wrPtr - rdPtr) === depth.U
  // A frame is refused at its first beat when Qlen is at the limit; any beat that finds the
  // RAM full drops the rest of its frame and what it had written.
  private val refuse = !midFrame && qlen >= limit
  private val drop = dropping || refuse || full
  when(in) { midFrame := !beat.tlast }
  when(in && !drop) {
    ram.write(wrPtr(ptrBits - 2, 0), beat.asUInt)
    wrPtr := wrPtr + 1.U
  }
  when(in && drop) {
    wrPtr := wrCommit
    dropping := !beat.tlast
  }
  private val commit = in && beat.tlast && !drop
  when(commit) { wrCommit := wrPtr + 1.U }
  stat_frame := commit
  stat_drop := in && beat.tlast && drop

  // Output stage: one register, loaded straight from the RAM (a registered read).
  private val outValid = RegInit(false.B)
  private val outBeat = Reg(UInt(beatType.getWidth.W))
  private val load = wrCommit =/= rdPtr && (!outValid || m_axis.tready)
  when(load) {
    outBeat := ram.read(rdPtr(ptrBits - 2, 0))
    rdPtr := rdPtr + 1.U
  }
  outValid := load || (outValid && !m_axis.tready)
  m_axis.tvalid := outValid
  m_axis.setBeat(outBeat.asTypeOf(beatType))
  private val leave = m_axis.fire && m_axis.tlast
  qlen := qlen + commit.asUInt - leave.asUInt
  status_qlen := qlen
}

object NicPacketQueue extends Elaboratable {
  /** AxisParams' keys, `depth` (beats, 512: 16 KiB of 32-byte beats) and `max_frames` (64). */
  def generate(p: Params): RawModule =
    new NicPacketQueue(AxisParams.from(p), p.int("depth", 512), p.int("max_frames", 64))
}
