package offnic.nic

import chisel3._
import offnic.{Elaboratable, Params}
import offnic.pcie.{BarRegAccess, PcieStreamIO, PcieUs}
import offnic.regs._

/** The NIC core as it stands: the UltraScale+ PCIe hard IP's user interface on one side
  * (clock and reset are the IP's user_clk/user_reset, 250 MHz), and behind BAR0 the
  * register chain. Each issue adds its part here (DMA on RQ/RC, queues, ports, offloads).
  */
class Nic(val c: DeviceRegsParams) extends Module {
  import PcieUs._
  val s_axis_cq = IO(Flipped(new PcieStreamIO(DataBits, CqUserBits)))
  val m_axis_cc = IO(new PcieStreamIO(DataBits, CcUserBits))

  private val bar = Module(new BarRegAccess(c.addrBits))
  bar.s_axis_cq <> s_axis_cq
  m_axis_cc <> bar.m_axis_cc

  private val types = Seq(RegMap.DeviceId, RegMap.Clock, RegMap.BarAccess)
  private val blocks = types.zip(RegBus.layout(types)).map { case (t, (base, next)) =>
    Module(new RegBlock(t, base, next, c.addrBits))
  }
  private val bridge = Module(new AxilRegBridge(c.addrBits))
  bridge.s_axil <> bar.m_axil
  RegBus.fanOut(bridge.reg, blocks.map(_.bus))

  DeviceRegs.driveDeviceId(blocks(0).hw, c)
  DeviceRegs.driveClock(blocks(1).hw, c)
  private val barStats = blocks(2).hw
  barStats.value("unsupported") := StatCounter(bar.stat_unsupported)
  barStats.value("read_errors") := StatCounter(bar.stat_read_error)
  barStats.value("write_errors") := StatCounter(bar.stat_write_error)
}

object Nic extends Elaboratable {
  def generate(p: Params): RawModule = new Nic(DeviceRegs.params(p))
}
