package offnic.pcie

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.regs.AxiLiteIO

/** BAR0 register access: memory requests that the host sends to BAR0 arrive on the hard
  * IP's completer request (CQ) interface; this block performs them one 32-bit word at a
  * time on an AXI-Lite master and answers reads with completions on CC.
  *
  * What each request gets (the "bad input" contract):
  *  - memory write to BAR0, any length: each word written with its byte enables (the
  *    first and last word's from the TLP, whole words between). Posted: no answer.
  *  - memory read from BAR0 of up to `maxReadDw` words: one successful completion. A
  *    word whose AXI-Lite read fails (an address no register block claims) reads as
  *    all ones, as a missing device does, and is counted (stat_read_error). A
  *    zero-length read (one word, no byte enables) completes without touching a register.
  *  - memory read longer than `maxReadDw`: completer-abort completion (registers are read
  *    a word or two at a time; a longer read is a driver bug). Counted (stat_unsupported).
  *  - anything else non-posted (I/O, atomics, locked reads, requests to other BARs):
  *    unsupported-request completion. Posted requests other than BAR0 writes (messages,
  *    writes to other BARs) are dropped. Both are counted (stat_unsupported).
  *  - a TLP the IP marks `discontinue` on its first beat is dropped whole (counted).
  * One request is in progress at a time (CQ is held off meanwhile): register traffic is
  * sparse, and this keeps reads and writes in the order the host issued them.
  */
class BarRegAccess(val addrBits: Int = 24, val maxReadDw: Int = 16) extends Module {
  require(addrBits > 2 && addrBits <= 32, s"BAR address width $addrBits out of range")
  require(maxReadDw >= 2 && maxReadDw <= 64 && isPow2(maxReadDw), "maxReadDw: a power of two from 2 (a 64-bit read) to 64")
  import PcieUs._

  val s_axis_cq = IO(Flipped(new PcieStreamIO(DataBits, CqUserBits)))
  val m_axis_cc = IO(new PcieStreamIO(DataBits, CcUserBits))
  val m_axil = IO(new AxiLiteIO(addrBits))
  val stat_unsupported = IO(Output(Bool()))
  val stat_read_error = IO(Output(Bool()))
  val stat_write_error = IO(Output(Bool()))

  private object S extends ChiselEnum {
    val idle, write, writeResp, nextBeat, readAddr, readData, drop, cpl = Value
  }
  private val state = RegInit(S.idle)

  // The request being served.
  private val addr = Reg(UInt(addrBits.W))
  private val dwTotal = Reg(UInt(11.W))
  private val dwDone = Reg(UInt(11.W))
  private val firstBe = Reg(UInt(4.W))
  private val lastBe = Reg(UInt(4.W))
  private val reqId = Reg(UInt(16.W))
  private val tag = Reg(UInt(8.W))
  private val func = Reg(UInt(8.W))
  private val tc = Reg(UInt(3.W))
  private val attr = Reg(UInt(3.W))
  private val cplStatus = Reg(UInt(3.W))
  private val cplIsRead = Reg(Bool())
  private val cplLowAddr = Reg(UInt(7.W))
  private val cplBytes = Reg(UInt(13.W))
  private val readWords = Reg(Vec(maxReadDw, UInt(32.W)))
  private val answerAfterDrop = Reg(Bool()) // a non-posted request is answered once all of it passed

  // The CQ beat being taken apart, word by word.
  private val beat = Reg(Vec(8, UInt(32.W)))
  private val beatKeep = Reg(UInt(8.W))
  private val beatLast = Reg(Bool())
  private val lane = Reg(UInt(3.W))

  private val cq = s_axis_cq
  private val cqWords = cq.tdata.asTypeOf(Vec(8, UInt(32.W)))
  private val dw2 = cqWords(2)
  private val dw3 = cqWords(3)
  private val reqType = dw2(14, 11)
  private val dwCount = Mux(dw2(10, 0) === 0.U, 1024.U, dw2(10, 0)) // 0 encodes 1024 words
  private val inFirstBe = cq.tuser(CqFirstBe._1, CqFirstBe._2)
  private val inLastBe = cq.tuser(CqLastBe._1, CqLastBe._2)
  private val barId = dw3(18, 16)

