package offnic.nic

import chisel3._
import chisel3.util._
import offnic.pcie.{DmaDesc, DmaRamWrite}

/** A completion to write (docs/queues.md, "Completion"). */
class CplReq(queueBits: Int) extends Bundle {
  val rx = Bool()
  val queue = UInt(queueBits.W)
  val index = UInt(16.W)
  val len = UInt(17.W) // bit 16 (TX frames over 65535 bytes) goes to byte 15
  val status = UInt(8.W)
  /** bit 0 port, bit 1 checksum valid, bit 2 RSS valid (bit 7, the phase, is added here) */
  val flags = UInt(7.W)
  val hash = UInt(32.W)
  val csum = UInt(16.W)
  val rssType = UInt(8.W)
  /** Byte 15 bits 7:1 (RX, reassembled datagrams: where the frame starts in the buffer). */
  val extra = UInt(7.W)
}

/** A completion queue's registers. */
class CqCfg extends Bundle {
  val base = UInt(64.W)
  val logSize = UInt(4.W)
  val enable = Bool()
  val eq = UInt(8.W)
  val cons = UInt(16.W)
  val modCount = UInt(16.W)
  val modTimeUs = UInt(16.W)
  val arm = Bool() // one-cycle pulse
}

/** An event queue's registers. */
class EqCfg extends Bundle {
  val base = UInt(64.W)
  val logSize = UInt(4.W)
  val enable = Bool()
  val cons = UInt(16.W)
  val arm = Bool() // one-cycle pulse
}

/** An MSI-X table entry. */
class MsixEntry extends Bundle {
  val addr = UInt(64.W)
  val data = UInt(32.W)
  val mask = Bool()
}

object CplStatus {
  val Ok = 0
  val DmaError = 1
  val BadDesc = 2
  val TooLong = 3
  val CacheRange = 4
  val FragDf = 5 // TX: an IPv4 datagram with DF larger than the port's MTU: nothing sent
  val FragOptions = 6 // TX: an IPv4 datagram with options larger than the MTU: nothing sent
  val FragMalformed = 7 // TX: larger than the MTU and its IPv4 header impossible: nothing sent
}

/** Writes completions, events and MSI-X interrupts to the host, in that causal order, one
  * record per cycle at best, all as DMA writes from the completion RAM (`cplSlots` 16-byte
  * slots, reused when the DMA engine reports the write done; its write statuses come in
  * order).
  *
  * Completion queues (TX queues first, then RX, `cqs` of them): the engines reserve a slot
  * (`reserve`) before they commit to a packet, so a completion always has room (`room`
  * says whether one more reservation fits). Moderation per queue by count and time, as
  * docs/queues.md says: an armed queue with completions the host has not consumed fires
  * when `mod_count` completions came since its last event or after `mod_time_us`; firing
  * writes an event to its event queue and disarms it.
  *
  * Event queues: writing an event into an armed queue (or arming one that holds events)
  * requests its MSI-X vector; a masked vector stays pending until unmasked. An event that
  * does not fit (queue full or disabled, or a bad queue number) is dropped and counted.
  *
  * Per cycle, when a slot is free and the DMA descriptor register is empty: an interrupt
  * goes first, then an event, then a completion (so events never wait behind a stream of
  * completions).
  */
class CplWriter(val p: NicParams) extends Module {
  import NicParams._
  private val qb = p.queueBits
  private val nc = p.cqs
  private val cb = log2Ceil(nc)
  private val ne = p.eqs
  private val sb = log2Ceil(p.cplSlots)

  val cq = IO(Input(Vec(nc, new CqCfg)))
  val eq = IO(Input(Vec(ne, new EqCfg)))
  val msix = IO(Input(Vec(ne, new MsixEntry)))
  val reserve = IO(Input(Vec(2, Valid(UInt(cb.W)))))
  val room = IO(Output(Vec(nc, Bool())))
  val s_req = IO(Flipped(Decoupled(new CplReq(qb))))
  val m_wr_desc = IO(Decoupled(new DmaDesc(RamAddrBits)))
  /** One of this writer's DMA writes finished (the engine reports writes in order; a
    * posted write cannot fail once issued, so the status code is not needed). */
  val wr_done = IO(Input(Bool()))
  val ram_wr = IO(new DmaRamWrite(sb + 4))
  val cq_prod = IO(Output(Vec(nc, UInt(16.W))))
  val eq_prod = IO(Output(Vec(ne, UInt(16.W))))
  val msix_pending = IO(Output(UInt(ne.W)))
  val eq_overflows = IO(Output(UInt(32.W)))
  val stat_completion = IO(Output(Bool()))
  val stat_event = IO(Output(Bool()))
  val stat_interrupt = IO(Output(Bool()))
  /** TCP engine notifications as events (only with the engine; docs/queues.md): written
    * into event queue `cfg_note_eq` when no interrupt, completion-queue event or completion
    * waits (host first); never dropped: a notification waits while its event queue is
    * full, disabled or not there. */
  private val withToe = p.toeConnections > 0
  val s_note = Option.when(withToe)(IO(Flipped(Decoupled(new NoteEvent))))
  val cfg_note_eq = Option.when(withToe)(IO(Input(UInt(8.W))))

