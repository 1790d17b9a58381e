package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axi.{Axi4, Axi4IO}
import offnic.axis.{AxisBeat, AxisIO, AxisParams}
import offnic.cache.{AlignCtx, CacheAligner, CacheWord}
import offnic.nic.Descriptor
import offnic.offload.OnesSum
import offnic.pcie.DmaUtil
import offnic.util.SkidBuffer

/** The TCP engine's transmit side: turns segment descriptors ([[TxReq]]: a [[TxSeg]] and its
  * connection's [[ConnAddr]]) into whole Ethernet frames, headers from [[TcpHeaderBuild]]
  * followed by `payloadLen` bytes read from the connection's send ring over AXI4.
  *
  * How. Store-and-forward through a ring of `bufWords` 32-byte words (32 KiB, block RAM), so
  * the reads of later segments overlap the output of earlier ones. (Not a double buffer of
  * 2 x 9 KiB: then the reads of segment N+1 could start only when N-1 had left, and a 150-cycle
  * memory would hold MSS segments to about 125 cycles a frame: 25G's 123 with no margin. The
  * ring holds a jumbo segment and more, and MSS segments' reads run up to 20 frames ahead.)
  *  - Input: a two-entry queue (ready from its pointers).
  *  - Plan (one cycle, registered): header length (54..94 bytes, never a multiple of 32), the
  *    payload's place in the ring of sequence numbers: bytes [seq, seq + len) are at sndBase +
  *    (seq mod 2^sndLog2), cut in two pieces where they wrap to sndBase.
  *  - Dispatch: the segment takes ceil((hdrLen mod 32 + len) / 32) words of the buffer (it
  *    waits for room), so that its payload lands in the buffer already at its lane in the frame
  *    (byte i at lane (hdrLen + i) mod 32). One cycle per piece.
  *  - Reads: each piece cut into INCR bursts of at most 16 beats that never cross a 512-byte
  *    boundary (so never 4 KiB); all with AXI ID 0, so data comes back in order; as many in
  *    flight as the buffer has room for (a burst is issued only for words already allocated,
  *    so `rready` never waits on the output).
  *  - Realign and sum: the payload cache's [[offnic.cache.CacheAligner]] moves each piece's
  *    words from their memory lane to their buffer lane with byte strobes (its `slot` field
  *    carries "last piece of its segment"); each buffer write is also summed by
  *    [[offnic.offload.OnesSum]] (lane range from the strobes; lanes are even-aligned to the
  *    payload since header lengths are even) into a per-segment accumulator.
  *  - Headers: when a segment's sum is known, its [[SegHeader]] (ipId 0) with that sum goes to
  *    [[TcpHeaderBuild]]; segments leave strictly in request order.
  *  - Output: the header's beats, the last one merged with the payload's first buffer word,
  *    then the payload's words, read ahead from the buffer (a word's space is free once read).
  *    The output is a register slice.
  *
  * ACKs and other segments without payload take no buffer and issue no read: 7 cycles
  * from `s_req` to the first beat when nothing is ahead of them. They do wait behind data
  * segments requested before them (order is kept: a connection's segments must not pass each
  * other).
  *
  * Bad input, defined:
  *  - `payloadLen` > `maxPayload`, or > the ring size 2^sndLog2 (it would wrap more than
  *    once): the segment is dropped, nothing is read or sent; `stat_drop` pulses and
  *    `status_drops` counts it.
  *  - More SACK blocks than the options hold (`sackN` > 3 with a timestamp, > 4 without):
  *    the first 3 (4) are sent, as Linux trims them.
  *  - A read answered with an error response (SLVERR/DECERR): the frame is still sent whole,
  *    with the bytes that came back, but with a TCP checksum made wrong on purpose (the
  *    payload sum given to the header builder is the true one + 1, one's complement), so the
  *    peer drops it and TCP retransmits; its IP header stays valid. `stat_read_error`
  *    pulses as its header starts and `status_read_errors` counts it. `rlast` and `rid`
  *    are not checked (one ID, bursts counted by their beats).
  *
  * Figures (default parameters, 250 MHz; bench `tests/toe/test_tx_seg_builder.py` with a
  * 150-cycle memory and no back-pressure): back-to-back MSS 1460 segments (1,514-byte frames,
  * 48 beats) leave every 48.3 cycles (0.99 beats a cycle, 62.6 Gb/s: 2.5x 25G line rate,
  * which needs 123 cycles a frame); 9,000-byte payloads every 283.3 cycles (283 beats); pure
  * ACKs every 2 cycles (54 bytes) or 3 (66 with a timestamp, 94 with SACK blocks): the header
  * builder's beats. A lone ACK's first beat is 7 cycles after its request, a lone MSS
  * segment's 217 (the memory's 150, its 47 words, then sum and header). Reads run as far
  * ahead as the buffer allows (63 bursts in flight in the MSS run). Yosys (`./offnic synth
  * --config toe --top tx_seg_builder`, with TcpHeaderBuild's 1.9k LUT / 2.6k FF): 5.3k LUT,
  * 152 LUT-RAM, 5.9k FF, 8 BRAM36 (the buffer; the queues are LUT-RAM).
  */
