package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axi.{Axi4, Axi4IO}
import offnic.axis.{AxisBeat, AxisIO, AxisParams}
import offnic.pcie.DmaUtil
import offnic.util.SkidBuffer

/** [[RxRingWriter]]'s answer to one command: its bytes are in memory (every B response is
  * in), or something went wrong (`error`). */
class RxWriteDone(val idBits: Int) extends Bundle {
  val id = UInt(idBits.W)
  val error = Bool()
}

/** One frame byte range's place in memory, for the AW generator. */
private[toe] class RrwAwJob extends Bundle {
  val base = UInt(40.W)  // the ring's base (rounded down to the ring size)
  val off = UInt(26.W)   // ring offset of the first word, in 32-byte words
  val maskW = UInt(26.W) // ring size in words - 1
  val words = UInt(12.W) // words to write (>= 1)
}

/** A bound of a skip range in "o space": o = memory lane of the first byte + payload index,
  * so o / 32 is the write word and o % 32 its lane. */
private[toe] class RrwBound extends Bundle {
  val word = UInt(12.W)
  val lane = UInt(5.W)
}

/** One command as the data stage needs it. */
private[toe] class RrwDataJob extends Bundle {
  val pre = UInt(13.W)      // frame beats before the one that completes write word 0
  val shift = UInt(6.W)     // 1..32: byte offset of a write word in (beat ++ previous beat)
  val words = UInt(12.W)    // write words (0: drop the frame)
  val firstLane = UInt(5.W) // lane of the first byte
  val endLane = UInt(5.W)   // lane after the last byte (0: the whole last word)
  val gpos = UInt(4.W)      // the first word's place in its burst granule
  val gMask = UInt(4.W)     // burst granule in words - 1 (min(16, ring words))
  val bound = Vec(8, new RrwBound) // skip range r: [bound(2r), bound(2r+1))
  val inv = Vec(4, Bool())  // skip range r skips what is outside its bounds instead
}

private[toe] class RrwTrackJob(val idBits: Int) extends Bundle {
  val id = UInt(idBits.W)
  val bursts = UInt(12.W)
}

private[toe] class RrwAw(val addrBits: Int) extends Bundle {
  val addr = UInt(addrBits.W)
  val len = UInt(4.W)
}

private[toe] class RrwW extends Bundle {
  val data = UInt(256.W)
  val strb = UInt(32.W)
  val last = Bool()
}

