package offnic.nic

import chisel3._
import chisel3.util._
import offnic.axi.{Axi4, Axi4IO}
import offnic.toe.{ConnState, EngineCmd, EngineOp, EngineRsp, EngineStatus, Tcb}

/** TCP engine commands from the TX queues (issue 17; docs/queues.md "TCP connection
  * operations", docs/toe.md): TxEngine hands over each descriptor with an opcode 0x20-0x2f
  * (one at a time per queue); this unit checks it, reads its command block from host
  * memory when the operation has one (install, reserve, complete: the addresses and the
  * Tcb, 192 bytes by DMA through the engine's AXI4 bridge, AXI id [[ToeCmdUnit.BlockId]]),
  * gives the command to the engine, writes the engine's answer into the block when there is
  * one (install, reserve, complete: the command block; restore, status: the block at the
  * descriptor's address, if not 0), and then turns the answer into the descriptor's TX
  * completion: `len` the connection id, `status` 0 or 0x20 + the engine's status (DMA_ERROR
  * when the block's read or the answer's write failed, BAD_DESC for an opcode past 0x27 or
  * a bad block address), `rss_hash` our TSval, `rss_type` the connection's TCP state after
  * the command. The answer block has the command block's layout (so a restored connection's
  * block can install it again) with word 7 the engine's clock (microseconds, low 32 bits);
  * it is written only for an OK answer, and its write is acknowledged before the completion
  * is written, so a completion the host sees has its answer in memory.
  *
  * Checks before the engine: an id past the connection count answers NOT_LIVE; an install
  * or reserve while the connection count is at Soft_limit answers OVER_LIMIT (as the
  * register window does). One command at a time: the next waits in TxEngine.
  */
class ToeCmdUnit(p: NicParams, connections: Int, addrBits: Int = 40, axiIdBits: Int = 4) extends Module {
  import ToeCmdUnit._
  private val idBits = log2Ceil(connections)
  val s_cmd = IO(Flipped(Decoupled(new ToeQueueCmd(p.queueBits))))
  val m_cmd = IO(Decoupled(new EngineCmd(idBits)))
  val s_rsp = IO(Flipped(Decoupled(new EngineRsp(idBits))))
  val m_cpl = IO(Decoupled(new CplReq(p.queueBits)))
  /** Command-block reads and answer-block writes, one burst at a time, AXI id [[BlockId]]. */
  val m_axi = IO(new Axi4IO(addrBits, axiIdBits))
  val cnum = IO(Input(UInt((idBits + 1).W)))
  val soft_limit = IO(Input(UInt(32.W)))
  /** Pulses: a command taken; refused as a bad descriptor (unknown opcode, bad block
    * address); its block's read or its answer's write failed; refused at Soft_limit;
    * answered not OK by the engine. */
  val stat = IO(Output(new Bundle {
    val taken = Bool()
    val badDesc = Bool()
    val blockError = Bool()
    val overLimit = Bool()
    val refused = Bool()
  }))

  private object S extends ChiselEnum {
    val Idle, ReadAddr, ReadData, Issue, Wait, WriteAddr, WriteData, WriteResp, Cpl = Value
  }
  private val st = RegInit(S.Idle)
  private val c = Reg(new ToeQueueCmd(p.queueBits))
  private val beats = Reg(Vec(BlockBeats, UInt(256.W)))
  private val k = Reg(UInt(log2Ceil(BlockBeats + 1).W))
  private val rdErr = Reg(Bool())
  private val answer = Reg(Bool()) // the command has a block: the answer goes into it
  private val status = Reg(UInt(8.W))
  private val rsp = Reg(new EngineRsp(idBits))
  private val op = c.desc.opcode(3, 0)
  // Checked when taken (Idle): the opcode's class, the id's and the address's high bits.
  private val unused_desc = WireDefault(Cat(c.desc.opcode(7, 4), c.desc.addr(63, addrBits),
    if (idBits < 16) c.desc.len(15, idBits) else 0.U(1.W)))
  dontTouch(unused_desc)

  stat.taken := s_cmd.fire
  stat.badDesc := false.B
  stat.blockError := false.B
  stat.overLimit := false.B
  stat.refused := s_rsp.fire && s_rsp.bits.status =/= EngineStatus.Ok.U

