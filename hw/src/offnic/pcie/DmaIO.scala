package offnic.pcie

import chisel3._
import chisel3.util._
import offnic.Params

/** Sizes of the DMA engine (DmaRead, DmaWrite, DmaEngine).
  *
  * @param ramAddrBits      byte address width of the on-chip RAM the engine reads and writes
  *                         (16: 64 KiB); addresses wrap at the RAM's size
  * @param tags             PCIe tags for reads in flight (a power of two; 32 needs no extended
  *                         tags, 256 needs the host to enable them)
  * @param descSlots        read descriptors in flight at once (a power of two)
  * @param cplTimeoutCycles completion timeout per tag, in core clock cycles (12500 = 50 us at
  *                         250 MHz); the timer fires between this and 15/14 of it
  * @param cplBufferCredits the hard IP's completion buffer in 16-byte credits (2048 = 32 KiB,
  *                         PG213): reads are only issued while the worst case of what they can
  *                         return (data plus one header and rounding per completion) fits
  * @param ramReadLatency   cycles from a RAM read address to its data (>= 1)
  * @param statusDepth      status entries buffered per direction
  * @param maxPayloadBytes  largest write TLP payload the engine makes, whatever cfg_max_payload
  *                         says (128 to 4096, a power of two)
  */
case class DmaParams(
    ramAddrBits: Int = 16,
    tags: Int = 32,
    descSlots: Int = 32,
    cplTimeoutCycles: Int = 12500,
    cplBufferCredits: Int = 2048,
    ramReadLatency: Int = 2,
    statusDepth: Int = 8,
    maxPayloadBytes: Int = 1024
) {
  require(ramAddrBits >= 6 && ramAddrBits <= 32, s"ramAddrBits $ramAddrBits out of range (6..32)")
  require(isPow2(tags) && tags >= 2 && tags <= 256, s"tags must be a power of two from 2 to 256, got $tags")
  require(isPow2(descSlots) && descSlots >= 2, s"descSlots must be a power of two >= 2, got $descSlots")
  require(cplTimeoutCycles >= 14, "cplTimeoutCycles too small")
  require(cplBufferCredits >= 400 && cplBufferCredits < (1 << 16),
    "cplBufferCredits must hold at least one 4 KiB read (about 390 credits worst case)")
  require(ramReadLatency >= 1 && ramReadLatency <= 8, "ramReadLatency 1..8")
  require(statusDepth >= 2, "statusDepth >= 2")
  require(isPow2(maxPayloadBytes) && maxPayloadBytes >= 128 && maxPayloadBytes <= 4096, "maxPayloadBytes 128..4096")
  def wordBits: Int = ramAddrBits - 5
}

object DmaParams {
  def from(p: Params): DmaParams = DmaParams(
    ramAddrBits = p.int("ram_addr_bits", 16),
    tags = p.int("tags", 32),
    descSlots = p.int("desc_slots", 32),
    cplTimeoutCycles = p.int("cpl_timeout_cycles", 12500),
    cplBufferCredits = p.int("cpl_buffer_credits", 2048),
    ramReadLatency = p.int("ram_read_latency", 2),
    statusDepth = p.int("status_depth", 8),
    maxPayloadBytes = p.int("max_payload_bytes", 1024)
  )

  /** Width of a descriptor's length: 0 to 65536 bytes (more is refused, see DmaError.BadDesc). */
  val LenBits = 17
  val MaxLen = 65536
}

/** A DMA descriptor: move `len` bytes between host memory at `host_addr` and the on-chip
  * RAM at byte address `ram_addr` (any alignment of either). `tag` is the requester's own
  * label and comes back unchanged in the status.
  */
class DmaDesc(ramAddrBits: Int) extends Bundle {
  val host_addr = UInt(64.W)
  val ram_addr = UInt(ramAddrBits.W)
  val len = UInt(DmaParams.LenBits.W)
  val tag = UInt(8.W)
}

/** The outcome of one descriptor: its `tag` and a DmaError code (0: success). */
class DmaStatus extends Bundle {
  val tag = UInt(8.W)
  val error = UInt(4.W)
}

/** Status codes of a DMA descriptor. The first error a descriptor meets is the one it
  * reports. */
object DmaError {
  val Ok = 0
  /** A completion came back Unsupported Request (e.g. no memory at that host address). */
  val Unsupported = 1
  /** A completion came back Completer Abort. */
  val Abort = 2
  /** A completion was poisoned (EP), or the IP flagged its payload (discontinue/poisoned). */
  val Poisoned = 3
  /** No (complete) answer within the completion timeout, or the IP reported a timeout. */
  val Timeout = 4
  /** A completion that cannot belong to the request: other status codes, a byte count the
    * request cannot have, or another IP error code (length, address or field mismatch). */
  val Malformed = 5
  /** The descriptor itself is invalid: len above 65536. Nothing was transferred. */
  val BadDesc = 6
}

/** RAM write port driven by the DMA engine (read data landing in the RAM): one 32-byte word
  * per cycle at word address `addr` (byte address / 32), bytes enabled by `strb`. */
class DmaRamWrite(ramAddrBits: Int) extends Bundle {
  val en = Output(Bool())
  val addr = Output(UInt((ramAddrBits - 5).W))
  val data = Output(UInt(256.W))
  val strb = Output(UInt(32.W))
}

/** RAM read port driven by the DMA engine (data for host writes): `addr` (word address)
  * with `en` in one cycle, `data` exactly DmaParams.ramReadLatency cycles later. Never
  * stalled. */
