package offnic.nic

import chisel3._
import offnic.pcie.{DmaArbiter, DmaEngine}
import offnic.regs.{RegBlock, StatCounter}

/** How the NIC shares its DMA engine between the host path and the TCP engine (issue 17):
  * a [[DmaArbiter]] in front of [[DmaEngine]], the engine's Axi4DmaBridge on its other
  * side (`DmaArbiter.attachBridge`), the mode and counters in the `dma` register block.
  * Called from Nic, kept apart so Nic.scala only names the pieces.
  */
object DmaShare {
  /** The bridge's staging RAM: 16 KiB (two 8 KiB areas: 16 read slots, 8 write slots of
    * 512 B, Axi4DmaBridge's sizing for one connection at 25 Gb/s with 1 us host latency). */
  val EngRamBits = 14
  /** Its window in the DMA engine's RAM space (NicParams: nothing else lives at bit 30). */
  val EngRamBase = BigInt(0x40000000L)
  /** The engine's read tags: the RX descriptor kind with bit 5 set (fetches use 4:0). */
  val EngTag = (NicParams.TagRxDesc << 6) | 0x20
  val EngTagMask = 0xe0

  /** The arbiter between the DMA engine and the NIC's clients, in the mode of the `dma`
    * block's `arbitration` register. */
  def connect(dma: DmaEngine, arb: DmaArbiter, dmaB: RegBlock): Unit =
    DmaArbiter.attach(dma, arb, dmaB.hw.value("arbitration")(0))

  /** A build without the TCP engine: its side asks for nothing. */
  def noEngine(arb: DmaArbiter): Unit = {
    arb.s_eng_rd_desc.valid := false.B
    arb.s_eng_rd_desc.bits := DontCare
    arb.s_eng_wr_desc.valid := false.B
    arb.s_eng_wr_desc.bits := DontCare
    arb.m_eng_rd_status.ready := true.B
    arb.m_eng_wr_status.ready := true.B
    arb.eng_ram_rd.data := 0.U
  }

  /** The engine's DMA counters (they wrap). */
  def count(arb: DmaArbiter, dmaB: RegBlock): Unit = {
    def bytes(ev: chisel3.util.Valid[UInt]): UInt = {
      val total = RegInit(0.U(32.W))
      when(ev.valid) { total := total + ev.bits }
      total
    }
    dmaB.hw.value("eng_rd_descs") := StatCounter(arb.stat_eng_rd.valid)
    dmaB.hw.value("eng_rd_bytes") := bytes(arb.stat_eng_rd)
    dmaB.hw.value("eng_wr_descs") := StatCounter(arb.stat_eng_wr.valid)
    dmaB.hw.value("eng_wr_bytes") := bytes(arb.stat_eng_wr)
    dmaB.hw.value("eng_over_host") := StatCounter(arb.stat_eng_over_host)
  }
}
