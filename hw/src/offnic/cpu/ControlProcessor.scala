package offnic.cpu

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.regs.{RegBlockHw, RegBusClientPort, RegBusReq, RegMapFw}

/** Sizes of the control processor.
  * @param imemBytes   instruction memory (block RAM), a power of two
  * @param dmemBytes   data memory (block RAM), a power of two
  * @param usCycles    core cycles per microsecond (FW_REG_TIME_US)
  * @param nicAddrBits byte-address width of the NIC's register map (BAR0)
  */
case class CpuParams(imemBytes: Int = 16384, dmemBytes: Int = 8192, usCycles: Int = 250, nicAddrBits: Int = 24) {
  require(isPow2(imemBytes) && imemBytes >= 1024 && imemBytes <= FwBusMap.MemMaxBytes, "imemBytes: a power of two, 1 KiB..1 MiB")
  require(isPow2(dmemBytes) && dmemBytes >= 1024 && dmemBytes <= FwBusMap.MemMaxBytes, "dmemBytes: a power of two, 1 KiB..1 MiB")
  require(nicAddrBits <= 24, "the firmware's NIC window is 16 MiB (fw_bus.h FW_NIC_WINDOW)")
}

/** The NIC's control processor (issue 18): PicoRV32 with its instruction memory (holding
  * the default firmware image from reset; the host may load another through BAR0), its
  * data memory, a microsecond timer, and a bus decoded as firmware/include/fw_bus.h says:
  *
  *   0x0000_0000 instruction memory   0x0010_0000 data memory   (one-cycle block RAM reads)
  *   0x4000_0000 the NIC's register map, as the host sees BAR0: `nic`, a second master on
  *               the register bus (RegBusArbiter serves the host first)
  *   0x8000_0000 the firmware's own registers, mailbox and log ring (FwRegs)
  *
  * Every access is answered, unmapped ones with zeros and a count in bus_errors: the core
  * never waits for ever. `host` is the `fw` register block's hardware side: run/reset,
  * image load, mailbox, events, log ring, version and state. The core, its timer and its
  * registers are held in reset while control.run is 0; the memories keep their contents.
  */
class ControlProcessor(val p: CpuParams, image: Seq[Long]) extends Module {
  import FwBusMap._
  val host = IO(Flipped(new RegBlockHw(RegMapFw.Fw)))
  val nic = IO(new RegBusClientPort(p.nicAddrBits))
  val lc = IO(Input(new LoadControlIn))
  /** Soft_limit in force for the TCP engine: the firmware's, Hard_limit until it set one. */
  val soft_limit = IO(Output(UInt(32.W)))

  private val imemWords = p.imemBytes / 4
  private val dmemWords = p.dmemBytes / 4
  private val run = host.value("control")(0)
  private val coreReset = RegNext(reset.asBool || !run, true.B)

  // ---- Image load (NIC reset domain): only while the core is held.
  private val imem = Module(new FwImem(imemWords, image))
  imem.io.clk := clock
  private val imageAddr = host.value("image_addr")
  private val imageWrite = host.strobe("image_data")
  private val imageOk = !run && coreReset && imageAddr < imemWords.U
  imem.io.wr_en := imageWrite.valid && imageOk
  imem.io.wr_addr := imageAddr(log2Ceil(imemWords) - 1, 0)
  imem.io.wr_data := imageWrite.bits
  host.value("image_refused") := RegEnable(host.value("image_refused") + 1.U, 0.U(32.W), imageWrite.valid && !imageOk)

  private val dmem = SyncReadMem(dmemWords, Vec(4, UInt(8.W)))
  private val fwRegs = withReset(coreReset)(Module(new FwRegs))

