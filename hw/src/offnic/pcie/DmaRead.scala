package offnic.pcie

import chisel3._
import chisel3.util._
import offnic.util.{BitMask, SkidBuffer}

/** DMA reads, host memory -> on-chip RAM, on the UltraScale+ requester interfaces (memory
  * read requests out on RQ, completions in on RC; 256-bit, DWORD-aligned, no straddling;
  * the IP in "client tag" mode: this block picks the PCIe tags).
  *
  * Interface to the rest of the NIC:
  *  - `s_desc` (valid/ready): host_addr, ram_addr, len (1..65536 bytes), tag. Any alignment
  *    of host_addr and ram_addr. len 0 completes at once with success; len > 65536 gets
  *    DmaError.BadDesc and nothing is read.
  *  - `m_status` (valid/ready): tag, error (DmaError) once per descriptor, when every byte
  *    of it has been written into the RAM (or when it failed and none of its reads is still
  *    in flight). Statuses come in completion order, not descriptor order.
  *  - `ram_wr`: the RAM write port (word address, 256-bit data, byte strobes); one word per
  *    cycle, never stalled.
  *  - `cfg_max_read_req`: the PCIe max read request size field (128 << n bytes).
  *  - `stat`: one-cycle event pulses (DmaReadStats).
  *
  * How it works:
  *  - Request generator: takes one descriptor at a time into a descriptor slot and cuts it
  *    into reads of at most the max read request size, each aligned to that size, so none
  *    crosses a 4 KiB boundary. A read goes out when a tag is free and the completion
  *    buffer credit allows (see DmaParams.cplBufferCredits). Each tag records its slot, RAM
  *    address and length; a slot counts its reads in flight.
  *  - Completions may come in any order across tags, split at the read-completion boundary
  *    within one. Each is placed by its byte count: its first byte belongs `length - byte
  *    count` bytes into its request. The last completion of a request (byte count covered by
  *    its data) frees the tag. Data flows RC -> skid buffer -> decode (tag lookup, placement)
  *    -> byte shifter -> RAM write, at one beat per cycle.
  *  - Byte shifter: each RC beat is rotated by (RAM address - TLP position) mod 32 and
  *    merged with the previous beat, giving one RAM word per beat with the IP's byte
  *    enables as strobes; a completion whose tail spills into one more word writes that word
  *    in the next free write slot (the empty first word of the next completion, usually), so
  *    RC back-pressure is rare.
  *  - Errors: UR/CA status, poisoned data, an IP error code, or the per-tag timer end the
  *    descriptor with an error: no further reads are issued for it, its tags are freed as
  *    their requests end (a UR/CA completion or a timeout ends one at once), and its status
  *    goes out when none is left. Completions for unknown tags are dropped and counted.
  *  - Order: a slot's read count drops only after the completion's last RAM write has
  *    been issued, so the status never overtakes the data.
  *
  * Throughput: one RC beat per cycle, so reads run at what the RC interface carries without
  * straddling (a 256-byte completion takes 9 beats: about 56 Gb/s at 250 MHz). In flight:
  * up to `tags` requests and cplBufferCredits (32 KiB by default) of completion data, i.e.
  * 16 KiB at a 512-byte max read request: over 2 us of host latency at Gen3 x8.
  *
  * Limits: a completion arriving after its tag timed out and was reused is taken for the
  * new request, and the rest of a completion already arriving when its request times out
  * may still be written after the error status (the timeout should exceed the host's
  * completion timeout). Completions are not parity-checked.
  */
class DmaRead(val p: DmaParams) extends Module {
  import PcieUs._

  val s_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_status = IO(Decoupled(new DmaStatus))
  /** Read requests, one beat each (to the RQ arbiter). */
  val m_axis_rq = IO(new PcieStreamIO(DataBits, RqUserBits))
  val s_axis_rc = IO(Flipped(new PcieStreamIO(DataBits, RcUserBits)))
  val ram_wr = IO(new DmaRamWrite(p.ramAddrBits))
  val cfg_max_read_req = IO(Input(UInt(3.W)))
  val stat = IO(Output(new DmaReadStats))
  /** No descriptor waits in the intake or is being cut into requests (for DmaArbiter's
    * host-first admission: what is admitted while this is high is next in line). */
  val intake_idle = IO(Output(Bool()))

