package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisIO, AxisParams}

/** The NIC-packet queue as the engine takes it inside the NIC (issue 17): each frame
  * [[TcpSteer]] sends to the engine waits in one [[NicPacketQueue]], and its [[SteerSeg]]
  * waits beside it, so a frame and its description are queued, dropped and counted together.
  *
  * The SteerSegs are kept in a small memory of their own, one entry per frame the queue can
  * hold plus the frame coming in, so a frame costs only its own beats on the way in (as
  * prefix beats in the frame queue, two per SteerSeg, 64-byte segments from both ports took
  * more cycles than the core clock has and the lookup, and the host frames behind it,
  * waited). An entry is written when the frame's SteerSeg is taken (with any of the frame's
  * beats, or at the latest one cycle after its last), kept only if [[NicPacketQueue]]
  * accepted the whole frame, and read into `m_seg` when the frame reaches the output (a
  * SteerSeg never runs more than one frame ahead of its frame, as before). The input's
  * `tid`/`tuser` (the receive path's port and mark) are not kept: the engine needs neither.
  *
  * The input never waits. (It would wait only if a sender handed over a SteerSeg more than
  * one frame late, which TcpSteer never does: it offers it with the frame's first beat.) A
  * frame that finds the queue at its limit or out of beats is dropped whole
  * (NicPacketQueue), its SteerSeg with it.
  *
  * Host-first (`cfg_fcfs` = 0): that is all, so the lookup and the host frames behind it
  * never wait for the engine. FCFS (1): one shared queue in arrival order, as seed 004's
  * baseline. `status_fcfs_full` says Qlen, counting the frame coming in, is at its limit, and
  * the sender ([[TcpSteer]]) starts no frame for the engine while it is set: the frame waits
  * at the head of the lookup, and the host frames behind it wait with it. The wait is the
  * sender's and not this queue's because a frame the lookup has decided holds back the
  * table's answers (TcpSteer's `holdRsp`): were it decided and then held here, an engine
  * waiting in a table command for its answer would never take the frames that make room
  * (the FCFS deadlock, docs/toe.md). A frame can still be dropped if the beats run out.
  * The flag is exact one cycle after a frame's last beat, which is as soon as TcpSteer can
  * decide the next frame.
  */
class NicSegQueue(val idBits: Int, val inP: AxisParams, val depth: Int, val maxFrames: Int) extends Module {
  private val p = AxisParams(32)
  require(inP.dataBits == p.dataBits, "the frame queue holds 32-byte beats")
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
  /** FCFS only: no room for another frame (Qlen + the frame coming in >= the limit). */
  val status_fcfs_full = IO(Output(Bool()))
  val stat_frame = IO(Output(Bool()))
  val stat_drop = IO(Output(Bool()))

  q.cfg_max_frames := cfg_max_frames
  status_qlen := q.status_qlen
  stat_frame := q.stat_frame
  stat_drop := q.stat_drop

  // The SteerSegs' memory: committed entries are [rdPtr, wrPtr); the one being written is at
  // wrPtr. At most maxFrames committed (Qlen's bound, a frame counts until its last beat
  // leaves and its entry is read before its first) plus one coming in.
  private val entries = 1 << log2Ceil(maxFrames + 1)
  private val ptrBits = log2Ceil(entries) + 1
  // (named ram_* : the lint waiver for firtool's combinational-read wrapper; the read goes
  // straight into segQ's register)
  private val segMem = Mem(entries, new SteerSeg(idBits)).suggestName("ram_segs")
  private val wrPtr = RegInit(0.U(ptrBits.W))
  private val rdPtr = RegInit(0.U(ptrBits.W))
  private def slot(ptr: UInt): UInt = ptr(ptrBits - 2, 0)