  // ---- The answer block: one burst of BlockBeats 32-byte beats, the command block's layout.
  private val ansWords = Seq(rsp.addr.dstMac(31, 0), rsp.addr.dstMac(47, 32).pad(32), rsp.addr.srcMac(31, 0),
    rsp.addr.srcMac(47, 32).pad(32), rsp.addr.srcIp, rsp.addr.dstIp, Cat(rsp.addr.sport, rsp.addr.dport),
    rsp.nowUs(31, 0))
  private val ansTcb = rsp.tcb.asUInt.pad(256 * (BlockBeats - 1))
  private val ansBeats = VecInit(Cat(ansWords.reverse) +: (0 until BlockBeats - 1).map(i => ansTcb(256 * i + 255, 256 * i)))
  m_axi.awid := BlockId.U
  m_axi.awaddr := c.desc.addr(addrBits - 1, 0)
  m_axi.awlen := (BlockBeats - 1).U
  m_axi.awsize := Axi4.Size32.U
  m_axi.awburst := Axi4.BurstIncr.U
  m_axi.awvalid := st === S.WriteAddr
  m_axi.wdata := ansBeats(k)
  m_axi.wstrb := Fill(32, 1.U(1.W))
  m_axi.wlast := k === (BlockBeats - 1).U
  m_axi.wvalid := st === S.WriteData
  m_axi.bready := st === S.WriteResp
  private val unused_id = WireDefault(Cat(m_axi.bid, m_axi.rid))
  dontTouch(unused_id)

  // ---- Reads of the command block: one burst of BlockBeats 32-byte beats.
  m_axi.arid := BlockId.U
  m_axi.araddr := c.desc.addr(addrBits - 1, 0)
  m_axi.arlen := (BlockBeats - 1).U
  m_axi.arsize := Axi4.Size32.U
  m_axi.arburst := Axi4.BurstIncr.U
  m_axi.arvalid := st === S.ReadAddr
  m_axi.rready := st === S.ReadData

  // ---- The engine's command: the descriptor's fields and the block's words.
  private val w0 = VecInit((0 until 8).map(i => beats(0)(32 * i + 31, 32 * i)))
  private val tcbBits = (new Tcb).getWidth
  require(tcbBits <= 256 * (BlockBeats - 1), "the command block's Tcb words are too few")
  private val tcbWords = Cat((1 until BlockBeats).reverse.map(beats(_)))
  m_cmd.valid := false.B
  m_cmd.bits.op := op(2, 0)
  m_cmd.bits.id := c.desc.len(idBits - 1, 0)
  m_cmd.bits.arg := c.desc.param
  m_cmd.bits.addr.dstMac := Cat(w0(1)(15, 0), w0(0))
  m_cmd.bits.addr.srcMac := Cat(w0(3)(15, 0), w0(2))
  m_cmd.bits.addr.srcIp := w0(4)
  m_cmd.bits.addr.dstIp := w0(5)
  m_cmd.bits.addr.sport := w0(6)(31, 16)
  m_cmd.bits.addr.dport := w0(6)(15, 0)
  m_cmd.bits.tcb := tcbWords(tcbBits - 1, 0).asTypeOf(new Tcb)
  private val unused_block = WireDefault(Cat(tcbWords(tcbWords.getWidth - 1, tcbBits), w0(1)(31, 16), w0(3)(31, 16), w0(7)))
  dontTouch(unused_block)
  s_rsp.ready := st === S.Wait

  m_cpl.valid := st === S.Cpl
  m_cpl.bits.rx := false.B
  m_cpl.bits.queue := c.queue
  m_cpl.bits.index := c.index
  m_cpl.bits.len := rsp.id.pad(17)
  m_cpl.bits.status := status
  m_cpl.bits.flags := c.port.pad(7)
  m_cpl.bits.hash := rsp.tsVal
  m_cpl.bits.csum := 0.U
  m_cpl.bits.rssType := rsp.tcb.state.pad(8)
  m_cpl.bits.extra := 0.U
  private val unused_rsp = WireDefault(Cat(rsp.op, rsp.nowUs(41, 32)))
  dontTouch(unused_rsp)

