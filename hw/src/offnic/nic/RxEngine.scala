package offnic.nic

import chisel3._
import chisel3.util._
import offnic.axis.{AxisArbiter, AxisIO, AxisParams, ArbiterMode}
import offnic.offload.{RssHash, RssHashType, RxChecksum}
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

  // ---- Ports -> checksum -> RSS
  private val arb = Module(new AxisArbiter(axisP, 2, ArbiterMode.RoundRobin, tagSource = true))
  arb.s_axis <> s_axis
  private val csum = Module(new RxChecksum(arb.out))
  csum.s_axis <> arb.m_axis
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
  private val in = rss.m_axis
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
  private val ready = frames.io.deq.valid && csum.m_axis_csum.tvalid && rss.m_axis_rss.tvalid &&
    releases.io.enq.ready && ds === D.Idle && !fetchPending
  private val dropDisabled = !qOn
  private val dropNoDesc = qOn && queues.avail(qSel) === 0.U
  private val dropCqFull = qOn && queues.avail(qSel) =/= 0.U && !queues.cq_room(qSel)
  private val drop = dropDisabled || dropNoDesc || dropCqFull
  private val hdWords = Mux(hd.cut, maxBeats.U, hd.len(13, 5) +& (hd.len(4, 0) =/= 0.U)) // uncut: len <= maxRxFrame
  private val hdEnd = hd.start + Cat(hdWords, 0.U(5.W))

  frames.io.deq.ready := ready
  csum.m_axis_csum.tready := ready
  rss.m_axis_rss.tready := ready
  releases.io.enq.valid := false.B
  releases.io.enq.bits.end := hdEnd
  releases.io.enq.bits.afterWrite := false.B
  queues.consume.valid := false.B
  queues.consume.bits.queue := qSel
  queues.consume.bits.count := 1.U
  queues.reserve.valid := false.B
  queues.reserve.bits := p.txQueues.U + qSel
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
    when(drop) {
      releases.io.enq.valid := true.B
    }.otherwise {
      queues.desc_rd.en := true.B
      queues.consume.valid := true.B
      queues.reserve.valid := true.B
      ds := D.Desc
    }
  }

  private val d = Descriptor.decode(queues.desc_rd.data, descHalf)
  private val bufAddr = Reg(UInt(64.W))
  private val cplQ = Module(new Queue(new CplReq(p.queueBits), 4))
  m_wr_desc.valid := ds === D.Data && cplQ.io.enq.ready
  m_wr_desc.bits.host_addr := bufAddr
  m_wr_desc.bits.ram_addr := RxRamBase.U + cur.start
  m_wr_desc.bits.len := cur.len
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
  cplOut.valid := ds === D.Cpl || m_wr_desc.fire
  cplOut.bits.rx := true.B
  cplOut.bits.queue := curQ
  cplOut.bits.index := curIdx
  cplOut.bits.len := Mux(cur.len > 65535.U, 65535.U, cur.len)(15, 0)
  cplOut.bits.status := curStatus
  cplOut.bits.flags := Cat(curType =/= 0.U, true.B, cur.port)
  cplOut.bits.hash := curHash
  cplOut.bits.csum := curCsum
  cplOut.bits.rssType := curType
  stat_packet.valid := cplOut.fire && curStatus === CplStatus.Ok.U
  stat_packet.bits := cur.len(15, 0)

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
