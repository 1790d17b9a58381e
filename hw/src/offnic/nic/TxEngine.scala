package offnic.nic

import chisel3._
import chisel3.util._
import offnic.axis.{AxisIO, AxisParams}
import offnic.cache.{CacheCmd, CacheDone}
import offnic.offload.{FragDone, Fragmenter, TxChecksum}
import offnic.pcie.{DmaDesc, DmaRamRead}
import offnic.util.BitMask

/** A TX packet waiting in a port's TX RAM (or failed before it got there). */
class TxPacket(queueBits: Int) extends Bundle {
  val queue = UInt(queueBits.W)
  val index = UInt(16.W)
  val len = UInt(17.W)
  val start = UInt(NicParams.TxRamAddrBits.W)
  val status = UInt(8.W)
  /** TxChecksumCmd bits: offset, start, enable */
  val csum = UInt(TxChecksum.CmdWidth.W)
  /** a frame to send (not a cache insert, not failed before reading) */
  val send = Bool()
}

/** The transmit side: takes packets from the TX queues' descriptor caches, reads their bytes
  * from host memory into the port's TX RAM, and sends them in order on the port, then
  * asks for their completions.
  *
  * Scheduler (shared by both ports, one packet at a time): round robin over queues that are
  * enabled, have cached descriptors, room in their completion queue and a free packet slot
  * on their port. It reads the packet's descriptor chain (one descriptor per cycle), then
  * allocates the frame contiguously in the port's TX RAM (a ring of bytes; a frame that does
  * not fit before the end starts again at 0), consumes the descriptors, reserves the
  * completion and issues one DMA read per segment, tagged with the packet's slot. A chain
  * that is not wholly cached yet, or a frame that does not fit in the RAM yet, is left for
  * later (the queue waits until its cache grows or the port frees space). Bad packets
  * (unknown opcode, more than `maxSegs` segments, length 0 or above `maxTxFrame`) take a slot
  * without RAM and complete with BAD_DESC, in order with the others.
  *
  * Payload cache commands (docs/cache.md): a packet's segments may append bytes from the
  * cache (opcode CACHE_APPEND) as well as from host memory; those go to the payload cache as
  * commands, in scheduling order, and count off the packet's slot like its DMA reads. A
  * CACHE_INSERT descriptor is a packet of its own that sends nothing: it takes a slot (so it
  * completes in order with the port's packets) and one command. An offset + length beyond
  * the cache (`cacheBytes`) completes CACHE_RANGE and touches nothing.
  *
  * Per port, in slot order: when every read of the head packet is done, the port's
  * `Fragmenter` streams it from the TX RAM to `m_axis` (the checksum command in `tuser`),
  * cutting an IPv4 datagram larger than the port's MTU (`cfg_mtu`, 65535: never) into
  * fragments (docs/frag.md); one it refuses completes FRAG_DF, FRAG_OPTIONS or
  * FRAG_MALFORMED with nothing sent. If a read failed, nothing is sent and it completes
  * with DMA_ERROR.
  */
class TxEngine(val p: NicParams, cacheBytes: Long) extends Module {
  import NicParams._
  private val nq = p.txQueues
  private val qb = log2Ceil(nq)
  private val cb = log2Ceil(p.cqs)
  private val slots = p.txSlots
  private val sb = log2Ceil(slots)
  private val ramBytes = TxRamBytes
  private val segW = log2Ceil(p.maxSegs + 1)
  private val segIx = log2Ceil(p.maxSegs).max(1)
  private val availW = log2Ceil(p.descCache) + 1
  val axisP: AxisParams = AxisParams(32, userWidth = TxChecksum.CmdWidth)

