package offnic.pcie

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axi.Axi4IO

/** The DMA engine shared by a host client and the TCP engine's AXI4 port, as a top level for
  * the bench (tests/pcie/test_dma_shared.py), lint and synthesis: DmaTestTop's host ports
  * (descriptor and status streams, a 2^host_ram_bits byte RAM behind them) plus an AXI4
  * subordinate `s_axi` through [[Axi4DmaBridge]], both into one [[DmaEngine]] through
  * [[DmaArbiter]] (`cfg_fcfs` picks its mode). The bridge's staging RAM is the DMA RAM window
  * at 2^(ram_addr_bits-1); read tags 0xE0..0xFF are the engine's.
  */
class DmaSharedTestTop(val p: DmaParams, val hostRamBits: Int, val engRamBits: Int, val addrBits: Int,
                       val idBits: Int, val readSlots: Int, val writeSlots: Int) extends Module {
  import PcieUs._
  require(hostRamBits < p.ramAddrBits && engRamBits < p.ramAddrBits)

  val m_axis_rq = IO(new PcieStreamIO(DataBits, RqUserBits))
  val s_axis_rc = IO(Flipped(new PcieStreamIO(DataBits, RcUserBits)))
  val s_rd_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_rd_status = IO(Decoupled(new DmaStatus))
  val s_wr_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_wr_status = IO(Decoupled(new DmaStatus))
  val s_axi = IO(Flipped(new Axi4IO(addrBits, idBits)))
  val cfg_max_payload = IO(Input(UInt(3.W)))
  val cfg_max_read_req = IO(Input(UInt(3.W)))
  val cfg_fcfs = IO(Input(Bool()))
  val stat_rd = IO(Output(new DmaReadStats))
  val stat_wr = IO(Output(new DmaWriteStats))
  val stat_eng_rd = IO(Output(Valid(UInt(DmaParams.LenBits.W))))
  val stat_eng_wr = IO(Output(Valid(UInt(DmaParams.LenBits.W))))
  val stat_eng_over_host = IO(Output(Bool()))

  private val dma = Module(new DmaEngine(p))
  private val arb = Module(new DmaArbiter(p, engRamBits, BigInt(1) << (p.ramAddrBits - 1), 0xe0, 0xe0))
  private val bridge = Module(new Axi4DmaBridge(p.copy(ramAddrBits = engRamBits), addrBits, idBits, readSlots,
    writeSlots))
  private val ram = Module(new DmaRam(hostRamBits, p.ramReadLatency))

  m_axis_rq <> dma.m_axis_rq
  dma.s_axis_rc <> s_axis_rc
  dma.cfg_max_payload := cfg_max_payload
  dma.cfg_max_read_req := cfg_max_read_req
  stat_rd := dma.stat_rd
  stat_wr := dma.stat_wr

  DmaArbiter.attach(dma, arb, cfg_fcfs)
  stat_eng_rd := arb.stat_eng_rd
  stat_eng_wr := arb.stat_eng_wr
  stat_eng_over_host := arb.stat_eng_over_host

  arb.s_host_rd_desc <> s_rd_desc
  m_rd_status <> arb.m_host_rd_status
  arb.s_host_wr_desc <> s_wr_desc
  m_wr_status <> arb.m_host_wr_status
  // The host RAM answers the low 2^hostRamBits bytes of the host's part of the window
  // (higher addresses wrap onto it, as DmaTestTop's RAM does).
  ram.wr.en := arb.host_ram_wr.en
  ram.wr.addr := arb.host_ram_wr.addr(hostRamBits - 6, 0)
  ram.wr.data := arb.host_ram_wr.data
  ram.wr.strb := arb.host_ram_wr.strb
  ram.rd.en := arb.host_ram_rd.en
  ram.rd.addr := arb.host_ram_rd.addr(hostRamBits - 6, 0)
  arb.host_ram_rd.data := ram.rd.data

  bridge.s_axi <> s_axi
  DmaArbiter.attachBridge(arb, bridge)

  // The host RAM's address bits above its size (it wraps) are not looked at.
  private val unused_bits = WireDefault(Cat(arb.host_ram_wr.addr, arb.host_ram_rd.addr))
  dontTouch(unused_bits)
}

object DmaSharedTestTop extends Elaboratable {
  /** DmaParams' keys (ram_addr_bits 17: the host's 64 KiB RAM below, the engine's window
    * above), `host_ram_bits` (16), `eng_ram_bits` (14), and the bridge's `addr_bits` (40),
    * `id_bits` (4), `read_slots` (16), `write_slots` (8). */
  def generate(p: Params): RawModule = new DmaSharedTestTop(
    DmaParams.from(p).copy(ramAddrBits = p.int("ram_addr_bits", 17)), p.int("host_ram_bits", 16),
    p.int("eng_ram_bits", 14), p.int("addr_bits", 40), p.int("id_bits", 4), p.int("read_slots", 16),
    p.int("write_slots", 8))
}
