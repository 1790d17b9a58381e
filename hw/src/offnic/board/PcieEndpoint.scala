package offnic.board

import chisel3._
import offnic.pcie.{PcieStreamIO, PcieUs}

/** The PCIe side of a board: reference-clock buffers and the hard IP, presented to the NIC
  * as its four AXI-Stream interfaces in the IP's `user_clk` (250 MHz).
  *  - refclk: IBUFDS_GTE4; `O` to the IP's GT (`sys_clk_gt`), `ODIV2` through a BUFG_GT
  *    to `sys_clk` (PG213's clocking);
  *  - PERST# (`pcie_reset_n`, from the slot, asynchronous) straight to `sys_reset`, which
  *    the IP synchronises itself;
  *  - the IP's 4-bit tready: bit 0 to the NIC (TOOLCHAIN.md: the bits are copies);
  *  - non-posted requests always accepted (`pcie_cq_np_req` = 11: the NIC's BAR access
  *    never refuses a read); function-level reset acknowledged the cycle after it starts
  *    (the NIC has one function and no per-function state to drain);
  *  - `cfg_max_payload` (2 bits in the IP) widened to the NIC's 3.
  */
class PcieEndpoint extends RawModule {
  import PcieUs._
  val refclk_p = IO(Input(Bool()))
  val refclk_n = IO(Input(Bool()))
  val perst_n = IO(Input(Bool()))
  val rx_p = IO(Input(UInt(8.W)))
  val rx_n = IO(Input(UInt(8.W)))
  val tx_p = IO(Output(UInt(8.W)))
  val tx_n = IO(Output(UInt(8.W)))
  val user_clk = IO(Output(Clock()))
  val user_reset = IO(Output(Bool()))
  val link_up = IO(Output(Bool()))
  val m_axis_cq = IO(new PcieStreamIO(DataBits, CqUserBits))
  val s_axis_cc = IO(Flipped(new PcieStreamIO(DataBits, CcUserBits)))
  val s_axis_rq = IO(Flipped(new PcieStreamIO(DataBits, RqUserBits)))
  val m_axis_rc = IO(new PcieStreamIO(DataBits, RcUserBits))
  val cfg_max_payload = IO(Output(UInt(3.W)))
  val cfg_max_read_req = IO(Output(UInt(3.W)))

  private val refBuf = BlackBoxStubs.record(Module(new IBUFDS_GTE4), cell = true)
  refBuf.io.I := refclk_p
  refBuf.io.IB := refclk_n
  refBuf.io.CEB := false.B
  private val sysBuf = BlackBoxStubs.record(Module(new BUFG_GT), cell = true)
  sysBuf.io.I := refBuf.io.ODIV2
  sysBuf.io.CE := true.B
  sysBuf.io.CEMASK := false.B
  sysBuf.io.CLR := false.B
  sysBuf.io.CLRMASK := false.B
  sysBuf.io.DIV := 0.U

  private val ip = BlackBoxStubs.record(Module(new Pcie4UscalePlus)).io
  ip.sys_clk := sysBuf.io.O
  ip.sys_clk_gt := refBuf.io.O
  ip.sys_reset := perst_n
  ip.pci_exp_rxp := rx_p
  ip.pci_exp_rxn := rx_n
  tx_p := ip.pci_exp_txp
  tx_n := ip.pci_exp_txn
  user_clk := ip.user_clk
  user_reset := ip.user_reset
  link_up := ip.user_lnk_up

  m_axis_cq.tdata := ip.m_axis_cq_tdata
  m_axis_cq.tkeep := ip.m_axis_cq_tkeep
  m_axis_cq.tlast := ip.m_axis_cq_tlast
  m_axis_cq.tuser := ip.m_axis_cq_tuser
  m_axis_cq.tvalid := ip.m_axis_cq_tvalid
  ip.m_axis_cq_tready := m_axis_cq.tready
  m_axis_rc.tdata := ip.m_axis_rc_tdata
  m_axis_rc.tkeep := ip.m_axis_rc_tkeep
  m_axis_rc.tlast := ip.m_axis_rc_tlast
  m_axis_rc.tuser := ip.m_axis_rc_tuser
  m_axis_rc.tvalid := ip.m_axis_rc_tvalid
  ip.m_axis_rc_tready := m_axis_rc.tready
  ip.s_axis_cc_tdata := s_axis_cc.tdata
  ip.s_axis_cc_tkeep := s_axis_cc.tkeep
  ip.s_axis_cc_tlast := s_axis_cc.tlast
  ip.s_axis_cc_tuser := s_axis_cc.tuser
  ip.s_axis_cc_tvalid := s_axis_cc.tvalid
  s_axis_cc.tready := ip.s_axis_cc_tready(0)
  ip.s_axis_rq_tdata := s_axis_rq.tdata
  ip.s_axis_rq_tkeep := s_axis_rq.tkeep
  ip.s_axis_rq_tlast := s_axis_rq.tlast
  ip.s_axis_rq_tuser := s_axis_rq.tuser
  ip.s_axis_rq_tvalid := s_axis_rq.tvalid
  s_axis_rq.tready := ip.s_axis_rq_tready(0)
  cfg_max_payload := ip.cfg_max_payload.pad(3)
  cfg_max_read_req := ip.cfg_max_read_req

  ip.pcie_cq_np_req := 3.U
  withClockAndReset(ip.user_clk, ip.user_reset) { ip.cfg_flr_done := RegNext(ip.cfg_flr_in_process, 0.U) }
  ip.cfg_interrupt_int := 0.U
  ip.cfg_interrupt_pending := 0.U
  ip.cfg_interrupt_msix_int := false.B
  ip.cfg_interrupt_msix_address := 0.U
  ip.cfg_interrupt_msix_data := 0.U
  ip.cfg_interrupt_msix_vec_pending := 0.U
  ip.cfg_interrupt_msi_function_number := 0.U
  ip.cfg_mgmt_addr := 0.U
  ip.cfg_mgmt_function_number := 0.U
  ip.cfg_mgmt_write := false.B
  ip.cfg_mgmt_write_data := 0.U
  ip.cfg_mgmt_byte_enable := 0.U
  ip.cfg_mgmt_read := false.B
  ip.cfg_mgmt_debug_access := false.B
  ip.cfg_dsn := 0.U
  ip.cfg_power_state_change_ack := true.B // nothing to quiesce before a power-state change
  ip.cfg_err_cor_in := false.B
  ip.cfg_err_uncor_in := false.B
  ip.cfg_link_training_enable := true.B
}
