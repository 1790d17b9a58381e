package offnic.nic

import chisel3._
import chisel3.util._
import offnic.axis.{AxisArbiter, AxisIO, AxisParams, ArbiterMode}
import offnic.offload.{Reassembler, ReasmAction, ReasmStat, RssHash, RssHashType, RxChecksum}
import offnic.pcie.{DmaDesc, DmaRamWrite, DmaStatus}

/** RSS configuration from the `rss` register block. */
class RssCfg(queueBits: Int) extends Bundle {
  val enable = Bool()
  val ipv4 = Bool()
  val ipv6 = Bool()
  val tcp = Bool()
  val udp = Bool()
  val key = UInt(320.W)
  val indirWrite = Valid(new Bundle {
    val index = UInt(16.W)
    val queue = UInt(8.W)
  })
}

/** The reassembler's configuration from the `reasm` register block. */
class ReasmCfg(bufIdBits: Int) extends Bundle {
  val enable = Bool()
  val timeoutUs = UInt(24.W)
  val tickCycles = UInt(16.W)
  val maxFrags = UInt(8.W)
  val maxBytes = UInt(24.W)
  val hashKey = UInt(119.W)
  val post = Valid(new Bundle {
    val id = UInt(bufIdBits.W)
    val addr = UInt(64.W)
  })
}

/** The receive side: frames from both ports, in turns, through RX checksum and RSS into
  * the RX RAM, then each to its queue's next buffer in host memory by DMA write, followed
  * by its completion.
  *
  * RX RAM: a byte ring; a frame starts on a 32-byte boundary where `maxRxFrame` bytes are
  * free (the writer waits otherwise, and the ports' FIFOs fill and drop whole frames, counted
  * there). A frame that runs past `maxRxFrame` is cut there and completes TOO_LONG. Space is
  * released in frame order: a dropped frame at once, a delivered one when the DMA engine
  * reports its write done (write statuses come in order).
  *
  * Dispatch, one frame at a time: the queue is the RSS indirection table's choice (RSS on,
  * frame hashed) or the port's default queue. A disabled queue, a ring with no buffer
  * posted, or a full completion queue drops the frame (counted); buffers posted but not yet
  * fetched are waited for. Otherwise it takes the descriptor; a
  * frame longer than the buffer completes TOO_LONG without a write. The completion request
  * follows the data write into the DMA engine, so the host sees the data first.
  *
  * Address filter: each port's frames first pass its [[RxFilter]] (station address,
  * broadcast, multicast hash, all-multicast, promiscuous); rejected frames are dropped and
  * counted there, another station's frames in promiscuous mode carry the `RxMark.Foreign`
  * mark in `tuser`, and the reassembler treats them as non-fragments.
  *
  * IPv4 fragments (docs/frag.md): the [[Reassembler]] after RSS gives each frame a verdict.
  * Host: as above. Drop: released. Place: the verdict's part of the frame is written to
  * its reassembly buffer (no descriptor taken); the fragment that completes a datagram is
  * followed by one completion for the whole datagram on the frame's queue's CQ (flags bit
  * 3; `index` the buffer id, `len` the frame length, `csum` the IP payload's sum, rss_type
  * bits 5:4 the ECN bits and 6 DF for the driver's header fix-up, byte 15 bits 7:1 where
  * the frame starts in the buffer).
  *
  * A completed datagram is never lost for want of room: when its CQ is full (or earlier
  * datagrams of that queue still wait), its last fragment is written all the same and its
  * completion is parked (`cpl_parked`) in a store with room for one per reassembly buffer,
  * holding the buffer, until the CQ has room; parked completions go out in order per
  * queue, before any later frame of that queue (host-path frames meanwhile count
  * `drop_cq_full`). Frames keep flowing: while completions are parked their buffers stay
  * out of the pool, and when it is empty new datagrams take the host path. A datagram
  * whose queue is disabled when it completes (or while it is parked) is dropped and its
  * buffer returned (`cpl_dropped`).
  */
class RxEngine(val p: NicParams) extends Module {
  import NicParams._
  private val nq = p.rxQueues
  private val qb = log2Ceil(nq)
  private val cb = log2Ceil(p.cqs)
  private val rssQueueBits = 8
  private val axisP = AxisParams(32)

