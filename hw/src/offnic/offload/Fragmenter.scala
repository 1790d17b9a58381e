package offnic.offload

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisIO, AxisParams}
import offnic.pcie.DmaUtil

/** A frame to send, already whole in the port's TX RAM (word aligned). */
class FragCmd(wordBits: Int) extends Bundle {
  val word = UInt(wordBits.W) // the frame's first word in the RAM
  val len = UInt(17.W) // frame bytes without FCS (up to 14 + 4 + 65535)
  val mtu = UInt(16.W) // the link's IP MTU (bytes of IP header + payload per frame; 68 at least)
  val csum = new TxChecksumCmd
}

/** What became of a frame: `status` 0 (sent), or why nothing was sent. */
class FragDone extends Bundle {
  val status = UInt(3.W)
  val fragments = UInt(11.W) // frames sent: 1 when passed through whole, 0 when refused
  val csumBad = Bool() // fragmented with a checksum command that does not fit: sent unpatched
}

object Fragmenter extends Elaboratable {
  // FragDone.status
  val Ok = 0
  val DontFragment = 1 // IPv4 with DF, larger than the MTU
  val Options = 2 // IPv4 with options (IHL > 5), larger than the MTU: not fragmented
  val Malformed = 3 // IPv4 larger than the MTU: length or offset impossible, or the reserved flag

  def generate(p: Params): RawModule = new Fragmenter(ramAddrBits = p.int("ram_addr_bits", 17))
}

/** Streams frames out of a TX RAM, cutting IPv4 datagrams larger than the link MTU into
  * fragments as Linux's ip_do_fragment does (docs/frag.md).
  *
  * A frame no longer than `mtu + 14` bytes, or not IPv4, leaves unchanged with its checksum
  * command in `tuser` (TxChecksum downstream inserts the checksum). A larger IPv4 frame
  * (Ethernet II, optionally one 802.1Q tag) is cut into fragments of
  * `(mtu - 20) & ~7` payload bytes, each with the Ethernet header and a copy of the IP
  * header whose total length, flags (MF only) and offset (continuing the frame's own, so a
  * fragment can be fragmented again) are rewritten and whose header checksum is
  * recomputed. Refused, with nothing sent: DF set (`DontFragment`), options
  * (`Options`: docs/frag.md says why), a header that contradicts the frame, offsets past
  * 65535 or the reserved flag set (`Malformed`).
  *
  * Checksum offload over a fragmented datagram: the L4 checksum covers every fragment but
  * lives in the first, so the first fragment leaves last: its payload is read once to be
  * summed (not sent), then fragments 2..n are sent and summed as they stream, then the
  * first is sent with the checksum in place. Buffering: none beyond the TX RAM, which
  * holds the frame anyway; the price is reading the first fragment's payload twice. The
  * fragments go out with `tuser` 0.
  *
  * Streaming: one RAM read per cycle (data two cycles later), one beat out per read, so a
  * fragment whose payload is not word aligned (its source offset moves by a multiple of 8
  * bytes) is shifted by 8, 16 or 24 bytes on the way out and costs one read more than its
  * beats. Frames that cannot need fragmenting start at once; larger ones first read their
  * first two words to parse the header (a few cycles, hidden behind their wire time).
  */
class Fragmenter(ramAddrBits: Int = 17) extends Module {
  import Fragmenter._
  private val wordBits = ramAddrBits - 5
  val axisP: AxisParams = AxisParams(32, userWidth = TxChecksum.CmdWidth)

  val s_cmd = IO(Flipped(Decoupled(new FragCmd(wordBits))))
  val ram_rd = IO(new FragRamRead(wordBits))
  val m_axis = IO(new AxisIO(axisP))
  val m_done = IO(Valid(new FragDone))

  /** One output frame (or a sum-only pass): what the returning words need to become it. */
  private class Emission extends Bundle {
    val shift = UInt(2.W) // the output is the frame moved by 8 * shift bytes (mod 32) ...
    val hdr = UInt(6.W) // ... except bytes [0, hdr), from the header registers
    val vlan = Bool()
    val totLen = UInt(16.W)
    val fragField = UInt(16.W)
    val ipCsum = UInt(16.W)
    val lastKeep = UInt(32.W)
    val user = UInt(TxChecksum.CmdWidth.W)
    val patch = Bool() // write the L4 checksum at byte `patchAt`
    val patchAt = UInt(17.W)
  }
  /** What travels with each RAM read to its data. */
  private class ReadMeta extends Bundle {
    val first = Bool() // the emission's first read: it takes the emission's parameters
    val emit = Bool() // the word goes out (not a header read, not a sum-only pass)
    val skip = Bool() // it only primes the shifter
    val last = Bool() // the emission's last beat
    val hdrIdx = UInt(2.W) // 1, 2: header word 0 or 1, for parsing
    val sumLo = UInt(6.W) // lanes [sumLo, sumHi) count towards the L4 sum
    val sumHi = UInt(6.W)
  }

