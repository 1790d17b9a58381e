package offnic.regs

import Access._

/** The register map: the single source of truth for every register block type.
  * The RTL register blocks are generated from these tables (RegBlock), and
  * `./offnic regmap` turns them into the Python driver-model module, the C header for
  * the driver and firmware, and docs/registers.md. Offsets are ABI: never move a
  * register without bumping the block's version.
  */
object RegMap {
  val DeviceId = BlockType(
    "device_id", 0x0ff10001L, 0x00010000L,
    "Identifies the NIC build; always the first block, at BAR0 offset 0.",
    Seq(
      Reg("fpga_id", 0x0c, RO, "JTAG IDCODE of the target FPGA part (0 in simulation)."),
      Reg("board_id", 0x10, RO, "Board identifier: 0 simulation, 1 Nexus K3P-Q, 2 AS02MC04."),
      Reg("board_version", 0x14, RO, "Board revision."),
      Reg("build_date", 0x18, RO, "Build time, seconds since the Unix epoch."),
      Reg("git_hash", 0x1c, RO, "First 32 bits of the source commit hash."),
      Reg("scratch", 0x20, RW(0), "Free for software; used to test the register path.")
    )
  )

  val Clock = BlockType(
    "clock", 0x0ff10002L, 0x00010000L,
    "The core clock: its nominal frequency and a free-running cycle counter.",
    Seq(
      Reg("core_freq_khz", 0x0c, RO, "Nominal core clock frequency in kHz."),
      Reg("cycle_count", 0x10, RO, "Core clock cycles since reset or the last clear (wraps)."),
      Reg("control", 0x14, WStrobe, "Commands; write 1 bits to act.",
        Seq(Field("clear_cycles", 0, 1, "Restart cycle_count from 0.")))
    )
  )

  val BarAccess = BlockType(
    "bar_access", 0x0ff10003L, 0x00010000L,
    "BAR0 request handling: what the host sent that the NIC could not serve (counters wrap).",
    Seq(
      Reg("unsupported", 0x0c, RO, "Requests answered Unsupported Request or Completer Abort, or " +
        "dropped: I/O, atomics, messages, other BARs, reads over 64 bytes, malformed TLPs."),
      Reg("read_errors", 0x10, RO, "Register words read at addresses no block claims (answered all ones)."),
      Reg("write_errors", 0x14, RO, "Register words written at addresses no block claims (ignored).")
    )
  )

  // ------------------------------------------------------------------ queues (docs/queues.md)

  private def ringBase(what: String): Seq[Reg] = Seq(
    Reg("base_lo", 0x00, RW(0), s"$what ring base address, bits 31:0 (4 KiB aligned)."),
    Reg("base_hi", 0x04, RW(0), s"$what ring base address, bits 63:32.")
  )
  private val logSize = Field("log_size", 0, 4, "The ring holds 2^log_size records (1..15).")
  private def index(what: String) = Seq(Field("index", 0, 16, what))
  private def enable(what: String) = Field("enable", 8, 1, what)

  private def queues(name: String, typeId: Long, dir: String, tx: Boolean) = BlockType(
    name, typeId, 0x00010000L,
    s"$dir descriptor queues: one record per queue, rings of 16-byte descriptors in host memory " +
      s"(docs/queues.md). $dir queue i completes into ${dir} completion queue i.",
    Seq(
      Reg("count", 0x0c, RO, s"Number of $dir queues this build has (records 0..count-1)."),
      Reg("desc_cache", 0x10, RO, "Descriptors cached on chip per queue.")
    ) ++ (if (tx) Seq(Reg("max_segs", 0x14, RO, "Most descriptors (MORE-chained segments) one TX packet may use.")) else Nil),
    Some(RegArray(0x40, 64, 0x20,
      ringBase("Descriptor") ++ Seq(
        Reg("control", 0x08, RW(0), "Queue configuration; change base and log_size only while disabled.",
          Seq(logSize, enable("Queue enabled; disabling it stops the queue and clears status.error.")) ++
            (if (tx) Seq(Field("port", 16, 1, "Ethernet port the queue transmits on.")) else Nil)),
        Reg("prod", 0x0c, RW(0), "Producer index, written by the host after it wrote descriptors (the doorbell).",
          index("Free-running producer index.")),
        Reg("cons", 0x10, RO, "Consumer index: descriptors the NIC has consumed.",
          index("Free-running consumer index.")),
        Reg("status", 0x14, RO, "Queue state.",
          Seq(Field("error", 0, 1, "Descriptor fetch failed; cleared by disabling the queue."),
            Field("fetching", 1, 1, "A descriptor fetch is in flight.")))
      ),
      s"One $dir queue: ring address, size, enable, producer and consumer indexes."))
  )

  val TxQueues = queues("tx_queues", 0x0ff10010L, "TX", tx = true)
  val RxQueues = queues("rx_queues", 0x0ff10011L, "RX", tx = false)