  val s_axis = IO(Vec(2, Flipped(new AxisIO(axisP))))
  val queues = IO(new QueueSide(nq, p))
  val ram_wr = IO(new DmaRamWrite(16))
  val m_wr_desc = IO(Decoupled(new DmaDesc(RamAddrBits)))
  val s_wr_status = IO(Flipped(Valid(new DmaStatus)))
  val m_cpl = IO(Decoupled(new CplReq(p.queueBits)))
  val cfg_csum_start = IO(Input(UInt(16.W)))
  val cfg_default_queue = IO(Input(Vec(2, UInt(8.W))))
  val cfg_rss = IO(Input(new RssCfg(rssQueueBits)))
  val stat_packet = IO(Output(Valid(UInt(16.W))))
  val stat_drop_disabled = IO(Output(Bool()))
  val stat_drop_no_desc = IO(Output(Bool()))
  val stat_drop_cq_full = IO(Output(Bool()))
  val stat_too_long = IO(Output(Bool()))
  val stat_dma_error = IO(Output(Bool()))
  val cfg_reasm = IO(Input(new ReasmCfg(log2Ceil(p.reasmBuffers))))
  /** The reassembler's counters (ReasmStat order), then cpl_dropped, cpl_parked; its open
    * contexts, bytes held, buffers in the pool, completions parked now. */
  val reasm_counters = IO(Output(Vec(ReasmStat.maxId + 2, UInt(32.W))))
  val reasm_status = IO(Output(Vec(4, UInt(32.W))))
  /** Each port's address filter settings, and its drops and foreign (promiscuous) frames. */
  val cfg_filter = IO(Input(Vec(2, new RxFilterCfg)))
  val stat_filter_drop = IO(Output(Vec(2, Bool())))
  val stat_filter_foreign = IO(Output(Vec(2, Bool())))

  // ---- Ports -> address filters -> arbiter -> checksum -> RSS
  private val filters = Seq.tabulate(2) { i =>
    val f = Module(new RxFilter(axisP))
    f.s_axis <> s_axis(i)
    f.cfg := cfg_filter(i)
    stat_filter_drop(i) := f.stat_drop
    stat_filter_foreign(i) := f.stat_foreign
    f
  }
  private val arb = Module(new AxisArbiter(filters.head.outP, 2, ArbiterMode.RoundRobin, tagSource = true))
  arb.s_axis.zip(filters).foreach { case (a, f) => a <> f.m_axis }
  private val csum = Module(new RxChecksum(arb.out))
  /** With the TCP engine (issue 17): every frame leaves the arbiter for the engine's lookup
    * (`m_axis_steer`) and only the host's come back (`s_axis_steer`) into the checksum. */
  val m_axis_steer = Option.when(p.toeConnections > 0)(IO(new AxisIO(arb.out)))
  val s_axis_steer = Option.when(p.toeConnections > 0)(IO(Flipped(new AxisIO(arb.out))))
  (m_axis_steer, s_axis_steer) match {
    case (Some(out), Some(back)) =>
      out <> arb.m_axis
      csum.s_axis <> back
    case _ =>
      csum.s_axis <> arb.m_axis
  }
  csum.cfg_start := cfg_csum_start
  private val rss = Module(new RssHash(arb.out, tableSize = 128, queueBits = rssQueueBits))
  rss.s_axis <> csum.m_axis
  rss.cfg_key := cfg_rss.key
  rss.cfg_enable_ipv4 := cfg_rss.ipv4
  rss.cfg_enable_ipv6 := cfg_rss.ipv6
  rss.cfg_enable_tcp := cfg_rss.tcp
  rss.cfg_enable_udp := cfg_rss.udp
  rss.cfg_indir_wr_en := cfg_rss.indirWrite.valid && cfg_rss.indirWrite.bits.index(15, 7) === 0.U
  rss.cfg_indir_addr := cfg_rss.indirWrite.bits.index(6, 0)
  rss.cfg_indir_data := cfg_rss.indirWrite.bits.queue

