package offnic.phy

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.cdc.GraySync
import offnic.eth.Xgmii

/** One XGMII column: four lanes (IEEE 802.3 clause 46 transfers 32 bits a column). */
object XgmiiColumn {
  /** All four lanes /I/: the only thing the rate adapter may add or remove. */
  def isIdle(d: UInt, c: UInt): Bool = c === 0xf.U && d === Fill(4, Xgmii.Idle.U(8.W))
  def lane(d: UInt, c: UInt, i: Int, ch: Int): Bool = c(i) && d(8 * i + 7, 8 * i) === ch.U
}

/** Rate adapter (elastic buffer) for 64-bit XGMII between two clock domains whose word
  * rates are nominally equal but drift apart: the MAC clock (390.625 MHz at 25G, 156.25 MHz
  * at 10G, each +-100 ppm) and the transceiver's user clock (402.83 / 161.13 MHz, from a
  * reference clock of its own, +-100 ppm), where the PCS takes or gives a word only 32
  * cycles in 33 (its gearbox). Used both ways: MAC -> PCS (`in_valid` always 1,
  * `out_ready` = the PCS's `xgmii_tx_ready`) and PCS -> MAC (`in_valid` = the PCS's
  * `xgmii_rx_valid`, `out_ready` always 1).
  *
  * As IEEE 802.3 clauses 46/49 allow a PCS to do (49.2.4.7: idles inserted or deleted to
  * adapt clock rates), only idles change, only between frames:
  *  - the write side deletes one all-idle column (four /I/ lanes) in a word when the
  *    buffer is filling (its view >= `highMark` words), only if the column before it,
  *    as kept, was all-idle too: at least one idle column stays after the column that ends
  *    a frame, and a start stays in lane 0 or 4 (the stream shifts by whole columns). At
  *    most one column per word is deleted; the MAC's gaps (9..15 bytes, EthMacTx) hold two
  *    idle columns or more, so every gap can give one, far more than 200 ppm needs;
  *  - the read side inserts a whole idle word when the buffer is emptying (its view below
  *    `lowMark`) and the last word sent left no frame open (after /T/ or between frames).
  * Each side sees the other's pointer late (two-flop Gray synchronisers), so its view
  * errs toward acting early, never toward overflow.
  *
  * Bad cases, counted, never silent: a word that finds the buffer full is dropped
  * (`stat_overflows`) and the next word written is an all-/E/ word, so the frame it cut
  * arrives marked bad; a read that finds the buffer empty inside a frame sends an /E/
  * word (`stat_underflows`). Neither happens within the rated clock tolerance.
  *
  * Counters: `stat_deleted` (columns, write domain), `stat_inserted` (words, read domain),
  * 32-bit wrapping. Reset: `in_rst` and `out_rst` asserted together (one source,
  * synchronised into each domain), as for [[offnic.axis.AxisAsyncFifo]].
  */
class XgmiiRateAdapter(val depth: Int = 32, val lowMark: Int = 8, val highMark: Int = 20) extends RawModule {
  require(isPow2(depth) && depth >= 16 && lowMark > 2 && highMark > lowMark + 6 && highMark < depth - 6)

  val in_clk = IO(Input(Clock()))
  val in_rst = IO(Input(Bool()))
  val in_valid = IO(Input(Bool()))
  val in_d = IO(Input(UInt(64.W)))
  val in_c = IO(Input(UInt(8.W)))
  val out_clk = IO(Input(Clock()))
  val out_rst = IO(Input(Bool()))
  val out_ready = IO(Input(Bool()))
  val out_d = IO(Output(UInt(64.W)))
  val out_c = IO(Output(UInt(8.W)))
  val stat_deleted = IO(Output(UInt(32.W)))
  val stat_overflows = IO(Output(UInt(32.W)))
  val stat_inserted = IO(Output(UInt(32.W)))
  val stat_underflows = IO(Output(UInt(32.W)))

  private val ptrBits = log2Ceil(depth) + 1
  private val ram = Mem(depth, UInt(72.W)) // {c, d}: LUT-RAM, written in, read out
  private val wrGray = Wire(UInt(ptrBits.W))
  private val rdGray = Wire(UInt(ptrBits.W))
  private val errorWord = Cat(Fill(8, 1.U(1.W)), Fill(8, Xgmii.Error.U(8.W)))
  private val idleWord = Cat(Fill(8, 1.U(1.W)), Xgmii.idleData)

