package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisFifo, AxisIO, AxisParams}

/** A segment the engine owns: its connection and what the parser found. */
class SteerSeg(val idBits: Int) extends Bundle {
  val id = UInt(idBits.W)
  val info = new TcpInfo
}

/** Counters of [[TcpSteer]], in register order. */
object SteerStat extends Enumeration {
  /** Frames to the host output; TCP segments for an installed connection; bad segments
    * for an installed connection (dropped: the engine owns the connection, the host must
    * not see them); lookups repeated because the table changed while a frame waited. */
  val ToHost, ToEngine, BadDropped, Relookups = Value
}

/** The TCP engine's receive front: every frame to the host output untouched, except TCP
  * segments of connections installed in the [[ConnTable]], which go to the engine (whole
  * frame on `m_axis_engine`, its [[SteerSeg]] on `m_seg` at the same time).
  *
  * Frames wait in a FIFO (`fifoBeats`, at least one jumbo frame) while the [[TcpParser]]
  * describes them and the table is looked up (one lookup per frame, in frame order, as
  * soon as its description is ready). The table's commands (install: insert, restore:
  * delete) pass through `cmd`/`rsp`; a command pauses lookups and finishes before any
  * later one is taken. The guarantee the engine's handoff needs: a frame leaves by the
  * table as it stood when it left. A frame whose lookup came before a command that
  * answered while the frame waited is looked up again before it leaves, and a command's
  * answer is held back while a frame decided before it has not started out. So after a
  * delete (restore) has answered, no frame of that connection starts towards the engine,
  * and after an insert (install) has answered, none towards the host.
  *
  * `fifoBeats` must hold the largest frame (a frame's lookup waits for its last beat).
  *
  * Bad segments (checksums, header) of an installed connection are dropped and counted;
  * bad ones of other connections go to the host, which drops them itself.
  */
