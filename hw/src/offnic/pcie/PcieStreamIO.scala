package offnic.pcie

import chisel3._

/** One of the four AXI-Stream interfaces of the Xilinx UltraScale+ PCIe hard IP (CQ, CC,
  * RQ, RC), in its "DWORD-aligned" mode: `tkeep` has one bit per 32-bit word, not per
  * byte, which is why this is not an `AxisIO`. Declared as `s_axis_cq` etc. it matches
  * cocotbext-pcie's `AxiStreamBus.from_prefix`.
  */
class PcieStreamIO(val dataBits: Int, val userBits: Int) extends Bundle {
  require(dataBits == 256, "offnic's PCIe interface is Gen3 x8 at 256 bits")
  val tvalid = Output(Bool())
  val tready = Input(Bool())
  val tdata = Output(UInt(dataBits.W))
  val tkeep = Output(UInt((dataBits / 32).W))
  val tlast = Output(Bool())
  val tuser = Output(UInt(userBits.W))

  def fire: Bool = tvalid && tready
  def dwords: Int = dataBits / 32
}

/** Widths and fields of the hard IP's interfaces at 256 bits (PG213). */
object PcieUs {
  val DataBits = 256
  val CqUserBits = 88
  val CcUserBits = 33
  val RqUserBits = 62
  val RcUserBits = 75

  // CQ tuser fields
  val CqFirstBe = (3, 0)
  val CqLastBe = (7, 4)
  val CqSop = 40
  val CqDiscontinue = 41

  /** Request types in the CQ descriptor (dword 2, bits 14:11). */
  object ReqType {
    val MemRead = 0x0
    val MemWrite = 0x1
    val IoRead = 0x2
    val IoWrite = 0x3
    val FetchAdd = 0x4
    val Swap = 0x5
    val Cas = 0x6
    val MemReadLocked = 0x7
    val MsgFirst = 0xc
  }

  /** Completion status codes. */
  object CplStatus {
    val Success = 0
    val Unsupported = 1
    val ConfigRetry = 2
    val Abort = 4
  }

  // RQ tuser fields (requester request, 256-bit: 62 bits). Bits 27:24 and 61:60 are the
  // sequence number, 59:28 parity; the DMA engine uses neither (parity is off in the IP).
  val RqFirstBe = (3, 0)
  val RqLastBe = (7, 4)
  val RqDiscontinue = 11

  // RC tuser fields (requester completion, 256-bit: 75 bits): one byte enable per byte of
  // tdata (0 for descriptor words and for bytes outside the completion's data), the
  // start-of-TLP flags (bit 32, and 33 which only straddling uses), end-of-TLP pointers
  // (straddling only), discontinue (the IP found an uncorrectable error in the payload)
  // and per-byte parity.
  val RcByteEn = (31, 0)
  val RcIsSop = 32
  val RcDiscontinue = 42

  /** Error codes in the RC descriptor (dword 0, bits 15:12): the IP's own verdict. */
  object RcError {
    val Normal = 0x0
    val Poisoned = 0x1
    val BadStatus = 0x2
    val InvalidLength = 0x3
    val Mismatch = 0x4
    val InvalidAddress = 0x5
    val InvalidTag = 0x6
    val Flr = 0x8
    val Timeout = 0x9
  }
}
