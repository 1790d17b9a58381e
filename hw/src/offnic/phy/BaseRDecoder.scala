package offnic.phy

import chisel3._
import chisel3.util._
import BaseR._

/** The 64b/66b decoder with the receive state machine (IEEE 802.3 49.2.13.3, figure
  * 49-15): descrambled blocks in when `en`, XGMII words out, registered, two blocks later
  * (a /T/ block is judged with the block after it: it must be followed by a start or
  * control block). A block that is no valid block type (bad sync header, unknown type,
  * invalid control or O code) or out of sequence comes out as eight /E/ (EBLOCK_R), and
  * `stat_rx_error_block` counts it. Without block lock, or with hi_ber, the output is the
  * local fault ordered set (LBLOCK_R), which tells the MAC's reconciliation layer the link
  * is down.
  */
class BaseRDecoder extends Module {
  val en = IO(Input(Bool()))
  val in = IO(Input(new BaseRBlock))
  /** Block lock and no hi_ber: blocks mean something. */
  val link_ok = IO(Input(Bool()))
  val out = IO(Output(new XgmiiWord))
  val stat_rx_error_block = IO(Output(Bool()))

  private val (kindIn, wordIn) = BaseRDecoder.decode(in)
  // The block being judged, and its kind; the incoming block is the one after it.
  private val held = Reg(new XgmiiWord)
  private val heldKind = RegInit(BlockKind.E)
  private val heldOk = RegInit(false.B)

  private object St extends ChiselEnum { val Init, C, D, T, E = Value }
  private val state = RegInit(St.Init)
  private val cur = heldKind
  private val tThenSC = cur === BlockKind.T && (kindIn === BlockKind.S || kindIn === BlockKind.C)
  private val next = WireDefault(St.E)
  switch(state) {
    is(St.Init, St.C, St.T) {
      when(cur === BlockKind.C) { next := St.C }.elsewhen(cur === BlockKind.S) { next := St.D }
    }
    is(St.D) {
      when(cur === BlockKind.D) { next := St.D }.elsewhen(tThenSC) { next := St.T }
    }
    is(St.E) {
      when(cur === BlockKind.D) { next := St.D }.elsewhen(cur === BlockKind.C) { next := St.C }
        .elsewhen(tThenSC) { next := St.T }
    }
  }

  private val outReg = Reg(new XgmiiWord)
  private val errReg = RegInit(false.B)
  errReg := false.B
  when(en) {
    held := wordIn
    heldKind := kindIn
    heldOk := link_ok
    when(!heldOk || !link_ok) {
      state := St.Init
      outReg.d := LocalFaultWord.U(64.W)
      outReg.c := LocalFaultCtrl.U(8.W)
    }.otherwise {
      state := next
      outReg.d := Mux(next === St.E, ErrorWord.U(64.W), held.d)
      outReg.c := Mux(next === St.E, 0xff.U(8.W), held.c)
      errReg := next === St.E
    }
  }
  out := outReg
  stat_rx_error_block := errReg
}

