package offnic.offload

import chisel3._
import chisel3.util._
import offnic.axis.{AxisIO, AxisParams}

/** Where this module's user is in the frame: driven on every beat, read by the parser
  * that owns the module to pick its fields and to say which byte ranges to sum.
  */
class FramePos extends Bundle {
  /** A beat passes this cycle. */
  val fire = Bool()
  /** It is the frame's first beat. */
  val first = Bool()
  /** Its index in the frame, saturating (frames are at most ~64 KiB + headers). */
  val beat = UInt(12.W)
  /** The beat's lanes, lane 0 first on the wire. */
  val lane = Vec(32, UInt(8.W))
}

/** Frame byte ranges `[start, end)` to sum; offsets from the frame's first byte. */
class SumRanges extends Bundle {
  val aStart = UInt(7.W)
  val aEnd = UInt(7.W)
  val bStart = UInt(7.W)
  val bEnd = UInt(17.W)
}

/** What one frame's sums came to: `done` pulses once per frame, in frame order. */
class FrameSumsOut extends Bundle {
  /** One's complement sums of ranges a and b, unfolded (20 bits; fold with [[OnesSum.fold]]). */
  val aSum = UInt(20.W)
  val bSum = UInt(20.W)
  /** Frame bytes (by tkeep). */
  val len = UInt(18.W)
}

/** The skeleton every RX stream monitor shares: frames pass from `s_axis` to `m_axis`
  * unchanged and without delay, while two [[OnesSum]] trees sum two byte ranges of each
  * frame that the owner names beat by beat (a header and what follows it, typically).
  * Each frame yields one `out` pulse a fixed 5 cycles after its last beat.
  *
  * The ranges are read on every beat, so the owner must know them by the first beat that
  * holds a byte of them; for Ethernet/IPv4 parsers everything the ranges depend on (tag,
  * IHL, total length) is in the first 32-byte beat.
  *
  * Flow control: the owner promises one result per frame on its own queue of `depth`
  * entries and says when it takes one (`taken`). A frame may start only while fewer than
  * `depth` results are promised and not taken, so nothing downstream of the sums ever
  * overflows or stalls.
  */
class FrameSums(val p: AxisParams, val depth: Int) extends Module {
  require(p.dataBytes == 32, "FrameSums is written for 32-byte beats")
  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))
  val pos = IO(Output(new FramePos))
  val ranges = IO(Input(new SumRanges))
  val taken = IO(Input(Bool()))
  val out = IO(Valid(new FrameSumsOut))

  private val open = RegInit(0.U(log2Ceil(depth + 1).W))
  private val inFrame = RegInit(false.B)
  private val mayTake = inFrame || open =/= depth.U
  m_axis.tvalid := s_axis.tvalid && mayTake
  m_axis.setBeat(s_axis.beat)
  s_axis.tready := m_axis.tready && mayTake
  private val fire = s_axis.fire
  private val first = !inFrame
  open := open + (fire && first).asUInt - taken.asUInt

  private val beat = RegInit(0.U(12.W))
  when(fire) {
    inFrame := !s_axis.tlast
    beat := Mux(s_axis.tlast, 0.U, Mux(beat.andR, beat, beat + 1.U))
  }
  pos.fire := fire
  pos.first := first
  pos.beat := beat
  pos.lane := s_axis.tdata.asTypeOf(Vec(32, UInt(8.W)))

  // ---- Lane ranges of this beat.
  private val base = Cat(beat, 0.U(5.W)) // byte offset of this beat
  private def laneOf(x: UInt): UInt = Mux(x <= base, 0.U, Mux(x - base >= 32.U, 32.U, (x - base)(5, 0)))
  private val keepEnd = PopCount(s_axis.tkeep)
  private def min(a: UInt, b: UInt): UInt = Mux(a < b, a, b)
  private def sum(start: UInt, end: UInt): OnesSum = {
    val s = Module(new OnesSum(32))
    s.in.valid := fire
    s.in.bits.data := s_axis.tdata
    s.in.bits.start := laneOf(start)
    s.in.bits.end := min(laneOf(end), keepEnd)
    s
  }
  private val aSum = sum(ranges.aStart, ranges.aEnd)
  private val bSum = sum(ranges.bStart, ranges.bEnd)

  // Side information travels with each beat through the trees' latency.
  class Side extends Bundle {
    val first = Bool()
    val last = Bool()
    val len = UInt(18.W) // frame bytes up to and including this beat
  }
  private val side = Wire(new Side)
  side.first := first
  side.last := s_axis.tlast
  side.len := base +& keepEnd
  private val sideAt = ShiftRegister(side, aSum.latency)
  private val sumValid = aSum.out.valid && bSum.out.valid // the same cycle: one latency

  private val aAcc = Reg(UInt(20.W))
  private val bAcc = Reg(UInt(20.W))
  private def acc(a: UInt, add: UInt, restart: Bool): UInt = {
    val prev = Mux(restart, 0.U, a(15, 0) +& a(19, 16))
    (prev +& add)(19, 0)
  }
  when(sumValid) {
    aAcc := acc(aAcc, aSum.out.bits, sideAt.first)
    bAcc := acc(bAcc, bSum.out.bits, sideAt.first)
  }
  out.valid := RegNext(sumValid && sideAt.last, false.B)
  out.bits.aSum := aAcc
  out.bits.bSum := bAcc
  out.bits.len := RegEnable(sideAt.len, sumValid && sideAt.last)
}
