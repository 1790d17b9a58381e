package offnic.axis

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.cdc.GraySync

/** AXI-Stream FIFO across two clock domains (e.g. MAC clock to core clock).
  *
  * The RAM is written in the source domain and read in the destination domain; the write
  * and read pointers cross as Gray codes through two-flop synchronisers, so each side
  * sees a conservative view of the other (full and empty assert late, deassert late,
  * never wrongly). Full throughput in both domains.
  *
  * Reset: `s_rst` and `m_rst` are synchronous to their own clocks and must be asserted
  * together (from one reset source, synchronised into each domain), because each side's
  * pointer is meaningful only relative to the other's.
  */
class AxisAsyncFifo(val p: AxisParams, val depth: Int) extends RawModule {
  require(depth >= 4 && isPow2(depth), s"AxisAsyncFifo depth must be a power of two >= 4, got $depth")

  val s_clk = IO(Input(Clock()))
  val s_rst = IO(Input(Bool()))
  val m_clk = IO(Input(Clock()))
  val m_rst = IO(Input(Bool()))
  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))

  private val ptrBits = log2Ceil(depth) + 1
  private val beatType = new AxisBeat(p)
  private val ram = Mem(depth, UInt(beatType.getWidth.W))

  // Gray pointers, each registered in its own domain; declared here so both sides see them.
  private val wrGray = Wire(UInt(ptrBits.W))
  private val rdGray = Wire(UInt(ptrBits.W))

  withClockAndReset(s_clk, s_rst) {
    val wrBin = RegInit(0.U(ptrBits.W))
    val wrGrayReg = RegInit(0.U(ptrBits.W))
    val rdGraySeen = GraySync(rdGray, "rd_gray")
    // Full: the pointers differ by exactly `depth`, which in Gray code means the top two
    // bits inverted and the rest equal.
    val full = wrGrayReg === (rdGraySeen ^ (3.U << (ptrBits - 2)).asUInt(ptrBits - 1, 0))
    s_axis.tready := !full
    when(s_axis.fire) {
      ram.write(wrBin(ptrBits - 2, 0), s_axis.beat.asUInt)
      wrBin := wrBin + 1.U
      wrGrayReg := GraySync.toGray(wrBin + 1.U)
    }
    wrGray := wrGrayReg
  }

  withClockAndReset(m_clk, m_rst) {
    val rdBin = RegInit(0.U(ptrBits.W))
    val rdGrayReg = RegInit(0.U(ptrBits.W))
    val wrGraySeen = GraySync(wrGray, "wr_gray")
    val outValid = RegInit(false.B)
    val outBeat = Reg(UInt(beatType.getWidth.W))
    val load = rdGrayReg =/= wrGraySeen && (!outValid || m_axis.tready)
    when(load) {
      outBeat := ram.read(rdBin(ptrBits - 2, 0))
      rdBin := rdBin + 1.U
      rdGrayReg := GraySync.toGray(rdBin + 1.U)
    }
    outValid := load || (outValid && !m_axis.tready)
    m_axis.tvalid := outValid
    m_axis.setBeat(outBeat.asTypeOf(beatType))
    rdGray := rdGrayReg
  }
}

object AxisAsyncFifo extends Elaboratable {
  def generate(p: Params): RawModule = new AxisAsyncFifo(AxisParams.from(p), p.int("depth", 64))
}