  private def cqs(name: String, typeId: Long, dir: String) = BlockType(
    name, typeId, 0x00010000L,
    s"$dir completion queues: one record per queue, rings of 16-byte completions the NIC writes, " +
      "with per-queue interrupt moderation (docs/queues.md).",
    Seq(Reg("count", 0x0c, RO, s"Number of $dir completion queues this build has (records 0..count-1).")),
    Some(RegArray(0x40, 64, 0x20,
      ringBase("Completion") ++ Seq(
        Reg("control", 0x08, RW(0), "Queue configuration; change base and log_size only while disabled.",
          Seq(logSize, enable("Queue enabled."), Field("eq", 16, 8, "Event queue this queue reports to."))),
        Reg("cons", 0x0c, RW(0), "Consumer index, written by the host after it handled completions.",
          index("Free-running consumer index.")),
        Reg("arm", 0x10, WStrobe, "Write 1 to arm: the next completion (after moderation) writes an event.",
          Seq(Field("arm", 0, 1, "Arm the queue."))),
        Reg("prod", 0x14, RO, "Producer index: completions the NIC has written.",
          index("Free-running producer index.")),
        Reg("mod_count", 0x18, RW(1), "Moderation: completions that trigger an event (0 counts as 1).",
          Seq(Field("count", 0, 16, "Completions per event."))),
        Reg("mod_time_us", 0x1c, RW(0), "Moderation: microseconds a pending armed queue waits before its event (0: at once).",
          Seq(Field("usecs", 0, 16, "Delay in microseconds.")))
      ),
      s"One $dir completion queue: ring address, size, event queue, indexes, arming and moderation."))
  )

  val TxCqs = cqs("tx_cqs", 0x0ff10012L, "TX")
  val RxCqs = cqs("rx_cqs", 0x0ff10013L, "RX")

  val Eqs = BlockType(
    "eqs", 0x0ff10014L, 0x00010000L,
    "Event queues: one record per queue, rings of 16-byte events; event queue k raises MSI-X vector k.",
    Seq(
      Reg("count", 0x0c, RO, "Number of event queues this build has (records 0..count-1)."),
      Reg("overflows", 0x10, RO, "Events dropped because their event queue was full (wraps).")
    ),
    Some(RegArray(0x40, 16, 0x20,
      ringBase("Event") ++ Seq(
        Reg("control", 0x08, RW(0), "Queue configuration; change base and log_size only while disabled.",
          Seq(logSize, enable("Queue enabled."))),
        Reg("cons", 0x0c, RW(0), "Consumer index, written by the host after it handled events.",
          index("Free-running consumer index.")),
        Reg("arm", 0x10, WStrobe, "Write 1 to arm: the next event sends the queue's MSI-X vector.",
          Seq(Field("arm", 0, 1, "Arm the queue."))),
        Reg("prod", 0x14, RO, "Producer index: events the NIC has written.",
          index("Free-running producer index."))
      ),
      "One event queue: ring address, size, indexes and arming."))
  )

  val Msix = BlockType(
    "msix", 0x0ff10015L, 0x00010000L,
    "The MSI-X table and pending bits; the table records have the PCI layout (the capability points here).",
    Seq(
      Reg("count", 0x0c, RO, "Number of MSI-X vectors this build has (records 0..count-1)."),
      Reg("pending", 0x10, RO, "Pending bits (PBA): vector k in bit k, set while a masked vector has an interrupt to send.")
    ),
    Some(RegArray(0x40, 32, 0x10,
      Seq(
        Reg("addr_lo", 0x00, RW(0), "Message address, bits 31:0 (bits 1:0 are 0)."),
        Reg("addr_hi", 0x04, RW(0), "Message address, bits 63:32."),
        Reg("data", 0x08, RW(0), "Message data."),
        Reg("control", 0x0c, RW(1), "Vector control.", Seq(Field("mask", 0, 1, "Vector masked: interrupts set its pending bit instead.")))
      ),
      "One MSI-X table entry (PCI layout)."))
  )

  // ------------------------------------------------------------------ ports, DMA, engines

  private def ro(name: String, offset: Int, doc: String) = Reg(name, offset, RO, doc)

  val EthPort = BlockType(
    "eth_port", 0x0ff10020L, 0x00010001L,
    "One Ethernet port (one block per port): MAC settings, receive address filter and frame counters (counters wrap).",
    Seq(
      ro("port", 0x0c, "Port number (0, 1, ...)."),
      Reg("ifg", 0x10, RW(12), "Average inter-frame gap in bytes (12 is the standard minimum).",
        Seq(Field("bytes", 0, 8, "Gap in bytes, 8..255."))),
      Reg("max_frame_len", 0x14, RW(1518), "Longest frame received without counting it oversize, bytes with FCS.",
        Seq(Field("bytes", 0, 16, "Length in bytes."))),
      ro("speed_mbps", 0x18, "Line rate in Mb/s (10000 or 25000)."),
      ro("tx_frames", 0x20, "Frames sent."),
      ro("tx_bytes_lo", 0x24, "Bytes sent, bits 31:0."),
      ro("tx_bytes_hi", 0x28, "Bytes sent, bits 63:32."),
      ro("tx_errors", 0x2c, "Frames ended with an error (underrun or marked bad)."),
      ro("rx_frames", 0x30, "Good frames received."),
      ro("rx_bytes_lo", 0x34, "Bytes of good frames received, bits 31:0."),
      ro("rx_bytes_hi", 0x38, "Bytes of good frames received, bits 63:32."),
      ro("rx_fcs_errors", 0x3c, "Frames received with a bad FCS."),
      ro("rx_runts", 0x40, "Frames received shorter than 64 bytes."),
      ro("rx_oversize", 0x44, "Frames received longer than max_frame_len."),
      ro("rx_xgmii_errors", 0x48, "Frames received with an XGMII error or bad control character."),
      ro("rx_fifo_drops", 0x4c, "Received frames dropped because the port FIFO was full."),
      Reg("mac_hi", 0x50, RW(0), "Station address bytes 0-1 (byte 0 is first on the wire): the address is " +
        "mac_hi:mac_lo as one 48-bit big-endian number (docs/queues.md, receive filter).",
        Seq(Field("bytes01", 0, 16, "Byte 0 in bits 15:8, byte 1 in bits 7:0."))),
      Reg("mac_lo", 0x54, RW(0), "Station address bytes 2-5, byte 2 in bits 31:24, byte 5 in bits 7:0."),
      Reg("rx_filter", 0x58, RW(0x4), "Which frames the port receives besides those to the station address.",
        Seq(Field("promisc", 0, 1, "Promiscuous: every frame; those not for this station reach the host, never an offload."),
          Field("allmulti", 1, 1, "Every multicast (group) address."),
          Field("broadcast", 2, 1, "The broadcast address ff:ff:ff:ff:ff:ff."))),
      Reg("mc_hash_lo", 0x5c, RW(0), "Multicast hash filter bits 31:0: a group address whose hash h " +
        "(binascii.crc32 of its 6 bytes >> 26: the top 6 bits of the IEEE CRC-32) has bit h set is received."),
      Reg("mc_hash_hi", 0x60, RW(0), "Multicast hash filter bits 63:32."),
      ro("rx_filter_drops", 0x64, "Frames dropped by the address filter (not for this station, not promiscuous)."),
      ro("rx_foreign", 0x68, "Frames not for this station passed in promiscuous mode (to the host, no offload).")
    )
  )

