package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisIO, AxisParams}
import offnic.offload.{FrameSums, OnesSum}

/** What the TCP engine needs to know about one received frame. */
class TcpInfo extends Bundle {
  /** TcpKind: not a TCP segment the engine could own (the host's), a good one, a bad one. */
  val kind = UInt(2.W)
  /** For TcpKind.Bad, the TcpBad reason. */
  val bad = UInt(3.W)
  /** ConnKey: destination IP, source IP, destination port, source port. */
  val key = UInt(ConnKey.Bits.W)
  val seq = UInt(32.W)
  val ack = UInt(32.W)
  /** TCP header byte 13: CWR ECE URG ACK PSH RST SYN FIN (bit 0 = FIN). */
  val flags = UInt(8.W)
  val window = UInt(16.W)
  /** A timestamp option (kind 8, length 10), found as Linux finds it. */
  val tsPresent = Bool()
  val tsVal = UInt(32.W)
  val tsEcr = UInt(32.W)
  /** Frame byte offset of the first payload byte (54 .. 98). */
  val dataStart = UInt(7.W)
  /** Payload bytes (by the IP total length: Ethernet padding excluded). */
  val dataLen = UInt(16.W)
}

object TcpKind {
  val Other = 0
  val Tcp = 1
  val Bad = 2
}

object TcpBad {
  val IpHeader = 0  // version 4 but the IP header is wrong: total length below 20 or past the frame
  val IpChecksum = 1
  val TcpHeader = 2 // data offset below 5 or past the segment
  val TcpChecksum = 3
}

/** Watches the RX stream and describes each frame for the TCP engine, in frame order:
  * frames pass from `s_axis` to `m_axis` unchanged and without delay (combinational);
  * each yields one [[TcpInfo]] on `m_info` a few cycles after its last beat (up to ~25
  * more when its options must be walked).
  *
  * A frame is TCP when it is Ethernet II IPv4 (behind at most one 802.1Q tag) with a
  * 20-byte IP header (no IP options: no TCP stack sends them; such frames are the
  * host's), protocol 6, not a fragment, and long enough for a 20-byte TCP header. It is
  * then Bad when the IP header is wrong (version, total length below 20 or past the
  * frame, checksum) or the TCP header is (data offset below 5 or past the segment, the
  * checksum over the pseudo-header and segment); else Tcp. Checks are Linux's
  * (ip_rcv_core, tcp_v4_rcv).
  *
  * Options: Linux's own rules. No options (data offset 5): no timestamp. Data offset 8
  * with NOP NOP TS(10) first (what every stack sends once established): the aligned
  * timestamp, at once. Anything else is walked option by option as tcp_parse_options
  * does (EOL ends, NOP is one byte, a length below 2 or past the options ends the walk, a
  * later timestamp replaces an earlier one), one option or two NOPs per cycle: Linux's
  * NOP NOP TS NOP NOP SACK in 5 cycles.
  *
  * The header bytes (up to frame byte 98) are captured from the first four beats;
  * [[FrameSums]] sums the IP header and the TCP segment and lets a frame start only while
  * fewer than `infoDepth` frames wait for their info, so nothing inside ever overflows or
  * stalls.
  */
