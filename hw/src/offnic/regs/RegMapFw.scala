package offnic.regs

import Access._

/** The control processor's block in the host's map (issue 18; firmware/include/fw_bus.h is
  * the firmware's side of the same registers). Kept in its own file so the rest of RegMap
  * stays as it is; RegMap.blocks lists it.
  */
object RegMapFw {
  val MboxWords = 16 // fw_bus.h FW_MBOX_WORDS
  val LogWords = 512 // fw_bus.h FW_LOG_RECORDS * FW_LOG_RECORD_WORDS

  val Fw = BlockType(
    "fw", 0x0ff10031L, 0x00010000L,
    "The control processor (PicoRV32) and its firmware: core reset and image load, version and state, the " +
      "mailbox (command and response buffers, a doorbell each way), the firmware's events and its log ring. " +
      "Loading an image: clear control.run (the core is held in reset), write each word with image_addr then " +
      "image_data, set control.run. The firmware's events and responses are counted in notify_count and " +
      "flagged in status; they do not yet go through the event queues (the host polls).",
    Seq(
      Reg("control", 0x0c, RW(1), "Core control.",
        Seq(Field("run", 0, 1, "The core runs; 0 holds it (and the firmware's registers, mailbox flags and " +
          "event queue) in reset. Images load only while it is 0."))),
      Reg("status", 0x10, RO, "What waits for the host.", Seq(
        Field("running", 0, 1, "The core is out of reset."),
        Field("trap", 1, 1, "The core trapped (illegal instruction, misaligned access); only a reset leaves it."),
        Field("cmd_pending", 2, 1, "A command was rung in and the firmware has not taken it yet."),
        Field("rsp_ready", 3, 1, "A response waits in rsp_*; mbox_ack takes it."),
        Field("event_ready", 4, 1, "An event waits in event_code/event_arg; event_pop takes it."))),
      Reg("imem_bytes", 0x14, RO, "Instruction memory size in bytes (the image window)."),
      Reg("dmem_bytes", 0x18, RO, "Data memory size in bytes."),
      Reg("fw_version", 0x1c, RO, "Firmware version as the firmware wrote it (major 31:16, minor 15:8, patch 7:0)."),
      Reg("state", 0x20, RO, "Firmware state (fw_proto.h FW_STATE_*; 0 while in reset or before it ran)."),
      Reg("heartbeat", 0x24, RO, "Incremented by the firmware every 100 us: it runs."),
      Reg("mbox_doorbell", 0x28, WStrobe, "Any write: the command in cmd_* is complete (sets status.cmd_pending)."),
      Reg("mbox_ack", 0x2c, WStrobe, "Any write: the response in rsp_* was taken (clears status.rsp_ready)."),
      Reg("notify_count", 0x30, RO, "Responses and events the firmware raised toward the host (wraps)."),
      Reg("event_code", 0x34, RO, "The oldest waiting event's code (fw_proto.h FW_EVT_*)."),
      Reg("event_arg", 0x38, RO, "The oldest waiting event's argument."),
      Reg("event_pop", 0x3c, WStrobe, "Any write: drop the oldest waiting event."),
      Reg("event_count", 0x40, RO, "Events waiting (the queue holds 8; the firmware waits while it is full)."),
      Reg("log_head", 0x44, RO, "Log records the firmware has written (record n is in slot n % 64)."),
      Reg("log_index", 0x48, RW(0), "Word of the log ring log_data shows (0..511; record n's words are 8n..8n+7).",
        Seq(Field("word", 0, 9, "Word index."))),
      Reg("log_data", 0x4c, RO, "The log ring's word at log_index (valid two cycles after log_index is written)."),
      Reg("image_addr", 0x50, RW(0), "Instruction-memory word image_data writes (byte address / 4).",
        Seq(Field("word", 0, 18, "Word index."))),
      Reg("image_data", 0x54, WStrobe, "Writes this word at image_addr (only while control.run is 0)."),
      Reg("image_refused", 0x58, RO, "Image words not written: the core was running or image_addr was beyond imem_bytes."),
      Reg("bus_errors", 0x5c, RO, "Firmware accesses nothing answered (unmapped, partial word to its registers)."),
      Reg("soft_limit", 0x60, RO, "Soft_limit in force (seed 004 load control), as the firmware set it."),
      Reg("lc_state", 0x64, RO, "Load control's state (fw_proto.h; MONITOR / DECREASE / INCREASE)."),
      Reg("hiwat", 0x68, RO, "Hiwat in force."),
      Reg("lowat", 0x6c, RO, "Lowat in force.")
    ) ++ (0 until MboxWords).map(k => Reg(s"cmd_$k", 0x80 + 4 * k, RW(0),
      s"Command word $k (word 0 the header: opcode 7:0, payload words 15:8, tag 31:16).")) ++
      (0 until MboxWords).map(k => Reg(s"rsp_$k", 0xc0 + 4 * k, RO,
        s"Response word $k (word 0 the header, word 1 the status)."))
  )
}
