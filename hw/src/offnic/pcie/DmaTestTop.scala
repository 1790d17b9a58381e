package offnic.pcie

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}

/** The DMA engine with its RAM, as a top level for the bench (tests/pcie/test_dma.py) and
  * for lint and synthesis: the PCIe requester ports (m_axis_rq, s_axis_rc) go to the
  * UltraScale+ IP (model), the descriptor and status streams are ports, and
  * cfg_max_payload / cfg_max_read_req come from the IP's outputs of the same names. The
  * RAM is 2^ram_addr_bits bytes (64 KiB by default).
  */
class DmaTestTop(val p: DmaParams) extends Module {
  import PcieUs._

  val m_axis_rq = IO(new PcieStreamIO(DataBits, RqUserBits))
  val s_axis_rc = IO(Flipped(new PcieStreamIO(DataBits, RcUserBits)))
  val s_rd_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_rd_status = IO(Decoupled(new DmaStatus))
  val s_wr_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_wr_status = IO(Decoupled(new DmaStatus))
  val cfg_max_payload = IO(Input(UInt(3.W)))
  val cfg_max_read_req = IO(Input(UInt(3.W)))
  val stat_rd = IO(Output(new DmaReadStats))
  val stat_wr = IO(Output(new DmaWriteStats))

  private val dma = Module(new DmaEngine(p))
  private val ram = Module(new DmaRam(p.ramAddrBits, p.ramReadLatency))
  m_axis_rq <> dma.m_axis_rq
  dma.s_axis_rc <> s_axis_rc
  dma.s_rd_desc <> s_rd_desc
  m_rd_status <> dma.m_rd_status
  dma.s_wr_desc <> s_wr_desc
  m_wr_status <> dma.m_wr_status
  dma.cfg_max_payload := cfg_max_payload
  dma.cfg_max_read_req := cfg_max_read_req
  stat_rd := dma.stat_rd
  stat_wr := dma.stat_wr
  ram.wr <> dma.ram_wr
  ram.rd <> dma.ram_rd
}

object DmaTestTop extends Elaboratable {
  def generate(p: Params): RawModule = new DmaTestTop(DmaParams.from(p))
}
