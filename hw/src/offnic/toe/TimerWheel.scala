package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}

class TimerCmd(val idBits: Int) extends Bundle {
  val cancel = Bool() // else arm (re-arming moves the timer)
  val id = UInt(idBits.W)
  /** Ticks from now (arm); 0 counts as 1. */
  val delay = UInt(16.W)
}

class TimerExpired(val idBits: Int) extends Bundle {
  val id = UInt(idBits.W)
  /** The tick whose slot fired it: its deadline. */
  val tick = UInt(TimerWheel.TickBits.W)
}

object TimerWheel extends Elaboratable {
  val TickBits = 24
  /** `connections` (4096), `slots` (1024). */
  def generate(p: Params): RawModule = new TimerWheel(p.int("connections", 4096), p.int("slots", 1024))
}

/** The TCP engine's timers: one timer per connection on a hashed timer wheel, so that time
  * costs work per expiry, never a scan of the connections (the best open engine scans its
  * sessions one at a time).
  *
  * `slots` lists, one per tick of the wheel's lap; a connection's timer sits in the list of
  * its deadline's slot (doubly linked through per-connection next/prev words, so cancel
  * and re-arm are O(1)). The engine keeps the real deadlines of a connection's timers (RTO,
  * persist, delayed ACK, TIME_WAIT) in its state and arms the earliest here; a delay longer
  * than the lap fires at the lap's end and the engine, finding nothing due, arms again.
  *
  * Time: `now` counts ticks of `cfg_tick_cycles` clocks. Each tick's slot is emptied in
  * order (`done`: the last tick whose slot is empty), every connection in it coming out on
  * `expired` with that tick. A timer armed at `now` for `delay` ticks has the deadline
  * min(now + max(delay, 1), done + slots - 1): always in (done, done + slots), so every
  * slot holds timers of one tick only, however far the wheel lags. Emptying takes ~4
  * cycles per connection; the wheel lags (`done` < `now`) only in bursts (4,096 expiries
  * on one tick take ~16k cycles, 66 us, where a lap of 1,024 ticks of 64 us is 67 ms),
  * and a timer armed meanwhile still fires in tick order, at most a lap after `done`.
  *
  * Commands and expiry steps take turns, so neither starves. All state is in block RAM:
  * heads (slots x 13 bits), next/prev/slot per connection.
  */
class TimerWheel(val connections: Int = 4096, val slots: Int = 1024) extends Module {
  require(isPow2(connections) && isPow2(slots) && slots >= 4 && slots <= (1 << 16))
  private val ib = log2Ceil(connections)
  private val sb = log2Ceil(slots)
  private val TB = TimerWheel.TickBits

  val cmd = IO(Flipped(Decoupled(new TimerCmd(ib))))
  val expired = IO(Decoupled(new TimerExpired(ib)))
  val cfg_tick_cycles = IO(Input(UInt(16.W)))
  val status = IO(Output(new Bundle {
    val ready = Bool()
    val now = UInt(TB.W)
    val done = UInt(TB.W)
    val armed = UInt((ib + 1).W)
  }))

  // ---- Time
  private val prescale = RegInit(0.U(16.W))
  private val now = RegInit(0.U(TB.W))
  private val done = RegInit(0.U(TB.W))
  private val tickNow = prescale + 1.U >= cfg_tick_cycles
  prescale := Mux(tickNow, 0.U, prescale + 1.U)
  when(tickNow) { now := now + 1.U }
  private val doneNext = done + 1.U
  private val slotNext = Wire(UInt(sb.W)) // the slot being emptied
  slotNext := doneNext

  // ---- Memories (a link is {valid, id})
  private def link(v: Bool, id: UInt): UInt = Cat(v, id)
  private val head = SyncReadMem(slots, UInt((ib + 1).W))
  private val next = SyncReadMem(connections, UInt((ib + 1).W))
  private val prev = SyncReadMem(connections, UInt((ib + 1).W))
  private val where = SyncReadMem(connections, UInt((sb + 1).W)) // {armed, slot}

  private val hRdAddr = WireDefault(0.U(sb.W))
  private val cRdAddr = WireDefault(0.U(ib.W)) // next, prev, where read together
  private val hRd = head.read(hRdAddr)
  private val nRd = next.read(cRdAddr)
  private val pRd = prev.read(cRdAddr)
  private val wRd = where.read(cRdAddr)
  // One write port each.
  private class WrPort(depth: Int, w: Int) {
    val en = WireDefault(false.B)
    val addr = WireDefault(0.U(log2Ceil(depth).W))
    val data = WireDefault(0.U(w.W))
    def apply(a: UInt, d: UInt): Unit = { en := true.B; addr := a; data := d }
  }
  private val hWr = new WrPort(slots, ib + 1)
  private val nWr = new WrPort(connections, ib + 1)
  private val pWr = new WrPort(connections, ib + 1)
  private val wWr = new WrPort(connections, sb + 1)
  when(hWr.en) { head.write(hWr.addr, hWr.data) }
  when(nWr.en) { next.write(nWr.addr, nWr.data) }
  when(pWr.en) { prev.write(pWr.addr, pWr.data) }
  when(wWr.en) { where.write(wWr.addr, wWr.data) }