  private def lowIndex(be: UInt): UInt = Mux(be === 0.U, 0.U, PriorityEncoder(be))
  private def highIndex(be: UInt): UInt = Mux(be === 0.U, 0.U, 3.U - PriorityEncoder(Reverse(be)))

  stat_unsupported := false.B
  stat_read_error := false.B
  stat_write_error := false.B

  cq.tready := state === S.idle || state === S.nextBeat || state === S.drop
  when(cq.fire) {
    beat := cqWords
    beatKeep := cq.tkeep
    beatLast := cq.tlast
  }

  when(state === S.idle && cq.fire) {
    addr := cqWords(0)(addrBits - 1, 2) ## 0.U(2.W)
    dwTotal := dwCount
    dwDone := 0.U
    firstBe := inFirstBe
    lastBe := inLastBe
    reqId := dw2(31, 16)
    tag := dw3(7, 0)
    func := dw3(15, 8)
    tc := dw3(27, 25)
    attr := dw3(30, 28)
    lane := 4.U // data follows the four-word descriptor
    cplLowAddr := 0.U
    cplBytes := 4.U
    cplIsRead := false.B

    val toBar0 = barId === 0.U
    val isRead = reqType === ReqType.MemRead.U
    val isWrite = reqType === ReqType.MemWrite.U
    val posted = isWrite || reqType >= ReqType.MsgFirst.U
    val sop = cq.tuser(CqSop)
    val readBytes = Mux(dwCount === 1.U,
      Mux(inFirstBe === 0.U, 1.U, highIndex(inFirstBe) -& lowIndex(inFirstBe) +& 1.U),
      (dwCount << 2) - lowIndex(inFirstBe) - (3.U - highIndex(inLastBe)))

    // Finish with the rest of the TLP (if it has more beats), then answer or not.
    def finish(answer: Boolean): Unit = {
      state := Mux(cq.tlast, if (answer) S.cpl else S.idle, S.drop)
      answerAfterDrop := answer.B
    }
    when(!sop || cq.tuser(CqDiscontinue)) {
      // Not a request start (resynchronise on the next one), or the IP found the TLP
      // corrupt: nothing of it may take effect, and a poisoned request gets no answer.
      stat_unsupported := true.B
      finish(answer = false)
    }.elsewhen(isWrite && toBar0) {
      state := S.write
      answerAfterDrop := false.B
    }.elsewhen(isRead && toBar0) {
      cplIsRead := true.B
      cplLowAddr := cqWords(0)(6, 2) ## lowIndex(inFirstBe)(1, 0)
      cplBytes := readBytes
      cplStatus := CplStatus.Success.U
      when(dwCount > maxReadDw.U) {
        cplStatus := CplStatus.Abort.U
        stat_unsupported := true.B
        finish(answer = true)
      }.elsewhen(dwCount === 1.U && inFirstBe === 0.U) {
        readWords(0) := 0.U // zero-length read: answer without reading
        finish(answer = true)
      }.otherwise {
        state := S.readAddr
      }
    }.otherwise {
      stat_unsupported := true.B
      cplStatus := CplStatus.Unsupported.U
      when(posted) { finish(answer = false) }.otherwise { finish(answer = true) }
    }
  }
  when(state === S.drop && cq.fire && cq.tlast) {
    state := Mux(answerAfterDrop, S.cpl, S.idle)
  }

  // ---- writes: one AXI-Lite write per word
  private val awDone = RegInit(false.B)
  private val wDone = RegInit(false.B)
  private val lastWord = dwDone === dwTotal - 1.U
  private val wordBe = Mux(dwDone === 0.U, firstBe, Mux(lastWord, lastBe, "hf".U))
  private val laneHasWord = VecInit(beatKeep.asBools)(lane)