  private def sizeOf(logSize: UInt): UInt = Descriptor.ringSize(logSize)
  private def slotOf(idx: UInt, logSize: UInt): UInt = Descriptor.ringSlot(idx, logSize)
  private def phaseOf(idx: UInt, logSize: UInt): Bool = Descriptor.phase(idx, logSize)

  // ---- Completion queue state
  private val prod = RegInit(VecInit(Seq.fill(nc)(0.U(16.W))))
  private val reserved = RegInit(VecInit(Seq.fill(nc)(0.U(17.W))))
  private val armed = RegInit(VecInit(Seq.fill(nc)(false.B)))
  private val since = RegInit(VecInit(Seq.fill(nc)(0.U(16.W))))
  private val timer = RegInit(VecInit(Seq.fill(nc)(0.U(16.W))))
  /** Cycles into the current microsecond of each queue's timer: the timer starts when the
    * queue becomes armed and pending, so it fires after mod_time_us whole microseconds. */
  private val subUs = RegInit(VecInit(Seq.fill(nc)(0.U(log2Ceil(p.usCycles).W))))

  // ---- Event queue state
  private val eprod = RegInit(VecInit(Seq.fill(ne)(0.U(16.W))))
  private val earmed = RegInit(VecInit(Seq.fill(ne)(false.B)))
  private val irqReq = RegInit(VecInit(Seq.fill(ne)(false.B)))
  private val overflows = RegInit(0.U(32.W))

  // ---- Slots: allocated in order, freed in order by the write statuses.
  private val slotHead = RegInit(0.U((sb + 1).W))
  private val slotTail = RegInit(0.U((sb + 1).W))
  private val slotFree = (slotHead - slotTail) =/= p.cplSlots.U
  when(wr_done) { slotTail := slotTail + 1.U }

  private val out = RegInit(false.B)
  private val outBits = Reg(new DmaDesc(RamAddrBits))
  m_wr_desc.valid := out
  m_wr_desc.bits := outBits
  when(m_wr_desc.fire) { out := false.B }
  private val go = slotFree && (!out || m_wr_desc.ready)

  // ---- What to write this cycle
  private val irqSend = VecInit((0 until ne).map(e => irqReq(e) && !msix(e).mask))
  private val fire = VecInit((0 until nc).map { c =>
    val pending = prod(c) =/= cq(c).cons
    val enough = since(c) >= Mux(cq(c).modCount === 0.U, 1.U, cq(c).modCount)
    cq(c).enable && armed(c) && pending && (enough || timer(c) >= cq(c).modTimeUs)
  })
  private val doIrq = go && irqSend.asUInt.orR
  private val doEvent = go && !irqSend.asUInt.orR && fire.asUInt.orR
  private val doCpl = go && !irqSend.asUInt.orR && !fire.asUInt.orR && s_req.valid
  s_req.ready := go && !irqSend.asUInt.orR && !fire.asUInt.orR
  private val noteE = cfg_note_eq.map(e => e(log2Ceil(ne).max(1) - 1, 0))
  private val doNote = s_note.map { n =>
    val e = noteE.get
    val ok = cfg_note_eq.get < ne.U && eq(e).enable && (eprod(e) - eq(e).cons) < sizeOf(eq(e).logSize)
    n.ready := go && !irqSend.asUInt.orR && !fire.asUInt.orR && !s_req.valid && ok
    n.fire
  }

  private val irqE = PriorityEncoder(irqSend)
  private val fireC = PriorityEncoder(fire)
  private val fireE = cq(fireC).eq
  private val eIdx = fireE(log2Ceil(ne).max(1) - 1, 0)
  private val eqOk = fireE < ne.U && eq(eIdx).enable &&
    (eprod(eIdx) - eq(eIdx).cons) < sizeOf(eq(eIdx).logSize)
  private val req = s_req.bits
  private val cIdx = Wire(UInt(cb.W))
  cIdx := Mux(req.rx, p.txQueues.U + req.queue, req.queue.pad(cb))