  // ---- State machine
  private object S extends ChiselEnum {
    val Init, Idle, C1, C2, C3, I1, I2, I3, E1, E2, E3 = Value
  }
  private val st = RegInit(S.Init)
  private val initEnd = connections max slots
  private val initIx = RegInit(0.U(log2Ceil(initEnd).W))
  private val c = Reg(UInt(ib.W))
  private val isArm = Reg(Bool())
  private val deadlineSlot = Reg(UInt(sb.W)) // (the tick itself is not needed: a slot holds one tick)
  private val slotC = Reg(UInt(sb.W)) // the slot c is in (cancel) or goes to (insert)
  private val h = Reg(UInt((ib + 1).W))
  private val cmdTurn = RegInit(true.B)
  private val armed = RegInit(0.U((ib + 1).W))

  private val outQ = Module(new Queue(new TimerExpired(ib), 4))
  expired <> outQ.io.deq
  outQ.io.enq.valid := false.B
  outQ.io.enq.bits.id := DontCare
  outQ.io.enq.bits.tick := doneNext

  status.ready := st =/= S.Init
  status.now := now
  status.done := done
  status.armed := armed

  private val lagging = done =/= now
  private val popOk = lagging && outQ.io.enq.ready
  private val takeCmd = cmd.valid && (cmdTurn || !popOk)
  cmd.ready := st === S.Idle && takeCmd
  // Deadline of an arm taken now.
  private val d1 = Mux(cmd.bits.delay === 0.U, 1.U, cmd.bits.delay)
  private val want = now + d1
  private val limit = done + (slots - 1).U
  private val over = want =/= limit && (want - limit) < ((1 << (TB - 1)) - 1).U // want after limit (times are near)
  private val nextDeadline = Mux(over, limit, want)

  switch(st) {
    is(S.Init) {
      // Clear the heads and the armed bits (either may be the longer).
      if (slots < initEnd) { when(initIx < slots.U) { hWr(initIx(sb - 1, 0), 0.U) } }
      else hWr(initIx, 0.U)
      if (connections < initEnd) { when(initIx < connections.U) { wWr(initIx(ib - 1, 0), 0.U) } }
      else wWr(initIx, 0.U)
      initIx := initIx + 1.U
      when(initIx === (initEnd - 1).U) { st := S.Idle }
    }
    is(S.Idle) {
      when(takeCmd) {
        c := cmd.bits.id
        isArm := !cmd.bits.cancel
        deadlineSlot := nextDeadline
        cmdTurn := false.B
        cRdAddr := cmd.bits.id
        st := S.C2 // (where/next/prev of c read now)
      }.elsewhen(popOk) {
        cmdTurn := true.B
        hRdAddr := slotNext
        st := S.E2
      }
    }
    // Cancel: unlink c if armed.
    is(S.C2) {
      slotC := wRd(sb - 1, 0)
      when(wRd(sb)) {
        val p = pRd
        val n = nRd
        when(p(ib)) { nWr(p(ib - 1, 0), n) }.otherwise { hWr(wRd(sb - 1, 0), n) }
        when(n(ib)) { pWr(n(ib - 1, 0), p) }
        wWr(c, 0.U)
        armed := armed - 1.U
      }
      st := Mux(isArm, S.I1, S.Idle)
    }
    // Insert c at the head of its deadline's slot.
    is(S.I1) {
      hRdAddr := deadlineSlot
      st := S.I2
    }
    is(S.I2) {
      h := hRd
      nWr(c, hRd)
      pWr(c, 0.U)
      hWr(deadlineSlot, link(true.B, c))
      wWr(c, Cat(true.B, deadlineSlot))
      armed := armed + 1.U
      st := S.I3
    }
    is(S.I3) {
      when(h(ib)) { pWr(h(ib - 1, 0), link(true.B, c)) }
      st := S.Idle
    }
    // Expiry: pop the head of slot done+1, or mark it empty.
    is(S.E2) {
      when(hRd(ib)) {
        c := hRd(ib - 1, 0)
        cRdAddr := hRd(ib - 1, 0)
        st := S.E3
      }.otherwise {
        done := doneNext
        st := S.Idle
      }
    }
    is(S.E3) {
      hWr(slotNext, nRd)
      when(nRd(ib)) { pWr(nRd(ib - 1, 0), 0.U) }
      wWr(c, 0.U)
      armed := armed - 1.U
      outQ.io.enq.valid := true.B // room checked in Idle (popOk)
      outQ.io.enq.bits.id := c
      st := S.Idle
    }
  }
}