  m_axil.awvalid := state === S.write && laneHasWord && !awDone
  m_axil.wvalid := state === S.write && laneHasWord && !wDone
  m_axil.awaddr := addr
  m_axil.wdata := beat(lane)
  m_axil.wstrb := wordBe
  when(m_axil.awvalid && m_axil.awready) { awDone := true.B }
  when(m_axil.wvalid && m_axil.wready) { wDone := true.B }
  when(state === S.write) {
    when(!laneHasWord) {
      // The TLP carried fewer words than its length says: stop at what arrived.
      state := Mux(beatLast, S.idle, S.drop)
      stat_unsupported := true.B
    }.elsewhen((awDone || m_axil.awready) && (wDone || m_axil.wready)) {
      state := S.writeResp
    }
  }
  m_axil.bready := state === S.writeResp
  when(state === S.writeResp && m_axil.bvalid) {
    awDone := false.B
    wDone := false.B
    stat_write_error := m_axil.bresp =/= AxiLiteIO.RespOkay.U
    dwDone := dwDone + 1.U
    addr := addr + 4.U
    lane := lane + 1.U
    when(lastWord) {
      state := Mux(beatLast, S.idle, S.drop)
    }.elsewhen(lane === 7.U) {
      state := Mux(beatLast, S.idle, S.nextBeat)
    }.otherwise {
      state := S.write
    }
  }
  when(state === S.nextBeat && cq.fire) {
    lane := 0.U
    state := S.write
  }

  // ---- reads: one AXI-Lite read per word, collected for the completion
  m_axil.arvalid := state === S.readAddr
  m_axil.araddr := addr
  m_axil.rready := state === S.readData
  when(state === S.readAddr && m_axil.arready) { state := S.readData }
  when(state === S.readData && m_axil.rvalid) {
    val ok = m_axil.rresp === AxiLiteIO.RespOkay.U
    readWords(dwDone(log2Ceil(maxReadDw) - 1, 0)) := Mux(ok, m_axil.rdata, "hffffffff".U)
    stat_read_error := !ok
    dwDone := dwDone + 1.U
    addr := addr + 4.U
    state := Mux(lastWord, S.cpl, S.readAddr)
  }

  // ---- completion on CC: three descriptor words, then the data words
  private val cplWithData = cplIsRead && cplStatus === CplStatus.Success.U
  private val cplDw = Mux(cplWithData, dwTotal, 0.U)
  private val descriptor = Seq(
    cplBytes ## 0.U(9.W) ## cplLowAddr,                            // [28:16] byte count, [6:0] lower address
    reqId ## 0.U(2.W) ## cplStatus ## cplDw,                         // [31:16] requester, [13:11] status, [10:0] words
    0.U(1.W) ## attr ## tc ## 0.U(1.W) ## 0.U(8.W) ## func ## tag   // completer id from the IP (enable = 0)
  ).map(_.pad(32))
  private val cplBeats = (3 + maxReadDw + 7) / 8
  private val cplWords = VecInit(descriptor ++ readWords ++ Seq.fill(cplBeats * 8 - 3 - maxReadDw)(0.U(32.W)))
  private val cplBeat = RegInit(0.U(log2Ceil(cplBeats + 1).W))
  private val wordsInCpl = cplDw + 3.U
  private val beatStart = cplBeat << 3
  private val wordsLeft = wordsInCpl - beatStart
  private val isLastCplBeat = wordsLeft <= 8.U

  m_axis_cc.tvalid := state === S.cpl
  m_axis_cc.tdata := VecInit((0 until 8).map(i => cplWords(beatStart + i.U))).asUInt
  m_axis_cc.tkeep := VecInit((0 until 8).map(i => wordsLeft > i.U)).asUInt
  m_axis_cc.tlast := isLastCplBeat
  m_axis_cc.tuser := 0.U // no discontinue; parity is not used
  when(m_axis_cc.fire) {
    cplBeat := cplBeat + 1.U
    when(isLastCplBeat) {
      cplBeat := 0.U
      state := S.idle
    }
  }
}

object BarRegAccess extends Elaboratable {
  def generate(p: Params): RawModule = new BarRegAccess(p.int("addr_bits", 24), p.int("max_read_dw", 16))
}
