package offnic.eth

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.AxisIO

private[eth] object TxState extends ChiselEnum {
  val gap, data, pad = Value
}

/** One 8-byte word between the transmit pipeline's stages, in frame alignment (the
  * preamble word's /S/ in lane 0; the lane-4 shift is applied last).
  */
private[eth] class TxWord extends Bundle {
  val pre = Bool() // the preamble word: a frame starts
  val lane4 = Bool() // with `pre`: this frame goes out starting in lane 4
  val body = Bool() // frame bytes (data or padding)
  val last = Bool() // with `body`: the final body word, `n` bytes, FCS follows
  val err = Bool() // with `last`: end the frame with /E/ instead of the FCS
  val n = UInt(4.W) // with `last`: 0..8 body bytes in this word
  val data = UInt(64.W)
}

/** 10G/25G Ethernet transmit MAC: frames from an AXI-Stream port onto a 64-bit XGMII.
  *
  * In: `s_axis`, 8 bytes a beat, packed (full `tkeep` except on the last beat, low bytes
  * kept), carrying the MAC frame from the destination address to the end of the payload
  * (no FCS). `tuser(0)` on any beat (normally the last) aborts the frame: it still goes
  * out, but ends with /E/ in place of its FCS, so every receiver drops it.
  *
  * Out: the frame on XGMII: /S/ + 6 x 0x55 + SFD, the payload zero-padded to 60 bytes,
  * the FCS, /T/, then idles for the inter-frame gap. Every output is a register.
  *
  * Frame starts (/S/) go in lane 0 or lane 4, whichever is the earlier allowed one. The
  * gap (counted from /T/ to /S/, /T/ included, as in IEEE 802.3 46.3.1.4) is kept with a
  * deficit idle count (DIC): to reach an aligned lane a start may come up to 3 bytes early
  * if the bytes it saves have been made up by starts that came late, so the deficit stays
  * in 0..3, back-to-back gaps are `ifg - 3` .. `ifg + 3` bytes, and their average is
  * exactly `ifg`. `cfg_ifg` below 8 acts as 8: then the shortest gap is 5 bytes, so a word
  * never holds the end of one frame and the start of the next (no 64b/66b block type
  * could carry that). 802.3 asks for 12 (the default the NIC programs).
  *
  * Line rate: back to back, a frame of L payload bytes takes exactly
  * 8 + max(L, 60) + 4 + ifg bytes of the wire on average, for every L; `s_axis_tready` is
  * high exactly in the cycles a payload beat is needed.
  *
  * Underrun: XGMII cannot wait. If `s_axis_tvalid` is low in a cycle the next beat of a
  * frame is needed, the frame is ended there with /E/ /E/ /E/ /E/ /T/ (stat_tx_error) and
  * the rest of that frame, up to its `tlast`, is accepted and thrown away. Feed the MAC
  * from a packet FIFO (whole frames) and this never happens.
  *
  * Statistics, one-cycle pulses for the NIC's counters (nothing is counted here):
  *  - `stat_tx_frame`: a frame went out whole, with its FCS;
  *  - `stat_tx_error`: a frame went out ended by /E/ (aborted or underrun);
  *  - `stat_tx_bytes`: with either pulse, the frame's bytes between SFD and /T/ (padding
  *    and FCS included; for an /E/-ended frame the 4 /E/ count as its FCS), saturating
  *    at 65535; zero in other cycles.
  *
  * Pipeline (one word a cycle, 5 cycles from a beat's acceptance to the wire):
  *  1. framer: chooses preamble / payload / padding / idle for the word and decides the
  *     starts (gap countdown and DIC);
  *  2. CRC: the running CRC over full 8-byte body words (one XOR tree per bit, up to 96
  *     inputs); beside it, off its loop, the last word's variable-length step (0..8
  *     bytes) in two register stages (`Crc32.stepNPiped`: 4 bytes or none, then 0..4)...
  *  3. ...whose result, the frame's final CRC, is ready when the word reaches the merge;
  *  4. merge: payload, FCS (or /E/), /T/ and idles laid into the word; a FCS that does not
  *     fit spills into the next word (always idle in frame alignment);
  *  5. lane shift: frames that start in lane 4 go out four lanes later (lanes 4-7 of a
  *     word are held for lanes 0-3 of the next).
  */
class EthMacTx extends Module {
  val s_axis = IO(Flipped(new AxisIO(Xgmii.axisParams)))
  val xgmii_txd = IO(Output(UInt(64.W)))
  val xgmii_txc = IO(Output(UInt(8.W)))
  /** Inter-frame gap in bytes (802.3: 12). Values below 8 act as 8. */
  val cfg_ifg = IO(Input(UInt(8.W)))
  val stat_tx_frame = IO(Output(Bool()))
  val stat_tx_error = IO(Output(Bool()))
  val stat_tx_bytes = IO(Output(UInt(16.W)))