class TcpSteer(val connections: Int = 4096, val buckets: Int = 1024, val fifoBeats: Int = 512,
               val p: AxisParams = AxisParams(32)) extends Module {
  private val idBits = log2Ceil(connections)
  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis_host = IO(new AxisIO(p))
  val m_axis_engine = IO(new AxisIO(p))
  val m_seg = IO(Decoupled(new SteerSeg(idBits)))
  /** The engine's queue takes no new frame now (NicSegQueue's FCFS limit): a frame for the
    * engine is not decided, so it waits at the head and holds no answer back. */
  val hold_engine = IO(Input(Bool()))
  val cmd = IO(Flipped(Decoupled(new ConnCmd)))
  val rsp = IO(Decoupled(new ConnRsp(idBits)))
  private val table = Module(new ConnTable(connections, buckets, tagBits = 1))
  val cfg_hash_key = IO(Input(UInt(table.hashKeyBits.W)))
  val counters = IO(Output(Vec(SteerStat.maxId, UInt(32.W))))
  val table_counters = IO(Output(Vec(ConnStat.maxId, UInt(32.W))))
  val status = IO(Output(new Bundle {
    val ready = Bool()
    val entries = UInt((idBits + 1).W)
  }))

  private val parser = Module(new TcpParser(p))
  private val fifo = Module(new AxisFifo(p, fifoBeats))
  parser.s_axis <> s_axis
  fifo.s_axis <> parser.m_axis

  table.cmd <> cmd
  // A command's answer waits while a frame decided by the table before it has not yet
  // started out (see `holdRsp`): so nothing leaves by a table older than the last answer.
  private val holdRsp = Wire(Bool())
  rsp.valid := table.rsp.valid && !holdRsp
  rsp.bits := table.rsp.bits
  table.rsp.ready := rsp.ready && !holdRsp
  table.cfg_hash_key := cfg_hash_key
  table_counters := table.counters
  status.ready := table.status.ready
  status.entries := table.status.entries

  private val stats = RegInit(VecInit(Seq.fill(SteerStat.maxId)(0.U(32.W))))
  private val statPulse = WireDefault(VecInit(Seq.fill(SteerStat.maxId)(false.B)))
  for (i <- 0 until SteerStat.maxId) when(statPulse(i)) { stats(i) := stats(i) + 1.U }
  counters := stats
  private def count(s: SteerStat.Value): Unit = statPulse(s.id) := true.B

  // Table generation: commands answered so far (a lookup taken at generation g sees
  // exactly the first g commands).
  private val gen = RegInit(0.U(8.W))
  when(table.rsp.fire) { gen := gen + 1.U }

  // ---- Lookups: tag 0 = a frame's first lookup (in frame order), 1 = the head frame's
  // repeat; results come back in issue order, the tag says whose they are.
  class Pending extends Bundle {
    val info = new TcpInfo
    val gen = UInt(8.W)
  }
  class Verdict extends Bundle {
    val info = new TcpInfo
    val gen = UInt(8.W)
    val hit = Bool()
    val id = UInt(idBits.W)
  }
  private val depth = 8
  private val pending = Module(new Queue(new Pending, depth)) // first lookups in flight
  private val verdicts = Module(new Queue(new Verdict, depth))
  private val again = RegInit(false.B) // the head's repeat lookup is in flight
  private val againWant = Wire(Bool()) // the head needs a repeat lookup now
  private val head = verdicts.io.deq.bits

  // A first lookup for each described frame, while there is room for its verdict.
  private val inFlight = RegInit(0.U(log2Ceil(depth + 1).W))
  private val firstOk = parser.m_info.valid && pending.io.enq.ready &&
    (verdicts.io.count +& inFlight) < depth.U && !againWant
  table.lookup_in.valid := firstOk || againWant
  table.lookup_in.bits.key := Mux(againWant, head.info.key, parser.m_info.bits.key)
  table.lookup_in.bits.tag := againWant.asUInt
  private val againIssue = againWant && table.lookup_in.ready
  parser.m_info.ready := firstOk && table.lookup_in.ready
  pending.io.enq.valid := parser.m_info.fire
  pending.io.enq.bits.info := parser.m_info.bits
  pending.io.enq.bits.gen := gen
  inFlight := inFlight + parser.m_info.fire.asUInt - (table.lookup_out.fire && table.lookup_out.bits.tag === 0.U).asUInt

  // Results: a first lookup's joins its frame's description in the verdict queue; a
  // repeat's refreshes the head verdict.
  private val fresh = Reg(new Bundle {
    val hit = Bool()
    val id = UInt(idBits.W)
    val gen = UInt(8.W)
  })
  private val freshValid = RegInit(false.B) // `fresh` holds the head's repeat result
  private val againGen = Reg(UInt(8.W))
  table.lookup_out.ready := Mux(table.lookup_out.bits.tag === 1.U, true.B, verdicts.io.enq.ready)
  pending.io.deq.ready := table.lookup_out.fire && table.lookup_out.bits.tag === 0.U
  verdicts.io.enq.valid := table.lookup_out.valid && table.lookup_out.bits.tag === 0.U
  verdicts.io.enq.bits.info := pending.io.deq.bits.info
  verdicts.io.enq.bits.gen := pending.io.deq.bits.gen
  verdicts.io.enq.bits.hit := table.lookup_out.bits.hit
  verdicts.io.enq.bits.id := table.lookup_out.bits.id
  when(table.lookup_out.fire && table.lookup_out.bits.tag === 1.U) {
    again := false.B
    freshValid := true.B
    fresh.hit := table.lookup_out.bits.hit
    fresh.id := table.lookup_out.bits.id
    fresh.gen := againGen
  }

  // ---- The head frame: its verdict, current if no command answered since its lookup.
  private val vGen = Mux(freshValid, fresh.gen, head.gen)
  private val vHit = Mux(freshValid, fresh.hit, head.hit)
  private val vId = Mux(freshValid, fresh.id, head.id)
  private val inFrame = RegInit(false.B) // the head frame is decided and on its way out
  private val started = RegInit(false.B) // its first beat has left
  private val route = RegInit(0.U(2.W)) // 0 host, 1 engine, 2 drop
  private val current = vGen === gen
  private val decide = verdicts.io.deq.valid && !inFrame && current && !again
  againWant := verdicts.io.deq.valid && !inFrame && !current && !again
  when(againIssue) {
    again := true.B
    againGen := gen
    freshValid := false.B
    count(SteerStat.Relookups)
  }
  private val isTcp = head.info.kind === TcpKind.Tcp.U
  private val isBad = head.info.kind === TcpKind.Bad.U
  private val toEngine = vHit && isTcp
  private val drop = vHit && isBad
  private val segQ = Module(new Queue(new SteerSeg(idBits), 2))
  m_seg <> segQ.io.deq
  segQ.io.enq.valid := false.B
  segQ.io.enq.bits.id := vId
  segQ.io.enq.bits.info := head.info
  // Decided in the cycle its first beat may already go (no bubble between frames). A frame
  // for the engine is not decided while the engine's queue has no room for it (FCFS): once
  // decided, a frame holds the table's answers back until it starts, so it must be able to.
  private val decideNow = decide && (!toEngine || (segQ.io.enq.ready && !hold_engine))
  private val routeNow = Mux(inFrame, route, Mux(toEngine, 1.U, Mux(drop, 2.U, 0.U)))
  private val go = inFrame || decideNow
  when(decideNow) {
    inFrame := true.B
    route := routeNow
    segQ.io.enq.valid := toEngine
    when(toEngine) { count(SteerStat.ToEngine) }.elsewhen(drop) { count(SteerStat.BadDropped) }
      .otherwise { count(SteerStat.ToHost) }
  }

  // ---- The head frame's beats to its output.
  m_axis_host.setBeat(fifo.m_axis.beat)
  m_axis_engine.setBeat(fifo.m_axis.beat)
  m_axis_host.tvalid := fifo.m_axis.tvalid && go && routeNow === 0.U
  m_axis_engine.tvalid := fifo.m_axis.tvalid && go && routeNow === 1.U
  fifo.m_axis.tready := go && MuxLookup(routeNow, true.B)(Seq(
    0.U -> m_axis_host.tready, 1.U -> m_axis_engine.tready))
  verdicts.io.deq.ready := false.B
  holdRsp := (inFrame && !started) || decideNow
  when(fifo.m_axis.fire) { started := true.B }
  when(fifo.m_axis.fire && fifo.m_axis.tlast) {
    inFrame := false.B
    started := false.B
    verdicts.io.deq.ready := true.B
    freshValid := false.B
  }
}

object TcpSteer extends Elaboratable {
  def generate(p: Params): RawModule = new TcpSteer(
    connections = p.int("connections", 4096),
    buckets = p.int("buckets", 1024),
    fifoBeats = p.int("fifo_beats", 512)
  )
}
