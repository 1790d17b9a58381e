package offnic.offload

import chisel3._
import chisel3.util._

/** Microsoft RSS hash types, as bit flags in the result's `hash_type` field: a 2-tuple hash
  * has only IPv4 or IPv6 set, a 4-tuple adds TCP or UDP. 0 ("none"): not hashed, hash 0.
  */
object RssHashType {
  val Width = 4
  val None = 0
  val IPv4 = 1
  val IPv6 = 2
  val Tcp = 4
  val Udp = 8
}

/** Which hash types are enabled. `ipv4`/`ipv6` gate all hashing of that IP version; `tcp`
  * and `udp` allow the 4-tuple (with ports) on top of an enabled IP version, otherwise such
  * frames get the 2-tuple hash.
  */
class RssEnables extends Bundle {
  val ipv4 = Bool()
  val ipv6 = Bool()
  val tcp = Bool()
  val udp = Bool()
}

/** The part of a frame the parser reads. */
class RssHeader(val lenBits: Int) extends Bundle {
  /** Frame bytes `RssParser.HdrFirst until RssParser.HdrEnd`; those at or past `len` are
    * stale (left over from an earlier frame) and must not matter. */
  val bytes = Vec(RssParser.HdrEnd - RssParser.HdrFirst, UInt(8.W))
  /** Frame length in bytes, saturated: a value >= HdrEnd means the whole window is there. */
  val len = UInt(lenBits.W)
  /** Bytes 12-13 are 0x8100, an 802.1Q tag (meaningful only when len >= 14). */
  val vlan = Bool()
}

/** What gets hashed: `data` holds the Toeplitz input left-aligned (first byte in the MSBs,
  * zeros after the tuple's end, all zero for "none"), `hashType` the RssHashType flags. */
class RssTuple extends Bundle {
  val data = UInt((RssParser.TupleBytes * 8).W)
  val hashType = UInt(RssHashType.Width.W)
}

/** Picks the RSS input out of a frame's first bytes: the IPv4 or IPv6 source and destination
  * addresses, plus source and destination ports for TCP/UDP. Two pipeline stages
  * ([[RssParser.Latency]]), one header per cycle.
  *
  * Rules (the bench's Python model states the same ones):
  *  - an 802.1Q tag (0x8100) at bytes 12-13 shifts everything by 4; one tag only. A frame
  *    too short for its EtherType is "none";
  *  - IPv4 (0x0800): version 4, IHL >= 5 and the whole IP header (IHL * 4 bytes, options
  *    included) inside the frame, else "none". Ports are hashed for TCP (6) / UDP (17) when
  *    enabled, not a fragment (MF clear and offset 0), and the 4 port bytes are in the
  *    frame; otherwise the 2-tuple;
  *  - IPv6 (0x86DD): version 6 and the 40-byte header inside the frame, else "none". Ports
  *    when the next header is TCP/UDP (extension headers are not followed: any other next
  *    header gives the 2-tuple) and the port bytes are in the frame;
  *  - anything else, or a disabled IP version: "none".
  * The frame's length counts, never the IP length fields (a MAC may leave padding on).
  *
  * Stage 1 removes the VLAN offset, finds the ports behind IPv4 options and checks lengths
  * and header fields; stage 2 applies the enables and lays out the tuple. Splitting there
  * keeps each stage to a few LUT levels at 250 MHz (the IHL-indexed port select and the
  * length compares are the deep part).
  */
class RssParser(val lenBits: Int) extends Module {
  import RssParser._
  require(lenBits >= log2Ceil(HdrEnd + 1), s"RssParser: lenBits $lenBits cannot hold a length of $HdrEnd")

  val in = IO(Input(Valid(new RssHeader(lenBits))))
  /** Sampled in the cycle a header is in stage 2 (one cycle after `in`). */
  val enable = IO(Input(new RssEnables))
  val out = IO(Output(Valid(new RssTuple)))

  // ---- Stage 1: fields at the offsets of an untagged frame.
  private def raw(k: Int): UInt = in.bits.bytes(k - HdrFirst)
  private val vlan = in.bits.vlan
  /** Byte k of the frame as if it had no VLAN tag. */
  private def n(k: Int): UInt = Mux(vlan, raw(k + 4), raw(k))
  /** `count` bytes from offset `from`, big-endian (network order). */
  private def be(from: Int, count: Int): UInt = Cat((from until from + count).map(n))