  private val tagBits = log2Ceil(p.tags)
  private val slotBits = log2Ceil(p.descSlots)
  private val creditBits = log2Ceil(p.cplBufferCredits + 1)
  private val AgeLimit = 15 // per-tag timer: ticks of tickPeriod cycles

  // ------------------------------------------------------------------ descriptor slots
  // What every cycle looks at across all slots is a bitmask (one bit per slot); the rest is
  // in memories read and written at the few slots a cycle touches. (As vectors of registers,
  // every slot had its own write decode, which a simulator evaluates every cycle.)
  private val slotActive = RegInit(0.U(p.descSlots.W))
  private val slotIssued = RegInit(0.U(p.descSlots.W)) // every read of it issued (or given up)
  private val slotIdle = RegInit(((BigInt(1) << p.descSlots) - 1).U(p.descSlots.W)) // no read of it in flight (slotPending 0)
  private val slotPending = Mem(p.descSlots, UInt(log2Ceil(p.tags + 1).W)) // reads in flight, where not idle
  private val slotErr = Mem(p.descSlots, UInt(4.W))
  private val slotTag = Mem(p.descSlots, UInt(8.W))
  private def slotOh(slot: UInt, en: Bool): UInt = BitMask.only(slot, p.descSlots, en)

  // slotErr's writers this cycle, in order (the last one wins). A flagged error only replaces Ok
  // (the first error stays), and the old value decides even when several writers meet.
  private class ErrWrite extends Bundle {
    val en = Bool()
    val slot = UInt(log2Ceil(p.descSlots).W)
    val code = UInt(4.W)
  }
  private val errWrites = scala.collection.mutable.ArrayBuffer[ErrWrite]()
  private def errWrite(en: Bool, slot: UInt, code: UInt): Unit = {
    val w = Wire(new ErrWrite)
    w.en := en
    w.slot := slot
    w.code := code
    errWrites += w
  }
  private def flagError(en: Bool, slot: UInt, code: UInt): Unit =
    errWrite(en && slotErr(slot) === DmaError.Ok.U, slot, code)

  // ------------------------------------------------------------------ tag pool
  private class TagOwner extends Bundle { // read by the completion decoder and the timer
    val slot = UInt(slotBits.W)
    val credits = UInt(creditBits.W) // completion buffer credits reserved
  }
  private class TagPlace extends Bundle { // read by the completion decoder
    val ramAddr = UInt(p.ramAddrBits.W) // RAM address of the request's first byte
    val bytes = UInt(13.W) // request length, 1..4096
  }
  private val tagActive = RegInit(0.U(p.tags.W)) // one bit per tag
  private val tagOwner = Mem(p.tags, new TagOwner)
  private val tagPlace = Mem(p.tags, new TagPlace)
  private val creditsUsed = RegInit(0.U(creditBits.W))

  // ------------------------------------------------------------------ request generator
  private val descQ = Queue(s_desc, 2)
  private val busy = RegInit(false.B)
  private val prepared = RegInit(false.B) // the next request's size is in req*
  private val curHost = Reg(UInt(64.W))
  private val curRam = Reg(UInt(p.ramAddrBits.W))
  private val curLeft = Reg(UInt(DmaParams.LenBits.W))
  private val curSlot = Reg(UInt(slotBits.W))

  private val (anySlotFree, freeSlot) = BitMask.lowestSet(~slotActive)
  descQ.ready := !busy && anySlotFree
  intake_idle := !descQ.valid && !busy
  private val descBad = descQ.bits.len > DmaParams.MaxLen.U
  private val descNothing = descBad || descQ.bits.len === 0.U
  errWrite(descQ.fire, freeSlot, Mux(descBad, DmaError.BadDesc.U, DmaError.Ok.U))
  when(descQ.fire) {
    val d = descQ.bits
    slotTag.write(freeSlot, d.tag)
    busy := !descNothing
    prepared := false.B
    curHost := d.host_addr
    curRam := d.ram_addr
    curLeft := d.len
    curSlot := freeSlot
  }