  withReset(coreReset) {
    val cpu = Module(new PicoRv32(DmemBase + p.dmemBytes))
    cpu.io.clk := clock
    cpu.io.resetn := !coreReset
    cpu.io.pcpi_wr := false.B
    cpu.io.pcpi_rd := 0.U
    cpu.io.pcpi_wait := false.B
    cpu.io.pcpi_ready := false.B
    cpu.io.irq := 0.U

    // One access at a time: `busy` from the cycle it starts until the cycle it is answered
    // (mem_valid stays up in that cycle, so it must not start again).
    val addr = cpu.io.mem_addr
    val write = cpu.io.mem_wstrb.orR
    val busy = RegInit(false.B)
    val start = cpu.io.mem_valid && !busy
    val inImem = addr < p.imemBytes.U
    val inDmem = addr >= DmemBase.U && addr < (DmemBase + p.dmemBytes).U
    val inNic = addr >= NicBase.U && addr < (NicBase + (BigInt(1) << p.nicAddrBits)).U
    val inFw = addr >= BusBase.U && addr < (BusBase + BusWindow).U

    imem.io.rd_en := start && inImem && !write
    imem.io.rd_addr := addr(log2Ceil(p.imemBytes) - 1, 2)

    val dmemIndex = addr(log2Ceil(p.dmemBytes) - 1, 2)
    val bytes = VecInit((0 until 4).map(i => cpu.io.mem_wdata(8 * i + 7, 8 * i)))
    when(start && inDmem && write) { dmem.write(dmemIndex, bytes, cpu.io.mem_wstrb.asBools) }
    // Read on writes too (the answer is ignored): with an enable exclusive of the write's,
    // firtool merges both into one read-write port, which Yosys then maps to LUT RAM and
    // fails on; a read port and a write port are the simple dual-port block RAM wanted.
    val dmemData = dmem.read(dmemIndex, start && inDmem).asUInt

    fwRegs.req.valid := start && inFw
    fwRegs.req.bits.word := addr(11, 2)
    fwRegs.req.bits.write := write
    fwRegs.req.bits.wdata := cpu.io.mem_wdata
    fwRegs.req.bits.wstrb := cpu.io.mem_wstrb

    // The NIC's map: the request waits in registers for its turn on the register bus.
    val nicPending = RegInit(false.B)
    val nicReq = Reg(new RegBusReq(p.nicAddrBits))
    when(start && inNic) {
      nicPending := true.B
      nicReq.addr := addr(p.nicAddrBits - 1, 2)
      nicReq.write := write
      nicReq.wdata := cpu.io.mem_wdata
      nicReq.wstrb := cpu.io.mem_wstrb
    }
    when(nic.req.fire) { nicPending := false.B }
    nic.req.valid := nicPending
    nic.req.bits := nicReq

    // Answers: memories and the firmware's registers one cycle after the start, the NIC's
    // map one cycle after the register bus took it; anything else at once with zeros.
    val local = RegNext(start && !inNic, false.B)
    val fromImem = RegNext(start && inImem && !write, false.B)
    val fromDmem = RegNext(start && inDmem && !write, false.B) // a write's read data is dropped here
    val unmapped = RegNext(start && !(inImem || inDmem || inNic || inFw), false.B)
    val imemWrite = RegNext(start && inImem && write, false.B)
    val ready = local || nic.resp.valid
    when(start) { busy := true.B }
    when(ready) { busy := false.B }
    cpu.io.mem_ready := ready
    cpu.io.mem_rdata := Mux(fromImem, imem.io.rd_data, 0.U) | Mux(fromDmem, dmemData, 0.U) | fwRegs.rdata |
      Mux(nic.resp.valid, nic.resp.bits.rdata, 0.U)

    val busErrors = RegInit(0.U(32.W))
    val errNow = unmapped || imemWrite || fwRegs.bad || (nic.resp.valid && !nic.resp.bits.hit)
    busErrors := busErrors + errNow.asUInt
    fwRegs.busErrors := busErrors
    host.value("bus_errors") := busErrors

    // The microsecond timer since the core left reset.
    val tick = RegInit(0.U(log2Ceil(p.usCycles).W))
    val us = RegInit(0.U(32.W))
    tick := Mux(tick === (p.usCycles - 1).U, 0.U, tick + 1.U)
    when(tick === (p.usCycles - 1).U) { us := us + 1.U }
    fwRegs.timeUs := us

    val trapped = cpu.io.trap
    host.value("status") := Cat(fwRegs.host.event.valid, fwRegs.host.rspReady, fwRegs.host.cmdPending, trapped,
      !coreReset)
  }

  // ---- The host's side of the firmware's registers
  private val h = fwRegs.host
  fwRegs.lc := lc
  for (k <- 0 until MboxWords) {
    h.cmd(k) := host.value(s"cmd_$k")
    host.value(s"rsp_$k") := h.rsp(k)
  }
  h.doorbell := host.strobe("mbox_doorbell").valid
  h.ack := host.strobe("mbox_ack").valid
  h.eventPop := host.strobe("event_pop").valid
  // What the host writes to these strobes does not matter, only that it wrote.
  private val unused_strobe_bits = WireDefault(Cat(host.strobe("mbox_doorbell").bits,
    host.strobe("mbox_ack").bits, host.strobe("event_pop").bits))
  dontTouch(unused_strobe_bits)
  h.logIndex := host.value("log_index")(8, 0)
  host.value("imem_bytes") := p.imemBytes.U
  host.value("dmem_bytes") := p.dmemBytes.U
  host.value("fw_version") := h.version
  host.value("state") := h.state
  host.value("heartbeat") := h.heartbeat
  host.value("notify_count") := h.notifyCount
  host.value("event_code") := Mux(h.event.valid, h.event.bits.code, 0.U)
  host.value("event_arg") := Mux(h.event.valid, h.event.bits.arg, 0.U)
  host.value("event_count") := h.eventCount
  host.value("log_head") := h.logHead
  host.value("log_data") := h.logData
  host.value("soft_limit") := h.softLimit
  host.value("lc_state") := h.lcState
  host.value("hiwat") := h.hiwat
  host.value("lowat") := h.lowat
  // Soft_limit is never 0 once the firmware set it (load_control.c keeps it in 1..Hard_limit).
  soft_limit := Mux(h.softLimit === 0.U, lc.hardLimit, h.softLimit)
}

/** The processor alone, with the default image, for its size (hw/configs/cpu.toml). */
object ControlProcessor extends Elaboratable {
  def params(p: Params): CpuParams = CpuParams(
    imemBytes = p.int("cpu_imem_kib", 16) << 10,
    dmemBytes = p.int("cpu_dmem_kib", 8) << 10,
    usCycles = p.int("us_cycles", 250),
    nicAddrBits = p.int("addr_bits", 24))

  /** The default firmware image (DefaultFirmware, from `./offnic firmware`), which was
    * linked for one memory size: a processor of another size must be given its own. */
  def defaultImage(c: CpuParams): Seq[Long] = {
    require(c.imemBytes == DefaultFirmware.imemBytes && c.dmemBytes == DefaultFirmware.dmemBytes,
      s"the default firmware is linked for ${DefaultFirmware.imemBytes >> 10} KiB IMEM and " +
        s"${DefaultFirmware.dmemBytes >> 10} KiB DMEM; run ./offnic firmware --imem-kib/--dmem-kib to match")
    DefaultFirmware.words
  }

  def generate(p: Params): RawModule = {
    val c = params(p)
    new ControlProcessor(c, defaultImage(c))
  }
}
