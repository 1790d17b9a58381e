package offnic.cpu

import chisel3._
import offnic.regs.{RegBlock, RegBusClientPort, RegMap}

/** Puts the control processor into the NIC (or leaves the register bus's second master
  * idle). Load control's inputs come from the TCP engine, which is not inside the NIC yet
  * (issue 17): until then they are tied off (no load events, Qlen 0, a queue and table of
  * size 0), and the firmware, finding no `toe` block in the chain, runs with load control
  * idle (FW_STATE_NO_TOE). Returns the processor, whose `lc` and `soft_limit` the engine
  * will take over.
  */
object NicCpu {
  def attach(cpu: Option[CpuParams], block: Option[RegBlock], client: RegBusClientPort,
             lc: Option[LoadControlIn] = None, softLimit: Option[UInt] = None): Option[ControlProcessor] =
    cpu match {
      case Some(c) =>
        val b = block.getOrElse(throw new IllegalArgumentException("the NIC with a processor needs the fw block"))
        require(b.t == RegMap.Fw && b.addrBits == c.nicAddrBits)
        val m = Module(new ControlProcessor(c, ControlProcessor.defaultImage(c)))
        m.host <> b.hw
        client <> m.nic
        m.lc := lc.getOrElse(0.U.asTypeOf(new LoadControlIn)) // (the TCP engine's, when the NIC has one)
        softLimit.foreach(_ := m.soft_limit)
        Some(m)
      case None =>
        client.req.valid := false.B
        client.req.bits := DontCare
        None
    }
}