  // ---- Write side: delete idle columns, repack columns into words, write.
  withClockAndReset(in_clk, in_rst) {
    val wrBin = RegInit(0.U(ptrBits.W))
    val wrGrayReg = RegInit(0.U(ptrBits.W))
    val rdSeen = GraySync.fromGray(GraySync(rdGray, "ra_rd_gray").asTypeOf(UInt(ptrBits.W)))
    val fill = wrBin - rdSeen
    val full = fill === depth.U
    val filling = fill >= highMark.U

    val prevIdle = RegInit(false.B) // the last column kept was all-idle
    val hold = RegInit(false.B) // one column kept but not yet written (the stream is shifted)
    val holdCol = Reg(UInt(36.W)) // {c(3:0), d(31:0)}
    val poison = RegInit(false.B)
    val deleted = RegInit(0.U(32.W))
    val overflows = RegInit(0.U(32.W))

    val loIdle = XgmiiColumn.isIdle(in_d(31, 0), in_c(3, 0))
    val hiIdle = XgmiiColumn.isIdle(in_d(63, 32), in_c(7, 4))
    val lo = Cat(in_c(3, 0), in_d(31, 0))
    val hi = Cat(in_c(7, 4), in_d(63, 32))
    val delLo = filling && loIdle && prevIdle
    val delHi = filling && hiIdle && !delLo && loIdle // lo kept (not deleted) and idle
    val one = delLo || delHi // one column deleted: the other is the only one kept
    val kept = Mux(delLo, hi, lo)
    // Column pairs to {c(7:0), d(63:0)}: `a` is the earlier (lanes 0-3).
    def word(a: UInt, b: UInt): UInt = Cat(b(35, 32), a(35, 32), b(31, 0), a(31, 0))
    val writeNow = in_valid && (hold || !one)
    val wordNow = Mux(hold, word(holdCol, Mux(one, kept, lo)), word(lo, hi))

    when(in_valid) {
      prevIdle := Mux(delLo, hiIdle, hiIdle) // the last column kept is hi, or lo when hi went
      when(delHi) { prevIdle := loIdle }
      when(one) { deleted := deleted + 1.U }
      when(hold) {
        hold := !one
        holdCol := hi
      }.elsewhen(one) {
        hold := true.B
        holdCol := kept
      }
      when(writeNow) {
        when(full) {
          overflows := overflows + 1.U
          poison := true.B
        }.otherwise {
          ram.write(wrBin(ptrBits - 2, 0), Mux(poison, errorWord, wordNow))
          poison := false.B
          wrBin := wrBin + 1.U
          wrGrayReg := GraySync.toGray(wrBin + 1.U)
        }
      }
    }
    wrGray := wrGrayReg
    stat_deleted := deleted
    stat_overflows := overflows
  }

  // ---- Read side: a registered output word; the next one is the buffer's head or an
  // inserted idle word.
  withClockAndReset(out_clk, out_rst) {
    val rdBin = RegInit(0.U(ptrBits.W))
    val rdGrayReg = RegInit(0.U(ptrBits.W))
    val wrSeen = GraySync.fromGray(GraySync(wrGray, "ra_wr_gray").asTypeOf(UInt(ptrBits.W)))
    val fill = wrSeen - rdBin
    val empty = fill === 0.U
    val emptying = fill < lowMark.U
    val outWord = RegInit(idleWord)
    val inFrame = RegInit(false.B) // the last word sent left a frame open
    val inserted = RegInit(0.U(32.W))
    val underflows = RegInit(0.U(32.W))

    val head = ram.read(rdBin(ptrBits - 2, 0))
    val insert = !inFrame && emptying
    val underflow = inFrame && empty
    val next = Mux(insert || underflow, Mux(underflow, errorWord, idleWord), head)
    val nd = next(63, 0)
    val nc = next(71, 64)
    // Open after this word: a start in lane 4, or in lane 0 with no terminate, or already
    // open with no terminate.
    val term = (0 until 8).map(i => XgmiiColumn.lane(nd, nc, i, Xgmii.Term)).reduce(_ || _)
    val start0 = XgmiiColumn.lane(nd, nc, 0, Xgmii.Start)
    val start4 = XgmiiColumn.lane(nd, nc, 4, Xgmii.Start)
    when(out_ready) {
      outWord := next
      inFrame := start4 || ((start0 || inFrame) && !term)
      when(insert) { inserted := inserted + 1.U }
      when(underflow) { underflows := underflows + 1.U }
      when(!insert && !underflow) {
        rdBin := rdBin + 1.U
        rdGrayReg := GraySync.toGray(rdBin + 1.U)
      }
    }
    rdGray := rdGrayReg
    out_d := outWord(63, 0)
    out_c := outWord(71, 64)
    stat_inserted := inserted
    stat_underflows := underflows
  }
}

object XgmiiRateAdapter extends Elaboratable {
  /** `depth` (32 words), `low_mark` (8), `high_mark` (20). */
  def generate(p: Params): RawModule =
    new XgmiiRateAdapter(p.int("depth", 32), p.int("low_mark", 8), p.int("high_mark", 20))
}
