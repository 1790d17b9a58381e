package offnic.toe

import chisel3._
import chisel3.util._
import offnic.axis.{AxisIO, AxisParams}

/** The NIC-packet queue as the engine takes it inside the NIC (issue 17): each frame
  * [[TcpSteer]] sends to the engine, with its [[SteerSeg]], waits in one [[NicPacketQueue]],
  * so a frame and its description are queued, dropped and counted together.
  *
  * The SteerSeg travels in the queue as prefix beats in front of its frame (as many 32-byte
  * beats as it needs); the output side takes them off again into `m_seg` and passes the
  * frame on `m_axis`. The input's `tid`/`tuser` (the receive path's port and mark) are not
  * kept: the engine needs neither.
  *
  * Host-first (`cfg_fcfs` = 0): the queue never back-pressures, a frame that finds it full is
  * dropped whole (NicPacketQueue), so the lookup and the host frames behind it never wait for
  * the engine. FCFS (1): one shared queue in arrival order, as seed 004's baseline: a frame
  * for the engine that finds Qlen at its limit waits at its start, and the host frames
  * behind it in the lookup wait with it (a frame can still be dropped if the beats run out).
  */
class NicSegQueue(val idBits: Int, val inP: AxisParams, val depth: Int, val maxFrames: Int) extends Module {
  private val p = AxisParams(32)
  val s_axis = IO(Flipped(new AxisIO(inP)))
  val s_seg = IO(Flipped(Decoupled(new SteerSeg(idBits))))
  val m_axis = IO(new AxisIO(p))
  val m_seg = IO(Decoupled(new SteerSeg(idBits)))
  val cfg_max_frames = IO(Input(UInt(16.W)))
  val cfg_fcfs = IO(Input(Bool()))
  private val q = Module(new NicPacketQueue(p, depth, maxFrames))
  val status_qlen = IO(Output(UInt(q.status_qlen.getWidth.W)))
  /** Anything inside (a frame queued, or one part-way in or out). */
  val status_busy = IO(Output(Bool()))
  val stat_frame = IO(Output(Bool()))
  val stat_drop = IO(Output(Bool()))

  private val segBits = s_seg.bits.getWidth
  private val nPre = (segBits + p.dataBits - 1) / p.dataBits
  private val idxBits = log2Ceil(nPre + 1)
  q.cfg_max_frames := cfg_max_frames
  status_qlen := q.status_qlen
  stat_frame := q.stat_frame
  stat_drop := q.stat_drop

  // ---- In: nPre prefix beats (the SteerSeg, low word first), then the frame.
  private val inIdx = RegInit(0.U(idxBits.W))
  private val inPre = inIdx =/= nPre.U
  private val segWords = VecInit.tabulate(nPre)(k => s_seg.bits.asUInt.pad(nPre * p.dataBits)(p.dataBits * k + p.dataBits - 1, p.dataBits * k))
  private val limit = Mux(cfg_max_frames === 0.U || cfg_max_frames > maxFrames.U, maxFrames.U, cfg_max_frames)
  private val hold = cfg_fcfs && inIdx === 0.U && q.status_qlen >= limit
  q.s_axis.tvalid := Mux(inPre, s_seg.valid && !hold, s_axis.tvalid)
  q.s_axis.tdata := Mux(inPre, segWords(if (nPre == 1) 0.U else inIdx(log2Ceil(nPre) - 1, 0)), s_axis.tdata)
  q.s_axis.tkeep := Mux(inPre, Fill(p.dataBytes, 1.U(1.W)), s_axis.tkeep)
  q.s_axis.tlast := Mux(inPre, false.B, s_axis.tlast)
  s_seg.ready := inPre && inIdx === (nPre - 1).U && q.s_axis.tready && !hold
  s_axis.tready := !inPre && q.s_axis.tready
  private val unused_in = WireDefault(Cat(s_axis.tid.getOrElse(0.U(1.W)), s_axis.tuser.getOrElse(0.U(1.W))))
  dontTouch(unused_in)
  when(q.s_axis.fire) {
    when(inPre) { inIdx := inIdx + 1.U }.elsewhen(s_axis.tlast) { inIdx := 0.U }
  }

  // ---- Out: the prefix beats back into a SteerSeg, then the frame.
  private val outIdx = RegInit(0.U(idxBits.W))
  private val outPre = outIdx =/= nPre.U
  private val acc = Reg(Vec(math.max(nPre - 1, 1), UInt(p.dataBits.W)))
  private val segQ = Module(new Queue(new SteerSeg(idBits), 2))
  m_seg <> segQ.io.deq
  private val lastPre = outIdx === (nPre - 1).U
  private val word = if (nPre == 1) q.m_axis.tdata else Cat(q.m_axis.tdata, Cat(acc.take(nPre - 1).reverse))
  segQ.io.enq.valid := q.m_axis.tvalid && outPre && lastPre
  segQ.io.enq.bits := word(segBits - 1, 0).asTypeOf(new SteerSeg(idBits))
  q.m_axis.tready := Mux(outPre, !lastPre || segQ.io.enq.ready, m_axis.tready)
  m_axis.tvalid := q.m_axis.tvalid && !outPre
  m_axis.setBeat(q.m_axis.beat)
  when(q.m_axis.fire) {
    when(outPre) {
      acc(if (nPre <= 2) 0.U else outIdx(log2Ceil(nPre - 1) - 1, 0)) := q.m_axis.tdata
      outIdx := outIdx + 1.U
    }.elsewhen(q.m_axis.tlast) { outIdx := 0.U }
  }
  // (the prefix beats' keep and last are known)
  private val unused_pre = WireDefault(word(nPre * p.dataBits - 1, segBits - 1))
  dontTouch(unused_pre)
  status_busy := q.status_qlen =/= 0.U || inIdx =/= 0.U || outIdx =/= 0.U || q.m_axis.tvalid || segQ.io.deq.valid
}
