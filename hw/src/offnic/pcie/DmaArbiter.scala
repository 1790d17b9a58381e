package offnic.pcie

import chisel3._
import chisel3.util._

/** Shares the DMA engine between the host path (packet data, descriptors, completions: the
  * NIC's own clients, already arbitrated among themselves) and the TCP engine's buffer
  * traffic (an [[Axi4DmaBridge]]'s descriptors and staging RAM), in front of [[DmaEngine]].
  *
  * Arbitration, per direction, chosen by `cfg_fcfs` (issue 17, seed 004's comparison):
  *  - host-first (0): a host descriptor always wins; an engine descriptor is admitted only
  *    when no host descriptor is offered and the DMA engine's intake is idle (nothing
  *    queued, nothing being cut into TLPs: DmaEngine.rd_intake_idle). So a host descriptor
  *    finds at most one engine descriptor ahead of it inside the DMA engine (plus the TLPs
  *    already cut, in the engine's fixed two-entry TLP queues), never a backlog: the
  *    engine's backlog waits in the bridge. What the engine holds in flight is bounded by
  *    the bridge too (its read slots: 16 tags and 8 KiB of completion credit of the
  *    engine's 128 and 32 KiB).
  *  - FCFS (1): round robin between the two, no admission gate (the engine's descriptors
  *    queue inside the DMA engine beside the host's).
  *
  * Telling the engine's requests apart: read statuses by tag (the engine's descriptors
  * carry `engTagValue` in the bits of `engTagMask`, its own tag in the others; the host must
  * never use such a tag); write statuses by an owner FIFO (DmaWrite reports in descriptor
  * order, with at most statusDepth open).
  *
  * RAM: the engine's staging RAM (2^engRamBits bytes) is the DMA RAM window at `engRamBase`;
  * RAM accesses there go to the engine's ports, every other one to the host's (whose enables
  * are low for the window).
  *
  * Counters: `stat_eng_rd` / `stat_eng_wr` pulse with the length of each engine descriptor
  * admitted, `stat_eng_over_host` when an engine descriptor is admitted while a host one
  * waits (never in host-first mode).
  */
