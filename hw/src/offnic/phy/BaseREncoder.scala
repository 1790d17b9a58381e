package offnic.phy

import chisel3._
import chisel3.util._
import BaseR._

/** What a vector of eight XGMII lanes or a 66-bit block is to the clause 49 state
  * machines (49.2.13.2.3, T_TYPE and R_TYPE). */
object BlockKind extends ChiselEnum {
  val C, S, T, D, E = Value
}

/** The 64b/66b encoder with the transmit state machine (IEEE 802.3 49.2.13.3, figure
  * 49-14): one XGMII word in, one unscrambled 66-bit block out, registered, when `en`.
  * A word that fits no block type, or one out of sequence (data without a start, a start
  * inside a frame, ...), is sent as the error block EBLOCK_T (eight /E/ codes), so the
  * far end sees the frame as errored; `stat_tx_error_block` counts those. Until the first
  * word after reset, the output is LBLOCK_T (local fault).
  */
class BaseREncoder extends Module {
  val en = IO(Input(Bool()))
  val in = IO(Input(new XgmiiWord))
  val out = IO(Output(new BaseRBlock))
  val stat_tx_error_block = IO(Output(Bool()))

  private val (kind, block) = BaseREncoder.encode(in)

  private object St extends ChiselEnum { val Init, C, D, T, E = Value }
  private val state = RegInit(St.Init)
  private val next = WireDefault(St.E)
  switch(state) {
    is(St.Init, St.C, St.T) {
      when(kind === BlockKind.C) { next := St.C }.elsewhen(kind === BlockKind.S) { next := St.D }
    }
    is(St.D) {
      when(kind === BlockKind.D) { next := St.D }.elsewhen(kind === BlockKind.T) { next := St.T }
    }
    is(St.E) {
      when(kind === BlockKind.D) { next := St.D }.elsewhen(kind === BlockKind.C) { next := St.C }
        .elsewhen(kind === BlockKind.T) { next := St.T }
    }
  }

  private val outReg = RegInit(BaseREncoder.lblockT)
  private val errReg = RegInit(false.B)
  errReg := false.B
  when(en) {
    state := next
    outReg := Mux(next === St.E, BaseREncoder.eblockT, block)
    errReg := next === St.E
  }
  out := outReg
  stat_tx_error_block := errReg
}

object BaseREncoder {
  private def blockOf(header: Int, payload: UInt): BaseRBlock = {
    val b = Wire(new BaseRBlock)
    b.header := header.U
    b.payload := payload
    b
  }
  /** Eight /E/ codes (error). */
  def eblockT: BaseRBlock =
    blockOf(SyncCtrl, (0 until 8).map(i => BigInt(CodeError) << (8 + 7 * i)).sum.U(64.W) | TypeCtrl.U)
  /** Two local fault ordered sets (reset). */
  def lblockT: BaseRBlock = blockOf(SyncCtrl, ((BigInt(1) << 24) | TypeOs04).U(64.W))

  /** The kind of an XGMII word and its block (only meaningful unless the kind is E). */
  def encode(w: XgmiiWord): (BlockKind.Type, BaseRBlock) = {
    val lane = (0 until 8).map(i => w.d(8 * i + 7, 8 * i))
    val ctl = (0 until 8).map(i => w.c(i))
    val isData = ctl.map(!_)
    // A control character a 7-bit code carries (idle, LPI, error, reserved), its code.
    val isCode = (0 until 8).map(i => ctl(i) && ctrlCodes.map(_._1.U === lane(i)).reduce(_ || _))
    val code = (0 until 8).map(i => MuxLookup(lane(i), 0.U(7.W))(ctrlCodes.map { case (x, c) => x.U -> c.U(7.W) }))
    val isCodeNotE = (0 until 8).map(i => isCode(i) && lane(i) =/= XError.U)
    val isO = (0 until 8).map(i => ctl(i) && oCodes.map(_._1.U === lane(i)).reduce(_ || _))
    val oCode = (0 until 8).map(i => Mux(lane(i) === XSig.U, 0xf.U(4.W), 0.U(4.W)))
    val isS = (0 until 8).map(i => ctl(i) && lane(i) === XStart.U)
    val isT = (0 until 8).map(i => ctl(i) && lane(i) === XTerm.U)
    def all(s: Seq[Bool], r: Range): Bool = if (r.isEmpty) true.B else r.map(s).reduce(_ && _)

    val os0 = isO(0) && all(isData, 1 to 3) // ordered set in lanes 0-3
    val os4 = isO(4) && all(isData, 5 to 7)
    val codes03 = all(isCode, 0 to 3)
    val codes47 = all(isCode, 4 to 7)
    val start4 = isS(4) && all(isData, 5 to 7)
    val c = (0 until 8).map(i => code(i))
    val d = lane

    val tC = all(isCodeNotE, 0 to 7)
    val tOs0 = os0 && codes47
    val tOs4 = codes03 && os4
    val tOs04 = os0 && os4
    val tStart4 = codes03 && start4
    val tOsStart = os0 && start4
    val tStart0 = isS(0) && all(isData, 1 to 7)
    val tTerm = (0 until 8).map(k => isT(k) && all(isData, 0 until k) && all(isCode, k + 1 to 7))
    val tData = all(isData, 0 to 7)

    val kind = WireDefault(BlockKind.E)
    when(tData) { kind := BlockKind.D }
      .elsewhen(tC || tOs0 || tOs4 || tOs04) { kind := BlockKind.C }
      .elsewhen(tStart4 || tOsStart || tStart0) { kind := BlockKind.S }
      .elsewhen(tTerm.reduce(_ || _)) { kind := BlockKind.T }

    val z4 = 0.U(4.W)
    def codes(r: Range): UInt = Cat(r.reverse.map(c))
    val d13 = w.d(31, 8)
    val d57 = w.d(63, 40)
    val payloads: Seq[(Bool, UInt)] = Seq(
      tC -> Cat(codes(0 to 7), TypeCtrl.U(8.W)),
      tOs0 -> Cat(codes(4 to 7), oCode(0), d13, TypeOs0.U(8.W)),
      tOs4 -> Cat(d57, oCode(4), codes(0 to 3), TypeOs4.U(8.W)),
      tOs04 -> Cat(d57, oCode(4), oCode(0), d13, TypeOs04.U(8.W)),
      tStart4 -> Cat(d57, z4, codes(0 to 3), TypeStart4.U(8.W)),
      tOsStart -> Cat(d57, z4, oCode(0), d13, TypeOsStart.U(8.W)),
      tStart0 -> Cat(w.d(63, 8), TypeStart0.U(8.W))
    ) ++ (0 until 8).map { k =>
      val blank = 56 - 8 * k - 7 * (7 - k)
      val parts = Seq(codes(k + 1 to 7)).filter(_ => k < 7) ++ Seq(0.U(blank.max(1).W)).filter(_ => blank > 0) ++
        Seq(w.d(8 * k - 1, 0)).filter(_ => k > 0) ++ Seq(TypeTerm(k).U(8.W))
      tTerm(k) -> Cat(parts)
    }
    val ctrlPayload = Mux1H(payloads.map(_._1), payloads.map(_._2))
    val b = Wire(new BaseRBlock)
    b.header := Mux(tData, SyncData.U, SyncCtrl.U)
    b.payload := Mux(tData, w.d, ctrlPayload)
    (kind, b)
  }
}
