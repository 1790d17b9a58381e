package offnic.cpu

/** The firmware's address space and its own registers: firmware/include/fw_bus.h, which
  * is the specification (tests/cpu check the two agree through the generated defines).
  */
object FwBusMap {
  val ImemBase = 0x00000000L
  val DmemBase = 0x00100000L
  val MemMaxBytes = 0x00100000L
  val NicBase = 0x40000000L
  val BusBase = 0x80000000L
  val BusWindow = 0x1000
  val Magic = 0x4f46574bL // "OFWK"

  // Byte offsets inside the firmware's register window (FW_REG_*).
  val RegMagic = 0x000
  val RegVersion = 0x004
  val RegState = 0x008
  val RegHeartbeat = 0x00c
  val RegTimeUs = 0x010
  val RegBusErrors = 0x014
  val RegMboxStatus = 0x020
  val RegMboxH2fAck = 0x024
  val RegMboxF2hDoorbell = 0x028
  val RegEvtStatus = 0x030
  val RegEvtCode = 0x034
  val RegEvtArg = 0x038
  val RegEvtPush = 0x03c
  val RegLcSeq = 0x040
  val RegLcQlen = 0x044
  val RegLcQueueSize = 0x048
  val RegLcHardLimit = 0x04c
  val RegLcSoftLimit = 0x050
  val RegLcState = 0x054
  val RegLcAck = 0x058
  val RegLcHiwat = 0x05c
  val RegLcLowat = 0x060
  val RegLcCnum = 0x064
  val RegLogHead = 0x080
  val CmdBuf = 0x100
  val RspBuf = 0x140
  val MboxWords = 16
  val LogRing = 0x800
  val LogWords = 512
  val EventQueueDepth = 8
}
