package offnic.offload

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisIO, AxisParams}
import offnic.util.BitMask

/** What to do with one received frame, in frame order. */
class ReasmVerdict(val bufIdBits: Int) extends Bundle {
  /** ReasmAction: Host (deliver as any frame), Drop (release it), Place (write part of it
    * into a reassembly buffer). */
  val action = UInt(2.W)
  /** Place: frame bytes from `ramOffset`, `len` of them, go to host address `hostAddr`. */
  val ramOffset = UInt(7.W)
  val len = UInt(17.W)
  val hostAddr = UInt(64.W)
  /** Place and the datagram is complete: after the write, complete buffer `bufId`. */
  val complete = Bool()
  val bufId = UInt(bufIdBits.W)
  /** Where the reassembled frame starts in the buffer (= ReasmLayout.PayloadAt - its
    * Ethernet + IP header length) and its length from there. */
  val start = UInt(7.W)
  val frameLen = UInt(17.W)
  /** One's complement sum of the whole IP payload (not complemented). */
  val csum = UInt(16.W)
  /** ECN bits the driver ORs into the TOS (CE when some fragment had CE); DF: set DF in
    * the rebuilt header (the largest fragment had DF). */
  val ecn = UInt(2.W)
  val df = Bool()
}

object ReasmAction {
  val Host = 0
  val Drop = 1
  val Place = 2
}

/** The layout of a reassembly buffer: the payload starts at byte 78 (room for an 18-byte
  * tagged Ethernet header and a 60-byte IP header with options in front of it), so a
  * datagram of 65,515 payload bytes needs 65,593 bytes. */
object ReasmLayout {
  val PayloadAt = 78
  val BufferBytes = PayloadAt + 65535 - 20
}

/** Outcome counters, in the order of `Reassembler.counters`. */
object ReasmStat extends Enumeration {
  val Fragments, Reassembled, Queued, Duplicate, Trimmed, Overlap, BadLast, BeyondEnd, Empty, Oversize,
    EcnMix, TooManyFrags, Timeout, Evicted, Bypassed, BadHeader, BadChecksum, Truncated, PostDropped = Value
}

/** IPv4 reassembly by direct placement (docs/frag.md): each fragment's payload is written
  * by the DMA engine straight to its place in a host buffer the context owns; one
  * completion per datagram. This block decides; the RX engine moves the bytes.
  *
  * Frames come in on `s_axis` and leave unchanged on `m_axis` (the [[FragParser]] watches
  * them); each frame gets one [[ReasmVerdict]] on `m_verdict`, in frame order, a few cycles
  * after its last beat (more for fragments: a lookup, two passes over its coverage bits).
  *
  * Contexts: `contexts` of them in a 2-way set-associative table indexed by a Toeplitz hash
  * of the key (source, destination, protocol, identification) with the programmable
  * `cfg_hash_key`. Per context: a 64 KiB buffer (taken from the pool the driver fills
  * through `buf_post`), and a coverage bitmap in 8-byte units (8,192 bits) with a second
  * bitmap marking where Linux's "runs" start (a fragment that does not continue the
  * highest one starts a run; a fragment inside one run is a duplicate, one that touches
  * data otherwise overlaps): 2 KiB of block RAM per context.
  *
  * Linux's rules (ip_frag_queue; `ipfrag.Reassembler` models them, checked against Linux),
  * in its order: a last fragment ending before held data or at another end than an earlier
  * last fragment drops the datagram; data past a known end drops it; an empty fragment
  * drops it; then duplicate (ignored, the datagram kept) or overlap (dropped); then the
  * NIC's caps: more than `cfg_max_frags` fragments, and `cfg_max_bytes` payload bytes held
  * over all contexts (the oldest contexts are evicted to make room, possibly this one). At
  * completion: an ECN mix of Not-ECT with ECT/CE drops it. A datagram longer than 65,535
  * bytes with a 20-byte header is dropped at the fragment that shows it (Linux waits for
  * completion; none of them could ever complete).
  *
  * Contexts are kept in a list in the order they were opened: the oldest is the head, the
  * first to time out (`cfg_timeout_us` after its first fragment, as Linux) and the first
  * evicted. When a fragment opens no context (its set's two ways are busy, or no buffer is
  * posted), it goes to the host unchanged and its key's hash bucket is marked for
  * `cfg_timeout_us` (refreshed by every such fragment): later fragments of that datagram
  * find the mark and follow it to the host, so a datagram is never split between NIC and
  * host. A marked bucket shared with other keys sends those to the host too: safe.
  */
