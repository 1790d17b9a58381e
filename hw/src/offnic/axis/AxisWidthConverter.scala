package offnic.axis

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}

/** Changes the data width of a stream by a power-of-two ratio, keeping frames intact.
  *
  * Frames must be packed: every beat but a frame's last has all `tkeep` bits set, and the
  * last beat's kept bytes are the low ones (what MACs, DMA engines and cocotbext-axi
  * produce). Sideband: `tid`/`tdest` are per frame and pass through; `tuser` on the
  * output is that of the last input beat it contains (so an end-of-frame mark such as
  * "bad frame" lands on the output's last beat), and is repeated on every beat when
  * downsizing.
  *
  * Upsizing gathers `ratio` input beats (fewer at the end of a frame) into one output
  * beat; downsizing emits a wide beat as `ratio` narrow ones, skipping the empty tail of a
  * frame's last beat. Both run at full input (upsize) or output (downsize) rate; the
  * output is registered.
  */
class AxisWidthConverter(val in: AxisParams, val outBytes: Int) extends Module {
  val out: AxisParams = in.withBytes(outBytes)
  val s_axis = IO(Flipped(new AxisIO(in)))
  val m_axis = IO(new AxisIO(out))

  if (in.dataBytes == outBytes) {
    m_axis.tvalid := s_axis.tvalid
    m_axis.setBeat(s_axis.beat)
    s_axis.tready := m_axis.tready
  } else if (outBytes > in.dataBytes) {
    upsize(outBytes / in.dataBytes)
  } else {
    downsize(in.dataBytes / outBytes)
  }

  private def upsize(ratio: Int): Unit = {
    val lanes = Reg(Vec(ratio, UInt(in.dataBits.W)))
    val keeps = Reg(Vec(ratio, UInt(in.dataBytes.W)))
    val tail = Reg(new AxisBeat(in)) // last input beat: tlast and sideband
    val lane = RegInit(0.U(log2Ceil(ratio).W))
    val outValid = RegInit(false.B)

    s_axis.tready := !outValid || m_axis.tready
    when(m_axis.fire) { outValid := false.B }
    when(s_axis.fire) {
      val b = s_axis.beat
      lanes(lane) := b.tdata
      keeps(lane) := b.tkeep
      when(lane === 0.U) { // a fresh output beat: lanes not yet written carry no bytes
        for (i <- 1 until ratio) keeps(i) := 0.U
      }
      tail := b
      val done = b.tlast || lane === (ratio - 1).U
      lane := Mux(done, 0.U, lane + 1.U)
      outValid := done
    }

    m_axis.tvalid := outValid
    m_axis.tdata := lanes.asUInt
    m_axis.tkeep := keeps.asUInt
    m_axis.tlast := tail.tlast
    m_axis.tuser.foreach(_ := tail.tuser.get)
    m_axis.tid.foreach(_ := tail.tid.get)
    m_axis.tdest.foreach(_ := tail.tdest.get)
  }

  private def downsize(ratio: Int): Unit = {
    val held = Reg(new AxisBeat(in))
    val heldValid = RegInit(false.B)
    val lane = RegInit(0.U(log2Ceil(ratio).W))

    val keepLanes = held.tkeep.asTypeOf(Vec(ratio, UInt(outBytes.W)))
    val dataLanes = held.tdata.asTypeOf(Vec(ratio, UInt(out.dataBits.W)))
    // The last lane with bytes: the highest one if the beat is full, else the last kept.
    val nextEmpty = VecInit((0 until ratio).map(i => if (i + 1 < ratio) keepLanes(i + 1) === 0.U else true.B))
    val lastLane = lane === (ratio - 1).U || (held.tlast && nextEmpty(lane))

    s_axis.tready := !heldValid || (m_axis.tready && lastLane)
    when(m_axis.fire) {
      lane := Mux(lastLane, 0.U, lane + 1.U)
      when(lastLane) { heldValid := false.B }
    }
    when(s_axis.fire) {
      held := s_axis.beat
      heldValid := true.B
    }

    m_axis.tvalid := heldValid
    m_axis.tdata := dataLanes(lane)
    m_axis.tkeep := keepLanes(lane)
    m_axis.tlast := held.tlast && lastLane
    m_axis.tuser.foreach(_ := held.tuser.get)
    m_axis.tid.foreach(_ := held.tid.get)
    m_axis.tdest.foreach(_ := held.tdest.get)
  }
}

object AxisWidthConverter extends Elaboratable {
  def generate(p: Params): RawModule =
    new AxisWidthConverter(AxisParams.from(p, bytesKey = "in_bytes"), p.int("out_bytes", 32))
}
