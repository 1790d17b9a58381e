package offnic.cpu

import chisel3._

/** PicoRV32 (YosysHQ, ISC licence) as the NIC builds it: RV32IM, no compressed
  * instructions, no interrupts, traps on illegal instructions and misaligned accesses
  * (firmware/README.md says why this core). Its Verilog is not ours and is not copied into
  * the tree: it comes from the pinned PyPI package pythondata-cpu-picorv32 that
  * `./offnic setup` installs, found through OFFNIC_PICORV32 (the harness sets it) or in
  * the project's .venv, and is copied next to the generated RTL.
  *
  * The native memory interface: `mem_valid` with address, data and byte strobes (0 for a
  * read) stays up until `mem_ready`; `mem_rdata` is taken with `mem_ready`.
  */
class PicoRv32(stackAddr: BigInt) extends ExtModule(Map(
      "ENABLE_COUNTERS" -> 1, "ENABLE_COUNTERS64" -> 0, "ENABLE_MUL" -> 1, "ENABLE_DIV" -> 1,
      "COMPRESSED_ISA" -> 0, "BARREL_SHIFTER" -> 1, "CATCH_MISALIGN" -> 1, "CATCH_ILLINSN" -> 1,
      "ENABLE_IRQ" -> 0, "PROGADDR_RESET" -> 0, "STACKADDR" -> stackAddr.toLong
    )) {
  override def desiredName = "picorv32"
  val io = FlatIO(new Bundle {
    val clk = Input(Clock())
    val resetn = Input(Bool())
    val trap = Output(Bool())
    val mem_valid = Output(Bool())
    val mem_instr = Output(Bool())
    val mem_ready = Input(Bool())
    val mem_addr = Output(UInt(32.W))
    val mem_wdata = Output(UInt(32.W))
    val mem_wstrb = Output(UInt(4.W))
    val mem_rdata = Input(UInt(32.W))
    val pcpi_wr = Input(Bool())
    val pcpi_rd = Input(UInt(32.W))
    val pcpi_wait = Input(Bool())
    val pcpi_ready = Input(Bool())
    val irq = Input(UInt(32.W))
    // Unused, declared so every pin of the instance is connected (Verilator's PINMISSING).
    val mem_la_read = Output(Bool())
    val mem_la_write = Output(Bool())
    val mem_la_addr = Output(UInt(32.W))
    val mem_la_wdata = Output(UInt(32.W))
    val mem_la_wstrb = Output(UInt(4.W))
    val pcpi_valid = Output(Bool())
    val pcpi_insn = Output(UInt(32.W))
    val pcpi_rs1 = Output(UInt(32.W))
    val pcpi_rs2 = Output(UInt(32.W))
    val eoi = Output(UInt(32.W))
    val trace_valid = Output(Bool())
    val trace_data = Output(UInt(36.W))
  })
  addPath(PicoRv32.verilogPath)
}

object PicoRv32 {
  /** picorv32.v of the installed package. */
  def verilogPath: String = {
    val fromEnv = sys.env.get("OFFNIC_PICORV32").filter(p => os.exists(os.Path(p, os.pwd)))
    fromEnv.getOrElse {
      val venvLib = os.pwd / ".venv" / "lib"
      val found = if (os.exists(venvLib)) os.list(venvLib).map(_ / "site-packages" / "pythondata_cpu_picorv32" / "verilog" / "picorv32.v")
        .find(os.exists(_)) else None
      found.map(_.toString).getOrElse(throw new IllegalStateException(
        "picorv32.v not found: run ./offnic setup (PyPI pythondata-cpu-picorv32) or set OFFNIC_PICORV32"))
    }
  }
}
