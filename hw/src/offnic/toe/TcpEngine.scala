package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisIO, AxisParams}

/** Host commands (EngineCmd.op). */
object EngineOp {
  /** Take a connection: `tcb` as the driver built it from the socket's TCP_REPAIR state
    * (sim/offnic_sim/toe_hw.py: install_tcb), `addr` its addresses, `arg` our TSval now. */
  val Install = 0
  /** Give connection `id` back: the answer carries its state. With `arg` bit 0 (hold; issue
    * 17's restore-side hold) the table entry stays and the id is reserved as by Reserve, so
    * the connection's segments are held in front of the engine, not sent to the host whose
    * socket is not live yet, until the host restores the id again (release: the entry goes,
    * the held segments are dropped as stale and the peer resends them to the host) or
    * completes it (hands it back to the engine, which then decides them). A hold needs a free
    * reserve: else ReservesFull and nothing done. */
  val Restore = 1
  /** The host wrote connection `id`'s send ring up to `arg`. */
  val Send = 2
  /** The host consumed connection `id`'s receive ring up to `arg`. */
  val Read = 3
  /** Close connection `id`: FIN after its data. */
  val Close = 4
  /** Read connection `id`'s state (no change). */
  val Status = 5
  /** Two-phase install, phase 1 (issue 17): the 4-tuple's table entry goes live (`addr`;
    * the answer names the id) and the connection's segments are held, not decided: they
    * wait, in order, in front of the engine (inside the NIC in the NIC-packet queue, whose
    * bound drops and counts the ones past it). A Restore of a held id cancels it (table
    * delete; the held segments are then dropped as stale). */
  val Reserve = 6
  /** Phase 2: install the reserved connection `id` with `tcb`/`addr`/`arg` as Install; its
    * held segments are then decided in order. Not live unless `id` is reserved. */
  val Complete = 7
}

/** Counters of [[TcpEngine]], in register order (RegMap.ToeCounters' engine part). */
object EngineStat extends Enumeration {
  /** Segment events taken from the steer; of them, segments dropped unseen because their
    * connection was no longer live or its id now holds another 4-tuple (steered before a
    * restore or close), and segments with payload the decision did not store (outside the
    * window, duplicate, PAWS, no room for a 5th out-of-order range, a state that takes no
    * data); timer expiries taken; host commands taken and those refused (status not Ok);
    * segments handed to the transmit builder; notifications of a reset by the peer, of
    * giving up retransmitting, and of connections closed; reserves refused because
    * `reserves` connections were reserved already. */
  val Segments, StaleDrops, DataNotStored, Timers, Commands, CommandsRefused, TxSegments, NotesRst, NotesTimeout,
    NotesClosed, ReservesRefused = Value
}

/** Command outcomes (EngineRsp.status): the table's, then NotLive. */
object EngineStatus {
  val Ok = 0
  val Exists = 1  // install: the 4-tuple is installed already (its id answered)
  val Full = 2    // install: the table found no place
  val NoId = 3    // install: every id is in use
  val NotLive = 4 // the id holds no connection (never installed, closed, restored)
  // 5 is the NIC's (NicToe.OverLimit: Soft_limit), never the engine's.
  val ReservesFull = 6 // reserve: `reserves` connections are reserved already (nothing inserted)
}

class EngineCmd(val idBits: Int) extends Bundle {
  val op = UInt(3.W)
  val id = UInt(idBits.W)
  val arg = UInt(32.W)
  val addr = new ConnAddr
  val tcb = new Tcb
}

/** A notification with the number of store commands (m_rxw) issued before it: it may go
  * to the host once that many have completed (TcpOffload's fence). */
class FencedNote(val idBits: Int) extends Bundle {
  val note = new EngineNote(idBits)
  val stores = UInt(32.W)
}

class EngineRsp(val idBits: Int) extends Bundle {
  val op = UInt(3.W)
  val status = UInt(3.W)
  val id = UInt(idBits.W)
  /** Install, Restore: the connection's state after the command (for a restore, what the
    * driver gives Linux: toe_hw.restored()); `tsVal` is our TSval and `nowUs` the engine's
    * clock at that moment. */
  val tcb = new Tcb
  val addr = new ConnAddr
  val tsVal = UInt(32.W)
  val nowUs = UInt(42.W)
}