  val Dma = BlockType(
    "dma", 0x0ff10021L, 0x00010000L,
    "The PCIe DMA engine: negotiated sizes and request/error counters (counters wrap).",
    Seq(
      ro("max_payload", 0x0c, "Max payload size in bytes (from the PCIe configuration)."),
      ro("max_read_req", 0x10, "Max read request size in bytes (from the PCIe configuration)."),
      ro("rd_requests", 0x14, "Read request TLPs sent."),
      ro("rd_completions", 0x18, "Read completion TLPs received."),
      ro("rd_err_status", 0x1c, "Read completions with status UR or CA."),
      ro("rd_err_poisoned", 0x20, "Read completions that were poisoned."),
      ro("rd_err_timeout", 0x24, "Read requests that timed out."),
      ro("rd_err_malformed", 0x28, "Read completions that were malformed."),
      ro("rd_unexpected", 0x2c, "Read completions for unknown tags (dropped)."),
      ro("rd_done", 0x30, "Read descriptors completed."),
      ro("rd_done_error", 0x34, "Read descriptors completed with an error."),
      ro("wr_requests", 0x38, "Write request TLPs sent."),
      ro("wr_done", 0x3c, "Write descriptors completed."),
      ro("wr_done_error", 0x40, "Write descriptors completed with an error."),
      Reg("arbitration", 0x44, RW(0), "How the host path and the TCP engine share the DMA engine (issue 17, DmaArbiter).",
        Seq(Field("fcfs", 0, 1, "1: round robin between the host and the engine; 0: host first (an engine " +
          "descriptor goes only when no host one waits and the DMA engine's intake is idle)."))),
      ro("eng_rd_descs", 0x48, "The TCP engine's read descriptors (AXI4 read bursts) admitted."),
      ro("eng_rd_bytes", 0x4c, "Bytes of the TCP engine's read descriptors."),
      ro("eng_wr_descs", 0x50, "The TCP engine's write descriptors admitted (one per run of strobed bytes)."),
      ro("eng_wr_bytes", 0x54, "Bytes of the TCP engine's write descriptors."),
      ro("eng_over_host", 0x58, "Engine descriptors admitted while a host one waited (0 in host-first mode).")
    )
  )

  val TxEngine = BlockType(
    "tx_engine", 0x0ff10022L, 0x00010000L,
    "The transmit engine: packets sent from the TX queues and what went wrong (counters wrap).",
    Seq(
      ro("packets", 0x0c, "Packets sent."),
      ro("bytes_lo", 0x10, "Bytes sent, bits 31:0."),
      ro("bytes_hi", 0x14, "Bytes sent, bits 63:32."),
      ro("dma_errors", 0x18, "Packets completed DMA_ERROR (a read of their bytes failed)."),
      ro("bad_desc", 0x1c, "Packets completed BAD_DESC."),
      ro("csum_bad_cmd", 0x20, "Checksum requests pointing past the frame (sent without a checksum)."),
      ro("csum_drop_oversize", 0x24, "Frames dropped by the checksum offload as too long for its buffer."),
      ro("desc_fetch_errors", 0x28, "Descriptor fetches that failed (the queue stops)."),
      ro("max_frame", 0x2c, "Largest TX frame accepted, bytes."),
      Reg("mtu", 0x30, RW(BigInt(0xffffffffL)), "Each port's IP MTU for the fragmentation offload (docs/frag.md): an IPv4 " +
        "datagram longer leaves in fragments. 65535 (the reset value): never cut.",
        Seq(Field("port0", 0, 16, "Port 0's MTU, bytes of IP header and payload (68 at least)."),
          Field("port1", 16, 16, "Port 1's MTU."))),
      ro("frag_datagrams", 0x34, "IPv4 datagrams cut into fragments."),
      ro("frag_fragments", 0x38, "Fragments sent."),
      ro("frag_refused", 0x3c, "Datagrams over the MTU refused: completed FRAG_DF, FRAG_OPTIONS or FRAG_MALFORMED."),
      ro("frag_csum_unpatched", 0x40, "Datagrams cut whose checksum command did not lie in the first fragment (sent without).")
    )
  )