class DmaArbiter(val p: DmaParams, val engRamBits: Int, val engRamBase: BigInt, val engTagValue: Int,
                 val engTagMask: Int) extends Module {
  require(engRamBits >= 6 && engRamBits < p.ramAddrBits, "the engine's window is a part of the DMA RAM space")
  require(engRamBase % (BigInt(1) << engRamBits) == 0 && engRamBase < (BigInt(1) << p.ramAddrBits),
    "the engine's window is aligned to its size")
  require((engTagValue & ~engTagMask) == 0 && engTagMask > 0 && engTagMask < 0x100)

  // Host side: the same ports the DMA engine offers.
  val s_host_rd_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_host_rd_status = IO(Decoupled(new DmaStatus))
  val s_host_wr_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_host_wr_status = IO(Decoupled(new DmaStatus))
  val host_ram_wr = IO(new DmaRamWrite(p.ramAddrBits))
  val host_ram_rd = IO(new DmaRamRead(p.ramAddrBits))
  // Engine side: what Axi4DmaBridge drives.
  val s_eng_rd_desc = IO(Flipped(Decoupled(new DmaDesc(engRamBits))))
  val m_eng_rd_status = IO(Decoupled(new DmaStatus))
  val s_eng_wr_desc = IO(Flipped(Decoupled(new DmaDesc(engRamBits))))
  val m_eng_wr_status = IO(Decoupled(new DmaStatus))
  val eng_ram_wr = IO(new DmaRamWrite(engRamBits))
  val eng_ram_rd = IO(new DmaRamRead(engRamBits))
  // To the DMA engine.
  val m_rd_desc = IO(Decoupled(new DmaDesc(p.ramAddrBits)))
  val s_rd_status = IO(Flipped(Decoupled(new DmaStatus)))
  val m_wr_desc = IO(Decoupled(new DmaDesc(p.ramAddrBits)))
  val s_wr_status = IO(Flipped(Decoupled(new DmaStatus)))
  val dma_ram_wr = IO(Flipped(new DmaRamWrite(p.ramAddrBits)))
  val dma_ram_rd = IO(Flipped(new DmaRamRead(p.ramAddrBits)))
  val rd_intake_idle = IO(Input(Bool()))
  val wr_intake_idle = IO(Input(Bool()))

  val cfg_fcfs = IO(Input(Bool()))
  val stat_eng_rd = IO(Output(Valid(UInt(DmaParams.LenBits.W))))
  val stat_eng_wr = IO(Output(Valid(UInt(DmaParams.LenBits.W))))
  val stat_eng_over_host = IO(Output(Bool()))

  private val wordBits = p.ramAddrBits - 5
  private val engWordBits = engRamBits - 5
  private val engWindow = (engRamBase >> engRamBits).U((p.ramAddrBits - engRamBits).W)
  private def inWindow(wordAddr: UInt): Bool = wordAddr(wordBits - 1, engWordBits) === engWindow

  /** The engine's descriptor in the DMA engine's address space, and for reads its tag space
    * (write tags pass unchanged: the owner FIFO tells write statuses apart). */
  private def widen(d: DmaDesc, read: Boolean): DmaDesc = {
    val w = Wire(new DmaDesc(p.ramAddrBits))
    w.host_addr := d.host_addr
    w.ram_addr := engRamBase.U(p.ramAddrBits.W) | d.ram_addr
    w.len := d.len
    w.tag := (if (read) engTagValue.U(8.W) | (d.tag & (~engTagMask & 0xff).U(8.W)) else d.tag)
    w
  }
  // The engine's read tag bits under the mask are replaced (it must not need them back).
  private val unused_eng_tag = WireDefault(s_eng_rd_desc.bits.tag & engTagMask.U(8.W))
  dontTouch(unused_eng_tag)

  /** One direction's choice; returns (engine admitted, engine admitted over a waiting host). */
  private def arbitrate(host: DecoupledIO[DmaDesc], eng: DecoupledIO[DmaDesc], out: DecoupledIO[DmaDesc],
                        idle: Bool, room: Bool, read: Boolean): (Bool, Bool) = {
    val lastEng = RegInit(false.B) // round robin: who went last
    val engOk = Mux(cfg_fcfs, !host.valid || !lastEng, !host.valid && idle)
    val pickEng = eng.valid && engOk
    out.valid := room && (host.valid || pickEng)
    out.bits := Mux(pickEng, widen(eng.bits, read), host.bits)
    host.ready := room && out.ready && !pickEng
    eng.ready := room && out.ready && pickEng
    when(out.fire) { lastEng := pickEng }
    (eng.fire, eng.fire && host.valid)
  }

  // ---- reads
  private val (engRd, rdOver) = arbitrate(s_host_rd_desc, s_eng_rd_desc, m_rd_desc, rd_intake_idle, true.B, true)
  private val rsEng = (s_rd_status.bits.tag & engTagMask.U(8.W)) === engTagValue.U(8.W)
  m_eng_rd_status.valid := s_rd_status.valid && rsEng
  m_eng_rd_status.bits := s_rd_status.bits
  m_host_rd_status.valid := s_rd_status.valid && !rsEng
  m_host_rd_status.bits := s_rd_status.bits
  s_rd_status.ready := Mux(rsEng, m_eng_rd_status.ready, m_host_rd_status.ready)

  // ---- writes: statuses come in descriptor order, so a FIFO of owners tells them apart.
  private val owners = Module(new Queue(Bool(), p.statusDepth))
  private val (engWr, wrOver) = arbitrate(s_host_wr_desc, s_eng_wr_desc, m_wr_desc, wr_intake_idle,
    owners.io.enq.ready, false)
  owners.io.enq.valid := m_wr_desc.fire
  owners.io.enq.bits := engWr
  private val wsEng = owners.io.deq.bits
  m_eng_wr_status.valid := s_wr_status.valid && wsEng
  m_eng_wr_status.bits := s_wr_status.bits
  m_host_wr_status.valid := s_wr_status.valid && !wsEng
  m_host_wr_status.bits := s_wr_status.bits
  s_wr_status.ready := owners.io.deq.valid && Mux(wsEng, m_eng_wr_status.ready, m_host_wr_status.ready)
  owners.io.deq.ready := s_wr_status.fire

  // ---- RAM: the window goes to the engine's staging RAM
  private val wrEng = inWindow(dma_ram_wr.addr)
  eng_ram_wr.en := dma_ram_wr.en && wrEng
  eng_ram_wr.addr := dma_ram_wr.addr(engWordBits - 1, 0)
  eng_ram_wr.data := dma_ram_wr.data
  eng_ram_wr.strb := dma_ram_wr.strb
  host_ram_wr.en := dma_ram_wr.en && !wrEng
  host_ram_wr.addr := dma_ram_wr.addr
  host_ram_wr.data := dma_ram_wr.data
  host_ram_wr.strb := dma_ram_wr.strb

  private val rdEng = inWindow(dma_ram_rd.addr)
  eng_ram_rd.en := dma_ram_rd.en && rdEng
  eng_ram_rd.addr := dma_ram_rd.addr(engWordBits - 1, 0)
  host_ram_rd.en := dma_ram_rd.en && !rdEng
  host_ram_rd.addr := dma_ram_rd.addr
  dma_ram_rd.data := Mux(ShiftRegister(rdEng, p.ramReadLatency), eng_ram_rd.data, host_ram_rd.data)

  stat_eng_rd.valid := engRd
  stat_eng_rd.bits := s_eng_rd_desc.bits.len
  stat_eng_wr.valid := engWr && m_wr_desc.fire
  stat_eng_wr.bits := s_eng_wr_desc.bits.len
  stat_eng_over_host := rdOver || (wrOver && m_wr_desc.fire)
}

object DmaArbiter {
  /** The arbiter in front of `dma`: its descriptor and status streams, RAM ports and intake
    * signals, in the mode `fcfs` (false: host first). */
  def attach(dma: DmaEngine, arb: DmaArbiter, fcfs: Bool): Unit = {
    dma.s_rd_desc <> arb.m_rd_desc
    arb.s_rd_status <> dma.m_rd_status
    dma.s_wr_desc <> arb.m_wr_desc
    arb.s_wr_status <> dma.m_wr_status
    arb.dma_ram_wr <> dma.ram_wr
    arb.dma_ram_rd <> dma.ram_rd
    arb.rd_intake_idle := dma.rd_intake_idle
    arb.wr_intake_idle := dma.wr_intake_idle
    arb.cfg_fcfs := fcfs
  }

  /** The TCP engine's side, through its AXI4-to-DMA bridge. */
  def attachBridge(arb: DmaArbiter, bridge: Axi4DmaBridge): Unit = {
    arb.s_eng_rd_desc <> bridge.m_rd_desc
    bridge.s_rd_status <> arb.m_eng_rd_status
    arb.s_eng_wr_desc <> bridge.m_wr_desc
    bridge.s_wr_status <> arb.m_eng_wr_status
    bridge.ram_wr <> arb.eng_ram_wr
    bridge.ram_rd <> arb.eng_ram_rd
  }
}