/** Stores the payload of received TCP segments into per-connection receive rings in
  * memory, over an AXI4 write port: the TCP engine's receive data path after its decision
  * unit ([[TcpDecide]]'s `m_rxw` commands, [[RxWrite]]).
  *
  * What. Per command, in frame order: frame bytes [frameOff, frameOff + len) carry TCP
  * sequence numbers [seq, seq + len); byte s is written at rcvBase + (s mod 2^rcvLog2)
  * unless a skip range holds it. Skip range r < skipN holds s when
  * (s - start) mod 2^32 < (end - start) mod 2^32 (start == end: empty). Then `m_done`
  * says {id, error} once every B response of the command's writes is in, in command
  * order. len 0 writes nothing: the frame is consumed and the command done.
  *
  * Bad input, all defined, nothing hangs: a frame shorter than frameOff + len (or with
  * holes in tkeep) writes the bytes it has, the rest of the planned write beats go out
  * with zero strobes, and `error` is set; a longer frame's extra bytes are dropped;
  * rcvLog2 < 6 is taken as 6; rcvBase's bits below the ring size are ignored; skipN > 4
  * is 4. Any bresp but OKAY sets `error`. A ring smaller than len wraps onto itself: the
  * later bytes win (one AXI ID, so writes land in order).
  *
  * How. Four parts, joined by queues, so one command's writes overlap the next's:
  *  - decode (3 register stages): ring offset, write words N = ceil((lane + len) / 32),
  *    the byte shift between frame and memory lanes, bursts, and each skip range turned
  *    into one interval of payload indexes (a range longer than 2^31 as the complement of
  *    a shorter one, so each is one interval plus an invert bit), clipped to len.
  *  - AW: one burst per cycle, INCR of 32-byte beats; bursts never cross a multiple of
  *    min(512 B, ring size), so never 4 KiB (AXI) nor the ring's end (rings are aligned
  *    to their size), and are at most 16 beats.
  *  - data: frame beats in, write beats out, one a cycle. Memory lanes of payload bytes
  *    are the same on both sides of the ring's wrap (the wrap is word aligned), so one
  *    shift per command: write word k is 32 bytes at `shift` of (beat ++ previous beat),
  *    through the shared log shifter [[DmaUtil.window]] (data and tkeep alike; the carry
  *    scheme is [[offnic.cache.CacheAligner]]'s, which itself takes whole cache words
  *    without tkeep, leading/trailing frame bytes or early ends, so it is not reused). Strobes
  *    are the shifted tkeep & the payload's first/last-word masks & ~skip masks; the
  *    skip masks come from per-bound down-counters (registered "at"/"past" flags and a
  *    lane mask), so no 32-bit compares sit in the beat path.
  *  - B: one AXI ID, so responses come in burst order; counted per command, then joined
  *    with the data stage's short-frame flag into `m_done`.
  *
  * Figures (250 MHz; `tests/toe/test_rx_ring_writer.py` without back-pressure): a frame
  * costs its beats, plus one cycle when its last write word needs bytes from past the
  * frame's last beat (a flush): 2.97 cycles per 64-byte frame (2 beats; 25G brings one
  * every 7.0 cycles), 48.4 per 1,518-byte frame (48 beats; 25G: every 123). One AW per up
  * to 16 beats; a command a cycle into decode, 3 cycles deep; up to 32 commands between
  * decode and their last B response.
  *
  * Timing: s_axis, AW, W and m_done pass skid buffers (valid, data and ready from
  * registers); s_cmd.ready and bready depend on state only, so no input reaches an output
  * in the same cycle. The beat path is the 6-stage byte shifter; its control (pre == 0,
  * words left == 0 / 1, room for the command's result) comes from flag registers.
  */
class RxRingWriter(val idBits: Int = 12, val addrBits: Int = 40, val axiIdBits: Int = 4) extends Module {
  require(addrBits >= 32 && axiIdBits >= 1)
  val s_axis = IO(Flipped(new AxisIO(AxisParams(32))))
  val s_cmd = IO(Flipped(Decoupled(new RxWrite(idBits))))
  val m_axi = IO(new Axi4IO(addrBits, axiIdBits))
  val m_done = IO(Decoupled(new RxWriteDone(idBits)))

  private def thermoGe(lane: UInt): UInt = VecInit((0 until 32).map(j => j.U >= lane)).asUInt
  private val all = ~0.U(32.W)

  // ---- Queues between the parts.
  private val awQ = Module(new Queue(new RrwAwJob, 4))
  private val dQ = Module(new Queue(new RrwDataJob, 4))
  // Commands between decode and their last B response: bounds the commands in flight.
  private val tQ = Module(new Queue(new RrwTrackJob(idBits), 32))

  // ---- Decode. S0: the command as it came; S1: ring geometry and skip ranges relative to
  // seq; S2: skip intervals in payload indexes. Pushed from S2 into all three queues.
  private val v0 = RegInit(false.B)
  private val v1 = RegInit(false.B)
  private val v2 = RegInit(false.B)
  private val c0 = Reg(new RxWrite(idBits))
  private val push = Wire(Bool())
  private val move = !v2 || push
  s_cmd.ready := !v0 || move
  when(move) {
    v2 := v1
    v1 := v0
    v0 := false.B
  }
  when(s_cmd.fire) {
    v0 := true.B
    c0 := s_cmd.bits
  }