  val RxEngine = BlockType(
    "rx_engine", 0x0ff10023L, 0x00010000L,
    "The receive engine: frames written to the RX queues and why others were dropped (counters wrap).",
    Seq(
      Reg("csum_start", 0x0c, RW(14), "First frame byte of the RX completion's checksum (CHECKSUM_COMPLETE).",
        Seq(Field("start", 0, 16, "Byte offset (14: after the Ethernet header)."))),
      Reg("default_queue", 0x10, RW(0), "The RX queue of each port's frames when RSS is off.",
        Seq(Field("port0", 0, 8, "Queue for port 0."), Field("port1", 8, 8, "Queue for port 1."))),
      ro("packets", 0x14, "Frames written to RX queues."),
      ro("bytes_lo", 0x18, "Bytes written to RX queues, bits 31:0."),
      ro("bytes_hi", 0x1c, "Bytes written to RX queues, bits 63:32."),
      ro("drop_disabled", 0x20, "Frames dropped: their queue was disabled."),
      ro("drop_no_desc", 0x24, "Frames dropped: their queue had no descriptor."),
      ro("drop_cq_full", 0x28, "Frames dropped: their completion queue was full."),
      ro("too_long", 0x2c, "Frames longer than their buffer (completed TOO_LONG)."),
      ro("dma_errors", 0x30, "Frame writes that failed."),
      ro("desc_fetch_errors", 0x34, "Descriptor fetches that failed (the queue stops).")
    )
  )

  /** Microsoft's RSS verification key, the reset value of rss.key_*. */
  val RssDefaultKey: Seq[Int] =
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa".grouped(2).map(Integer.parseInt(_, 16)).toSeq

  val Rss = BlockType(
    "rss", 0x0ff10024L, 0x00010000L,
    "Receive-side scaling: which headers are hashed, the Toeplitz key and the indirection table.",
    Seq(
      Reg("control", 0x0c, RW(0x1f), "What RSS hashes.",
        Seq(Field("enable", 0, 1, "RSS on (off: rx_engine.default_queue)."), Field("ipv4", 1, 1, "Hash IPv4."),
          Field("ipv6", 2, 1, "Hash IPv6."), Field("tcp", 3, 1, "Include TCP ports."), Field("udp", 4, 1, "Include UDP ports."))),
      ro("table_size", 0x10, "Indirection table entries."),
      Reg("indir_write", 0x14, WStrobe, "Writes one indirection-table entry.",
        Seq(Field("index", 0, 16, "Table entry."), Field("queue", 16, 8, "RX queue for the entry.")))
    ) ++ (0 until 10).map { k =>
      Reg(s"key_$k", 0x20 + 4 * k,
        RW(RssDefaultKey.slice(4 * k, 4 * k + 4).foldLeft(BigInt(0))((acc, b) => (acc << 8) | b)),
        s"Toeplitz key bytes ${4 * k}..${4 * k + 3}, byte ${4 * k} in bits 31:24.")
    }
  )

  val Cache = BlockType(
    "cache", 0x0ff10025L, 0x00010000L,
    "The payload cache (docs/cache.md): its size per tier (the seed's nic_cache_init) and what it did (counters wrap).",
    Seq(
      ro("onchip_bytes", 0x0c, "On-chip tier: offsets [0, onchip_bytes)."),
      ro("dram_bytes", 0x10, "DRAM tier: offsets [onchip_bytes, onchip_bytes + dram_bytes)."),
      ro("host_bytes_lo", 0x14, "Bytes appended to packets from host memory (DMA reads issued), bits 31:0."),
      ro("host_bytes_hi", 0x18, "Bytes appended from host memory, bits 63:32."),
      ro("cache_bytes_lo", 0x1c, "Bytes appended to packets from the cache, bits 31:0."),
      ro("cache_bytes_hi", 0x20, "Bytes appended from the cache, bits 63:32."),
      ro("insert_bytes_lo", 0x24, "Bytes inserted into the cache from host memory, bits 31:0."),
      ro("insert_bytes_hi", 0x28, "Bytes inserted, bits 63:32."),
      ro("appends", 0x2c, "CACHE_APPEND commands executed."),
      ro("inserts", 0x30, "CACHE_INSERT commands executed."),
      ro("hits_onchip", 0x34, "Appends that read the on-chip tier."),
      ro("hits_dram", 0x38, "Appends that read the DRAM tier."),
      ro("range_errors", 0x3c, "Packets and inserts refused with CACHE_RANGE (offset + length beyond the cache)."),
      ro("read_errors", 0x40, "Appends whose DRAM read failed (the packet completes DMA_ERROR)."),
      ro("write_errors", 0x44, "Inserts that failed: host read or DRAM write error (DMA_ERROR)."),
      ro("order_waits", 0x48, "Cycles a cache command waited for an earlier one (ordering interlock).")
    )
  )

  /** The reassembler's Toeplitz key (119 bits, key_0 bits 31:0 = key bits 118:87 MSB first,
    * ...): the reset value is the first 119 bits of Microsoft's RSS key; drivers should
    * write a random one (reasm_model.DEFAULT_HASH_KEY is the same). */
  val ReasmKeyDefault: BigInt = BigInt(RssDefaultKey.map(b => f"$b%02x").mkString, 16) >> (320 - 119)