  // ---- Reassembly verdicts
  private val reasm = Module(new Reassembler(p.reasmContexts, p.reasmBuffers, 256, arb.out))
  reasm.s_axis <> rss.m_axis
  reasm.cfg_enable := cfg_reasm.enable
  reasm.cfg_timeout_us := cfg_reasm.timeoutUs
  reasm.cfg_tick_cycles := cfg_reasm.tickCycles
  reasm.cfg_max_frags := cfg_reasm.maxFrags
  reasm.cfg_max_bytes := cfg_reasm.maxBytes
  reasm.cfg_hash_key := cfg_reasm.hashKey
  reasm.buf_post.valid := cfg_reasm.post.valid
  reasm.buf_post.bits.id := cfg_reasm.post.bits.id
  reasm.buf_post.bits.addr := cfg_reasm.post.bits.addr
  private val cplDropped = RegInit(0.U(32.W))
  private val cplParked = RegInit(0.U(32.W))
  reasm_counters := VecInit(reasm.counters ++ Seq(cplDropped, cplParked))

  // ---- Parked completions of reassembled datagrams (CQ full): one per buffer at most, so
  // the store never overflows while the driver posts each id once. Not-yet-due entries
  // rotate (head to tail) so a full CQ never blocks another queue's; per-queue sequence
  // numbers keep each queue's order.
  class Parked extends Bundle {
    val cpl = new CplReq(p.queueBits)
    val seq = UInt(log2Ceil(p.reasmBuffers + 1).W)
  }
  private val parkDepth = p.reasmBuffers
  private val park = Module(new Queue(new Parked, parkDepth, pipe = true, useSyncReadMem = true))
  private val parkIn = RegInit(VecInit(Seq.fill(nq)(0.U(log2Ceil(parkDepth + 1).W))))
  private val parkOut = RegInit(VecInit(Seq.fill(nq)(0.U(log2Ceil(parkDepth + 1).W))))
  private val parked = VecInit((0 until nq).map(q => parkIn(q) =/= parkOut(q)))
  reasm_status := VecInit(reasm.status.open.pad(32), reasm.status.bytes.pad(32), reasm.status.pool.pad(32),
    park.io.count.pad(32))

  // ---- Writer: frames into the RX RAM ring
  class Frame extends Bundle {
    val port = UInt(1.W)
    val start = UInt(16.W)
    val len = UInt(17.W)
    val cut = Bool()
  }
  private val frames = Module(new Queue(new Frame, 16))
  private val ramHead = RegInit(0.U(16.W))
  private val ramTail = RegInit(0.U(16.W))
  private val inRam = RegInit(0.U(6.W)) // frames allocated and not released
  private val need = p.maxRxFrame.U(17.W)
  private val linear = ramHead > ramTail || inRam === 0.U
  private val atHead = Mux(linear, ramHead +& need <= RegionBytes.U, ramHead +& need <= ramTail)
  private val atZero = linear && need <= ramTail
  private val room = (atHead || atZero) && inRam =/= 63.U

  private val inFrame = RegInit(false.B)
  private val start = Reg(UInt(16.W))
  private val beats = Reg(UInt(10.W))
  private val len = Reg(UInt(17.W))
  private val cut = Reg(Bool())
  private val in = reasm.m_axis
  private val maxBeats = p.maxRxFrame / 32
  in.tready := (inFrame || room) && (!in.tlast || frames.io.enq.ready)
  private val take = in.fire
  private val beatStart = Mux(inFrame, start, Mux(atHead, ramHead, 0.U))
  private val beatIdx = Mux(inFrame, beats, 0.U)
  private val beatLen = Mux(in.tlast, PopCount(in.tkeep), 32.U)
  private val lenNow = Mux(inFrame, len, 0.U) + beatLen
  private val overflow = beatIdx >= maxBeats.U
  ram_wr.en := take && !overflow
  ram_wr.addr := (beatStart >> 5) + beatIdx
  ram_wr.data := in.tdata
  // The frame's bytes only. (A constant all-ones strobe also works in principle, but firtool
  // 1.155 then emits the RAM's byte mask as 32'h1 when no other RAM of its size shares the
  // memory module: one byte per word written.)
  ram_wr.strb := in.tkeep
  frames.io.enq.valid := take && in.tlast
  frames.io.enq.bits.port := in.tid.get
  frames.io.enq.bits.start := beatStart
  frames.io.enq.bits.len := lenNow
  frames.io.enq.bits.cut := (inFrame && cut) || overflow
  private val released = Wire(Bool())
  inRam := inRam + (take && !inFrame).asUInt - released.asUInt
  when(take) {
    inFrame := !in.tlast
    start := beatStart
    beats := Mux(overflow, beatIdx, beatIdx + 1.U)
    len := Mux(lenNow > 65535.U, 65535.U, lenNow)
    cut := (inFrame && cut) || overflow
    when(in.tlast) {
      val used = Cat((Mux(overflow || (inFrame && cut), maxBeats.U, beatIdx + 1.U)), 0.U(5.W))
      ramHead := (beatStart +& used)(15, 0)
    }
  }