  // S0 -> S1
  private val lg = Mux(c0.rcvLog2 < 6.U, 6.U, c0.rcvLog2)
  private val sizeMask = VecInit((0 until 31).map(i => i.U < lg)).asUInt // ring size - 1
  private val off = c0.seq(30, 0) & sizeMask
  private val a0 = off(4, 0)
  private val endO = a0 +& c0.len
  private val u = c0.frameOff +& 31.U - a0 // frameOff - a0 + 31 >= 0
  private val id1 = RegEnable(c0.id, move)
  private val base1 = RegEnable(c0.rcvBase & ~Cat(0.U(9.W), sizeMask), move)
  private val offW1 = RegEnable(off(30, 5), move)
  private val maskW1 = RegEnable(sizeMask(30, 5), move)
  private val a01 = RegEnable(a0, move)
  private val len1 = RegEnable(c0.len, move)
  private val n1 = RegEnable(Mux(c0.len === 0.U, 0.U, DmaUtil.ceilShift(endO, 5)), move)
  private val endLane1 = RegEnable(endO(4, 0), move)
  private val pre1 = RegEnable(u(17, 5), move)
  private val shift1 = RegEnable(u(4, 0) +& 1.U, move)
  private val rr1 = Reg(Vec(4, UInt(32.W))) // arc start - seq
  private val m1 = Reg(Vec(4, UInt(32.W)))  // arc length (<= 2^31)
  private val inv1 = Reg(Vec(4, Bool()))
  private val on1 = Reg(Vec(4, Bool()))
  for (r <- 0 until 4) {
    val s = c0.skip(r).start
    val e = c0.skip(r).end
    val l = e - s
    val inv = l(31) && l(30, 0).orR // longer than 2^31: keep its complement [end, start)
    when(move) {
      rr1(r) := Mux(inv, e - c0.seq, s - c0.seq)
      m1(r) := Mux(inv, s - e, l)
      inv1(r) := inv
      on1(r) := r.U < c0.skipN
    }
  }

  // S1 -> S2: the arc [seq + rr, seq + rr + m) as payload indexes [lo, hi), clipped to
  // [0, len). One interval: the arc is at most 2^31 long and the payload under 2^16.
  private val gMask1 = maskW1(3, 0)
  private val sumB = (offW1(3, 0) & gMask1) +& n1 +& gMask1
  private val bursts = Mux(n1 === 0.U, 0.U, Mux(gMask1(3), sumB >> 4, Mux(gMask1(2), sumB >> 3,
    Mux(gMask1(1), sumB >> 2, sumB >> 1))))
  private val id2 = RegEnable(id1, move)
  private val base2 = RegEnable(base1, move)
  private val offW2 = RegEnable(offW1, move)
  private val maskW2 = RegEnable(maskW1, move)
  private val a02 = RegEnable(a01, move)
  private val n2 = RegEnable(n1, move)
  private val endLane2 = RegEnable(endLane1, move)
  private val pre2 = RegEnable(pre1, move)
  private val shift2 = RegEnable(shift1, move)
  private val bursts2 = RegEnable(bursts(11, 0), move)
  private val lo2 = Reg(Vec(4, UInt(16.W)))
  private val hi2 = Reg(Vec(4, UInt(16.W)))
  private val inv2 = Reg(Vec(4, Bool()))
  for (r <- 0 until 4) {
    val rr = rr1(r)
    val sum = rr +& m1(r)
    val near = rr(31, 17) === 0.U // the arc starts inside the payload's reach
    val lo = Mux(near, rr(16, 0), 0.U(17.W))
    val hi = Mux(near || sum(32), Cat(0.U(1.W), sum(31, 0)), 0.U(33.W)) // (sum < 2^32 when near)
    when(move) {
      lo2(r) := Mux(!on1(r), 0.U, Mux(lo > len1, len1, lo(15, 0)))
      hi2(r) := Mux(!on1(r), 0.U, Mux(hi > len1, len1, hi(15, 0)))
      inv2(r) := on1(r) && inv1(r)
    }
  }
  // (bursts < 2^12: n1 <= 2049; the sum's bit 0 is below every granule)
  private val unused_bursts_bits = WireDefault(Cat(bursts(bursts.getWidth - 1, 12), sumB(0)))
  dontTouch(unused_bursts_bits)