  /** The reassembler's counters, in the order of offload.ReasmStat, then the RX engine's. */
  val ReasmCounters: Seq[(String, String)] = Seq(
    "fragments" -> "Fragments that reached a context (Linux: ReasmReqds).",
    "reassembled" -> "Datagrams reassembled and completed (ReasmOKs).",
    "queued" -> "Fragments placed, datagram still incomplete.",
    "duplicate" -> "Fragments inside data already held: ignored, the datagram kept.",
    "trimmed" -> "Non-last fragments whose payload was cut to a multiple of 8 bytes (as Linux).",
    "overlap" -> "Datagrams dropped for an overlap (RFC 5722; ReasmOverlaps).",
    "bad_last" -> "Datagrams dropped: a last fragment before held data or with another end.",
    "beyond_end" -> "Datagrams dropped: data past the end a last fragment set.",
    "empty" -> "Datagrams dropped: a fragment with no payload.",
    "oversize" -> "Datagrams dropped: longer than 65,535 bytes (ping of death).",
    "ecn_mix" -> "Datagrams dropped: Not-ECT fragments mixed with ECT/CE (RFC 3168).",
    "too_many_frags" -> "Datagrams dropped: more fragments than max_frags.",
    "timeout" -> "Datagrams dropped when their timer ran out (ReasmTimeout).",
    "evicted" -> "Datagrams dropped, oldest first, to keep bytes_held under max_bytes.",
    "bypassed" -> "Fragments sent to the host unchanged: no free context or buffer, or their bucket bypasses.",
    "bad_header" -> "Fragments dropped: version, header length or total length wrong.",
    "bad_checksum" -> "Fragments dropped: IP header checksum wrong.",
    "truncated" -> "Fragments dropped: total length beyond the frame.",
    "post_dropped" -> "Buffer posts ignored: the pool was full (an id posted twice).",
    "cpl_dropped" -> ("Reassembled datagrams dropped (buffer back to the pool): their RX queue was disabled when " +
      "they completed or while their completion was parked."),
    "cpl_parked" -> ("Reassembled datagrams whose completion waited for room in their CQ (parked, never lost; " +
      "docs/frag.md).")
  )

  val Reasm = BlockType(
    "reasm", 0x0ff10026L, 0x00010001L,
    "IPv4 reassembly offload (docs/frag.md): fragments are placed straight into 64 KiB host buffers the " +
      "driver posts here, one RX completion per datagram (counters wrap).",
    Seq(
      Reg("control", 0x0c, RW(0), "Reassembly on or off.",
        Seq(Field("enable", 0, 1, "Reassemble (off: fragments go to the host like any frame)."))),
      Reg("timeout_us", 0x10, RW(1000), "A datagram is dropped this long after its first fragment (1..4,000,000 us; default 1 ms, docs/frag.md)."),
      Reg("tick_cycles", 0x14, RW(250), "Core clock cycles per microsecond."),
      Reg("max_frags", 0x18, RW(255), "Fragments per datagram at most (255: no cap below Linux's own)."),
      Reg("max_bytes", 0x1c, RW(0xffffff), "Payload bytes held over all contexts at most; the oldest datagrams are evicted (0xffffff: no cap).")
    ) ++ (0 until 4).map(k => Reg(s"hash_key_$k", 0x20 + 4 * k, RW((ReasmKeyDefault << 9 >> (96 - 32 * k)) & 0xffffffffL),
      s"Context hash key bits ${127 - 32 * k}:${96 - 32 * k} of 128 (the key is bits 127:9).")) ++ Seq(
      Reg("buf_addr_lo", 0x30, RW(0), "Address of the buffer buf_post gives, bits 31:0."),
      Reg("buf_addr_hi", 0x34, RW(0), "Bits 63:32."),
      Reg("buf_post", 0x38, WStrobe, "Give the buffer at buf_addr_* to the pool under an id (a completion names it).",
        Seq(Field("id", 0, 16, "Buffer id, below `buffers`."))),
      Reg("contexts", 0x3c, Const(64), "Reassembly contexts."),
      Reg("buffers", 0x40, Const(256), "Buffer ids (0 .. buffers-1)."),
      ro("open", 0x44, "Contexts in use."),
      ro("bytes_held", 0x48, "Payload bytes held in open contexts."),
      ro("pool", 0x4c, "Buffers in the pool.")
    ) ++ ReasmCounters.zipWithIndex.map { case ((n, d), i) => ro(n, 0x50 + 4 * i, d) } ++ Seq(
      ro("parked", 0x50 + 4 * ReasmCounters.size, "Completions of reassembled datagrams parked now (each holds its buffer)."))
  )

