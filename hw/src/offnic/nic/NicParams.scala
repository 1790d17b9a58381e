package offnic.nic

import chisel3.util.{isPow2, log2Ceil}
import offnic.Params
import offnic.cache.CacheParams
import offnic.pcie.DmaParams

/** Sizes of the NIC core (docs/queues.md describes what the host sees).
  *
  * @param txQueues    TX queues (and TX completion queues), a power of two
  * @param rxQueues    RX queues (and RX completion queues), a power of two
  * @param eqs         event queues = MSI-X vectors
  * @param descCache   descriptors held on chip per queue (a power of two)
  * @param maxSegs     descriptors one TX packet may chain
  * @param maxTxFrame  largest TX frame in bytes (65568: an IPv4 datagram of 65535 behind
  *                    a VLAN-tagged Ethernet header, for the fragmentation offload)
  * @param maxRxFrame  largest RX frame the RX buffer reserves room for (the ports' max
  *                    frame length register must not exceed it; longer frames are dropped)
  * @param ports       Ethernet ports (2)
  * @param cplSlots    completion/event/interrupt records in flight to the host
  * @param usCycles    core cycles per microsecond (250 at 250 MHz), for moderation timers
  * @param cache       the payload cache's tiers (docs/cache.md)
  * @param toeConnections the TCP engine's connection count (issue 17; a power of two, 0: no
  *                    engine, the NIC as before); toeBuckets/toeSlots its table buckets and
  *                    timer-wheel slots, toeNicqFrames the NIC-packet queue's frames
  */
case class NicParams(
    txQueues: Int = 8,
    rxQueues: Int = 8,
    eqs: Int = 4,
    descCache: Int = 128,
    maxSegs: Int = 16,
    maxTxFrame: Int = 65568,
    maxRxFrame: Int = 9216,
    ports: Int = 2,
    cplSlots: Int = 64,
    reasmContexts: Int = 64,
    reasmBuffers: Int = 256,
    txSlots: Int = 64,
    usCycles: Int = 250,
    coreFreqKhz: Int = 250000,
    cache: CacheParams = CacheParams(),
    dma: DmaParams = DmaParams(ramAddrBits = NicParams.RamAddrBits, tags = 128, descSlots = 128),
    toeConnections: Int = 0,
    toeBuckets: Int = 1024,
    toeSlots: Int = 1024,
    toeNicqFrames: Int = 64
) {
  require(toeConnections == 0 || (isPow2(toeConnections) && toeConnections >= 4 && toeConnections <= 4096),
    "toeConnections: 0 (no engine) or a power of two, 4..4096")
  require(isPow2(txQueues) && txQueues >= 2 && txQueues <= 16, "txQueues: a power of two, 2..16")
  require(isPow2(rxQueues) && rxQueues >= 2 && rxQueues <= 16, "rxQueues: a power of two, 2..16")
  require(isPow2(txSlots) && txSlots >= 4 && txSlots <= 64, "txSlots: a power of two, 4..64 (6 bits of DMA tag)")
  require(eqs >= 1 && eqs <= 16, "eqs 1..16")
  require(isPow2(descCache) && descCache >= 4 && descCache <= 128, "descCache: a power of two, 4..128")
  require(txQueues * descCache * 16 <= 32768 && rxQueues * descCache * 16 <= 32768, "descriptor RAMs: 32 KiB each at most")
  require(maxSegs >= 1 && maxSegs <= descCache, "maxSegs 1..descCache")
  require(ports == 2, "the NIC core has two ports")
  require(maxTxFrame >= 64 && maxTxFrame <= 65568 && maxTxFrame % 32 == 0,
    "maxTxFrame 64..65568 (14 + 4 + 65535 rounded up), a multiple of 32")
  require(maxRxFrame >= 64 && maxRxFrame <= 16384 && maxRxFrame % 32 == 0, "maxRxFrame 64..16384, a multiple of 32")
  require(isPow2(cplSlots) && cplSlots >= 4 && cplSlots <= 128, "cplSlots: a power of two, 4..128")
  require(dma.ramAddrBits == NicParams.RamAddrBits, "the NIC's DMA RAM map has 32 address bits")
  def queueBits: Int = log2Ceil(math.max(txQueues, rxQueues))
  def cqs: Int = txQueues + rxQueues
  /** Byte address bits of each descriptor RAM (TX, RX). */
  def descRamAddrBits: Int = log2Ceil(math.max(txQueues, rxQueues) * descCache * 16).max(6)
}

object NicParams {
  /** The DMA engine's RAM address map (byte addresses, 32 bits):
    *   DMA reads land in:      0x00000 TX RAM port 0, 0x40000 TX RAM port 1 (192 KiB each),
    *                           0x80000 descriptor RAMs (TX, then RX at 0x88000),
    *                           0x80000000 + offset: the payload cache (offsets of 31 bits)
    *   DMA writes source from: 0x00000 RX RAM,                               0x20000 completion RAM */
  val RamAddrBits = 32
  val RegionBytes = 1 << 16
  /** Two 64 KB datagrams and then some: one is cut and sent while the next arrives. */
  val TxRamBytes = 3 << 16
  val TxRamAddrBits = 18
  val TxRamBase = Seq(0x00000, 0x40000)
  val DescRamBase = 0x80000
  val RxRamBase = 0x00000
  val CplRamBase = 0x20000

  /** DMA read tags: bits 7:6 say who asked (TX data of port 0 or 1 with the packet slot in
    * 5:0; TX or RX descriptor fetches with queue and fetch slot in 4:0). */
  val TagTxPort0 = 0
  val TagTxPort1 = 1
  val TagTxDesc = 2
  val TagRxDesc = 3
  /** Payload cache inserts: TX descriptor kind with bit 5 set (fetches use bits 4:0). */
  val TagCacheInsert = (TagTxDesc << 6) | 0x20
  /** DMA write tags: bit 7 says who asked (0 RX data, 1 completion writer). */

  def from(p: Params): NicParams = {
    val d = NicParams()
    NicParams(
      txQueues = p.int("tx_queues", d.txQueues),
      rxQueues = p.int("rx_queues", d.rxQueues),
      eqs = p.int("eqs", d.eqs),
      descCache = p.int("desc_cache", d.descCache),
      maxSegs = p.int("max_segs", d.maxSegs),
      maxTxFrame = p.int("max_tx_frame", d.maxTxFrame),
      maxRxFrame = p.int("max_rx_frame", d.maxRxFrame),
      cplSlots = p.int("cpl_slots", d.cplSlots),
      txSlots = p.int("tx_slots", d.txSlots),
      usCycles = p.int("us_cycles", d.usCycles),
      coreFreqKhz = p.int("core_freq_khz", d.coreFreqKhz),
      cache = CacheParams(
        onchipBytes = p.int("cache_onchip_kib", 1024).toLong << 10,
        dramBytes = p.int("cache_dram_mib", 16).toLong << 20
      ),
      dma = DmaParams(
        ramAddrBits = RamAddrBits,
        tags = p.int("tags", 128),
        descSlots = p.int("desc_slots", 128),
        cplTimeoutCycles = p.int("cpl_timeout_cycles", 12500),
        ramReadLatency = 2
      ),
      toeConnections = p.int("toe_connections", 0),
      toeBuckets = p.int("toe_buckets", d.toeBuckets),
      toeSlots = p.int("toe_slots", d.toeSlots),
      toeNicqFrames = p.int("toe_nicq_frames", d.toeNicqFrames)
    )
  }
}
