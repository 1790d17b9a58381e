package offnic.offload

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisFifo, AxisIO, AxisParams, AxisRegSlice}

/** The per-frame TX checksum command, carried in `s_axis_tuser` (33 bits, the same value
  * on every beat of a frame; the block reads it from the first beat):
  *
  * | bits  | field  | meaning |
  * |-------|--------|---------|
  * | 0     | enable | insert a checksum into this frame |
  * | 16:1  | start  | byte offset in the frame where summing begins (Linux `csum_start`) |
  * | 32:17 | offset | byte offset of the 16-bit checksum field (`csum_start + csum_offset`) |
  */
class TxChecksumCmd extends Bundle {
  val offset = UInt(16.W)
  val start = UInt(16.W)
  val enable = Bool()
}

/** One frame's verdict, queued until the frame leaves. */
class TxChecksumResult extends Bundle {
  val csum = UInt(16.W) // the value to write, high byte at `hi`, low byte at `lo`
  val hi = UInt(16.W)
  val lo = UInt(16.W)
  val patch = Bool() // enabled and a valid command
  val drop = Bool() // the packet FIFO discarded this frame (longer than it holds)
}

/** TX checksum offload with Linux CHECKSUM_PARTIAL semantics.
  *
  * The driver has written the pseudo-header sum (folded, not complemented) into the
  * checksum field. For a frame whose command has `enable`, the block sums the frame from
  * `start` to its end, in 16-bit words aligned to `start` (so an odd start is correct),
  * and writes the complement of the folded sum at `offset`, high byte first. A result of
  * 0 is written as 0xFFFF (as Linux' skb_checksum_help does for every protocol; required
  * for UDP, where 0 means "no checksum", and equivalent for TCP and others). The field
  * normally lies inside the summed range; if it lies before `start` it is simply
  * overwritten with the complemented sum of `start` to the end.
  *
  * Bad command: with `enable`, if `start >= length` or `offset + 2 > length`, the frame
  * passes unchanged and `stat_tx_csum_bad_cmd` pulses once (6 cycles after the frame's
  * last beat was taken). Frames without `enable` pass unchanged and count nothing.
  *
  * Structure: the checksum field precedes the end of the frame, so every frame is held
  * whole in a packet-mode AxisFifo (`depth` beats; 512 x 32 B holds a 9 KB jumbo) while
  * OnesSumFrame sums it as it enters. Its result goes into a small queue (`results`
  * entries); when the frame leaves the FIFO the two bytes are replaced on the way to an
  * output register slice. A frame longer than the FIFO is discarded by the FIFO
  * (`stat_tx_csum_drop_oversize`, not also counted as a bad command) and its result
  * with it.
  *
  * Full throughput: a frame needs a result-queue credit to start entering (`results`
  * frames may be in flight between input and output, far more than the ~9 that
  * back-to-back one-beat frames need), and the output takes the next frame's result as
  * the previous frame's last beat leaves. So the input takes a beat every cycle for any
  * mix of sizes, and the output sends one whenever a whole frame and its sum are ready:
  * a frame starts to leave 8 cycles after its last beat was taken (when the output is
  * free); only a frame longer than the one before it leaves a gap (store and forward).
  * Output `m_axis` has no tuser.
  */
class TxChecksum(val bytes: Int = 32, val depth: Int = 512, val results: Int = 32) extends Module {
  require(bytes >= 2 && isPow2(bytes), s"TxChecksum needs a power of two >= 2 bytes, got $bytes")
  require(isPow2(depth) && depth >= 2 && depth * bytes <= 65536,
    s"depth must be a power of two with depth * bytes <= 64 KB (16-bit offsets), got $depth")
  require(results >= 2)
  private val lg = log2Ceil(bytes)

  val inP: AxisParams = AxisParams(bytes, userWidth = TxChecksum.CmdWidth)
  val outP: AxisParams = AxisParams(bytes)

  val s_axis = IO(Flipped(new AxisIO(inP)))
  val m_axis = IO(new AxisIO(outP))
  val stat_tx_csum_bad_cmd = IO(Output(Bool()))
  val stat_tx_csum_drop_oversize = IO(Output(Bool()))