  // Push.
  private val needAw = n2 =/= 0.U
  push := v2 && dQ.io.enq.ready && tQ.io.enq.ready && (awQ.io.enq.ready || !needAw)
  awQ.io.enq.valid := push && needAw
  awQ.io.enq.bits.base := base2
  awQ.io.enq.bits.off := offW2
  awQ.io.enq.bits.maskW := maskW2
  awQ.io.enq.bits.words := n2
  dQ.io.enq.valid := push
  private val dj = dQ.io.enq.bits
  dj.pre := pre2
  dj.shift := shift2
  dj.words := n2
  dj.firstLane := a02
  dj.endLane := endLane2
  dj.gMask := maskW2(3, 0)
  dj.gpos := offW2(3, 0) & maskW2(3, 0)
  for (r <- 0 until 4) {
    val lo = lo2(r) +& a02
    val hi = hi2(r) +& a02
    dj.bound(2 * r).word := lo(16, 5)
    dj.bound(2 * r).lane := lo(4, 0)
    dj.bound(2 * r + 1).word := hi(16, 5)
    dj.bound(2 * r + 1).lane := hi(4, 0)
    dj.inv(r) := inv2(r)
  }
  tQ.io.enq.valid := push
  tQ.io.enq.bits.id := id2
  tQ.io.enq.bits.bursts := bursts2

  // ---- AW: one burst per cycle, up to the next granule boundary or the command's end.
  private val awSk = Module(new SkidBuffer(new RrwAw(addrBits)))
  private val aActive = RegInit(false.B)
  private val aBase = Reg(UInt(40.W))
  private val aOff = Reg(UInt(26.W))
  private val aMaskW = Reg(UInt(26.W))
  private val aLeft = Reg(UInt(12.W))
  private val room = (~aOff(3, 0) & aMaskW(3, 0)) +& 1.U // 1..16 words to the granule's end
  private val aLast = aLeft <= room
  private val beats = Mux(aLast, aLeft(4, 0), room)
  private val addr40 = aBase | Cat(aOff, 0.U(5.W))
  awSk.in.valid := aActive
  awSk.in.bits.addr := (if (addrBits >= 40) addr40.pad(addrBits) else addr40(addrBits - 1, 0))
  awSk.in.bits.len := (beats - 1.U)(3, 0)
  when(awSk.in.fire) {
    aOff := (aOff + beats) & aMaskW
    aLeft := aLeft - beats
    when(aLast) { aActive := false.B }
  }
  awQ.io.deq.ready := !aActive || (awSk.in.fire && aLast)
  when(awQ.io.deq.fire) {
    aActive := true.B
    aBase := awQ.io.deq.bits.base
    aOff := awQ.io.deq.bits.off
    aMaskW := awQ.io.deq.bits.maskW
    aLeft := awQ.io.deq.bits.words
  }
  if (addrBits < 40) {
    val unused_addr_msbs = WireDefault(addr40(39, addrBits))
    dontTouch(unused_addr_msbs)
  }
  m_axi.awid := 0.U
  m_axi.awaddr := awSk.out.bits.addr
  m_axi.awlen := awSk.out.bits.len
  m_axi.awsize := Axi4.Size32.U
  m_axi.awburst := Axi4.BurstIncr.U
  m_axi.awvalid := awSk.out.valid
  awSk.out.ready := m_axi.awready

  // ---- Data: frame beats in, write words out.
  private val inSk = Module(new SkidBuffer(new AxisBeat(AxisParams(32))))
  inSk.in.valid := s_axis.tvalid
  inSk.in.bits := s_axis.beat
  s_axis.tready := inSk.in.ready
  private val in = inSk.out
  private val wSk = Module(new SkidBuffer(new RrwW))
  private val rQ = Module(new Queue(Bool(), 32)) // per command: the frame was short