  // ---- In: the frame's beats straight into the frame queue; its SteerSeg into segMem.
  private val inMid = RegInit(false.B)  // the frame coming in has started
  private val segGot = RegInit(false.B) // its SteerSeg is written at wrPtr
  private val late = RegInit(false.B)   // the previous frame ended before its SteerSeg came
  private val lateKeep = Reg(Bool())    // ... and the frame queue kept it
  private val limit = Mux(cfg_max_frames === 0.U || cfg_max_frames > maxFrames.U, maxFrames.U, cfg_max_frames)
  status_fcfs_full := cfg_fcfs && (q.status_qlen +& inMid.asUInt) >= limit
  // A second frame ending without its SteerSeg while one is still late: wait for it (a
  // protocol slip of the sender, never TcpSteer's).
  private val waitLate = late && s_axis.tlast && !s_seg.valid
  s_axis.tready := !waitLate
  q.s_axis.tvalid := s_axis.tvalid && !waitLate
  q.s_axis.tdata := s_axis.tdata
  q.s_axis.tkeep := s_axis.tkeep
  q.s_axis.tlast := s_axis.tlast
  private val unused_in = WireDefault(Cat(s_axis.tid.getOrElse(0.U(1.W)), s_axis.tuser.getOrElse(0.U(1.W))))
  dontTouch(unused_in)

  s_seg.ready := late || !segGot
  when(s_seg.fire) { segMem.write(slot(wrPtr), s_seg.bits) }
  private val segForFrame = s_seg.fire && !late // this SteerSeg is the incoming frame's
  private val lastIn = s_axis.fire && s_axis.tlast
  private val haveSeg = segGot || segForFrame
  when(s_axis.fire) { inMid := !s_axis.tlast }
  // wrPtr moves at most once a cycle: a late SteerSeg arrives only while the next frame's
  // own cannot (it is behind it), so that frame ends without its SteerSeg.
  when(late && s_seg.fire) {
    when(lateKeep) { wrPtr := wrPtr + 1.U }
  }.elsewhen(lastIn && haveSeg && q.stat_frame) {
    wrPtr := wrPtr + 1.U
  }
  when(lastIn) {
    segGot := false.B
    when(!haveSeg) {
      late := true.B
      lateKeep := q.stat_frame
    }.elsewhen(late && s_seg.fire) { late := false.B }
  }.otherwise {
    when(segForFrame) { segGot := true.B }
    when(late && s_seg.fire) { late := false.B }
  }

  // ---- Out: a frame's SteerSeg to `m_seg` as the frame reaches the output, then its beats.
  private val segQ = Module(new Queue(new SteerSeg(idBits), 2))
  m_seg <> segQ.io.deq
  private val segOut = RegInit(false.B) // the head frame's SteerSeg has gone to segQ
  private val segThere = rdPtr =/= wrPtr
  segQ.io.enq.valid := q.m_axis.tvalid && !segOut && segThere
  segQ.io.enq.bits := segMem.read(slot(rdPtr))
  private val pass = segOut || (segThere && segQ.io.enq.ready)
  m_axis.tvalid := q.m_axis.tvalid && pass
  m_axis.setBeat(q.m_axis.beat)
  q.m_axis.tready := m_axis.tready && pass
  when(segQ.io.enq.fire) { rdPtr := rdPtr + 1.U }
  when(q.m_axis.fire && q.m_axis.tlast) { segOut := false.B }.elsewhen(segQ.io.enq.fire) { segOut := true.B }

  status_busy := q.status_qlen =/= 0.U || inMid || segGot || late || segThere || q.m_axis.tvalid ||
    segQ.io.deq.valid
}

object NicSegQueue extends Elaboratable {
  /** `id_bits` (12), AxisParams' keys (32-byte beats), `depth` (beats, 512) and
    * `max_frames` (64), as in the NIC. */
  def generate(p: Params): RawModule =
    new NicSegQueue(p.int("id_bits", 12), AxisParams.from(p, bytes = 32), p.int("depth", 512), p.int("max_frames", 64))
}