  private val len = in.bits.len
  private val lenN = Mux(vlan, len - 4.U, len) // meaningful once etypeOk holds
  private val etypeOk = len >= Mux(vlan, (EthHdr + 4).U, EthHdr.U)
  private val etype = be(12, 2)
  private val version = n(EthHdr)(7, 4)
  private val ihl = n(EthHdr)(3, 0)
  private val ipHdrBytes = ihl ## 0.U(2.W)

  private val ipv4Hdr = etypeOk && etype === EtherIPv4.U && version === 4.U && ihl >= 5.U &&
    lenN >= (EthHdr.U +& ipHdrBytes)
  private val fragment = n(EthHdr + 6)(5) || Cat(n(EthHdr + 6)(4, 0), n(EthHdr + 7)).orR
  // Ports sit right behind the IPv4 header, which options make 20 to 60 bytes long.
  private val ports4 = VecInit(Seq.tabulate(16)(i => if (i >= 5) be(EthHdr + 4 * i, 4) else 0.U(32.W)))(ihl)
  private val ipv6Hdr = etypeOk && etype === EtherIPv6.U && version === 6.U && lenN >= (EthHdr + 40).U
  private val proto = Mux(etype === EtherIPv4.U, n(EthHdr + 9), n(EthHdr + 6)) // IPv4 protocol / IPv6 next header

  private class Stage1 extends Bundle {
    /** Bytes 22 until 58: IPv6 source, destination and ports; IPv4 addresses are bytes 4-11. */
    val fields = UInt((TupleBytes * 8).W)
    val ports4 = UInt(32.W)
    val ipv4 = Bool()
    val v4Ports = Bool()
    val ipv6 = Bool()
    val v6Ports = Bool()
    val tcp = Bool()
    val udp = Bool()
  }
  private val s1 = Reg(new Stage1)
  private val s1Valid = RegNext(in.valid, false.B)
  when(in.valid) {
    s1.fields := be(EthHdr + 8, TupleBytes)
    s1.ports4 := ports4
    s1.ipv4 := ipv4Hdr
    s1.v4Ports := !fragment && lenN >= ((EthHdr + 4).U +& ipHdrBytes)
    s1.ipv6 := ipv6Hdr
    s1.v6Ports := lenN >= (EthHdr + 44).U
    s1.tcp := proto === IpProtoTcp.U
    s1.udp := proto === IpProtoUdp.U
  }

  // ---- Stage 2: enables, hash type and tuple layout.
  private val ipv4 = s1.ipv4 && enable.ipv4
  private val ipv6 = s1.ipv6 && enable.ipv6
  private val portsOk = (ipv4 && s1.v4Ports) || (ipv6 && s1.v6Ports)
  private val tcp = portsOk && s1.tcp && enable.tcp
  private val udp = portsOk && s1.udp && enable.udp
  private val l4 = tcp || udp
  private val tupleBits = TupleBytes * 8
  private val v4Tuple = Cat(s1.fields(tupleBits - 33, tupleBits - 96), Mux(l4, s1.ports4, 0.U(32.W)),
    0.U((tupleBits - 96).W))
  private val v6Tuple = Cat(s1.fields(tupleBits - 1, 32), Mux(l4, s1.fields(31, 0), 0.U(32.W)))

  private val s2 = Reg(new RssTuple)
  private val s2Valid = RegNext(s1Valid, false.B)
  when(s1Valid) {
    s2.data := Mux(ipv4, v4Tuple, 0.U) | Mux(ipv6, v6Tuple, 0.U)
    s2.hashType := Cat(udp, tcp, ipv6, ipv4)
  }
  out.valid := s2Valid
  out.bits := s2
}

object RssParser {
  /** Cycles from `in.valid` to `out.valid`. */
  val Latency = 2
  /** First frame byte the parser reads: the EtherType (or the VLAN TPID). */
  val HdrFirst = 12
  /** One past the last: the ports behind a 60-byte IPv4 header behind a VLAN tag, 18 + 60 + 4. */
  val HdrEnd = 82
  /** The longest input: IPv6 source + destination + ports. */
  val TupleBytes = 36
  val EthHdr = 14
  val EtherIPv4 = 0x0800
  val EtherIPv6 = 0x86dd
  val EtherVlan = 0x8100
  val IpProtoTcp = 6
  val IpProtoUdp = 17
}
