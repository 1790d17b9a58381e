package offnic.cache

import chisel3._
import chisel3.util._
import offnic.axi.{Axi4, Axi4IO}
import offnic.pcie.{DmaDesc, DmaRamWrite, DmaUtil}

/** A cache command from the TX engine, in the order the host issued the descriptors.
  * insert: copy `len` bytes of host memory at `host` into the cache at `off`.
  * append: copy `len` (>= 1) cache bytes at `off` into TX RAM `port` at byte `dst`.
  * Either way (`port`, `slot`) is the TX packet slot told when the command is done. */
class CacheCmd extends Bundle {
  val insert = Bool()
  val host = UInt(64.W)
  val off = UInt(32.W)
  val len = UInt(16.W)
  val port = UInt(1.W)
  val slot = UInt(6.W)
  val dst = UInt(18.W)
}

class CacheDone extends Bundle {
  val port = UInt(1.W)
  val slot = UInt(6.W)
  val error = Bool()
}

/** One-cycle event pulses for the statistics counters. */
class CacheStats extends Bundle {
  val append = Valid(UInt(16.W)) // an append accepted (its bytes)
  val appendOnchip = Bool() // ... reading the on-chip tier
  val appendDram = Bool() // ... reading the DRAM tier
  val insert = Valid(UInt(16.W)) // an insert accepted (its bytes)
  val readError = Bool() // an append completed with an error (DRAM read error)
  val writeError = Bool() // an insert completed with an error (host read or DRAM write)
  val orderWait = Bool() // the head command waits for an earlier one (ordering interlock)
}

/** The payload cache: the NIC side of seed 003's network interface data cache.
  *
  * Commands run in the order they arrive, with an interlock where that order matters:
  *  - An insert waits until every earlier append over its bytes has copied them out (so an
  *    append followed by an insert over the same bytes sends the old bytes), and until no
  *    earlier insert in flight overlaps it. Appends in flight (at most 15) keep their
  *    ranges in a ring, oldest first (they finish in order), for that check: an insert
  *    for other bytes starts at once, hiding its host read behind the appends before it. It then reads the host in chunks of up to 2 KiB
  *    (`ChunkBytes`) through the DMA engine, whose RAM writes land straight in the tier: the
  *    on-chip RAM, or a write buffer drained to DRAM by single-beat AXI writes. A DRAM chunk
  *    is issued only when the buffer has room for all the writes it can cause, so the DMA
  *    engine is never stalled. Up to four inserts are in flight; one is done when all its
  *    chunks are read and all its DRAM writes acknowledged.
  *  - An append waits while an earlier insert in flight overlaps its bytes (so an insert
  *    followed by an append sends the new bytes); otherwise it goes at once, behind earlier
  *    appends: `CacheReader` reads its words from the tiers in order, `CacheAligner` moves
  *    them to their byte position in the TX RAM.
  * Offsets and lengths were checked against the cache's size by the TX engine.
  */
class PayloadCache(val cp: CacheParams, ramAddrBits: Int, insertTag: Int) extends Module {
  import CacheParams._
  private val Inserts = 4

  val s_cmd = IO(Flipped(Decoupled(new CacheCmd)))
  val m_rd_desc = IO(Decoupled(new DmaDesc(ramAddrBits)))
  /** DMA statuses of this block's reads (tags matching `insertTag` in bits 7:5): the
    * insert (tag bits 1:0), whether the chunk was for DRAM (bit 4), the DmaError code. */
  val s_rd_status = IO(Flipped(Valid(new InsertStatus)))
  /** DMA RAM writes into the cache region (`en` already qualified): word address = cache
    * offset / 32. */
  val s_ram_wr = IO(Flipped(new DmaRamWrite(ramAddrBits - 1)))
  val tx_wr = IO(Vec(2, new DmaRamWrite(18)))
  /** The DMA engine writes that TX RAM this cycle: an append's write waits. */
  val tx_busy = IO(Input(Vec(2, Bool())))
  val done = IO(Valid(new CacheDone))
  val m_axi = IO(new Axi4IO(cp.dramAddrBits, 2))
  val stats = IO(Output(new CacheStats))

