package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}

/** A received segment as the engine decides on it (from [[TcpInfo]]). */
class SegIn extends Bundle {
  val seq = UInt(32.W)
  val ack = UInt(32.W)
  /** TCP header byte 13 (bit 0 FIN). */
  val flags = UInt(8.W)
  val window = UInt(16.W)
  val tsPresent = Bool()
  val tsVal = UInt(32.W)
  /** Frame byte offset of the first payload byte, and payload bytes. */
  val dataStart = UInt(7.W)
  val dataLen = UInt(16.W)
}

/** What happened to a connection (toe_model's Decision kinds). */
object EventKind {
  val Seg = 0   // a segment arrived: `seg`
  val Timer = 1 // the wheel reached tick `arg` and found the connection due
  val Send = 2  // the host wrote its send ring up to `arg` (host_send's write_seq)
  val Read = 3  // the host consumed its receive ring up to `arg` (host_read's read_seq)
  val Close = 4 // the host closes: FIN after its data
  val Install = 5 // the connection arrives (`tcb` as the driver built it, `arg` our TSval now)
  val Restore = 6 // the connection leaves: a pending ACK goes out, the state is returned
}

/** One event for one connection, with the connection's state as it stands. */
class DecideIn(val idBits: Int) extends Bundle {
  val kind = UInt(3.W)
  val id = UInt(idBits.W)
  val tcb = new Tcb
  val seg = new SegIn
  val arg = UInt(32.W)
}

/** A segment to send: everything of its headers but the connection's addresses (the
  * transmit side adds those by `id`), and where its payload is. */
class TxSeg(val idBits: Int) extends Bundle {
  val id = UInt(idBits.W)
  val tcp = new TcpFields
  /** Payload: `payloadLen` bytes from sequence number `tcp.seq` of the send ring. */
  val payloadLen = UInt(16.W)
  val sndBase = UInt(40.W)
  val sndLog2 = UInt(5.W)
}

/** A segment to send with its connection's addresses: what the transmit side needs. */
class TxReq(val idBits: Int) extends Bundle {
  val seg = new TxSeg(idBits)
  val addr = new ConnAddr
}

/** Store a received segment's bytes [seq, seq + len) in the receive ring, except those in
  * the `skip` ranges (already held: the first bytes received win). The bytes start at
  * frame byte `frameOff` of the segment's frame. */
class RxWrite(val idBits: Int) extends Bundle {
  val id = UInt(idBits.W)
  val frameOff = UInt(17.W)
  val seq = UInt(32.W)
  val len = UInt(16.W)
  val rcvBase = UInt(40.W)
  val rcvLog2 = UInt(5.W)
  val skipN = UInt(3.W)
  val skip = Vec(4, new SeqRange)
}

/** What the engine tells the host (toe_model's notifications). */
object NoteKind {
  val Rx = 0      // in-order data received up to seq
  val Acked = 1   // data acknowledged up to seq
  val Fin = 2     // the peer's FIN, after its data
  val Rst = 3     // reset by the peer
  val Timeout = 4 // gave up retransmitting
  val Closed = 5  // the connection left the engine: its id and table entry are free
}

class EngineNote(val idBits: Int) extends Bundle {
  val kind = UInt(3.W)
  val id = UInt(idBits.W)
  val seq = UInt(32.W)
}

class DecideOut(val idBits: Int) extends Bundle {
  val id = UInt(idBits.W)
  /** False: the connection closed (CLOSED, to be removed from the table). */
  val alive = Bool()
  /** A segment's bytes were given a store command (m_rxw); else its frame is dropped. */
  val stored = Bool()
  val tcb = new Tcb
}

/** The engine's settings (toe_model's EngineParams), in microseconds. */
class EngineCfg extends Bundle {
  val delackUs = UInt(32.W)
  val rtoMinUs = UInt(32.W)
  val rtoMaxUs = UInt(32.W)
  val rtoInitialUs = UInt(32.W)
  val timeWaitUs = UInt(32.W)
  val finWait2On = Bool()
  val finWait2Us = UInt(32.W)
  val maxRetries = UInt(5.W)
}

/** The engine's clocks: microseconds since reset, and the timestamp clock (ms). 42 bits of
  * microseconds are all the model's arithmetic needs: due ticks (us / 64 mod 2^32),
  * timestamp ages (us / 2^26 mod 2^16) and RTT times (us mod 2^32) all wrap with it. */
class EngineNow extends Bundle {
  val us = UInt(42.W)
  val ts = UInt(32.W)
}

