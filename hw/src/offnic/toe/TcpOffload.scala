package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axi.{Axi4, Axi4IO}
import offnic.axis.{AxisFifo, AxisIO, AxisParams}
import offnic.regs.{RegBlock, RegBusPort, RegMap}

/** The TCP offload engine as the NIC will carry it: [[TcpEngine]] (control), the
  * [[RxRingWriter]] storing received payload into each connection's receive ring and the
  * [[TxSegBuilder]] reading the send rings into frames, over one AXI4 port (the writer has
  * the write channels, the builder the read channels): an `AxiRam` now, host memory
  * through the DMA engine later.
  *
  * Frames from the wire enter on `s_axis`; those not for an offloaded connection leave on
  * `m_axis_host` unchanged; the engine's frames leave on `m_axis_tx`. Notifications wait
  * until the receive-ring stores issued before them have completed, so "received up to
  * X" is never ahead of the data in memory.
  *
  * Registers: one `toe` block (RegMap.Toe: connections installed now and at most, every
  * counter of the steer, table, engine, writer and builder) on the register bus `reg`, at
  * `regBase` with chain pointer `regNext`: standalone it is the whole chain (base 0, next
  * 0); in the NIC it joins the chain like any block.
  */
class TcpOffload(val connections: Int = 4096, val buckets: Int = 1024, val slots: Int = 1024,
                 val fifoBeats: Int = 512, val addrBits: Int = 40, val regAddrBits: Int = 24, val regBase: Int = 0,
                 val regNext: Int = 0, val rxP: AxisParams = AxisParams(32),
                 val nicQueue: Option[NicQueueParams] = None) extends Module {
  private val p = AxisParams(32)
  private val engine = Module(new TcpEngine(connections, buckets, slots, fifoBeats, rxP = rxP, nicQueue = nicQueue))
  private val idBits = engine.idBits
  private val writer = Module(new RxRingWriter(idBits, addrBits))
  private val builder = Module(new TxSegBuilder(idBits, addrBits))

  val s_axis = IO(Flipped(new AxisIO(rxP)))
  val m_axis_host = IO(new AxisIO(rxP))
  val m_axis_tx = IO(new AxisIO(p))
  val s_cmd = IO(Flipped(Decoupled(new EngineCmd(idBits))))
  val m_rsp = IO(Decoupled(new EngineRsp(idBits)))
  val m_note = IO(Decoupled(new EngineNote(idBits)))
  val m_axi = IO(new Axi4IO(addrBits, 4))
  val cfg = IO(Input(new EngineCfg))
  val cfg_cycles_per_us = IO(Input(UInt(10.W)))
  val cfg_hash_key = IO(Input(UInt(engine.cfg_hash_key.getWidth.W)))
  val status = IO(Output(new Bundle {
    val ready = Bool()
    val nowUs = UInt(42.W)
    val connections = UInt((idBits + 1).W)
    val busy = Bool()
    val storeErrors = UInt(32.W)
    /** Segments the builder dropped (too long) and memory reads that failed. */
    val txDrops = UInt(32.W)
    val txReadErrors = UInt(32.W)
  }))

  engine.s_axis <> s_axis
  /** The NIC-packet queue (inside the NIC only): its settings, Qlen and counter pulses. */
  val nicq_cfg = engine.nicq_cfg.map(c => IO(Input(chiselTypeOf(c))))
  val nicq_status = engine.nicq_status.map(c => IO(Output(chiselTypeOf(c))))
  nicq_cfg.foreach(engine.nicq_cfg.get := _)
  nicq_status.foreach(_ := engine.nicq_status.get)
  m_axis_host <> engine.m_axis_host
  engine.s_cmd <> s_cmd
  m_rsp <> engine.m_rsp
  engine.cfg := cfg
  engine.cfg_cycles_per_us := cfg_cycles_per_us
  engine.cfg_hash_key := cfg_hash_key

  // Frames wait here for their store commands, so the steer hands out the next segment
  // (when its frame starts out) while the writer still writes this one: decisions overlap
  // the stores. 512 beats: a jumbo frame and more.
  private val segFifo = Module(new AxisFifo(p, 512))
  segFifo.s_axis <> engine.m_axis_seg
  writer.s_axis <> segFifo.m_axis
  writer.s_cmd <> engine.m_rxw
  builder.s_req <> engine.m_tx
  m_axis_tx <> builder.m_axis

  // ---- One AXI4 port: writes from the writer, reads from the builder.
  Axi4.join(m_axi, writes = writer.m_axi, reads = builder.m_axi)

  // ---- Notifications after the stores issued before them (counts modulo 2^32).
  private val done = RegInit(0.U(32.W))
  private val storeErrors = RegInit(0.U(32.W))
  writer.m_done.ready := true.B
  // Stores complete in command order: the count says which, the id adds nothing.
  private val unused_done_id = WireDefault(writer.m_done.bits.id)
  dontTouch(unused_done_id)
  when(writer.m_done.fire) {
    done := done + 1.U
    when(writer.m_done.bits.error) { storeErrors := storeErrors + 1.U }
  }
  private val stored = !SeqNum.lt(done, engine.m_note.bits.stores)
  m_note.valid := engine.m_note.valid && stored
  m_note.bits := engine.m_note.bits.note
  engine.m_note.ready := m_note.ready && stored

  status.ready := engine.status.ready
  status.nowUs := engine.status.nowUs
  status.connections := engine.status.connections
  status.busy := engine.status.busy || engine.m_note.valid || engine.m_rxw.valid || engine.m_tx.valid ||
    done =/= engine.storesIssued
  status.storeErrors := storeErrors
  status.txDrops := builder.status_drops
  status.txReadErrors := builder.status_read_errors

  // ---- The register block.
  val reg = IO(Flipped(new RegBusPort(regAddrBits)))
  private val regs = Module(new RegBlock(RegMap.Toe, regBase, regNext, regAddrBits))
  regs.bus.req := reg.req
  reg.resp := regs.bus.resp
  private val counters = engine.steer_counters ++ engine.table_counters ++ engine.counters ++
    Seq(storeErrors, builder.status_drops, builder.status_read_errors)
  require(counters.size == RegMap.ToeCounters.size, "RegMap.ToeCounters and the engine's counters differ")
  for (((name, _), c) <- RegMap.ToeCounters.zip(counters)) regs.hw.value(name) := c
  private val installed = engine.status.connections
  private val peak = RegInit(0.U(installed.getWidth.W))
  private val clearPeak = regs.hw.strobe("control")
  when(clearPeak.valid && clearPeak.bits(0)) { peak := installed }.elsewhen(installed > peak) { peak := installed }
  regs.hw.value("connections") := installed
  regs.hw.value("connections_peak") := peak
  regs.hw.value("now_us") := engine.status.nowUs(31, 0)
}

object TcpOffload extends Elaboratable {
  /** `connections` (4096), `buckets` (1024), `slots` (1024), `fifo_beats` (512), the
    * register block's `reg_addr_bits` (24), `reg_base` (0) and `reg_next` (0). */
  def generate(p: Params): RawModule = new TcpOffload(p.int("connections", 4096), p.int("buckets", 1024),
    p.int("slots", 1024), p.int("fifo_beats", 512), regAddrBits = p.int("reg_addr_bits", 24),
    regBase = p.int("reg_base", 0), regNext = p.int("reg_next", 0))
}