  private val cmdQ = Queue(s_cmd, 4)
  private val head = cmdQ.bits

  // ---- Inserts in flight: byte ranges [lo, hi), chunks being read, DRAM writes unacknowledged
  private class Insert extends Bundle {
    val lo = UInt(32.W)
    val hi = UInt(33.W)
    val port = UInt(1.W)
    val slot = UInt(6.W)
    val failed = Bool()
  }
  private val ins = Reg(Vec(Inserts, new Insert))
  private val insValid = RegInit(VecInit(Seq.fill(Inserts)(false.B)))
  private val insIssuing = RegInit(VecInit(Seq.fill(Inserts)(false.B)))
  private val insChunks = RegInit(VecInit(Seq.fill(Inserts)(0.U(6.W))))
  private val insWrites = RegInit(VecInit(Seq.fill(Inserts)(0.U(12.W))))
  private val headHi = head.off +& head.len
  private val overlaps = VecInit((0 until Inserts).map(e => insValid(e) && head.off < ins(e).hi && ins(e).lo < headHi))
  private val freeIns = PriorityEncoder(insValid.map(!_))

  // ---- Appends: reader -> aligner -> TX RAM
  private val reader = Module(new CacheReader(cp))
  private val aligner = Module(new CacheAligner)
  aligner.s_word <> reader.m_word
  aligner.s_ctx <> reader.m_ctx
  private val appendsInFlight = RegInit(0.U(4.W))
  private val apLo = Reg(Vec(16, UInt(32.W)))
  private val apHi = Reg(Vec(16, UInt(33.W)))
  private val apValid = RegInit(VecInit(Seq.fill(16)(false.B)))
  private val apOldest = RegInit(0.U(4.W))
  private val apNext = RegInit(0.U(4.W))
  private val appendClash = VecInit((0 until 16).map(i => apValid(i) && head.off < apHi(i) && apLo(i) < headHi))

  // ---- The head command
  private val issuing = RegInit(false.B) // the insert issuer is busy
  private val headIsInsert = cmdQ.valid && head.insert
  private val insertGo = headIsInsert && !issuing && !appendClash.asUInt.orR && !overlaps.asUInt.orR &&
    !insValid.asUInt.andR
  private val appendGo = cmdQ.valid && !head.insert && !overlaps.asUInt.orR && reader.s_cmd.ready &&
    appendsInFlight =/= 15.U
  cmdQ.ready := insertGo || appendGo
  reader.s_cmd.valid := appendGo
  reader.s_cmd.bits := head
  private val appendDoneNow = Wire(Bool())
  appendsInFlight := appendsInFlight + appendGo.asUInt - appendDoneNow.asUInt
  when(appendGo) {
    apLo(apNext) := head.off
    apHi(apNext) := headHi
    apValid(apNext) := true.B
    apNext := apNext + 1.U
  }
  when(appendDoneNow) {
    apValid(apOldest) := false.B
    apOldest := apOldest + 1.U
  }

  stats.append.valid := appendGo
  stats.append.bits := head.len
  stats.appendOnchip := appendGo && head.off < cp.onchipBytes.U
  stats.appendDram := appendGo && headHi > cp.onchipBytes.U
  stats.insert.valid := insertGo
  stats.insert.bits := head.len
  stats.orderWait := cmdQ.valid && (overlaps.asUInt.orR || (head.insert && appendClash.asUInt.orR))