  val queues = IO(new QueueSide(nq, p))
  val cfg_port = IO(Input(Vec(nq, UInt(1.W))))
  val m_rd_desc = IO(Decoupled(new DmaDesc(RamAddrBits)))
  val s_rd_status = IO(Vec(2, Flipped(Valid(new SegDone(sb)))))
  val ram_rd = IO(Vec(2, new DmaRamRead(TxRamAddrBits)))
  val m_axis = IO(Vec(2, new AxisIO(axisP)))
  val m_cpl = IO(Decoupled(new CplReq(p.queueBits)))
  val m_cache = IO(Decoupled(new CacheCmd))
  val s_cache_done = IO(Flipped(Valid(new CacheDone)))
  val stat_host_bytes = IO(Output(Valid(UInt(17.W)))) // a DMA read of a segment was issued
  val stat_packet = IO(Output(Vec(2, Valid(UInt(17.W))))) // a frame left for port i (bytes)
  val stat_dma_error = IO(Output(Bool()))
  val stat_bad_desc = IO(Output(Bool()))
  val stat_cache_range = IO(Output(Bool()))
  val cfg_mtu = IO(Input(Vec(2, UInt(16.W))))
  /** what each port's Fragmenter did with a frame */
  val stat_frag = IO(Output(Vec(2, Valid(new FragDone))))

  // ---- TCP engine commands (issue 17; only with the engine: the NIC without it is unchanged).
  // A descriptor with an opcode 0x20-0x2f and no MORE is a command: it leaves on
  // `m_toe_cmd` (NicToe's ToeCmdUnit) with its queue, ring index and port, consumed and its
  // completion reserved like a packet's; its queue is not scheduled again until the
  // command's completion (`s_toe_cpl`) has gone, so completions stay in ring order. Command
  // completions go after the ports' (host first) or alternate with them (FCFS).
  private val withToe = p.toeConnections > 0
  val m_toe_cmd = Option.when(withToe)(IO(Decoupled(new ToeQueueCmd(p.queueBits))))
  val s_toe_cpl = Option.when(withToe)(IO(Flipped(Decoupled(new CplReq(p.queueBits)))))
  val cfg_fcfs = Option.when(withToe)(IO(Input(Bool())))
  private val cmdPending = Option.when(withToe)(RegInit(0.U(nq.W)))
  // A command also waits for the completions of its queue's packets before it (they go
  // through the ports): packets given a slot and not yet completed, per queue; a queue whose
  // next descriptor is a command is not scheduled while it has any (cmdWait).
  private val qOut = Option.when(withToe)(RegInit(VecInit(Seq.fill(nq)(0.U((sb + 2).W)))))
  private val cmdWait = Option.when(withToe)(RegInit(0.U(nq.W)))
  private val cmdWaitSet = Option.when(withToe)(WireDefault(0.U(nq.W)))
  private val isCmd = Option.when(withToe)(Reg(Bool()))
  private val cmdDesc = Option.when(withToe)(Reg(new Descriptor))

  // ---- Per-port packet tables and RAM rings
  private val table = Seq.fill(2)(Mem(slots, new TxPacket(qb)))
  private val starts = Seq.fill(2)(Mem(slots, UInt(TxRamAddrBits.W))) // a copy, read for the slot after the head
  // Per slot, segments still being read and whether one failed: a memory and a bitmask
  // written at the few slots a cycle touches (as vectors of registers every slot had its own
  // write decode, which a simulator evaluates every cycle). A count never written since
  // reset reads 0, as the registers did.
  private val outstanding = Seq.fill(2)(Mem(slots, UInt(segW.W)))
  private val outstandingWritten = Seq.fill(2)(RegInit(0.U(slots.W)))
  private def outstandingOf(pt: Int, s: UInt): UInt = Mux(BitMask.bit(outstandingWritten(pt), s), outstanding(pt)(s), 0.U)
  private val failed = Seq.fill(2)(RegInit(0.U(slots.W)))
  // A packet given its slot this cycle, per port: the slot and its count of segments.
  private val allocated = Wire(Vec(2, Bool()))
  private val allocSlot = Wire(UInt(sb.W))
  private val allocSegs = Wire(UInt(segW.W))
  allocated := VecInit(false.B, false.B)
  allocSlot := DontCare
  allocSegs := DontCare
  private val head = Seq.fill(2)(RegInit(0.U((sb + 1).W)))
  private val tail = Seq.fill(2)(RegInit(0.U((sb + 1).W)))
  // Byte pointers into the port's TX RAM: in use is [ramTail, ramHead), wrapping at the end
  // (equal pointers with packets in flight: full).
  private val ramHead = Seq.fill(2)(RegInit(0.U(TxRamAddrBits.W)))
  private val ramTail = Seq.fill(2)(RegInit(0.U(TxRamAddrBits.W)))
  private val freed = Wire(Vec(2, Bool()))
  private def occupancy(pt: Int): UInt = head(pt) - tail(pt)