  s_cmd.ready := st === S.Idle
  switch(st) {
    is(S.Idle) {
      when(s_cmd.fire) {
        val d = s_cmd.bits.desc
        val o = d.opcode(3, 0)
        c := s_cmd.bits
        rsp := 0.U.asTypeOf(rsp)
        rsp.id := d.len(idBits - 1, 0)
        rsp.tcb.state := ConnState.Closed.U
        val block = o === EngineOp.Install.U || o === EngineOp.Reserve.U || o === EngineOp.Complete.U
        val answerBlock = (o === EngineOp.Restore.U || o === EngineOp.Status.U) && d.addr =/= 0.U
        answer := block || answerBlock
        // 32-byte aligned, within one 4 KiB page, inside the bridge's address space.
        val badAddr = d.addr(4, 0) =/= 0.U || d.addr(63, addrBits) =/= 0.U || d.addr(11, 0) +& BlockBytes.U > 4096.U
        val idBad = !block || o === EngineOp.Complete.U
        val noId = idBad && (if (isPow2(connections)) d.len(15, idBits) =/= 0.U else d.len >= connections.U)
        k := 0.U
        rdErr := false.B
        when(o >= 8.U || ((block || answerBlock) && badAddr)) {
          status := CplStatus.BadDesc.U
          stat.badDesc := true.B
          st := S.Cpl
        }.elsewhen(noId) {
          status := (StatusBase + EngineStatus.NotLive).U
          st := S.Cpl
        }.elsewhen(block) {
          st := S.ReadAddr
        }.otherwise {
          st := S.Issue
        }
      }
    }
    is(S.ReadAddr) {
      when(m_axi.arready) { st := S.ReadData }
    }
    is(S.ReadData) {
      when(m_axi.rvalid) {
        when(k < BlockBeats.U) { beats(k) := m_axi.rdata }
        k := k + 1.U
        val err = rdErr || Axi4.isError(m_axi.rresp)
        rdErr := err
        when(m_axi.rlast) {
          val failed = err || k =/= (BlockBeats - 1).U
          when(failed) {
            status := CplStatus.DmaError.U
            stat.blockError := true.B
          }
          st := Mux(failed, S.Cpl, S.Issue)
        }
      }
    }
    is(S.Issue) {
      val over = (op === EngineOp.Install.U || op === EngineOp.Reserve.U) && cnum >= soft_limit
      when(over) {
        status := (StatusBase + OverLimit).U
        stat.overLimit := true.B
        st := S.Cpl
      }.otherwise {
        m_cmd.valid := true.B
        when(m_cmd.ready) { st := S.Wait }
      }
    }
    is(S.Wait) {
      when(s_rsp.valid) {
        rsp := s_rsp.bits
        val ok = s_rsp.bits.status === EngineStatus.Ok.U
        status := Mux(ok, CplStatus.Ok.U, StatusBase.U | s_rsp.bits.status)
        k := 0.U
        st := Mux(ok && answer, S.WriteAddr, S.Cpl)
      }
    }
    is(S.WriteAddr) {
      when(m_axi.awready) { st := S.WriteData }
    }
    is(S.WriteData) {
      when(m_axi.wready) {
        k := k + 1.U
        when(m_axi.wlast) { st := S.WriteResp }
      }
    }
    is(S.WriteResp) {
      when(m_axi.bvalid) {
        // The engine has done the command; only its answer is lost (the rsp_* registers
        // still hold it, until the next command).
        when(Axi4.isError(m_axi.bresp)) {
          status := CplStatus.DmaError.U
          stat.blockError := true.B
        }
        st := S.Cpl
      }
    }
    is(S.Cpl) {
      when(m_cpl.ready) { st := S.Idle }
    }
  }
}

object ToeCmdUnit {
  /** The command block: words 0-7 the addresses (as the window's cmd_dst_mac_lo ..
    * cmd_ports, then one reserved word), words 8-47 the Tcb (as cmd_tcb_0..39). */
  val BlockBytes = 192
  val BlockBeats = BlockBytes / 32
  /** The block reads' AXI id (the engine's transmit builder reads with id 0). */
  val BlockId = 1
  /** A completion's status for an engine answer other than OK: StatusBase + EngineStatus. */
  val StatusBase = 0x20
  /** Soft_limit's refusal (NicToe.OverLimit's value). */
  val OverLimit = 5

