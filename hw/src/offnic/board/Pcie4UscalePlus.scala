package offnic.board

import chisel3._

/** The PCIe hard IP as Vivado generates it from constraints/<board>/ip.tcl
  * (`pcie4_uscale_plus`, module `pcie4_uscale_plus_0`: Gen3 x8, 256-bit AXI-Stream at
  * 250 MHz, DWORD-aligned, no RC straddling, MSI-X table in user logic). Ports as PG213
  * (UltraScale+ Devices Integrated Block for PCI Express) names them, those offnic uses
  * or must tie off; the IP's other outputs are left open. Not checked against a generated
  * instantiation template here (no Vivado): the first Vivado run will name any mismatch.
  */
class Pcie4UscalePlus extends ExtModule {
  override def desiredName = "pcie4_uscale_plus_0"
  val io = FlatIO(new Bundle {
    // serial lanes and reference clock (sys_clk: the refclk's ODIV2 through BUFG_GT;
    // sys_clk_gt: the refclk buffer's O), PERST# active low
    val pci_exp_txp = Output(UInt(8.W))
    val pci_exp_txn = Output(UInt(8.W))
    val pci_exp_rxp = Input(UInt(8.W))
    val pci_exp_rxn = Input(UInt(8.W))
    val sys_clk = Input(Clock())
    val sys_clk_gt = Input(Clock())
    val sys_reset = Input(Bool())
    // user side: 250 MHz clock, synchronous active-high reset, link up
    val user_clk = Output(Clock())
    val user_reset = Output(Bool())
    val user_lnk_up = Output(Bool())
    // requester request (NIC -> IP)
    val s_axis_rq_tdata = Input(UInt(256.W))
    val s_axis_rq_tkeep = Input(UInt(8.W))
    val s_axis_rq_tlast = Input(Bool())
    val s_axis_rq_tuser = Input(UInt(62.W))
    val s_axis_rq_tvalid = Input(Bool())
    val s_axis_rq_tready = Output(UInt(4.W))
    // requester completion (IP -> NIC)
    val m_axis_rc_tdata = Output(UInt(256.W))
    val m_axis_rc_tkeep = Output(UInt(8.W))
    val m_axis_rc_tlast = Output(Bool())
    val m_axis_rc_tuser = Output(UInt(75.W))
    val m_axis_rc_tvalid = Output(Bool())
    val m_axis_rc_tready = Input(Bool())
    // completer request (IP -> NIC)
    val m_axis_cq_tdata = Output(UInt(256.W))
    val m_axis_cq_tkeep = Output(UInt(8.W))
    val m_axis_cq_tlast = Output(Bool())
    val m_axis_cq_tuser = Output(UInt(88.W))
    val m_axis_cq_tvalid = Output(Bool())
    val m_axis_cq_tready = Input(Bool())
    // completer completion (NIC -> IP)
    val s_axis_cc_tdata = Input(UInt(256.W))
    val s_axis_cc_tkeep = Input(UInt(8.W))
    val s_axis_cc_tlast = Input(Bool())
    val s_axis_cc_tuser = Input(UInt(33.W))
    val s_axis_cc_tvalid = Input(Bool())
    val s_axis_cc_tready = Output(UInt(4.W))
    // non-posted request flow control: always ready
    val pcie_cq_np_req = Input(UInt(2.W))
    val pcie_cq_np_req_count = Output(UInt(6.W))
    // configuration status
    val cfg_max_payload = Output(UInt(2.W))
    val cfg_max_read_req = Output(UInt(3.W))
    val cfg_current_speed = Output(UInt(2.W))
    val cfg_negotiated_width = Output(UInt(3.W))
    val cfg_phy_link_down = Output(Bool())
    val cfg_function_status = Output(UInt(16.W))
    // function level reset handshake
    val cfg_flr_in_process = Output(UInt(4.W))
    val cfg_flr_done = Input(UInt(4.W))
    // legacy interrupts unused (MSI-X messages are memory writes from the NIC)
    val cfg_interrupt_int = Input(UInt(4.W))
    val cfg_interrupt_pending = Input(UInt(4.W))
    val cfg_interrupt_sent = Output(Bool())
    // the IP's own MSI-X sender unused ("MSI-X External": the table is the NIC's msix block)
    val cfg_interrupt_msix_int = Input(Bool())
    val cfg_interrupt_msix_address = Input(UInt(64.W))
    val cfg_interrupt_msix_data = Input(UInt(32.W))
    val cfg_interrupt_msix_vec_pending = Input(UInt(2.W))
    val cfg_interrupt_msi_function_number = Input(UInt(8.W))
    val cfg_interrupt_msix_enable = Output(UInt(4.W))
    val cfg_interrupt_msix_mask = Output(UInt(4.W))
    // configuration management port unused
    val cfg_mgmt_addr = Input(UInt(10.W))
    val cfg_mgmt_function_number = Input(UInt(8.W))
    val cfg_mgmt_write = Input(Bool())
    val cfg_mgmt_write_data = Input(UInt(32.W))
    val cfg_mgmt_byte_enable = Input(UInt(4.W))
    val cfg_mgmt_read = Input(Bool())
    val cfg_mgmt_debug_access = Input(Bool())
    // device serial number, power-state acknowledge, error inputs
    val cfg_dsn = Input(UInt(64.W))
    val cfg_power_state_change_ack = Input(Bool())
    val cfg_power_state_change_interrupt = Output(Bool())
    val cfg_err_cor_in = Input(Bool())
    val cfg_err_uncor_in = Input(Bool())
    val cfg_link_training_enable = Input(Bool())
  })
}
