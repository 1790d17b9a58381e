package offnic.offload

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisIO, AxisParams, AxisRegSlice}

/** A stream of 16-bit results (tvalid/tready/tdata only: one result per transfer). */
class ChecksumResultIO extends Bundle {
  val tvalid = Output(Bool())
  val tready = Input(Bool())
  val tdata = Output(UInt(16.W))
}

/** RX checksum for Linux CHECKSUM_COMPLETE.
  *
  * Frames pass from `s_axis` to `m_axis` unchanged (tdata, tkeep, tlast, tuser, tid,
  * tdest) through one register slice: one cycle of latency, full throughput. For every
  * frame, in frame order, `m_axis_csum` carries the 16-bit one's complement sum (folded,
  * not complemented, words aligned to the start byte) from byte `cfg_start` to the end of
  * the frame: with `cfg_start` = 14, the end of the Ethernet header, that is Linux'
  * `skb->csum`. A frame no longer than `cfg_start` gives 0. `cfg_start` is sampled with
  * each frame's first beat. The sum is offered 7 cycles after the frame's last beat was
  * taken (OnesSumFrame's 5, the result queue's and the output register's 1 each).
  *
  * `cfg_start` is an input (a register field later), normally 14; any value 0..65535
  * works, odd ones included.
  *
  * A frame needs a credit in the result queue (`results` entries in LUT-RAM, then an
  * output register) to start, so a consumer that stalls `m_axis_csum` holds up the
  * frames after `results` of them and never loses a sum.
  */
class RxChecksum(val p: AxisParams, val results: Int = 32) extends Module {
  require(p.dataBytes >= 2, "RxChecksum needs at least a 16-bit stream")
  require(results >= 2, s"results must be >= 2, got $results")

  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))
  val cfg_start = IO(Input(UInt(16.W)))
  val m_axis_csum = IO(new ChecksumResultIO)

  private val slice = Module(new AxisRegSlice(p))
  private val summer = Module(new OnesSumFrame(p.dataBytes))
  private val sums = Module(new Queue(UInt(16.W), results))

  private val inFrame = RegInit(false.B)
  // Frames started whose sum has not left: at most `results`, so the queue never overflows.
  private val outstanding = RegInit(0.U(log2Ceil(results + 2).W))
  private val go = inFrame || outstanding < results.U
  slice.s_axis.tvalid := s_axis.tvalid && go
  slice.s_axis.setBeat(s_axis.beat)
  s_axis.tready := slice.s_axis.tready && go
  private val fire = s_axis.tvalid && s_axis.tready
  when(fire) { inFrame := !s_axis.tlast }
  m_axis <> slice.m_axis

  summer.in.valid := fire
  summer.in.bits.data := s_axis.tdata
  summer.in.bits.keep := s_axis.tkeep
  summer.in.bits.last := s_axis.tlast
  summer.start := cfg_start
  summer.tag := 0.U

  sums.io.enq.valid := summer.out.valid
  sums.io.enq.bits := summer.out.bits.sum
  // Output register, loaded from the queue (LUT-RAM) whenever it is empty or being taken.
  private val outValid = RegInit(false.B)
  private val outSum = Reg(UInt(16.W))
  sums.io.deq.ready := !outValid || m_axis_csum.tready
  when(sums.io.deq.ready) {
    outValid := sums.io.deq.valid
    outSum := sums.io.deq.bits
  }
  m_axis_csum.tvalid := outValid
  m_axis_csum.tdata := outSum
  private val taken = m_axis_csum.tvalid && m_axis_csum.tready
  outstanding := outstanding + (fire && !inFrame).asUInt - taken.asUInt
}

object RxChecksum extends Elaboratable {
  def generate(p: Params): RawModule =
    new RxChecksum(AxisParams.from(p, bytes = 32, user = 1), results = p.int("results", 32))
}
