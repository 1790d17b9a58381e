package offnic.eth

import chisel3._
import chisel3.util._
import offnic.axis.AxisParams

/** 64-bit XGMII (IEEE 802.3 clause 46, the two 32-bit transfers of a cycle side by side):
  * `d` holds eight bytes, lane 0 (bits 7:0) first on the wire; bit i of `c` says lane i
  * is a control character rather than data.
  *
  * A frame on the wire: /S/ in place of the first preamble byte, six more preamble bytes
  * (0x55), the SFD (0xD5), the MAC frame (addresses .. FCS), then /T/; idles (/I/) fill
  * the inter-frame gap. On a 64-bit XGMII feeding a 64b/66b PCS (10GBASE-R, 25GBASE-R)
  * /S/ may stand only in lane 0 or lane 4, and a word that holds /S/ in lane 4 holds only
  * control characters in lanes 0-3.
  */
object Xgmii {
  val Idle = 0x07
  val Start = 0xfb
  val Term = 0xfd
  val Error = 0xfe
  val Preamble = 0x55
  val Sfd = 0xd5

  /** Bytes of a MAC frame, FCS included, that need padding to reach the 64-byte minimum. */
  val MinFrameBytes = 64
  val FcsBytes = 4

  /** The eight lanes of all idles. */
  def idleData: UInt = Fill(8, Idle.U(8.W))

  /** The preamble word with /S/ in lane 0 (lane 0 is the least significant byte). */
  val preambleWord: BigInt =
    (Seq(Start) ++ Seq.fill(6)(Preamble) ++ Seq(Sfd)).zipWithIndex.map { case (b, i) => BigInt(b) << (8 * i) }.sum

  /** The MAC's AXI-Stream side: 8 bytes wide, tuser bit 0 (bad frame / abort). */
  val axisParams: AxisParams = AxisParams(dataBytes = 8, userWidth = 1)
}

/** An AXI-Stream master port with no tready: what the receive MAC drives. A wire cannot
  * be paused, so there is nothing to back-pressure; the port's packet FIFO downstream
  * takes every beat (and drops the frames marked bad). Names follow cocotbext-axi
  * (`m_axis_tvalid`, `m_axis_tdata` ...), whose sink works without tready.
  */
class AxisNoReadyIO(val p: AxisParams) extends Bundle {
  require(p.userWidth > 0 && p.idWidth == 0 && p.destWidth == 0, "MAC stream: tuser only")
  val tvalid = Output(Bool())
  val tdata = Output(UInt(p.dataBits.W))
  val tkeep = Output(UInt(p.dataBytes.W))
  val tlast = Output(Bool())
  val tuser = Output(UInt(p.userWidth.W))
}