  private val OutDepth = 6
  private val outQ = Module(new Queue(new FragBeat(axisP), OutDepth))
  private val emQ = Module(new Queue(new Emission, 4))
  private val inflight = RegInit(0.U(3.W))

  private object S extends ChiselEnum {
    val Idle, HdrRead, HdrWait, Decide, Next, Emit, SumWait, First, Done = Value
  }
  private val st = RegInit(S.Idle)
  private val afterEmit = Reg(S())
  private val cmd = Reg(new FragCmd(wordBits))
  // the emission being read
  private val eWord = Reg(UInt(wordBits.W)) // next word to read
  private val eByte = Reg(UInt(17.W)) // its frame byte offset
  private val eReads = Reg(UInt(13.W)) // reads left
  private val eFirst = Reg(Bool())
  private val eSkip = Reg(Bool())
  private val eEmit = Reg(Bool())
  private val eSumOn = Reg(Bool())
  private val eSumLo = Reg(UInt(17.W)) // frame bytes [eSumLo, eSumHi) count towards the sum
  private val eSumHi = Reg(UInt(18.W))
  private val hdrWait = Reg(UInt(2.W))
  // the datagram being cut
  private val l3 = Reg(UInt(5.W)) // IP header offset: 14, or 18 behind a VLAN tag
  private val vlan = Reg(Bool())
  private val room = Reg(UInt(16.W)) // IP payload bytes a frame can carry (mtu - 20)
  private val fragBytes = Wire(UInt(16.W)) // payload bytes per fragment but the last: room, 8-byte units
  fragBytes := Cat(room(15, 3), 0.U(3.W))
  private val payTotal = Reg(UInt(16.W))
  private val payLeft = Reg(UInt(16.W)) // payload bytes from the next fragment on
  private val srcOff8 = Reg(UInt(13.W)) // the next fragment's payload offset in the datagram, 8-byte units
  private val srcOff = Cat(srcOff8, 0.U(3.W))
  private val off0 = Reg(UInt(13.W)) // the frame's own fragment offset, 8-byte units
  private val mf0 = Reg(Bool())
  private val staticSum = Reg(UInt(16.W)) // IP header words but length, flags/offset, checksum
  private val frags = Reg(UInt(11.W))
  private val firstLast = Reg(Bool()) // the first fragment goes last, with the L4 checksum
  private val firstSummed = Reg(Bool())
  private val cutting = Reg(Bool())
  private val patchOk = Reg(Bool())
  private val doneStatus = Reg(UInt(3.W))
  private val csumVal = Reg(UInt(16.W))

  private def keepFor(rem: UInt): UInt =
    VecInit((0 until 32).map(k => (if (k == 0) (BigInt(1) << 32) - 1 else (BigInt(1) << k) - 1).U(32.W)))(rem)

  // ---- Read issue
  private val credit = (outQ.io.count +& inflight) < OutDepth.U
  private val issue = Wire(Bool())
  issue := st === S.HdrRead || (st === S.Emit && eReads =/= 0.U && (credit || !eEmit))
  ram_rd.en := issue
  ram_rd.addr := Mux(st === S.HdrRead, cmd.word + hdrWait(0), eWord)

  private def clampLane(x: UInt): UInt = {
    val d = x.zext - eByte.zext
    Mux(d <= 0.S, 0.U, Mux(d >= 32.S, 32.U, d.asUInt(5, 0)))
  }
  private val meta = Wire(new ReadMeta)
  private val emitting = st === S.Emit
  meta.first := emitting && eFirst
  meta.emit := emitting && eEmit
  meta.skip := emitting && eFirst && eSkip
  meta.last := emitting && eReads === 1.U
  meta.hdrIdx := Mux(st === S.HdrRead, hdrWait(0) +& 1.U, 0.U)
  meta.sumLo := Mux(emitting && eSumOn, clampLane(eSumLo), 0.U)
  meta.sumHi := Mux(emitting && eSumOn, clampLane(eSumHi), 0.U)
  private val pipeV = ShiftRegister(issue, 2, false.B, true.B)
  private val pipeM = ShiftRegister(meta, 2)
  inflight := inflight + (issue && meta.emit).asUInt - (pipeV && pipeM.emit).asUInt
  when(issue && emitting) {
    eWord := eWord + 1.U
    eByte := eByte + 32.U
    eReads := eReads - 1.U
    eFirst := false.B
  }