  /** The TCP offload engine's counters: the steer's (toe.SteerStat order), the connection
    * table's (toe.ConnStat), the engine's (toe.EngineStat), then the payload movers'. */
  val ToeCounters: Seq[(String, String)] = Seq(
    "steer_to_host" -> "Frames passed to the host output (not a segment of an installed connection).",
    "steer_to_engine" -> "TCP segments of installed connections steered to the engine.",
    "steer_bad_dropped" -> "Bad segments (IP/TCP checksum, header) of installed connections: dropped.",
    "steer_relookups" -> "Lookups repeated because the table changed while the frame waited.",
    "table_lookups" -> "Connection-table lookups.",
    "table_hits" -> "Lookups that found an installed connection.",
    "table_inserts" -> "Inserts done (installs).",
    "table_insert_exists" -> "Inserts refused: the 4-tuple is installed already.",
    "table_insert_full" -> "Inserts refused: no place within the cuckoo walk.",
    "table_insert_no_id" -> "Inserts refused: every connection id in use.",
    "table_deletes" -> "Deletes done (restores, closes).",
    "table_delete_missing" -> "Deletes of a key not in the table.",
    "table_kicks" -> "Residents moved by cuckoo walks.",
    "seg_events" -> "Segment events the engine took.",
    "seg_stale_drops" -> "Segments dropped unseen: their connection had left (restore, close) or its id holds another 4-tuple.",
    "seg_data_not_stored" -> "Segments with payload whose bytes the decision did not store (outside the window, duplicate, PAWS, no 5th out-of-order range).",
    "timer_events" -> "Timer expiries the engine took.",
    "commands" -> "Host commands taken.",
    "commands_refused" -> "Host commands answered with a status other than OK (exists, full, no id, not live, reserve table full).",
    "tx_segments" -> "Segments handed to the transmit builder.",
    "notes_rst" -> "Connections reset by the peer (rst notifications).",
    "notes_timeout" -> "Connections that gave up retransmitting (timeout notifications).",
    "notes_closed" -> "Connections that left the engine closed (closed notifications).",
    "reserves_refused" -> "Reserves refused (status 6) because the engine's reserve table (8 ids) was full: nothing inserted.",
    "store_errors" -> "Receive-ring stores that failed (memory write error or a frame shorter than its command).",
    "tx_drops" -> "Segments the transmit builder dropped (longer than its buffer): nothing sent.",
    "tx_read_errors" -> "Segments whose send-ring read failed: sent with a bad TCP checksum (the peer drops it, TCP resends)."
  )

  val Toe = BlockType(
    "toe", 0x0ff10027L, 0x00010000L,
    "The TCP offload engine (docs/toe.md): connections installed and what happened to segments, commands " +
      "and payload moves (counters wrap).",
    Seq(
      ro("connections", 0x0c, "Connections installed now."),
      ro("connections_peak", 0x10, "Most connections installed at once since reset or the last clear_peak."),
      Reg("control", 0x14, WStrobe, "Commands; write 1 bits to act.",
        Seq(Field("clear_peak", 0, 1, "Restart connections_peak from connections."))),
      ro("now_us", 0x18, "The engine's microsecond clock, bits 31:0.")
    ) ++ ToeCounters.zipWithIndex.map { case ((n, d), i) => ro(n, 0x20 + 4 * i, d) }
  )

