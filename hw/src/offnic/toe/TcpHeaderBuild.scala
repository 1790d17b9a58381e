package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisIO, AxisParams}
import offnic.offload.OnesSum

/** A connection's addresses, from its header RAM (written at install). */
class ConnAddr extends Bundle {
  val dstMac = UInt(48.W) // the peer's
  val srcMac = UInt(48.W)
  val srcIp = UInt(32.W)  // ours
  val dstIp = UInt(32.W)
  val sport = UInt(16.W)
  val dport = UInt(16.W)
}

/** The TCP header fields a segment is sent with, but for the ports and the checksum:
  * what the decision ([[TxSeg]]) chooses and the header builder ([[SegHeader]]) lays out. */
class TcpFields extends Bundle {
  val seq = UInt(32.W)
  val ack = UInt(32.W)
  /** TCP header byte 13 (bit 0 FIN). */
  val flags = UInt(8.W)
  val window = UInt(16.W)
  val tsPresent = Bool()
  val tsVal = UInt(32.W)
  val tsEcr = UInt(32.W)
  /** SACK blocks to send (0..3 with a timestamp, 0..4 without), [start, end) each. */
  val sackN = UInt(3.W)
  val sack = Vec(4, new SeqRange)
}

/** One segment's headers, as the engine's transmit side knows them. */
class SegHeader extends Bundle {
  val addr = new ConnAddr
  val ipId = UInt(16.W)
  val tcp = new TcpFields
  /** Payload bytes that follow the headers (a later stage appends them) and their one's
    * complement sum (0 for none): the checksum covers them. */
  val payloadLen = UInt(16.W)
  val payloadSum = UInt(16.W)
}

/** Builds a segment's Ethernet, IPv4 and TCP headers with both checksums, as the frame's
  * first beats: everything of an ACK, window update, probe, FIN or RST; a data segment's
  * front, its payload appended after (`m_axis` ends with tlast after the headers only
  * when `payloadLen` is 0; else `m_len` says where the payload goes).
  *
  * Layout as Linux sends it: IPv4 without options, DF set, TTL 64; TCP options NOP NOP
  * TS(10) when timestamps are on, then NOP NOP SACK(2 + 8n) for n blocks. Headers are
  * 54 .. 94 bytes: two or three 32-byte beats.
  *
  * Pipeline: the header is registered, the two sums (the IP header's 10 words; the TCP
  * pseudo-header, header and options' up to 36 words plus the payload's sum) are added in
  * two register stages, folded, inserted; then the beats go out one per cycle. A new
  * segment every three cycles at most (every header's beats), 5 cycles from input to the
  * first beat.
  */
class TcpHeaderBuild(val p: AxisParams = AxisParams(32)) extends Module {
  require(p.dataBytes == 32)
  val s_hdr = IO(Flipped(Decoupled(new SegHeader)))
  val m_axis = IO(new AxisIO(p))
  /** Header bytes of the frame being sent (valid with its first beat). */
  val m_len = IO(Output(UInt(7.W)))

  // ---- The header bytes with zero checksums, wire order (Seq element 0 first on the wire).
  private def bytesOf(x: UInt, n: Int): Seq[UInt] = (0 until n).map(i => x(8 * (n - 1 - i) + 7, 8 * (n - 1 - i)))
  private val maxLen = 94
  private def layout(h: SegHeader): (Vec[UInt], UInt, UInt) = {
    val (a, t) = (h.addr, h.tcp)
    val optTs = Mux(t.tsPresent, 12.U, 0.U)
    val nSack = t.sackN
    val optSack = Mux(nSack === 0.U, 0.U, 4.U +& (nSack << 3))
    val optLen = optTs +& optSack // 0 .. 40
    val tcpLen = 20.U +& optLen
    val ipTot = Wire(UInt(16.W)) // (a datagram fits 16 bits: the engine's payloads are <= MSS)
    ipTot := 20.U +& tcpLen +& h.payloadLen
    val sackLen = Wire(UInt(8.W))
    sackLen := 2.U +& (nSack << 3)
    val hdrLen = Wire(UInt(7.W))
    hdrLen := 34.U +& tcpLen
    val b = Wire(Vec(maxLen, UInt(8.W)))
    b.foreach(_ := 0.U)
    val fixed = bytesOf(a.dstMac, 6) ++ bytesOf(a.srcMac, 6) ++ Seq(0x08.U, 0x00.U) ++
      Seq(0x45.U, 0.U) ++ bytesOf(ipTot, 2) ++ bytesOf(h.ipId, 2) ++ Seq(0x40.U, 0.U, 64.U, 6.U, 0.U, 0.U) ++
      bytesOf(a.srcIp, 4) ++ bytesOf(a.dstIp, 4) ++
      bytesOf(a.sport, 2) ++ bytesOf(a.dport, 2) ++ bytesOf(t.seq, 4) ++ bytesOf(t.ack, 4) ++
      Seq(Cat(tcpLen(5, 2), 0.U(4.W)), t.flags) ++ bytesOf(t.window, 2) ++ Seq(0.U, 0.U, 0.U, 0.U)
    for ((x, i) <- fixed.zipWithIndex) b(i) := x
    // Options from byte 54: the timestamp first, then SACK at 54 or 66.
    val ts = Seq(1.U, 1.U, 8.U, 10.U) ++ bytesOf(t.tsVal, 4) ++ bytesOf(t.tsEcr, 4)
    val sackHdr = Seq(1.U, 1.U, 5.U, sackLen)
    val sackBytes = sackHdr ++ t.sack.flatMap(s => bytesOf(s.start, 4) ++ bytesOf(s.end, 4)) // 36 bytes
    for (i <- 0 until 40) {
      val fromTs = if (i < 12) ts(i) else 0.U
      val sackAtTs = if (i >= 12 && i - 12 < 36) sackBytes(i - 12) else 0.U
      val sackAt0 = if (i < 36) sackBytes(i) else 0.U
      b(54 + i) := Mux(t.tsPresent, Mux(i.U < 12.U, fromTs, Mux(i.U < optLen, sackAtTs, 0.U)),
        Mux(i.U < optLen, sackAt0, 0.U))
    }
    (b, hdrLen, tcpLen)
  }