  // ---- Insert issuer: one insert at a time, chunk by chunk
  private val curHost = Reg(UInt(64.W))
  private val curOff = Reg(UInt((ramAddrBits - 1).W)) // offsets have 31 bits
  private val left = Reg(UInt(17.W))
  private val curIns = Reg(UInt(2.W))
  private val reserved = RegInit(0.U(log2Ceil(cp.writeFifo + 1).W))
  private val writeQ = Module(new Queue(new DramWrite, cp.writeFifo, useSyncReadMem = true))
  private val chunkRoom = ChunkBytes.U - curOff(log2Ceil(ChunkBytes) - 1, 0)
  private val chunk = Mux(left < chunkRoom, left, chunkRoom)
  private val chunkDram = curOff >= cp.onchipBytes.U
  private val room = (writeQ.io.count +& reserved +& ChunkReserve.U) <= cp.writeFifo.U
  m_rd_desc.valid := issuing && (!chunkDram || room)
  m_rd_desc.bits.host_addr := curHost
  m_rd_desc.bits.ram_addr := Cat(1.U(1.W), curOff)
  m_rd_desc.bits.len := chunk
  m_rd_desc.bits.tag := Cat((insertTag >> 5).U(3.W), chunkDram, 0.U(2.W), curIns)
  private val chunkGo = m_rd_desc.fire
  when(insertGo) {
    issuing := head.len =/= 0.U
    curHost := head.host
    curOff := head.off(ramAddrBits - 2, 0)
    left := head.len
    curIns := freeIns
    insValid(freeIns) := true.B
    insIssuing(freeIns) := head.len =/= 0.U
    ins(freeIns).lo := head.off
    ins(freeIns).hi := headHi
    ins(freeIns).port := head.port
    ins(freeIns).slot := head.slot
    ins(freeIns).failed := false.B
  }
  when(chunkGo) {
    curHost := curHost + chunk
    curOff := curOff + chunk
    left := left - chunk
    when(left === chunk) {
      issuing := false.B
      insIssuing(curIns) := false.B
    }
  }
  private val st = s_rd_status
  private val stIns = st.bits.ins
  private val stDram = st.bits.dram
  reserved := reserved + Mux(chunkGo && chunkDram, ChunkReserve.U, 0.U) - Mux(st.valid && stDram, ChunkReserve.U, 0.U)

  // ---- DMA RAM writes into the cache: on-chip RAM, or the DRAM write buffer
  // Read-first: an append may read a word whose other bytes an insert is writing.
  private val onchip = SyncReadMem(cp.onchipWords, Vec(32, UInt(8.W)), SyncReadMem.ReadFirst)
  private val wrWord = s_ram_wr.addr // cache offset bits 30:5
  private val wrOnchip = wrWord < cp.onchipWords.U
  when(s_ram_wr.en && wrOnchip) {
    onchip.write(wrWord(cp.onchipWordBits - 1, 0), s_ram_wr.data.asTypeOf(Vec(32, UInt(8.W))), s_ram_wr.strb.asBools)
  }
  // A write belongs to the insert whose range holds its first byte (ranges in flight are disjoint).
  private val wrByte = Cat(wrWord, DmaUtil.lowestSet(s_ram_wr.strb.asBools)._2)
  private val wrIns = PriorityEncoder((0 until Inserts).map(e => insValid(e) && wrByte >= ins(e).lo && wrByte < ins(e).hi))
  private val toDram = s_ram_wr.en && !wrOnchip && s_ram_wr.strb =/= 0.U
  writeQ.io.enq.valid := toDram
  writeQ.io.enq.bits.word := wrWord - cp.onchipWords.U
  writeQ.io.enq.bits.data := s_ram_wr.data
  writeQ.io.enq.bits.strb := s_ram_wr.strb
  writeQ.io.enq.bits.ins := wrIns
  assert(!toDram || writeQ.io.enq.ready, "DRAM write buffer overflow")

  // ---- DRAM writer: one beat per write; AW and W may go in either order
  private val awDone = RegInit(false.B)
  private val wDone = RegInit(false.B)
  private val wq = writeQ.io.deq
  m_axi.awid := wq.bits.ins
  m_axi.awaddr := cp.dramBase.U(cp.dramAddrBits.W) + Cat(wq.bits.word, 0.U(5.W))
  m_axi.awlen := 0.U
  m_axi.awsize := Axi4.Size32.U
  m_axi.awburst := Axi4.BurstIncr.U
  m_axi.awvalid := wq.valid && !awDone
  m_axi.wdata := wq.bits.data
  m_axi.wstrb := wq.bits.strb
  m_axi.wlast := true.B
  m_axi.wvalid := wq.valid && !wDone
  private val awNow = awDone || m_axi.awready
  private val wNow = wDone || m_axi.wready
  wq.ready := awNow && wNow
  when(wq.fire) {
    awDone := false.B
    wDone := false.B
  }.otherwise {
    when(m_axi.awvalid && m_axi.awready) { awDone := true.B }
    when(m_axi.wvalid && m_axi.wready) { wDone := true.B }
  }
  m_axi.bready := true.B