/** The TCP engine's decision for one event of one installed connection (a segment, a timer
  * due, a host command): the state after it, the segments to send, the bytes to store, the
  * host's notifications. Decision for decision the model's (sim/offnic_sim/toe_model.py,
  * whose docstring lists every rule: `segment_in`, `_fire`, `host_send`, `host_read`,
  * `host_close`) on the same `Tcb`.
  *
  * One event at a time, as a sequence of steps in the model's own order. A segment: the checks
  * (PAWS, acceptability, RST/SYN per RFC 5961, the ACK's range), the ACK (new data
  * acknowledged, RTT, NewReno, duplicate ACKs, the send window, our FIN acknowledged), the
  * text (trimmed to the window, in order with the held ranges delivered after it, or held
  * out of order). A timer: the delayed ACK, then the send timer (TIME_WAIT's end, the RTO's
  * go-back-N with back-off, the persist probe). Then, for every event, the transmit loop,
  * the owed ACK and the send timer. Shared steps
  * are subroutines with a return state each: `emit` (one segment out: window, SACK blocks,
  * timestamps), `send` (a data segment: RTT timing, snd_max, the RTO), `retransmit` (the
  * first unacknowledged segment) and `arm` (the RTO or persist timer at RTO << backoff).
  * A one-cycle step is a few 32-bit adds and compares; an ACK takes about 15 cycles and
  * each segment sent 3 more (a 1,518-byte frame is 48 beats at 32 bytes).
  *
  * Timer dues are ticks of 2^`tickShift` us: due = ceil((now + interval) / tick).
  * Notifications and the store command go to queues with room for an event's worth, which
  * an event waits for before it starts; segments to send leave one by one (`m_tx`).
  */
class TcpDecide(val idBits: Int = 12, val tickShift: Int = 6) extends Module {
  val s_in = IO(Flipped(Decoupled(new DecideIn(idBits))))
  val m_out = IO(Valid(new DecideOut(idBits)))
  val m_tx = IO(Decoupled(new TxSeg(idBits)))
  val m_rxw = IO(Decoupled(new RxWrite(idBits)))
  val m_note = IO(Decoupled(new EngineNote(idBits)))
  val cfg = IO(Input(new EngineCfg))
  val now = IO(Input(new EngineNow))

  import ConnState._
  import SeqNum._

  private object S extends ChiselEnum {
    val Idle, Check, AckIn, NewAck, RttSample, NewAck2, PartialPost, NewAckEnd, DupAck, DupPost, AckIn2, AckFin,
      Text, TextTrim, TextRoom, InOrder, Pop, FinAck, Ooo, Finish, OutA, OutB, FinishAck, FinishTimers, Close, Close2,
      Done,
      Emit1, Emit2, Send, SendPost, Retx, RetxPost, Arm1, Arm2,
      FireDelack, FireSend, OnRto, OnRto2, OnPersist, OnPersist2, HostRead, HostClose, Install, Restore,
      RestoreEnd = Value
  }
  private val st = RegInit(S.Idle)
  private val t = Reg(new Tcb)
  private val id = Reg(UInt(idBits.W))
  private val seg = Reg(new SegIn)
  private val arg = Reg(UInt(32.W))
  private val ackNow = Reg(Bool())
  private val dsack = Reg(Valid(new SeqRange))
  private val alive = Reg(Bool())
  private val stored = Reg(Bool())

  private val CwndMax = (1L << 30).U(32.W)
  private val M32 = 0xFFFFFFFFL.U(32.W)
  private val Paws24Days = ((24L * 86400 * 1000000) >> 26).U(16.W)
  private val ageNow = now.us(41, 26)
  private val fin = seg.flags(0)
  private val syn = seg.flags(1)
  private val rst = seg.flags(2)
  private val ackFlag = seg.flags(4)
  private val ACK = 0x10.U(8.W)
  // CWR, ECE, URG and PSH of a received segment decide nothing (no ECN, no urgent data).
  private val unused_seg_flags = WireDefault(Cat(seg.flags(7, 5), seg.flags(3)))
  dontTouch(unused_seg_flags)

  private def minU(a: UInt, b: UInt): UInt = Mux(a < b, a, b)
  private def maxU(a: UInt, b: UInt): UInt = Mux(a > b, a, b)
  /** min(a, cap) in cap's width. */
  private def upTo(a: UInt, cap: UInt): UInt = Mux(a < cap, a, cap)(cap.getWidth - 1, 0)
  private val effMss = t.mss - Mux(t.tsOk, 12.U, 0.U)
  private val rcvSize = UIntToOH(t.rcvLog2, 32)
  private val rcvFree = ahead(add(t.readSeq, rcvSize), t.rcvNxt)
  /** The window we would offer (receiver SWS avoidance) and what is left of the one
    * advertised (toe_model._window_target). */
  private val target = Mux(rcvFree < (rcvSize >> 1) && rcvFree < t.rcvMss, 0.U, rcvFree)
  private val left = ahead(add(t.rcvWup, (t.rcvWf << t.rcvWscale).pad(32)(31, 0)), t.rcvNxt)
  /** SACK blocks the next segment carries, and its payload room (toe_model._seg_mss). */
  private val sackCount = Mux(t.sackOk, minU(dsack.valid.asUInt +& t.oooN, Mux(t.tsOk, 3.U, 4.U)), 0.U)
  private val segMss = effMss - Mux(sackCount === 0.U, 0.U, 4.U +& (sackCount << 3))

  // ---- Queues with room for one event's worth, checked before the event starts.
  private val noteQ = Module(new Queue(new EngineNote(idBits), 8))
  m_note <> noteQ.io.deq
  noteQ.io.enq.valid := false.B
  noteQ.io.enq.bits.id := id
  noteQ.io.enq.bits.kind := 0.U
  noteQ.io.enq.bits.seq := 0.U
  private def note(kind: Int, seq: UInt = 0.U): Unit = {
    noteQ.io.enq.valid := true.B
    noteQ.io.enq.bits.kind := kind.U
    noteQ.io.enq.bits.seq := seq
  }
  private val rxwQ = Module(new Queue(new RxWrite(idBits), 2))
  m_rxw <> rxwQ.io.deq
  rxwQ.io.enq.valid := false.B
  rxwQ.io.enq.bits := DontCare