  // Step 1: size the next request (registered, so step 2 starts from flip-flops).
  private val maxReadReq = RegNext(cfg_max_read_req, 0.U)
  private val mrrs = DmaUtil.sizeFromCode(maxReadReq, 4096)
  private val toBoundary = mrrs - (curHost(11, 0) & (mrrs - 1.U)) // aligned to mrrs: never crosses 4 KiB
  private val chunk = Mux(curLeft < toBoundary, curLeft(12, 0), toBoundary)
  private val (chunkFirstBe, chunkLastBe, chunkDw) = DmaUtil.byteEnables(curHost(1, 0), chunk)
  // Worst case in the IP's completion buffer: the data, plus per completion (one per 64-byte
  // completion boundary crossed, and one) a header credit and a partly filled data credit.
  private val chunkCpls = DmaUtil.ceilShift(curHost(5, 0) +& chunk, 6)
  private val chunkCredits = DmaUtil.ceilShift(chunkDw, 2) +& Cat(chunkCpls, 0.U(1.W))

  private val reqBytes = Reg(UInt(13.W))
  private val reqDw = Reg(UInt(11.W))
  private val reqFirstBe = Reg(UInt(4.W))
  private val reqLastBe = Reg(UInt(4.W))
  private val reqCredits = Reg(UInt(creditBits.W))
  private val reqLast = Reg(Bool())

  private val stop = slotErr(curSlot) =/= DmaError.Ok.U // the descriptor failed: issue no more
  when(busy && !prepared && !stop) {
    prepared := true.B
    reqBytes := chunk
    reqDw := chunkDw(10, 0) // at most 1024
    reqFirstBe := chunkFirstBe
    reqLastBe := chunkLastBe
    reqCredits := chunkCredits
    reqLast := curLeft === chunk
  }

  // Step 2: issue it with a free tag.
  private class RqReq extends Bundle {
    val hdr = UInt(128.W)
    val firstBe = UInt(4.W)
    val lastBe = UInt(4.W)
  }
  private val rqQ = Module(new Queue(new RqReq, 2))
  private val (anyTagFree, freeTag) = BitMask.lowestSet(~tagActive)
  private val creditOk = creditsUsed +& reqCredits <= p.cplBufferCredits.U
  rqQ.io.enq.valid := busy && prepared && !stop && anyTagFree && creditOk
  rqQ.io.enq.bits.hdr := DmaUtil.rqDescriptor(curHost, reqDw, ReqType.MemRead, freeTag.pad(8))
  rqQ.io.enq.bits.firstBe := reqFirstBe
  rqQ.io.enq.bits.lastBe := reqLastBe
  private val issue = rqQ.io.enq.fire

  when(busy && stop) {
    busy := false.B
  }
  when(issue) {
    val owner = Wire(new TagOwner)
    owner.slot := curSlot
    owner.credits := reqCredits
    tagOwner.write(freeTag, owner)
    val place = Wire(new TagPlace)
    place.ramAddr := curRam
    place.bytes := reqBytes
    tagPlace.write(freeTag, place)
    curHost := curHost + reqBytes
    curRam := curRam + reqBytes
    curLeft := curLeft - reqBytes
    prepared := false.B
    when(reqLast) {
      busy := false.B
    }
  }
  // Slot bits of this cycle (a slot taken, issued in full, given up are never the same slot:
  // taking one needs !busy, the others busy).
  private val slotTaken = slotOh(freeSlot, descQ.fire)
  private val slotAllIssued = slotOh(curSlot, busy && (stop || (issue && reqLast)))
  slotIssued := (slotIssued & ~slotTaken) | Mux(descNothing, slotTaken, 0.U) | slotAllIssued

  m_axis_rq.tvalid := rqQ.io.deq.valid
  m_axis_rq.tdata := rqQ.io.deq.bits.hdr.pad(DataBits)
  m_axis_rq.tkeep := "h0f".U // the four descriptor words, no payload
  m_axis_rq.tlast := true.B
  m_axis_rq.tuser := Cat(rqQ.io.deq.bits.lastBe, rqQ.io.deq.bits.firstBe).pad(RqUserBits)
  rqQ.io.deq.ready := m_axis_rq.tready