  // ---- Dispatcher
  private object D extends ChiselEnum { val Idle, Desc, Data, Cpl = Value }
  private val ds = RegInit(D.Idle)
  private val cur = Reg(new Frame)
  private val curQ = Reg(UInt(qb.W))
  private val curIdx = Reg(UInt(16.W))
  private val curCsum = Reg(UInt(16.W))
  private val curHash = Reg(UInt(32.W))
  private val curType = Reg(UInt(RssHashType.Width.W))
  private val curStatus = Reg(UInt(8.W))
  private val descHalf = Reg(Bool())
  private val vd = reasm.m_verdict
  private val curPlace = Reg(Bool())
  private val curComplete = Reg(Bool())
  private val curPark = Reg(Bool())
  private val curV = Reg(chiselTypeOf(vd.bits))
  class Release extends Bundle {
    val end = UInt(16.W)
    val afterWrite = Bool()
  }
  private val releases = Module(new Queue(new Release, 32))

  private val rssRes = rss.m_axis_rss.tdata
  private val rType = rssRes(RssHashType.Width - 1, 0)
  private val rHash = rssRes(RssHashType.Width + 31, RssHashType.Width)
  private val rQueue = rssRes(RssHashType.Width + 32 + rssQueueBits - 1, RssHashType.Width + 32)
  private val hd = frames.io.deq.bits
  private val useRss = cfg_rss.enable && rType =/= 0.U
  // A queue number beyond the RX queues (a bad table entry or register) counts as disabled.
  private val qFull = Mux(useRss, rQueue, cfg_default_queue(hd.port))
  private val qSel = qFull(qb - 1, 0)
  private val qExists = qFull < nq.U
  private val qOn = qExists && queues.cfg(qSel).enable && !queues.error(qSel)
  // The host has posted buffers the fetcher has not brought in yet: wait for them (about
  // one host read latency) rather than drop; the ports' FIFOs absorb the pause.
  private val fetchPending = qOn && queues.avail(qSel) === 0.U && queues.cfg(qSel).prod =/= queues.cons(qSel)
  private val vHost = vd.bits.action === ReasmAction.Host.U
  private val vPlace = vd.bits.action === ReasmAction.Place.U
  private val vComplete = vPlace && vd.bits.complete
  // The parked head acts (is completed or dropped) in a cycle of its own, before any frame.
  private val cplQ = Module(new Queue(new CplReq(p.queueBits), 4))
  private val ph = park.io.deq.bits
  private val phQ = ph.cpl.queue(qb - 1, 0)
  private val phOn = queues.cfg(phQ).enable && !queues.error(phQ)
  private val phDue = park.io.deq.valid && ph.seq === parkOut(phQ) && (!phOn || queues.cq_room(phQ))
  private val parkAct = phDue && ds === D.Idle && cplQ.io.enq.ready
  private val ready = frames.io.deq.valid && csum.m_axis_csum.tvalid && rss.m_axis_rss.tvalid && vd.valid &&
    releases.io.enq.ready && ds === D.Idle && !(vHost && fetchPending) && !parkAct
  // Parked completions of a queue go before its later frames: they own the CQ's room.
  private val cqRoom = queues.cq_room(qSel) && !parked(qSel)
  private val dropDisabled = vHost && !qOn
  private val dropNoDesc = vHost && qOn && queues.avail(qSel) === 0.U
  private val dropCqFull = vHost && qOn && queues.avail(qSel) =/= 0.U && !cqRoom
  // A reassembled datagram: its queue off drops it (buffer back to the pool); no room parks
  // its completion (the store full too, only if the driver posted an id twice: dropped).
  private val parkNow = vComplete && qOn && !cqRoom
  private val lost = vComplete && (!qOn || (parkNow && park.io.count === parkDepth.U))
  private val drop = dropDisabled || dropNoDesc || dropCqFull || (!vHost && !vPlace) || lost
  private val hdWords = Mux(hd.cut, maxBeats.U, hd.len(13, 5) +& (hd.len(4, 0) =/= 0.U)) // uncut: len <= maxRxFrame
  private val hdEnd = hd.start + Cat(hdWords, 0.U(5.W))

