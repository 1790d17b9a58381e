package offnic.pcie

import chisel3._
import chisel3.util._
import offnic.axi.{Axi4, Axi4IO}
import offnic.util.SkidBuffer

/** An AXI4 subordinate port (as [[offnic.toe.TcpOffload]]'s `m_axi` drives it) in front of
  * the DMA engine: AXI reads and writes of host memory become DMA read and write
  * descriptors through staging buffers the bridge owns. Sits in `offnic.pcie` because it
  * speaks the DMA engine's interface (DmaDesc, DmaStatus, DmaRamWrite/DmaRamRead).
  *
  * Staging RAM, as the engine sees it (byte addresses, 2^ramAddrBits wide): the read area
  * (readSlots slots of 512 bytes) at 0, the write area (writeSlots slots) at
  * 2^(ramAddrBits-1). A slot holds one burst of up to 16 beats of 32 bytes. Two
  * SyncReadMems: the read area (engine writes, R reads) and the write area (W writes, engine
  * reads at DmaParams.ramReadLatency).
  *
  * Reads: AR -> a read slot (a ring: allocated in AR order, freed in R order) and one DMA
  * read descriptor of (arlen + 1) * 32 bytes from araddr rounded down to 32 (tag: the slot).
  * Statuses come back in any order and mark their slot done; R returns slots in AR order (so
  * in AXI order per ID, and across IDs too: one ID waits behind another's older read), from
  * the staging RAM, once the head slot's status is in. Any number of slots can be in flight.
  *
  * Sizing for one connection at 25 Gb/s with 1 us host read latency: 25 Gb/s = 3.125 B/ns;
  * the time from a read descriptor to its status is the host latency (1 us, HostMemory's
  * default, typical of a server) plus PCIe and engine time (about 0.3 us measured on the
  * DMA bench, tests/pcie/test_host_latency.py), so about 1.3 us * 3.125 B/ns = 4.1 KiB must
  * be in flight: 8 slots of 512 B. readSlots = 16 (8 KiB, 2 block RAMs' depth at 256 bits)
  * doubles that, for 50 Gb/s, or 25 Gb/s at 2.6 us latency. The engine's 32 tags and 32
  * read descriptor slots are not the limit. Writes are posted (their status comes when the
  * TLPs leave, no host round trip), so writeSlots = 8 (4 KiB) covers the engine's status
  * delay many times over.
  *
  * Writes: AW + its W beats -> a write slot (a ring, in AW order), data and strobes stored;
  * then the slot's strobes are scanned and one DMA write descriptor issued per run of
  * contiguous enabled bytes (bytes whose strobe is off are never written to host memory: a
  * full burst is one descriptor; holes cost one more each); B once every descriptor of the
  * burst has its status (statuses come in descriptor order), in AW order. W beats are counted
  * by awlen; wlast is not looked at.
  *
  * Responses: OKAY; DECERR when the DMA engine says Unsupported Request (no memory at that
  * host address); SLVERR for any other DMA error (abort, poison, timeout, malformed, bad
  * descriptor) and for bursts the bridge does not take: arlen/awlen > 15 (more than a slot),
  * a size other than 32 bytes, or a burst type other than INCR. Such a burst is answered
  * without any DMA: arlen + 1 R beats of zero data with SLVERR, or its W beats taken and
  * dropped and SLVERR on B. An R beat with an error response carries zeros, never staging
  * data. Writes are posted in PCIe: a write to a host address with no memory is lost without
  * a report, and B says OKAY (nothing in PCIe reports it to the requester).
  *
  * A burst crossing a 4 KiB boundary (AXI forbids it) is carried out: the DMA engine cuts its
  * TLPs at 4 KiB and the max payload / read request sizes anyway.
  *
  * Boundaries: s_axi's arready, awready and wready come from skid buffer registers, R and B
  * leave from queues; DMA descriptors leave from queues; statuses are always taken. No
  * combinational path from the DMA side to the AXI side or back.
  *
  * Order between reads and writes: AXI has none unless the manager waits for B. B comes when
  * the write TLPs have been handed to RQ, and PCIe keeps a later read behind posted writes,
  * so a read issued after B sees the write.
  */