  // ------------------------------------------------------------------ completion decode
  private class RcBeat extends Bundle {
    val data = UInt(DataBits.W)
    val keep = UInt(8.W)
    val last = Bool()
    val byteEn = UInt(32.W)
    val discontinue = Bool()
  }
  private val rcIn = Module(new SkidBuffer(new RcBeat))
  rcIn.in.valid := s_axis_rc.tvalid
  rcIn.in.bits.data := s_axis_rc.tdata
  rcIn.in.bits.keep := s_axis_rc.tkeep
  rcIn.in.bits.last := s_axis_rc.tlast
  rcIn.in.bits.byteEn := s_axis_rc.tuser(RcByteEn._1, RcByteEn._2)
  rcIn.in.bits.discontinue := s_axis_rc.tuser(RcDiscontinue)
  s_axis_rc.tready := rcIn.in.ready
  // Deliberately ignored: the start flags (this block counts beats from tlast), end-of-TLP
  // pointers (straddling only) and parity (off in the IP). The name tells lint so.
  private val unused_rc_user = WireDefault(Cat(s_axis_rc.tuser(RcUserBits - 1, RcDiscontinue + 1),
    s_axis_rc.tuser(RcDiscontinue - 1, RcIsSop)).xorR)
  dontTouch(unused_rc_user)

  private val head = rcIn.out
  private val sop = RegInit(true.B) // the head beat starts a completion TLP
  private val w = head.bits.data.asTypeOf(Vec(8, UInt(32.W)))
  private val lowerAddr = w(0)(11, 0)
  private val ipError = w(0)(15, 12)
  private val byteCount = w(0)(28, 16)
  private val dwCount = w(1)(10, 0)
  private val cplStatus = w(1)(13, 11)
  private val poisoned = w(1)(14)
  private val rcTag = w(2)(7, 0)
  private val rcTagIdx = rcTag(tagBits - 1, 0)
  private val info = tagOwner(rcTagIdx)
  private val place = tagPlace(rcTagIdx)

  private val tagInRange = if (p.tags == 256) true.B else rcTag < p.tags.U
  private val known = tagInRange && BitMask.bit(tagActive, rcTagIdx) && ipError =/= RcError.InvalidTag.U
  private val byteCountBad = byteCount === 0.U || byteCount > place.bytes
  private val code = MuxCase(DmaError.Ok.U, Seq(
    (cplStatus === CplStatus.Unsupported.U) -> DmaError.Unsupported.U,
    (cplStatus === CplStatus.Abort.U) -> DmaError.Abort.U,
    (cplStatus =/= CplStatus.Success.U) -> DmaError.Malformed.U,
    (ipError === RcError.Timeout.U) -> DmaError.Timeout.U,
    (poisoned || ipError === RcError.Poisoned.U || head.bits.discontinue) -> DmaError.Poisoned.U,
    (ipError =/= RcError.Normal.U || byteCountBad) -> DmaError.Malformed.U
  ))
  // A request ends with a completion that is not successful, one the IP reports as ending it,
  // or one whose data reaches the last byte (its byte count fits in it).
  private val terminal = cplStatus =/= CplStatus.Success.U || ipError === RcError.Timeout.U ||
    ipError === RcError.Flr.U || ipError === RcError.BadStatus.U || byteCountBad
  private val lastCpl = (byteCount +& lowerAddr(1, 0)) <= (dwCount << 2)
  private val retire = known && (terminal || lastCpl)
  private val writes = known && code === DmaError.Ok.U
  // RAM address of the TLP's stream byte 0: payload dword 0 sits at byte 12 of the first
  // beat, its first valid byte at lowerAddr[1:0], and that byte belongs (bytes - byteCount)
  // into the request.
  private val streamBase = place.ramAddr + (place.bytes - byteCount) - 12.U - lowerAddr(1, 0)

  private val sopFire = head.fire && sop
  private val ipTimeout = known && code === DmaError.Timeout.U

