package offnic.pcie

import chisel3._
import chisel3.util._

/** The on-chip RAM the DMA engine moves data in and out of: 2^(addrBits-5) words of 256
  * bits, one write port with byte strobes (from DmaRead) and one read port (for DmaWrite)
  * whose data comes `readLatency` cycles after the address: a SyncReadMem (block RAM) plus
  * readLatency - 1 output registers (the BRAM's own output register, for timing at 250 MHz).
  * A read of a word written in the same cycle returns either value.
  */
class DmaRam(val addrBits: Int = 16, val readLatency: Int = 2, val bytes: Int = 0) extends Module {
  require(addrBits >= 6 && readLatency >= 1)
  /** `bytes` (0: the whole address space) may be smaller than 2^addrBits, a multiple of 32. */
  private val words = if (bytes == 0) 1 << (addrBits - 5) else bytes / 32
  require(words * 32 <= (1L << addrBits) && words >= 1)
  val wr = IO(Flipped(new DmaRamWrite(addrBits)))
  val rd = IO(Flipped(new DmaRamRead(addrBits)))

  private val mem = SyncReadMem(words, Vec(32, UInt(8.W)))
  when(wr.en) {
    mem.write(wr.addr, wr.data.asTypeOf(Vec(32, UInt(8.W))), wr.strb.asBools)
  }
  rd.data := ShiftRegister(mem.read(rd.addr, rd.en).asUInt, readLatency - 1)
}