  private val active = RegInit(false.B)
  private val ended = Reg(Bool()) // the frame's last beat is in
  private val pre = Reg(UInt(13.W))
  private val shift = Reg(UInt(6.W))
  private val kLeft = Reg(UInt(12.W))
  private val first = Reg(Bool())
  private val firstMask = Reg(UInt(32.W))
  private val lastMask = Reg(UInt(32.W))
  private val gpos = Reg(UInt(4.W))
  private val gMask = Reg(UInt(4.W))
  private val carry = Reg(UInt(256.W))
  private val carryKeep = Reg(UInt(32.W))
  private val short = Reg(Bool())
  // pre == 0, kLeft == 0, kLeft == 1 as flags, to keep the beat's control path short.
  private val preZero = Reg(Bool())
  private val kZero = Reg(Bool())
  private val kOne = Reg(Bool())
  // Per skip bound: word - k (k: the write word), "k == word", "k > word", lanes >= lane.
  private val bLeft = Reg(Vec(8, UInt(13.W)))
  private val bAt = Reg(Vec(8, Bool()))
  private val bPast = Reg(Vec(8, Bool()))
  private val bTh = Reg(Vec(8, UInt(32.W)))
  private val inv = Reg(Vec(4, Bool()))

  // rQ has room for this cycle's command (at most one a cycle: "<= 30" a cycle ago will do).
  private val go = RegNext(rQ.io.count <= 30.U, false.B)
  private val consume = go && active && !ended && in.valid && (!preZero || kZero || wSk.in.ready)
  private val emitFlush = go && active && ended && !kZero && wSk.in.ready
  private val emit = (consume && preZero && !kZero) || emitFlush
  in.ready := consume

  private val hiKeep = Mux(ended, 0.U, in.bits.tkeep)
  private val wKeep = DmaUtil.window(Cat(hiKeep, carryKeep), shift, 1, 32, 32)
  private def ge(i: Int): UInt = Mux(bPast(i), all, Mux(bAt(i), bTh(i), 0.U))
  private val skipMask = (0 until 4).map(r => (ge(2 * r) & ~ge(2 * r + 1)) ^ Fill(32, inv(r))).reduce(_ | _)
  private val lastWord = kOne
  private val dataMask = Mux(first, firstMask, all) & Mux(lastWord, lastMask, all)
  private val missing = (dataMask & ~wKeep).orR
  wSk.in.valid := emit
  wSk.in.bits.data := DmaUtil.window(Cat(in.bits.tdata, carry), shift, 8, 256, 32)
  wSk.in.bits.strb := wKeep & dataMask & ~skipMask
  wSk.in.bits.last := lastWord || gpos === gMask