  // Per-tag timers: a shared prescaler ticks every tickPeriod cycles; a tag times out after
  // AgeLimit ticks, i.e. between cplTimeoutCycles and 15/14 of it after its request.
  // A tag's age is the ticks since its request (up to AgeLimit), kept as one bitmask per age
  // that a tick shifts up by one age: tagAgeIs(a) holds the tags of age a, tagAged those of
  // AgeLimit. A request clears its tag from all and puts it at age 0; bits of idle tags are
  // left behind and ignored (only active tags are read).
  private val tickPeriod = (p.cplTimeoutCycles + AgeLimit - 2) / (AgeLimit - 1)
  private val prescaler = RegInit(0.U(log2Ceil(tickPeriod + 1).W))
  private val tick = prescaler === (tickPeriod - 1).U
  prescaler := Mux(tick, 0.U, prescaler + 1.U)
  private val tagAgeIs = RegInit(VecInit(Seq.fill(AgeLimit)(0.U(p.tags.W))))
  private val tagAged = RegInit(0.U(p.tags.W))
  private val issuedTag = BitMask.only(freeTag, p.tags, issue)
  for (a <- 0 until AgeLimit) {
    val younger = if (a == 0) 0.U else tagAgeIs(a - 1)
    tagAgeIs(a) := (Mux(tick, younger, tagAgeIs(a)) & ~issuedTag) | (if (a == 0) issuedTag else 0.U)
  }
  tagAged := (tagAged | Mux(tick, tagAgeIs(AgeLimit - 1), 0.U)) & ~issuedTag
  private val (anyExpired, expTag) = BitMask.lowestSet(tagActive & tagAged)
  private val expInfo = tagOwner(expTag)
  // One expiry per cycle, not while the decoder handles that tag or counts an IP timeout
  // (an expired tag waits a cycle).
  private val timeoutFire = anyExpired && !(sopFire && (rcTagIdx === expTag || ipTimeout))

  flagError(sopFire && known && code =/= DmaError.Ok.U, info.slot, code)
  flagError(timeoutFire, expInfo.slot, DmaError.Timeout.U)
  private def tagOh(tag: UInt, en: Bool): UInt = BitMask.only(tag, p.tags, en)
  tagActive := (tagActive | issuedTag) & ~tagOh(rcTagIdx, sopFire && known && retire) &
    ~tagOh(expTag, timeoutFire)
  creditsUsed := creditsUsed + Mux(issue, reqCredits, 0.U) - Mux(sopFire && retire, info.credits, 0.U) -
    Mux(timeoutFire, expInfo.credits, 0.U)

  stat.req := issue
  stat.cpl := sopFire && known
  stat.unexpected := sopFire && !known
  stat.err_status := sopFire && known && (code === DmaError.Unsupported.U || code === DmaError.Abort.U)
  // The IP may flag a payload error (discontinue) on a later beat than the first: the TLP's
  // data is bad from there on.
  private val ctxKnown = Reg(Bool())
  private val ctxBad = Reg(Bool())
  private val ctxSlotR = Reg(UInt(slotBits.W))
  private val lateBad = head.fire && !sop && head.bits.discontinue && ctxKnown && !ctxBad
  when(sopFire) {
    ctxKnown := known
    ctxBad := code =/= DmaError.Ok.U
    ctxSlotR := info.slot
  }
  when(lateBad) {
    ctxBad := true.B
  }
  flagError(lateBad, ctxSlotR, DmaError.Poisoned.U)
  // One write port per writer; where two meet at one slot, the later one alone writes.
  for ((w, i) <- errWrites.zipWithIndex) {
    val overridden = errWrites.drop(i + 1).map(l => l.en && l.slot === w.slot).foldLeft(false.B)(_ || _)
    when(w.en && !overridden) { slotErr.write(w.slot, w.code) }
  }
  stat.err_poisoned := (sopFire && known && code === DmaError.Poisoned.U) || lateBad
  stat.err_timeout := (sopFire && ipTimeout) || timeoutFire
  stat.err_malformed := sopFire && known && code === DmaError.Malformed.U