class Axi4DmaBridge(val p: DmaParams, val addrBits: Int = 40, val idBits: Int = 4, val readSlots: Int = 16,
                    val writeSlots: Int = 8) extends Module {
  require(isPow2(readSlots) && readSlots >= 2 && isPow2(writeSlots) && writeSlots >= 2)
  require(math.max(readSlots, writeSlots) * Axi4DmaBridge.SlotBytes <= (1 << (p.ramAddrBits - 1)),
    s"ramAddrBits ${p.ramAddrBits} too small for the staging slots")
  require(addrBits > 5 && addrBits <= 64)
  import Axi4DmaBridge._

  val s_axi = IO(Flipped(new Axi4IO(addrBits, idBits)))
  val m_rd_desc = IO(Decoupled(new DmaDesc(p.ramAddrBits)))
  val s_rd_status = IO(Flipped(Decoupled(new DmaStatus)))
  val m_wr_desc = IO(Decoupled(new DmaDesc(p.ramAddrBits)))
  val s_wr_status = IO(Flipped(Decoupled(new DmaStatus)))
  val ram_wr = IO(Flipped(new DmaRamWrite(p.ramAddrBits)))
  val ram_rd = IO(Flipped(new DmaRamRead(p.ramAddrBits)))

  private val rsBits = log2Ceil(readSlots)
  private val wsBits = log2Ceil(writeSlots)
  private val writeBase = BigInt(1) << (p.ramAddrBits - 1)

  /** An AXI response for a DMA status code. */
  private def respOf(error: UInt): UInt =
    Mux(error === 0.U, RespOkay.U(2.W), Mux(error === DmaError.Unsupported.U, RespDecErr.U(2.W), RespSlvErr.U(2.W)))

  /** A burst the bridge does not take. */
  private def refused(len: UInt, size: UInt, burst: UInt): Bool =
    len > (SlotBeats - 1).U || size =/= Axi4.Size32.U || burst =/= Axi4.BurstIncr.U

  // ================================================================== reads
  private class ArReq extends Bundle {
    val id = UInt(idBits.W)
    val addr = UInt((addrBits - 5).W) // in 32-byte words: the first beat is the whole word
    val len = UInt(8.W)
    val size = UInt(3.W)
    val burst = UInt(2.W)
  }
  private val arSkid = Module(new SkidBuffer(new ArReq))
  arSkid.in.valid := s_axi.arvalid
  arSkid.in.bits.id := s_axi.arid
  arSkid.in.bits.addr := s_axi.araddr(addrBits - 1, 5)
  arSkid.in.bits.len := s_axi.arlen
  arSkid.in.bits.size := s_axi.arsize
  arSkid.in.bits.burst := s_axi.arburst
  s_axi.arready := arSkid.in.ready

  // Per read slot: the burst it answers and whether its data (or error) is in.
  private val rId = Reg(Vec(readSlots, UInt(idBits.W)))
  private val rLen = Reg(Vec(readSlots, UInt(8.W)))
  private val rDone = RegInit(VecInit(Seq.fill(readSlots)(false.B)))
  private val rResp = Reg(Vec(readSlots, UInt(2.W)))
  private val rAlloc = RegInit(0.U(rsBits.W))
  private val rHead = RegInit(0.U(rsBits.W))
  private val rUsed = RegInit(0.U((rsBits + 1).W))

  private val rdDescQ = Module(new Queue(new DmaDesc(p.ramAddrBits), 2))
  m_rd_desc <> rdDescQ.io.deq
  private val ar = arSkid.out.bits
  private val arBad = refused(ar.len, ar.size, ar.burst)
  private val arRoom = rUsed =/= readSlots.U
  arSkid.out.ready := arRoom && (arBad || rdDescQ.io.enq.ready)
  rdDescQ.io.enq.valid := arSkid.out.valid && arRoom && !arBad
  rdDescQ.io.enq.bits.host_addr := Cat(ar.addr, 0.U(5.W))
  rdDescQ.io.enq.bits.ram_addr := Cat(rAlloc, 0.U(SlotBits.W))
  rdDescQ.io.enq.bits.len := Cat(ar.len(3, 0) +& 1.U, 0.U(5.W))
  rdDescQ.io.enq.bits.tag := rAlloc
  private val arTaken = arSkid.out.fire
  when(arTaken) {
    rId(rAlloc) := ar.id
    rLen(rAlloc) := ar.len
    rDone(rAlloc) := arBad
    rResp(rAlloc) := RespSlvErr.U
    rAlloc := rAlloc + 1.U
  }

  // Statuses: always taken; each marks its slot.
  s_rd_status.ready := true.B
  private val rsTag = s_rd_status.bits.tag(rsBits - 1, 0)
  when(s_rd_status.valid) {
    rDone(rsTag) := true.B
    rResp(rsTag) := respOf(s_rd_status.bits.error)
  }

  // The engine's writes land in the read area.
  private val rMem = SyncReadMem(readSlots * SlotBeats, Vec(32, UInt(8.W)))
  when(ram_wr.en) {
    rMem.write(ram_wr.addr(rsBits + BeatBits - 1, 0), ram_wr.data.asTypeOf(Vec(32, UInt(8.W))), ram_wr.strb.asBools)
  }

  // R: the head slot's beats, read from the RAM into an output queue with credits (the
  // RAM read cannot stall).
  private class RBeat extends Bundle {
    val id = UInt(idBits.W)
    val data = UInt(256.W)
    val resp = UInt(2.W)
    val last = Bool()
  }
  private val rOutDepth = 4
  private val rOutQ = Module(new Queue(new RBeat, rOutDepth))
  private val rBeat = RegInit(0.U(8.W))
  private val rPipeValid = RegInit(false.B)
  private val rCredit = rOutQ.io.count +& rPipeValid.asUInt < rOutDepth.U
  private val rSend = rUsed =/= 0.U && rDone(rHead) && rCredit
  private val rLast = rBeat === rLen(rHead)
  private val rData = rMem.read(Cat(rHead, rBeat(BeatBits - 1, 0)), rSend)
  rPipeValid := rSend
  private val rPipe = RegEnable({
    val b = Wire(new RBeat)
    b.id := rId(rHead)
    b.data := 0.U
    b.resp := rResp(rHead)
    b.last := rLast
    b
  }, rSend)
  rOutQ.io.enq.valid := rPipeValid
  rOutQ.io.enq.bits := rPipe
  rOutQ.io.enq.bits.data := Mux(rPipe.resp === RespOkay.U, rData.asUInt, 0.U) // error beats carry zeros
  when(rSend) {
    rBeat := Mux(rLast, 0.U, rBeat + 1.U)
    when(rLast) { rHead := rHead + 1.U } // the slot is free: its last read is under way now
  }
  rUsed := rUsed + arTaken.asUInt - (rSend && rLast).asUInt

  s_axi.rvalid := rOutQ.io.deq.valid
  s_axi.rid := rOutQ.io.deq.bits.id
  s_axi.rdata := rOutQ.io.deq.bits.data
  s_axi.rresp := rOutQ.io.deq.bits.resp
  s_axi.rlast := rOutQ.io.deq.bits.last
  rOutQ.io.deq.ready := s_axi.rready

  // ================================================================== writes
  private class AwReq extends Bundle {
    val id = UInt(idBits.W)
    val addr = UInt((addrBits - 5).W) // in 32-byte words: strobes say which bytes
    val len = UInt(8.W)
    val size = UInt(3.W)
    val burst = UInt(2.W)
  }
  private class WBeat extends Bundle {
    val data = UInt(256.W)
    val strb = UInt(32.W)
  }
  private val awSkid = Module(new SkidBuffer(new AwReq))
  awSkid.in.valid := s_axi.awvalid
  awSkid.in.bits.id := s_axi.awid
  awSkid.in.bits.addr := s_axi.awaddr(addrBits - 1, 5)
  awSkid.in.bits.len := s_axi.awlen
  awSkid.in.bits.size := s_axi.awsize
  awSkid.in.bits.burst := s_axi.awburst
  s_axi.awready := awSkid.in.ready
  private val wSkid = Module(new SkidBuffer(new WBeat))
  wSkid.in.valid := s_axi.wvalid
  wSkid.in.bits.data := s_axi.wdata
  wSkid.in.bits.strb := s_axi.wstrb
  s_axi.wready := wSkid.in.ready
  private val unused_wlast = WireDefault(s_axi.wlast) // beats are counted by awlen
  dontTouch(unused_wlast)

  // Per write slot: the burst, and how far it has come (filled -> scanned -> B).
  private val wId = Reg(Vec(writeSlots, UInt(idBits.W)))
  private val wAddr = Reg(Vec(writeSlots, UInt((addrBits - 5).W))) // in 32-byte words
  private val wLen = Reg(Vec(writeSlots, UInt(4.W)))
  private val wBad = Reg(Vec(writeSlots, Bool()))
  private val wFilled = RegInit(VecInit(Seq.fill(writeSlots)(false.B)))
  private val wScanned = RegInit(VecInit(Seq.fill(writeSlots)(false.B)))
  private val wDescs = Reg(Vec(writeSlots, UInt(DescCountBits.W)))    // descriptors issued
  private val wStatuses = Reg(Vec(writeSlots, UInt(DescCountBits.W))) // statuses back
  private val wResp = Reg(Vec(writeSlots, UInt(2.W)))
  private val wFill = RegInit(0.U(wsBits.W))
  private val wScan = RegInit(0.U(wsBits.W))
  private val wHead = RegInit(0.U(wsBits.W))
  private val wUsed = RegInit(0.U((wsBits + 1).W))

  private val wMem = SyncReadMem(writeSlots * SlotBeats, Vec(32, UInt(8.W)))
  private val mem_strobes = Mem(writeSlots * SlotBeats, UInt(32.W)) // strobes, for the scanner (LUT RAM)

  // Fill: W beats of the oldest AW into the fill slot.
  private val aw = awSkid.out.bits
  private val awBad = refused(aw.len, aw.size, aw.burst)
  private val wBeat = RegInit(0.U(8.W))
  private val wTake = awSkid.out.valid && wSkid.out.valid && wUsed =/= writeSlots.U
  private val wLastBeat = wBeat === aw.len
  wSkid.out.ready := wTake
  awSkid.out.ready := wTake && wLastBeat
  private val wIdx = Cat(wFill, wBeat(BeatBits - 1, 0))
  when(wTake && !awBad) {
    wMem.write(wIdx, wSkid.out.bits.data.asTypeOf(Vec(32, UInt(8.W))), wSkid.out.bits.strb.asBools)
    mem_strobes.write(wIdx, wSkid.out.bits.strb)
  }
  private val wFillDone = wTake && wLastBeat
  when(wTake) { wBeat := Mux(wLastBeat, 0.U, wBeat + 1.U) }
  when(wFillDone) {
    wId(wFill) := aw.id
    wAddr(wFill) := aw.addr
    wLen(wFill) := aw.len(3, 0)
    wBad(wFill) := awBad
    wFilled(wFill) := true.B
    wStatuses(wFill) := 0.U
    wResp(wFill) := RespOkay.U
    wFill := wFill + 1.U
  }

  // Scan: the strobes of the scan slot, one step a cycle; each run of enabled bytes
  // becomes one write descriptor. A step looks at the bytes at and above `pos` of the
  // current beat for the next run start (outside a run) or end (inside one).
  private val wrDescQ = Module(new Queue(new DmaDesc(p.ramAddrBits), 2))
  m_wr_desc <> wrDescQ.io.deq
  private val sBeat = RegInit(0.U(BeatBits.W))
  private val sPos = RegInit(0.U(5.W))
  private val sInRun = RegInit(false.B)
  private val sStart = Reg(UInt(SlotBits.W)) // byte offset of the open run in the slot
  private val sCount = RegInit(0.U(DescCountBits.W))
  private val geMask = VecInit((0 until 32).map(k => (((BigInt(1) << 32) - 1) ^ ((BigInt(1) << k) - 1)).U(32.W)))
  private val strb = mem_strobes(Cat(wScan, sBeat))
  private val look = Mux(sInRun, ~strb, strb) & geMask(sPos)
  private val (found, at) = DmaUtil.lowestSet(look.asBools) // a balanced tree, for timing
  private val here = Cat(sBeat, at)            // byte offset of the start or end found
  private val beatEnd = Cat(sBeat +& 1.U, 0.U(5.W)) // one past the current beat
  private val sActive = wFilled(wScan) && !wScanned(wScan)
  private val sLastBeat = sBeat === wLen(wScan)
  private val sEmits = sInRun && (found || sLastBeat)
  private val sEnd = Mux(found, here.pad(SlotBits + 1), beatEnd)
  private val sSlotDone = wBad(wScan) || (!found && sLastBeat)
  private val sStep = sActive && (!sEmits || wrDescQ.io.enq.ready)
  wrDescQ.io.enq.valid := sActive && !wBad(wScan) && sEmits
  wrDescQ.io.enq.bits.host_addr := Cat(wAddr(wScan), 0.U(5.W)) + sStart
  wrDescQ.io.enq.bits.ram_addr := (writeBase.U(p.ramAddrBits.W) | Cat(wScan, sStart))
  wrDescQ.io.enq.bits.len := sEnd - sStart
  wrDescQ.io.enq.bits.tag := wScan
  when(sStep) {
    when(sSlotDone) {
      sBeat := 0.U
      sPos := 0.U
      sInRun := false.B
      sCount := 0.U
      wScanned(wScan) := true.B
      wDescs(wScan) := Mux(wBad(wScan), 0.U, sCount + sEmits.asUInt)
      wScan := wScan + 1.U
    }.otherwise {
      when(found) {
        sInRun := !sInRun
        sPos := at
        when(!sInRun) { sStart := here }
      }.otherwise {
        sBeat := sBeat + 1.U
        sPos := 0.U
      }
      sCount := sCount + sEmits.asUInt
    }
  }

  // Write statuses: always taken, counted per slot (they come in descriptor order).
  s_wr_status.ready := true.B
  private val wsTag = s_wr_status.bits.tag(wsBits - 1, 0)
  when(s_wr_status.valid) {
    wStatuses(wsTag) := wStatuses(wsTag) + 1.U
    when(s_wr_status.bits.error =/= 0.U && wResp(wsTag) === RespOkay.U) { wResp(wsTag) := respOf(s_wr_status.bits.error) }
  }

  // The engine reads the write area.
  ram_rd.data := ShiftRegister(wMem.read(ram_rd.addr(wsBits + BeatBits - 1, 0), ram_rd.en).asUInt, p.ramReadLatency - 1)

  // B: the head slot once scanned and every status is in.
  private class BResp extends Bundle {
    val id = UInt(idBits.W)
    val resp = UInt(2.W)
  }
  private val bQ = Module(new Queue(new BResp, 2))
  private val bDone = wScanned(wHead) && wStatuses(wHead) === wDescs(wHead)
  bQ.io.enq.valid := bDone
  bQ.io.enq.bits.id := wId(wHead)
  bQ.io.enq.bits.resp := Mux(wBad(wHead), RespSlvErr.U, wResp(wHead))
  when(bQ.io.enq.fire) {
    wFilled(wHead) := false.B
    wScanned(wHead) := false.B
    wHead := wHead + 1.U
  }
  wUsed := wUsed + wFillDone.asUInt - bQ.io.enq.fire.asUInt
  s_axi.bvalid := bQ.io.deq.valid
  s_axi.bid := bQ.io.deq.bits.id
  s_axi.bresp := bQ.io.deq.bits.resp
  bQ.io.deq.ready := s_axi.bready

  // Bits the bridge has no use for: status tags above the slot index, the RAM ports'
  // area bits (each port only ever addresses its own area), the address bits within a beat.
  private val unused_bits = WireDefault(Cat(s_rd_status.bits.tag, s_wr_status.bits.tag, ram_wr.addr, ram_rd.addr,
    s_axi.araddr(4, 0), s_axi.awaddr(4, 0)))
  dontTouch(unused_bits)
}

object Axi4DmaBridge {
  /** A staging slot: one burst of at most 16 beats of 32 bytes (TcpOffload's largest). */
  val SlotBeats = 16
  val BeatBits = 4
  val SlotBytes = 512
  val SlotBits = 9
  /** Descriptors of one burst: at most 16 runs of enabled bytes a beat. */
  val DescCountBits = 9
  val RespOkay = 0
  val RespSlvErr = 2
  val RespDecErr = 3
}