  /** `port` (the bridge) shared by the engine's writes and reads and the command unit's
    * (`blocks`: command-block reads, answer-block writes). Addresses alternate when both
    * wait (a choice held until taken); write data follows the write addresses in the order
    * they were taken (a small FIFO of whose burst is next); read data and write responses
    * go back by id: [[BlockId]] to `blocks`, the rest (the engine's id 0) to `engine`. */
  def join(port: Axi4IO, engine: Axi4IO, blocks: Axi4IO): Unit = {
    // ---- Writes.
    val owners = Module(new Queue(Bool(), 4)) // true: the blocks' burst
    val lastWBlock = RegInit(false.B)
    val wHeld = RegInit(false.B)
    val wHeldBlock = Reg(Bool())
    val pickWBlock = Mux(wHeld, wHeldBlock, blocks.awvalid && (!engine.awvalid || !lastWBlock))
    val awRoom = owners.io.enq.ready
    port.awvalid := awRoom && (engine.awvalid || blocks.awvalid)
    port.awid := Mux(pickWBlock, blocks.awid, engine.awid)
    port.awaddr := Mux(pickWBlock, blocks.awaddr, engine.awaddr)
    port.awlen := Mux(pickWBlock, blocks.awlen, engine.awlen)
    port.awsize := Mux(pickWBlock, blocks.awsize, engine.awsize)
    port.awburst := Mux(pickWBlock, blocks.awburst, engine.awburst)
    engine.awready := awRoom && port.awready && !pickWBlock
    blocks.awready := awRoom && port.awready && pickWBlock
    owners.io.enq.valid := port.awvalid && port.awready
    owners.io.enq.bits := pickWBlock
    wHeld := port.awvalid && !port.awready
    wHeldBlock := pickWBlock
    when(port.awvalid && port.awready) { lastWBlock := pickWBlock }
    val wBlock = owners.io.deq.bits
    val wOpen = owners.io.deq.valid
    port.wvalid := wOpen && Mux(wBlock, blocks.wvalid, engine.wvalid)
    port.wdata := Mux(wBlock, blocks.wdata, engine.wdata)
    port.wstrb := Mux(wBlock, blocks.wstrb, engine.wstrb)
    port.wlast := Mux(wBlock, blocks.wlast, engine.wlast)
    engine.wready := wOpen && !wBlock && port.wready
    blocks.wready := wOpen && wBlock && port.wready
    owners.io.deq.ready := port.wvalid && port.wready && port.wlast
    val bToBlocks = port.bid === BlockId.U
    for (m <- Seq(engine, blocks)) {
      m.bid := port.bid
      m.bresp := port.bresp
    }
    engine.bvalid := port.bvalid && !bToBlocks
    blocks.bvalid := port.bvalid && bToBlocks
    port.bready := Mux(bToBlocks, blocks.bready, engine.bready)

    // ---- Reads.
    val lastBlock = RegInit(false.B)
    val held = RegInit(false.B) // an address offered and not yet taken: its choice stays
    val heldBlock = Reg(Bool())
    val pickBlock = Mux(held, heldBlock, blocks.arvalid && (!engine.arvalid || !lastBlock))
    port.arvalid := engine.arvalid || blocks.arvalid
    port.arid := Mux(pickBlock, blocks.arid, engine.arid)
    port.araddr := Mux(pickBlock, blocks.araddr, engine.araddr)
    port.arlen := Mux(pickBlock, blocks.arlen, engine.arlen)
    port.arsize := Mux(pickBlock, blocks.arsize, engine.arsize)
    port.arburst := Mux(pickBlock, blocks.arburst, engine.arburst)
    engine.arready := port.arready && !pickBlock
    blocks.arready := port.arready && pickBlock
    held := port.arvalid && !port.arready
    heldBlock := pickBlock
    when(port.arvalid && port.arready) { lastBlock := pickBlock }
    val toBlocks = port.rid === BlockId.U
    for (m <- Seq(engine, blocks)) {
      m.rid := port.rid
      m.rdata := port.rdata
      m.rresp := port.rresp
      m.rlast := port.rlast
    }
    engine.rvalid := port.rvalid && !toBlocks
    blocks.rvalid := port.rvalid && toBlocks
    port.rready := Mux(toBlocks, blocks.rready, engine.rready)
  }
}