  // Stage 0: the header in a register; 1: bytes and half sums; 2: checksums; 3: the beats.
  // Stages 0-2 move together unless stage 2 waits for stage 3 to finish a frame.
  private val s0 = RegInit(false.B)
  private val h0 = Reg(new SegHeader)
  private val s1 = RegInit(false.B)
  private val s2 = RegInit(false.B)
  private val busy = RegInit(false.B) // stage 3 is sending beats
  private val lastGoes = Wire(Bool())
  private val advance = !busy || lastGoes // stage 3 takes a new frame this cycle
  private val move = !s2 || advance
  s_hdr.ready := move
  when(s_hdr.fire) { h0 := s_hdr.bits }
  when(move) { s0 := s_hdr.fire }

  private val (bytes0, len0, tcpLen0) = layout(h0)
  private def words(b: Seq[UInt]): Seq[UInt] = b.grouped(2).map(g => Cat(g(0), g(1))).toSeq
  // IP header: bytes 14..33; TCP: pseudo-header (addresses, protocol, TCP length incl.
  // payload), header and options (bytes 34..93, zeros past the header), the payload's sum.
  private val ipWords = words(bytes0.slice(14, 34))
  private val tcpSegLen = Wire(UInt(16.W))
  tcpSegLen := tcpLen0 +& h0.payloadLen
  private val tcpWords = words(bytes0.slice(34, maxLen)) ++ words(bytes0.slice(26, 34)) ++
    Seq(6.U(16.W), tcpSegLen, h0.payloadSum)
  // (at most 36 words: the sum stays below 2^22, so 24 bits never carry out)
  private def tree(xs: Seq[UInt]): UInt = VecInit(xs.map(_.pad(24))).reduceTree(_ + _)
  private val en1 = s0 && move
  private val b1 = RegEnable(bytes0, en1)
  private val len1 = RegEnable(len0, en1)
  private val last1 = RegEnable(h0.payloadLen === 0.U, en1)
  // Half sums in stage 1, whole in stage 2: each stage one adder tree of ~half the words.
  private val (tA, tB) = tcpWords.splitAt(tcpWords.size / 2)
  private val ip1 = RegEnable(tree(ipWords), en1)
  private val tA1 = RegEnable(tree(tA), en1)
  private val tB1 = RegEnable(tree(tB), en1)
  when(move) { s1 := s0 }
  private val en2 = s1 && move
  private val b2 = RegEnable(b1, en2)
  private val len2 = RegEnable(len1, en2)
  private val last2 = RegEnable(last1, en2)
  private val ipCsum2 = RegEnable(~OnesSum.fold(ip1), en2)
  private val tcpCsum2 = RegEnable(~OnesSum.fold(tA1 + tB1), en2)
  when(move) { s2 := s1 }

  // Stage 3: the frame, beat by beat.
  private val frame = Reg(Vec(maxLen, UInt(8.W)))
  private val len3 = Reg(UInt(7.W))
  private val last3 = Reg(Bool())
  private val beat = Reg(UInt(2.W))
  private val nBeats = Mux(len3 > 64.U, 3.U, 2.U)
  private val lastBeat = beat === nBeats - 1.U
  private val lanes = VecInit((0 until 3).map(k => VecInit((0 until 32).map { i =>
    if (32 * k + i < maxLen) frame(32 * k + i) else 0.U(8.W)
  }).asUInt))
  private val endLane = Wire(UInt(6.W)) // bytes of this beat when it is the last (1 .. 32)
  endLane := len3 - Cat(beat, 0.U(5.W))
  lastGoes := busy && m_axis.tready && lastBeat
  m_axis.tvalid := busy
  m_axis.tdata := lanes(beat)
  private val keepLast = VecInit((0 until 32).map(i => i.U < endLane)).asUInt
  m_axis.tkeep := Mux(lastBeat, keepLast, Fill(32, 1.U(1.W)))
  m_axis.tlast := lastBeat && last3
  m_len := len3
  when(m_axis.fire) {
    beat := beat + 1.U
    when(lastBeat) { busy := false.B }
  }
  // (after the beat logic: a frame loaded as the last one leaves wins)
  when(s2 && advance) {
    val f = WireDefault(b2)
    f(24) := ipCsum2(15, 8)
    f(25) := ipCsum2(7, 0)
    f(50) := tcpCsum2(15, 8)
    f(51) := tcpCsum2(7, 0)
    frame := f
    len3 := len2
    last3 := last2
    beat := 0.U
    busy := true.B
  }
}

object TcpHeaderBuild extends Elaboratable {
  def generate(p: Params): RawModule = new TcpHeaderBuild()
}