class TcpParser(val p: AxisParams = AxisParams(32), val infoDepth: Int = 8) extends Module {
  require(p.dataBytes == 32, "TcpParser is written for 32-byte beats")
  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))
  val m_info = IO(Decoupled(new TcpInfo))

  private val hdrBytes = 100 // a tagged frame's TCP header ends by byte 38 + 60 = 98
  private val sums = Module(new FrameSums(p, infoDepth))
  sums.s_axis <> s_axis
  m_axis <> sums.m_axis
  sums.taken := m_info.fire
  private val fire = sums.pos.fire
  private val first = sums.pos.first
  private val beat = sums.pos.beat
  private val lane = sums.pos.lane

  // ---- Header bytes: captured beat by beat; `hv` is the view with this beat's lanes.
  private val hdr = Reg(Vec(hdrBytes, UInt(8.W)))
  private val hv = VecInit((0 until hdrBytes).map { i =>
    val b = i / 32
    val here = if (b == 0) first else beat === b.U
    Mux(here, lane(i % 32), hdr(i))
  })
  when(fire) { for (i <- 0 until hdrBytes) hdr(i) := hv(i) }
  private def be(at: Int, n: Int, vlan: Bool): UInt =
    Mux(vlan, Cat((0 until n).map(k => hv(at + 4 + k))), Cat((0 until n).map(k => hv(at + k))))

  // Beat 0 decides the tag and the lane ranges, registered for the later beats.
  private val vlan0 = Cat(lane(12), lane(13)) === 0x8100.U
  private def at0(k: Int): UInt = Mux(vlan0, lane(k + 4), lane(k))
  private val totLen0 = Cat(at0(16), at0(17))
  class Ranges extends Bundle {
    val vlan = Bool()
    val ipEnd = UInt(17.W) // ip start + total length
  }
  private val r0 = Wire(new Ranges)
  r0.vlan := vlan0
  r0.ipEnd := Mux(vlan0, 18.U, 14.U) +& totLen0
  private val rReg = RegEnable(r0, fire && first)
  private val r = Mux(first, r0, rReg)

  // ---- The sums: the IP header [ip, ip + 20) and the segment [ip + 20, ipEnd).
  private val ipStart = Mux(r.vlan, 18.U(7.W), 14.U(7.W))
  sums.ranges.aStart := ipStart
  sums.ranges.aEnd := ipStart + 20.U
  sums.ranges.bStart := ipStart + 20.U
  sums.ranges.bEnd := r.ipEnd
  private val done = sums.out.valid
  private val frameLen = sums.out.bits.len

  // ---- At the last beat: the header fields, kept in frame order until the sums are done.
  class Facts extends Bundle {
    val vlan = Bool()
    val isIp = Bool()
    val verIhl = UInt(8.W)
    val totLen = UInt(16.W)
    val fragBits = UInt(14.W) // MF and the offset
    val proto = UInt(8.W)
    val src = UInt(32.W)
    val dst = UInt(32.W)
    val sport = UInt(16.W)
    val dport = UInt(16.W)
    val seq = UInt(32.W)
    val ack = UInt(32.W)
    val doff = UInt(4.W)
    val flags = UInt(8.W)
    val window = UInt(16.W)
    val opts = Vec(40, UInt(8.W))
  }
  private val vlan = r.vlan
  private val fx = Wire(new Facts)
  fx.vlan := vlan
  fx.isIp := be(12, 2, vlan) === 0x0800.U
  fx.verIhl := be(14, 1, vlan)
  fx.totLen := be(16, 2, vlan)
  fx.fragBits := be(20, 2, vlan)(13, 0)
  fx.proto := be(23, 1, vlan)
  fx.src := be(26, 4, vlan)
  fx.dst := be(30, 4, vlan)
  fx.sport := be(34, 2, vlan)
  fx.dport := be(36, 2, vlan)
  fx.seq := be(38, 4, vlan)
  fx.ack := be(42, 4, vlan)
  fx.doff := be(46, 1, vlan)(7, 4)
  fx.flags := be(47, 1, vlan)
  fx.window := be(48, 2, vlan)
  for (k <- 0 until 40) fx.opts(k) := Mux(vlan, hv(58 + k), hv(54 + k))
  // With a tag, the flags byte's DF/reserved bits and the data-offset byte's low nibble
  // land in captured bytes nothing else reads (untagged, those bytes are other fields).
  // unused_* tells Verilator's lint so (its default --unused-regexp).
  private val unused_tagged_bits = WireDefault(Cat(hdr(24)(7, 6), hdr(50)(3, 0)))
  dontTouch(unused_tagged_bits)
  private val facts = Module(new Queue(new Facts, infoDepth))
  facts.io.enq.valid := fire && s_axis.tlast
  facts.io.enq.bits := fx

  // ---- When the sums are done: everything but a walked timestamp.
  class Pre extends Bundle {
    val info = new TcpInfo
    val walk = Bool()
    val optLen = UInt(6.W)
    val opts = Vec(40, UInt(8.W))
  }
  private val f = facts.io.deq.bits
  facts.io.deq.ready := done
  private val ipStartF = Mux(f.vlan, 18.U(7.W), 14.U(7.W))
  private val tcpLen = f.totLen - 20.U // (meaningful when totLen >= 20)
  private val hdrLenTcp = Cat(f.doff, 0.U(2.W))
  private val isTcp = f.isIp && f.verIhl === 0x45.U && f.proto === 6.U && f.fragBits === 0.U &&
    frameLen >= ipStartF +& 40.U
  // The pseudo-header's sum: addresses, protocol, TCP length.
  private val pseudo = f.src(31, 16) +& f.src(15, 0) +& f.dst(31, 16) +& f.dst(15, 0) +& 6.U +& tcpLen
  private val tFold = OnesSum.fold(sums.out.bits.bSum +& pseudo)
  private val badIp = f.totLen < 20.U || frameLen < ipStartF +& f.totLen
  private val badIpCsum = OnesSum.fold(sums.out.bits.aSum) =/= 0xFFFF.U
  private val badTcpHdr = f.doff < 5.U || tcpLen < hdrLenTcp
  private val badTcpCsum = tFold =/= 0xFFFF.U
  private val pre = Wire(new Pre)
  pre.info.kind := Mux(!isTcp, TcpKind.Other.U,
    Mux(badIp || badIpCsum || badTcpHdr || badTcpCsum, TcpKind.Bad.U, TcpKind.Tcp.U))
  pre.info.bad := Mux(badIp, TcpBad.IpHeader.U, Mux(badIpCsum, TcpBad.IpChecksum.U,
    Mux(badTcpHdr, TcpBad.TcpHeader.U, TcpBad.TcpChecksum.U)))
  pre.info.key := ConnKey(f.dst, f.src, f.dport, f.sport)
  pre.info.seq := f.seq
  pre.info.ack := f.ack
  pre.info.flags := f.flags
  pre.info.window := f.window
  // The aligned timestamp (Linux's fast path): data offset 8, NOP NOP 8 10 first.
  private val aligned = f.doff === 8.U && f.opts(0) === 1.U && f.opts(1) === 1.U && f.opts(2) === 8.U &&
    f.opts(3) === 10.U
  pre.info.tsPresent := aligned
  pre.info.tsVal := Cat(f.opts.slice(4, 8))
  pre.info.tsEcr := Cat(f.opts.slice(8, 12))
  pre.info.dataStart := ipStartF + 20.U + hdrLenTcp
  pre.info.dataLen := tcpLen - hdrLenTcp
  pre.walk := pre.info.kind === TcpKind.Tcp.U && f.doff > 5.U && !aligned
  pre.optLen := hdrLenTcp - 20.U
  pre.opts := f.opts
  private val preQ = Module(new Queue(new Pre, infoDepth))
  preQ.io.enq.valid := done
  preQ.io.enq.bits := pre

  // ---- The option walk (tcp_parse_options): one option, or two NOPs, per cycle, on the
  // info at the head of preQ; its info goes out in the cycle the walk stops.
  private val q = preQ.io.deq.bits
  private val pos = RegInit(0.U(6.W))
  private val ts = RegInit(0.U.asTypeOf(Valid(UInt(64.W))))
  private def opt(i: UInt): UInt = q.opts(Mux(i < 40.U, i, 0.U))
  private val kind = opt(pos)
  private val size = opt(pos + 1.U)
  private val left = q.optLen - pos // bytes from pos to the end of the options (when pos < optLen)
  private val stop = pos >= q.optLen || kind === 0.U ||
    (kind =/= 1.U && (left < 2.U || size < 2.U || size > left))
  private val twoNops = kind === 1.U && size === 1.U && left >= 2.U
  private val walking = preQ.io.deq.valid && q.walk
  when(walking && !stop) {
    when(kind === 1.U) {
      pos := pos + Mux(twoNops, 2.U, 1.U)
    }.otherwise {
      when(kind === 8.U && size === 10.U) {
        ts.valid := true.B
        ts.bits := Cat((2 until 10).map(k => opt(pos + k.U)))
      }
      pos := pos + size
    }
  }
  m_info.valid := preQ.io.deq.valid && (!q.walk || stop)
  m_info.bits := q.info
  when(q.walk) {
    m_info.bits.tsPresent := ts.valid
    m_info.bits.tsVal := ts.bits(63, 32)
    m_info.bits.tsEcr := ts.bits(31, 0)
  }
  preQ.io.deq.ready := m_info.ready && (!q.walk || stop)
  when(m_info.fire) {
    pos := 0.U
    ts.valid := false.B
  }
}

object TcpParser extends Elaboratable {
  def generate(p: Params): RawModule = new TcpParser()
}
