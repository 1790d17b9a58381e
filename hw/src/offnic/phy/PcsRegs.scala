package offnic.phy

import chisel3._
import offnic.regs.{RegBlock, RegBusPort, RegMap, StatCounter}

/** The PCS's register block (RegMap.Pcs): status levels and counters of its event pulses,
  * in the PCS clock. In a port the counters will cross to the core clock as EthPort's do;
  * on its own (PcsTestTop) it sits in the same clock.
  */
class PcsRegs(base: Int, next: Int, addrBits: Int) extends Module {
  val bus = IO(Flipped(new RegBusPort(addrBits)))
  val status = IO(Input(new PcsStatus))

  private val block = Module(new RegBlock(RegMap.Pcs, base, next, addrBits))
  block.bus <> bus
  private val hw = block.hw
  hw.value("status") := status.rx_hi_ber ## status.rx_block_lock | (status.rx_block_lock && !status.rx_hi_ber) << 2
  hw.value("rx_bad_sync_headers") := StatCounter(status.stat_rx_bad_sync_header)
  hw.value("rx_error_blocks") := StatCounter(status.stat_rx_error_block)
  hw.value("rx_slips") := StatCounter(status.stat_rx_slip)
  hw.value("rx_lock_losses") := StatCounter(status.stat_rx_lock_lost)
  hw.value("rx_hi_ber_events") := StatCounter(status.stat_rx_hi_ber)
  hw.value("tx_error_blocks") := StatCounter(status.stat_tx_error_block)
}
