package offnic.cache

import chisel3._
import chisel3.util._
import offnic.pcie.DmaUtil

/** Where an append's bytes go: the aligner's view of one append. */
class AlignCtx extends Bundle {
  val srcLane = UInt(5.W) // cache offset mod 32
  val len = UInt(16.W)
  val srcWords = UInt(12.W) // cache words the bytes span (1..2049)
  val port = UInt(1.W)
  val dst = UInt(18.W) // TX RAM byte address
  val slot = UInt(6.W)
}

/** A cache word on its way to the aligner (`error`: the DRAM read failed). */
class CacheWord extends Bundle {
  val data = UInt(256.W)
  val error = Bool()
}

/** A read burst: word offset in its tier and 1..16 beats. */
class TierRead extends Bundle {
  val word = UInt(27.W)
  val beats = UInt(5.W)
}

/** A burst in issue order: which tier its words come from. */
class Burst extends Bundle {
  val dram = Bool()
  val beats = UInt(5.W)
}

/** Reads the cache words of appends, in order, from whichever tier holds them.
  *
  * Each append is cut into bursts of at most 16 words that never cross a 512-byte boundary
  * (hence never the tiers' boundary): on-chip bursts go to a read server on the on-chip RAM
  * (one word per cycle, two-cycle latency), DRAM bursts to the AXI4 read channel (one ID, so
  * data returns in order). A queue of bursts in issue order tells which tier the next words
  * come from, so the words leave in append order however the tiers' latencies differ.
  */
class CacheReader(cp: CacheParams) extends Module {
  import CacheParams._
  val s_cmd = IO(Flipped(Decoupled(new CacheCmd)))
  val m_ctx = IO(Decoupled(new AlignCtx))
  val m_word = IO(Decoupled(new CacheWord))
  val onchip_rd = IO(new Bundle {
    val en = Output(Bool())
    val addr = Output(UInt(cp.onchipWordBits.W))
    val data = Input(UInt(256.W)) // one cycle after en
  })
  val dram_ar = IO(Decoupled(new TierRead))
  val dram_r = IO(Flipped(Decoupled(new CacheWord)))
  val dram_rlast = IO(Input(Bool()))

  // ---- Cut appends into bursts
  private val ctxQ = Module(new Queue(new AlignCtx, 4))
  m_ctx <> ctxQ.io.deq
  private val busy = RegInit(false.B)
  private val curW = Reg(UInt(27.W))
  private val lastW = Reg(UInt(27.W))
  private val c = s_cmd.bits
  private val firstW = c.off(31, 5)
  private val words = DmaUtil.ceilShift(c.off(4, 0) +& c.len, 5) // 1..2049 (len >= 1)
  private val endW = firstW + words - 1.U
  s_cmd.ready := !busy && ctxQ.io.enq.ready
  ctxQ.io.enq.valid := s_cmd.valid && !busy
  ctxQ.io.enq.bits.srcLane := c.off(4, 0)
  ctxQ.io.enq.bits.len := c.len
  ctxQ.io.enq.bits.srcWords := words
  ctxQ.io.enq.bits.port := c.port
  ctxQ.io.enq.bits.dst := c.dst
  ctxQ.io.enq.bits.slot := c.slot
  when(s_cmd.fire) {
    busy := true.B
    curW := firstW
    lastW := endW
  }

  private val onchipQ = Module(new Queue(new TierRead, 4))
  private val arQ = Module(new Queue(new TierRead, 4))
  dram_ar <> arQ.io.deq
  private val orderQ = Module(new Queue(new Burst, 16))
  private val toBoundary = BurstWords.U - curW(3, 0)
  private val remaining = lastW - curW + 1.U
  private val beats = Mux(remaining < toBoundary, remaining, toBoundary)(4, 0)
  private val inDram = curW >= cp.onchipWords.U
  private val tierReady = Mux(inDram, arQ.io.enq.ready, onchipQ.io.enq.ready)
  private val burst = busy && tierReady && orderQ.io.enq.ready
  onchipQ.io.enq.valid := burst && !inDram
  arQ.io.enq.valid := burst && inDram
  onchipQ.io.enq.bits.word := curW
  onchipQ.io.enq.bits.beats := beats
  arQ.io.enq.bits.word := curW - cp.onchipWords.U
  arQ.io.enq.bits.beats := beats
  orderQ.io.enq.valid := burst
  orderQ.io.enq.bits.dram := inDram
  orderQ.io.enq.bits.beats := beats
  when(burst) {
    curW := curW + beats
    when(remaining === beats) { busy := false.B }
  }

  // ---- On-chip read server
  private val outQ = Module(new Queue(new CacheWord, 4))
  private val inflight = RegInit(0.U(2.W))
  private val rdW = Reg(UInt(27.W))
  private val rdLeft = RegInit(0.U(5.W))
  private val startNow = rdLeft === 0.U && onchipQ.io.deq.valid
  private val word = Mux(startNow, onchipQ.io.deq.bits.word, rdW)
  private val left = Mux(startNow, onchipQ.io.deq.bits.beats, rdLeft)
  private val read = left =/= 0.U && (outQ.io.count +& inflight) < 4.U
  onchipQ.io.deq.ready := startNow
  onchip_rd.en := read
  onchip_rd.addr := word(cp.onchipWordBits - 1, 0)
  when(startNow || read) {
    rdW := Mux(read, word + 1.U, word)
    rdLeft := Mux(read, left - 1.U, left)
  }
  private val back1 = RegNext(read, false.B)
  private val back2 = RegNext(back1, false.B)
  private val data2 = RegNext(onchip_rd.data)
  inflight := inflight + read.asUInt - back2.asUInt
  outQ.io.enq.valid := back2
  outQ.io.enq.bits.data := data2
  outQ.io.enq.bits.error := false.B

  // ---- Words leave in burst order
  private val fromDram = orderQ.io.deq.bits.dram
  private val src = Mux(fromDram, dram_r.valid, outQ.io.deq.valid)
  private val got = RegInit(0.U(5.W))
  m_word.valid := orderQ.io.deq.valid && src
  m_word.bits := Mux(fromDram, dram_r.bits, outQ.io.deq.bits)
  dram_r.ready := orderQ.io.deq.valid && fromDram && m_word.ready
  outQ.io.deq.ready := orderQ.io.deq.valid && !fromDram && m_word.ready
  private val lastBeat = got + 1.U === orderQ.io.deq.bits.beats
  when(fromDram && dram_rlast =/= lastBeat) { m_word.bits.error := true.B }
  orderQ.io.deq.ready := m_word.fire && lastBeat
  when(m_word.fire) { got := Mux(lastBeat, 0.U, got + 1.U) }
}
