package offnic.toe

import chisel3._
import chisel3.util._

/** Connection states (3 bits), as sim/offnic_sim/toe_model.py's `St`. */
object ConnState {
  val Closed = 0
  val Established = 1
  val FinWait1 = 2
  val FinWait2 = 3
  val Closing = 4
  val TimeWait = 5
  val CloseWait = 6
  val LastAck = 7

  /** States that (re)transmit data and the FIN. */
  def sends(s: UInt): Bool =
    s === Established.U || s === CloseWait.U || s === FinWait1.U || s === Closing.U || s === LastAck.U
  /** States that accept segment text. */
  def receives(s: UInt): Bool = s === Established.U || s === FinWait1.U || s === FinWait2.U
}

/** The send timer's kinds (2 bits). */
object SendTimer {
  val None = 0
  val Rto = 1
  val Persist = 2
  val Close = 3 // TIME_WAIT or FIN_WAIT_2
}

/** [start, end) of sequence numbers. */
class SeqRange extends Bundle {
  val start = UInt(32.W)
  val end = UInt(32.W)
}

/** One connection's state, field for field the model's `Tcb` (toe_model.py, which says
  * what each field means) without the wheel links: the hardware's [[TimerWheel]] keeps
  * those. Bundle order is the model's field order, first field in the MSBs; `ooo` is a Vec,
  * so its element 3 comes first (sim/offnic_sim/toe_hw.py packs it).
  */
class Tcb extends Bundle {
  // The segment decision's word ("core").
  val state = UInt(3.W)
  val finQueued = Bool()
  val sndUna = UInt(32.W)
  val sndNxt = UInt(32.W)
  val sndMax = UInt(32.W)
  val writeSeq = UInt(32.W)
  val sndWnd = UInt(30.W)
  val maxWindow = UInt(30.W)
  val sndWl1 = UInt(32.W)
  val sndWl2 = UInt(32.W)
  val sndWscale = UInt(4.W)
  val rcvNxt = UInt(32.W)
  val rcvWup = UInt(32.W)
  val rcvWf = UInt(16.W)
  val readSeq = UInt(32.W)
  val rcvWscale = UInt(4.W)
  val rcvMss = UInt(16.W)
  val mss = UInt(16.W)
  val tsOk = Bool()
  val tsOffset = UInt(32.W)
  val tsRecent = UInt(32.W)
  val tsRecentOk = Bool()
  val tsRecentAge = UInt(16.W)
  val cwnd = UInt(32.W)
  val ssthresh = UInt(32.W)
  val caAcc = UInt(32.W)
  val dupacks = UInt(2.W)
  val recover = UInt(32.W)
  val inRecovery = Bool()
  val partialSeen = Bool()
  val srtt8 = UInt(32.W)
  val rttvar4 = UInt(32.W)
  val backoff = UInt(4.W)
  val retries = UInt(5.W)
  val rttValid = Bool()
  val rttSeq = UInt(32.W)
  val rttTime = UInt(32.W)
  // Timers: due ticks (the wheel holds the earliest).
  val delackOn = Bool()
  val delackDue = UInt(32.W)
  val stKind = UInt(2.W)
  val stDue = UInt(32.W)
  // Rings: the byte with sequence number s sits at base + (s mod 2^log2).
  val sndBase = UInt(40.W)
  val sndLog2 = UInt(5.W)
  val rcvBase = UInt(40.W)
  val rcvLog2 = UInt(5.W)
  // Out-of-order ranges, sorted by distance from rcvNxt; `oooRecent` one-hot marks the
  // range holding the latest out-of-order segment (its SACK block goes first).
  val sackOk = Bool()
  val oooRecent = UInt(4.W)
  val oooN = UInt(3.W)
  val ooo = Vec(4, new SeqRange)
}

/** Sequence-number arithmetic modulo 2^32 (RFC 1982 style, as Linux's before()/after()). */
object SeqNum {
  /** a - b as a signed distance in [-2^31, 2^31). */
  def diff(a: UInt, b: UInt): SInt = (a - b)(31, 0).asSInt
  def lt(a: UInt, b: UInt): Bool = diff(a, b) < 0.S
  def le(a: UInt, b: UInt): Bool = !lt(b, a)
  def gt(a: UInt, b: UInt): Bool = lt(b, a)
  def ge(a: UInt, b: UInt): Bool = !lt(a, b)
  def add(a: UInt, n: UInt): UInt = (a + n)(31, 0)
  /** max(a - b, 0) as an unsigned 31-bit count. */
  def ahead(a: UInt, b: UInt): UInt = Mux(lt(a, b), 0.U, (a - b)(30, 0))
}