  // ---- Subroutine arguments and return states.
  private val emitRet = Reg(S())
  private val eFlags = Reg(UInt(8.W))
  private val eSeq = Reg(UInt(32.W))
  private val eLen = Reg(UInt(16.W))
  private val desc = Reg(new TxSeg(idBits))
  private val sendRet = Reg(S())
  private val sSeq = Reg(UInt(32.W))
  private val sN = Reg(UInt(16.W))
  private val sFin = Reg(Bool())
  private val retxRet = Reg(S())
  private val armRet = Reg(S())
  private val armKind = Reg(UInt(2.W))
  private val armUs = Reg(UInt(32.W))
  private def emit(flags: UInt, seq: UInt, len: UInt, ret: S.Type): Unit = {
    eFlags := flags
    eSeq := seq
    eLen := len
    emitRet := ret
    st := S.Emit1
  }
  private def pureAck(ret: S.Type): Unit = emit(ACK, t.sndMax, 0.U, ret)
  private def send(seq: UInt, n: UInt, fin: Bool, ret: S.Type): Unit = {
    sSeq := seq
    sN := n(15, 0)
    sFin := fin
    sendRet := ret
    st := S.Send
  }
  private def retransmit(ret: S.Type): Unit = {
    retxRet := ret
    st := S.Retx
  }
  private def arm(kind: Int, ret: S.Type): Unit = {
    armKind := kind.U
    armRet := ret
    st := S.Arm1
  }
  // One adder for every due tick (the steps that arm a timer are exclusive): ceil((now +
  // interval) / tick) mod 2^32.
  private val dueInterval = WireDefault(0.U(32.W))
  private val dueSum = now.us +& dueInterval +& ((1 << tickShift) - 1).U
  private val dueTick = dueSum(31 + tickShift, tickShift)
  private val unused_due_fraction = WireDefault(dueSum(tickShift - 1, 0))
  dontTouch(unused_due_fraction)
  private def due(intervalUs: UInt): UInt = {
    dueInterval := intervalUs
    dueTick
  }
  private def armClose(us: UInt): Unit = {
    t.stKind := SendTimer.Close.U
    t.stDue := due(us)
  }
  // Bytes in flight, halved for ssthresh (its lowest bit is dropped).
  private val flight = WireDefault(UInt(32.W), t.sndMax - t.sndUna)
  private val unused_flight_lsb = WireDefault(flight(0))
  dontTouch(unused_flight_lsb)
  private def enterTimeWait(): Unit = {
    t.state := TimeWait.U
    t.delackOn := false.B
    armClose(cfg.timeWaitUs)
  }
  private val closeWhy = Reg(UInt(2.W)) // 0: quietly, 1: RST, 2: timeout
  private def close(why: Int): Unit = {
    closeWhy := why.U
    st := S.Close
  }

  // ---- Idle: take an event when the queues have room for its notifications and store.
  s_in.ready := st === S.Idle && noteQ.io.count <= 4.U && rxwQ.io.count === 0.U
  m_out.valid := st === S.Done
  m_out.bits.id := id
  m_out.bits.alive := alive
  m_out.bits.stored := stored
  m_out.bits.tcb := t

  // ---- Per-segment values used by several steps.
  private val segLen = seg.dataLen +& syn +& fin
  private val wnd = Wire(UInt(31.W))
  wnd := seg.window << t.sndWscale
  private val wndR = Reg(UInt(30.W))
  private val ackedR = Reg(UInt(32.W))
  // The text after trimming: payload offset, sequence number, length, FIN, duplicate bytes.
  private val xOff = Reg(UInt(16.W))
  private val xSeq = Reg(UInt(32.W))
  private val xLen = Reg(UInt(16.W))
  private val xFin = Reg(Bool())
  private val xDup = Reg(Bool())
  private val xEnd = Reg(UInt(32.W))
  private val xHadRanges = Reg(Bool())
  // The output loop's sums.
  private val oAvail = Reg(UInt(31.W))
  private val oFinPending = Reg(Bool())
  private val oWndRoom = Reg(SInt(32.W))
  private val oCwndRoom = Reg(SInt(32.W))
  private val oMss = Reg(UInt(16.W))

  private def rxWrite(): Unit = {
    stored := true.B
    rxwQ.io.enq.valid := true.B
    rxwQ.io.enq.bits.id := id
    rxwQ.io.enq.bits.frameOff := seg.dataStart +& xOff
    rxwQ.io.enq.bits.seq := xSeq
    rxwQ.io.enq.bits.len := xLen
    rxwQ.io.enq.bits.rcvBase := t.rcvBase
    rxwQ.io.enq.bits.rcvLog2 := t.rcvLog2
    rxwQ.io.enq.bits.skipN := t.oooN
    rxwQ.io.enq.bits.skip := t.ooo
  }