  /** The TCP engine inside the NIC (issue 17, docs/toe.md "In the NIC"): the NIC-packet queue,
    * the transmit merges, the engine's settings and the interim register command window. */
  val ToeTcbWords = 40
  val ToeHost = BlockType(
    "toe_host", 0x0ff10028L, 0x00010000L,
    "The TCP engine as part of the NIC: its NIC-packet queue (Qlen, drops), each port's transmit merge, " +
      "its settings, and the interim command window (install, restore, status, send, read, close; docs/toe.md). " +
      "Host-first or FCFS at every shared point follows dma.arbitration. Counters wrap.",
    Seq(
      ro("nicq_qlen", 0x0c, "Qlen: whole frames waiting in the NIC-packet queue now."),
      Reg("nicq_max_frames", 0x10, RW(0), "Frames the NIC-packet queue may hold (0 or above nicq_capacity: nicq_capacity)."),
      ro("nicq_frames", 0x14, "Frames of offloaded connections queued for the engine."),
      ro("nicq_drops", 0x18, "Frames of offloaded connections dropped because the NIC-packet queue was full (TCP recovers)."),
      ro("nicq_capacity", 0x1c, "Most frames the NIC-packet queue holds (its build size)."),
      ro("tx_host_frames_0", 0x20, "Port 0: host frames that entered the transmit merge."),
      ro("tx_engine_frames_0", 0x24, "Port 0: engine segments that entered the transmit merge."),
      ro("tx_engine_over_host_0", 0x28, "Port 0: engine segments started while a host frame waited (0 in host-first mode)."),
      ro("tx_host_frames_1", 0x2c, "Port 1: host frames that entered the transmit merge."),
      ro("tx_engine_frames_1", 0x30, "Port 1: engine segments that entered the transmit merge."),
      ro("tx_engine_over_host_1", 0x34, "Port 1: engine segments started while a host frame waited (0 in host-first mode)."),
      Reg("cycles_per_us", 0x38, RW(250), "Core clocks per microsecond of the engine's clocks (250 at 250 MHz).",
        Seq(Field("cycles", 0, 10, "Clocks per microsecond."))),
      Reg("delack_us", 0x3c, RW(40000), "Delayed-ACK time (us)."),
      Reg("rto_min_us", 0x40, RW(200000), "Minimum retransmission timeout (us; Linux's TCP_RTO_MIN)."),
      Reg("rto_max_us", 0x44, RW(120000000), "Maximum retransmission timeout (us; Linux's TCP_RTO_MAX)."),
      Reg("rto_initial_us", 0x48, RW(1000000), "Retransmission timeout before an RTT sample (us; RFC 6298 2.1)."),
      Reg("time_wait_us", 0x4c, RW(60000000), "TIME_WAIT length (us; Linux's TCP_TIMEWAIT_LEN)."),
      Reg("fin_wait2_us", 0x50, RW(0), "FIN_WAIT_2 limit (us) when engine_control.fin_wait2_on."),
      Reg("engine_control", 0x54, RW(15 << 8), "Engine settings.",
        Seq(Field("fin_wait2_on", 0, 1, "1: FIN_WAIT_2 ends after fin_wait2_us; 0: it waits for the peer's FIN."),
          Field("max_retries", 8, 5, "Retransmissions before giving up (Linux's tcp_retries2: 15)."))),
      Reg("hash_key_0", 0x58, RW(BigInt("7B2D804F", 16)), "Connection-table hash key bits 31:0 (127 bits, MSB first)."),
      Reg("hash_key_1", 0x5c, RW(BigInt("19C6E35A", 16)), "Hash key bits 63:32."),
      Reg("hash_key_2", 0x60, RW(BigInt("0F4BD287", 16)), "Hash key bits 95:64."),
      Reg("hash_key_3", 0x64, RW(BigInt("5A3C96E1", 16) & 0x7fffffff), "Hash key bits 126:96 (bit 31 unused)."),
      ro("tcb_bits", 0x68, "Bits of a connection's state (the Tcb) in the cmd_tcb/rsp_tcb words, word 0 bits 31:0 first."),
      ro("tx_unrouted", 0x6c, "Engine segments sent on port 0 because their source address is neither port's (none expected)."),
      ro("soft_limit", 0x70, "Soft_limit in force: the control processor's (seed 004 load control), else the connection count. " +
        "An install or reserve while connections >= soft_limit is refused with status 5 (over the limit)."),
      ro("installs_over_limit", 0x74, "Installs and reserves refused for Soft_limit (status 5)."),
      ro("cmdq_commands", 0x78, "Commands taken from the TX queues (opcodes 0x20-0x2f; docs/queues.md)."),
      ro("cmdq_bad_desc", 0x7c, "TX-queue commands completed BAD_DESC: opcode past 0x27, or a command block not 32-byte aligned, " +
        "crossing 4 KiB or past 2^40."),
      Reg("cmd_op", 0x80, RW(0), "Command window (interim, docs/toe.md): the operation.",
        Seq(Field("op", 0, 3, "0 install, 1 restore, 2 send, 3 read, 4 close, 5 status, 6 reserve, 7 complete (TcpEngine's EngineOp; 6 and 7: the two-phase install)."))),
      Reg("cmd_id", 0x84, RW(0), "Connection id (all but install)."),
      Reg("cmd_arg", 0x88, RW(0), "Install: our TSval now; send: written up to; read: consumed up to."),
      Reg("cmd_dst_mac_lo", 0x8c, RW(0), "Install: the peer's MAC, bits 31:0 (MAC byte 5 in bits 7:0)."),
      Reg("cmd_dst_mac_hi", 0x90, RW(0), "The peer's MAC, bits 47:32."),
      Reg("cmd_src_mac_lo", 0x94, RW(0), "Our MAC (the port's: it chooses the port the engine sends on), bits 31:0."),
      Reg("cmd_src_mac_hi", 0x98, RW(0), "Our MAC, bits 47:32."),
      Reg("cmd_src_ip", 0x9c, RW(0), "Our IPv4 address."),
      Reg("cmd_dst_ip", 0xa0, RW(0), "The peer's IPv4 address."),
      Reg("cmd_ports", 0xa4, RW(0), "Our port in bits 31:16, the peer's in 15:0."),
      Reg("cmd_go", 0xa8, WStrobe, "Write 1: issue the command in the window (ignored and counted while one is open)."),
      Reg("cmd_state", 0xac, RO, "The window's state.",
        Seq(Field("busy", 0, 1, "A command is open: its answer has not come."),
          Field("done", 1, 1, "An answer came since the last cmd_go (rsp_* hold it)."))),
      ro("cmd_issued", 0xb0, "Commands issued through the window."),
      ro("cmd_busy_refused", 0xb4, "cmd_go writes ignored because a command was open."),
      Reg("rsp_status", 0xb8, RO, "The last answer.",
        Seq(Field("op", 0, 3, "Its command's op."), Field("status", 8, 3,
          "0 ok, 1 exists, 2 table full, 3 no id, 4 not live (TcpEngine's EngineStatus), 5 over Soft_limit (the NIC's), 6 reserve table full."))),
      ro("rsp_id", 0xbc, "The answer's connection id (install: the id the table gave)."),
      ro("rsp_ts_val", 0xc0, "Our TSval at the answer."),
      ro("rsp_now_us_lo", 0xc4, "The engine's clock at the answer (us), bits 31:0."),
      ro("rsp_now_us_hi", 0xc8, "The engine's clock at the answer, bits 41:32."),
      ro("note_count", 0xd0, "Notifications waiting (the engine waits when its note FIFO is full)."),
      Reg("note_head", 0xd4, RO, "The oldest notification (valid when note_count > 0).",
        Seq(Field("kind", 0, 3, "0 rx, 1 acked, 2 fin, 3 rst, 4 timeout, 5 closed (TcpDecide's NoteKind)."),
          Field("id", 16, 16, "Its connection id."))),
      ro("note_seq", 0xd8, "The oldest notification's sequence number (rx: received up to; acked: acknowledged up to)."),
      Reg("note_pop", 0xdc, WStrobe, "Write 1: drop the oldest notification."),
      ro("cmdq_block_errors", 0xe0, "TX-queue commands completed DMA_ERROR: their command block's read or their answer block's write failed."),
      ro("cmdq_over_limit", 0xe4, "TX-queue installs and reserves refused for Soft_limit (status 0x25)."),
      ro("cmdq_refused", 0xe8, "TX-queue commands the engine answered with a status other than OK (0x20 + its status)."),
      Reg("note_mode", 0xec, RW(0), "Where the engine's notifications go.",
        Seq(Field("events", 0, 1, "1: as events (type 2) on event queue note_eq, consecutive rx/acked of one connection merged; " +
          "0: the note_* FIFO above."))),
      Reg("note_eq", 0xf0, RW(0), "The event queue of the notifications (note_mode.events): they wait while it is full or disabled."),
      ro("notes_evented", 0xf4, "Notification events written."),
      ro("notes_merged", 0xf8, "Notifications merged into the event before them (same connection, rx or acked).")
    ) ++ (0 until ToeTcbWords).map(k => Reg(s"cmd_tcb_$k", 0x100 + 4 * k, RW(0), s"Install: the connection's state, bits ${32 * k + 31}:${32 * k}.")) ++
      (0 until ToeTcbWords).map(k => ro(s"rsp_tcb_$k", 0x200 + 4 * k, s"The answer's connection state, bits ${32 * k + 31}:${32 * k}.")) ++
      Seq(
        Reg("rings_base_page", 0x2a0, RW(0), "The host memory connections' rings may use (TX-queue installs and completes): " +
          "its first 4 KiB page (address bits 39:12).", Seq(Field("page", 0, 28, "Address bits 39:12."))),
        Reg("rings_pages", 0x2a4, RW(0), "Its size in 4 KiB pages; 0: no window (any address below 2^40).",
          Seq(Field("pages", 0, 28, "Pages."))),
        ro("cmdq_bad_rings", 0x2a8, "TX-queue installs and completes refused (status 0x27) because the connection's rings " +
          "overlap, pass 2^40 or leave the rings_* window.")
      )
  )