  // ---- Returning words: header capture, sum, shift, rewrite, out
  private val cur = ram_rd.data
  private val hdrW = Reg(Vec(2, UInt(256.W)))
  private val prev = Reg(UInt(256.W))
  private val em = Reg(new Emission)
  emQ.io.deq.ready := pipeV && pipeM.first
  private val emNow = Mux(pipeM.first, emQ.io.deq.bits, em)
  when(emQ.io.deq.fire) { em := emQ.io.deq.bits }
  when(pipeV && pipeM.hdrIdx === 1.U) { hdrW(0) := cur }
  when(pipeV && pipeM.hdrIdx === 2.U) { hdrW(1) := cur }
  when(pipeV) { prev := cur }
  private val beatIx = Reg(UInt(12.W))
  private val beatIxNow = Mux(pipeM.first, 0.U, beatIx)
  private val produce = pipeV && pipeM.emit && !pipeM.skip
  when(pipeV && pipeM.emit) { beatIx := Mux(pipeM.skip, 0.U, beatIxNow + 1.U) }

  private val wide = Cat(cur, prev)
  private val shifted = VecInit((0 until 4).map(k => (wide >> (64 * k))(255, 0)))(emNow.shift)
  private val moved = Mux(emNow.shift === 0.U, cur, shifted).asTypeOf(Vec(32, UInt(8.W)))
  // the header as this emission writes it: the frame's first 64 bytes, IP fields replaced
  private val hdrBytes = Cat(hdrW(1), hdrW(0)).asTypeOf(Vec(64, UInt(8.W)))
  private val hb = Wire(Vec(64, UInt(8.W)))
  for (i <- 0 until 64) {
    def field(at: Int, v: UInt): Option[UInt] =
      if (i == at) Some(v(15, 8)) else if (i == at + 1) Some(v(7, 0)) else None
    def rewritten(l3at: Int): UInt =
      field(l3at + 2, emNow.totLen).orElse(field(l3at + 6, emNow.fragField))
        .orElse(field(l3at + 10, emNow.ipCsum)).getOrElse(hdrBytes(i))
    hb(i) := Mux(emNow.vlan, rewritten(18), rewritten(14))
  }
  private val outBytes = Wire(Vec(32, UInt(8.W)))
  for (l <- 0 until 32) {
    val pos = Cat(beatIxNow, l.U(5.W))
    val hdrByte = Mux(beatIxNow(0), hb(32 + l), hb(l))
    val isHi = emNow.patch && pos === emNow.patchAt
    val isLo = emNow.patch && pos === emNow.patchAt +& 1.U
    outBytes(l) := Mux(isHi, csumVal(15, 8), Mux(isLo, csumVal(7, 0), Mux(pos < emNow.hdr, hdrByte, moved(l))))
  }
  outQ.io.enq.valid := produce
  outQ.io.enq.bits.tdata := outBytes.asUInt
  outQ.io.enq.bits.tkeep := Mux(pipeM.last, emNow.lastKeep, Fill(32, 1.U(1.W)))
  outQ.io.enq.bits.tlast := pipeM.last
  outQ.io.enq.bits.tuser := emNow.user
  m_axis.tvalid := outQ.io.deq.valid
  m_axis.tdata := outQ.io.deq.bits.tdata
  m_axis.tkeep := outQ.io.deq.bits.tkeep
  m_axis.tlast := outQ.io.deq.bits.tlast
  m_axis.tuser.get := outQ.io.deq.bits.tuser
  outQ.io.deq.ready := m_axis.tready

  // ---- The L4 sum over the datagram: raw words, lanes aligned to the frame
  private val summer = Module(new OnesSum(32))
  summer.in.valid := pipeV && pipeM.sumHi > pipeM.sumLo
  summer.in.bits.data := cur
  summer.in.bits.start := pipeM.sumLo
  summer.in.bits.end := pipeM.sumHi
  private val acc = Reg(UInt(16.W))
  private val sumsInFlight = RegInit(0.U(4.W))
  sumsInFlight := sumsInFlight + (issue && meta.sumHi > meta.sumLo).asUInt - summer.out.valid.asUInt
  when(summer.out.valid) { acc := OnesSum.fold(acc +& summer.out.bits) }

  // ---- Commands
  s_cmd.ready := st === S.Idle
  m_done.valid := st === S.Done
  m_done.bits.status := doneStatus
  m_done.bits.fragments := frags
  m_done.bits.csumBad := cutting && cmd.csum.enable && !patchOk