  // ---- Insert bookkeeping: chunks and DRAM writes come and go
  for (e <- 0 until Inserts) {
    val chunkUp = chunkGo && curIns === e.U
    val chunkDown = st.valid && stIns === e.U
    insChunks(e) := insChunks(e) + chunkUp.asUInt - chunkDown.asUInt
    val mine = wrIns === e.U
    val wUp = writeQ.io.enq.fire && mine
    val wLost = toDram && !writeQ.io.enq.ready && mine // cannot happen (the reservation): but never silently
    val wDown = m_axi.bvalid && m_axi.bid === e.U
    insWrites(e) := insWrites(e) + wUp.asUInt - wDown.asUInt
    when((chunkDown && st.bits.error =/= 0.U) || (wDown && Axi4.isError(m_axi.bresp)) || wLost) {
      ins(e).failed := true.B
    }
  }

  // ---- Done: an append's last write, else a finished insert
  private val finished = VecInit((0 until Inserts).map(e =>
    insValid(e) && !insIssuing(e) && insChunks(e) === 0.U && insWrites(e) === 0.U))
  private val fin = PriorityEncoder(finished)
  private val out = aligner.m_wr
  for (pt <- 0 until 2) {
    tx_wr(pt).en := out.valid && out.bits.port === pt.U && !tx_busy(pt)
    tx_wr(pt).addr := out.bits.word
    tx_wr(pt).data := out.bits.data
    tx_wr(pt).strb := out.bits.strb
  }
  out.ready := !tx_busy(out.bits.port)
  appendDoneNow := out.fire && out.bits.last
  done.valid := appendDoneNow || finished.asUInt.orR
  done.bits.port := Mux(appendDoneNow, out.bits.port, ins(fin).port)
  done.bits.slot := Mux(appendDoneNow, out.bits.slot, ins(fin).slot)
  done.bits.error := Mux(appendDoneNow, out.bits.error, ins(fin).failed)
  when(!appendDoneNow && finished.asUInt.orR) { insValid(fin) := false.B }
  stats.readError := appendDoneNow && out.bits.error
  stats.writeError := !appendDoneNow && finished.asUInt.orR && ins(fin).failed

  // ---- Reads of the tiers (appends)
  reader.onchip_rd.data := onchip.read(reader.onchip_rd.addr, reader.onchip_rd.en).asUInt
  m_axi.arid := 0.U
  m_axi.araddr := cp.dramBase.U(cp.dramAddrBits.W) + Cat(reader.dram_ar.bits.word, 0.U(5.W))
  m_axi.arlen := reader.dram_ar.bits.beats - 1.U
  m_axi.arsize := Axi4.Size32.U
  m_axi.arburst := Axi4.BurstIncr.U
  m_axi.arvalid := reader.dram_ar.valid
  reader.dram_ar.ready := m_axi.arready
  reader.dram_r.valid := m_axi.rvalid
  reader.dram_r.bits.data := m_axi.rdata
  // A failed read, or a slave that breaks the protocol (wrong ID, RLAST where the burst
  // does not end), makes the append fail rather than send what it returned.
  reader.dram_r.bits.error := Axi4.isError(m_axi.rresp) || m_axi.rid =/= 0.U
  reader.dram_rlast := m_axi.rlast
  m_axi.rready := reader.dram_r.ready
}

class InsertStatus extends Bundle {
  val ins = UInt(2.W)
  val dram = Bool()
  val error = UInt(4.W)
}

/** A DMA write bound for DRAM: word offset in the DRAM tier, and the insert it is for. */
class DramWrite extends Bundle {
  val word = UInt(26.W)
  val data = UInt(256.W)
  val strb = UInt(32.W)
  val ins = UInt(2.W)
}
