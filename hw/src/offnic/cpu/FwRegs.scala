package offnic.cpu

import chisel3._
import chisel3.util._

/** One firmware access to its own register window (fw_bus.h FW_BUS_BASE + offset). */
class FwRegReq extends Bundle {
  val word = UInt(10.W) // byte offset / 4 inside the 4 KiB window
  val write = Bool()
  val wdata = UInt(32.W)
  val wstrb = UInt(4.W)
}

/** The host-facing side of the firmware's registers (the `fw` block in RegMap, wired in
  * ControlProcessor).
  */
class FwHostSide extends Bundle {
  val cmd = Input(Vec(FwBusMap.MboxWords, UInt(32.W)))
  val doorbell = Input(Bool())
  val ack = Input(Bool())
  val eventPop = Input(Bool())
  val logIndex = Input(UInt(9.W))

  val rsp = Output(Vec(FwBusMap.MboxWords, UInt(32.W)))
  val cmdPending = Output(Bool())
  val rspReady = Output(Bool())
  val notifyCount = Output(UInt(32.W))
  val event = Output(Valid(new Bundle { val code = UInt(32.W); val arg = UInt(32.W) }))
  val eventCount = Output(UInt(32.W))
  val logData = Output(UInt(32.W))
  val logHead = Output(UInt(32.W))
  val version = Output(UInt(32.W))
  val state = Output(UInt(32.W))
  val heartbeat = Output(UInt(32.W))
  val softLimit = Output(UInt(32.W))
  val lcState = Output(UInt(32.W))
  val hiwat = Output(UInt(32.W))
  val lowat = Output(UInt(32.W))
}

/** The firmware's own registers (firmware/include/fw_bus.h): identity, state, time, the
  * mailbox flags and buffers, the event queue toward the host, load control's inputs and
  * outputs, and the log ring (block RAM: written by the firmware, read by the host through
  * log_index/log_data; the firmware reads it as zeros, it never needs to).
  *
  * Reads answer in the cycle after the request. A partial-word write is ignored and
  * reported in `bad` (fw_bus.h: every register is accessed as a whole word); so is a write
  * to a read-only register and any access to an offset with nothing behind it.
  */
class FwRegs extends Module {
  import FwBusMap._
  val req = IO(Input(Valid(new FwRegReq)))
  val rdata = IO(Output(UInt(32.W)))
  val bad = IO(Output(Bool())) // with rdata: the access was not served
  val host = IO(new FwHostSide)
  val lc = IO(Input(new LoadControlIn))
  val timeUs = IO(Input(UInt(32.W)))
  val busErrors = IO(Input(UInt(32.W)))

  private val w = req.bits
  private val wholeWrite = req.valid && w.write && w.wstrb === 0xf.U
  private val partial = req.valid && w.write && w.wstrb =/= 0xf.U
  private def at(off: Int): Bool = w.word === (off / 4).U

  // Registers the firmware writes and reads back (and the host sees).
  private def rw(off: Int): UInt = {
    val r = RegInit(0.U(32.W))
    when(wholeWrite && at(off)) { r := w.wdata }
    r
  }
  private val version = rw(RegVersion)
  private val state = rw(RegState)
  private val heartbeat = rw(RegHeartbeat)
  private val evtCode = rw(RegEvtCode)
  private val evtArg = rw(RegEvtArg)
  private val softLimit = rw(RegLcSoftLimit)
  private val lcState = rw(RegLcState)
  private val lcAck = rw(RegLcAck)
  private val hiwat = rw(RegLcHiwat)
  private val lowat = rw(RegLcLowat)
  private val logHead = rw(RegLogHead)
  private val rsp = Seq.tabulate(MboxWords)(k => rw(RspBuf + 4 * k))

  // Mailbox: the host's doorbell sets H2F, the firmware's ack clears it; the firmware's
  // doorbell sets F2H, the host's ack clears it. A set and a clear in one cycle: the set
  // wins for the side that rang last (the clear belongs to the previous exchange).
  private val h2f = RegInit(false.B)
  private val f2h = RegInit(false.B)
  private val fwAck = wholeWrite && at(RegMboxH2fAck)
  private val fwDoorbell = wholeWrite && at(RegMboxF2hDoorbell)
  when(fwAck) { h2f := false.B }
  when(host.doorbell) { h2f := true.B }
  when(host.ack) { f2h := false.B }
  when(fwDoorbell) { f2h := true.B }