  private def clampMtu(m: UInt): UInt = Mux(m < 68.U, 68.U, m)
  private val mtu = clampMtu(cmd.mtu)

  emQ.io.enq.valid := false.B
  emQ.io.enq.bits := DontCare
  // No overflow: an emission is queued when its reads start and leaves when its first
  // word returns two cycles later, so at most two wait at once.

  private def pushEmission(shift: UInt, hdr: UInt, totLen: UInt, fragField: UInt, ipCsum: UInt, len: UInt,
                           user: UInt, patch: Bool): Unit = {
    emQ.io.enq.valid := true.B
    emQ.io.enq.bits.shift := shift
    emQ.io.enq.bits.hdr := hdr
    emQ.io.enq.bits.vlan := vlan
    emQ.io.enq.bits.totLen := totLen
    emQ.io.enq.bits.fragField := fragField
    emQ.io.enq.bits.ipCsum := ipCsum
    emQ.io.enq.bits.lastKeep := keepFor(len(4, 0))
    emQ.io.enq.bits.user := user
    emQ.io.enq.bits.patch := patch
    emQ.io.enq.bits.patchAt := cmd.csum.offset
  }

  /** Reads for an emission of `len` output bytes whose byte hdr.. come from frame byte
    * `from` + hdr.. (`from` a multiple of 8). */
  private def startReads(word0: UInt, from: UInt, len: UInt, emit: Bool, sumOn: Bool, sumLo: UInt,
                         sumHi: UInt): Unit = {
    val shifted = from(4, 3) =/= 0.U
    eWord := word0 + (from >> 5)
    eByte := Cat(from >> 5, 0.U(5.W))
    eReads := DmaUtil.ceilShift(len, 5) +& shifted.asUInt // at most 2050
    eFirst := true.B
    eSkip := shifted
    eEmit := emit
    eSumOn := sumOn
    eSumLo := sumLo
    eSumHi := sumHi
  }

  private def passThrough(word0: UInt, len: UInt, user: UInt): Unit = {
    startReads(word0, 0.U, len, true.B, false.B, 0.U, 0.U)
    pushEmission(0.U, 0.U, 0.U, 0.U, 0.U, len, user, false.B)
    frags := 1.U
    afterEmit := S.Done
    st := S.Emit
  }

  // the next fragment (payload from srcOff): its length, header fields, reads
  private val thisPay = Mux(payLeft > room, fragBytes, payLeft)
  private val lastFrag = payLeft <= room
  private val hdrLen = l3 +& 20.U
  private val fField = Cat(0.U(2.W), !lastFrag || mf0, off0 + srcOff8)
  private val fTot = 20.U(16.W) + thisPay
  private val fCsum = (~OnesSum.fold(staticSum +& fTot +& fField))(15, 0)
  private val fStart = hdrLen +& srcOff // its payload's first frame byte
  private def fragmentOut(patch: Bool): Unit = {
    val len = hdrLen +& thisPay
    val lo = Mux(cmd.csum.start > fStart, cmd.csum.start, fStart)
    startReads(cmd.word, srcOff, len, true.B, firstLast && !patch, lo, fStart +& thisPay)
    pushEmission(srcOff(4, 3), hdrLen, fTot, fField, fCsum, len, 0.U, patch)
    frags := frags + 1.U
  }

  // the parsed header (in Decide: both words are back)
  private val hv = Cat(hdrW(1), hdrW(0)).asTypeOf(Vec(64, UInt(8.W)))
  private val isVlan = Cat(hv(12), hv(13)) === 0x8100.U
  private val l3at = Mux(isVlan, 18.U(5.W), 14.U(5.W))
  private def ipByte(k: Int): UInt = Mux(isVlan, hv(18 + k), hv(14 + k))
  private def ip16(k: Int): UInt = Cat(ipByte(k), ipByte(k + 1))
  private val etype = Mux(isVlan, Cat(hv(16), hv(17)), Cat(hv(12), hv(13)))
  private val isIpv4 = etype === 0x0800.U && ipByte(0)(7, 4) === 4.U
  private val totLen = ip16(2)
  private val ff = ip16(6)
  private val decideMtu = mtu
  private val fits = totLen <= decideMtu
  private val bounded = totLen >= 20.U && (totLen +& l3at) <= cmd.len
  private val offOk = Cat(ff(12, 0), 0.U(3.W)) <= (65535.U - totLen)
  private val hsum = OnesSum.fold(Seq(0, 4, 8, 12, 14, 16, 18).map(k => ip16(k).pad(19)).reduce(_ +& _))
  private val roomNow = decideMtu - 20.U
  private val fb = Cat(roomNow(15, 3), 0.U(3.W))