object BaseRDecoder {
  /** The kind of a block (R_TYPE) and its XGMII word (only meaningful unless the kind is E). */
  def decode(b: BaseRBlock): (BlockKind.Type, XgmiiWord) = {
    val p = b.payload
    val btype = p(7, 0)
    val isData = b.header === SyncData.U
    val isCtrl = b.header === SyncCtrl.U
    def code7(bit: Int): UInt = p(bit + 6, bit)
    def validCode(c: UInt): Bool = ctrlCodes.map(_._2.U === c).reduce(_ || _)
    def charOf(c: UInt): UInt = MuxLookup(c, XError.U(8.W))(ctrlCodes.map { case (x, k) => k.U -> x.U(8.W) })
    def validO(o: UInt): Bool = o === 0.U || o === 0xf.U
    def oChar(o: UInt): UInt = Mux(o === 0xf.U, XSig.U(8.W), XSeq.U(8.W))
    def all(s: Seq[Bool]): Bool = s.foldLeft(true.B)(_ && _)

    // Per block type: lanes (char, is control) and whether its codes are valid.
    case class Layout(valid: Bool, lanes: Seq[(UInt, Bool)])
    def dat(byteBit: Int): (UInt, Bool) = (p(byteBit + 7, byteBit), false.B)
    def ctl(ch: UInt): (UInt, Bool) = (ch, true.B)
    val c8 = (0 until 8).map(i => code7(8 + 7 * i))
    val c03 = (0 until 4).map(i => code7(8 + 7 * i))
    val c47 = (0 until 4).map(i => code7(36 + 7 * i))
    val o0 = p(35, 32)
    val o4c = p(39, 36) // O4 after C0..C3 (type 0x2d)
    val o4 = p(39, 36) // O4 after O0 (type 0x55)
    val d13 = Seq(8, 16, 24).map(dat)
    val d57 = Seq(40, 48, 56).map(dat)
    val layouts: Seq[(Int, Layout)] = Seq(
      TypeCtrl -> Layout(all(c8.map(c => validCode(c) && c =/= CodeError.U)), c8.map(c => ctl(charOf(c)))),
      TypeOs0 -> Layout(validO(o0) && all(c47.map(validCode)), Seq(ctl(oChar(o0))) ++ d13 ++ c47.map(c => ctl(charOf(c)))),
      TypeOs4 -> Layout(validO(o4c) && all(c03.map(validCode)), c03.map(c => ctl(charOf(c))) ++ Seq(ctl(oChar(o4c))) ++ d57),
      TypeOs04 -> Layout(validO(o0) && validO(o4), Seq(ctl(oChar(o0))) ++ d13 ++ Seq(ctl(oChar(o4))) ++ d57),
      TypeStart4 -> Layout(all(c03.map(validCode)), c03.map(c => ctl(charOf(c))) ++ Seq(ctl(XStart.U(8.W))) ++ d57),
      TypeOsStart -> Layout(validO(o0), Seq(ctl(oChar(o0))) ++ d13 ++ Seq(ctl(XStart.U(8.W))) ++ d57),
      TypeStart0 -> Layout(true.B, Seq(ctl(XStart.U(8.W))) ++ (1 until 8).map(i => dat(8 * i)))
    ) ++ (0 until 8).map { k =>
      val cs = (k + 1 until 8).map(j => code7(64 - 7 * (8 - j)))
      TypeTerm(k) -> Layout(all(cs.map(validCode)),
        (0 until k).map(i => dat(8 + 8 * i)) ++ Seq(ctl(XTerm.U(8.W))) ++ cs.map(c => ctl(charOf(c))))
    }
    val kinds: Map[Int, BlockKind.Type] = Map(TypeCtrl -> BlockKind.C, TypeOs0 -> BlockKind.C, TypeOs4 -> BlockKind.C,
      TypeOs04 -> BlockKind.C, TypeStart4 -> BlockKind.S, TypeOsStart -> BlockKind.S, TypeStart0 -> BlockKind.S) ++
      TypeTerm.map(_ -> BlockKind.T)

    val hit = layouts.map { case (t, _) => btype === t.U }
    val word = Wire(new XgmiiWord)
    val ctrlWord = Mux1H(hit, layouts.map { case (_, l) => Cat(l.lanes.reverse.map(_._1)) })
    val ctrlFlags = Mux1H(hit, layouts.map { case (_, l) => Cat(l.lanes.reverse.map(_._2)) })
    word.d := Mux(isData, p, ctrlWord)
    word.c := Mux(isData, 0.U, ctrlFlags)

    val kind = WireDefault(BlockKind.E)
    when(isData) { kind := BlockKind.D }
    for (((t, l), h) <- layouts.zip(hit)) {
      when(isCtrl && h && l.valid) { kind := kinds(t) }
    }
    (kind, word)
  }
}
