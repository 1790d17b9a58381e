package offnic.eth

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}

/** 10G/25G Ethernet receive MAC: frames from a 64-bit XGMII onto an AXI-Stream port.
  *
  * Out: `m_axis`, 8 bytes a beat, packed, the MAC frame from the destination address to
  * the end of the payload (preamble, SFD and FCS stripped). There is no `tready`: a wire
  * cannot wait, so the MAC never stalls and the port's packet FIFO downstream must take
  * every beat (`tvalid` may drop between beats of a frame). `tuser(0)` on the last beat
  * marks a bad frame, which that FIFO drops.
  *
  * Framing, per 802.3 clauses 46/49 for a 64-bit XGMII:
  *  - /S/ starts a frame in lane 0 or lane 4 (elsewhere it is not a start). The 7 bytes
  *    after /S/ are the preamble and SFD, taken as they come (their values are not
  *    checked). A control character among them makes the start a fragment: no frame, no
  *    statistic, nothing on `m_axis`.
  *  - The frame then runs to the first control character. /T/ ends it normally; any
  *    other (/E/, /I/, an ordered set, /S/ ...) ends it as an XGMII error. An /S/ that
  *    cuts a frame short in lane 0 or 4 also starts the next frame, even in the same
  *    word, and a frame may start in lane 4 of the word where the previous one ended in
  *    lanes 0-3; bytes between frames are ignored until the next /S/.
  *  - A frame longer than `cfg_max_frame_len` (FCS included) is oversize: it is cut off
  *    in the first word that passes the limit (so at most limit + 8 bytes are taken, and
  *    `m_axis` never carries more than limit + 4), marked bad, and the rest of it on the
  *    wire is ignored.
  *
  * Every frame gets exactly one verdict, in this order of precedence: XGMII error,
  * oversize, runt (fewer than 64 bytes with the FCS), FCS error, good. A frame is
  * delivered on `m_axis` without its last 4 bytes (the FCS, or what stands in its place
  * when the frame was cut), with `tuser(0)` = 1 unless it is good; a frame of 4 bytes or
  * fewer has nothing to deliver and only counts.
  *
  * Statistics, one-cycle pulses (exactly one per frame, in the cycle its last beat
  * leaves), for the NIC's counters:
  * `stat_rx_frame_good`, `stat_rx_fcs_error`, `stat_rx_runt`, `stat_rx_oversize`,
  * `stat_rx_xgmii_error`; and `stat_rx_bytes`, with any of them, the frame's length from
  * after the SFD up to its end (FCS included; for a cut-off frame, what was taken),
  * saturating at 65535, zero in other cycles.
  *
  * Pipeline (one word a cycle):
  *  0. input registers; the word before is kept too, so that a frame that started in
  *     lane 4 is read realigned (lanes 4-7 of one word, then lanes 0-3 of the next);
  *  1. framer: start detection, the first control character in the frame's word, the
  *     length checks (runt: fewer than 8 whole words before the end word; oversize: a
  *     down-counter of bytes still allowed);
  *  2. CRC over full words; beside it, off its loop, the end word's variable-length
  *     step (0..8 bytes) in two register stages (`Crc32.stepNPiped`); FCS stripping (a
  *     word is held until the next one shows how much of it is FCS);
  *  3. (second CRC stage);
  *  4. compare with the CRC residue, verdict; the last beat leaves with `tuser` and the
  *     statistic pulses.
  */
class EthMacRx extends Module {
  val xgmii_rxd = IO(Input(UInt(64.W)))
  val xgmii_rxc = IO(Input(UInt(8.W)))
  val m_axis = IO(new AxisNoReadyIO(Xgmii.axisParams))
  /** Longest good frame in bytes, FCS included (1518, 1522 with a VLAN tag, 9018 jumbo). */
  val cfg_max_frame_len = IO(Input(UInt(16.W)))
  val stat_rx_frame_good = IO(Output(Bool()))
  val stat_rx_fcs_error = IO(Output(Bool()))
  val stat_rx_runt = IO(Output(Bool()))
  val stat_rx_oversize = IO(Output(Bool()))
  val stat_rx_xgmii_error = IO(Output(Bool()))
  val stat_rx_bytes = IO(Output(UInt(16.W)))

