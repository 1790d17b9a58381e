package offnic.regs

import chisel3._
import chisel3.util._

/** A second master's port on the register bus: it offers a request and holds it until
  * `ready`; the answer comes back one cycle after the request was taken.
  */
class RegBusClientPort(val addrBits: Int) extends Bundle {
  val req = Decoupled(new RegBusReq(addrBits))
  val resp = Flipped(Valid(new RegBusResp))
}

/** Two masters on one register bus: the host's (the BAR0 bridge, which cannot wait) always
  * first, the other (the control processor) in any cycle the host leaves free. The bridge
  * issues at most one request every three cycles, so the second master is never starved.
  * Answers keep the bus's fixed one-cycle latency; the host's bridge looks at the answer
  * only in the cycle after its own request, so it sees only its own.
  */
class RegBusArbiter(val addrBits: Int) extends Module {
  val host = IO(Flipped(new RegBusPort(addrBits)))
  val client = IO(Flipped(new RegBusClientPort(addrBits)))
  val out = IO(new RegBusPort(addrBits))

  private val clientTurn = client.req.valid && !host.req.valid
  out.req.valid := host.req.valid || client.req.valid
  out.req.bits := Mux(host.req.valid, host.req.bits, client.req.bits)
  client.req.ready := clientTurn
  host.resp := out.resp
  client.resp.valid := RegNext(clientTurn, false.B)
  client.resp.bits := out.resp
}