  private val finish = go && active && (ended || (consume && in.bits.tlast)) && (kZero || (emit && lastWord))
  rQ.io.enq.valid := finish
  rQ.io.enq.bits := short || (emit && missing)
  when(consume) {
    carry := in.bits.tdata
    // A frame ending before write word 0's first beat: word 0 has nothing either.
    carryKeep := Mux(in.bits.tlast && pre > 1.U, 0.U, in.bits.tkeep)
    pre := Mux(in.bits.tlast || preZero, 0.U, pre - 1.U)
    preZero := in.bits.tlast || preZero || pre === 1.U
    when(in.bits.tlast) { ended := true.B }
  }
  when(emitFlush) { carryKeep := 0.U }
  when(emit) {
    kLeft := kLeft - 1.U
    kZero := kOne
    kOne := kLeft === 2.U
    first := false.B
    gpos := (gpos + 1.U) & gMask
    short := short || missing
    for (i <- 0 until 8) {
      bLeft(i) := bLeft(i) - 1.U
      bAt(i) := bLeft(i) === 1.U
      bPast(i) := bPast(i) || bAt(i)
    }
  }
  when(finish) { active := false.B }
  dQ.io.deq.ready := go && (!active || finish)
  when(dQ.io.deq.fire) {
    val j = dQ.io.deq.bits
    active := true.B
    ended := false.B
    short := false.B
    carryKeep := 0.U // (the beat before the frame, for a command whose first word starts there)
    pre := j.pre
    preZero := j.pre === 0.U
    kZero := j.words === 0.U
    kOne := j.words === 1.U
    shift := j.shift
    kLeft := j.words
    first := true.B
    firstMask := thermoGe(j.firstLane)
    lastMask := Mux(j.endLane === 0.U, all, ~thermoGe(j.endLane))
    gpos := j.gpos
    gMask := j.gMask
    for (i <- 0 until 8) {
      bLeft(i) := j.bound(i).word
      bAt(i) := j.bound(i).word === 0.U
      bPast(i) := false.B
      bTh(i) := thermoGe(j.bound(i).lane)
    }
    inv := j.inv
  }
  m_axi.wdata := wSk.out.bits.data
  m_axi.wstrb := wSk.out.bits.strb
  m_axi.wlast := wSk.out.bits.last
  m_axi.wvalid := wSk.out.valid
  wSk.out.ready := m_axi.wready

  // ---- B: counted against the oldest command; then joined with its short flag.
  private val bdQ = Module(new Queue(new RxWriteDone(idBits), 4))
  private val head = tQ.io.deq
  private val bCnt = RegInit(0.U(12.W))
  private val bErr = RegInit(false.B)
  private val noB = head.bits.bursts === 0.U
  private val lastB = bCnt + 1.U === head.bits.bursts
  m_axi.bready := head.valid && !noB && bdQ.io.enq.ready
  private val bFire = m_axi.bvalid && m_axi.bready
  private val bBad = Axi4.isError(m_axi.bresp)
  bdQ.io.enq.valid := head.valid && (noB || (bFire && lastB))
  bdQ.io.enq.bits.id := head.bits.id
  bdQ.io.enq.bits.error := bErr || (bFire && bBad)
  head.ready := bdQ.io.enq.valid && bdQ.io.enq.ready
  when(bFire) {
    bCnt := Mux(lastB, 0.U, bCnt + 1.U)
    bErr := !lastB && (bErr || bBad)
  }
  private val unused_bid = WireDefault(m_axi.bid) // one ID: responses come in order
  dontTouch(unused_bid)

  private val doneSk = Module(new SkidBuffer(new RxWriteDone(idBits)))
  doneSk.in.valid := bdQ.io.deq.valid && rQ.io.deq.valid
  doneSk.in.bits.id := bdQ.io.deq.bits.id
  doneSk.in.bits.error := bdQ.io.deq.bits.error || rQ.io.deq.bits
  bdQ.io.deq.ready := doneSk.in.ready && rQ.io.deq.valid
  rQ.io.deq.ready := doneSk.in.ready && bdQ.io.deq.valid
  m_done <> doneSk.out

  // ---- No reads.
  m_axi.arid := 0.U
  m_axi.araddr := 0.U
  m_axi.arlen := 0.U
  m_axi.arsize := Axi4.Size32.U
  m_axi.arburst := Axi4.BurstIncr.U
  m_axi.arvalid := false.B
  m_axi.rready := true.B
  private val unused_read = WireDefault(Cat(m_axi.arready, m_axi.rid, m_axi.rdata, m_axi.rresp, m_axi.rlast,
    m_axi.rvalid))
  dontTouch(unused_read)
}

object RxRingWriter extends Elaboratable {
  /** `connections` (4096): the id width; `addr_bits` (40), `axi_id_bits` (4). */
  def generate(p: Params): RawModule =
    new RxRingWriter(log2Ceil(p.int("connections", 4096)), p.int("addr_bits", 40), p.int("axi_id_bits", 4))
}