  // ------------------------------------------------------------------ placement per beat
  private class AlignBeat extends Bundle {
    val data = UInt(DataBits.W)
    val mask = UInt(32.W) // bytes to write (byte enables of kept words; 0 when dropped)
    val any = Bool() // mask =/= 0, and its lowest and highest lane (for the stall decision)
    val low = UInt(5.W)
    val high = UInt(5.W)
    val off = UInt(6.W) // 32 - (RAM lane of stream byte 0, i.e. streamBase mod 32): 1..32
    val word = UInt(p.wordBits.W) // RAM word this beat completes
    val first = Bool()
    val last = Bool()
    val retire = Bool() // the TLP ends its request: count it off its slot after the writes
    val slot = UInt(slotBits.W)
  }
  private val b2Valid = RegInit(false.B)
  private val b2 = Reg(new AlignBeat)
  private val ctxWord = Reg(UInt(p.wordBits.W))
  private val ctxOff = Reg(UInt(6.W))
  private val ctxWrite = Reg(Bool())
  private val ctxRetire = Reg(Bool())
  private val ctxSlot = Reg(UInt(slotBits.W))
  private val b2Take = Wire(Bool())

  private val sopOff = 32.U(6.W) - streamBase(4, 0)
  head.ready := !b2Valid || b2Take
  when(head.fire) {
    val wr = Mux(sop, writes, ctxWrite && !head.bits.discontinue)
    val word = Mux(sop, streamBase >> 5, ctxWord)
    b2Valid := true.B
    sop := head.bits.last
    b2.data := head.bits.data
    val mask = head.bits.byteEn & FillInterleaved(4, head.bits.keep)
    val (any, low) = DmaUtil.lowestSet(mask.asBools)
    val (_, highRev) = DmaUtil.lowestSet(mask.asBools.reverse)
    b2.mask := Mux(wr, mask, 0.U)
    b2.any := wr && any
    b2.low := low
    b2.high := 31.U - highRev
    b2.off := Mux(sop, sopOff, ctxOff)
    b2.word := word
    b2.first := sop
    b2.last := head.bits.last
    b2.retire := Mux(sop, retire, ctxRetire)
    b2.slot := Mux(sop, info.slot, ctxSlot)
    ctxWord := word + 1.U
    when(!sop && head.bits.discontinue) { ctxWrite := false.B }
    when(sop) {
      ctxOff := sopOff
      ctxWrite := writes
      ctxRetire := retire
      ctxSlot := info.slot
    }
  }.elsewhen(b2Take) {
    b2Valid := false.B
  }

  // ------------------------------------------------------------------ byte shifter
  // RAM word b2.word holds stream bytes [32k - shift, 32k + 32 - shift): lanes >= shift from
  // this beat, lanes < shift from the previous one (the carry). After a TLP's last beat, its
  // top `shift` lanes belong to the next word: the flush.
  private val carryData = Reg(UInt(DataBits.W))
  private val carryMask = Reg(UInt(32.W))
  private val carryAny = Reg(Bool())
  private val carryHigh = Reg(UInt(5.W))
  private val curData = DmaUtil.window(Cat(b2.data, carryData), b2.off, 8, DataBits, 32)
  private val curMask = DmaUtil.window(Cat(b2.mask, Mux(b2.first, 0.U(32.W), carryMask)), b2.off, 1, 32, 32)
  private val flData = DmaUtil.window(Cat(0.U(DataBits.W), b2.data), b2.off, 8, DataBits, 32)
  private val flMask = DmaUtil.window(Cat(0.U(32.W), b2.mask), b2.off, 1, 32, 32)
  // Whether the word and the flush have bytes to write, from the lanes alone (short paths:
  // this decides the stall): the word takes this beat's lanes below `off` and the carry's
  // lanes from `off` up; the flush takes this beat's lanes from `off` up.
  private val curUseful = (b2.any && b2.low < b2.off) || (!b2.first && carryAny && carryHigh >= b2.off)
  private val spill = b2.last && b2.any && b2.high >= b2.off
  private val retireHere = b2.last && b2.retire
  private val curNeedsSlot = curUseful || (retireHere && !spill)

  // A flush waiting for a write slot.
  private val pValid = RegInit(false.B)
  private val pWord = Reg(UInt(p.wordBits.W))
  private val pData = Reg(UInt(DataBits.W))
  private val pMask = Reg(UInt(32.W))
  private val pRetire = Reg(Bool())
  private val pSlot = Reg(UInt(slotBits.W))

