package offnic.cpu

import chisel3._

/** What seed 004's load control (firmware/src/load_control.c) reads from the TCP engine;
  * the NIC ties it off until the engine is inside it (issue 17).
  */
class LoadControlIn extends Bundle {
  /** Load events so far (a NIC packet queued, a connection installed or removed); wraps. */
  val seq = UInt(32.W)
  /** Qlen: packets in the NIC-packet receive queue. */
  val qlen = UInt(32.W)
  /** That queue's capacity in packets. */
  val queueSize = UInt(32.W)
  /** Hard_limit: the connection table's size. */
  val hardLimit = UInt(32.W)
  /** Cnum: connections installed now (also the toe block's `connections`). */
  val cnum = UInt(32.W)
}