  // ---- Scheduler
  private object S extends ChiselEnum { val Idle, Walk, Alloc, Issue = Value }
  private object T extends ChiselEnum { val Idle, Stream, Cpl = Value }
  private val frag = Seq.fill(2)(Module(new Fragmenter(TxRamAddrBits)))
  private val state = RegInit(S.Idle)
  private val q = Reg(UInt(qb.W))
  private val port = Reg(UInt(1.W))
  private val j = Reg(UInt(availW.W)) // descriptors read so far
  private val segAddr = Reg(Vec(p.maxSegs, UInt(64.W)))
  private val segLen = Reg(Vec(p.maxSegs, UInt(16.W)))
  private val segCache = Reg(Vec(p.maxSegs, Bool())) // from the payload cache: addr is its offset
  private val insert = Reg(Bool()) // the packet is one CACHE_INSERT
  private val insertOff = Reg(UInt(32.W))
  private val outOfRange = Reg(Bool())
  private val total = Reg(UInt(21.W)) // up to maxSegs x 65535: never wraps, so no chain slips under maxTxFrame
  private val bad = Reg(Bool())
  private val csum = Reg(UInt(TxChecksum.CmdWidth.W))
  private val nsegs = Reg(UInt(segW.W))
  private val issueK = Reg(UInt(segW.W))
  private val issueOff = Reg(UInt(17.W))
  private val pktStart = Reg(UInt(TxRamAddrBits.W))
  private val pktSlot = Reg(UInt(sb.W))

  // A queue that could not go on waits until its cache or its port changes (a change in the
  // cycle it decides to wait counts too).
  private val waitAvail = Reg(Vec(nq, UInt(availW.W)))
  private val waiting = RegInit(VecInit(Seq.fill(nq)(false.B)))
  for (i <- 0 until nq) {
    when(queues.avail(i) =/= waitAvail(i) || freed(cfg_port(i))) { waiting(i) := false.B }
  }

  private val portFree = VecInit((0 until 2).map(pt => occupancy(pt) =/= slots.U))
  private val cand = VecInit((0 until nq).map { i =>
    cmdPending.zip(cmdWait).foldLeft(
      queues.cfg(i).enable && !queues.error(i) && queues.avail(i) =/= 0.U && queues.cq_room(i) && portFree(cfg_port(i)) && !waiting(i)
    )((c, b) => c && !b._1(i) && !b._2(i))
  })
  private val rr = RegInit(0.U(qb.W))
  private val order = (0 until nq).map(i => (rr + i.U(qb.W))(qb - 1, 0))
  private val pick = PriorityMux(order.map(i => cand(i)), order)

  queues.desc_rd.en := false.B
  queues.desc_rd.addr := 0.U
  // The fetcher's consumer index: the ring index of the first cached descriptor.
  private val consIdx = queues.cons
  private val db = log2Ceil(p.descCache)
  private val consLow = VecInit(queues.cons.map(_(db - 1, 0)))
  private val upperNext = RegInit(false.B)

  queues.consume.valid := false.B
  queues.consume.bits.queue := q
  queues.consume.bits.count := 0.U
  queues.reserve.valid := false.B
  queues.reserve.bits := q.pad(cb)
  queues.busy.valid := state =/= S.Idle
  queues.busy.bits := q

