package offnic.offload

import chisel3._
import chisel3.util._
import offnic.axis.{AxisIO, AxisParams}

/** What the reassembler needs to know about one received frame. */
class FragInfo extends Bundle {
  /** FragKind: not an IPv4 fragment (the host path), a bad fragment, or a fragment. */
  val kind = UInt(2.W)
  /** For FragKind.Bad, the FragBad reason. */
  val bad = UInt(2.W)
  /** (source, destination, protocol, identification): 88 bits, source in the MSBs. */
  val key = UInt(88.W)
  /** Fragment offset in 8-byte units. */
  val off = UInt(13.W)
  val mf = Bool()
  val df = Bool()
  val ecn = UInt(2.W)
  /** Payload bytes; a non-last fragment's are cut down to a multiple of 8 (as Linux). */
  val n = UInt(16.W)
  val trimmed = Bool()
  /** Ethernet + IP header bytes: where the payload starts in the frame (34..78). */
  val hdrLen = UInt(7.W)
  /** IP header bytes (IHL * 4). */
  val ipHdr = UInt(6.W)
  /** One's complement sum of the `n` payload bytes (not complemented). */
  val csum = UInt(16.W)
}

object FragKind {
  val Other = 0
  val Bad = 1
  val Frag = 2
}

object FragBad {
  val Header = 0   // version, IHL, header beyond the frame, total length below the header
  val Checksum = 1 // IP header checksum wrong
  val Truncated = 2 // total length beyond the frame
}

/** Watches the RX stream and describes each frame as an IPv4 fragment or not, in frame
  * order, for the [[Reassembler]]. Frames pass from `s_axis` to `m_axis` unchanged and
  * without delay (combinational); each yields one [[FragInfo]] on `m_info` about 6 cycles
  * after its last beat.
  *
  * A frame marked [[RxMark]] `Foreign` (another station's, seen in promiscuous mode) is
  * never a fragment: it goes to the host as it is, whatever it holds.
  *
  * A frame is a fragment when it is Ethernet II IPv4 (behind at most one 802.1Q tag), long
  * enough to hold the flags, and has MF set or a non-zero offset. Then Linux's checks
  * (ip_rcv_core) decide whether it is good: version 4, IHL >= 5, the header inside the
  * frame, total length >= header, the header checksum right, the total length inside the
  * frame. Bytes past the total length (Ethernet padding) are ignored.
  *
  * Everything the lane ranges need (tag, IHL, total length, flags) is in the first 32-byte
  * beat, and no payload byte is: the ranges are registered there and used from beat 1 on.
  * [[FrameSums]] sums the IP header and the payload and gates frame starts on the info
  * queue's room; the header is good when its sum is 0xFFFF (one's complement zero).
  */
