package offnic.pcie

import chisel3._
import chisel3.util._

/** DMA writes, on-chip RAM -> host memory, as memory-write TLPs on the UltraScale+ RQ
  * interface (256-bit, DWORD-aligned).
  *
  * Interface to the rest of the NIC:
  *  - `s_desc` (valid/ready): host_addr, ram_addr, len (1..65536 bytes), tag; any
  *    alignment of either address. len 0 completes at once; len > 65536 gets
  *    DmaError.BadDesc and nothing is written.
  *  - `m_status` (valid/ready): tag, error, once per descriptor, in descriptor order, in the
  *    cycle after the last beat of its last TLP was handed to RQ. Writes are posted: PCIe
  *    ordering keeps any later write (a completion record, say) behind them.
  *  - `ram_rd`: the RAM read port (word address; data DmaParams.ramReadLatency cycles later).
  *  - `cfg_max_payload`: the PCIe max payload size field (128 << n bytes, capped at
  *    DmaParams.maxPayloadBytes).
  *  - `stat`: one-cycle event pulses (DmaWriteStats).
  *
  * How it works: a splitter cuts each descriptor into TLPs of at most the max payload size,
  * aligned to it (so none crosses 4 KiB); a scheduler turns each TLP into one operation per
  * output beat, each reading at most one new RAM word; after the RAM's fixed latency the
  * aligner takes 32 bytes at a byte offset out of (new word, previous word) and puts the
  * four descriptor words in front of the first beat. The payload starts at byte 16 + host
  * address mod 4 of the TLP, so when the RAM offset within its word is larger than that, the
  * TLP's first beat needs two words: one is preloaded, in the previous TLP's last beat when
  * that beat reads no new word (usual for back-to-back TLPs of one descriptor), else in an
  * operation of its own (one cycle). An output FIFO with credits absorbs RQ back-pressure,
  * as the RAM read cannot stall.
  */
class DmaWrite(val p: DmaParams) extends Module {
  import PcieUs._

  val s_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_status = IO(Decoupled(new DmaStatus))
  val m_axis_rq = IO(new PcieStreamIO(DataBits, RqUserBits))
  val ram_rd = IO(new DmaRamRead(p.ramAddrBits))
  val cfg_max_payload = IO(Input(UInt(3.W)))
  val stat = IO(Output(new DmaWriteStats))
  /** No descriptor waits in the intake or is being cut into TLPs (see DmaRead.intake_idle). */
  val intake_idle = IO(Output(Bool()))

  private val beatBits = log2Ceil((p.maxPayloadBytes + 16) / 32 + 2)
  private val dwBits = log2Ceil(p.maxPayloadBytes / 4 + 5) + 1

  // ------------------------------------------------------------------ descriptors in, status out
  // Statuses are produced at RQ hand-off and can never wait: a descriptor is taken only while
  // fewer than statusDepth are accepted and not yet reported.
  private val statusQ = Module(new Queue(new DmaStatus, p.statusDepth))
  m_status <> statusQ.io.deq
  private val open = RegInit(0.U(log2Ceil(p.statusDepth + 1).W))
  private val room = open < p.statusDepth.U
  private val descQ = Module(new Queue(new DmaDesc(p.ramAddrBits), 2))
  descQ.io.enq.valid := s_desc.valid && room
  descQ.io.enq.bits := s_desc.bits
  s_desc.ready := descQ.io.enq.ready && room
  open := open + s_desc.fire.asUInt - m_status.fire.asUInt

  // ------------------------------------------------------------------ splitter
  private val busy = RegInit(false.B)
  private val prepared = RegInit(false.B)
  private val curHost = Reg(UInt(64.W))
  private val curRam = Reg(UInt(p.ramAddrBits.W))
  private val curLeft = Reg(UInt(DmaParams.LenBits.W))
  private val curTag = Reg(UInt(8.W))
  private val curBad = Reg(Bool())
  private val chunkR = Reg(UInt(13.W))

  // Step 1: the TLP's size: for a new descriptor's first TLP as it is taken (so
  // descriptors of one TLP each go through at one per cycle), for later TLPs of a long one
  // in a cycle of their own.
  private val maxPayload = RegNext(cfg_max_payload, 0.U)
  private val mps = DmaUtil.sizeFromCode(maxPayload, p.maxPayloadBytes)
  private def chunkFor(host: UInt, left: UInt): UInt = {
    val toBoundary = mps - (host(11, 0) & (mps - 1.U))
    Mux(left < toBoundary, left(12, 0), toBoundary)
  }
  when(busy && !prepared) {
    prepared := true.B
    chunkR := chunkFor(curHost, curLeft)
  }

