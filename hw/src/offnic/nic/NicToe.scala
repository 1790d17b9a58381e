package offnic.nic

import chisel3._
import chisel3.util._
import offnic.axis.{AxisIO, AxisParams}
import offnic.pcie.{Axi4DmaBridge, DmaArbiter}
import offnic.regs.{RegBlock, RegBusPort, RegMap, StatCounter}
import offnic.cpu.LoadControlIn
import offnic.toe.{EngineNote, EngineOp, EngineRsp, NicQueueParams, NoteKind, TcpOffload, Tcb, TxMerge}

/** The TCP engine inside the NIC (issue 17), wired by Nic when `toeConnections` > 0:
  *
  *  - receive: every frame leaves RxEngine's port arbiter for [[TcpOffload]]'s lookup
  *    (TcpSteer); host frames come back into the checksum/RSS/reassembly path, frames of
  *    offloaded connections go through the NIC-packet queue (NicSegQueue: Qlen, drops) to
  *    the engine;
  *  - transmit: each port's input is a [[TxMerge]] of the host's frames (after TxChecksum)
  *    and the engine's segments; an engine segment goes to the port whose station address
  *    is its source address (the connection's port, named at install; port 0 when both ports share
  *    the address), port 0 when neither is
  *    (counted: tx_unrouted);
  *  - buffers: the engine's AXI4 port reaches host memory through an [[Axi4DmaBridge]] on
  *    the engine side of the DMA arbiter;
  *  - host-first or FCFS at all of these by one register (dma.arbitration);
  *  - the `toe` block (TcpOffload's) and the `toe_host` block (settings, counters, and the
  *    interim register command window with its answer and a notification FIFO);
  *  - load control (issue 18): Qlen, the queue's size, the connection count (Hard_limit)
  *    and Cnum to the control processor (`lc`); an install or reserve while Cnum >= its
  *    Soft_limit is refused by the NIC with status [[OverLimit]], never reaching the engine.
  *
  * Returns the engine's register-bus port for the chain.
  */
object NicToe {
  /** Notifications waiting for the host in the window's FIFO (the engine waits when full). */
  val NoteDepth = 64
  /** The window's answer status for an install refused for Soft_limit (after EngineStatus'). */
  val OverLimit = 5