class FragParser(val p: AxisParams, val infoDepth: Int = 8) extends Module {
  require(p.dataBytes == 32, "FragParser is written for 32-byte beats")
  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))
  val m_info = IO(Decoupled(new FragInfo))

  private val infoQ = Module(new Queue(new FragInfo, infoDepth))
  m_info <> infoQ.io.deq
  private val sums = Module(new FrameSums(p, infoDepth))
  sums.s_axis <> s_axis
  m_axis <> sums.m_axis
  sums.taken := m_info.fire
  private val fire = sums.pos.fire
  private val first = sums.pos.first
  private val beat = sums.pos.beat
  private val lane = sums.pos.lane
  private def be16(hi: UInt, lo: UInt): UInt = Cat(hi, lo)
  // Untagged, the TOS byte's DSCP and the flags byte's reserved bit are read by nothing
  // (tagged, those lanes hold other fields). unused_* tells Verilator's lint so.
  private val unused_untagged_bits = WireDefault(Cat(lane(15)(7, 2), lane(24)(7)))
  dontTouch(unused_untagged_bits)

  // ---- Beat 0: the fields at an untagged and a tagged offset, picked by the tag.
  private val vlan0 = be16(lane(12), lane(13)) === 0x8100.U
  private def at(k: Int): UInt = Mux(vlan0, lane(k + 4), lane(k))
  private val etype0 = be16(at(12), at(13))
  private val verIhl0 = at(14)
  private val tos0 = at(15)
  private val totLen0 = be16(at(16), at(17))
  private val flags0 = be16(at(20), at(21))
  private val ipStart0 = Mux(vlan0, 18.U(7.W), 14.U(7.W))
  private val ihlBytes0 = Cat(verIhl0(3, 0), 0.U(2.W))
  private val pStart0 = ipStart0 +& ihlBytes0 // 34..78
  private val mf0 = flags0(13)
  // Payload bytes by the total length; a non-last fragment's cut to 8-byte units.
  private val nRaw0 = Mux(totLen0 >= ihlBytes0, totLen0 - ihlBytes0, 0.U)
  private val n0 = Mux(mf0, Cat(nRaw0(15, 3), 0.U(3.W)), nRaw0)

  class Hdr extends Bundle {
    val vlan = Bool()
    val isIp = Bool()
    val ver = UInt(4.W)
    val ihlBytes = UInt(6.W)
    val ecn = UInt(2.W)
    val totLen = UInt(16.W)
    val flags = UInt(15.W) // DF, MF, offset (the reserved bit is not looked at, as Linux)
    val pStart = UInt(7.W)
    val n = UInt(16.W)
    val proto = UInt(8.W)
    val id = UInt(16.W)
    val foreign = Bool()
  }
  private val hdr0 = Wire(new Hdr)
  hdr0.vlan := vlan0
  hdr0.isIp := etype0 === 0x0800.U
  hdr0.ver := verIhl0(7, 4)
  hdr0.ihlBytes := ihlBytes0
  hdr0.ecn := tos0(1, 0)
  hdr0.totLen := totLen0
  hdr0.flags := flags0(14, 0)
  hdr0.pStart := pStart0(6, 0) // <= 78
  hdr0.n := n0
  hdr0.proto := at(23)
  hdr0.id := be16(at(18), at(19))
  hdr0.foreign := RxMark.foreign(s_axis.tuser) // not for this station: never a fragment here
  private val hdrReg = RegEnable(hdr0, fire && first)
  private val hdr = Mux(first, hdr0, hdrReg)
  // Address bytes: frame bytes 26..37 hold source and destination at 26 and 30 untagged,
  // at 30 and 34 tagged; bytes 26..31 come in beat 0, 32..37 in beat 1.
  private val addrLo = RegEnable(VecInit((26 until 32).map(k => lane(k))), fire && first)
  private val addrHi = RegEnable(VecInit((0 until 6).map(k => lane(k))), fire && !first && beat === 1.U)
  private val addrBytes = Mux(first, VecInit((26 until 32).map(k => lane(k))), addrLo) ++
    Mux(!first && beat === 1.U, VecInit((0 until 6).map(k => lane(k))), addrHi)
  // Seq order is wire order; Cat puts the first element in the MSBs.
  private val srcDst = Mux(hdr.vlan, Cat(addrBytes.drop(4)), Cat(addrBytes.take(8)))

  // What the frame's last beat knows, kept in frame order until its sums are done.
  class Facts extends Bundle {
    val hdr = new Hdr
    val srcDst = UInt(64.W)
  }
  private val facts = Module(new Queue(new Facts, 8))
  facts.io.enq.valid := fire && s_axis.tlast
  facts.io.enq.bits.hdr := hdr
  facts.io.enq.bits.srcDst := srcDst

  // ---- The sums: the IP header and the payload.
  sums.ranges.aStart := Mux(hdr.vlan, 18.U, 14.U)
  sums.ranges.aEnd := hdr.pStart
  sums.ranges.bStart := hdr.pStart
  sums.ranges.bEnd := hdr.pStart +& hdr.n // up to 78 + 65535
  private val done = sums.out.valid
  private val frameLen = sums.out.bits.len

  // ---- One cycle after the last sum: classify.
  private val f = facts.io.deq.bits.hdr
  facts.io.deq.ready := done
  private val hFold = OnesSum.fold(sums.out.bits.aSum)
  private val pFold = OnesSum.fold(sums.out.bits.bSum)
  private val offUnits = f.flags(12, 0)
  private val ipStartF = Mux(f.vlan, 18.U, 14.U)
  private val isFrag = !f.foreign && f.isIp && frameLen >= ipStartF +& 8.U && (f.flags(13) || offUnits =/= 0.U)
  private val badHeader = f.ver =/= 4.U || f.ihlBytes < 20.U || frameLen < f.pStart
  private val badCsum = hFold =/= 0xFFFF.U
  private val truncated = frameLen < ipStartF +& f.totLen
  private val shortTot = f.totLen < f.ihlBytes
  private val info = Wire(new FragInfo)
  info.kind := Mux(!isFrag, FragKind.Other.U,
    Mux(badHeader || badCsum || truncated || shortTot, FragKind.Bad.U, FragKind.Frag.U))
  info.bad := Mux(badHeader, FragBad.Header.U, Mux(badCsum, FragBad.Checksum.U,
    Mux(truncated, FragBad.Truncated.U, FragBad.Header.U)))
  info.key := Cat(facts.io.deq.bits.srcDst, f.proto, f.id)
  info.off := offUnits
  info.mf := f.flags(13)
  info.df := f.flags(14)
  info.ecn := f.ecn
  info.n := f.n
  info.trimmed := f.flags(13) && !shortTot && (f.totLen - f.ihlBytes)(2, 0) =/= 0.U
  info.hdrLen := f.pStart
  info.ipHdr := f.ihlBytes
  info.csum := pFold
  infoQ.io.enq.valid := done // room reserved at the frame's first beat
  infoQ.io.enq.bits := info
}