  m_rd_desc.valid := false.B
  m_cache.valid := false.B
  m_toe_cmd.foreach { c =>
    c.valid := false.B
    c.bits.queue := q
    c.bits.index := consIdx(q)
    c.bits.port := port
    c.bits.desc := cmdDesc.get
  }
  m_cache.bits.insert := insert
  m_cache.bits.host := segAddr(0)
  m_cache.bits.off := Mux(insert, insertOff, segAddr(issueK(segIx - 1, 0))(31, 0))
  m_cache.bits.len := segLen(issueK(segIx - 1, 0))
  m_cache.bits.port := port
  m_cache.bits.slot := pktSlot
  m_cache.bits.dst := (pktStart + issueOff)(TxRamAddrBits - 1, 0)
  stat_host_bytes.valid := m_rd_desc.fire
  stat_host_bytes.bits := m_rd_desc.bits.len
  m_rd_desc.bits.host_addr := segAddr(issueK(segIx - 1, 0))
  m_rd_desc.bits.ram_addr := Mux(port === 0.U, TxRamBase(0).U, TxRamBase(1).U) + pktStart + issueOff
  m_rd_desc.bits.len := segLen(issueK(segIx - 1, 0))
  m_rd_desc.bits.tag := Cat(Mux(port === 0.U, TagTxPort0.U(2.W), TagTxPort1.U(2.W)), pktSlot.pad(6))
  stat_bad_desc := false.B
  stat_cache_range := false.B

  private val d = Descriptor.decode(queues.desc_rd.data, upperNext)

  /** Pick the next packet's queue and read its first descriptor; or go idle. Used when
    * idle and in the last cycle of the previous packet, so packets follow each other
    * without an idle cycle. */
  private def startNext(): Unit = {
    state := S.Idle
    when(cand.asUInt.orR) {
      q := pick
      port := cfg_port(pick)
      rr := pick + 1.U
      j := 0.U
      total := 0.U
      bad := false.B
      insert := false.B
      outOfRange := false.B
      isCmd.foreach(_ := false.B)
      state := S.Walk
      val (w, u) = Descriptor.slot(pick, consLow(pick), p.descCache)
      queues.desc_rd.en := true.B
      queues.desc_rd.addr := w
      upperNext := u
    }
  }