/** The TCP offload engine's control: everything but moving payload bytes. Frames from the
  * wire enter [[TcpSteer]] (parser, connection table, frame FIFO): those not for an
  * installed connection leave on `m_axis_host` unchanged; each segment of one is an event.
  * Timer expiries ([[TimerWheel]]) and host commands are events too. Events are taken one
  * at a time, round robin: the connection's TCB, addresses and armed timer are read from
  * block RAM (one word per connection), [[TcpDecide]] decides, the TCB is written back and
  * the connection's earliest due is armed on the wheel when it moved earlier. So no event
  * ever sees a stale TCB, and no forwarding is needed.
  *
  * What the decision asks for leaves on streams: segments to send with the connection's
  * addresses (`m_tx`, for the transmit builder), one store-or-drop command per segment
  * frame (`m_rxw`, with the frame itself on `m_axis_seg`, for the receive-ring writer),
  * notifications (`m_note`), answers to commands (`m_rsp`).
  *
  * A segment is decided only if its connection is live and the frame's 4-tuple is the
  * TCB's: a frame steered before a restore or a close (when the id may already belong to a
  * new connection) is dropped. Install: table insert, then the TCB write and the install
  * decision (owed ACK, first transmissions, timers) in the same command, so a segment of
  * the new connection, held in the FIFO meanwhile, always meets its TCB. Restore: the
  * decision (a pending ACK goes out), the TCB closed, the timer cancelled, then the table
  * delete; its answer is the cut after which no frame of the connection reaches the
  * engine (TcpSteer's guarantee), and the command's answer carries the state.
  *
  * Time: `cfg_cycles_per_us` clocks make a microsecond; the wheel ticks every
  * 2^tickShift us, in step with the microsecond counter (both count from reset).
  */
