package offnic.phy

import chisel3._
import chisel3.experimental.noPrefix
import offnic.cdc.{CounterSync, GraySync}
import offnic.regs.{RegBusPort, StatCounter}

/** A board port's pcs register block (RegMap.Pcs), in the core clock (this module's), over
  * a [[BaseRPhy]] whose status and counters live in three other clocks:
  *  - `rx_clk` (the lane's recovered clock): the RX half's status and events, and the RX
  *    rate adapter's write side (deleted, overflows);
  *  - `tx_clk` (the transceivers' TX user clock): the TX half's error blocks and the TX rate
  *    adapter's read side (inserted, underflows);
  *  - `mac_clk`: the TX adapter's write side (`mac_tx_rst`) and the RX adapter's read side
  *    (`mac_rx_rst`).
  * Events are counted in their own clock (each counter with that side's reset, as the
  * adapters' own) and every counter crosses by CounterSync (Gray code, `cdc_sync_pcs_*`);
  * the two status levels by GraySync's two flops. What the registers show is a few core
  * cycles old, and each counter is a value it really held.
  */
class PhyPortRegs(port: Int, base: Int, next: Int, addrBits: Int) extends Module {
  val bus = IO(Flipped(new RegBusPort(addrBits)))
  val rx_clk = IO(Input(Clock()))
  val rx_rst = IO(Input(Bool()))
  val tx_clk = IO(Input(Clock()))
  val tx_rst = IO(Input(Bool()))
  val mac_clk = IO(Input(Clock()))
  val mac_tx_rst = IO(Input(Bool()))
  val mac_rx_rst = IO(Input(Bool()))
  val status = IO(Input(new PcsStatus)) // BaseRPhy.status: rx_clk, but stat_tx_error_block in tx_clk
  val tx_adapter = IO(Input(new RateAdapterStats))
  val rx_adapter = IO(Input(new RateAdapterStats))

  // noPrefix: the registers keep the names given (cdc_sync_pcs_*), as the XDC expects.
  private def level(in: Bool, name: String): Bool = noPrefix { GraySync(in.asUInt, s"pcs_$name")(0) }
  private def count(c: UInt, clk: Clock, rst: Bool, name: String): UInt =
    noPrefix { CounterSync(c, clk, rst, s"pcs_$name") }
  private def events(e: Bool, clk: Clock, rst: Bool, name: String): UInt = {
    val n = noPrefix { withClockAndReset(clk, rst) { StatCounter(e) }.suggestName(s"pcs_${name}_count") }
    count(n, clk, rst, name)
  }

  private val v = Wire(new PcsCounters)
  v.block_lock := level(status.rx_block_lock, "block_lock")
  v.hi_ber := level(status.rx_hi_ber, "hi_ber")
  v.rx_bad_sync_headers := events(status.stat_rx_bad_sync_header, rx_clk, rx_rst, "rx_bad_sync_headers")
  v.rx_error_blocks := events(status.stat_rx_error_block, rx_clk, rx_rst, "rx_error_blocks")
  v.rx_slips := events(status.stat_rx_slip, rx_clk, rx_rst, "rx_slips")
  v.rx_lock_losses := events(status.stat_rx_lock_lost, rx_clk, rx_rst, "rx_lock_losses")
  v.rx_hi_ber_events := events(status.stat_rx_hi_ber, rx_clk, rx_rst, "rx_hi_ber_events")
  v.tx_error_blocks := events(status.stat_tx_error_block, tx_clk, tx_rst, "tx_error_blocks")
  v.tx_adapter.deleted := count(tx_adapter.deleted, mac_clk, mac_tx_rst, "tx_adapter_deleted")
  v.tx_adapter.overflows := count(tx_adapter.overflows, mac_clk, mac_tx_rst, "tx_adapter_overflows")
  v.tx_adapter.inserted := count(tx_adapter.inserted, tx_clk, tx_rst, "tx_adapter_inserted")
  v.tx_adapter.underflows := count(tx_adapter.underflows, tx_clk, tx_rst, "tx_adapter_underflows")
  v.rx_adapter.deleted := count(rx_adapter.deleted, rx_clk, rx_rst, "rx_adapter_deleted")
  v.rx_adapter.overflows := count(rx_adapter.overflows, rx_clk, rx_rst, "rx_adapter_overflows")
  v.rx_adapter.inserted := count(rx_adapter.inserted, mac_clk, mac_rx_rst, "rx_adapter_inserted")
  v.rx_adapter.underflows := count(rx_adapter.underflows, mac_clk, mac_rx_rst, "rx_adapter_underflows")

  private val regs = Module(new PcsRegs(base, next, addrBits, port))
  regs.bus <> bus
  regs.counters := v

  /** Wires a port's PHY to these registers: its status and counters, and the clocks and
    * resets given to it (`mac_clk` with `macTxRst`/`macRxRst`, ...). */
  def attach(phy: BaseRPhy, macClk: Clock, macTxRst: Bool, macRxRst: Bool, txClk: Clock, txRst: Bool,
             rxClk: Clock, rxRst: Bool): Unit = {
    mac_clk := macClk
    mac_tx_rst := macTxRst
    mac_rx_rst := macRxRst
    tx_clk := txClk
    tx_rst := txRst
    rx_clk := rxClk
    rx_rst := rxRst
    status := phy.status
    tx_adapter := phy.tx_adapter
    rx_adapter := phy.rx_adapter
  }
}