class Reassembler(val contexts: Int = 64, val buffers: Int = 256, val buckets: Int = 256,
                  val axisP: AxisParams = AxisParams(32)) extends Module {
  require(isPow2(contexts) && contexts >= 4, "contexts: a power of two >= 4")
  require(isPow2(buffers) && isPow2(buckets))
  private val ways = 2
  private val sets = contexts / ways
  private val cb = log2Ceil(contexts)
  private val sb = log2Ceil(sets)
  private val bb = log2Ceil(buffers)
  private val kb = log2Ceil(buckets)
  private val wordsPerCtx = 128 // 8,192 units of 8 bytes, 64 per word
  private val hashKeyBits = 88 + 32 - 1

  val s_axis = IO(Flipped(new AxisIO(axisP)))
  val m_axis = IO(new AxisIO(axisP))
  val m_verdict = IO(Decoupled(new ReasmVerdict(bb)))
  val cfg_enable = IO(Input(Bool()))
  val cfg_timeout_us = IO(Input(UInt(24.W)))
  val cfg_tick_cycles = IO(Input(UInt(16.W)))
  val cfg_max_frags = IO(Input(UInt(8.W)))
  val cfg_max_bytes = IO(Input(UInt(24.W)))
  val cfg_hash_key = IO(Input(UInt(hashKeyBits.W)))
  /** A buffer for the pool: id and host address (ReasmLayout.BufferBytes at least). */
  val buf_post = IO(Flipped(Valid(new Bundle {
    val id = UInt(bb.W)
    val addr = UInt(64.W)
  })))
  /** A delivered buffer the RX engine could not complete (queue off, CQ full): back to the pool. */
  val buf_return = IO(Flipped(Valid(UInt(bb.W))))
  val counters = IO(Output(Vec(ReasmStat.maxId, UInt(32.W))))
  /** Contexts open, payload bytes held, buffers in the pool. */
  val status = IO(Output(new Bundle {
    val open = UInt((cb + 1).W)
    val bytes = UInt(24.W)
    val pool = UInt((bb + 1).W)
  }))

  private val parser = Module(new FragParser(axisP))
  parser.s_axis <> s_axis
  m_axis <> parser.m_axis
  private val infoIn = parser.m_info

  // ---- Time: microseconds.
  private val tick = RegInit(0.U(16.W))
  private val now = RegInit(0.U(24.W))
  private val tickNow = tick + 1.U >= cfg_tick_cycles
  tick := Mux(tickNow, 0.U, tick + 1.U)
  when(tickNow) { now := now + 1.U }
  /** `stamp` (an expiry time) has passed; times are within 2^23 us of each other. */
  private def passed(stamp: UInt): Bool = (now - stamp) < ((1 << 23) - 1).U // (not a power of two: a full compare, no bit slice)

  // ---- Counters
  private val stats = RegInit(VecInit(Seq.fill(ReasmStat.maxId)(0.U(32.W))))
  private val statPulse = WireDefault(VecInit(Seq.fill(ReasmStat.maxId)(false.B)))
  for (i <- 0 until ReasmStat.maxId) when(statPulse(i)) { stats(i) := stats(i) + 1.U }
  counters := stats
  private def count(s: ReasmStat.Value): Unit = statPulse(s.id) := true.B

  // ---- Buffer pool: the driver's buffers by id, a queue of the free ids.
  // (Mems named reasm_*: firtool's wrappers keep an unused clock on combinational reads,
  // which hw/lint/verilator.vlt waives for these names.)
  private val bufAddr = Mem(buffers, UInt(64.W)).suggestName("reasm_buf_addr")
  private val freeIds = Module(new Queue(UInt(bb.W), buffers))
  private val giveBack = Wire(Valid(UInt(bb.W)))
  giveBack.valid := false.B
  giveBack.bits := DontCare
  when(buf_post.valid) { bufAddr.write(buf_post.bits.id, buf_post.bits.addr) }
  // A post always wins the queue's input, then a return (held in a small queue), then the
  // engine's own give-back (only in a cycle with neither: giveBackOk). Nothing is lost but
  // a post the queue has no room for (a driver posting an id twice): counted.
  private val returns = Module(new Queue(UInt(bb.W), 4))
  returns.io.enq.valid := buf_return.valid // at most one per completion: never more than 4 waiting
  returns.io.enq.bits := buf_return.bits
  returns.io.deq.ready := !buf_post.valid
  freeIds.io.enq.valid := buf_post.valid || returns.io.deq.valid || giveBack.valid
  freeIds.io.enq.bits := Mux(buf_post.valid, buf_post.bits.id, Mux(returns.io.deq.valid, returns.io.deq.bits, giveBack.bits))
  when(buf_post.valid && !freeIds.io.enq.ready) { count(ReasmStat.PostDropped) }
  private val giveBackOk = !buf_post.valid && !returns.io.deq.valid
  freeIds.io.deq.ready := false.B

  // ---- Bypass buckets: expiry times, valid bits swept clean as they pass.
  private val bucketExp = Mem(buckets, UInt(24.W)).suggestName("reasm_bucket_exp")
  private val bucketOn = RegInit(0.U(buckets.W)) // one bit per bucket (a simulator updates it as a word)
  private val sweep = RegInit(0.U(kb.W))
  sweep := sweep + 1.U
  private val bucketMark = Wire(Valid(UInt(kb.W)))
  bucketMark.valid := false.B
  bucketMark.bits := DontCare
  when(bucketMark.valid) {
    bucketExp.write(bucketMark.bits, now + cfg_timeout_us)
  }
  private val sweepClears = passed(bucketExp.read(sweep)) && !(bucketMark.valid && bucketMark.bits === sweep)
  bucketOn := (bucketOn | BitMask.only(bucketMark.bits, buckets, bucketMark.valid)) &
    ~BitMask.only(sweep, buckets, sweepClears)

  // ---- Context table
  class Ctx extends Bundle {
    val bufId = UInt(bb.W)
    val length = UInt(17.W) // Linux's q.len: the known end, or the largest end so far
    val lastIn = Bool()
    val meat = UInt(17.W) // payload bytes held
    val nfrags = UInt(8.W)
    val csum = UInt(17.W)
    val ecn = UInt(4.W)
    val maxSize = UInt(17.W)
    val maxDfSize = UInt(17.W)
    val start = UInt(7.W) // where the offset-0 fragment's frame starts in the buffer
    val ipHdr = UInt(6.W) // the offset-0 fragment's IP header length
    val runs = Bool() // any fragment held
    val tailEnd = UInt(17.W) // end of the highest fragment
    val maxWord = UInt(8.W) // highest bitmap word written
  }
  private val keys = Mem(contexts, UInt(88.W)).suggestName("reasm_keys")
  private val ctxs = Mem(contexts, new Ctx).suggestName("reasm_ctxs")
  private val born = Mem(contexts, UInt(24.W)).suggestName("reasm_born")
  // Open contexts, one bit each, set when one opens (Load) and cleared when it is freed
  // (Kill): a word and memories, not a register per context with its own write decode.
  private val valid = RegInit(0.U(contexts.W))
  private val validSet = WireDefault(0.U(contexts.W))
  private val validClear = WireDefault(0.U(contexts.W))
  valid := (valid | validSet) & ~validClear
  private def validWays(set: UInt): UInt = valid.asTypeOf(Vec(contexts / 2, UInt(2.W)))(set) // both ways of a set
  // Opening order: a doubly linked list, oldest at the head. One link of each kind changes
  // per cycle at most (Load or Kill).
  private val next = Mem(contexts, UInt(cb.W)).suggestName("reasm_next")
  private val prev = Mem(contexts, UInt(cb.W)).suggestName("reasm_prev")
  private def link(mem: Mem[UInt]): (Bool, UInt, UInt) = {
    val (en, at, to) = (WireDefault(false.B), WireDefault(0.U(cb.W)), WireDefault(0.U(cb.W)))
    when(en) { mem.write(at, to) }
    (en, at, to)
  }
  private val (nextWr, nextAt, nextTo) = link(next)
  private val (prevWr, prevAt, prevTo) = link(prev)
  private def setNext(at: UInt, to: UInt): Unit = { nextWr := true.B; nextAt := at; nextTo := to }
  private def setPrev(at: UInt, to: UInt): Unit = { prevWr := true.B; prevAt := at; prevTo := to }
  private val head = RegInit(0.U(cb.W))
  private val tail = RegInit(0.U(cb.W))
  private val nOpen = RegInit(0.U((cb + 1).W))
  private val bytesHeld = RegInit(0.U(24.W))
  status.open := nOpen
  status.bytes := bytesHeld
  status.pool := freeIds.io.count

  // Coverage bitmaps: word = {run starts (127:64), covered (63:0)}.
  private val bitmap = SyncReadMem(contexts * wordsPerCtx, UInt(128.W))
  private val bmRdAddr = WireDefault(0.U((cb + 7).W))
  private val bmRdEn = WireDefault(false.B)
  private val bmRd = bitmap.read(bmRdAddr, bmRdEn)
  // One write port (simple dual-port block RAM): Init, Set and Kill write through it.
  private val bmWrEn = WireDefault(false.B)
  private val bmWrAddr = WireDefault(0.U((cb + 7).W))
  private val bmWrData = WireDefault(0.U(128.W))
  when(bmWrEn) { bitmap.write(bmWrAddr, bmWrData) }
  private def bmWrite(a: UInt, d: UInt): Unit = { bmWrEn := true.B; bmWrAddr := a; bmWrData := d }

  // ---- The engine
  private object S extends ChiselEnum {
    val Init, Idle, Lookup, Load, Rules, Check, Caps, Evict, Set, Commit, Kill, Emit = Value
  }
  // After reset the bitmaps are cleared word by word (block RAM keeps its contents over a
  // reset): contexts * 128 cycles, 33 us for 64 contexts at 250 MHz; fragments wait.
  private val st = RegInit(S.Init)
  private val initWord = RegInit(0.U((cb + 7).W))
  private val f = Reg(new FragInfo)
  private val w = Reg(new Ctx)
  private val c = Reg(UInt(cb.W)) // the fragment's context
  private val set = Reg(UInt(sb.W))
  private val bucket = Reg(UInt(kb.W))
  private val hit = Reg(Vec(ways, Bool()))
  private val verdict = Reg(new ReasmVerdict(bb))
  private val victim = Reg(UInt(cb.W)) // context being freed in Kill
  private val victimBuf = Reg(Bool()) // give its buffer back
  private val victimOwn = Reg(Bool()) // it is the fragment's context: its state is in `w`
  private val afterKill = Reg(S()) // where Kill returns
  private val k = Reg(UInt(8.W)) // bitmap word index in Check/Set/Kill
  private val kLast = Reg(UInt(8.W))
  private val pipe = RegInit(false.B) // a bitmap read is in flight (data in bmRd)
  private val pipeK = Reg(UInt(7.W))
  private val anyCov = Reg(Bool())
  private val allCov = Reg(Bool())
  private val startIn = Reg(Bool())

  private val out = Module(new Queue(new ReasmVerdict(bb), 2))
  m_verdict <> out.io.deq
  out.io.enq.valid := false.B
  out.io.enq.bits := verdict
  infoIn.ready := false.B

  // Unit range of the fragment [s, e) and its end in bytes.
  private val s = f.off
  private val endB = Cat(f.off, 0.U(3.W)) +& f.n // 17 bits
  private val e = offnic.pcie.DmaUtil.ceilShift(endB, 3) // 14 bits: up to 8,192+
  private val firstWord = s(12, 6)
  private val lastWord = offnic.pcie.DmaUtil.ceilShift(e, 6) - 1.U // 8 bits (e >= 1 here)
  private def rangeMask(word: UInt, lo: UInt, hi: UInt): UInt = {
    // bits i of word `word` with lo <= 64 * word + i < hi
    val base = Cat(word, 0.U(6.W))
    VecInit((0 until 64).map(i => lo <= (base + i.U) && (base + i.U) < hi)).asUInt
  }

  // Toeplitz hash of the key with the programmable key: set index and bucket.
  private def toeplitz(data: UInt, bits: Int): UInt = Toeplitz.window(data, cfg_hash_key, bits)

  private def free(): Unit = { // the context's list links, valid bit and count (Kill's last step)
    val v = victim
    validClear := UIntToOH(v, contexts)
    nOpen := nOpen - 1.U
    when(head === v) { head := next(v) }.otherwise { setNext(prev(v), next(v)) }
    when(tail === v) { tail := prev(v) }.otherwise { setPrev(next(v), prev(v)) }
  }
  private def kill(v: UInt, ret: S.Type, giveBuf: Bool, own: Boolean): Unit = {
    victim := v
    victimBuf := giveBuf
    victimOwn := own.B
    afterKill := ret
    k := 0.U
    st := S.Kill
  }
  /** The verdict of a frame that needs no context, at once (one frame per cycle): Host, or
    * Drop for a bad fragment; `fragToHost`: a good fragment too, bypassing. */
  private def fastVerdict(i: FragInfo, fragToHost: Bool): Unit = {
    val bad = cfg_enable && i.kind === FragKind.Bad.U
    val bypass = cfg_enable && i.kind === FragKind.Frag.U && fragToHost
    out.io.enq.valid := true.B
    out.io.enq.bits.action := Mux(bad, ReasmAction.Drop.U, ReasmAction.Host.U)
    out.io.enq.bits.complete := false.B
    infoIn.ready := out.io.enq.ready
    when(out.io.enq.ready && bad) {
      when(i.bad === FragBad.Checksum.U) { count(ReasmStat.BadChecksum) }
        .elsewhen(i.bad === FragBad.Truncated.U) { count(ReasmStat.Truncated) }
        .otherwise { count(ReasmStat.BadHeader) }
    }
    when(out.io.enq.ready && bypass) {
      bucketMark.valid := true.B
      bucketMark.bits := infoHash(kb - 1, 0)
      count(ReasmStat.Bypassed)
    }
  }
  private def emit(action: Int): Unit = {
    verdict.action := action.U
    verdict.complete := false.B
    st := S.Emit
  }

  private val infoHash = toeplitz(infoIn.bits.key, sb + kb) // set index, then bucket
  private val headBorn = born.read(head)
  // Two read ports: the looked-up context (Load), and the head or the victim (Idle, Evict,
  // Kill); one write port.
  private val other = ctxs.read(Mux(st === S.Kill, victim, head))
  // Only some fields of `other` matter (bytes held, buffer, bitmap extent); and the hash
  // uses the key's first bits only (as many windows as set and bucket bits).
  private val unused_other = WireDefault(other.asUInt)
  private val unused_hash_key = WireDefault(cfg_hash_key)
  dontTouch(unused_other)
  dontTouch(unused_hash_key)
  private val ctxWrEn = WireDefault(false.B)
  private val ctxWrData = WireDefault(w)
  when(ctxWrEn) { ctxs.write(c, ctxWrData) }
  private val headExpired = nOpen =/= 0.U && passed(headBorn + cfg_timeout_us)

  switch(st) {
    is(S.Init) {
      bmWrite(initWord, 0.U)
      initWord := initWord + 1.U
      when(initWord.andR) { st := S.Idle }
      // Meanwhile frames keep flowing: fragments go to the host (their buckets marked, so
      // their datagrams stay there).
      when(infoIn.valid) { fastVerdict(infoIn.bits, fragToHost = true.B) }
    }
    is(S.Idle) {
      when(headExpired) {
        count(ReasmStat.Timeout)
        val h = head
        bytesHeld := bytesHeld - other.meat
        kill(h, S.Idle, true.B, own = false)
      }.elsewhen(infoIn.valid) {
        val i = infoIn.bits
        f := i
        set := infoHash(sb + kb - 1, kb)
        bucket := infoHash(kb - 1, 0)
        when(!cfg_enable || i.kind =/= FragKind.Frag.U) {
          fastVerdict(i, fragToHost = false.B)
        }.otherwise {
          infoIn.ready := true.B
          st := S.Lookup
        }
      }
    }
    is(S.Lookup) {
      for (wy <- 0 until ways) {
        val idx = Cat(set, wy.U(1.W))
        hit(wy) := validWays(set)(wy) && keys.read(idx) === f.key
      }
      st := S.Load
    }
    is(S.Load) {
      val idx0 = Cat(set, 0.U(1.W))
      val idx1 = Cat(set, 1.U(1.W))
      val bucketLive = BitMask.bit(bucketOn, bucket) && !passed(bucketExp.read(bucket))
      when(hit.asUInt.orR) {
        val idx = Mux(hit(0), idx0, idx1)
        c := idx
        w := ctxs.read(idx)
        count(ReasmStat.Fragments)
        st := S.Rules
      }.otherwise {
        val freeWay = !validWays(set)(0) || !validWays(set)(1)
        val idx = Mux(!validWays(set)(0), idx0, idx1)
        when(bucketLive || !freeWay || !freeIds.io.deq.valid) {
          bucketMark.valid := true.B
          bucketMark.bits := bucket
          count(ReasmStat.Bypassed)
          emit(ReasmAction.Host)
        }.otherwise {
          // Open a context at the tail of the list with a buffer from the pool.
          freeIds.io.deq.ready := true.B
          c := idx
          validSet := UIntToOH(idx, contexts)
          keys.write(idx, f.key)
          born.write(idx, now)
          nOpen := nOpen + 1.U
          when(nOpen === 0.U) { head := idx }.otherwise { setNext(tail, idx); setPrev(idx, tail) }
          tail := idx
          w := 0.U.asTypeOf(new Ctx)
          w.bufId := freeIds.io.deq.bits
          count(ReasmStat.Fragments)
          st := S.Rules
        }
      }
    }
    is(S.Rules) {
      // Linux's order: the end checks, then an empty fragment. Its state changes (last
      // fragment seen, the end) stay even when the fragment turns out a duplicate.
      when(f.trimmed) { count(ReasmStat.Trimmed) }
      val nw = WireDefault(w)
      val badEnd = WireDefault(false.B)
      val why0 = WireDefault(ReasmStat.BadLast.id.U(5.W))
      when(!f.mf) {
        when(endB < w.length || (w.lastIn && endB =/= w.length)) {
          badEnd := true.B
        }.otherwise { nw.lastIn := true.B; nw.length := endB }
      }.otherwise {
        when(endB > w.length) {
          when(w.lastIn) { badEnd := true.B; why0 := ReasmStat.BeyondEnd.id.U }.otherwise { nw.length := endB }
        }
      }
      val empty = f.n === 0.U
      val oversize = endB > (65535 - 20).U
      val drop = badEnd || empty || oversize
      val why = Mux(badEnd, why0, Mux(empty, ReasmStat.Empty.id.U, ReasmStat.Oversize.id.U))
      w := nw
      when(drop) {
        statPulse(why) := true.B
        bytesHeld := bytesHeld - w.meat
        kill(c, S.Emit, true.B, own = true)
        verdict.action := ReasmAction.Drop.U
        verdict.complete := false.B
      }.otherwise {
        k := firstWord
        kLast := lastWord
        pipe := false.B
        anyCov := false.B
        allCov := true.B
        startIn := false.B
        st := S.Check
      }
    }
    is(S.Check) {
      // One word read per cycle; each checked the cycle after.
      val issuing = k <= kLast
      when(issuing) {
        bmRdEn := true.B
        bmRdAddr := Cat(c, k(6, 0))
        k := k + 1.U
      }
      pipe := issuing
      pipeK := k(6, 0)
      when(pipe) {
        val m = rangeMask(pipeK, s, e)
        val inner = rangeMask(pipeK, s +& 1.U, e)
        val cov = bmRd(63, 0) & m
        anyCov := anyCov || cov.orR
        allCov := allCov && cov === m
        startIn := startIn || (bmRd(127, 64) & inner).orR
      }
      when(!issuing && !pipe) { st := S.Caps }
    }
    is(S.Caps) {
      val dup = anyCov && allCov && !startIn
      val overlap = anyCov && !dup
      val n = f.n
      when(dup) {
        count(ReasmStat.Duplicate)
        ctxWrEn := true.B // keep the end checks' changes
        emit(ReasmAction.Drop)
      }.elsewhen(overlap) {
        count(ReasmStat.Overlap)
        bytesHeld := bytesHeld - w.meat
        kill(c, S.Emit, true.B, own = true)
        verdict.action := ReasmAction.Drop.U
        verdict.complete := false.B
      }.elsewhen(w.nfrags >= cfg_max_frags) {
        count(ReasmStat.TooManyFrags)
        bytesHeld := bytesHeld - w.meat
        kill(c, S.Emit, true.B, own = true)
        verdict.action := ReasmAction.Drop.U
        verdict.complete := false.B
      }.elsewhen(bytesHeld +& n > cfg_max_bytes) {
        st := S.Evict
      }.otherwise {
        k := firstWord
        pipe := false.B
        st := S.Set
      }
    }
    is(S.Evict) {
      // Oldest first, until this fragment fits; if that is its own context, it goes.
      val h = head
      val hm = Mux(h === c, w.meat, other.meat)
      bytesHeld := bytesHeld - hm
      count(ReasmStat.Evicted)
      when(h === c) {
        kill(c, S.Emit, true.B, own = true)
        verdict.action := ReasmAction.Drop.U
        verdict.complete := false.B
      }.otherwise {
        kill(h, S.Caps, true.B, own = false)
      }
    }
    is(S.Set) {
      // Read-modify-write: word k read, written the cycle after with the new bits.
      val issuing = k <= kLast
      when(issuing) {
        bmRdEn := true.B
        bmRdAddr := Cat(c, k(6, 0))
        k := k + 1.U
      }
      pipe := issuing
      pipeK := k(6, 0)
      when(pipe) {
        val m = rangeMask(pipeK, s, e)
        // A run starts here unless the fragment continues the highest one.
        val newRun = !w.runs || Cat(f.off, 0.U(3.W)) =/= w.tailEnd
        val startBit = Mux(newRun && pipeK === firstWord, UIntToOH(s(5, 0), 64), 0.U(64.W))
        bmWrite(Cat(c, pipeK), Cat(bmRd(127, 64) | startBit, bmRd(63, 0) | m))
      }
      when(!issuing && !pipe) { st := S.Commit }
    }
    is(S.Commit) {
      val n = f.n
      val nw = WireDefault(w)
      val sz = n +& f.ipHdr // Linux's fragment size for the DF rule: IP header + payload
      nw.meat := w.meat + n
      nw.nfrags := Mux(w.nfrags.andR, w.nfrags, w.nfrags + 1.U)
      nw.csum := {
        val t = w.csum(15, 0) +& f.csum
        (t(15, 0) + t(16)).pad(17)
      }
      nw.ecn := w.ecn | UIntToOH(f.ecn, 4)
      nw.runs := true.B
      nw.tailEnd := Mux(endB > w.tailEnd, endB, w.tailEnd)
      nw.maxWord := Mux(!w.runs || lastWord > w.maxWord, lastWord, w.maxWord)
      nw.maxSize := Mux(sz > w.maxSize, sz, w.maxSize)
      nw.maxDfSize := Mux(f.df && sz > w.maxDfSize, sz, w.maxDfSize)
      when(f.off === 0.U) {
        nw.start := ReasmLayout.PayloadAt.U - f.hdrLen
        nw.ipHdr := f.ipHdr
      }
      val addr = bufAddr.read(w.bufId)
      verdict.action := ReasmAction.Place.U
      verdict.ramOffset := Mux(f.off === 0.U, 0.U, f.hdrLen)
      verdict.len := Mux(f.off === 0.U, f.hdrLen +& n, n)
      verdict.hostAddr := Mux(f.off === 0.U, addr + (ReasmLayout.PayloadAt.U - f.hdrLen),
        addr + ReasmLayout.PayloadAt.U + Cat(f.off, 0.U(3.W)))
      verdict.bufId := w.bufId
      verdict.complete := false.B
      val done = nw.lastIn && nw.meat === nw.length
      val ecn = nw.ecn
      val ecnMix = ecn(0) && ecn(3, 1).orR
      val oversize = nw.ipHdr +& nw.length > 65535.U
      verdict.start := nw.start
      verdict.frameLen := ((ReasmLayout.PayloadAt.U - nw.start) +& nw.length)(16, 0) // <= 78 + 65,515
      verdict.csum := nw.csum(15, 0)
      verdict.ecn := Mux(ecn(3) && ecn(2, 1).orR, 3.U, 0.U)
      verdict.df := nw.maxDfSize === nw.maxSize
      w := nw
      when(done) {
        // Delivered (the buffer goes to the host with the completion) or dropped.
        bytesHeld := bytesHeld - w.meat
        when(ecnMix) { count(ReasmStat.EcnMix) }.elsewhen(oversize) { count(ReasmStat.Oversize) }
          .otherwise { count(ReasmStat.Reassembled) }
        val ok = !ecnMix && !oversize
        kill(c, S.Emit, !ok, own = true)
        when(!ok) { verdict.action := ReasmAction.Drop.U }
        verdict.complete := ok
      }.otherwise {
        bytesHeld := bytesHeld + n
        count(ReasmStat.Queued)
        ctxWrEn := true.B
        ctxWrData := nw
        st := S.Emit
      }
    }
    is(S.Kill) {
      // Clear the bitmap words the context wrote, then unlink it.
      val vw = Mux(victimOwn, w, other)
      when(vw.runs && k <= vw.maxWord) {
        bmWrite(Cat(victim, k(6, 0)), 0.U)
        k := k + 1.U
      }.elsewhen(!victimBuf || giveBackOk) {
        when(victimBuf) {
          giveBack.valid := true.B
          giveBack.bits := vw.bufId
        }
        free()
        st := afterKill
      }
    }
    is(S.Emit) {
      out.io.enq.valid := true.B
      when(out.io.enq.ready) { st := S.Idle }
    }
  }
}

object Reassembler extends Elaboratable {
  /** `contexts` (default 64), `buffers` (256), `buckets` (256). */
  def generate(p: Params): RawModule = new Reassembler(
    contexts = p.int("contexts", 64),
    buffers = p.int("buffers", 256),
    buckets = p.int("buckets", 256)
  )
}