  // Step 2: everything the scheduler and aligner need about it.
  private class WrTlp extends Bundle {
    val hdr = UInt(128.W)
    val firstBe = UInt(4.W)
    val lastBe = UInt(4.W)
    val w0 = UInt(p.wordBits.W) // RAM word of the first payload byte
    val nWords = UInt((log2Ceil(p.maxPayloadBytes) - 3).W) // RAM words the payload touches
    val totalDw = UInt(dwBits.W) // descriptor + payload dwords
    val preload = Bool() // the first beat needs two RAM words
    val e = UInt(6.W) // byte offset of a beat's first byte in (older word, newer word): 1..32
    val last = Bool() // last TLP of its descriptor
    val statusOnly = Bool() // no TLP: a status to pass on in order (len 0 or bad)
    val tag = UInt(8.W)
    val err = UInt(4.W)
  }
  private val tlpQ = Module(new Queue(new WrTlp, 2))
  private val nothing = curBad || curLeft === 0.U
  private val (firstBe, lastBe, dwords) = DmaUtil.byteEnables(curHost(1, 0), chunkR)
  private val u = curRam(4, 0) // payload's first byte within its RAM word
  private val a4 = curHost(1, 0) // ... and within its dword: it sits at TLP byte 16 + a4
  private val preload = u > (16.U +& a4)
  private val t = tlpQ.io.enq.bits
  tlpQ.io.enq.valid := busy && prepared
  t.hdr := DmaUtil.rqDescriptor(curHost, dwords, ReqType.MemWrite, 0.U(8.W))
  t.firstBe := firstBe
  t.lastBe := lastBe
  t.w0 := curRam >> 5
  t.nWords := DmaUtil.ceilShift(u +& chunkR(log2Ceil(p.maxPayloadBytes), 0), 5)
  t.totalDw := (dwords +& 4.U)(dwBits - 1, 0)
  t.preload := preload
  t.e := Mux(preload, u - 16.U - a4, u +& 16.U - a4)
  t.last := nothing || curLeft === chunkR
  t.statusOnly := nothing
  t.tag := curTag
  t.err := Mux(curBad, DmaError.BadDesc.U, DmaError.Ok.U)
  when(tlpQ.io.enq.fire) {
    prepared := false.B
    curHost := curHost + chunkR
    curRam := curRam + chunkR
    curLeft := curLeft - chunkR
    when(t.last) { busy := false.B }
  }
  descQ.io.deq.ready := !busy || (tlpQ.io.enq.fire && t.last)
  intake_idle := !descQ.io.deq.valid && !busy
  when(descQ.io.deq.fire) {
    val d = descQ.io.deq.bits
    busy := true.B
    prepared := true.B
    chunkR := chunkFor(d.host_addr, d.len)
    curHost := d.host_addr
    curRam := d.ram_addr
    curLeft := d.len
    curTag := d.tag
    curBad := d.len > DmaParams.MaxLen.U
  }

  // ------------------------------------------------------------------ scheduler
  private class WrOp extends Bundle {
    val read = Bool() // read RAM word `addr` (arrives ramReadLatency cycles later)
    val addr = UInt(p.wordBits.W)
    val emit = Bool() // produce an output beat
    val first = Bool()
    val last = Bool()
    val keepDw = UInt(4.W)
    val e = UInt(6.W)
    val hdr = UInt(128.W)
    val be = UInt(8.W)
    val status = Bool() // the descriptor's status follows this beat's hand-off
    val statusOnly = Bool()
    val tag = UInt(8.W)
    val err = UInt(4.W)
  }
  private class OutBeat extends Bundle {
    val data = UInt(DataBits.W)
    val keepDw = UInt(4.W)
    val last = Bool()
    val be = UInt(8.W)
    val status = Bool()
    val statusOnly = Bool()
    val tag = UInt(8.W)
    val err = UInt(4.W)
  }
  private val outDepth = p.ramReadLatency + 6
  private val outQ = Module(new Queue(new OutBeat, outDepth))

  private val opV = RegInit(false.B) // the operation presenting its address to the RAM
  private val op = Reg(new WrOp)
  private val pipeV = Seq.fill(p.ramReadLatency)(RegInit(false.B)) // waiting for the RAM data
  private val pipeOp = Seq.fill(p.ramReadLatency)(Reg(new WrOp))
  pipeV.head := opV
  pipeOp.head := op
  for (i <- 1 until p.ramReadLatency) {
    pipeV(i) := pipeV(i - 1)
    pipeOp(i) := pipeOp(i - 1)
  }
  private val emitsInFlight = ((opV && op.emit) +: pipeV.zip(pipeOp).map { case (v, o) => v && o.emit })
    .map(_.asUInt).reduce(_ +& _)
  private val space = outQ.io.count +& emitsInFlight < outDepth.U