  switch(state) {
    is(S.Idle) { startNext() }
    is(S.Walk) {
      // queues.desc_rd.data holds descriptor j of the chain.
      val isAppend = d.opcode === Descriptor.OpCacheAppend.U
      val isInsert = d.opcode === Descriptor.OpCacheInsert.U
      when(j < p.maxSegs.U) {
        segAddr(j(segIx - 1, 0)) := d.addr
        segLen(j(segIx - 1, 0)) := d.len
        segCache(j(segIx - 1, 0)) := isAppend
      }
      val sum = total + d.len
      total := sum
      // A TCP engine command: one descriptor (with MORE it is an unknown opcode: BAD_DESC).
      val toeOp = Option.when(withToe)(d.opcode(7, 4) === 2.U && j === 0.U && !d.more)
      when(j === 0.U) {
        csum := Cat(d.csumInsert, d.csumStart, d.csum)
        insert := isInsert
        insertOff := d.param
        isCmd.foreach(_ := toeOp.get)
        cmdDesc.foreach(_ := d)
      }
      // An insert is a chain of its own; an offset range past the cache's end is refused.
      val known = toeOp.foldLeft(d.opcode === Descriptor.OpData.U || isAppend || (isInsert && j === 0.U && !d.more))(_ || _)
      val thisBad = !known || d.flags(7, 2) =/= 0.U || j >= p.maxSegs.U
      bad := bad || thisBad
      val cacheEnd = Mux(isInsert, d.param.pad(64), d.addr) +& d.len
      outOfRange := outOfRange || ((isAppend || isInsert) && cacheEnd > cacheBytes.U)
      val n = j + 1.U
      when(!d.more) {
        nsegs := Mux(n > p.maxSegs.U, p.maxSegs.U, n)(segW - 1, 0)
        j := n
        state := S.Alloc
      }.elsewhen(n === queues.avail(q)) {
        when(queues.avail(q) === p.descCache.U) {
          // A chain longer than the cache can never complete: queues.consume it as one bad packet.
          bad := true.B
          nsegs := p.maxSegs.U
          j := n
          state := S.Alloc
        }.otherwise {
          waiting(q) := true.B
          waitAvail(q) := queues.avail(q)
          state := S.Idle
        }
      }.otherwise {
        j := n
        val (w, u) = Descriptor.slot(q, consLow(q) + n(db - 1, 0), p.descCache)
        queues.desc_rd.en := true.B
        queues.desc_rd.addr := w
        upperNext := u
      }
    }
    is(S.Alloc) {
      val command = isCmd.map(_ && !bad)
      val isBad = bad || command.foldLeft(!insert && (total === 0.U || total > p.maxTxFrame.U))((sz, c) => !c && sz)
      val refuse = isBad || outOfRange // takes a slot, no RAM, reads nothing
      val need = Cat(total(16, 5) + total(4, 0).orR, 0.U(5.W)) // whole 32-byte words
      val rh = Mux(port.asBool, ramHead(1), ramHead(0))
      val rt = Mux(port.asBool, ramTail(1), ramTail(0))
      val empty = Mux(port.asBool, occupancy(1), occupancy(0)) === 0.U
      val linear = rh > rt || empty // used region is [rt, rh) without wrap
      val atHead = Mux(linear, rh +& need <= ramBytes.U, rh +& need <= rt)
      val atZero = linear && need <= rt
      val start = Mux(atHead, rh, 0.U)
      val fits = refuse || insert || atHead || atZero
      m_toe_cmd.foreach(_.valid := command.get && qOut.get(q) === 0.U)
      def allocPacket(): Unit = {
        when(!fits) {
          // A packet of this port freed in this very cycle is the change it would wait for:
          // waiting then would never end (the port empties, the cache stays full).
          waiting(q) := !freed(port)
          waitAvail(q) := queues.avail(q)
          state := S.Idle
        }.otherwise {
          val slot = Mux(port.asBool, head(1), head(0))(sb - 1, 0)
          allocSlot := slot
          allocSegs := Mux(refuse, 0.U, PopCount((0 until p.maxSegs).map(k => k.U < nsegs && segLen(k) =/= 0.U)))
          val rec = Wire(new TxPacket(qb))
          rec.queue := q
          rec.index := consIdx(q)
          rec.len := total(16, 0)
          rec.start := Mux(refuse || insert, rh, start)(TxRamAddrBits - 1, 0)
          rec.status := Mux(isBad, CplStatus.BadDesc.U, Mux(outOfRange, CplStatus.CacheRange.U, CplStatus.Ok.U))
          rec.csum := csum
          rec.send := !refuse && !insert
          for (pt <- 0 until 2) {
            when(port === pt.U) {
              table(pt).write(slot, rec)
              starts(pt).write(slot, rec.start)
              allocated(pt) := true.B
              head(pt) := head(pt) + 1.U
              when(rec.send) { ramHead(pt) := (rec.start +& need)(TxRamAddrBits - 1, 0) }
            }
          }
          queues.consume.valid := true.B
          queues.consume.bits.count := j
          queues.reserve.valid := true.B
          stat_bad_desc := isBad
          stat_cache_range := !isBad && outOfRange
          pktStart := rec.start
          pktSlot := slot
          issueK := 0.U
          issueOff := 0.U
          state := Mux(refuse, S.Idle, S.Issue)
        }
      }
      command match {
        case Some(c) =>
          when(c) {
            // To the command unit once the queue's packets before it have completed (else
            // the queue waits for them) and the unit takes it (else the queue comes round again).
            when(qOut.get(q) =/= 0.U) {
              cmdWaitSet.get := UIntToOH(q, nq)
            }.elsewhen(m_toe_cmd.get.ready) {
              queues.consume.valid := true.B
              queues.consume.bits.count := j
              queues.reserve.valid := true.B
            }
            state := S.Idle
          }.otherwise { allocPacket() }
        case None => allocPacket()
      }
    }
    is(S.Issue) {
      val last = issueK + 1.U >= nsegs
      val skip = segLen(issueK(segIx - 1, 0)) === 0.U
      val fromCache = insert || segCache(issueK(segIx - 1, 0))
      m_rd_desc.valid := !skip && !fromCache
      m_cache.valid := !skip && fromCache
      when(Mux(fromCache, m_cache.ready, m_rd_desc.ready) || skip) {
        issueOff := issueOff + segLen(issueK(segIx - 1, 0))
        issueK := issueK + 1.U
        when(last) { startNext() }
      }
    }
  }

