package offnic.offload

import chisel3._
import chisel3.util._

/** Internet checksum arithmetic (RFC 1071): the one's complement sum of 16-bit words in
  * network byte order.
  *
  * Lane order is the AXI-Stream one: byte lane 0 is `tdata(7,0)`, the first byte on the
  * wire. Beats hold an even number of bytes, so a beat always starts at an even frame
  * offset and lane 2k is the high byte of word k, lane 2k+1 its low byte.
  *
  * Odd start offsets: a sum that begins at an odd offset pairs the bytes the other way
  * round. Because 2^16 = 1 (mod 2^16 - 1), moving every byte by one position multiplies
  * the sum by 2^8, which for a 16-bit one's complement value is a byte swap. So the
  * hardware always sums words aligned to the frame and swaps the folded result when the
  * start offset is odd; zero stays zero, so the result is exact, not just equivalent.
  */
object OnesSum {
  /** The 16-bit words of a beat in network byte order; bytes whose `mask` bit is clear
    * count as zero.
    */
  def words(data: UInt, mask: UInt): Seq[UInt] = {
    val n = mask.getWidth
    require(n % 2 == 0 && data.getWidth == 8 * n)
    def byte(i: Int): UInt = Mux(mask(i), data(8 * i + 7, 8 * i), 0.U(8.W))
    (0 until n / 2).map(k => Cat(byte(2 * k), byte(2 * k + 1)))
  }

  /** Lanes `start <= i < end` of an `n`-byte beat (start, end in 0..n). */
  def laneMask(n: Int, start: UInt, end: UInt): UInt =
    VecInit((0 until n).map(i => start <= i.U && i.U < end)).asUInt

  /** End-around-carry fold of a sum of up to 32 bits to 16 bits. Two folds suffice: after
    * the first the value is at most 0xFFFF + 0xFFFF, and the second cannot carry again.
    * A non-zero input never folds to zero (0xFFFF is the one's complement "minus zero").
    */
  def fold(x: UInt): UInt = {
    require(x.getWidth <= 32, s"fold takes up to 32 bits, got ${x.getWidth}")
    if (x.getWidth <= 16) x.pad(16)
    else {
      val once = x(15, 0) +& x(x.getWidth - 1, 16)
      (once(15, 0) + once(16))(15, 0)
    }
  }

  def swap(x: UInt): UInt = Cat(x(7, 0), x(15, 8))
}

/** What OnesSum sums in one beat: the lanes `start <= i < end` of `data`. */
class OnesSumIn(val bytes: Int) extends Bundle {
  val data = UInt((8 * bytes).W)
  val start = UInt((log2Ceil(bytes) + 1).W)
  val end = UInt((log2Ceil(bytes) + 1).W)
}

/** The sum of the 16-bit words of one beat between a start and an end lane, unfolded
  * (16 + log2(words) bits, so nothing is lost), as a fixed-latency pipeline with no
  * back-pressure: one beat in per cycle, its sum `latency` cycles later.
  *
  * Pipeline: the inputs are registered, then the lane mask and an adder tree over the
  * `bytes/2` words, with a register after every `levelsPerStage` levels and after the
  * last. At 32 bytes (16 words, 4 levels) and the default of 2 levels per stage:
  * mask + 16->8->4 | 4->2->1 | : latency 3, each stage a LUT level and two short carry
  * chains (17 and 18 bits), comfortable at 250 MHz on Kintex UltraScale+.
  */
class OnesSum(val bytes: Int, val levelsPerStage: Int = 2) extends Module {
  require(bytes >= 2 && isPow2(bytes), s"OnesSum needs a power of two >= 2 bytes, got $bytes")
  require(levelsPerStage >= 1)
  val levels: Int = log2Ceil(bytes / 2)
  val sumWidth: Int = 16 + levels

  val in = IO(Flipped(Valid(new OnesSumIn(bytes))))
  val out = IO(Valid(UInt(sumWidth.W)))

  private val v0 = RegNext(in.valid, false.B)
  private val b0 = RegEnable(in.bits, in.valid)

  private var terms: Seq[UInt] = OnesSum.words(b0.data, OnesSum.laneMask(bytes, b0.start, b0.end))
  private var valid: Bool = v0
  private var regs = 1
  private def stage(): Unit = {
    val v = valid
    terms = terms.map(t => RegEnable(t, v))
    valid = RegNext(v, false.B)
    regs += 1
  }
  for (l <- 1 to levels) {
    terms = terms.grouped(2).map { case Seq(a, b) => a +& b }.toSeq
    if (l % levelsPerStage == 0 || l == levels) stage()
  }
  if (levels == 0) stage()

  /** Cycles from `in` to `out`. */
  val latency: Int = regs

  out.valid := valid
  out.bits := terms.head.pad(sumWidth)
}

/** One beat of a frame seen by OnesSumFrame (packed: full `keep` except on the last beat,
  * low lanes kept).
  */
class OnesSumBeat(val bytes: Int) extends Bundle {
  val data = UInt((8 * bytes).W)
  val keep = UInt(bytes.W)
  val last = Bool()
}

