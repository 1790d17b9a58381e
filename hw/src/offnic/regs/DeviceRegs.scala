package offnic.regs

import chisel3._
import offnic.{Elaboratable, Params}

case class DeviceRegsParams(
    addrBits: Int = 24,
    fpgaId: Long = 0,
    boardId: Int = 0,
    boardVersion: Int = 0,
    buildDate: Long = 0,
    gitHash: Long = 0,
    coreFreqKhz: Int = 250000
)

/** The device-level register space every offnic build starts with: AXI-Lite in, the
  * register chain's first blocks (device_id at offset 0, then clock). A NIC top builds
  * its longer chain the same way: RegBus.layout for the places, RegBus.fanOut to connect.
  */
class DeviceRegs(val c: DeviceRegsParams) extends Module {
  val s_axil = IO(Flipped(new AxiLiteIO(c.addrBits)))

  private val types = Seq(RegMap.DeviceId, RegMap.Clock)
  private val places = RegBus.layout(types)
  private val blocks = types.zip(places).map { case (t, (base, next)) =>
    Module(new RegBlock(t, base, next, c.addrBits))
  }
  private val bridge = Module(new AxilRegBridge(c.addrBits))
  bridge.s_axil <> s_axil
  RegBus.fanOut(bridge.reg, blocks.map(_.bus))

  DeviceRegs.driveDeviceId(blocks(0).hw, c)
  DeviceRegs.driveClock(blocks(1).hw, c)
}

object DeviceRegs extends Elaboratable {
  /** The device_id block's values: constants of this build. */
  def driveDeviceId(id: RegBlockHw, c: DeviceRegsParams): Unit = {
    id.value("fpga_id") := c.fpgaId.U
    id.value("board_id") := c.boardId.U
    id.value("board_version") := c.boardVersion.U
    id.value("build_date") := c.buildDate.U
    id.value("git_hash") := c.gitHash.U
  }

  /** The clock block: nominal frequency and a cycle counter the control register clears. */
  def driveClock(clk: RegBlockHw, c: DeviceRegsParams): Unit = {
    val cycles = RegInit(0.U(32.W))
    val control = clk.strobe("control")
    cycles := Mux(control.valid && control.bits(0), 0.U, cycles + 1.U)
    clk.value("core_freq_khz") := c.coreFreqKhz.U
    clk.value("cycle_count") := cycles
  }

  def params(p: Params): DeviceRegsParams = DeviceRegsParams(
    addrBits = p.int("addr_bits", 24),
    fpgaId = p.long("fpga_id", 0),
    boardId = p.int("board_id", 0),
    boardVersion = p.int("board_version", 0),
    buildDate = p.long("build_date", 0),
    gitHash = p.long("git_hash", 0),
    coreFreqKhz = p.int("core_freq_khz", 250000)
  )

  def generate(p: Params): RawModule = new DeviceRegs(params(p))
}