  private val record = Wire(UInt(128.W))
  private val hostAddr = Wire(UInt(64.W))
  private val len = Wire(UInt(5.W))
  record := 0.U
  hostAddr := 0.U
  len := 16.U
  when(irqSend.asUInt.orR) {
    record := msix(irqE).data
    hostAddr := msix(irqE).addr
    len := 4.U
  }.elsewhen(fire.asUInt.orR) {
    val srcRx = fireC >= p.txQueues.U
    val src = Mux(srcRx, fireC - p.txQueues.U, fireC)
    val ph = phaseOf(eprod(eIdx), eq(eIdx).logSize)
    record := Cat(0.U(64.W), ph, 0.U(7.W), 0.U(32.W), 0.U(7.W), srcRx, src.pad(16))
    hostAddr := eq(eIdx).base + (slotOf(eprod(eIdx), eq(eIdx).logSize) << 4)
  }.otherwise {
    val ph = phaseOf(prod(cIdx), cq(cIdx).logSize)
    record := Cat(req.extra, req.len(16), req.rssType, req.csum, req.hash, ph, req.flags, req.status, req.len(15, 0), req.index,
      req.queue.pad(16))
    hostAddr := cq(cIdx).base + (slotOf(prod(cIdx), cq(cIdx).logSize) << 4)
    s_note.foreach { n =>
      when(!s_req.valid) {
        val e = noteE.get
        val ph = phaseOf(eprod(e), eq(e).logSize)
        record := Cat(0.U(16.W), n.bits.merged, n.bits.seq, ph, 0.U(7.W), 0.U(24.W), n.bits.kind, NoteEvent.Type.U(8.W),
          n.bits.id)
        hostAddr := eq(e).base + (slotOf(eprod(e), eq(e).logSize) << 4)
      }
    }
  }
  private val writes = doNote.foldLeft(doIrq || (doEvent && eqOk) || doCpl)(_ || _)
  private val slot = slotHead(sb - 1, 0)
  ram_wr.en := writes
  ram_wr.addr := slot >> 1
  ram_wr.data := Cat(record, record)
  ram_wr.strb := Mux(slot(0), "hffff0000".U(32.W), "h0000ffff".U(32.W))
  when(writes) {
    slotHead := slotHead + 1.U
    out := true.B
    outBits.host_addr := hostAddr
    outBits.ram_addr := (CplRamBase.U + (slot << 4)).pad(RamAddrBits)
    outBits.len := len
    outBits.tag := 0x80.U
  }
  when(doIrq) { irqReq(irqE) := false.B }
  when(doEvent) {
    when(eqOk) { eprod(eIdx) := eprod(eIdx) + 1.U }.otherwise { overflows := overflows + 1.U }
  }
  doNote.foreach(d => when(d) { eprod(noteE.get) := eprod(noteE.get) + 1.U })

  // ---- Per completion queue: reservations, production, moderation.
  for (c <- 0 until nc) {
    val res = reserve.map(r => r.valid && r.bits === c.U).reduce(_ || _)
    val done = doCpl && cIdx === c.U
    reserved(c) := reserved(c) + res.asUInt - done.asUInt
    val size = sizeOf(cq(c).logSize)
    room(c) := cq(c).enable && ((prod(c) - cq(c).cons).pad(17) + reserved(c)) < size
    when(done) {
      prod(c) := prod(c) + 1.U
      since(c) := Mux(since(c).andR, since(c), since(c) + 1.U)
    }
    val pending = prod(c) =/= cq(c).cons
    when(armed(c) && pending) {
      val tick = subUs(c) === (p.usCycles - 1).U
      subUs(c) := Mux(tick, 0.U, subUs(c) + 1.U)
      when(tick && !timer(c).andR) { timer(c) := timer(c) + 1.U }
    }.otherwise {
      timer(c) := 0.U
      subUs(c) := 0.U
    }
    when(cq(c).arm) { armed(c) := true.B }
    when(doEvent && fireC === c.U) {
      armed(c) := false.B
      since(c) := 0.U
      timer(c) := 0.U
      subUs(c) := 0.U
    }
    cq_prod(c) := prod(c)
  }

  // ---- Per event queue: arming and interrupt requests.
  for (e <- 0 until ne) {
    val pending = eprod(e) =/= eq(e).cons
    when(eq(e).arm) { earmed(e) := true.B }
    when(earmed(e) && pending && eq(e).enable) {
      irqReq(e) := true.B
      earmed(e) := eq(e).arm // a new arm in this very cycle stays
    }
    eq_prod(e) := eprod(e)
  }
  msix_pending := VecInit((0 until ne).map(e => irqReq(e) && msix(e).mask)).asUInt
  eq_overflows := overflows
  stat_completion := doCpl
  stat_event := doEvent && eqOk
  stat_interrupt := doIrq
}

/** A TCP engine notification as an event (type [[NoteEvent.Type]]): the connection id
  * (bytes 0-1), the kind (byte 3: TcpDecide's NoteKind), the sequence number (bytes 8-11:
  * rx received up to, acked acknowledged up to) and how many notifications it stands for
  * (bytes 12-13: consecutive rx or acked of one connection merged, the latest kept). */
class NoteEvent extends Bundle {
  val merged = UInt(16.W)
  val seq = UInt(32.W)
  val kind = UInt(8.W)
  val id = UInt(16.W)
}

object NoteEvent {
  val Type = 2
}

object CplWriter extends offnic.Elaboratable {
  /** For the block bench: NicParams keys (tx_queues, rx_queues, eqs, cpl_slots, us_cycles ...). */
  def generate(p: offnic.Params): RawModule = new CplWriter(NicParams.from(p))
}
