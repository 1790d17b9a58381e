package offnic.pcie

import chisel3._
import offnic.{Elaboratable, Params}
import offnic.axi.Axi4IO

/** [[Axi4DmaBridge]] in front of the real [[DmaEngine]], as a top level for the bench
  * (tests/pcie/test_axi_dma_bridge.py), lint and synthesis: an AXI4 subordinate port
  * `s_axi` (what TcpOffload's `m_axi` will drive) on one side, the PCIe requester ports
  * (m_axis_rq, s_axis_rc, cfg_max_payload, cfg_max_read_req) to the UltraScale+ IP (model)
  * on the other. The bridge's staging buffers are the engine's whole RAM.
  */
class Axi4DmaBridgeTestTop(val p: DmaParams, val addrBits: Int, val idBits: Int, val readSlots: Int,
                           val writeSlots: Int) extends Module {
  import PcieUs._

  val s_axi = IO(Flipped(new Axi4IO(addrBits, idBits)))
  val m_axis_rq = IO(new PcieStreamIO(DataBits, RqUserBits))
  val s_axis_rc = IO(Flipped(new PcieStreamIO(DataBits, RcUserBits)))
  val cfg_max_payload = IO(Input(UInt(3.W)))
  val cfg_max_read_req = IO(Input(UInt(3.W)))
  val stat_rd = IO(Output(new DmaReadStats))
  val stat_wr = IO(Output(new DmaWriteStats))

  private val dma = Module(new DmaEngine(p))
  private val bridge = Module(new Axi4DmaBridge(p, addrBits, idBits, readSlots, writeSlots))
  bridge.s_axi <> s_axi
  m_axis_rq <> dma.m_axis_rq
  dma.s_axis_rc <> s_axis_rc
  dma.s_rd_desc <> bridge.m_rd_desc
  bridge.s_rd_status <> dma.m_rd_status
  dma.s_wr_desc <> bridge.m_wr_desc
  bridge.s_wr_status <> dma.m_wr_status
  bridge.ram_wr <> dma.ram_wr
  bridge.ram_rd <> dma.ram_rd
  dma.cfg_max_payload := cfg_max_payload
  dma.cfg_max_read_req := cfg_max_read_req
  stat_rd := dma.stat_rd
  stat_wr := dma.stat_wr
}

object Axi4DmaBridgeTestTop extends Elaboratable {
  /** DmaParams' keys (ram_addr_bits 14: two 8 KiB staging areas), plus `addr_bits` (40),
    * `id_bits` (4), `read_slots` (16), `write_slots` (8). */
  def generate(p: Params): RawModule = new Axi4DmaBridgeTestTop(
    DmaParams.from(p).copy(ramAddrBits = p.int("ram_addr_bits", 14)), p.int("addr_bits", 40), p.int("id_bits", 4),
    p.int("read_slots", 16), p.int("write_slots", 8))
}