  private val E = Xgmii.Error.U(8.W)
  private val T = Xgmii.Term.U(8.W)
  private val I = Xgmii.Idle.U(8.W)

  /** Register a TxWord; the flags are reset, the data is not. */
  private def stage(in: TxWord): TxWord = {
    val r = Reg(new TxWord)
    r := in
    when(reset.asBool) {
      r.pre := false.B
      r.body := false.B
      r.last := false.B
    }
    r
  }

  // ---------------------------------------------------------------- 1. framer
  private val state = RegInit(TxState.gap)
  // Gap bytes still owed before a start in lane 0 of this cycle's word (negative: more
  // than enough idle has passed; held at -8, where every decision is the same).
  private val need = RegInit((-8).S(11.W))
  private val deficit = RegInit(0.U(2.W)) // bytes of gap owed to the average (DIC)
  private val discarding = RegInit(false.B) // dropping the rest of an underrun frame
  private val words = Reg(UInt(4.W)) // body words so far, saturating at 8 (padding)
  private val aborted = Reg(Bool()) // tuser(0) seen in this frame
  private val lane4 = Reg(Bool()) // this frame starts in lane 4

  private val ifg = Mux(cfg_ifg < 8.U, 8.U(8.W), cfg_ifg)
  private val needD = need + deficit.zext
  private val lane0Ok = needD <= 3.S // start in lane 0: gap >= ifg + deficit - 3
  private val lane4Ok = needD <= 7.S // start in lane 4: 4 bytes more gap
  private val start = state === TxState.gap && !discarding && s_axis.tvalid && lane4Ok

  s_axis.tready := state === TxState.data || discarding

  private val word = WireDefault(0.U.asTypeOf(new TxWord))

  /** The final body word goes out this cycle with `n` bytes: count the gap from its /T/,
    * which is `n + 4` (FCS) bytes into the word, 4 lanes later if the frame is shifted.
    * Owed before lane 0 of the next word: ifg - (8 - (n + 4 + shift)).
    */
  private def finish(n: UInt): Unit = {
    state := TxState.gap
    need := (ifg +& n +& Mux(lane4, 4.U, 0.U)).zext - 4.S
  }

  when(state === TxState.gap && !start) {
    need := Mux(need > 0.S, need - 8.S, (-8).S)
  }
  when(start) {
    word.pre := true.B
    word.lane4 := !lane0Ok
    val owed = needD - Mux(lane0Ok, 0.S, 4.S) // <= 3 by the choice above
    deficit := Mux(owed > 0.S, owed.asUInt(1, 0), 0.U)
    lane4 := !lane0Ok
    words := 0.U
    aborted := false.B
    state := TxState.data
  }

  private val beatBytes = Mux(s_axis.tlast, PopCount(s_axis.tkeep), 8.U)
  private val beatData = s_axis.tdata & FillInterleaved(8, s_axis.tkeep)
  private val abortNow = aborted || s_axis.tuser.get(0)
  private val wordsNext = Mux(words === 8.U, 8.U, words + 1.U)

  when(state === TxState.data) {
    word.body := true.B
    when(s_axis.tvalid) {
      word.data := beatData
      word.err := abortNow
      word.n := 8.U
      aborted := abortNow
      words := wordsNext
      when(s_axis.tlast) {
        when(words === 8.U || (words === 7.U && beatBytes >= 4.U)) {
          word.last := true.B // 64 bytes or more with the FCS: no padding
          word.n := beatBytes
          finish(beatBytes)
        }.elsewhen(words === 7.U) {
          word.last := true.B // padding ends inside this word, at byte 60
          word.n := 4.U
          finish(4.U)
        }.otherwise {
          state := TxState.pad // the rest of this word and more words are padding
        }
      }
    }.otherwise {
      // Underrun: end the frame now with /E/ and drop the rest of it.
      word.last := true.B
      word.err := true.B
      word.n := 0.U
      discarding := true.B
      finish(0.U)
    }
  }
  when(state === TxState.pad) {
    word.body := true.B
    word.err := aborted
    word.n := 8.U
    words := wordsNext
    when(words === 7.U) {
      word.last := true.B
      word.n := 4.U
      finish(4.U)
    }
  }
  when(discarding && s_axis.tvalid && s_axis.tlast) {
    discarding := false.B
  }

  private val a = stage(word)