  switch(st) {
    is(S.Idle) {
      when(s_in.fire) {
        t := s_in.bits.tcb
        id := s_in.bits.id
        seg := s_in.bits.seg
        ackNow := false.B
        alive := true.B
        stored := false.B
        // D-SACK (RFC 2883): payload below rcv_nxt is a duplicate whatever else happens;
        // the first segment sent in answer reports it.
        val sg = s_in.bits.seg
        val rn = s_in.bits.tcb.rcvNxt
        val end = add(sg.seq, sg.dataLen)
        val isSeg = s_in.bits.kind === EventKind.Seg.U
        dsack.valid := isSeg && sg.dataLen =/= 0.U && lt(sg.seq, rn) && !sg.flags(2) && !sg.flags(1)
        dsack.bits.start := sg.seq
        dsack.bits.end := Mux(lt(end, rn), end, rn)
        arg := s_in.bits.arg
        st := MuxLookup(s_in.bits.kind, S.Done)(Seq(
          EventKind.Seg.U -> S.Check,
          EventKind.Timer.U -> S.FireDelack,
          EventKind.Send.U -> S.Finish,
          EventKind.Read.U -> S.HostRead,
          EventKind.Close.U -> S.HostClose,
          EventKind.Install.U -> S.Install,
          EventKind.Restore.U -> S.Restore))
        when(s_in.bits.kind === EventKind.Send.U) { t.writeSeq := s_in.bits.arg }
        when(s_in.bits.kind === EventKind.Read.U) { t.readSeq := s_in.bits.arg }
      }
    }

    // ---- Install and restore.
    is(S.Install) {
      t.tsOffset := Mux(t.tsOk, arg - now.ts, 0.U) // TSval = ts clock + offset
      when(t.tsRecentOk) { t.tsRecentAge := ageNow }
      when(t.rcvWup =/= t.rcvNxt) { // Linux owed the peer an ACK
        t.delackOn := true.B
        t.delackDue := due(cfg.delackUs)
      }
      st := S.Finish
    }
    is(S.Restore) {
      when(t.rcvWup =/= t.rcvNxt && t.state =/= Closed.U) {
        pureAck(S.RestoreEnd)
      }.otherwise {
        st := S.RestoreEnd
      }
    }
    is(S.RestoreEnd) {
      t.delackOn := false.B
      t.stKind := SendTimer.None.U
      alive := false.B
      st := S.Done
    }

    // ---- Host commands.
    is(S.HostRead) { // read_seq moved: a window update when the window grew enough (tcp_cleanup_rbuf)
      when(receives(t.state) && target =/= 0.U && (left << 1) <= rcvSize && target >= (left << 1)) {
        ackNow := true.B
      }
      st := S.Finish
    }
    is(S.HostClose) {
      st := S.Finish
      when(t.finQueued) {
        st := S.Done
      }.elsewhen(t.state === Established.U) {
        t.state := FinWait1.U
        t.finQueued := true.B
      }.elsewhen(t.state === CloseWait.U) {
        t.state := LastAck.U
        t.finQueued := true.B
      }.otherwise {
        st := S.Done // not a state the host may close in: nothing happens
      }
    }

    // ---- Timers: the wheel reached tick `arg` (due ticks compare modulo 2^32).
    is(S.FireDelack) {
      when(!(t.delackOn && le(t.delackDue, arg)) && !(t.stKind =/= SendTimer.None.U && le(t.stDue, arg))) {
        st := S.Done // nothing due yet (a timer moved later, or the wheel's lap): no decision
      }.elsewhen(t.delackOn && le(t.delackDue, arg)) {
        t.delackOn := false.B
        pureAck(S.FireSend)
      }.otherwise {
        st := S.FireSend
      }
    }
    is(S.FireSend) {
      st := S.Finish
      when(t.stKind =/= SendTimer.None.U && le(t.stDue, arg)) {
        t.stKind := SendTimer.None.U
        switch(t.stKind) {
          is(SendTimer.Close.U) { close(0) }
          is(SendTimer.Rto.U) { st := S.OnRto }
          is(SendTimer.Persist.U) { st := S.OnPersist }
        }
      }
    }
    is(S.OnRto) {
      st := S.Finish
      when(sends(t.state) && t.sndUna =/= t.sndMax) {
        val tries = t.retries +& 1.U
        t.retries := tries(4, 0)
        when(tries > cfg.maxRetries) {
          close(2)
        }.otherwise {
          when(tries === 1.U) { t.ssthresh := maxU(flight >> 1, effMss << 1) } // once per episode
          t.cwnd := effMss
          t.caAcc := 0.U
          t.inRecovery := false.B
          t.dupacks := 0.U
          t.recover := t.sndMax - 1.U
          t.sndNxt := t.sndUna
          t.backoff := Mux(t.backoff === 15.U, 15.U, t.backoff + 1.U)
          t.rttValid := false.B // Karn
          retransmit(S.OnRto2)
        }
      }
    }
    is(S.OnRto2) {
      arm(SendTimer.Rto, S.Finish)
    }
    is(S.OnPersist) {
      st := S.Finish
      when(sends(t.state) && t.sndUna === t.sndMax) {
        val tries = t.retries +& 1.U
        t.retries := tries(4, 0)
        when(tries > cfg.maxRetries) {
          close(2)
        }.otherwise {
          emit(ACK, t.sndUna - 1.U, 0.U, S.OnPersist2) // Linux's probe: an old sequence number
        }
      }
    }
    is(S.OnPersist2) {
      t.backoff := Mux(t.backoff === 15.U, 15.U, t.backoff + 1.U)
      arm(SendTimer.Persist, S.Finish)
    }

    // ---- Checks, in Linux's order.
    is(S.Check) {
      val paws = t.tsOk && !rst && seg.tsPresent && t.tsRecentOk && diff(t.tsRecent, seg.tsVal) > 1.S &&
        (ageNow - t.tsRecentAge)(15, 0) <= Paws24Days
      val acceptable = ge(add(seg.seq, segLen), t.rcvWup) && le(seg.seq, add(t.rcvNxt, rcvFree))
      val tooOld = lt(seg.ack, t.sndUna - maxU(t.maxWindow, 1.U))
      when(paws) {
        pureAck(S.Finish)
      }.elsewhen(!acceptable) {
        when(rst) {
          st := S.Finish
        }.otherwise {
          when(!syn && t.state === TimeWait.U && fin) { armClose(cfg.timeWaitUs) }
          pureAck(S.Finish)
        }
      }.elsewhen(rst) {
        when(seg.seq === t.rcvNxt) {
          closeWhy := Mux(t.state === TimeWait.U, 0.U, 1.U) // TIME_WAIT ends quietly
          st := S.Close
        }.otherwise {
          pureAck(S.Finish) // challenge ACK
        }
      }.elsewhen(syn) {
        pureAck(S.Finish) // challenge ACK
      }.elsewhen(!ackFlag) {
        st := S.Finish
      }.elsewhen(gt(seg.ack, t.sndMax) || tooOld) {
        pureAck(S.Finish)
      }.otherwise {
        when(t.tsOk && seg.tsPresent && le(seg.seq, t.rcvWup) && (!t.tsRecentOk || ge(seg.tsVal, t.tsRecent))) {
          t.tsRecent := seg.tsVal
          t.tsRecentOk := true.B
          t.tsRecentAge := ageNow
        }
        st := Mux(ge(seg.ack, t.sndUna), S.AckIn, S.Text)
      }
    }

    // ---- The ACK field, ack in [snd_una, snd_max].
    is(S.AckIn) {
      wndR := wnd(29, 0)
      ackedR := seg.ack - t.sndUna
      when(seg.ack =/= t.sndUna) {
        st := S.NewAck
      }.elsewhen(seg.dataLen === 0.U && !fin && wnd === t.sndWnd && t.sndUna =/= t.sndMax) {
        st := S.DupAck
      }.otherwise {
        st := S.AckIn2
      }
    }
    is(S.NewAck) {
      val ack = seg.ack
      t.sndUna := ack
      when(lt(t.sndNxt, ack)) { t.sndNxt := ack }
      t.retries := 0.U
      val finAcked = t.finQueued && ack === add(t.writeSeq, 1.U)
      note(NoteKind.Acked, Mux(finAcked, t.writeSeq, ack))
      when(t.rttValid && ge(ack, t.rttSeq)) {
        t.rttValid := false.B
        st := S.RttSample
      }.otherwise {
        st := S.NewAck2
      }
    }
    is(S.RttSample) {
      val r0 = (now.us(31, 0) - t.rttTime)(31, 0)
      val r = Mux(r0 === 0.U, 1.U, r0)
      when(t.srtt8 === 0.U) {
        t.srtt8 := upTo(r << 3, M32)
        t.rttvar4 := upTo(r << 1, M32)
      }.otherwise {
        val err = r.zext -& (t.srtt8 >> 3).zext // 34-bit signed
        val s = t.srtt8.zext +& err
        t.srtt8 := Mux(s < 8.S, 8.U, Mux(s > M32.zext, M32, s.asUInt(31, 0)))
        val v = t.rttvar4 -& (t.rttvar4 >> 2) +& err.abs.asUInt
        t.rttvar4 := upTo(v, M32)
      }
      t.backoff := 0.U
      st := S.NewAck2
    }
    is(S.NewAck2) {
      val ack = t.sndUna
      when(t.inRecovery) {
        when(gt(ack, t.recover)) { // full ACK (RFC 6582 3.2 step 3)
          t.inRecovery := false.B
          t.dupacks := 0.U
          t.cwnd := upTo(maxU(t.sndMax - ack, effMss) +& effMss, t.ssthresh)
          st := S.NewAckEnd
        }.otherwise { // partial ACK (step 4)
          retransmit(S.PartialPost)
        }
      }.otherwise {
        t.dupacks := 0.U
        when(gt(ack, t.recover)) { t.recover := ack - 1.U }
        when(t.cwnd < t.ssthresh) {
          t.cwnd := upTo(t.cwnd +& minU(ackedR, effMss), CwndMax)
        }.otherwise {
          val acc = t.caAcc +& ackedR
          val over = acc >= t.cwnd
          t.caAcc := upTo(Mux(over, acc - t.cwnd, acc), M32)
          t.cwnd := upTo(Mux(over, t.cwnd +& effMss, t.cwnd), CwndMax)
        }
        st := S.NewAckEnd
      }
    }
    is(S.PartialPost) {
      val c = t.cwnd.zext -& ackedR.zext +& Mux(ackedR >= effMss, effMss, 0.U).zext
      t.cwnd := Mux(c < effMss.zext, effMss, c.asUInt(31, 0))
      when(!t.partialSeen) {
        t.partialSeen := true.B
        arm(SendTimer.Rto, S.AckIn2)
      }.otherwise {
        st := S.AckIn2
      }
    }
    is(S.NewAckEnd) {
      when(t.sndUna === t.sndMax) {
        when(t.stKind === SendTimer.Rto.U) { t.stKind := SendTimer.None.U } // RFC 6298 5.2
        st := S.AckIn2
      }.otherwise {
        arm(SendTimer.Rto, S.AckIn2) // 5.3
      }
    }
    is(S.DupAck) {
      val third = t.dupacks === 2.U
      t.dupacks := Mux(t.dupacks === 3.U, 3.U, t.dupacks + 1.U)
      when(t.inRecovery) {
        t.cwnd := upTo(t.cwnd +& effMss, CwndMax)
        st := S.AckIn2
      }.elsewhen(third && gt(t.sndUna, t.recover)) { // RFC 6582 3.2 step 1
        t.ssthresh := maxU(flight >> 1, effMss << 1)
        t.recover := t.sndMax - 1.U
        t.inRecovery := true.B
        t.partialSeen := false.B
        t.rttValid := false.B // Karn
        retransmit(S.DupPost)
      }.otherwise {
        st := S.AckIn2
      }
    }
    is(S.DupPost) {
      t.cwnd := upTo(t.ssthresh +& (effMss * 3.U), CwndMax)
      st := S.AckIn2
    }
    is(S.AckIn2) {
      when(t.sndUna === t.sndMax || wndR === 0.U) { t.retries := 0.U }
      when(lt(t.sndWl1, seg.seq) || (t.sndWl1 === seg.seq && le(t.sndWl2, seg.ack))) {
        t.sndWnd := wndR
        t.sndWl1 := seg.seq
        t.sndWl2 := seg.ack
        when(wndR > t.maxWindow) { t.maxWindow := wndR }
        when(wndR =/= 0.U && t.stKind === SendTimer.Persist.U) {
          t.stKind := SendTimer.None.U
          t.backoff := 0.U
        }
      }
      st := S.AckFin
    }
    is(S.AckFin) {
      st := S.Text
      when(t.finQueued && t.sndUna === add(t.writeSeq, 1.U)) {
        when(t.state === FinWait1.U) {
          t.state := FinWait2.U
          t.stKind := SendTimer.None.U
          when(cfg.finWait2On) { armClose(cfg.finWait2Us) }
        }.elsewhen(t.state === Closing.U) {
          enterTimeWait()
        }.elsewhen(t.state === LastAck.U) {
          close(0)
        }
      }
    }

    // ---- Segment text and FIN.
    is(S.Text) {
      when(seg.dataLen === 0.U && !fin) {
        st := S.Finish
      }.elsewhen(receives(t.state)) {
        st := S.TextTrim
      }.elsewhen(lt(seg.seq, t.rcvNxt)) { // a retransmission of what we have
        when(t.state === TimeWait.U && fin) { armClose(cfg.timeWaitUs) }
        pureAck(S.Finish)
      }.otherwise {
        st := S.Finish
      }
    }
    is(S.TextTrim) {
      val d = diff(t.rcvNxt, seg.seq)
      xHadRanges := t.oooN =/= 0.U
      xFin := fin
      when(d > 0.S) { // starts below rcv_nxt
        when(d > seg.dataLen.zext || (d === seg.dataLen.zext && !fin)) {
          pureAck(S.Finish) // wholly duplicate
        }.otherwise {
          xOff := d.asUInt(15, 0)
          xSeq := t.rcvNxt
          xLen := seg.dataLen - d.asUInt(15, 0)
          xDup := true.B
          st := S.TextRoom
        }
      }.otherwise {
        xOff := 0.U
        xSeq := seg.seq
        xLen := seg.dataLen
        xDup := false.B
        st := S.TextRoom
      }
    }
    is(S.TextRoom) {
      val room = diff(add(t.readSeq, rcvSize), xSeq)
      xEnd := add(xSeq, xLen)
      when(xLen.zext > room) { // beyond the ring: trimmed, and the FIN with it
        val keep = Mux(room < 0.S, 0.U, room.asUInt(15, 0))
        xLen := keep
        xEnd := add(xSeq, keep)
        xFin := false.B
        xDup := true.B
        when(keep === 0.U) {
          pureAck(S.Finish)
        }.otherwise {
          st := Mux(xSeq === t.rcvNxt, S.InOrder, S.Ooo)
        }
      }.elsewhen(xLen === 0.U && !xFin) {
        st := S.Finish
      }.elsewhen(xSeq =/= t.rcvNxt && xLen === 0.U) {
        pureAck(S.Finish) // a bare FIN out of order: nothing to hold
      }.otherwise {
        st := Mux(xSeq === t.rcvNxt, S.InOrder, S.Ooo)
      }
    }
    is(S.InOrder) {
      when(xLen =/= 0.U) {
        rxWrite()
        t.rcvNxt := xEnd
        when(xLen > t.rcvMss) { t.rcvMss := xLen }
      }
      st := S.Pop
    }
    is(S.Pop) {
      // Held ranges now reached: a prefix (ranges never touch each other), the last one
      // popped ends the delivered data unless the segment reached past it.
      val x = t.rcvNxt
      val hit = VecInit((0 until 4).map(i => i.U < t.oooN && le(t.ooo(i).start, x)))
      val pre = VecInit((0 until 4).map(i => hit.take(i + 1).reduce(_ && _)))
      val popped = PopCount(pre)
      val lastEnd = Mux1H((0 until 4).map(i => (pre(i) && (if (i == 3) true.B else !pre(i + 1))) -> t.ooo(i).end))
      val newNxt = Mux(popped =/= 0.U && gt(lastEnd, x), lastEnd, x)
      t.rcvNxt := newNxt
      when(popped =/= 0.U) {
        t.oooRecent := t.oooRecent >> popped
        t.oooN := t.oooN - popped
        for (j <- 0 until 4) {
          val src = j.U +& popped
          t.ooo(j) := Mux(src < t.oooN, t.ooo(src(1, 0)), 0.U.asTypeOf(new SeqRange))
        }
      }
      when(xLen =/= 0.U || popped =/= 0.U) { note(NoteKind.Rx, newNxt) }
      st := S.FinAck
    }
    is(S.FinAck) {
      st := S.Finish
      when(xFin && t.rcvNxt === xEnd) {
        t.rcvNxt := add(t.rcvNxt, 1.U)
        note(NoteKind.Fin)
        when(t.state === Established.U) {
          t.state := CloseWait.U
        }.elsewhen(t.state === FinWait1.U) {
          t.state := Closing.U
        }.otherwise {
          enterTimeWait()
        }
        ackNow := true.B
      }.elsewhen(xDup || xHadRanges) { // duplicate bytes, or a gap (partly) filled
        ackNow := true.B
      }.elsewhen(diff(t.rcvNxt, t.rcvWup) > t.rcvMss.zext) { // every second full-sized segment
        ackNow := true.B
      }.elsewhen(!t.delackOn) {
        t.delackOn := true.B
        t.delackDue := due(cfg.delackUs)
      }
    }
    is(S.Ooo) {
      // Merge with every held range it overlaps or touches; insert in distance order.
      val base = t.rcvNxt
      def off(x: UInt): UInt = (x - base)(31, 0)
      val ns = off(xSeq)
      val ne = off(xEnd)
      val valid = VecInit((0 until 4).map(i => i.U < t.oooN))
      val merged = VecInit((0 until 4).map(i => valid(i) && !(off(t.ooo(i).end) < ns || off(t.ooo(i).start) > ne)))
      val before = VecInit((0 until 4).map(i => valid(i) && !merged(i) && off(t.ooo(i).end) < ns))
      val starts = (0 until 4).map(i => Mux(merged(i), off(t.ooo(i).start), ns))
      val ends = (0 until 4).map(i => Mux(merged(i), off(t.ooo(i).end), ne))
      val mStart = starts.foldLeft(ns)(minU)
      val mEnd = ends.foldLeft(ne)(maxU)
      val pos = PopCount(before)
      val nMerged = PopCount(merged)
      val outN = t.oooN - nMerged + 1.U
      val overflow = outN > 4.U
      when(overflow && (t.sackOk || pos === 4.U)) {
        pureAck(S.Finish) // the new segment is the one dropped
      }.otherwise {
        rxWrite()
        val newRange = Wire(new SeqRange)
        newRange.start := add(base, mStart)
        newRange.end := add(base, mEnd)
        for (j <- 0 until 4) {
          val src = (j.U +& nMerged - 1.U)(2, 0)
          val r = Mux(j.U < pos, t.ooo(j), Mux(j.U === pos, newRange, t.ooo(src(1, 0))))
          t.ooo(j) := Mux(j.U < minU(outN, 4.U), r, 0.U.asTypeOf(new SeqRange))
        }
        t.oooN := minU(outN, 4.U)
        t.oooRecent := UIntToOH(pos(1, 0), 4)
        pureAck(S.Finish)
      }
    }

    // ---- After the event: transmit, the owed ACK, the send timer.
    is(S.Finish) {
      st := Mux(sends(t.state), S.OutA, S.FinishAck)
    }
    is(S.OutA) {
      oAvail := ahead(t.writeSeq, t.sndNxt)
      oFinPending := t.finQueued && le(t.sndNxt, t.writeSeq)
      oWndRoom := diff(add(t.sndUna, t.sndWnd), t.sndNxt)
      oCwndRoom := diff(add(t.sndUna, t.cwnd), t.sndNxt)
      oMss := segMss
      st := S.OutB
    }
    is(S.OutB) {
      val usable = Mux(oWndRoom < oCwndRoom, oWndRoom, oCwndRoom)
      val usableU = usable.asUInt(30, 0)
      val n = minU(minU(oAvail, oMss), usableU)
      val finNow = oFinPending && n === oAvail && usableU > n
      val stop = (oAvail === 0.U && !oFinPending) || usable <= 0.S ||
        (n < oMss && n < oAvail && oCwndRoom < oWndRoom) || (n === 0.U && !finNow)
      when(stop) {
        st := S.FinishAck
      }.otherwise {
        t.sndNxt := add(t.sndNxt, n +& finNow)
        send(t.sndNxt, n, finNow, S.OutA)
      }
    }
    is(S.FinishAck) {
      when(ackNow) {
        pureAck(S.FinishTimers)
      }.otherwise {
        st := S.FinishTimers
      }
    }
    is(S.FinishTimers) {
      st := S.Done
      when(sends(t.state)) {
        val pending = lt(t.sndNxt, t.writeSeq) || (t.finQueued && le(t.sndNxt, t.writeSeq))
        when(t.sndUna =/= t.sndMax) {
          when(t.stKind =/= SendTimer.Rto.U) { arm(SendTimer.Rto, S.Done) }
        }.elsewhen(pending) {
          when(t.stKind =/= SendTimer.Persist.U) { arm(SendTimer.Persist, S.Done) }
        }.elsewhen(t.stKind === SendTimer.Rto.U || t.stKind === SendTimer.Persist.U) {
          t.stKind := SendTimer.None.U
        }
      }
    }
    is(S.Close) {
      when(closeWhy === 1.U) { note(NoteKind.Rst) }
      when(closeWhy === 2.U) { note(NoteKind.Timeout) }
      t.state := Closed.U
      t.delackOn := false.B
      t.stKind := SendTimer.None.U
      alive := false.B
      st := S.Close2
    }
    is(S.Close2) {
      note(NoteKind.Closed)
      st := S.Done
    }
    is(S.Done) {
      st := S.Idle
    }

    // ---- emit: one segment; every segment carries ACK, the window and (if on) timestamps.
    is(S.Emit1) {
      val win = maxU(target, left) >> t.rcvWscale
      desc.tcp.window := minU(win, 0xFFFF.U)(15, 0)
      desc.id := id
      desc.tcp.seq := eSeq
      desc.tcp.ack := t.rcvNxt
      desc.tcp.flags := eFlags | ACK
      desc.tcp.tsPresent := t.tsOk
      desc.tcp.tsVal := add(now.ts, t.tsOffset)
      desc.tcp.tsEcr := Mux(t.tsRecentOk, t.tsRecent, 0.U)
      desc.payloadLen := eLen
      desc.sndBase := t.sndBase
      desc.sndLog2 := t.sndLog2
      // Blocks: D-SACK, the range with the latest out-of-order segment, the rest nearest first.
      val ri = OHToUInt(t.oooRecent)
      val hasRecent = t.oooRecent =/= 0.U
      val rr = VecInit((0 until 4).map { k =>
        if (k == 0) Mux(hasRecent, t.ooo(ri), t.ooo(0))
        else Mux(hasRecent && k.U <= ri, t.ooo(k - 1), t.ooo(k))
      })
      val list = VecInit((0 until 4).map(k => if (k == 0) Mux(dsack.valid, dsack.bits, rr(0))
        else Mux(dsack.valid, rr(k - 1), rr(k))))
      desc.tcp.sackN := sackCount(2, 0)
      for (k <- 0 until 4) desc.tcp.sack(k) := Mux(k.U < sackCount, list(k), 0.U.asTypeOf(new SeqRange))
      st := S.Emit2
    }
    is(S.Emit2) {
      when(m_tx.ready) {
        t.rcvWf := desc.tcp.window
        t.rcvWup := t.rcvNxt
        t.delackOn := false.B
        ackNow := false.B
        dsack.valid := false.B
        st := emitRet
      }
    }

    // ---- send: a data segment [sSeq, sSeq + sN) and maybe the FIN.
    is(S.Send) {
      val end = add(sSeq, sN +& sFin)
      val psh = sN =/= 0.U && add(sSeq, sN) === t.writeSeq
      when(gt(end, t.sndMax)) {
        when(!t.rttValid) {
          t.rttValid := true.B
          t.rttSeq := end
          t.rttTime := now.us(31, 0)
        }
        t.sndMax := end
      }
      emit(Cat(0.U(4.W), psh, 0.U(2.W), sFin), sSeq, sN, S.SendPost)
    }
    is(S.SendPost) {
      when(t.stKind =/= SendTimer.Rto.U) { arm(SendTimer.Rto, sendRet) }.otherwise { st := sendRet } // 6298 5.1
    }

    // ---- retransmit: the first unacknowledged segment (fast retransmit, partial ACK, RTO).
    is(S.Retx) {
      val avail = ahead(t.writeSeq, t.sndUna)
      val n = minU(minU(segMss, avail), maxU(t.sndWnd, 1.U))
      val f = t.finQueued && n === avail
      when(n =/= 0.U || f) {
        send(t.sndUna, n, f, S.RetxPost)
      }.otherwise {
        st := retxRet
      }
    }
    is(S.RetxPost) {
      val end = add(sSeq, sN +& sFin)
      when(lt(t.sndNxt, end)) { t.sndNxt := end }
      st := retxRet
    }

    // ---- arm: the RTO or persist timer at min(RTO << backoff, rto_max).
    is(S.Arm1) {
      val rto = Mux(t.srtt8 === 0.U, cfg.rtoInitialUs,
        minU(maxU((t.srtt8 >> 3) +& maxU((1 << tickShift).U, t.rttvar4), cfg.rtoMinUs), cfg.rtoMaxUs))
      armUs := upTo(rto << t.backoff, cfg.rtoMaxUs)
      st := S.Arm2
    }
    is(S.Arm2) {
      t.stKind := armKind
      t.stDue := due(armUs)
      st := armRet
    }
  }

  m_tx.valid := st === S.Emit2
  m_tx.bits := desc
}

object TcpDecide extends Elaboratable {
  /** `connections` (4096): the id width. */
  def generate(p: Params): RawModule = new TcpDecide(log2Ceil(p.int("connections", 4096)))
}