  // The TLP being scheduled is held in `cur`; the queue's head is the next one, so that its
  // preload can ride on cur's last beat when that beat reads no new word (common: a TLP
  // that needs a preload usually ends with such a beat), leaving no gap between TLPs.
  private val curV = RegInit(false.B)
  private val cur = Reg(new WrTlp)
  private val k = Reg(UInt(beatBits.W))
  private val dwLeft = Reg(UInt(dwBits.W))
  private val preDone = Reg(Bool()) // cur's first word is already in the aligner's carry
  private val next = tlpQ.io.deq.bits
  private val dwNow = Mux(k === 0.U, cur.totalDw, dwLeft)
  private val lastBeat = dwNow <= 8.U
  private val idx = k + cur.preload.asUInt // payload word this beat adds
  private val needsRead = idx < cur.nWords
  private val preloading = cur.preload && !preDone
  private val go = curV && space
  private val finishing = go && (cur.statusOnly || (!preloading && lastBeat))
  private val mergePreload = finishing && !cur.statusOnly && !needsRead &&
    tlpQ.io.deq.valid && next.preload && !next.statusOnly

  opV := go
  when(go) {
    op.read := false.B
    op.addr := cur.w0
    op.emit := true.B
    op.first := k === 0.U
    op.last := lastBeat
    op.keepDw := Mux(lastBeat, dwNow(3, 0), 8.U)
    op.e := cur.e
    op.hdr := cur.hdr
    op.be := Cat(cur.lastBe, cur.firstBe)
    op.status := false.B
    op.statusOnly := false.B
    op.tag := cur.tag
    op.err := cur.err
    when(cur.statusOnly) {
      op.status := true.B
      op.statusOnly := true.B
    }.elsewhen(preloading) {
      op.read := true.B
      op.emit := false.B
      preDone := true.B
    }.otherwise {
      op.read := needsRead || mergePreload
      op.addr := Mux(needsRead, cur.w0 + idx, next.w0)
      op.status := cur.last && lastBeat
      k := k + 1.U
      dwLeft := dwNow - 8.U
    }
  }
  // (after the beat counting above: a new TLP starts at beat 0)
  tlpQ.io.deq.ready := !curV || finishing
  when(tlpQ.io.deq.fire) {
    curV := true.B
    cur := next
    k := 0.U
    preDone := mergePreload
  }.elsewhen(finishing) {
    curV := false.B
  }

  ram_rd.en := opV && op.read
  ram_rd.addr := op.addr

  // ------------------------------------------------------------------ aligner
  private val av = pipeV.last
  private val a = pipeOp.last
  private val carry = Reg(UInt(DataBits.W)) // the RAM word read before
  private val shifted = DmaUtil.window(Cat(ram_rd.data, carry), a.e, 8, DataBits, 32)
  when(av && a.read) { carry := ram_rd.data }
  outQ.io.enq.valid := av && a.emit
  outQ.io.enq.bits.data := Mux(a.first, Cat(shifted(DataBits - 1, 128), a.hdr), shifted)
  outQ.io.enq.bits.keepDw := a.keepDw
  outQ.io.enq.bits.last := a.last
  outQ.io.enq.bits.be := Mux(a.first, a.be, 0.U)
  outQ.io.enq.bits.status := a.status
  outQ.io.enq.bits.statusOnly := a.statusOnly
  outQ.io.enq.bits.tag := a.tag
  outQ.io.enq.bits.err := a.err

  // ------------------------------------------------------------------ to RQ
  private val o = outQ.io.deq.bits
  m_axis_rq.tvalid := outQ.io.deq.valid && !o.statusOnly
  m_axis_rq.tdata := o.data
  m_axis_rq.tkeep := VecInit((0 until 16).map(n => ((1 << math.min(n, 8)) - 1).U(8.W)))(o.keepDw)
  m_axis_rq.tlast := o.last
  m_axis_rq.tuser := o.be.pad(RqUserBits) // first/last byte enables; no discontinue
  outQ.io.deq.ready := o.statusOnly || m_axis_rq.tready

  statusQ.io.enq.valid := outQ.io.deq.fire && o.status
  statusQ.io.enq.bits.tag := o.tag
  statusQ.io.enq.bits.error := o.err

  stat.req := m_axis_rq.fire && o.last
  stat.done := statusQ.io.enq.fire
  stat.done_error := statusQ.io.enq.fire && o.err =/= DmaError.Ok.U
}