  private def lanes(d: UInt): Vec[UInt] = VecInit.tabulate(8)(i => d(8 * i + 7, 8 * i))
  /** `x` one cycle later, in a register of `w` bits (not reset: data). */
  private def delay(x: UInt, w: Int): UInt = {
    val r = Reg(UInt(w.W))
    r := x
    r
  }
  private def satAdd(x: UInt, y: UInt): UInt = {
    val s = x +& y
    Mux(s(16), 0xffff.U(16.W), s(15, 0))
  }

  // ------------------------------------------------------------ 0. input registers
  // Reset to idles, so that no start is seen in whatever the registers held before.
  private val curD = RegInit(UInt(64.W), Xgmii.idleData)
  private val curC = RegInit(UInt(8.W), 0xff.U)
  private val prevD = RegInit(UInt(64.W), Xgmii.idleData)
  private val prevC = RegInit(UInt(8.W), 0xff.U)
  curD := xgmii_rxd
  curC := xgmii_rxc
  prevD := curD
  prevC := curC

  // The two ways to read the frame: as the words come (start in lane 0) or four lanes on
  // (start in lane 4: lanes 4-7 of the word before, then lanes 0-3 of this one).
  private val a0D = prevD
  private val a0C = prevC
  private val a4D = Cat(curD(31, 0), prevD(63, 32))
  private val a4C = Cat(curC(3, 0), prevC(7, 4))

  // ---------------------------------------------------------------------- 1. framer
  private val inFrame = RegInit(false.B) // past the preamble, in the frame's bytes
  private val lane4 = Reg(Bool()) // the frame started in lane 4
  private val words = Reg(UInt(4.W)) // whole words so far, saturating at 8 (runt check)
  private val allowed = Reg(UInt(16.W)) // bytes the frame may still have (oversize)
  private val count = Reg(UInt(16.W)) // bytes so far, saturating

  private val aD = Mux(lane4, a4D, a0D)
  private val aC = Mux(lane4, a4C, a0C)
  private val hasCtrl = aC.orR
  private val ctrlOH = PriorityEncoderOH(aC)
  private val j = OHToUInt(ctrlOH) // first control character's lane
  private val isTerm = Mux1H(ctrlOH, lanes(aD).map(_ === Xgmii.Term.U))
  private val n = Mux(hasCtrl, j, 8.U(4.W)) // frame bytes in this word
  private val over = allowed(15, 4) === 0.U && allowed(3, 0) < n
  private val end = inFrame && (hasCtrl || over)

  // Starts. /S/ at lane 0 or 4 of the word before, with a clean preamble after it, when
  // no frame is running there: no frame at all, or the running one ended at or before it.
  private val s0 = prevC(0) && prevD(7, 0) === Xgmii.Start.U
  private val s4 = prevC(4) && prevD(39, 32) === Xgmii.Start.U
  private val clean0 = prevC(7, 1) === 0.U
  private val clean4 = prevC(7, 5) === 0.U && curC(3, 0) === 0.U
  private val endedBy0 = end && hasCtrl && !lane4 && j === 0.U
  private val endedBy4 = end && hasCtrl && Mux(lane4, j === 0.U, j <= 4.U)
  private val go0 = s0 && clean0 && (!inFrame || endedBy0)
  private val go4 = s4 && clean4 && (!inFrame || endedBy4) && !go0

  when(inFrame && !end) {
    words := Mux(words === 8.U, 8.U, words + 1.U)
    allowed := allowed - 8.U
    count := satAdd(count, 8.U)
  }
  when(go0 || go4) {
    inFrame := true.B
    lane4 := go4
    words := 0.U
    allowed := cfg_max_frame_len
    count := 0.U
  }.elsewhen(end) {
    inFrame := false.B
  }

  // The word of frame bytes, to the next stages.
  private val fValid = RegNext(inFrame, false.B)
  private val fEnd = RegNext(end, false.B)
  private val fData = delay(aD, 64)
  private val fN = delay(n, 4)
  private val fXerr = RegNext(hasCtrl && !isTerm)
  private val fOver = RegNext(over)
  private val fRunt = RegNext(hasCtrl && words < 8.U)
  private val fBytes = delay(satAdd(count, n), 16)