  /** The rate adapters' counters in the pcs block (phy.XgmiiRateAdapter), from 0x30. */
  private def adapterRegs(dir: String, at: Int, from: String, to: String): Seq[Reg] = Seq(
    ro(s"${dir}_adapter_inserted", at, s"Idle words the $dir rate adapter inserted ($from clock slower than the $to side's word rate)."),
    ro(s"${dir}_adapter_deleted", at + 4, s"Idle columns the $dir rate adapter deleted ($from side faster)."),
    ro(s"${dir}_adapter_overflows", at + 8, s"XGMII words the $dir rate adapter dropped because it was full (the frame " +
      "cut arrives marked bad); 0 within the rated clock tolerance."),
    ro(s"${dir}_adapter_underflows", at + 12, s"/E/ words the $dir rate adapter sent because it ran empty inside a frame; " +
      "0 within the rated clock tolerance.")
  )

  val Pcs = BlockType(
    "pcs", 0x0ff10030L, 0x00010001L,
    "A port's 10GBASE-R / 25GBASE-R PCS and its XGMII rate adapters (docs/phy.md): receive status and what went " +
      "wrong on the line (counters wrap). On a board each counter runs in its own clock (transceiver RX or TX " +
      "user clock, MAC clock) and reads a Gray-coded copy synchronised into the core clock, a few cycles late; " +
      "a lane's reset (transceiver not ready) restarts its counters from 0. Board tops only: one block per port " +
      "after the NIC core's blocks.",
    Seq(
      Reg("status", 0x0c, RO, "Receive status now.",
        Seq(Field("block_lock", 0, 1, "Block lock: 64 valid sync headers in a row seen, fewer than 16 invalid in 64 since."),
          Field("hi_ber", 1, 1, "High bit error rate: 16 invalid sync headers within the BER window (125 us)."),
          Field("link_ok", 2, 1, "Block lock and no hi_ber: received blocks reach the MAC (else it sees local fault)."))),
      ro("rx_bad_sync_headers", 0x10, "Invalid sync headers (00 or 11) received in block lock."),
      ro("rx_error_blocks", 0x14, "Blocks received in lock and passed to the MAC as /E/: invalid block type or " +
        "code, bad sync header, or out of sequence."),
      ro("rx_slips", 0x18, "Bit slips while hunting for block lock."),
      ro("rx_lock_losses", 0x1c, "Times block lock was lost (16 invalid sync headers in 64)."),
      ro("rx_hi_ber_events", 0x20, "Times hi_ber rose."),
      ro("tx_error_blocks", 0x24, "Blocks sent as /E/: XGMII words from the MAC that fit no block type or came out of sequence."),
      ro("port", 0x28, "Port number (0, 1, ...): the eth_port block of the same number is this PCS's MAC.")
    ) ++ adapterRegs("tx", 0x30, "MAC", "transceiver") ++ adapterRegs("rx", 0x40, "recovered", "MAC")
  )

  val Fw = RegMapFw.Fw // the control processor's block, defined in RegMapFw.scala

  /** Every block type, in the order the documentation lists them. */
  val blocks: Seq[BlockType] = Seq(DeviceId, Clock, BarAccess, TxQueues, RxQueues, TxCqs, RxCqs, Eqs, Msix,
    EthPort, Dma, TxEngine, RxEngine, Rss, Reasm, Cache, Toe, ToeHost, Pcs, Fw)
  require(blocks.map(_.typeId).distinct.size == blocks.size, "two block types share a type id")
}
