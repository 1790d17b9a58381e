package offnic.regs

import Access._

/** The register map: the single source of truth for every register block type.
  * The RTL register blocks are generated from these tables (RegBlock), and
  * `./offnic regmap` turns them into the Python driver-model module, the C header for
  * the driver and firmware, and docs/registers.md. Offsets are ABI: never move a
  * register without bumping the block's version.
  */
object RegMap {
  val DeviceId = BlockType(
    "device_id", 0x0ff10001L, 0x00010000L,
    "Identifies the NIC build; always the first block, at BAR0 offset 0.",
    Seq(
      Reg("fpga_id", 0x0c, RO, "JTAG IDCODE of the target FPGA part (0 in simulation)."),
      Reg("board_id", 0x10, RO, "Board identifier: 0 simulation, 1 Nexus K3P-Q, 2 AS02MC04."),
      Reg("board_version", 0x14, RO, "Board revision."),
      Reg("build_date", 0x18, RO, "Build time, seconds since the Unix epoch."),
      Reg("git_hash", 0x1c, RO, "First 32 bits of the source commit hash."),
      Reg("scratch", 0x20, RW(0), "Free for software; used to test the register path.")
    )
  )

  val Clock = BlockType(
    "clock", 0x0ff10002L, 0x00010000L,
    "The core clock: its nominal frequency and a free-running cycle counter.",
    Seq(
      Reg("core_freq_khz", 0x0c, RO, "Nominal core clock frequency in kHz."),
      Reg("cycle_count", 0x10, RO, "Core clock cycles since reset or the last clear (wraps)."),
      Reg("control", 0x14, WStrobe, "Commands; write 1 bits to act.",
        Seq(Field("clear_cycles", 0, 1, "Restart cycle_count from 0.")))
    )
  )

  val BarAccess = BlockType(
    "bar_access", 0x0ff10003L, 0x00010000L,
    "BAR0 request handling: what the host sent that the NIC could not serve (counters wrap).",
    Seq(
      Reg("unsupported", 0x0c, RO, "Requests answered Unsupported Request or Completer Abort, or " +
        "dropped: I/O, atomics, messages, other BARs, reads over 64 bytes, malformed TLPs."),
      Reg("read_errors", 0x10, RO, "Register words read at addresses no block claims (answered all ones)."),
      Reg("write_errors", 0x14, RO, "Register words written at addresses no block claims (ignored).")
    )
  )

  /** Every block type, in the order the documentation lists them. */
  val blocks: Seq[BlockType] = Seq(DeviceId, Clock, BarAccess)
  require(blocks.map(_.typeId).distinct.size == blocks.size, "two block types share a type id")
}
