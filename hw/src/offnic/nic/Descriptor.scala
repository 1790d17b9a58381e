package offnic.nic

import chisel3._
import chisel3.util._

/** A 16-byte descriptor as the host writes it (docs/queues.md), decoded from the 128 bits
  * of its slot in the descriptor RAM (byte 0 in bits 7:0). */
class Descriptor extends Bundle {
  val csumInsert = UInt(16.W)
  val csumStart = UInt(16.W)
  val flags = UInt(8.W)
  val opcode = UInt(8.W)
  val len = UInt(16.W)
  val addr = UInt(64.W)

  def more: Bool = flags(0)
  def csum: Bool = flags(1)
  /** Bytes 12-15, opcode-specific (the checksum offsets for TX DATA). */
  def param: UInt = Cat(csumInsert, csumStart)
}

object Descriptor {
  val Bytes = 16
  /** Opcodes (docs/queues.md): append from host memory, insert into the payload cache,
    * append from the payload cache; the others are reserved for the offload issues. */
  val OpData = 0
  val OpCacheInsert = 1
  val OpCacheAppend = 2

  def decode(word: UInt, upper: Bool): Descriptor =
    Mux(upper, word(255, 128), word(127, 0)).asTypeOf(new Descriptor)

  /** tkeep of a frame's last 32-byte beat when the frame length mod 32 is `rem`. */
  def keepFor(rem: UInt): UInt =
    VecInit((0 until 32).map(k => (if (k == 0) (BigInt(1) << 32) - 1 else (BigInt(1) << k) - 1).U(32.W)))(rem)

  /** 2^logSize as 17 bits (a ring of 1 to 32768 records; logSize 0..15). A table rather
    * than a shift, so no bit of the result is wasted. */
  def ringSize(logSize: UInt): UInt = VecInit((0 until 16).map(k => (1 << k).U(17.W)))(logSize)

  /** Ring index i's record number: i mod 2^logSize. */
  def ringSlot(i: UInt, logSize: UInt): UInt =
    i & VecInit((0 until 16).map(k => ((1 << k) - 1).U(16.W)))(logSize)

  /** The phase bit of ring index i: the inverse of bit logSize (docs/queues.md). */
  def phase(i: UInt, logSize: UInt): Bool = !VecInit(i.asBools)(logSize)

  /** Word address (32-byte words) and half of queue q's cached descriptor for ring index i. */
  def slot(q: UInt, i: UInt, depth: Int): (UInt, Bool) = {
    val s = Cat(q, i(log2Ceil(depth) - 1, 0))
    (s >> 1, s(0))
  }
}