  // -------------------------------------------------------------------- 2./3. CRC
  private val crc = RegInit(Crc32.Init.U(32.W))
  when(fValid) {
    crc := Mux(fEnd, Crc32.Init.U, Crc32.step(crc, fData, 8))
  }
  private val capValid = RegNext(fValid && fEnd, false.B)
  private val capFlags = delay(Cat(fXerr, fOver, fRunt), 3)
  private val capBytes = delay(fBytes, 16)

  private val sValid = RegNext(capValid, false.B)
  // The register after the end word's bytes (the FCS's included), two cycles later.
  private val sCrc = Crc32.stepNPiped(crc, fData, fN)
  private val sFlags = delay(capFlags, 3)
  private val sBytes = delay(capBytes, 16)

  // ----------------------------------------------------------------- 4. verdict
  private val xerr = sFlags(2)
  private val oversize = !xerr && sFlags(1)
  private val runt = !xerr && !oversize && sFlags(0)
  private val fcsBad = !xerr && !oversize && !runt && sCrc =/= Crc32.Residue.U
  private val good = !xerr && !oversize && !runt && !fcsBad
  stat_rx_frame_good := RegNext(sValid && good, false.B)
  stat_rx_fcs_error := RegNext(sValid && fcsBad, false.B)
  stat_rx_runt := RegNext(sValid && runt, false.B)
  stat_rx_oversize := RegNext(sValid && oversize, false.B)
  stat_rx_xgmii_error := RegNext(sValid && xerr, false.B)
  stat_rx_bytes := RegNext(Mux(sValid, sBytes, 0.U), 0.U)

  // ------------------------------------------------------------ 2. FCS stripping
  // A word is held (h) until the next shows where the frame ends. At the end word with
  // n bytes: n >= 5 -> the held word leaves whole and the end word's first n-4 bytes
  // become the last beat (p); n <= 4 -> the held word's first n+4 bytes are the last
  // beat. The last beat leaves one cycle after the end word, so the verdict (stage 4)
  // meets it two cycles later.
  private val keepMask = VecInit((0 to 8).map(k => ((1 << k) - 1).U(8.W)))
  private val hValid = RegInit(false.B)
  private val hData = Reg(UInt(64.W))
  private val pValid = RegInit(false.B)
  private val pData = Reg(UInt(64.W))
  private val pKeep = Reg(UInt(8.W))

  private val oValid = WireDefault(pValid) // the beat leaving this stage
  private val oData = WireDefault(pData)
  private val oKeep = WireDefault(pKeep)
  private val oLast = WireDefault(true.B)
  pValid := false.B
  private def emitHeld(): Unit = {
    // Never in the same cycle as p: p is loaded at a frame's end word, which empties h,
    // and the next frame's first word cannot be held before the cycle after.
    oValid := true.B
    oData := hData
    oKeep := 0xff.U
    oLast := false.B
  }
  when(fValid) {
    when(!fEnd) {
      when(hValid) { emitHeld() }
      hValid := true.B
      hData := fData
    }.otherwise {
      hValid := false.B
      when(fN >= 5.U) {
        when(hValid) { emitHeld() }
        pValid := true.B
        pData := fData
        pKeep := keepMask(fN - 4.U)
      }.otherwise {
        pValid := hValid
        pData := hData
        pKeep := keepMask(fN + 4.U)
      }
    }
  }

  private val o1Valid = RegNext(oValid, false.B)
  private val o1Data = delay(oData, 64)
  private val o1Keep = delay(oKeep, 8)
  private val o1Last = RegNext(oLast)

  m_axis.tvalid := RegNext(o1Valid, false.B)
  m_axis.tdata := delay(o1Data, 64)
  m_axis.tkeep := delay(o1Keep, 8)
  m_axis.tlast := RegNext(o1Last)
  m_axis.tuser := RegNext(o1Valid && o1Last && sValid && !good)
}

object EthMacRx extends Elaboratable {
  def generate(p: Params): RawModule = new EthMacRx
}
