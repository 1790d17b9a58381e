package offnic.cache

import chisel3._
import chisel3.util._
import offnic.nic.Descriptor
import offnic.pcie.DmaUtil

/** A write into a port's TX RAM; `last` ends an append (then `slot` and `error` count). */
class TxRamWrite extends Bundle {
  val port = UInt(1.W)
  val word = UInt(13.W)
  val data = UInt(256.W)
  val strb = UInt(32.W)
  val last = Bool()
  val slot = UInt(6.W)
  val error = Bool()
}

/** Moves an append's cache words to its byte position in the TX RAM: one word in, at most
  * one word out per cycle.
  *
  * With s = the source's lane (cache offset mod 32) and d = the destination's lane, output
  * word k is 32 bytes at offset `shift` of (Y[k+1] ++ Y[k]), where Y is the source words,
  * preceded by one empty word when s < d (shift = s - d, or s + 32 - d then). The first
  * source word only fills the carry; the last output may need one cycle without input.
  * Byte strobes cover exactly [dst, dst + len), so appends sharing a TX RAM word (a
  * header ending mid-word, a payload straddling cached blocks) never overwrite each other.
  */
class CacheAligner extends Module {
  val s_ctx = IO(Flipped(Decoupled(new AlignCtx)))
  val s_word = IO(Flipped(Decoupled(new CacheWord)))
  val m_wr = IO(Decoupled(new TxRamWrite))

  private val outQ = Module(new Queue(new TxRamWrite, 2))
  m_wr <> outQ.io.deq

  private val active = RegInit(false.B)
  private val port = Reg(UInt(1.W))
  private val slot = Reg(UInt(6.W))
  private val dstWord = Reg(UInt(13.W))
  private val firstMask = Reg(UInt(32.W)) // lanes from the destination's lane up
  private val lastMask = Reg(UInt(32.W)) // lanes up to the last byte's
  private val shift = Reg(UInt(5.W))
  private val haveCarry = Reg(Bool())
  private val carry = Reg(UInt(256.W))
  private val srcLeft = Reg(UInt(12.W))
  private val outLeft = Reg(UInt(12.W))
  private val k = Reg(UInt(11.W))
  private val err = Reg(Bool())

  // Start: one cycle per append to work out the geometry.
  s_ctx.ready := !active
  when(s_ctx.fire) {
    val c = s_ctx.bits
    val d = c.dst(4, 0)
    val pre = c.srcLane < d
    active := true.B
    port := c.port
    slot := c.slot
    dstWord := c.dst(17, 5)
    firstMask := VecInit((0 until 32).map(k => ((BigInt(1) << 32) - (BigInt(1) << k)).U(32.W)))(d)
    lastMask := Descriptor.keepFor(d + c.len(4, 0))
    shift := c.srcLane - d // mod 32: s + 32 - d when s < d
    haveCarry := pre
    carry := 0.U
    srcLeft := c.srcWords
    outLeft := DmaUtil.ceilShift(d +& c.len, 5)
    k := 0.U
    err := false.B
  }

  private val flushing = active && srcLeft === 0.U && outLeft =/= 0.U
  private val take = active && srcLeft =/= 0.U && s_word.valid && (outQ.io.enq.ready || !haveCarry)
  s_word.ready := active && srcLeft =/= 0.U && (outQ.io.enq.ready || !haveCarry)
  private val next = Mux(flushing, 0.U(256.W), s_word.bits.data)
  private val emit = (take && haveCarry) || (flushing && outQ.io.enq.ready)
  private val isLast = outLeft === 1.U
  private val errNow = err || (take && s_word.bits.error)
  outQ.io.enq.valid := emit
  outQ.io.enq.bits.port := port
  outQ.io.enq.bits.word := dstWord + k
  outQ.io.enq.bits.data := DmaUtil.window(Cat(next(247, 0), carry), shift, 8, 256, 31)
  outQ.io.enq.bits.strb := Mux(k === 0.U, firstMask, ~0.U(32.W)) & Mux(isLast, lastMask, ~0.U(32.W))
  outQ.io.enq.bits.last := isLast
  outQ.io.enq.bits.slot := slot
  outQ.io.enq.bits.error := errNow
  when(take) {
    carry := s_word.bits.data
    haveCarry := true.B
    srcLeft := srcLeft - 1.U
    err := errNow
  }
  when(emit) {
    k := k + 1.U
    outLeft := outLeft - 1.U
    when(isLast) { active := false.B }
  }
  assert(!(emit && isLast) || srcLeft === take.asUInt, "an append ended with cache words left over")
}