  // Events toward the host: the firmware pushes only when not full (it reads EVT_STATUS);
  // a push into a full queue is dropped and counted as a bus error, never blocks.
  private val events = Module(new Queue(new Bundle { val code = UInt(32.W); val arg = UInt(32.W) }, EventQueueDepth))
  private val push = wholeWrite && at(RegEvtPush)
  events.io.enq.valid := push
  events.io.enq.bits.code := evtCode
  events.io.enq.bits.arg := evtArg
  events.io.deq.ready := host.eventPop
  private val pushLost = push && !events.io.enq.ready

  private val notified = RegInit(0.U(32.W))
  notified := notified + (fwDoorbell || (push && events.io.enq.ready)).asUInt

  // The log ring: 512 words of block RAM.
  private val log = SyncReadMem(LogWords, UInt(32.W))
  private val inLog = w.word >= (LogRing / 4).U
  when(wholeWrite && inLog) { log.write(w.word(8, 0), w.wdata) }
  host.logData := log.read(host.logIndex)

  // Reads.
  private val inCmd = w.word >= (CmdBuf / 4).U && w.word < ((CmdBuf / 4) + MboxWords).U
  private val inRsp = w.word >= (RspBuf / 4).U && w.word < ((RspBuf / 4) + MboxWords).U
  private val readable: Seq[(Int, UInt)] = Seq(
    RegMagic -> Magic.U(32.W), RegVersion -> version, RegState -> state, RegHeartbeat -> heartbeat,
    RegTimeUs -> timeUs, RegBusErrors -> busErrors, RegMboxStatus -> Cat(f2h, h2f),
    RegEvtStatus -> (!events.io.enq.ready).asUInt, RegEvtCode -> evtCode, RegEvtArg -> evtArg,
    RegLcSeq -> lc.seq, RegLcQlen -> lc.qlen, RegLcQueueSize -> lc.queueSize, RegLcHardLimit -> lc.hardLimit,
    RegLcSoftLimit -> softLimit, RegLcState -> lcState, RegLcAck -> lcAck, RegLcHiwat -> hiwat,
    RegLcLowat -> lowat, RegLcCnum -> lc.cnum, RegLogHead -> logHead)
  private val writable = Seq(RegVersion, RegState, RegHeartbeat, RegMboxH2fAck, RegMboxF2hDoorbell, RegEvtCode,
    RegEvtArg, RegEvtPush, RegLcSoftLimit, RegLcState, RegLcAck, RegLcHiwat, RegLcLowat, RegLogHead)
  private val cmdWord = host.cmd(w.word(3, 0))
  private val rspWord = VecInit(rsp)(w.word(3, 0))
  private val regWord = readable.map { case (o, v) => Mux(at(o), v, 0.U) }.reduce(_ | _)
  private val readData = Mux(inCmd, cmdWord, Mux(inRsp, rspWord, regWord))
  private val known = readable.map(o => at(o._1)).reduce(_ || _) || inCmd || inRsp || inLog
  private val writeOk = writable.map(at).reduce(_ || _) || inRsp || inLog
  rdata := RegNext(Mux(req.valid && !w.write, readData, 0.U), 0.U)
  bad := RegNext(req.valid && (Mux(w.write, partial || !writeOk, !known) || pushLost), false.B)

  host.rsp := VecInit(rsp)
  host.cmdPending := h2f
  host.rspReady := f2h
  host.notifyCount := notified
  host.event.valid := events.io.deq.valid
  host.event.bits := events.io.deq.bits
  host.eventCount := events.io.count
  host.logHead := logHead
  host.version := version
  host.state := state
  host.heartbeat := heartbeat
  host.softLimit := softLimit
  host.lcState := lcState
  host.hiwat := hiwat
  host.lowat := lowat
}
