package offnic.board

import chisel3._
import chisel3.util._

/** One port's LEDs, active high (a board with active-low LEDs inverts them at the pin):
  * `link` lit while the PCS has block lock and no high BER (a level from the RX clock,
  * synchronised here), `activity` lit for 2^stretchBits cycles after any word with data on
  * the XGMII either way while the link is up (about 21 ms at 390.625 MHz with 23 bits) so single frames show.
  * In the MAC clock.
  */
class StatusLeds(stretchBits: Int = 23) extends Module {
  val link_in = IO(Input(Bool()))
  val tx_c = IO(Input(UInt(8.W)))
  val rx_c = IO(Input(UInt(8.W)))
  val led_link = IO(Output(Bool()))
  val led_activity = IO(Output(Bool()))

  private val link = LevelSync(link_in, "led_link")
  // A word that is not all control carries frame bytes (or an ordered set's data lanes:
  // without link the PCS sends local-fault ordered sets, so activity counts only with link).
  private val busy = RegNext(link && (tx_c =/= 0xff.U || rx_c =/= 0xff.U), false.B)
  private val left = RegInit(0.U(stretchBits.W))
  when(busy) { left := ((BigInt(1) << stretchBits) - 1).U }.elsewhen(left =/= 0.U) { left := left - 1.U }
  led_link := RegNext(link, false.B)
  led_activity := RegNext(left =/= 0.U, false.B)
}