  def attach(p: NicParams, regAddrBits: Int, toeBase: Int, toeNext: Int, rx: RxEngine, dmaHost: DmaArbiter,
             hostTx: Seq[AxisIO], portIn: Seq[AxisIO], hostB: RegBlock, fcfs: Bool, portMac: Seq[UInt],
             lc: Option[LoadControlIn], softLimit: UInt, tx: TxEngine,
             cpl: CplWriter): RegBusPort = {
    val hw = hostB.hw
    val steerOut = rx.m_axis_steer.get
    // The receive path's sideband (tid: port, tuser: mark) crosses the engine as one tuser
    // field: the engine's parser then is a module of its own, not a copy of the
    // reassembler's (whose unused outputs would be left open in a shared one).
    val sp = steerOut.p
    val engP = AxisParams(sp.dataBytes, userWidth = sp.userWidth + sp.idWidth)
    val off = Module(new TcpOffload(p.toeConnections, p.toeBuckets, p.toeSlots, fifoBeats = 512, addrBits = 40,
      regAddrBits = regAddrBits, regBase = toeBase, regNext = toeNext, rxP = engP,
      nicQueue = Some(NicQueueParams(depth = 512, maxFrames = p.toeNicqFrames))))
    val idBits = log2Ceil(p.toeConnections)

    // ---- Receive: lookup before the host path; the NIC-packet queue inside the engine.
    off.s_axis.tvalid := steerOut.tvalid
    off.s_axis.tdata := steerOut.tdata
    off.s_axis.tkeep := steerOut.tkeep
    off.s_axis.tlast := steerOut.tlast
    off.s_axis.tuser.get := Cat(steerOut.tid.get, steerOut.tuser.get)
    steerOut.tready := off.s_axis.tready
    val back = rx.s_axis_steer.get
    val hostOut = off.m_axis_host
    back.tvalid := hostOut.tvalid
    back.tdata := hostOut.tdata
    back.tkeep := hostOut.tkeep
    back.tlast := hostOut.tlast
    back.tuser.get := hostOut.tuser.get(sp.userWidth - 1, 0)
    back.tid.get := hostOut.tuser.get(sp.userWidth + sp.idWidth - 1, sp.userWidth)
    hostOut.tready := back.tready
    val q = off.nicq_status.get
    off.nicq_cfg.get.maxFrames := hw.value("nicq_max_frames")(15, 0)
    off.nicq_cfg.get.fcfs := fcfs
    hw.value("nicq_qlen") := q.qlen
    hw.value("nicq_frames") := StatCounter(q.frame)
    hw.value("nicq_drops") := StatCounter(q.drop)
    hw.value("nicq_capacity") := p.toeNicqFrames.U

    // ---- Settings.
    off.cfg.delackUs := hw.value("delack_us")
    off.cfg.rtoMinUs := hw.value("rto_min_us")
    off.cfg.rtoMaxUs := hw.value("rto_max_us")
    off.cfg.rtoInitialUs := hw.value("rto_initial_us")
    off.cfg.timeWaitUs := hw.value("time_wait_us")
    off.cfg.finWait2On := hw.value("engine_control")(0)
    off.cfg.finWait2Us := hw.value("fin_wait2_us")
    off.cfg.maxRetries := hw.value("engine_control")(12, 8)
    off.cfg_cycles_per_us := hw.value("cycles_per_us")(9, 0)
    val key = Cat(hw.value("hash_key_3")(30, 0), hw.value("hash_key_2"), hw.value("hash_key_1"), hw.value("hash_key_0"))
    val kw = off.cfg_hash_key.getWidth
    off.cfg_hash_key := key(126, 127 - kw)
    val unused_key = WireDefault(Cat(hw.value("hash_key_3")(31), key(126 - kw, 0)))
    dontTouch(unused_key)

    // ---- Buffers in host memory: the bridge on the DMA arbiter's engine side.
    val bridge = Module(new Axi4DmaBridge(p.dma.copy(ramAddrBits = DmaShare.EngRamBits), 40, 4))
    DmaArbiter.attachBridge(dmaHost, bridge)
    // Commands from the TX queues (ToeCmdUnit): their command-block reads and answer-block
    // writes share the bridge with the engine's (id 0; the blocks' id 1).
    val unit = Module(new ToeCmdUnit(p, p.toeConnections))
    unit.s_cmd <> tx.m_toe_cmd.get
    tx.s_toe_cpl.get <> unit.m_cpl
    tx.cfg_fcfs.get := fcfs
    ToeCmdUnit.join(bridge.s_axi, off.m_axi, unit.m_axi)

    // ---- Transmit: each engine segment to its port, merged with the host's frames.
    val eng = off.m_axis_tx
    val lanes = eng.tdata.asTypeOf(Vec(32, UInt(8.W)))
    val sa = Cat((6 until 12).map(lanes(_))) // byte 6 in the MSBs, as the port's mac register
    val first = RegInit(true.B)
    val held = RegInit(false.B)
    val toPort1 = Mux(first, sa =/= portMac(0) && sa === portMac(1), held) // port 0 when both match
    when(eng.tvalid && eng.tready) {
      first := eng.tlast
      held := toPort1
    }
    hw.value("tx_unrouted") := StatCounter(eng.tvalid && eng.tready && first && sa =/= portMac(0) && sa =/= portMac(1))
    val mergeP = AxisParams(32)
    val readies = Wire(Vec(2, Bool()))
    eng.tready := Mux(toPort1, readies(1), readies(0))
    for (pt <- 0 until 2) {
      val m = Module(new TxMerge(mergeP))
      m.s_axis_host <> hostTx(pt)
      m.s_axis_engine.tvalid := eng.tvalid && toPort1 === (pt == 1).B
      m.s_axis_engine.tdata := eng.tdata
      m.s_axis_engine.tkeep := eng.tkeep
      m.s_axis_engine.tlast := eng.tlast
      readies(pt) := m.s_axis_engine.tready
      portIn(pt) <> m.m_axis
      m.cfg_fcfs := fcfs
      hw.value(s"tx_host_frames_$pt") := StatCounter(m.stat_host_frame)
      hw.value(s"tx_engine_frames_$pt") := StatCounter(m.stat_engine_frame)
      hw.value(s"tx_engine_over_host_$pt") := StatCounter(m.stat_engine_over_host)
    }

    // ---- The interim command window (docs/toe.md): one command open at a time. The host
    // leaves the cmd_* registers alone until cmd_state.done (they feed the engine directly).
    val open = RegInit(false.B)
    val done = RegInit(false.B)
    val issue = RegInit(false.B)
    val go = hw.strobe("cmd_go")
    val goNow = go.valid && go.bits(0)
    when(goNow && !open) {
      open := true.B
      issue := true.B
      done := false.B
    }
    hw.value("cmd_issued") := StatCounter(goNow && !open)
    hw.value("cmd_busy_refused") := StatCounter(goNow && open)
    // The engine's command port: the window's command or the TX queues' (window first), one
    // at a time; the answer goes back to where the command came from.
    val cmd = Wire(Decoupled(new offnic.toe.EngineCmd(idBits)))
    val inFlight = RegInit(false.B)
    val fromUnit = RegInit(false.B)
    val pickUnit = !cmd.valid && unit.m_cmd.valid
    off.s_cmd.valid := !inFlight && (cmd.valid || unit.m_cmd.valid)
    off.s_cmd.bits := Mux(pickUnit, unit.m_cmd.bits, cmd.bits)
    cmd.ready := !inFlight && off.s_cmd.ready
    unit.m_cmd.ready := !inFlight && off.s_cmd.ready && pickUnit
    when(off.s_cmd.fire) {
      inFlight := true.B
      fromUnit := pickUnit
    }
    when(off.m_rsp.fire) { inFlight := false.B }
    val cnum = off.status.connections
    unit.cnum := cnum
    unit.soft_limit := softLimit
    hw.value("cmdq_commands") := StatCounter(unit.stat.taken)
    hw.value("cmdq_bad_desc") := StatCounter(unit.stat.badDesc)
    hw.value("cmdq_block_errors") := StatCounter(unit.stat.blockError)
    hw.value("cmdq_over_limit") := StatCounter(unit.stat.overLimit)
    hw.value("cmdq_refused") := StatCounter(unit.stat.refused)
    val opNow = hw.value("cmd_op")(2, 0)
    val overLimit = (opNow === EngineOp.Install.U || opNow === EngineOp.Reserve.U) && cnum >= softLimit
    val refuse = issue && overLimit
    cmd.valid := issue && !overLimit
    when(cmd.fire || refuse) { issue := false.B }
    hw.value("soft_limit") := softLimit
    hw.value("installs_over_limit") := StatCounter(refuse)
    lc.foreach { in =>
      val events = RegInit(0.U(32.W)) // a NIC packet queued, a connection installed or removed
      val cnumBefore = RegNext(cnum, 0.U)
      events := events + q.frame.asUInt + (cnum =/= cnumBefore).asUInt
      in.seq := events
      in.qlen := q.qlen
      in.queueSize := p.toeNicqFrames.U
      in.hardLimit := p.toeConnections.U
      in.cnum := cnum
    }
    cmd.bits.op := opNow
    cmd.bits.id := hw.value("cmd_id")(idBits - 1, 0)
    cmd.bits.arg := hw.value("cmd_arg")
    cmd.bits.addr.dstMac := Cat(hw.value("cmd_dst_mac_hi")(15, 0), hw.value("cmd_dst_mac_lo"))
    cmd.bits.addr.srcMac := Cat(hw.value("cmd_src_mac_hi")(15, 0), hw.value("cmd_src_mac_lo"))
    cmd.bits.addr.srcIp := hw.value("cmd_src_ip")
    cmd.bits.addr.dstIp := hw.value("cmd_dst_ip")
    cmd.bits.addr.sport := hw.value("cmd_ports")(31, 16)
    cmd.bits.addr.dport := hw.value("cmd_ports")(15, 0)
    val tcbBits = (new Tcb).getWidth
    require(tcbBits <= 32 * RegMap.ToeTcbWords, s"RegMap.ToeTcbWords too small for $tcbBits Tcb bits")
    val tcbIn = Cat((0 until RegMap.ToeTcbWords).reverse.map(k => hw.value(s"cmd_tcb_$k")))
    cmd.bits.tcb := tcbIn(tcbBits - 1, 0).asTypeOf(new Tcb)
    val unused_cmd = WireDefault(Cat(tcbIn(32 * RegMap.ToeTcbWords - 1, tcbBits), hw.value("cmd_id") >> idBits,
      hw.value("cmd_dst_mac_hi")(31, 16), hw.value("cmd_src_mac_hi")(31, 16)))
    dontTouch(unused_cmd)
    hw.value("tcb_bits") := tcbBits.U

    val rsp = Wire(Decoupled(new EngineRsp(idBits)))
    rsp.valid := off.m_rsp.valid && !fromUnit
    rsp.bits := off.m_rsp.bits
    rsp.ready := true.B
    unit.s_rsp.valid := off.m_rsp.valid && fromUnit
    unit.s_rsp.bits := off.m_rsp.bits
    off.m_rsp.ready := Mux(fromUnit, unit.s_rsp.ready, rsp.ready)
    // The rsp_* registers hold the last answer of either transport (the TX queues' answers
    // also go into their blocks in host memory: ToeCmdUnit).
    val last = Reg(new EngineRsp(idBits))
    when(off.m_rsp.fire) {
      last := off.m_rsp.bits
    }.elsewhen(refuse) {
      last := 0.U.asTypeOf(last)
      last.op := opNow
      last.status := OverLimit.U
    }
    when(rsp.fire || refuse) {
      open := false.B
      done := true.B
    }
    hw.value("cmd_state") := Cat(done, open)
    hw.value("rsp_status") := Cat(last.status, 0.U(5.W), last.op)
    hw.value("rsp_id") := last.id
    hw.value("rsp_ts_val") := last.tsVal
    hw.value("rsp_now_us_lo") := last.nowUs(31, 0)
    hw.value("rsp_now_us_hi") := last.nowUs(41, 32)
    val tcbOut = last.tcb.asUInt.pad(32 * RegMap.ToeTcbWords)
    for (k <- 0 until RegMap.ToeTcbWords) hw.value(s"rsp_tcb_$k") := tcbOut(32 * k + 31, 32 * k)
    val unused_rsp = WireDefault(last.addr.asUInt)
    dontTouch(unused_rsp)

    // ---- Notifications: a FIFO the host reads and pops.
    val notes = Module(new Queue(new EngineNote(idBits), NoteDepth))
    notes.io.enq <> off.m_note
    val pop = hw.strobe("note_pop")
    // ... or, with note_mode.events, events on event queue note_eq (CplWriter): consecutive
    // rx or acked notifications of one connection waiting here merge into one event (the
    // latest sequence number; "many ACKs, one message").
    val toEvents = hw.value("note_mode")(0)
    val head = notes.io.deq
    val pend = RegInit(false.B)
    val ev = Reg(new NoteEvent)
    val sameRun = pend && head.valid && head.bits.id.pad(16) === ev.id && head.bits.kind.pad(8) === ev.kind &&
      (ev.kind === NoteKind.Rx.U || ev.kind === NoteKind.Acked.U) && !ev.merged.andR
    cpl.s_note.get.valid := pend && !sameRun
    cpl.s_note.get.bits := ev
    cpl.cfg_note_eq.get := hw.value("note_eq")(7, 0)
    val take = toEvents && (!pend || sameRun)
    head.ready := Mux(toEvents, take, pop.valid && pop.bits(0))
    when(cpl.s_note.get.fire) { pend := false.B }
    when(head.valid && take) {
      pend := true.B
      ev.id := head.bits.id.pad(16)
      ev.kind := head.bits.kind.pad(8)
      ev.seq := head.bits.seq
      ev.merged := Mux(sameRun, ev.merged + 1.U, 1.U)
    }
    hw.value("notes_evented") := StatCounter(cpl.s_note.get.fire)
    hw.value("notes_merged") := StatCounter(head.valid && take && sameRun)
    hw.value("note_count") := notes.io.count
    hw.value("note_head") := Cat(notes.io.deq.bits.id.pad(16), 0.U(13.W), notes.io.deq.bits.kind)
    hw.value("note_seq") := notes.io.deq.bits.seq

    // Fields' spare bits (read back as written, unused).
    val unused_bits = WireDefault(Cat(go.bits(31, 1), pop.bits(31, 1), hw.value("engine_control")(7, 1),
      hw.value("note_eq")(31, 8),
      hw.value("nicq_max_frames")(31, 16)))
    dontTouch(unused_bits)
    // The engine's status is in its registers; the block's status port is for its bench.
    val unused_status = WireDefault(off.status.asUInt)
    dontTouch(unused_status)
    off.reg
  }
}
