package offnic.phy

import chisel3._
import chisel3.util._

/** Constants of the 64b/66b code of 10GBASE-R and 25GBASE-R (IEEE 802.3 clause 49,
  * reused by clause 107 for 25GBASE-R).
  *
  * Bit order: a 66-bit block is the 2-bit sync header then the 64-bit payload, bit 0 of
  * each first on the wire. Headers are written here LSB first, so "01" in the standard
  * (data: first bit 0, then 1) is the value 2, and "10" (control) is 1. In a control
  * block, payload bits 7:0 are the block type field; the rest holds 7-bit control codes,
  * 4-bit O codes and data bytes lane by lane (clause 49 figure 49-7).
  */
object BaseR {
  val SyncData = 2
  val SyncCtrl = 1

  // Block type field values (figure 49-7), named by what the XGMII lanes hold.
  val TypeCtrl = 0x1e // C0..C7
  val TypeOs4 = 0x2d // C0..C3, O4 D5 D6 D7
  val TypeStart4 = 0x33 // C0..C3, S4 D5 D6 D7
  val TypeOsStart = 0x66 // O0 D1 D2 D3, S4 D5 D6 D7
  val TypeOs04 = 0x55 // O0 D1 D2 D3, O4 D5 D6 D7
  val TypeStart0 = 0x78 // S0 D1..D7
  val TypeOs0 = 0x4b // O0 D1 D2 D3, C4..C7
  /** /T/ in lane k (data before it, control characters after): index k. */
  val TypeTerm: Seq[Int] = Seq(0x87, 0x99, 0xaa, 0xb4, 0xcc, 0xd2, 0xe1, 0xff)

  // XGMII control characters (clause 46 table 46-3) and their 7-bit codes (table 49-1).
  val XIdle = 0x07
  val XLpi = 0x06
  val XStart = 0xfb
  val XTerm = 0xfd
  val XError = 0xfe
  val XSeq = 0x9c // sequence ordered set (/Q/), O code 0x0
  val XSig = 0x5c // signal ordered set (/Fsig/), O code 0xF
  val CodeError = 0x1e
  /** XGMII character -> 7-bit code, for the characters a control code carries: idle, LPI,
    * error and the six reserved ones. */
  val ctrlCodes: Seq[(Int, Int)] = Seq(
    XIdle -> 0x00, XLpi -> 0x06, XError -> CodeError,
    0x1c -> 0x2d, 0x3c -> 0x33, 0x7c -> 0x4b, 0xbc -> 0x55, 0xdc -> 0x66, 0xf7 -> 0x78)
  val oCodes: Seq[(Int, Int)] = Seq(XSeq -> 0x0, XSig -> 0xf)

  /** The local fault ordered set (clause 46 table 46-5): /Q/ with 0x01 in lane 3, in both halves. */
  val LocalFaultWord: BigInt = BigInt("0100009c0100009c", 16)
  val LocalFaultCtrl = 0x11
  val ErrorWord: BigInt = BigInt("fefefefefefefefe", 16)
}

/** An XGMII word (eight lanes, lane 0 in bits 7:0) and its per-lane control flags. */
class XgmiiWord extends Bundle {
  val d = UInt(64.W)
  val c = UInt(8.W)
}

/** A 66-bit block: sync header and payload (before scrambling on TX, after descrambling on RX). */
class BaseRBlock extends Bundle {
  val header = UInt(2.W)
  val payload = UInt(64.W)
}