  // ------------------------------------------------------------------- 2./3. CRC
  private val crc = RegInit(Crc32.Init.U(32.W))
  when(a.pre) {
    crc := Crc32.Init.U
  }.elsewhen(a.body && !a.last) {
    crc := Crc32.step(crc, a.data, 8)
  }
  // The register value after the whole frame, two cycles after its last word.
  private val fcsCrc = Crc32.stepNPiped(crc, a.data, a.n)

  private val d2 = stage(stage(a)) // meets fcsCrc

  // --------------------------------------------------------------------- 4. merge
  private val mD = RegInit(UInt(64.W), Xgmii.idleData)
  private val mC = RegInit(0xff.U(8.W))
  private val mStart = RegInit(false.B)
  private val mLane4 = Reg(Bool())
  private val tailD = Reg(UInt(64.W))
  private val tailC = Reg(UInt(8.W))
  private val tailValid = RegInit(false.B)

  // The final word and the one after it as 16 lanes, for each possible n: body bytes,
  // then 4 FCS bytes (or /E/), /T/, idles.
  private val inBytes = VecInit.tabulate(8)(i => d2.data(8 * i + 7, 8 * i))
  private val ending: Seq[(UInt, Bool)] = (0 until 16).map { i =>
    val options = (0 to 8).map { n =>
      val lane: (UInt, Bool) =
        if (i < n) (inBytes(i), false.B)
        else if (i < n + 4) (Mux(d2.err, E, Crc32.fcsByte(fcsCrc, i - n)), d2.err)
        else if (i == n + 4) (T, true.B)
        else (I, true.B)
      n.U -> lane
    }
    (MuxLookup(d2.n, I)(options.map { case (k, v) => k -> v._1 }),
     MuxLookup(d2.n, true.B)(options.map { case (k, v) => k -> v._2 }))
  }
  private def pack(lanes: Seq[(UInt, Bool)]): (UInt, UInt) =
    (Cat(lanes.reverse.map(_._1)), Cat(lanes.reverse.map(_._2)))

  mStart := d2.pre
  mLane4 := d2.lane4
  tailValid := false.B
  when(d2.pre) {
    mD := Xgmii.preambleWord.U(64.W)
    mC := 1.U
  }.elsewhen(d2.body && !d2.last) {
    mD := d2.data
    mC := 0.U
  }.elsewhen(d2.last) {
    val (lowD, lowC) = pack(ending.take(8))
    val (highD, highC) = pack(ending.drop(8))
    mD := lowD
    mC := lowC
    tailD := highD
    tailC := highC
    tailValid := d2.n >= 4.U // FCS or /T/ spill into the next word
  }.otherwise {
    mD := Mux(tailValid, tailD, Xgmii.idleData)
    mC := Mux(tailValid, tailC, 0xff.U)
  }

  // Statistics, at the frame's final word.
  private val bodyBytes = Reg(UInt(16.W))
  private def satAdd(x: UInt, y: UInt): UInt = {
    val s = x +& y
    Mux(s(16), 0xffff.U(16.W), s(15, 0))
  }
  when(d2.pre) {
    bodyBytes := 0.U
  }.elsewhen(d2.body && !d2.last) {
    bodyBytes := satAdd(bodyBytes, 8.U)
  }
  stat_tx_frame := RegNext(d2.last && !d2.err, false.B)
  stat_tx_error := RegNext(d2.last && d2.err, false.B)
  stat_tx_bytes := RegNext(Mux(d2.last, satAdd(bodyBytes, d2.n +& Xgmii.FcsBytes.U), 0.U), 0.U)

  // ---------------------------------------------------------------- 5. lane shift
  private val shifted = RegInit(false.B) // the frame being sent started in lane 4
  private val hiD = Reg(UInt(32.W)) // lanes 4-7 of the last merged word
  private val hiC = Reg(UInt(4.W))
  private val outD = RegInit(UInt(64.W), Xgmii.idleData)
  private val outC = RegInit(0xff.U(8.W))

  private val shiftNow = Mux(mStart, mLane4, shifted)
  when(mStart) {
    shifted := mLane4
  }
  // A start in lane 4 has idles in lanes 0-3 (the gap is >= 5 bytes, so the previous
  // frame ended in an earlier word); later words take lanes 0-3 from the word before.
  private val lowD = Mux(mStart, Xgmii.idleData(31, 0), hiD)
  private val lowC = Mux(mStart, 0xf.U(4.W), hiC)
  outD := Mux(shiftNow, Cat(mD(31, 0), lowD), mD)
  outC := Mux(shiftNow, Cat(mC(3, 0), lowC), mC)
  hiD := mD(63, 32)
  hiC := mC(7, 4)

  xgmii_txd := outD
  xgmii_txc := outC
}

object EthMacTx extends Elaboratable {
  def generate(p: Params): RawModule = new EthMacTx
}