class DmaRamRead(ramAddrBits: Int) extends Bundle {
  val en = Output(Bool())
  val addr = Output(UInt((ramAddrBits - 5).W))
  val data = Input(UInt(256.W))
}

/** One-cycle event pulses of the read side, for the NIC's statistics counters. */
class DmaReadStats extends Bundle {
  /** a memory-read request TLP was issued */
  val req = Bool()
  /** a completion TLP for a request in flight arrived (any status) */
  val cpl = Bool()
  /** a completion with UR or CA status */
  val err_status = Bool()
  /** a poisoned completion (or one the IP marked bad) */
  val err_poisoned = Bool()
  /** a request timed out (engine timer or IP report) */
  val err_timeout = Bool()
  /** a malformed completion (see DmaError.Malformed) */
  val err_malformed = Bool()
  /** a completion for no request in flight (unknown tag): dropped */
  val unexpected = Bool()
  /** a descriptor finished (status produced), and one that finished with an error */
  val done = Bool()
  val done_error = Bool()
}

/** One-cycle event pulses of the write side. */
class DmaWriteStats extends Bundle {
  /** a memory-write TLP was handed to RQ */
  val req = Bool()
  /** a descriptor finished (status produced), and one that finished with an error */
  val done = Bool()
  val done_error = Bool()
}

private[offnic] object DmaUtil {
  // Written so that firtool's temporaries use every bit they compute (Verilator -Wall
  // checks unused bits of every signal): no slices of sums or shifts.

  /** ceil(x / 2^n) */
  def ceilShift(x: UInt, n: Int): UInt = (x >> n) + x(n - 1, 0).orR.asUInt

  /** First and last dword byte enables of a request for `bytes` (>= 1) bytes at an address
    * whose low two bits are `a`, and its length in dwords. */
  def byteEnables(a: UInt, bytes: UInt): (UInt, UInt, UInt) = {
    val end = a +& bytes // one past the last byte, from the first dword's start
    val dwords = ceilShift(end, 2)
    val lastOff = a + bytes(1, 0) - 1.U // (end - 1) mod 4
    val firstAll = VecInit(Seq("b1111", "b1110", "b1100", "b1000").map(_.U(4.W)))(a)
    val lastAll = VecInit(Seq("b0001", "b0011", "b0111", "b1111").map(_.U(4.W)))(lastOff)
    val single = dwords === 1.U
    (Mux(single, firstAll & lastAll, firstAll), Mux(single, 0.U(4.W), lastAll), dwords)
  }

  /** 128 << min(code, log2(maxBytes) - 7): a PCIe max payload / max read request size field,
    * as 13 bits. */
  def sizeFromCode(code: UInt, maxBytes: Int): UInt = {
    val maxCode = log2Ceil(maxBytes) - 7
    MuxLookup(code, (128 << maxCode).U(13.W))((0 until maxCode).map(i => i.U -> (128 << i).U(13.W)))
  }

  /** Index of the lowest set bit (a power-of-two count of bits), as a balanced tree. */
  def lowestSet(bits: Seq[Bool]): (Bool, UInt) = {
    require(bits.length >= 2 && isPow2(bits.length))
    if (bits.length == 2) (bits(0) || bits(1), (!bits(0)).asUInt)
    else {
      val (lo, hi) = bits.splitAt(bits.length / 2)
      val (vl, il) = lowestSet(lo)
      val (vh, ih) = lowestSet(hi)
      (vl || vh, Mux(vl, Cat(0.U(1.W), il), Cat(1.U(1.W), ih)))
    }
  }

  /** `outW` bits of `x` starting at bit o * g, for 0 <= o <= maxO; x has outW + maxO * g
    * bits. A log shifter narrowing stage by stage. */
  def window(x: UInt, o: UInt, g: Int, outW: Int, maxO: Int): UInt = {
    require(x.getWidth == outW + maxO * g, s"window: input ${x.getWidth} bits, want ${outW + maxO * g}")
    require(maxO < (1 << o.getWidth) && maxO >= (1 << (o.getWidth - 1)), "window: o's width must fit maxO exactly")
    var t = x
    var rem = maxO // largest shift still possible
    for (k <- o.getWidth - 1 to 0 by -1) {
      val amt = 1 << k
      val next = math.min(rem, amt - 1)
      val w = outW + next * g
      val shifted = t(t.getWidth - 1, amt * g) // what is left when bit k is set
      val taken = if (shifted.getWidth >= w) shifted(w - 1, 0) else shifted.pad(w)
      t = Mux(o(k), taken, t(w - 1, 0))
      rem = next
    }
    t
  }

  /** The four-word RQ descriptor of a memory request (requester ID, completer ID, TC, attr
    * all 0: the IP fills in the requester ID). */
  def rqDescriptor(addr: UInt, dwords: UInt, reqType: Int, tag: UInt): UInt = {
    val dw0 = Cat(addr(31, 2), 0.U(2.W)) // address type 0: untranslated
    val dw1 = addr(63, 32)
    val dw2 = Cat(0.U(16.W), 0.U(1.W), reqType.U(4.W), dwords(10, 0)) // [15] poisoned = 0
    val dw3 = Cat(0.U(8.W), 0.U(16.W), tag(7, 0)) // ECRC, attr, TC, requester-ID enable, completer ID: 0
    Cat(dw3, dw2, dw1, dw0)
  }
}