  frames.io.deq.ready := ready
  vd.ready := ready
  private val parkDrop = parkAct && !phOn
  reasm.buf_return.valid := (ready && lost) || parkDrop
  reasm.buf_return.bits := Mux(parkDrop, ph.cpl.index(log2Ceil(p.reasmBuffers) - 1, 0), vd.bits.bufId)
  when((ready && lost) || parkDrop) { cplDropped := cplDropped + 1.U }
  when(ready && parkNow && !lost) { cplParked := cplParked + 1.U }
  csum.m_axis_csum.tready := ready
  rss.m_axis_rss.tready := ready
  releases.io.enq.valid := false.B
  releases.io.enq.bits.end := hdEnd
  releases.io.enq.bits.afterWrite := false.B
  queues.consume.valid := false.B
  queues.consume.bits.queue := qSel
  queues.consume.bits.count := 1.U
  queues.reserve.valid := parkAct && phOn
  queues.reserve.bits := p.txQueues.U + Mux(parkAct, phQ, qSel)
  // Also in the cycle it takes a descriptor (not while it waits for one: the refill of a
  // re-enabled queue must be able to happen then), so the fetcher does not refill that queue
  // under it.
  queues.busy.valid := ds =/= D.Idle || ready
  queues.busy.bits := Mux(ds === D.Idle, qSel, curQ)
  queues.desc_rd.en := false.B
  val (dw, du) = Descriptor.slot(qSel, queues.cons(qSel), p.descCache)
  queues.desc_rd.addr := dw
  stat_drop_disabled := ready && dropDisabled
  stat_drop_no_desc := ready && dropNoDesc
  stat_drop_cq_full := ready && dropCqFull

  private val endReg = Reg(UInt(16.W))
  when(ready) {
    cur := hd
    curQ := qSel
    curIdx := queues.cons(qSel)
    curCsum := csum.m_axis_csum.tdata
    curHash := rHash
    curType := rType
    descHalf := du
    endReg := hdEnd
    curPlace := vPlace
    curComplete := vComplete && !parkNow
    curPark := parkNow && !lost
    curV := vd.bits
    when(drop) {
      releases.io.enq.valid := true.B
    }.elsewhen(vPlace) {
      // Into the reassembly buffer: no descriptor; a CQ slot for the datagram's completion.
      queues.reserve.valid := vComplete && !parkNow
      ds := D.Data
    }.otherwise {
      queues.desc_rd.en := true.B
      queues.consume.valid := true.B
      queues.reserve.valid := true.B
      ds := D.Desc
    }
  }