class OnesSumResult(val tagWidth: Int, val idxBits: Int) extends Bundle {
  /** Folded one's complement sum (not complemented) of the frame from `start` to its
    * end, 16-bit words aligned to `start`; 0 when no byte was summed.
    */
  val sum = UInt(16.W)
  /** Frame length in bytes; saturates somewhere above 64 KB (never below the truth). */
  val len = UInt(OnesSumFrame.LenBits.W)
  /** Index of the frame's last beat (beats - 1), saturating at all ones. */
  val lastBeat = UInt(idxBits.W)
  val tag = UInt(tagWidth.W)
}

/** Watches a stream (one `in.valid` per transferred beat) and emits, once per frame, the
  * one's complement sum from byte `start` (sampled with the frame's first beat, 16 bits)
  * to the end of the frame, with its length and a caller's `tag` (also sampled with the
  * first beat). No back-pressure: results come `latency` cycles after the last beat, in
  * frame order, at most one per cycle.
  *
  * Stages: the lane range of each beat (from its index in the frame and `start`; the end
  * lane from `keep`) goes straight into OnesSum's input register; then OnesSum's tree
  * (2 stages at 32 bytes); then the frame accumulator (a partial end-around fold of the
  * running sum plus the beat's sum, one 3-input add); then the final fold and the byte
  * swap for an odd start. At 32 bytes the latency is 5 cycles.
  */
class OnesSumFrame(val bytes: Int, val tagWidth: Int = 1, val levelsPerStage: Int = 2) extends Module {
  require(bytes >= 2 && isPow2(bytes))
  require(tagWidth >= 1)
  private val lg = log2Ceil(bytes)
  private val idxBits = OnesSumFrame.beatIdxBits(bytes)

  val in = IO(Flipped(Valid(new OnesSumBeat(bytes))))
  val start = IO(Input(UInt(16.W)))
  val tag = IO(Input(UInt(tagWidth.W)))
  val out = IO(Valid(new OnesSumResult(tagWidth, idxBits)))

  // Position in the frame of the beat now on `in`; the frame's start and tag are taken
  // from its first beat and held for the rest of it.
  private val inFrame = RegInit(false.B)
  private val beatIdx = RegInit(0.U(idxBits.W))
  private val heldStart = Reg(UInt(16.W))
  private val heldTag = Reg(UInt(tagWidth.W))
  private val first = !inFrame
  private val frameStart = Mux(first, start, heldStart)
  private val frameTag = Mux(first, tag, heldTag)
  when(in.valid) {
    inFrame := !in.bits.last
    beatIdx := Mux(in.bits.last, 0.U, Mux(beatIdx.andR, beatIdx, beatIdx + 1.U))
    heldStart := frameStart
    heldTag := frameTag
  }

  // The lanes of this beat to sum: from the start lane in the start beat, all lanes after
  // it, none before; up to the last kept lane.
  private val startBeat = frameStart(15, lg)
  private val startLane = frameStart(lg - 1, 0)
  private val lo = Mux(beatIdx < startBeat, bytes.U, Mux(beatIdx === startBeat, startLane, 0.U))
  private val end = PopCount(in.bits.keep)

  private val beatSum = Module(new OnesSum(bytes, levelsPerStage))
  beatSum.in.valid := in.valid
  beatSum.in.bits.data := in.bits.data
  beatSum.in.bits.start := lo
  beatSum.in.bits.end := end

  private class Side extends Bundle {
    val first = Bool()
    val last = Bool()
    val odd = Bool()
    val end = UInt((lg + 1).W)
    val lastBeat = UInt(idxBits.W)
    val tag = UInt(tagWidth.W)
  }
  private val side = Wire(new Side)
  side.first := first
  side.last := in.bits.last
  side.odd := frameStart(0)
  side.end := end
  side.lastBeat := beatIdx
  side.tag := frameTag
  private val sideAtSum = ShiftRegister(side, beatSum.latency)

  // Accumulator: keep it bounded by folding the running sum partially on every beat.
  private val accBits = (beatSum.sumWidth max 17) + 1
  private val acc = Reg(UInt(accBits.W))
  when(beatSum.out.valid) {
    val prev = Mux(sideAtSum.first, 0.U, acc(15, 0) +& acc(accBits - 1, 16))
    acc := (prev +& beatSum.out.bits)(accBits - 1, 0)
  }
  private val accDone = RegNext(beatSum.out.valid && sideAtSum.last, false.B)
  private val accSide = RegEnable(sideAtSum, beatSum.out.valid && sideAtSum.last)

  private val folded = OnesSum.fold(acc)
  out.valid := RegNext(accDone, false.B)
  out.bits.sum := RegEnable(Mux(accSide.odd, OnesSum.swap(folded), folded), accDone)
  out.bits.len := RegEnable(Cat(accSide.lastBeat, 0.U(lg.W)) +& accSide.end, accDone)
  out.bits.lastBeat := RegEnable(accSide.lastBeat, accDone)
  out.bits.tag := RegEnable(accSide.tag, accDone)

  /** Cycles from a frame's last beat on `in` to its result on `out`. */
  val latency: Int = beatSum.latency + 2
}

object OnesSumFrame {
  /** Bits of a saturating beat index that covers every 16-bit byte position, plus one so
    * that "beyond 64 KB" is distinct.
    */
  def beatIdxBits(bytes: Int): Int = 16 - log2Ceil(bytes) + 1
  val LenBits: Int = 18
}
