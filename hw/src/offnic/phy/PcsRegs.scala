package offnic.phy

import chisel3._
import offnic.regs.{RegBlock, RegBusPort, RegMap, StatCounter}

/** What the pcs block (RegMap.Pcs) shows, every field in the block's clock. */
class PcsCounters extends Bundle {
  val block_lock = Bool()
  val hi_ber = Bool()
  val rx_bad_sync_headers = UInt(32.W)
  val rx_error_blocks = UInt(32.W)
  val rx_slips = UInt(32.W)
  val rx_lock_losses = UInt(32.W)
  val rx_hi_ber_events = UInt(32.W)
  val tx_error_blocks = UInt(32.W)
  val tx_adapter = new RateAdapterStats
  val rx_adapter = new RateAdapterStats
}

object PcsCounters {
  /** Counters of a PCS in the current clock (`status` in it too), without rate adapters
    * (their counters read 0): PcsTestTop's case. */
  def sameClock(status: PcsStatus): PcsCounters = {
    val v = Wire(new PcsCounters)
    v.block_lock := status.rx_block_lock
    v.hi_ber := status.rx_hi_ber
    v.rx_bad_sync_headers := StatCounter(status.stat_rx_bad_sync_header)
    v.rx_error_blocks := StatCounter(status.stat_rx_error_block)
    v.rx_slips := StatCounter(status.stat_rx_slip)
    v.rx_lock_losses := StatCounter(status.stat_rx_lock_lost)
    v.rx_hi_ber_events := StatCounter(status.stat_rx_hi_ber)
    v.tx_error_blocks := StatCounter(status.stat_tx_error_block)
    v.tx_adapter := 0.U.asTypeOf(v.tx_adapter)
    v.rx_adapter := 0.U.asTypeOf(v.rx_adapter)
    v
  }
}

/** The PCS's register block (RegMap.Pcs) at `base`, chain pointer `next`: `counters` as
  * they are in this clock (PcsCounters.sameClock for a PCS in it; PhyPortRegs brings a
  * board port's from their own clocks).
  */
class PcsRegs(base: Int, next: Int, addrBits: Int, port: Int = 0) extends Module {
  val bus = IO(Flipped(new RegBusPort(addrBits)))
  val counters = IO(Input(new PcsCounters))

  private val block = Module(new RegBlock(RegMap.Pcs, base, next, addrBits))
  block.bus <> bus
  private val hw = block.hw
  private val v = counters
  hw.value("status") := v.hi_ber ## v.block_lock | (v.block_lock && !v.hi_ber) << 2
  hw.value("rx_bad_sync_headers") := v.rx_bad_sync_headers
  hw.value("rx_error_blocks") := v.rx_error_blocks
  hw.value("rx_slips") := v.rx_slips
  hw.value("rx_lock_losses") := v.rx_lock_losses
  hw.value("rx_hi_ber_events") := v.rx_hi_ber_events
  hw.value("tx_error_blocks") := v.tx_error_blocks
  hw.value("port") := port.U
  for ((dir, s) <- Seq("tx" -> v.tx_adapter, "rx" -> v.rx_adapter)) {
    hw.value(s"${dir}_adapter_inserted") := s.inserted
    hw.value(s"${dir}_adapter_deleted") := s.deleted
    hw.value(s"${dir}_adapter_overflows") := s.overflows
    hw.value(s"${dir}_adapter_underflows") := s.underflows
  }
}
