package offnic.axis

import chisel3._
import chisel3.util._
import offnic.Params

/** Shape of an AXI-Stream interface. `tkeep` is always present (one bit per byte);
  * `tuser`, `tid` and `tdest` exist only when their width is non-zero.
  */
case class AxisParams(dataBytes: Int, userWidth: Int = 0, idWidth: Int = 0, destWidth: Int = 0) {
  require(dataBytes >= 1 && isPow2(dataBytes), s"AXI-Stream width must be a power of two bytes, got $dataBytes")
  require(userWidth >= 0 && idWidth >= 0 && destWidth >= 0, "sideband widths must be >= 0")
  def dataBits: Int = dataBytes * 8
  def withBytes(bytes: Int): AxisParams = copy(dataBytes = bytes)
}

object AxisParams {
  /** The common generator parameters: data width in bytes (`bytesKey`), `user`, `id`, `dest`. */
  def from(p: Params, bytesKey: String = "bytes", bytes: Int = 8, user: Int = 1): AxisParams =
    AxisParams(p.int(bytesKey, bytes), p.int("user", user), p.int("id", 0), p.int("dest", 0))
}

/** One transfer (beat) of a stream, without the handshake. */
class AxisBeat(val p: AxisParams) extends Bundle {
  val tdata = UInt(p.dataBits.W)
  val tkeep = UInt(p.dataBytes.W)
  val tlast = Bool()
  val tuser = Option.when(p.userWidth > 0)(UInt(p.userWidth.W))
  val tid = Option.when(p.idWidth > 0)(UInt(p.idWidth.W))
  val tdest = Option.when(p.destWidth > 0)(UInt(p.destWidth.W))
}

/** An AXI-Stream port with the signal names cocotbext-axi expects: declared as
  * `val s_axis = IO(Flipped(new AxisIO(p)))` it becomes `s_axis_tdata`, `s_axis_tvalid`...
  * Handshake contract: a source keeps `tvalid` and the beat stable until `tready`
  * (AXI-Stream is irrevocable).
  */
class AxisIO(val p: AxisParams) extends Bundle {
  val tvalid = Output(Bool())
  val tready = Input(Bool())
  val tdata = Output(UInt(p.dataBits.W))
  val tkeep = Output(UInt(p.dataBytes.W))
  val tlast = Output(Bool())
  val tuser = Option.when(p.userWidth > 0)(Output(UInt(p.userWidth.W)))
  val tid = Option.when(p.idWidth > 0)(Output(UInt(p.idWidth.W)))
  val tdest = Option.when(p.destWidth > 0)(Output(UInt(p.destWidth.W)))

  def fire: Bool = tvalid && tready

  /** The beat currently on the bus. */
  def beat: AxisBeat = {
    val b = Wire(new AxisBeat(p))
    b.tdata := tdata
    b.tkeep := tkeep
    b.tlast := tlast
    b.tuser.foreach(_ := tuser.get)
    b.tid.foreach(_ := tid.get)
    b.tdest.foreach(_ := tdest.get)
    b
  }

  /** Drive the payload signals from a beat (the handshake is left to the caller). */
  def setBeat(b: AxisBeat): Unit = {
    tdata := b.tdata
    tkeep := b.tkeep
    tlast := b.tlast
    tuser.foreach(_ := b.tuser.get)
    tid.foreach(_ := b.tid.get)
    tdest.foreach(_ := b.tdest.get)
  }

  /** This (sink-side, flipped) port as a Decoupled of beats, for internal logic. */
  def asDecoupledSink: DecoupledIO[AxisBeat] = {
    val d = Wire(Decoupled(new AxisBeat(p)))
    d.valid := tvalid
    d.bits := beat
    tready := d.ready
    d
  }

  /** Drive this (source-side) port from a Decoupled of beats. */
  def drivenBy(d: DecoupledIO[AxisBeat]): Unit = {
    tvalid := d.valid
    setBeat(d.bits)
    d.ready := tready
  }
}