  private val fifo = Module(new AxisFifo(outP, depth, packet = true))
  private val summer = Module(new OnesSumFrame(bytes, TxChecksum.CmdWidth))
  private val resq = Module(new Queue(new TxChecksumResult, results))

  // ---- input: a frame starts only with a result credit --------------------------------
  private val inFrame = RegInit(false.B)
  private val outstanding = RegInit(0.U(log2Ceil(results + 1).W)) // frames started, not yet out
  private val go = inFrame || outstanding =/= results.U
  fifo.s_axis.tvalid := s_axis.tvalid && go
  fifo.s_axis.tdata := s_axis.tdata
  fifo.s_axis.tkeep := s_axis.tkeep
  fifo.s_axis.tlast := s_axis.tlast
  s_axis.tready := fifo.s_axis.tready && go
  private val fire = s_axis.tvalid && s_axis.tready
  when(fire) { inFrame := !s_axis.tlast }

  summer.in.valid := fire
  summer.in.bits.data := s_axis.tdata
  summer.in.bits.keep := s_axis.tkeep
  summer.in.bits.last := s_axis.tlast
  private val cmdIn = s_axis.tuser.get.asTypeOf(new TxChecksumCmd)
  summer.start := cmdIn.start
  summer.tag := s_axis.tuser.get

  // ---- verdict per frame ---------------------------------------------------------------
  private val r = summer.out.bits
  private val cmd = r.tag.asTypeOf(new TxChecksumCmd)
  private val bad = cmd.enable && (cmd.start >= r.len || (cmd.offset +& 2.U) > r.len)
  private val drop = r.lastBeat >= depth.U
  private val csum = ~r.sum
  resq.io.enq.valid := summer.out.valid
  resq.io.enq.bits.csum := Mux(csum === 0.U, "hffff".U(16.W), csum)
  resq.io.enq.bits.hi := cmd.offset
  resq.io.enq.bits.lo := cmd.offset + 1.U
  resq.io.enq.bits.patch := cmd.enable && !bad
  resq.io.enq.bits.drop := drop
  stat_tx_csum_bad_cmd := RegNext(summer.out.valid && bad && !drop, false.B)
  stat_tx_csum_drop_oversize := RegNext(fifo.stat_drop_oversize, false.B)

  // ---- output: patch the field on the way out ------------------------------------------
  private val fo = fifo.m_axis
  private val cur = Reg(new TxChecksumResult)
  private val curValid = RegInit(false.B)
  private val passing = curValid && !cur.drop
  private val slice = Module(new AxisRegSlice(outP))
  slice.s_axis.tvalid := fo.tvalid && passing
  fo.tready := slice.s_axis.tready && passing
  private val outFire = fo.tvalid && fo.tready
  private val outIdx = RegInit(0.U((16 - lg).W))
  when(outFire) { outIdx := Mux(fo.tlast, 0.U, outIdx + 1.U) }

  private val done = (outFire && fo.tlast) || (curValid && cur.drop)
  resq.io.deq.ready := !curValid || done
  when(resq.io.deq.ready) {
    curValid := resq.io.deq.valid
    cur := resq.io.deq.bits
  }
  outstanding := outstanding + (fire && !inFrame).asUInt - done.asUInt

  private val hiHere = cur.patch && outIdx === cur.hi(15, lg)
  private val loHere = cur.patch && outIdx === cur.lo(15, lg)
  private val hiLanes = Mux(hiHere, UIntToOH(cur.hi(lg - 1, 0), bytes), 0.U)
  private val loLanes = Mux(loHere, UIntToOH(cur.lo(lg - 1, 0), bytes), 0.U)
  private val patched = (0 until bytes).map { i =>
    val b = fo.tdata(8 * i + 7, 8 * i)
    Mux(hiLanes(i), cur.csum(15, 8), Mux(loLanes(i), cur.csum(7, 0), b))
  }
  slice.s_axis.tdata := Cat(patched.reverse)
  slice.s_axis.tkeep := fo.tkeep
  slice.s_axis.tlast := fo.tlast
  m_axis <> slice.m_axis
}

object TxChecksum extends Elaboratable {
  val CmdWidth: Int = 33

  def generate(p: Params): RawModule = new TxChecksum(
    bytes = p.int("bytes", 32),
    depth = p.int("depth", 512),
    results = p.int("results", 32)
  )
}
