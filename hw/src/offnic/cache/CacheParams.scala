package offnic.cache

import chisel3.util.{isPow2, log2Ceil}

/** Sizes of the payload cache (docs/cache.md). One offset space: bytes [0, onchipBytes) are
  * the on-chip tier (BRAM/URAM), bytes [onchipBytes, onchipBytes + dramBytes) the DRAM tier,
  * at `dramBase` + (offset - onchipBytes) on the AXI4 port.
  *
  * @param onchipBytes  on-chip tier, a power of two of at least 4 KiB
  * @param dramBytes    DRAM tier, a multiple of 4 KiB (0: no DRAM tier)
  * @param dramAddrBits AXI4 address bits (34: the K3P-Q's 8 GB of DDR4)
  * @param dramBase     where the tier starts in DRAM
  * @param writeFifo    DRAM write buffer, 32-byte words (inserts reserve room in it)
  */
case class CacheParams(
    onchipBytes: Long = 1L << 20,
    dramBytes: Long = 16L << 20,
    dramAddrBits: Int = 34,
    dramBase: Long = 0,
    writeFifo: Int = 1024
) {
  require(isPow2(onchipBytes) && onchipBytes >= 4096 && onchipBytes <= (1L << 26), "onchipBytes: a power of two, 4 KiB..64 MiB")
  require(dramBytes >= 0 && dramBytes % 4096 == 0, "dramBytes: a multiple of 4 KiB")
  require(onchipBytes + dramBytes <= (1L << 31), "the cache's offset space is 31 bits")
  require(dramBase % 4096 == 0 && dramBase + dramBytes <= (1L << dramAddrBits), "DRAM tier outside the AXI address space")
  require(isPow2(writeFifo) && writeFifo >= 2 * CacheParams.ChunkReserve, "writeFifo: a power of two holding two insert chunks")
  def totalBytes: Long = onchipBytes + dramBytes
  def onchipWords: Int = (onchipBytes / 32).toInt
  def onchipWordBits: Int = log2Ceil(onchipWords)
}

object CacheParams {
  /** Inserts are read from the host in chunks of at most this many bytes, each within one
    * 2 KiB-aligned block of the cache (so within one tier). */
  val ChunkBytes = 2048
  /** RAM writes a chunk can cause at most: the words it spans (65) plus one partial word
    * per completion TLP (64-byte read completion boundary: 33) plus one per request; the
    * DRAM write buffer holds this much room for each DRAM chunk in flight. */
  val ChunkReserve = 104
  /** AXI read bursts: at most 16 beats, never across a 512-byte boundary (so never across
    * 4 KiB, nor across the tiers' boundary). */
  val BurstWords = 16
}