class TxSegBuilder(val idBits: Int = 12, val addrBits: Int = 40, val axiIdBits: Int = 4, val maxPayload: Int = 9216,
                   val bufWords: Int = 1024) extends Module {
  require(maxPayload >= 1 && maxPayload <= 65535 - 94, s"maxPayload $maxPayload")
  private val maxWords = (31 + maxPayload + 31) / 32 // words a payload spans behind a header's tail
  require(isPow2(bufWords) && bufWords >= maxWords && bufWords <= 8192, s"bufWords $bufWords")
  require(addrBits > 5 && addrBits <= 64 && axiIdBits >= 1)
  private val lgBuf = log2Ceil(bufWords)
  private val wordBits = addrBits - 5

  val s_req = IO(Flipped(Decoupled(new TxReq(idBits))))
  val m_axi = IO(new Axi4IO(addrBits, axiIdBits))
  val m_axis = IO(new AxisIO(AxisParams(32)))
  /** A request dropped as bad (payload too long); and their count. */
  val stat_drop = IO(Output(Bool()))
  val status_drops = IO(Output(UInt(32.W)))
  /** A frame sent with a wrong TCP checksum because a read of its payload failed; count. */
  val stat_read_error = IO(Output(Bool()))
  val status_read_errors = IO(Output(UInt(32.W)))

  // -------------------------------------------------------------------------- types
  private class Plan extends Bundle {
    val hdr = new SegHeader
    val hasPay = Bool()
    val bad = Bool()
    val hdrLen = UInt(7.W)
    val nWords = UInt(12.W) // buffer words of the payload
    val endLane = UInt(5.W) // (hdrLen + len) mod 32
    val addr1 = UInt(addrBits.W)
    val len1 = UInt(16.W)
    val addr2 = UInt(addrBits.W)
    val len2 = UInt(16.W)
  }
  private class Meta extends Bundle {
    val hdr = new SegHeader
    val hasPay = Bool()
    val bufWord = UInt(lgBuf.W)
    val nWords = UInt(12.W)
    val endLane = UInt(5.W)
    val hdrLen = UInt(7.W)
  }
  private class Piece extends Bundle {
    val word = UInt(wordBits.W)
    val words = UInt(12.W)
  }
  private class SegSum extends Bundle {
    val sum = UInt(16.W)
    val err = Bool()
  }
  private class Fetch extends Bundle {
    val word = UInt(lgBuf.W)
    val n = UInt(12.W)
  }
  private class Asm extends Bundle {
    val hasPay = Bool()
    val nWords = UInt(12.W)
    val endLane = UInt(5.W)
    val hdrLen = UInt(7.W)
  }

  // -------------------------------------------------------------------------- plan
  // Input: a two-entry queue (ready from its pointers; ~620 bits a request, so LUT-RAM
  // rather than a skid buffer's 2 x 620 flip-flops and output mux).
  private val inQ = Module(new Queue(new TxReq(idBits), 2))
  inQ.io.enq <> s_req
  private val r = inQ.io.deq.bits
  private val sg = r.seg

  private val plan = Wire(new Plan)
  private val ts = sg.tcp.tsPresent
  private val sackMax = Mux(ts, 3.U(3.W), 4.U(3.W))
  private val sackN = Mux(sg.tcp.sackN > sackMax, sackMax, sg.tcp.sackN)
  private val optSack = Mux(sackN === 0.U, 0.U(6.W), Cat(sackN, 0.U(3.W)) + 4.U)
  plan.hdrLen := 54.U(7.W) + Mux(ts, 12.U(7.W), 0.U(7.W)) + optSack
  private val len = sg.payloadLen
  private val size = UIntToOH(sg.sndLog2, 32) // 2^sndLog2
  private val off = sg.tcp.seq & (size - 1.U)
  private val toEnd = size - off // 1 .. 2^31
  private val wraps = toEnd < len
  plan.len1 := Mux(wraps, toEnd(15, 0), len)
  plan.len2 := Mux(wraps, len - toEnd(15, 0), 0.U)
  plan.addr1 := sg.sndBase + off
  plan.addr2 := sg.sndBase
  plan.hasPay := len =/= 0.U
  plan.bad := len > maxPayload.U || (sg.sndLog2 < 16.U && len > size(16, 0))
  private val d = plan.hdrLen(4, 0)
  plan.nWords := DmaUtil.ceilShift(d +& len, 5)
  plan.endLane := d + len(4, 0)
  plan.hdr.addr := r.addr
  plan.hdr.ipId := 0.U
  plan.hdr.tcp := sg.tcp
  plan.hdr.tcp.sackN := sackN // (at most what fits beside the timestamp)
  plan.hdr.payloadLen := len
  plan.hdr.payloadSum := 0.U
  // The connection id only names the connection upstream; the transmit side needs its addresses.
  private val unused_req = WireDefault(sg.id)
  dontTouch(unused_req)

  private val pv = RegInit(false.B)
  private val p = Reg(new Plan)
  private val consume = Wire(Bool())
  inQ.io.deq.ready := !pv || consume
  when(inQ.io.deq.ready) { pv := inQ.io.deq.valid }
  when(inQ.io.deq.fire) { p := plan }

  // -------------------------------------------------------------------------- dispatch
  private val metaQ = Module(new Queue(new Meta, 16))
  private val sumQ = Module(new Queue(new SegSum, 16)) // never fuller than metaQ
  private val pieceQ = Module(new Queue(new Piece, 4))
  private val ctxQ = Module(new Queue(new AlignCtx, 16))
  private val allocW = RegInit(0.U((lgBuf + 1).W))
  private val freedW = RegInit(0.U((lgBuf + 1).W))
  private val used = allocW - freedW
  private val room = p.nWords <= bufWords.U - used
  private val second = RegInit(false.B) // the second piece is next
  private val dst2 = Reg(UInt((lgBuf + 5).W))
  private val dst1 = Cat(allocW(lgBuf - 1, 0), p.hdrLen(4, 0))
  private val pieceRoom = pieceQ.io.enq.ready && ctxQ.io.enq.ready
  private val first = pv && !second && !p.bad && metaQ.io.enq.ready && (!p.hasPay || (room && pieceRoom))
  private val more = pv && second && pieceRoom
  private val drop = pv && !second && p.bad
  private val twoPieces = p.len2 =/= 0.U
  consume := drop || (first && !(p.hasPay && twoPieces)) || more
  when(first && p.hasPay && twoPieces) { second := true.B }
  when(more) { second := false.B }
  when(first && p.hasPay) {
    allocW := allocW + p.nWords(math.min(lgBuf, 11), 0)
    dst2 := dst1 + p.len1(math.min(lgBuf + 4, 15), 0)
  }

  metaQ.io.enq.valid := first
  metaQ.io.enq.bits.hdr := p.hdr
  metaQ.io.enq.bits.hasPay := p.hasPay
  metaQ.io.enq.bits.bufWord := allocW(lgBuf - 1, 0)
  metaQ.io.enq.bits.nWords := p.nWords
  metaQ.io.enq.bits.endLane := p.endLane
  metaQ.io.enq.bits.hdrLen := p.hdrLen

  private val pAddr = Mux(second, p.addr2, p.addr1)
  private val pLen = Mux(second, p.len2, p.len1)
  private val pWords = DmaUtil.ceilShift(pAddr(4, 0) +& pLen, 5)
  private val pushPiece = (first && p.hasPay) || more
  pieceQ.io.enq.valid := pushPiece
  pieceQ.io.enq.bits.word := pAddr(addrBits - 1, 5)
  pieceQ.io.enq.bits.words := pWords
  ctxQ.io.enq.valid := pushPiece
  ctxQ.io.enq.bits.srcLane := pAddr(4, 0)
  ctxQ.io.enq.bits.len := pLen
  ctxQ.io.enq.bits.srcWords := pWords
  ctxQ.io.enq.bits.port := 0.U
  ctxQ.io.enq.bits.dst := Mux(second, dst2, dst1)
  ctxQ.io.enq.bits.slot := Mux(second || !twoPieces, 1.U, 0.U) // 1: the segment's last piece

  private val drops = RegInit(0.U(32.W))
  when(drop) { drops := drops + 1.U }
  stat_drop := drop
  status_drops := drops

  // -------------------------------------------------------------------------- AXI reads
  private val arBusy = RegInit(false.B)
  private val arW = Reg(UInt(wordBits.W))
  private val arLeft = Reg(UInt(12.W))
  pieceQ.io.deq.ready := !arBusy
  when(pieceQ.io.deq.fire) {
    arBusy := true.B
    arW := pieceQ.io.deq.bits.word
    arLeft := pieceQ.io.deq.bits.words
  }
  private class Ar extends Bundle {
    val addr = UInt(addrBits.W)
    val len = UInt(5.W) // (0..15)
  }
  private val arSkid = Module(new SkidBuffer(new Ar))
  private val toBoundary = 16.U(5.W) - arW(3, 0)
  private val beats = Mux(arLeft < toBoundary, arLeft(4, 0), toBoundary)
  arSkid.in.valid := arBusy
  arSkid.in.bits.addr := Cat(arW, 0.U(5.W))
  arSkid.in.bits.len := beats - 1.U
  when(arSkid.in.fire) {
    arW := arW + beats
    arLeft := arLeft - beats
    when(arLeft === beats) { arBusy := false.B }
  }
  m_axi.arid := 0.U
  m_axi.araddr := arSkid.out.bits.addr
  m_axi.arlen := arSkid.out.bits.len
  m_axi.arsize := Axi4.Size32.U
  m_axi.arburst := Axi4.BurstIncr.U
  m_axi.arvalid := arSkid.out.valid
  arSkid.out.ready := m_axi.arready
  // Reads only.
  m_axi.awid := 0.U
  m_axi.awaddr := 0.U
  m_axi.awlen := 0.U
  m_axi.awsize := Axi4.Size32.U
  m_axi.awburst := Axi4.BurstIncr.U
  m_axi.awvalid := false.B
  m_axi.wdata := 0.U
  m_axi.wstrb := 0.U
  m_axi.wlast := false.B
  m_axi.wvalid := false.B
  m_axi.bready := true.B
  private val unused_axi = WireDefault(Cat(m_axi.awready, m_axi.wready, m_axi.bid, m_axi.bresp, m_axi.bvalid,
    m_axi.rid, m_axi.rlast))
  dontTouch(unused_axi)

  private val rSkid = Module(new SkidBuffer(new CacheWord))
  rSkid.in.valid := m_axi.rvalid
  rSkid.in.bits.data := m_axi.rdata
  rSkid.in.bits.error := Axi4.isError(m_axi.rresp)
  m_axi.rready := rSkid.in.ready

  // -------------------------------------------------------------------------- realign, store, sum
  private val aligner = Module(new CacheAligner)
  aligner.s_ctx <> ctxQ.io.deq
  aligner.s_word <> rSkid.out
  aligner.m_wr.ready := true.B
  private val wv = RegNext(aligner.m_wr.valid, false.B)
  private val w = RegEnable(aligner.m_wr.bits, aligner.m_wr.valid)
  private val unused_wr = WireDefault(Cat(Seq(w.port, w.slot(5, 1)) ++ Option.when(lgBuf < 13)(w.word(12, lgBuf))))
  dontTouch(unused_wr)

  private val buf = SyncReadMem(bufWords, Vec(32, UInt(8.W)))
  when(wv) { buf.write(w.word(lgBuf - 1, 0), w.data.asTypeOf(Vec(32, UInt(8.W))), w.strb.asBools) }

  private val summer = Module(new OnesSum(32))
  private val (_, loLane) = DmaUtil.lowestSet(w.strb.asBools) // strobes are contiguous, never empty
  summer.in.valid := wv
  summer.in.bits.data := w.data
  summer.in.bits.start := loLane
  summer.in.bits.end := loLane + PopCount(w.strb)
  private class Side extends Bundle {
    val segEnd = Bool()
    val err = Bool()
  }
  private val side = Wire(new Side)
  side.segEnd := w.last && w.slot(0)
  side.err := w.error
  private val sideAt = ShiftRegister(side, summer.latency)
  private val acc = Reg(UInt(21.W))
  private val accErr = Reg(Bool())
  private val accFirst = RegInit(true.B)
  when(summer.out.valid) {
    val prev = Mux(accFirst, 0.U, acc(15, 0) +& acc(20, 16))
    acc := prev +& summer.out.bits
    accErr := Mux(accFirst, sideAt.err, accErr || sideAt.err)
    accFirst := sideAt.segEnd
  }
  private val done1 = RegNext(summer.out.valid && sideAt.segEnd, false.B)
  private val done2 = RegNext(done1, false.B)
  private val sum2 = RegEnable(OnesSum.fold(acc), done1)
  private val err2 = RegEnable(accErr, done1)
  sumQ.io.enq.valid := done2
  sumQ.io.enq.bits.sum := Mux(err2, OnesSum.fold(sum2 +& 1.U), sum2)
  sumQ.io.enq.bits.err := err2
  // (sumQ never overflows: it holds one entry per data segment whose meta is in metaQ, and
  // both leave together)

  // -------------------------------------------------------------------------- headers
  private val hb = Module(new TcpHeaderBuild())
  private val pfQ = Module(new Queue(new Fetch, 8))
  private val asmQ = Module(new Queue(new Asm, 8))
  private val m = metaQ.io.deq.bits
  private val hGo = metaQ.io.deq.valid && (!m.hasPay || sumQ.io.deq.valid) && pfQ.io.enq.ready && asmQ.io.enq.ready
  hb.s_hdr.valid := hGo
  hb.s_hdr.bits := m.hdr
  hb.s_hdr.bits.payloadSum := Mux(m.hasPay, sumQ.io.deq.bits.sum, 0.U)
  private val hFire = hGo && hb.s_hdr.ready
  metaQ.io.deq.ready := hFire
  sumQ.io.deq.ready := hFire && m.hasPay
  pfQ.io.enq.valid := hFire && m.hasPay
  pfQ.io.enq.bits.word := m.bufWord
  pfQ.io.enq.bits.n := m.nWords
  asmQ.io.enq.valid := hFire
  asmQ.io.enq.bits.hasPay := m.hasPay
  asmQ.io.enq.bits.nWords := m.nWords
  asmQ.io.enq.bits.endLane := m.endLane
  asmQ.io.enq.bits.hdrLen := m.hdrLen
  private val readErr = hFire && m.hasPay && sumQ.io.deq.bits.err
  private val readErrors = RegInit(0.U(32.W))
  when(readErr) { readErrors := readErrors + 1.U }
  stat_read_error := readErr
  status_read_errors := readErrors

  // -------------------------------------------------------------------------- payload read-ahead
  private val dataQ = Module(new Queue(UInt(256.W), 4))
  private val inflight = RegInit(0.U(2.W))
  private val pfW = Reg(UInt(lgBuf.W))
  private val pfLeft = RegInit(0.U(12.W))
  private val pfStart = pfLeft === 0.U && pfQ.io.deq.valid
  private val pfWord = Mux(pfStart, pfQ.io.deq.bits.word, pfW)
  private val pfN = Mux(pfStart, pfQ.io.deq.bits.n, pfLeft)
  private val rd = pfN =/= 0.U && (dataQ.io.count +& inflight) < 4.U
  pfQ.io.deq.ready := pfStart
  when(pfStart || rd) {
    pfW := Mux(rd, pfWord + 1.U, pfWord)
    pfLeft := Mux(rd, pfN - 1.U, pfN)
  }
  when(rd) { freedW := freedW + 1.U } // read: the word's space is free again
  private val rdData = buf.read(pfWord, rd).asUInt
  private val back1 = RegNext(rd, false.B)
  private val back2 = RegNext(back1, false.B)
  private val data2 = RegNext(rdData) // (the block RAM's output register)
  inflight := inflight + rd.asUInt - back2.asUInt
  dataQ.io.enq.valid := back2
  dataQ.io.enq.bits := data2
  // (dataQ never overflows: a read is issued only when its entry is free)

  // -------------------------------------------------------------------------- frame out
  private val outSkid = Module(new SkidBuffer(new AxisBeat(AxisParams(32))))
  m_axis.drivenBy(outSkid.out)
  private val a = asmQ.io.deq.bits
  private val hIdx = RegInit(0.U(2.W))
  private val inPay = RegInit(false.B)
  private val pIdx = Reg(UInt(12.W))
  private val hLast = Mux(a.hdrLen > 64.U, 2.U(2.W), 1.U(2.W)) // 54..94 bytes: 2 or 3 beats
  private val isHdrLast = hIdx === hLast
  private val merge = a.hasPay && isHdrLast
  private val hdrPhase = asmQ.io.deq.valid && !inPay
  private val payPhase = asmQ.io.deq.valid && inPay
  private val dq = dataQ.io.deq
  private val ones = Fill(32, 1.U(1.W))
  private val endKeep = Descriptor.keepFor(a.endLane)
  private val payKeepMask = ~FillInterleaved(8, Descriptor.keepFor(a.hdrLen(4, 0))) // lanes >= hdrLen mod 32
  private val payLast = pIdx === a.nWords - 1.U
  private val ob = Wire(new AxisBeat(AxisParams(32)))
  when(inPay) {
    ob.tdata := dq.bits
    ob.tkeep := Mux(payLast, endKeep, ones)
    ob.tlast := payLast
  }.elsewhen(merge) {
    // (the header builder's lanes past the header are zero)
    ob.tdata := hb.m_axis.tdata | (dq.bits & payKeepMask)
    ob.tkeep := Mux(a.nWords === 1.U, endKeep, ones)
    ob.tlast := a.nWords === 1.U
  }.otherwise {
    ob.tdata := hb.m_axis.tdata
    ob.tkeep := hb.m_axis.tkeep
    ob.tlast := !a.hasPay && isHdrLast
  }
  private val hdrOk = hb.m_axis.tvalid && (!merge || dq.valid)
  outSkid.in.valid := Mux(inPay, payPhase && dq.valid, hdrPhase && hdrOk)
  outSkid.in.bits := ob
  private val take = outSkid.in.ready
  hb.m_axis.tready := hdrPhase && (!merge || dq.valid) && take
  dq.ready := take && Mux(inPay, payPhase, hdrPhase && merge && hb.m_axis.tvalid)
  asmQ.io.deq.ready := outSkid.in.fire && ob.tlast
  when(outSkid.in.fire) {
    when(inPay) {
      pIdx := pIdx + 1.U
      when(payLast) { inPay := false.B }
    }.otherwise {
      hIdx := Mux(isHdrLast, 0.U, hIdx + 1.U)
      when(merge && a.nWords =/= 1.U) {
        inPay := true.B
        pIdx := 1.U
      }
    }
  }
  // The header's length and end are known here from the plan (the builder's m_len and
  // tlast say the same); a header is never a multiple of 32 bytes, so its last beat always
  // has room for payload lanes.
  private val unused_hb = WireDefault(Cat(hb.m_len, hb.m_axis.tlast, sumQ.io.enq.ready, dataQ.io.enq.ready))
  dontTouch(unused_hb)
}

object TxSegBuilder extends Elaboratable {
  /** `connections` (4096): the id width; `max_payload` (9216) bytes; `buf_words` (1024): the
    * buffer's 32-byte words; `addr_bits` (40), `axi_id_bits` (4): the AXI4 port. */
  def generate(p: Params): RawModule = new TxSegBuilder(log2Ceil(p.int("connections", 4096)), p.int("addr_bits", 40),
    p.int("axi_id_bits", 4), p.int("max_payload", 9216), p.int("buf_words", 1024))
}