class TcpEngine(val connections: Int = 4096, val buckets: Int = 1024, val slots: Int = 1024,
                val fifoBeats: Int = 512, val tickShift: Int = 6, val rxP: AxisParams = AxisParams(32),
                val nicQueue: Option[NicQueueParams] = None, val reserves: Int = TcpEngine.Reserves) extends Module {
  val idBits: Int = log2Ceil(connections)
  require(reserves >= 1, "at least one reserve at a time")
  private val p = AxisParams(32)
  require(nicQueue.isDefined || rxP == p, "a receive stream with sideband needs the NIC-packet queue")
  val s_axis = IO(Flipped(new AxisIO(rxP)))
  val m_axis_host = IO(new AxisIO(rxP))
  val m_axis_seg = IO(new AxisIO(p))
  val m_rxw = IO(Decoupled(new RxWrite(idBits)))
  val m_tx = IO(Decoupled(new TxReq(idBits)))
  val s_cmd = IO(Flipped(Decoupled(new EngineCmd(idBits))))
  val m_rsp = IO(Decoupled(new EngineRsp(idBits)))
  val m_note = IO(Decoupled(new FencedNote(idBits)))
  /** Store commands issued so far (modulo 2^32). */
  val storesIssued = IO(Output(UInt(32.W)))
  val cfg = IO(Input(new EngineCfg))
  val cfg_cycles_per_us = IO(Input(UInt(10.W)))
  val counters = IO(Output(Vec(EngineStat.maxId, UInt(32.W))))
  val steer_counters = IO(Output(Vec(SteerStat.maxId, UInt(32.W))))
  val table_counters = IO(Output(Vec(ConnStat.maxId, UInt(32.W))))

  private val steer = Module(new TcpSteer(connections, buckets, fifoBeats, rxP))
  val cfg_hash_key = IO(Input(UInt(steer.cfg_hash_key.getWidth.W)))
  val status = IO(Output(new Bundle {
    val ready = Bool()
    val nowUs = UInt(42.W)
    val connections = UInt((idBits + 1).W)
    /** An event is being decided, waits, or its outputs wait (a test's "quiet" is !busy). */
    val busy = Bool()
  }))
  private val wheel = Module(new TimerWheel(connections, slots))
  private val decide = Module(new TcpDecide(idBits, tickShift))

  // ---- Clocks: microseconds and the timestamp clock (milliseconds).
  private val usDiv = RegInit(0.U(10.W))
  private val msDiv = RegInit(0.U(10.W))
  private val nowUs = RegInit(0.U(42.W))
  private val nowTs = RegInit(0.U(32.W))
  when(usDiv +& 1.U >= cfg_cycles_per_us) {
    usDiv := 0.U
    nowUs := nowUs + 1.U
    when(msDiv === 999.U) {
      msDiv := 0.U
      nowTs := nowTs + 1.U
    }.otherwise {
      msDiv := msDiv + 1.U
    }
  }.otherwise {
    usDiv := usDiv + 1.U
  }
  private val nowTick = nowUs(31 + tickShift, tickShift)
  wheel.cfg_tick_cycles := cfg_cycles_per_us << tickShift
  decide.now.us := nowUs
  decide.now.ts := nowTs
  decide.cfg := cfg
  status.ready := steer.status.ready && wheel.status.ready
  status.nowUs := nowUs
  status.connections := steer.status.entries

  steer.s_axis <> s_axis
  m_axis_host <> steer.m_axis_host
  // Segments of installed connections: straight from the steer, or (in the NIC) through the
  // NIC-packet queue (NicSegQueue), which carries each frame with its description.
  private val segIn = Wire(Decoupled(new SteerSeg(idBits)))
  private val nicq = nicQueue.map(q => Module(new NicSegQueue(idBits, rxP, q.depth, q.maxFrames)))
  val nicq_cfg = nicq.map(_ => IO(Input(new NicQueueCfg)))
  val nicq_status = nicq.map(q => IO(Output(new NicQueueStatus(q.status_qlen.getWidth))))
  nicq match {
    case Some(q) =>
      q.s_axis <> steer.m_axis_engine
      q.s_seg <> steer.m_seg
      m_axis_seg <> q.m_axis
      segIn <> q.m_seg
      q.cfg_max_frames := nicq_cfg.get.maxFrames
      q.cfg_fcfs := nicq_cfg.get.fcfs
      steer.hold_engine := q.status_fcfs_full
      nicq_status.get.qlen := q.status_qlen
      nicq_status.get.busy := q.status_busy
      nicq_status.get.frame := q.stat_frame
      nicq_status.get.drop := q.stat_drop
    case None =>
      steer.hold_engine := false.B
      m_axis_seg <> steer.m_axis_engine
      segIn <> steer.m_seg
  }
  steer.cfg_hash_key := cfg_hash_key
  steer_counters := steer.counters
  table_counters := steer.table_counters

  private val stats = RegInit(VecInit(Seq.fill(EngineStat.maxId)(0.U(32.W))))
  private val statPulse = WireDefault(VecInit(Seq.fill(EngineStat.maxId)(false.B)))
  for (i <- 0 until EngineStat.maxId) when(statPulse(i)) { stats(i) := stats(i) + 1.U }
  counters := stats
  private def count(s: EngineStat.Value): Unit = statPulse(s.id) := true.B

  // ---- Per-connection memories, one event at a time (never a read and a write of the
  // same word in one cycle).
  class Armed extends Bundle {
    val on = Bool()
    val due = UInt(32.W) // the tick the wheel holds the connection for
  }
  private val tcbRam = SyncReadMem(connections, new Tcb)
  private val addrRam = SyncReadMem(connections, new ConnAddr)
  private val armedRam = SyncReadMem(connections, new Armed)
  private val rdAddr = WireDefault(0.U(idBits.W))
  private val rdEn = WireDefault(false.B)
  private val tcbRd = tcbRam.read(rdAddr, rdEn)
  private val addrRd = addrRam.read(rdAddr, rdEn)
  private val armedRd = armedRam.read(rdAddr, rdEn)

  private object E extends ChiselEnum {
    val Idle, SegRead, TimerRead, CmdStart, CmdRead, InsertWait, Decide, Wait, Drop, Arm, Cancel, Delete,
      DeleteWait, Respond = Value
  }
  private val st = RegInit(E.Idle)
  private val id = Reg(UInt(idBits.W))
  private val kind = Reg(UInt(3.W))
  private val seg = Reg(new SteerSeg(idBits))
  private val cmd = Reg(new EngineCmd(idBits))
  private val isCmd = Reg(Bool())
  private val tcb = Reg(new Tcb)
  private val addr = Reg(new ConnAddr)
  private val armed = Reg(new Armed)
  private val arg = Reg(UInt(32.W))
  private val alive = Reg(Bool())
  private val decided = Reg(Bool()) // the event went through the decision
  private val rsp = Reg(new EngineRsp(idBits))
  private val turn = RegInit(0.U(2.W)) // round robin: segments, timers, commands
  // The addresses' one write port: installs (and reserves) write the command's.
  private val addrWrEn = WireDefault(false.B)
  private val addrWrId = WireDefault(0.U(idBits.W))
  when(addrWrEn) { addrRam.write(addrWrId, cmd.addr) }
  private def addrWrite(at: UInt): Unit = {
    addrWrEn := true.B
    addrWrId := at
  }
  private val armedWr = WireDefault(false.B) // one write port: the word is `armedNext`
  private val armedNext = WireDefault(armed)
  when(armedWr) { armedRam.write(id, armedNext) }

  // The parser's kind and reason (TcpSteer sends only good segments) and the echoed
  // timestamp (RTT is not taken from it) decide nothing here.
  private val unused_seg_info = WireDefault(Cat(seg.info.kind, seg.info.bad, seg.info.tsEcr))
  dontTouch(unused_seg_info)

  private def keyOf(a: ConnAddr): UInt = ConnKey(a.srcIp, a.dstIp, a.sport, a.dport)
  private def live(t: Tcb): Bool = t.state =/= ConnState.Closed.U

  // ---- Event sources.
  // Segments of a reserved connection (two-phase install) wait at the head until Complete.
  // The reserved ids are a small table (`reserves` entries, not a flag per connection: at
  // 4,096 connections those flags cost 4,096 FF and a 4,096-way read mux); a reserve past
  // it is refused (ReservesFull) before anything is inserted.
  private val resOn = RegInit(VecInit(Seq.fill(reserves)(false.B)))
  private val resId = Reg(Vec(reserves, UInt(idBits.W)))
  private def reservedHit(at: UInt): Vec[Bool] = VecInit((0 until reserves).map(k => resOn(k) && resId(k) === at))
  private def isReserved(at: UInt): Bool = reservedHit(at).asUInt.orR
  private def unreserve(at: UInt): Unit =
    for ((h, k) <- reservedHit(at).zipWithIndex) when(h) { resOn(k) := false.B }
  private val resFree = !resOn.asUInt.andR
  private val resSlot = PriorityEncoder(resOn.map(!_))
  private val segHeld = isReserved(segIn.bits.id)
  private val segOk = segIn.valid && !segHeld
  private val timerOk = wheel.expired.valid
  private val cmdOk = s_cmd.valid
  private val pick = Wire(UInt(2.W)) // 0 segment, 1 timer, 2 command, 3 none
  private def first(order: Seq[Int]): UInt =
    order.foldRight(3.U(2.W))((s, rest) => Mux(Seq(segOk, timerOk, cmdOk)(s), s.U, rest))
  pick := MuxLookup(turn, 3.U)(Seq(0.U -> first(Seq(0, 1, 2)), 1.U -> first(Seq(1, 2, 0)),
    2.U -> first(Seq(2, 0, 1))))
  private val idle = st === E.Idle && status.ready
  segIn.ready := idle && pick === 0.U && !segHeld
  wheel.expired.ready := idle && pick === 1.U
  s_cmd.ready := idle && pick === 2.U

  // ---- Outputs of the decision.
  private val rxwQ = Module(new Queue(new RxWrite(idBits), 4))
  m_rxw <> rxwQ.io.deq
  // Store commands leave in event order: a drop waits for the decision's store before it.
  private val dropNow = st === E.Drop && !decide.m_rxw.valid
  rxwQ.io.enq.valid := decide.m_rxw.valid || dropNow
  rxwQ.io.enq.bits := decide.m_rxw.bits
  decide.m_rxw.ready := rxwQ.io.enq.ready
  when(!decide.m_rxw.valid) {
    rxwQ.io.enq.bits := 0.U.asTypeOf(new RxWrite(idBits))
    rxwQ.io.enq.bits.id := id
  }
  m_tx.valid := decide.m_tx.valid
  m_tx.bits.seg := decide.m_tx.bits
  m_tx.bits.addr := addr
  decide.m_tx.ready := m_tx.ready
  private val stores = RegInit(0.U(32.W))
  when(rxwQ.io.enq.fire) { stores := stores + 1.U }
  storesIssued := stores
  m_note.valid := decide.m_note.valid
  m_note.bits.note := decide.m_note.bits
  m_note.bits.stores := stores + rxwQ.io.enq.fire // (a store in this cycle precedes the note)
  decide.m_note.ready := m_note.ready

  decide.s_in.valid := st === E.Decide
  decide.s_in.bits.kind := kind
  decide.s_in.bits.id := id
  decide.s_in.bits.tcb := tcb
  decide.s_in.bits.seg.seq := seg.info.seq
  decide.s_in.bits.seg.ack := seg.info.ack
  decide.s_in.bits.seg.flags := seg.info.flags
  decide.s_in.bits.seg.window := seg.info.window
  decide.s_in.bits.seg.tsPresent := seg.info.tsPresent
  decide.s_in.bits.seg.tsVal := seg.info.tsVal
  decide.s_in.bits.seg.dataStart := seg.info.dataStart
  decide.s_in.bits.seg.dataLen := seg.info.dataLen
  decide.s_in.bits.arg := arg

  private val reserveRefused = cmd.op === EngineOp.Reserve.U && !resFree
  steer.cmd.valid := (st === E.CmdStart && !reserveRefused) || st === E.Delete
  steer.cmd.bits.delete := st === E.Delete
  steer.cmd.bits.key := Mux(st === E.Delete, keyOf(addr), keyOf(cmd.addr))
  steer.rsp.ready := st === E.InsertWait || st === E.DeleteWait

  wheel.cmd.valid := st === E.Arm || st === E.Cancel
  wheel.cmd.bits.cancel := st === E.Cancel
  wheel.cmd.bits.id := id
  // The earliest due of the connection (toe_model._min_due), and ticks from now to it.
  private val dueOn = tcb.delackOn || tcb.stKind =/= SendTimer.None.U
  private val minDue = Mux(tcb.delackOn && (tcb.stKind === SendTimer.None.U || !SeqNum.lt(tcb.stDue, tcb.delackDue)),
    tcb.delackDue, tcb.stDue)
  private val ahead = SeqNum.diff(minDue, nowTick)
  wheel.cmd.bits.delay := Mux(ahead <= 1.S, 1.U, Mux(ahead > 0xFFFF.S, 0xFFFF.U, ahead.asUInt(15, 0)))

  m_rsp.valid := st === E.Respond
  when(segIn.fire) { count(EngineStat.Segments) }
  when(wheel.expired.fire) { count(EngineStat.Timers) }
  when(s_cmd.fire) { count(EngineStat.Commands) }
  when(m_rsp.fire && rsp.status =/= EngineStatus.Ok.U) { count(EngineStat.CommandsRefused) }
  when(m_tx.fire) { count(EngineStat.TxSegments) }
  when(m_note.fire && m_note.bits.note.kind === NoteKind.Rst.U) { count(EngineStat.NotesRst) }
  when(m_note.fire && m_note.bits.note.kind === NoteKind.Timeout.U) { count(EngineStat.NotesTimeout) }
  when(m_note.fire && m_note.bits.note.kind === NoteKind.Closed.U) { count(EngineStat.NotesClosed) }
  status.busy := st =/= E.Idle || segIn.valid || nicq.map(_.status_busy).getOrElse(false.B) || wheel.expired.valid || rxwQ.io.deq.valid ||
    decide.m_note.valid || decide.m_tx.valid || !decide.s_in.ready
  m_rsp.bits := rsp

  // A wheel tick (24 bits) as the engine's 32-bit tick: the nearest one to now. The wheel's
  // own prescaler can run a tick ahead of nowTick (cfg_cycles_per_us changed at run time:
  // the NIC's register starts at 250), so a tick just after now must not read as 2^24 ago.
  private def tick32(t24: UInt): UInt = {
    val tb = TimerWheel.TickBits
    val d = (t24 - nowTick(tb - 1, 0))(tb - 1, 0).asSInt.pad(32)
    (nowTick.asSInt + d).asUInt(31, 0)
  }

  switch(st) {
    is(E.Idle) {
      when(segIn.fire) {
        seg := segIn.bits
        id := segIn.bits.id
        kind := EventKind.Seg.U
        isCmd := false.B
        decided := false.B
        rdEn := true.B
        rdAddr := segIn.bits.id
        st := E.SegRead
      }
      when(wheel.expired.fire) {
        id := wheel.expired.bits.id
        kind := EventKind.Timer.U
        arg := tick32(wheel.expired.bits.tick)
        isCmd := false.B
        rdEn := true.B
        rdAddr := wheel.expired.bits.id
        st := E.TimerRead
      }
      when(s_cmd.fire) {
        cmd := s_cmd.bits
        id := s_cmd.bits.id
        arg := s_cmd.bits.arg
        isCmd := true.B
        rdEn := true.B
        rdAddr := s_cmd.bits.id
        kind := MuxLookup(s_cmd.bits.op, EventKind.Close.U)(Seq(
          EngineOp.Install.U -> EventKind.Install.U,
          EngineOp.Restore.U -> EventKind.Restore.U,
          EngineOp.Send.U -> EventKind.Send.U,
          EngineOp.Read.U -> EventKind.Read.U,
          EngineOp.Complete.U -> EventKind.Install.U))
        st := Mux(s_cmd.bits.op === EngineOp.Install.U || s_cmd.bits.op === EngineOp.Reserve.U, E.CmdStart, E.CmdRead)
      }
      when(pick =/= 3.U && idle) { turn := Mux(pick === 2.U, 0.U, pick + 1.U) }
    }
    is(E.SegRead) {
      tcb := tcbRd
      addr := addrRd
      armed := armedRd
      // A frame steered before its connection left (a restore, a close): not this TCB's.
      val ours = live(tcbRd) && keyOf(addrRd) === seg.info.key
      st := Mux(ours, E.Decide, E.Drop)
      when(!ours) { count(EngineStat.StaleDrops) }
    }
    is(E.TimerRead) {
      tcb := tcbRd
      addr := addrRd
      armed := armedRd
      armed.on := false.B // the wheel let it go
      st := Mux(live(tcbRd), E.Decide, E.Idle)
    }
    is(E.CmdRead) {
      tcb := tcbRd
      addr := addrRd
      armed := armedRd
      rsp := 0.U.asTypeOf(new EngineRsp(idBits))
      rsp.op := cmd.op
      rsp.id := id
      when(cmd.op === EngineOp.Status.U) {
        rsp.status := Mux(live(tcbRd), EngineStatus.Ok.U, EngineStatus.NotLive.U)
        rsp.tcb := tcbRd
        rsp.addr := addrRd
        rsp.tsVal := SeqNum.add(nowTs, tcbRd.tsOffset)
        rsp.nowUs := nowUs
        st := E.Respond
      }.elsewhen(live(tcbRd) && cmd.op === EngineOp.Restore.U && arg(0) && !resFree) {
        rsp.status := EngineStatus.ReservesFull.U
        count(EngineStat.ReservesRefused)
        st := E.Respond
      }.elsewhen(live(tcbRd)) {
        st := E.Decide
      }.otherwise {
        rsp.status := EngineStatus.NotLive.U
        st := E.Respond
      }
      // Two-phase install: Complete takes a reserved id; Restore of one cancels it.
      when(cmd.op === EngineOp.Complete.U) {
        when(isReserved(id)) {
          unreserve(id)
          rsp.status := EngineStatus.Ok.U
          tcb := cmd.tcb
          addr := cmd.addr
          armed.on := false.B
          addrWrite(id)
          st := E.Decide
        }.otherwise {
          rsp.status := EngineStatus.NotLive.U
          st := E.Respond
        }
      }.elsewhen(cmd.op === EngineOp.Restore.U && isReserved(id) && !live(tcbRd)) {
        unreserve(id)
        rsp.status := EngineStatus.Ok.U
        st := E.Delete
      }
    }
    // Install: the table first; its id names the TCB.
    is(E.CmdStart) {
      rsp := 0.U.asTypeOf(new EngineRsp(idBits))
      rsp.op := cmd.op
      when(reserveRefused) {
        rsp.status := EngineStatus.ReservesFull.U
        count(EngineStat.ReservesRefused)
        st := E.Respond
      }.elsewhen(steer.cmd.fire) { st := E.InsertWait }
    }
    is(E.InsertWait) {
      when(steer.rsp.fire) {
        rsp.status := steer.rsp.bits.status
        rsp.id := steer.rsp.bits.id
        when(steer.rsp.bits.status === ConnStatus.Ok.U && cmd.op === EngineOp.Reserve.U) {
          resOn(resSlot) := true.B // free: checked before the insert, and only commands reserve
          resId(resSlot) := steer.rsp.bits.id
          addrWrite(steer.rsp.bits.id)
          st := E.Respond
        }.elsewhen(steer.rsp.bits.status === ConnStatus.Ok.U) {
          id := steer.rsp.bits.id
          tcb := cmd.tcb
          addr := cmd.addr
          armed.on := false.B
          addrWrite(steer.rsp.bits.id)
          st := E.Decide
        }.otherwise {
          st := E.Respond
        }
      }
    }
    is(E.Decide) {
      when(decide.s_in.fire) { st := E.Wait }
    }
    is(E.Wait) {
      when(decide.m_out.valid) {
        val out = decide.m_out.bits
        val t = WireDefault(out.tcb)
        when(!out.alive) { t.state := ConnState.Closed.U }
        tcb := t
        alive := out.alive
        decided := true.B
        tcbRam.write(id, t)
        rsp.tcb := out.tcb
        rsp.addr := addr
        rsp.tsVal := SeqNum.add(nowTs, out.tcb.tsOffset)
        rsp.nowUs := nowUs
        st := Mux(kind === EventKind.Seg.U && !out.stored, E.Drop, E.Arm)
        when(kind === EventKind.Seg.U && !out.stored && seg.info.dataLen =/= 0.U) { count(EngineStat.DataNotStored) }
      }
    }
    is(E.Drop) { // the frame goes nowhere
      when(dropNow && rxwQ.io.enq.ready) { st := Mux(decided, E.Arm, E.Idle) }
    }
    is(E.Arm) {
      // A live connection's earliest due goes on the wheel when it is earlier than what
      // the wheel holds (a later one waits for the held one to fire).
      val want = alive && dueOn && (!armed.on || SeqNum.lt(minDue, armed.due))
      when(!alive) {
        st := E.Cancel
      }.elsewhen(!want) {
        st := Mux(isCmd, E.Respond, E.Idle)
        armedWr := true.B
      }.elsewhen(wheel.cmd.fire) {
        armedWr := true.B
        armedNext.on := true.B
        armedNext.due := minDue
        st := Mux(isCmd, E.Respond, E.Idle)
      }
    }
    is(E.Cancel) { // the connection left: its timer and its table entry go
      when(wheel.cmd.fire) {
        armedWr := true.B
        armedNext.on := false.B
        st := E.Delete
        // ... but a restore with hold keeps the entry and reserves the id (free: checked
        // when the command was read, and only commands reserve)
        when(isCmd && cmd.op === EngineOp.Restore.U && arg(0)) {
          resOn(resSlot) := true.B
          resId(resSlot) := id
          st := E.Respond
        }
      }
    }
    is(E.Delete) {
      when(steer.cmd.fire) { st := E.DeleteWait }
    }
    is(E.DeleteWait) {
      when(steer.rsp.fire) { st := Mux(isCmd, E.Respond, E.Idle) }
    }
    is(E.Respond) {
      when(m_rsp.fire) { st := E.Idle }
    }
  }
}

/** The NIC-packet queue's size inside the NIC: `depth` beats of 32 bytes, `maxFrames` frames. */
case class NicQueueParams(depth: Int = 512, maxFrames: Int = 64)

class NicQueueCfg extends Bundle {
  val maxFrames = UInt(16.W)
  val fcfs = Bool()
}

class NicQueueStatus(val qlenBits: Int) extends Bundle {
  val qlen = UInt(qlenBits.W)
  val busy = Bool()
  /** Pulses: a frame queued, a frame dropped. */
  val frame = Bool()
  val drop = Bool()
}

object TcpEngine extends Elaboratable {
  /** Connections reserved (two-phase install, phase 1) at once by default: a driver
    * reserves, reads its socket and completes within microseconds, so a handful covers
    * handoffs in flight; past it a reserve is refused and counted. */
  val Reserves = 8

  /** `connections` (4096), `buckets` (1024), `slots` (1024), `fifo_beats` (512). */
  def generate(p: Params): RawModule = new TcpEngine(p.int("connections", 4096), p.int("buckets", 1024),
    p.int("slots", 1024), p.int("fifo_beats", 512))
}
