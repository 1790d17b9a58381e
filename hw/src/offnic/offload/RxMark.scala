package offnic.offload

import chisel3._

/** Per-frame marks the receive path carries inside the core in `tuser`, on every beat of
  * the frame (set by `nic.RxFilter`, read by the offloads).
  *
  * `Foreign`: the frame is not addressed to this station (it passed the address filter
  * only because the port is promiscuous). It reaches the host's queues as a plain frame;
  * no offload may act on it: the reassembler treats it as a non-fragment, and the TCP
  * engine's steering (`toe.TcpSteer`, when it joins the RX path) must send it to the host.
  */
object RxMark {
  val Foreign = 0
  val Width = 1

  /** The mark of a beat's `tuser` (false when the stream carries no tuser). */
  def foreign(tuser: Option[UInt]): Bool =
    tuser.map(u => if (u.getWidth > Foreign) u(Foreign) else false.B).getOrElse(false.B)
}