  // The RAM write (and the read count-off that follows it), from registers.
  private val s4En = RegInit(false.B)
  private val s4Retire = RegInit(false.B)
  private val s4Word = Reg(UInt(p.wordBits.W))
  private val s4Data = Reg(UInt(DataBits.W))
  private val s4Mask = Reg(UInt(32.W))
  private val s4Slot = Reg(UInt(slotBits.W))

  b2Take := b2Valid && !(pValid && curNeedsSlot)
  when(b2Take) {
    carryData := b2.data
    carryMask := b2.mask
    carryAny := b2.any
    carryHigh := b2.high
  }
  private def toS4(en: Bool, word: UInt, data: UInt, mask: UInt, retire: Bool, slot: UInt): Unit = {
    s4En := en
    s4Word := word
    s4Data := data
    s4Mask := mask
    s4Retire := retire
    s4Slot := slot
  }
  private def toP(retire: Bool): Unit = {
    pValid := true.B
    pWord := b2.word + 1.U
    pData := flData
    pMask := flMask
    pRetire := retire
    pSlot := b2.slot
  }
  s4En := false.B
  s4Retire := false.B
  when(pValid) {
    toS4(true.B, pWord, pData, pMask, pRetire, pSlot)
    pValid := false.B
    when(b2Take && spill) { toP(retireHere) } // this beat needs no slot of its own
  }.elsewhen(b2Valid) {
    when(curNeedsSlot) {
      toS4(curUseful, b2.word, curData, curMask, retireHere && !spill, b2.slot)
      when(spill) { toP(retireHere) }
    }.elsewhen(spill) {
      toS4(true.B, b2.word + 1.U, flData, flMask, retireHere, b2.slot)
    }
  }

  ram_wr.en := s4En
  ram_wr.addr := s4Word
  ram_wr.data := s4Data
  ram_wr.strb := s4Mask

  // ------------------------------------------------------------------ counts and status
  // Reads in flight per slot: up to three slots change in a cycle (a read issued, one counted
  // off after its writes, one timed out). Each is read, adjusted by every change that hits
  // it, and written once; slotIdle says which counts are 0 (the memory's word of an idle
  // slot is not read: at reset every slot is idle, as the counts were 0).
  private val pendChanges = Seq((issue, curSlot), (s4Retire, s4Slot), (timeoutFire, expInfo.slot))
  private val pendWrites = pendChanges.zipWithIndex.map { case ((en, slot), i) =>
    val old = Mux(BitMask.bit(slotIdle, slot), 0.U, slotPending(slot))
    val inc = issue && curSlot === slot
    val decWrite = s4Retire && s4Slot === slot
    val decTimeout = timeoutFire && expInfo.slot === slot
    val next = old + inc.asUInt - decWrite.asUInt - decTimeout.asUInt
    val seen = pendChanges.take(i).map { case (e, s) => e && s === slot }.foldLeft(false.B)(_ || _)
    val wr = en && !seen
    when(wr) { slotPending.write(slot, next) }
    (slotOh(slot, wr), Mux(next === 0.U, slotOh(slot, wr), 0.U))
  }
  slotIdle := (slotIdle & ~pendWrites.map(_._1).reduce(_ | _)) | pendWrites.map(_._2).reduce(_ | _)

  private val statusQ = Module(new Queue(new DmaStatus, p.statusDepth))
  private val (anyDone, doneSlot) = BitMask.lowestSet(slotActive & slotIssued & slotIdle)
  statusQ.io.enq.valid := anyDone
  statusQ.io.enq.bits.tag := slotTag(doneSlot)
  statusQ.io.enq.bits.error := slotErr(doneSlot)
  slotActive := (slotActive | slotTaken) & ~slotOh(doneSlot, statusQ.io.enq.fire)
  m_status <> statusQ.io.deq
  stat.done := statusQ.io.enq.fire
  stat.done_error := statusQ.io.enq.fire && slotErr(doneSlot) =/= DmaError.Ok.U
}
