package offnic.pcie

import chisel3._
import chisel3.util._

/** The NIC's DMA engine on the UltraScale+ requester side: DmaRead (host -> RAM: read
  * requests on RQ, completions on RC) and DmaWrite (RAM -> host: memory writes on RQ), with
  * RQ shared TLP by TLP.
  *
  * What the queue manager and the TX/RX engines use (see DmaRead / DmaWrite for the
  * details):
  *  - `s_rd_desc` / `m_rd_status`: read descriptors (host_addr[63:0], ram_addr, len 1..65536,
  *    tag[7:0]) and their statuses (tag, DmaError code), statuses in completion order.
  *  - `s_wr_desc` / `m_wr_status`: the same for writes, statuses in descriptor order.
  *  - `ram_wr` / `ram_rd`: the on-chip RAM's write port (read data lands there) and read
  *    port (data for writes), 256-bit words, byte strobes on writes, fixed read latency.
  *  - `cfg_max_payload` / `cfg_max_read_req`: the hard IP's outputs of the same names.
  *  - `stat_rd_*` / `stat_wr_*`: one-cycle event pulses for the statistics counters.
  *
  * The IP must be configured with client tags (the engine picks tags 0..tags-1; 32 tags need
  * no extended tags), DWORD alignment and no straddling; m_axis_rq.tready is bit 0 of the
  * IP's s_axis_rq_tready.
  */
class DmaEngine(val p: DmaParams) extends Module {
  import PcieUs._

  val m_axis_rq = IO(new PcieStreamIO(DataBits, RqUserBits))
  val s_axis_rc = IO(Flipped(new PcieStreamIO(DataBits, RcUserBits)))
  val s_rd_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_rd_status = IO(Decoupled(new DmaStatus))
  val s_wr_desc = IO(Flipped(Decoupled(new DmaDesc(p.ramAddrBits))))
  val m_wr_status = IO(Decoupled(new DmaStatus))
  val ram_wr = IO(new DmaRamWrite(p.ramAddrBits))
  val ram_rd = IO(new DmaRamRead(p.ramAddrBits))
  val cfg_max_payload = IO(Input(UInt(3.W)))
  val cfg_max_read_req = IO(Input(UInt(3.W)))
  val stat_rd = IO(Output(new DmaReadStats))
  val stat_wr = IO(Output(new DmaWriteStats))
  /** Nothing waits in the read / write intake (DmaRead.intake_idle), for DmaArbiter. */
  val rd_intake_idle = IO(Output(Bool()))
  val wr_intake_idle = IO(Output(Bool()))

  private val rd = Module(new DmaRead(p))
  rd.s_desc <> s_rd_desc
  m_rd_status <> rd.m_status
  rd.s_axis_rc <> s_axis_rc
  ram_wr <> rd.ram_wr
  rd.cfg_max_read_req := cfg_max_read_req
  stat_rd := rd.stat
  rd_intake_idle := rd.intake_idle

  private val wr = Module(new DmaWrite(p))
  wr.s_desc <> s_wr_desc
  m_wr_status <> wr.m_status
  ram_rd <> wr.ram_rd
  wr.cfg_max_payload := cfg_max_payload
  stat_wr := wr.stat
  wr_intake_idle := wr.intake_idle

  RqArbiter(Seq(rd.m_axis_rq, wr.m_axis_rq), m_axis_rq)
}

/** Shares RQ between TLP sources, a whole TLP at a time, round robin. The choice is held from
  * the first cycle a TLP is offered until its last beat is taken (AXI-Stream: what is
  * offered does not change), and made in the cycle a source asks, so back-to-back TLPs
  * leave no gaps. No buffering: a source's beat is handed to the IP in the cycle it fires.
  */
object RqArbiter {
  def apply(in: Seq[PcieStreamIO], out: PcieStreamIO): Unit = {
    val n = in.length
    require(n >= 2 && isPow2(n), "RqArbiter: a power of two of sources")
    val w = log2Ceil(n)
    val locked = RegInit(false.B)
    val lockedSel = Reg(UInt(w.W))
    val next = RegInit(0.U(w.W)) // first in line
    val valids = VecInit(in.map(_.tvalid))
    // Round robin: the first valid source at or after `next`.
    val order = (0 until n).map(i => (next + i.U(w.W))(w - 1, 0))
    val pick = PriorityMux(order.map(i => valids(i)) :+ true.B, order :+ next)
    val sel = Mux(locked, lockedSel, pick)

    out.tvalid := valids(sel)
    out.tdata := VecInit(in.map(_.tdata))(sel)
    out.tkeep := VecInit(in.map(_.tkeep))(sel)
    out.tlast := VecInit(in.map(_.tlast))(sel)
    out.tuser := VecInit(in.map(_.tuser))(sel)
    in.zipWithIndex.foreach { case (s, i) => s.tready := out.tready && sel === i.U }

    when(out.tvalid) {
      locked := !(out.tready && out.tlast)
      lockedSel := sel
    }
    when(out.fire && out.tlast) { next := sel + 1.U(w.W) }
  }
}