  switch(st) {
    is(S.Idle) {
      when(s_cmd.valid) {
        cmd := s_cmd.bits
        doneStatus := Ok.U
        cutting := false.B
        patchOk := false.B
        frags := 0.U
        hdrWait := 0.U
        when(s_cmd.bits.len > (clampMtu(s_cmd.bits.mtu) +& 14.U)) {
          st := S.HdrRead // may need cutting: parse first
        }.otherwise {
          vlan := false.B
          passThrough(s_cmd.bits.word, s_cmd.bits.len, s_cmd.bits.csum.asUInt)
        }
      }
    }
    is(S.HdrRead) {
      hdrWait := hdrWait + 1.U
      when(hdrWait(0)) { st := S.HdrWait }
    }
    is(S.HdrWait) {
      // the second word's data arrives two cycles after its read
      hdrWait := hdrWait + 1.U
      when(hdrWait === 3.U) { st := S.Decide }
    }
    is(S.Decide) {
      l3 := l3at
      vlan := isVlan
      off0 := ff(12, 0)
      mf0 := ff(13)
      staticSum := hsum
      room := roomNow
      payTotal := totLen - 20.U
      payLeft := totLen - 20.U
      srcOff8 := 0.U
      firstSummed := false.B
      acc := 0.U
      val hl = l3at +& 20.U
      // the L4 checksum is patched only if its start and field lie in the first fragment
      val pOk = cmd.csum.enable && cmd.csum.start >= hl && cmd.csum.offset >= cmd.csum.start &&
        (cmd.csum.offset +& 2.U) <= (hl +& fb)
      patchOk := pOk
      firstLast := pOk
      when(!isIpv4 || cmd.len <= (decideMtu +& l3at)) {
        passThrough(cmd.word, cmd.len, cmd.csum.asUInt)
      }.elsewhen(!bounded) {
        doneStatus := Malformed.U
        st := S.Done
      }.elsewhen(fits) { // link padding made it long: the datagram itself fits
        passThrough(cmd.word, cmd.len, cmd.csum.asUInt)
      }.elsewhen(ff(14)) {
        doneStatus := DontFragment.U
        st := S.Done
      }.elsewhen(ipByte(0)(3, 0) =/= 5.U) {
        doneStatus := Options.U
        st := S.Done
      }.elsewhen(!offOk || ff(15)) { // past 65535, or the reserved flag (RFC 791: zero)
        doneStatus := Malformed.U
        st := S.Done
      }.otherwise {
        cutting := true.B
        st := S.Next
      }
    }
    is(S.Next) {
      afterEmit := S.Next
      when(firstLast && !firstSummed) {
        // the first fragment's bytes from the checksum's start, summed, not sent
        startReads(cmd.word, 0.U, hdrLen +& thisPay, false.B, true.B, cmd.csum.start, hdrLen +& thisPay)
        pushEmission(0.U, 0.U, 0.U, 0.U, 0.U, 0.U, 0.U, false.B)
        firstSummed := true.B
        payLeft := payLeft - thisPay
        srcOff8 := srcOff8 + room(15, 3)
        st := S.Emit
      }.elsewhen(payLeft === 0.U) {
        st := Mux(firstLast, S.SumWait, S.Done)
      }.otherwise {
        fragmentOut(false.B)
        payLeft := payLeft - thisPay
        srcOff8 := srcOff8 + room(15, 3)
        st := S.Emit
      }
    }
    is(S.Emit) {
      when(issue && eReads === 1.U) { st := afterEmit }
    }
    is(S.SumWait) {
      when(sumsInFlight === 0.U && !summer.out.valid) {
        val r = Mux(cmd.csum.start(0), OnesSum.swap(acc), acc)
        val v = (~r)(15, 0)
        csumVal := Mux(v === 0.U, 0xffff.U, v)
        payLeft := payTotal
        srcOff8 := 0.U
        firstLast := false.B
        st := S.First
      }
    }
    is(S.First) {
      fragmentOut(true.B)
      afterEmit := S.Done
      st := S.Emit
    }
    is(S.Done) {
      st := S.Idle
    }
  }
}

/** A beat on its way out of the Fragmenter. */
class FragBeat(p: AxisParams) extends Bundle {
  val tdata = UInt(256.W)
  val tkeep = UInt(32.W)
  val tlast = Bool()
  val tuser = UInt(p.userWidth.W)
}

/** The Fragmenter's read port on the TX RAM: data two cycles after `en`. */
class FragRamRead(wordBits: Int) extends Bundle {
  val en = Output(Bool())
  val addr = Output(UInt(wordBits.W))
  val data = Input(UInt(256.W))
}
