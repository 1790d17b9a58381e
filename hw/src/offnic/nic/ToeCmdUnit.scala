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
  * gives the command to the engine and turns the answer into the descriptor's TX
  * completion: `len` the connection id, `status` 0 or 0x20 + the engine's status (DMA_ERROR
  * when the block's read failed, BAD_DESC for an opcode past 0x27 or a bad block address),
  * `rss_hash` our TSval, `rss_type` the connection's TCP state after the command.
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
  /** Command-block reads only (the write channels stay idle). */
  val m_axi = IO(new Axi4IO(addrBits, axiIdBits))
  val cnum = IO(Input(UInt((idBits + 1).W)))
  val soft_limit = IO(Input(UInt(32.W)))
  /** Pulses: a command taken; refused as a bad descriptor (unknown opcode, bad block
    * address); its block's read failed; refused at Soft_limit; answered not OK by the engine. */
  val stat = IO(Output(new Bundle {
    val taken = Bool()
    val badDesc = Bool()
    val blockError = Bool()
    val overLimit = Bool()
    val refused = Bool()
  }))

  private object S extends ChiselEnum { val Idle, ReadAddr, ReadData, Issue, Wait, Cpl = Value }
  private val st = RegInit(S.Idle)
  private val c = Reg(new ToeQueueCmd(p.queueBits))
  private val beats = Reg(Vec(BlockBeats, UInt(256.W)))
  private val k = Reg(UInt(log2Ceil(BlockBeats + 1).W))
  private val rdErr = Reg(Bool())
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

  // ---- Reads of the command block: one burst of BlockBeats 32-byte beats.
  m_axi.awid := 0.U
  m_axi.awaddr := 0.U
  m_axi.awlen := 0.U
  m_axi.awsize := 0.U
  m_axi.awburst := 0.U
  m_axi.awvalid := false.B
  m_axi.wdata := 0.U
  m_axi.wstrb := 0.U
  m_axi.wlast := false.B
  m_axi.wvalid := false.B
  m_axi.bready := true.B
  private val unused_w = WireDefault(Cat(m_axi.awready, m_axi.wready, m_axi.bid, m_axi.bresp, m_axi.bvalid, m_axi.rid))
  dontTouch(unused_w)
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
  private val unused_rsp = WireDefault(Cat(rsp.op, rsp.nowUs, rsp.addr.asUInt, rsp.tcb.asUInt))
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
        // 32-byte aligned, within one 4 KiB page, inside the bridge's address space.
        val badAddr = d.addr(4, 0) =/= 0.U || d.addr(63, addrBits) =/= 0.U || d.addr(11, 0) +& BlockBytes.U > 4096.U
        val idBad = !block || o === EngineOp.Complete.U
        val noId = idBad && (if (isPow2(connections)) d.len(15, idBits) =/= 0.U else d.len >= connections.U)
        k := 0.U
        rdErr := false.B
        when(o >= 8.U || (block && badAddr)) {
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
        status := Mux(s_rsp.bits.status === EngineStatus.Ok.U, CplStatus.Ok.U, StatusBase.U | s_rsp.bits.status)
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

  /** `port` (the bridge): the engine's writes and reads, and the command blocks' reads
    * (`blocks`, whose write channels are idle). Read addresses alternate when both wait (a
    * choice held until taken); read data goes back by id: [[BlockId]] to `blocks`, the rest
    * (the builder's id 0) to `engine`. */
  def joinReads(port: Axi4IO, engine: Axi4IO, blocks: Axi4IO): Unit = {
    port.awid := engine.awid
    port.awaddr := engine.awaddr
    port.awlen := engine.awlen
    port.awsize := engine.awsize
    port.awburst := engine.awburst
    port.awvalid := engine.awvalid
    engine.awready := port.awready
    port.wdata := engine.wdata
    port.wstrb := engine.wstrb
    port.wlast := engine.wlast
    port.wvalid := engine.wvalid
    engine.wready := port.wready
    engine.bid := port.bid
    engine.bresp := port.bresp
    engine.bvalid := port.bvalid
    port.bready := engine.bready
    blocks.awready := false.B
    blocks.wready := false.B
    blocks.bid := 0.U
    blocks.bresp := 0.U
    blocks.bvalid := false.B
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