  // ---- Segments done: DMA read statuses and payload cache commands, any order (both may
  // count off the same slot in one cycle).
  for (pt <- 0 until 2) {
    val st = s_rd_status(pt)
    val cd = s_cache_done
    val dmaHit = st.valid
    val cacheHit = cd.valid && cd.bits.port === pt.U
    // Each slot written once: a segment's end wins over the allocation of its slot, as the
    // later connection did when these were registers.
    val sameSlot = st.bits.slot === cd.bits.slot
    val dmaWr = dmaHit
    val cacheWr = cacheHit && !(dmaHit && sameSlot)
    val allocWr = allocated(pt) && !(dmaHit && st.bits.slot === allocSlot) && !(cacheHit && cd.bits.slot === allocSlot)
    when(dmaWr) {
      outstanding(pt).write(st.bits.slot,
        outstandingOf(pt, st.bits.slot) - (true.B.asUInt +& (cacheHit && sameSlot).asUInt))
    }
    when(cacheWr) { outstanding(pt).write(cd.bits.slot, outstandingOf(pt, cd.bits.slot) - (false.B.asUInt +& true.B.asUInt)) }
    when(allocWr) { outstanding(pt).write(allocSlot, allocSegs) }
    def oh(s: UInt, en: Bool): UInt = BitMask.only(s, slots, en)
    outstandingWritten(pt) := outstandingWritten(pt) | oh(st.bits.slot, dmaWr) | oh(cd.bits.slot, cacheWr) |
      oh(allocSlot, allocWr)
    failed(pt) := (failed(pt) & ~oh(allocSlot, allocated(pt))) | oh(st.bits.slot, dmaHit && st.bits.error =/= 0.U) |
      oh(cd.bits.slot, cacheHit && cd.bits.error)
  }

