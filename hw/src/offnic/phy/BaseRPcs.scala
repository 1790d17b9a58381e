package offnic.phy

import chisel3._
import chisel3.util._

/** Status levels and event pulses of the PCS, for counters (PcsRegs). */
class PcsStatus extends Bundle {
  val rx_block_lock = Bool()
  val rx_hi_ber = Bool()
  /** One cycle each. */
  val stat_rx_bad_sync_header = Bool() // in lock
  val stat_rx_error_block = Bool() // decoded as /E/ (in lock, no hi_ber)
  val stat_rx_slip = Bool()
  val stat_rx_lock_lost = Bool()
  val stat_rx_hi_ber = Bool() // hi_ber rose
  val stat_tx_error_block = Bool() // sent as /E/
}

/** A 10GBASE-R / 25GBASE-R PCS (IEEE 802.3 clause 49; clause 107 for 25G), between the
  * MAC's 64-bit XGMII and a GTY transceiver's raw 64-bit user data (its own gearbox and
  * 64b/66b logic unused), in the transceiver's user clock: line rate / 64, i.e.
  * 161.13 MHz at 10.3125 Gb/s and 402.83 MHz at 25.78125 Gb/s.
  *
  * 64 wire bits a cycle carry 32/33 of a block, so the XGMII side runs 32 cycles in 33:
  * TX takes `xgmii_txd/txc` when `xgmii_tx_ready` (the MAC must hold its word otherwise:
  * a clock enable), RX gives a word when `xgmii_rx_valid`.
  *
  * TX: encoder -> scrambler -> gearbox. RX: gearbox (bit slip) -> block lock and BER
  * monitor on the sync headers -> descrambler -> decoder. `berWindowCycles`: the BER
  * monitor's window in clock cycles (125 us: 20,142 at 10G, 50,354 at 25G).
  */
class BaseRPcs(val berWindowCycles: Int) extends Module {
  val xgmii_txd = IO(Input(UInt(64.W)))
  val xgmii_txc = IO(Input(UInt(8.W)))
  val xgmii_tx_ready = IO(Output(Bool()))
  val xgmii_rxd = IO(Output(UInt(64.W)))
  val xgmii_rxc = IO(Output(UInt(8.W)))
  val xgmii_rx_valid = IO(Output(Bool()))
  val serdes_tx_data = IO(Output(UInt(64.W)))
  val serdes_rx_data = IO(Input(UInt(64.W)))
  val status = IO(Output(new PcsStatus))

  // Transmit.
  private val enc = Module(new BaseREncoder)
  private val scr = Module(new BaseRScrambler)
  private val txGbx = Module(new TxGearbox)
  private val take = txGbx.ready
  enc.en := take
  enc.in.d := xgmii_txd
  enc.in.c := xgmii_txc
  scr.en := take
  scr.in := enc.out
  txGbx.in := scr.out
  xgmii_tx_ready := take
  serdes_tx_data := txGbx.out

  // Receive.
  private val rxGbx = Module(new RxGearbox)
  private val lock = Module(new BlockLock)
  private val ber = Module(new BerMonitor(berWindowCycles))
  private val dscr = Module(new BaseRDescrambler)
  private val dec = Module(new BaseRDecoder)
  rxGbx.in := serdes_rx_data
  rxGbx.slip := lock.slip
  lock.valid := rxGbx.valid
  lock.header := rxGbx.out.header
  ber.valid := rxGbx.valid
  ber.header := rxGbx.out.header
  ber.block_lock := lock.block_lock
  dscr.en := rxGbx.valid
  dscr.in := rxGbx.out
  private val decEn = RegNext(rxGbx.valid, false.B)
  dec.en := decEn
  dec.in := dscr.out
  dec.link_ok := lock.block_lock && !ber.hi_ber
  xgmii_rxd := dec.out.d
  xgmii_rxc := dec.out.c
  xgmii_rx_valid := RegNext(decEn, false.B)

  status.rx_block_lock := lock.block_lock
  status.rx_hi_ber := ber.hi_ber
  status.stat_rx_bad_sync_header := lock.stat_bad_header
  status.stat_rx_error_block := dec.stat_rx_error_block
  status.stat_rx_slip := lock.slip
  status.stat_rx_lock_lost := lock.stat_lock_lost
  status.stat_rx_hi_ber := ber.stat_hi_ber
  status.stat_tx_error_block := enc.stat_tx_error_block
}

object BaseRPcs extends offnic.Elaboratable {
  /** `ber_window_cycles` (20142: 125 us at 161.13 MHz, 10GBASE-R). */
  def generate(p: offnic.Params): RawModule = new BaseRPcs(p.int("ber_window_cycles", 20142))
}