  private val d = Descriptor.decode(queues.desc_rd.data, descHalf)
  private val bufAddr = Reg(UInt(64.W))
  m_wr_desc.valid := ds === D.Data && cplQ.io.enq.ready && (!curPark || park.io.count =/= parkDepth.U)
  m_wr_desc.bits.host_addr := Mux(curPlace, curV.hostAddr, bufAddr)
  m_wr_desc.bits.ram_addr := RxRamBase.U + cur.start + Mux(curPlace, curV.ramOffset, 0.U)
  m_wr_desc.bits.len := Mux(curPlace, curV.len, cur.len)
  m_wr_desc.bits.tag := 0.U
  stat_too_long := false.B
  switch(ds) {
    is(D.Desc) {
      bufAddr := d.addr
      // An RX descriptor is a plain buffer: opcode, flags and bytes 12-15 must be 0.
      val badDesc = d.opcode =/= 0.U || d.flags =/= 0.U || d.param =/= 0.U
      val tooLong = cur.cut || cur.len > d.len
      curStatus := Mux(badDesc, CplStatus.BadDesc.U, Mux(tooLong, CplStatus.TooLong.U, CplStatus.Ok.U))
      stat_too_long := tooLong && !badDesc
      when(tooLong || badDesc) {
        releases.io.enq.valid := true.B
        releases.io.enq.bits.end := endReg
        ds := D.Cpl
      }.otherwise { ds := D.Data }
    }
    is(D.Data) {
      // The write and its completion are handed on in the same cycle (the completion
      // queue then holds the completion until the completion writer takes it: always
      // after the write has entered the DMA engine).
      when(m_wr_desc.fire) {
        releases.io.enq.valid := true.B
        releases.io.enq.bits.end := endReg
        releases.io.enq.bits.afterWrite := true.B
        ds := D.Idle
      }
    }
    is(D.Cpl) {
      when(cplQ.io.enq.ready) { ds := D.Idle }
    }
  }
  m_cpl <> cplQ.io.deq
  private val cplOut = cplQ.io.enq
  private val cplNew = Wire(new CplReq(p.queueBits))
  cplOut.valid := ds === D.Cpl || (m_wr_desc.fire && (!curPlace || curComplete)) || (parkAct && phOn)
  cplOut.bits := Mux(parkAct, ph.cpl, cplNew)
  private val cplNewBits = cplNew
  cplNewBits.rx := true.B
  cplNewBits.queue := curQ
  cplNewBits.index := Mux(curPlace, curV.bufId, curIdx)
  cplNewBits.len := Mux(curPlace, curV.frameLen, Mux(cur.len > 65535.U, 65535.U, cur.len))
  cplNewBits.status := Mux(curPlace, CplStatus.Ok.U, curStatus)
  cplNewBits.flags := Cat(curPlace, curType =/= 0.U, true.B, cur.port)
  cplNewBits.hash := curHash
  cplNewBits.csum := Mux(curPlace, curV.csum, curCsum)
  cplNewBits.rssType := Mux(curPlace, Cat(0.U(1.W), curV.df, curV.ecn, curType), curType)
  cplNewBits.extra := Mux(curPlace, curV.start, 0.U)
  stat_packet.valid := cplOut.fire && Mux(parkAct, true.B, curPlace || curStatus === CplStatus.Ok.U)
  stat_packet.bits := Mux(parkAct, ph.cpl.len, Mux(curPlace, curV.frameLen, cur.len))(15, 0)

  // A parked datagram's completion enters the store as its last write enters the DMA
  // engine (in D.Data: the store never rotates then); a head not due moves to the tail.
  private val parkEnq = m_wr_desc.fire && curPark
  private val rotate = park.io.deq.valid && !phDue && ds =/= D.Data
  park.io.enq.valid := parkEnq || rotate
  park.io.enq.bits.cpl := Mux(ds === D.Data, cplNew, ph.cpl)
  park.io.enq.bits.seq := Mux(ds === D.Data, parkIn(curQ), ph.seq)
  park.io.deq.ready := parkAct || rotate
  when(parkEnq) { parkIn(curQ) := parkIn(curQ) + 1.U }
  when(parkAct) { parkOut(phQ) := parkOut(phQ) + 1.U }

  // ---- Release RX RAM in frame order
  private val credits = RegInit(0.U(7.W))
  private val rel = releases.io.deq
  private val canRelease = rel.valid && (!rel.bits.afterWrite || credits =/= 0.U)
  rel.ready := canRelease
  released := canRelease
  when(canRelease) { ramTail := rel.bits.end }
  credits := credits + s_wr_status.valid.asUInt - (canRelease && rel.bits.afterWrite).asUInt
  stat_dma_error := s_wr_status.valid && s_wr_status.bits.error =/= 0.U
}
