package offnic.nic

import chisel3._
import chisel3.util._
import offnic.axis.{AxisBeat, AxisIO, AxisParams, AxisRegSlice}
import offnic.eth.Crc32
import offnic.offload.RxMark
import offnic.util.SkidBuffer

/** A port's receive address filter settings (its eth_port block, docs/queues.md). */
class RxFilterCfg extends Bundle {
  /** The station address, byte 0 (first on the wire) in bits 47:40. */
  val mac = UInt(48.W)
  val promisc = Bool()
  val allMulti = Bool()
  val broadcast = Bool()
  /** Multicast hash table: bit h accepts group addresses whose hash is h. */
  val mcHash = UInt(64.W)
}

object RxFilter {
  /** The multicast hash of a destination address (byte 0 in lane 0 of `da`, 48 bits): the
    * top 6 bits of the IEEE CRC-32 of its 6 bytes as zlib/binascii.crc32 computes it (the
    * FCS's CRC, complemented): `binascii.crc32(addr) >> 26`. */
  def hash(da: UInt): UInt = (~Crc32.step(Crc32.Init.U(32.W), da, 6))(31, 26)
}

/** The receive address filter of one port, in the core clock domain before the RX
  * arbiter: the first beat's destination address decides each frame.
  *
  * Accepted ("for this station"): the station address; broadcast (ff:ff:ff:ff:ff:ff) when
  * `broadcast` is set; any other group address (I/G bit, byte 0 bit 0) when `allMulti`
  * is set or its hash bit is set in `mcHash`. Anything else is dropped whole and counted
  * (`stat_drop`), unless the port is promiscuous: then it passes marked
  * [[offnic.offload.RxMark.Foreign]] on every beat (`stat_foreign`), so that it reaches
  * the host but no offload.
  *
  * Timing: the address compare and the 48-bit CRC (a 3-level XOR tree) are worked out as
  * a beat enters and registered with it; the hash-table lookup and verdict then come from
  * registers; a register slice after it keeps the arbiter's paths short. Settings are read
  * at each frame's first beat (registers in this clock domain: no crossing).
  */
class RxFilter(val inP: AxisParams) extends Module {
  require(inP.dataBytes >= 6 && inP.userWidth == 0, "RxFilter: beats of 6 bytes or more, no tuser in")
  val outP: AxisParams = inP.copy(userWidth = RxMark.Width)
  val s_axis = IO(Flipped(new AxisIO(inP)))
  val m_axis = IO(new AxisIO(outP))
  val cfg = IO(Input(new RxFilterCfg))
  val stat_drop = IO(Output(Bool()))
  val stat_foreign = IO(Output(Bool()))

  class Staged extends Bundle {
    val beat = new AxisBeat(inP)
    val mine = Bool()
    val bcast = Bool()
    val group = Bool()
    val hash = UInt(6.W)
  }
  private val lanes = s_axis.tdata.asTypeOf(Vec(inP.dataBytes, UInt(8.W)))
  private val da = Cat((0 until 6).map(lanes(_))) // byte 0 in the MSBs
  private val stage = Module(new SkidBuffer(new Staged))
  stage.in.valid := s_axis.tvalid
  s_axis.tready := stage.in.ready
  stage.in.bits.beat := s_axis.beat
  stage.in.bits.mine := da === cfg.mac
  stage.in.bits.bcast := da.andR
  stage.in.bits.group := lanes(0)(0)
  stage.in.bits.hash := RxFilter.hash(s_axis.tdata(47, 0))

  private val h = stage.out.bits
  private val first = RegInit(true.B)
  private val passing = Reg(Bool())
  private val marked = Reg(Bool())
  private val accept = h.mine || (h.bcast && cfg.broadcast) ||
    (h.group && !h.bcast && (cfg.allMulti || VecInit(cfg.mcHash.asBools)(h.hash)))
  private val pass = Mux(first, accept || cfg.promisc, passing)
  private val mark = Mux(first, !accept, marked)
  private val out = Wire(new AxisIO(outP))
  out.tvalid := stage.out.valid && pass
  out.tdata := h.beat.tdata
  out.tkeep := h.beat.tkeep
  out.tlast := h.beat.tlast
  out.tuser.get := mark.asUInt << RxMark.Foreign
  out.tid.foreach(_ := h.beat.tid.get)
  out.tdest.foreach(_ := h.beat.tdest.get)
  stage.out.ready := !pass || out.tready
  private val fire = stage.out.fire
  when(fire) {
    first := h.beat.tlast
    when(first) {
      passing := accept || cfg.promisc
      marked := !accept
    }
  }
  stat_drop := fire && first && !(accept || cfg.promisc)
  stat_foreign := fire && first && !accept && cfg.promisc
  m_axis <> AxisRegSlice(out)
}