  // ---- Per-port streamers
  private val cplArb = Module(new RRArbiter(new CplReq(p.queueBits), 2))
  s_toe_cpl match {
    case Some(toe) =>
      val host = cplArb.io.out
      val lastToe = RegInit(false.B)
      val pickToe = toe.valid && (!host.valid || (cfg_fcfs.get && !lastToe))
      m_cpl.valid := host.valid || toe.valid
      m_cpl.bits := Mux(pickToe, toe.bits, host.bits)
      host.ready := m_cpl.ready && !pickToe
      toe.ready := m_cpl.ready && pickToe
      when(m_cpl.fire) { lastToe := pickToe }
      val set = Mux(m_toe_cmd.get.fire, UIntToOH(q, nq), 0.U(nq.W))
      val clr = Mux(toe.fire, UIntToOH(toe.bits.queue(qb - 1, 0), nq), 0.U(nq.W))
      cmdPending.get := (cmdPending.get | set) & ~clr
      val hostDone = host.fire
      for (i <- 0 until nq) {
        val inc = allocated.asUInt.orR && q === i.U
        val dec = hostDone && host.bits.queue === i.U
        qOut.get(i) := qOut.get(i) + inc.asUInt - dec.asUInt
      }
      val drained = VecInit(qOut.get.map(_ === 0.U)).asUInt
      cmdWait.get := (cmdWait.get | cmdWaitSet.get) & ~drained
    case None => m_cpl <> cplArb.io.out
  }
  private val sent = Wire(Vec(2, Valid(UInt(17.W))))
  private val dmaErr = Wire(Vec(2, Bool()))
  for (pt <- 0 until 2) {
    val hs = tail(pt)(sb - 1, 0)
    val rec = table(pt)(hs)
    val ready = occupancy(pt) =/= 0.U && outstandingOf(pt, hs) === 0.U
    val st = RegInit(T.Idle)
    val status = Reg(UInt(8.W))
    val fr = frag(pt)
    ram_rd(pt).en := fr.ram_rd.en
    ram_rd(pt).addr := fr.ram_rd.addr
    fr.ram_rd.data := ram_rd(pt).data
    m_axis(pt) <> fr.m_axis
    val ok = rec.send && !BitMask.bit(failed(pt), hs)
    // The frame goes to the Fragmenter from Idle (it is idle whenever this streamer is)
    fr.s_cmd.valid := st === T.Idle && ready && ok
    fr.s_cmd.bits.word := rec.start(TxRamAddrBits - 1, 5)
    fr.s_cmd.bits.len := rec.len
    fr.s_cmd.bits.mtu := cfg_mtu(pt)
    fr.s_cmd.bits.csum := rec.csum.asTypeOf(new offnic.offload.TxChecksumCmd)
    stat_frag(pt) := fr.m_done
    // Completions wait in a small queue, so the streamer moves on to the next packet.
    val cplQ = Module(new Queue(new CplReq(p.queueBits), 4))
    cplArb.io.in(pt) <> cplQ.io.deq
    val c = cplQ.io.enq
    c.valid := st === T.Cpl
    c.bits.rx := false.B
    c.bits.queue := rec.queue
    c.bits.index := rec.index
    c.bits.len := rec.len
    c.bits.status := status
    c.bits.flags := pt.U
    c.bits.hash := 0.U
    c.bits.csum := 0.U
    c.bits.rssType := 0.U
    c.bits.extra := 0.U
    freed(pt) := false.B
    dmaErr(pt) := false.B
    sent(pt).valid := false.B
    sent(pt).bits := rec.len
    switch(st) {
      is(T.Idle) {
        when(ready && (!ok || fr.s_cmd.ready)) {
          status := Mux(rec.status =/= CplStatus.Ok.U, rec.status, Mux(BitMask.bit(failed(pt), hs), CplStatus.DmaError.U, 0.U))
          st := Mux(ok, T.Stream, T.Cpl)
        }
      }
      is(T.Stream) {
        // Every read is issued when the Fragmenter completes: the data follows in order,
        // the completion may go ahead.
        when(fr.m_done.valid) {
          status := VecInit(Seq(CplStatus.Ok, CplStatus.FragDf, CplStatus.FragOptions, CplStatus.FragMalformed)
            .map(_.U(8.W)))(fr.m_done.bits.status(1, 0))
          st := T.Cpl
        }
      }
      is(T.Cpl) {
        when(c.ready) {
          st := T.Idle
          tail(pt) := tail(pt) + 1.U
          freed(pt) := true.B
          sent(pt).valid := status === CplStatus.Ok.U && rec.send
          dmaErr(pt) := status === CplStatus.DmaError.U
          // The RAM up to this packet's end is free; the next packet may start at 0.
          val nextStart = starts(pt)((hs + 1.U)(sb - 1, 0))
          val last = occupancy(pt) === 1.U
          ramTail(pt) := Mux(last, ramHead(pt), nextStart)
        }
      }
    }
  }
  stat_packet := sent
  stat_dma_error := dmaErr.asUInt.orR // the two streamers never complete in the same cycle (one arbiter)
}

/** A TCP engine command taken from a TX queue: where its completion goes, and its descriptor. */
class ToeQueueCmd(queueBits: Int) extends Bundle {
  val queue = UInt(queueBits.W)
  val index = UInt(16.W)
  val port = UInt(1.W)
  val desc = new Descriptor
}

/** A DMA read status routed to a port: the packet slot it was for (tag bits 4:0), and its
  * DmaError code. */
class SegDone(slotBits: Int) extends Bundle {
  val slot = UInt(slotBits.W)
  val error = UInt(4.W)
}
