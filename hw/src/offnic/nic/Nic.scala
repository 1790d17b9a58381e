package offnic.nic

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axi.Axi4IO
import offnic.axis.{AxisIO, AxisParams}
import offnic.cache.PayloadCache
import offnic.cpu.{ControlProcessor, CpuParams, LoadControlIn, NicCpu}
import offnic.eth.EthPort
import offnic.offload.TxChecksum
import offnic.pcie._
import offnic.regs._

/** The NIC core: the UltraScale+ PCIe hard IP's user interface on one side (clock and reset
  * are the IP's user_clk/user_reset, 250 MHz), two Ethernet ports (XGMII, each in its own
  * MAC clock domain) on the other.
  *
  *   CQ/CC  -> BarRegAccess -> register chain (every block in RegMap that this core has)
  *   RQ/RC <-> DmaEngine <-> NIC RAMs (TX RAM per port, RX RAM, descriptor RAMs, completion RAM)
  *   TX: DescFetch -> TxEngine -> TxChecksum (per port) -> EthPort -> XGMII
  *       TxEngine -> PayloadCache (inserts by DMA read; appends copied into the TX RAM),
  *       whose DRAM tier is the AXI4 port `m_axi`
  *   RX: XGMII -> EthPort -> RxEngine (RxFilter per port, RxChecksum, RssHash, Reassembler, RX RAM) -> DMA write
  *   CplWriter: completions, events and MSI-X writes to the host
  *   With `toeConnections` > 0 (NicToe): the TCP engine's lookup between the RX arbiter and
  *   RxChecksum, its NIC-packet queue and engine, a TxMerge before each EthPort, its buffers
  *   through the DMA arbiter
  *
  * docs/queues.md is the host's view; ARCHITECTURE.md draws the data path.
  */
class Nic(val c: DeviceRegsParams, val p: NicParams, val portMbps: Seq[Int], val cpu: Option[CpuParams] = None,
          val outerBlocks: Seq[BlockType] = Nil) extends Module {
  import PcieUs._
  import NicParams._

  val s_axis_cq = IO(Flipped(new PcieStreamIO(DataBits, CqUserBits)))
  val m_axis_cc = IO(new PcieStreamIO(DataBits, CcUserBits))
  val m_axis_rq = IO(new PcieStreamIO(DataBits, RqUserBits))
  val s_axis_rc = IO(Flipped(new PcieStreamIO(DataBits, RcUserBits)))
  val cfg_max_payload = IO(Input(UInt(3.W)))
  val cfg_max_read_req = IO(Input(UInt(3.W)))
  val port_mac_clk = IO(Input(Vec(2, Clock())))
  val port_mac_rst = IO(Input(Vec(2, Bool())))
  val port_xgmii_txd = IO(Output(Vec(2, UInt(64.W))))
  val port_xgmii_txc = IO(Output(Vec(2, UInt(8.W))))
  val port_xgmii_rxd = IO(Input(Vec(2, UInt(64.W))))
  val port_xgmii_rxc = IO(Input(Vec(2, UInt(8.W))))
  /** The payload cache's DRAM tier (a DDR4 controller's AXI4 slave on a board). */
  val m_axi = IO(new Axi4IO(p.cache.dramAddrBits, 2))

  // ---- Registers
  private val bar = Module(new BarRegAccess(c.addrBits))
  bar.s_axis_cq <> s_axis_cq
  m_axis_cc <> bar.m_axis_cc

  private val chain: Seq[(BlockType, Int)] = Seq(
    RegMap.DeviceId -> 0, RegMap.Clock -> 0, RegMap.BarAccess -> 0, RegMap.Dma -> 0,
    RegMap.TxQueues -> p.txQueues, RegMap.RxQueues -> p.rxQueues, RegMap.TxCqs -> p.txQueues,
    RegMap.RxCqs -> p.rxQueues, RegMap.Eqs -> p.eqs, RegMap.Msix -> p.eqs, RegMap.TxEngine -> 0,
    RegMap.RxEngine -> 0, RegMap.Rss -> 0, RegMap.EthPort -> 0, RegMap.EthPort -> 0, RegMap.Cache -> 0,
    RegMap.Reasm -> 0) ++ (if (p.toeConnections > 0) Seq(RegMap.Toe -> 0, RegMap.ToeHost -> 0) else Nil) ++
    cpu.map(_ => RegMap.Fw -> 0) ++ outerBlocks.map(_ -> 0)
  private val placedAll = chain.zip(RegBus.layout(chain.map(_._1)))
  /** Where the `outerBlocks` sit in the chain, (base, next) each, after the core's own: the
    * design around the core (a board top: its ports' PCS blocks) builds them there and
    * answers for them on `outer_reg`. None by default: the core's chain ends with its own. */
  val outerPlaces: Seq[(Int, Int)] = placedAll.drop(chain.size - outerBlocks.size).map(_._2)
  private val placed = placedAll.take(chain.size - outerBlocks.size)
  // The `toe` block is the TCP engine's own (TcpOffload builds it at its place in the chain).
  private val toePlace = placed.collectFirst { case ((RegMap.Toe, _), at) => at }
  private val blocks = placed.filter(_._1._1 != RegMap.Toe).map { case ((t, n), (base, next)) =>
    Module(new RegBlock(t, base, next, c.addrBits, n))
  }
  private val bridge = Module(new AxilRegBridge(c.addrBits))
  bridge.s_axil <> bar.m_axil
  // The control processor (issue 18) is a second master on the register bus, after the host.
  private val regArb = Module(new RegBusArbiter(c.addrBits))
  regArb.host <> bridge.reg
  private val toeReg = toePlace.map(_ => Wire(new RegBusPort(c.addrBits)))
  /** The register bus to the `outerBlocks` (same clock, same one-cycle answer as the core's blocks). */
  val outer_reg = Option.when(outerBlocks.nonEmpty)(IO(new RegBusPort(c.addrBits)))
  RegBus.fanOut(regArb.out, blocks.map(_.bus) ++ toeReg ++ outer_reg)
  // Load control's inputs come from the TCP engine, its Soft_limit goes back to it (issue 18).
  private val toeLc = Option.when(p.toeConnections > 0 && cpu.isDefined)(Wire(new LoadControlIn))
  private val toeSoft = Option.when(p.toeConnections > 0)(Wire(UInt(32.W)))
  NicCpu.attach(cpu, blocks.lastOption.filter(_.t == RegMap.Fw), regArb.client, toeLc, toeSoft.filter(_ => cpu.isDefined))
  if (cpu.isEmpty) toeSoft.foreach(_ := p.toeConnections.U)
  private val Seq(devB, clkB, barB, dmaB, txqB, rxqB, txcqB, rxcqB, eqB, msixB, txeB, rxeB, rssB, port0B, port1B, cacheB, reasmB) = blocks.take(17)

  DeviceRegs.driveDeviceId(devB.hw, c)
  DeviceRegs.driveClock(clkB.hw, c)
  barB.hw.value("unsupported") := StatCounter(bar.stat_unsupported)
  barB.hw.value("read_errors") := StatCounter(bar.stat_read_error)
  barB.hw.value("write_errors") := StatCounter(bar.stat_write_error)

  // ---- DMA engine and the RAMs behind it
  private val dma = Module(new DmaEngine(p.dma))
  m_axis_rq <> dma.m_axis_rq
  dma.s_axis_rc <> s_axis_rc
  dma.cfg_max_payload := cfg_max_payload
  dma.cfg_max_read_req := cfg_max_read_req
  // The host path shares the DMA engine with the TCP engine's bridge (DmaArbiter: host first
  // or FCFS); below, `dmaHost` is the host path's view of the engine.
  private val dmaHost = Module(new DmaArbiter(p.dma, DmaShare.EngRamBits, DmaShare.EngRamBase, DmaShare.EngTag,
    DmaShare.EngTagMask))
  DmaShare.connect(dma, dmaHost, dmaB)
  if (p.toeConnections == 0) DmaShare.noEngine(dmaHost) // else NicToe attaches the engine's bridge

  private val txRam = Seq.fill(2)(Module(new DmaRam(TxRamAddrBits, 2, TxRamBytes)))
  private val rxRam = Module(new DmaRam(16, 2))
  private val cplRam = Module(new DmaRam(log2Ceil(p.cplSlots) + 4, 2))
  private val txDescRam = Module(new DmaRam(p.descRamAddrBits, 1))
  private val rxDescRam = Module(new DmaRam(p.descRamAddrBits, 1))

  // DMA reads land by region (address bit 31: the payload cache; else bits 19:18, and bit 15
  // splits the descriptor region). Appends from the cache write the TX RAMs too, in the
  // cycles the DMA engine leaves free.
  private val cache = Module(new PayloadCache(p.cache, RamAddrBits, TagCacheInsert))
  private val wr = dmaHost.host_ram_wr
  private val wrCache = wr.addr(RamAddrBits - 6)
  private val wrRegion = wr.addr(14, 13)
  private def landIn(ram: DmaRamWrite, hit: Bool): Unit = {
    ram.en := wr.en && hit
    ram.addr := wr.addr(ram.addr.getWidth - 1, 0)
    ram.data := wr.data
    ram.strb := wr.strb
  }
  for (pt <- 0 until 2) {
    val dmaHit = wr.en && !wrCache && wrRegion === pt.U
    val ram = txRam(pt).wr
    val cw = cache.tx_wr(pt)
    ram.en := dmaHit || cw.en
    ram.addr := Mux(dmaHit, wr.addr(12, 0), cw.addr)
    ram.data := Mux(dmaHit, wr.data, cw.data)
    ram.strb := Mux(dmaHit, wr.strb, cw.strb)
    cache.tx_busy(pt) := dmaHit
  }
  landIn(txDescRam.wr, !wrCache && wrRegion === 2.U && !wr.addr(10))
  landIn(rxDescRam.wr, !wrCache && wrRegion === 2.U && wr.addr(10))
  landIn(cache.s_ram_wr, wrCache)
  m_axi <> cache.m_axi

  // DMA writes take their bytes from the RX RAM (region 0) or the completion RAM (region 2).
  private val rd = dmaHost.host_ram_rd
  private val rdCpl = rd.addr(12, 11) === 2.U
  private val rdMapped = rd.addr(RamAddrBits - 6, 13) === 0.U // nothing else is ever a source
  rxRam.rd.en := rd.en && rdMapped && !rdCpl
  rxRam.rd.addr := rd.addr(10, 0)
  cplRam.rd.en := rd.en && rdMapped && rdCpl
  cplRam.rd.addr := rd.addr(cplRam.rd.addr.getWidth - 1, 0)
  rd.data := Mux(ShiftRegister(rdCpl, p.dma.ramReadLatency), cplRam.rd.data, rxRam.rd.data)

  // ---- Queue registers
  private def u64(lo: UInt, hi: UInt): UInt = Cat(hi, lo)
  private def queueCfg(b: RegBlock, i: Int, port: Boolean): QueueCfg = {
    val e = b.entries(i)
    val w = Wire(new QueueCfg)
    w.base := u64(e.value("base_lo"), e.value("base_hi"))
    w.logSize := e.value("control")(3, 0)
    w.enable := e.value("control")(8)
    w.prod := e.value("prod")(15, 0)
    w
  }
  private val txFetch = Module(new DescFetch(p.txQueues, p.descCache, DescRamBase, TagTxDesc << 6, RamAddrBits))
  private val rxFetch = Module(new DescFetch(p.rxQueues, p.descCache, DescRamBase + 0x8000, TagRxDesc << 6, RamAddrBits))
  for (i <- 0 until p.txQueues) {
    txFetch.cfg(i) := queueCfg(txqB, i, true)
    txqB.entries(i).value("cons") := txFetch.cons(i)
    txqB.entries(i).value("status") := Cat(txFetch.fetching(i), txFetch.error(i))
  }
  for (i <- 0 until p.rxQueues) {
    rxFetch.cfg(i) := queueCfg(rxqB, i, false)
    rxqB.entries(i).value("cons") := rxFetch.cons(i)
    rxqB.entries(i).value("status") := Cat(rxFetch.fetching(i), rxFetch.error(i))
  }
  txqB.hw.value("desc_cache") := p.descCache.U
  txqB.hw.value("max_segs") := p.maxSegs.U
  rxqB.hw.value("desc_cache") := p.descCache.U

  // ---- Completion writer
  private val cpl = Module(new CplWriter(p))
  private val cqBlocks = Seq.tabulate(p.txQueues)(i => (txcqB, i)) ++ Seq.tabulate(p.rxQueues)(i => (rxcqB, i))
  for (((b, i), k) <- cqBlocks.zipWithIndex) {
    val e = b.entries(i)
    cpl.cq(k).base := u64(e.value("base_lo"), e.value("base_hi"))
    cpl.cq(k).logSize := e.value("control")(3, 0)
    cpl.cq(k).enable := e.value("control")(8)
    cpl.cq(k).eq := e.value("control")(23, 16)
    cpl.cq(k).cons := e.value("cons")(15, 0)
    cpl.cq(k).modCount := e.value("mod_count")(15, 0)
    cpl.cq(k).modTimeUs := e.value("mod_time_us")(15, 0)
    cpl.cq(k).arm := e.strobe("arm").valid && e.strobe("arm").bits(0)
    e.value("prod") := cpl.cq_prod(k)
  }
  for (k <- 0 until p.eqs) {
    val e = eqB.entries(k)
    cpl.eq(k).base := u64(e.value("base_lo"), e.value("base_hi"))
    cpl.eq(k).logSize := e.value("control")(3, 0)
    cpl.eq(k).enable := e.value("control")(8)
    cpl.eq(k).cons := e.value("cons")(15, 0)
    cpl.eq(k).arm := e.strobe("arm").valid && e.strobe("arm").bits(0)
    e.value("prod") := cpl.eq_prod(k)
    val m = msixB.entries(k)
    cpl.msix(k).addr := u64(m.value("addr_lo"), m.value("addr_hi"))
    cpl.msix(k).data := m.value("data")
    cpl.msix(k).mask := m.value("control")(0)
  }
  eqB.hw.value("overflows") := cpl.eq_overflows
  msixB.hw.value("pending") := cpl.msix_pending
  cplRam.wr <> cpl.ram_wr

  // ---- TX
  private val tx = Module(new TxEngine(p, p.cache.totalBytes))
  cache.s_cmd <> tx.m_cache
  tx.s_cache_done := cache.done
  QueueSide.connect(tx.queues, txFetch, txDescRam, cpl.room.take(p.txQueues), cpl.reserve(0))
  for (i <- 0 until p.txQueues) tx.cfg_port(i) := txqB.entries(i).value("control")(16)
  for (pt <- 0 until 2) txRam(pt).rd <> tx.ram_rd(pt)

  // ---- RX
  private val rx = Module(new RxEngine(p))
  QueueSide.connect(rx.queues, rxFetch, rxDescRam, cpl.room.drop(p.txQueues), cpl.reserve(1))
  rxRam.wr <> rx.ram_wr
  rx.cfg_csum_start := rxeB.hw.value("csum_start")(15, 0)
  rx.cfg_default_queue(0) := rxeB.hw.value("default_queue")(7, 0)
  rx.cfg_default_queue(1) := rxeB.hw.value("default_queue")(15, 8)
  private val rssCtl = rssB.hw.value("control")
  rx.cfg_rss.enable := rssCtl(0)
  rx.cfg_rss.ipv4 := rssCtl(1)
  rx.cfg_rss.ipv6 := rssCtl(2)
  rx.cfg_rss.tcp := rssCtl(3)
  rx.cfg_rss.udp := rssCtl(4)
  rx.cfg_rss.key := Cat((0 until 10).map(k => rssB.hw.value(s"key_$k")))
  private val indir = rssB.hw.strobe("indir_write")
  rx.cfg_rss.indirWrite.valid := indir.valid
  rx.cfg_rss.indirWrite.bits.index := indir.bits(15, 0)
  rx.cfg_rss.indirWrite.bits.queue := indir.bits(23, 16)
  rssB.hw.value("table_size") := 128.U
  require(p.reasmContexts == 64 && p.reasmBuffers == 256, "reasm.contexts/buffers are constants of the register map")
  rx.cfg_reasm.enable := reasmB.hw.value("control")(0)
  rx.cfg_reasm.timeoutUs := reasmB.hw.value("timeout_us")(23, 0)
  rx.cfg_reasm.tickCycles := reasmB.hw.value("tick_cycles")(15, 0)
  rx.cfg_reasm.maxFrags := reasmB.hw.value("max_frags")(7, 0)
  rx.cfg_reasm.maxBytes := reasmB.hw.value("max_bytes")(23, 0)
  private val reasmKey = Cat((0 until 4).map(k => reasmB.hw.value(s"hash_key_$k")))
  rx.cfg_reasm.hashKey := reasmKey(127, 9)
  // The key's last 9 register bits and the high bits of the knobs are reserved (read back, unused).
  private val unused_reasm_bits = WireDefault(Cat(reasmKey(8, 0), reasmB.hw.value("max_bytes")(31, 24),
    reasmB.hw.value("timeout_us")(31, 24), reasmB.hw.value("tick_cycles")(31, 16), reasmB.hw.value("max_frags")(31, 8)))
  dontTouch(unused_reasm_bits)
  private val reasmPost = reasmB.hw.strobe("buf_post")
  rx.cfg_reasm.post.valid := reasmPost.valid && reasmPost.bits(15, 8) === 0.U // ids beyond `buffers`: ignored
  rx.cfg_reasm.post.bits.id := reasmPost.bits(7, 0)
  rx.cfg_reasm.post.bits.addr := Cat(reasmB.hw.value("buf_addr_hi"), reasmB.hw.value("buf_addr_lo"))
  for (((name, _), i) <- RegMap.ReasmCounters.zipWithIndex) reasmB.hw.value(name) := rx.reasm_counters(i)
  reasmB.hw.value("open") := rx.reasm_status(0)
  reasmB.hw.value("bytes_held") := rx.reasm_status(1)
  reasmB.hw.value("pool") := rx.reasm_status(2)
  reasmB.hw.value("parked") := rx.reasm_status(3)

  // ---- DMA request arbitration and status routing
  private val rdArb = Module(new RRArbiter(new DmaDesc(RamAddrBits), 4))
  rdArb.io.in(0) <> tx.m_rd_desc
  rdArb.io.in(1) <> txFetch.m_rd_desc
  rdArb.io.in(2) <> rxFetch.m_rd_desc
  rdArb.io.in(3) <> cache.m_rd_desc
  dmaHost.s_host_rd_desc <> rdArb.io.out
  private val rs = dmaHost.m_host_rd_status
  rs.ready := true.B
  private val rsKind = rs.bits.tag(7, 6)
  for (pt <- 0 until 2) {
    tx.s_rd_status(pt).valid := rs.valid && rsKind === pt.U
    tx.s_rd_status(pt).bits.slot := rs.bits.tag(5, 0)
    tx.s_rd_status(pt).bits.error := rs.bits.error
  }
  txFetch.s_rd_status.valid := rs.valid && rsKind === TagTxDesc.U
  txFetch.s_rd_status.bits := rs.bits
  rxFetch.s_rd_status.valid := rs.valid && rsKind === TagRxDesc.U
  rxFetch.s_rd_status.bits := rs.bits
  cache.s_rd_status.valid := rs.valid && rs.bits.tag(7, 5) === (TagCacheInsert >> 5).U
  cache.s_rd_status.bits.ins := rs.bits.tag(1, 0)
  cache.s_rd_status.bits.dram := rs.bits.tag(4)
  cache.s_rd_status.bits.error := rs.bits.error

  private val wrArb = Module(new RRArbiter(new DmaDesc(RamAddrBits), 2))
  wrArb.io.in(0) <> rx.m_wr_desc
  wrArb.io.in(1) <> cpl.m_wr_desc
  dmaHost.s_host_wr_desc <> wrArb.io.out
  private val ws = dmaHost.m_host_wr_status
  ws.ready := true.B
  rx.s_wr_status.valid := ws.valid && ws.bits.tag === 0.U
  rx.s_wr_status.bits := ws.bits
  cpl.wr_done := ws.valid && ws.bits.tag === 0x80.U

  private val cplArb = Module(new RRArbiter(new CplReq(p.queueBits), 2))
  cplArb.io.in(0) <> tx.m_cpl
  cplArb.io.in(1) <> rx.m_cpl
  cpl.s_req <> cplArb.io.out

  // ---- Ports
  private val csumBad = Wire(Vec(2, Bool()))
  private val csumDrop = Wire(Vec(2, Bool()))
  private val portB = Seq(port0B, port1B)
  private val withToe = p.toeConnections > 0
  // With the engine: TxChecksum's output and the port's input meet in NicToe's TX merge.
  private val txcOut = Option.when(withToe)(Wire(Vec(2, new AxisIO(AxisParams(32)))))
  private val portTxIn = Option.when(withToe)(Wire(Vec(2, new AxisIO(AxisParams(32)))))
  private val portMac = Option.when(withToe)(Wire(Vec(2, UInt(48.W))))
  for (pt <- 0 until 2) {
    val txc = Module(new TxChecksum(32, 512, 32))
    txc.s_axis <> tx.m_axis(pt)
    csumBad(pt) := txc.stat_tx_csum_bad_cmd
    csumDrop(pt) := txc.stat_tx_csum_drop_oversize
    val port = Module(new EthPort(maxFrameLen = p.maxRxFrame))
    port.mac_clk := port_mac_clk(pt)
    port.mac_rst := port_mac_rst(pt)
    if (withToe) {
      txcOut.get(pt) <> txc.m_axis
      port.s_axis <> portTxIn.get(pt)
    } else port.s_axis <> txc.m_axis
    rx.s_axis(pt) <> port.m_axis
    port_xgmii_txd(pt) := port.xgmii_txd
    port_xgmii_txc(pt) := port.xgmii_txc
    port.xgmii_rxd := port_xgmii_rxd(pt)
    port.xgmii_rxc := port_xgmii_rxc(pt)
    val b = portB(pt).hw
    port.cfg_ifg := b.value("ifg")(7, 0)
    port.cfg_max_frame_len := b.value("max_frame_len")(15, 0)
    val s = port.stats
    b.value("port") := pt.U
    b.value("speed_mbps") := portMbps(pt).U
    b.value("tx_frames") := s.tx_frames
    b.value("tx_bytes_lo") := s.tx_bytes(31, 0)
    b.value("tx_bytes_hi") := s.tx_bytes(63, 32)
    b.value("tx_errors") := s.tx_errors
    b.value("rx_frames") := s.rx_frames
    b.value("rx_bytes_lo") := s.rx_bytes(31, 0)
    b.value("rx_bytes_hi") := s.rx_bytes(63, 32)
    b.value("rx_fcs_errors") := s.rx_fcs_errors
    b.value("rx_runts") := s.rx_runts
    b.value("rx_oversize") := s.rx_oversize
    b.value("rx_xgmii_errors") := s.rx_xgmii_errors
    b.value("rx_fifo_drops") := s.rx_fifo_drops
    val f = rx.cfg_filter(pt)
    f.mac := Cat(b.value("mac_hi")(15, 0), b.value("mac_lo"))
    portMac.foreach(_(pt) := f.mac)
    f.promisc := b.value("rx_filter")(0)
    f.allMulti := b.value("rx_filter")(1)
    f.broadcast := b.value("rx_filter")(2)
    f.mcHash := Cat(b.value("mc_hash_hi"), b.value("mc_hash_lo"))
    b.value("rx_filter_drops") := StatCounter(rx.stat_filter_drop(pt))
    b.value("rx_foreign") := StatCounter(rx.stat_filter_foreign(pt))
  }

  // ---- The TCP engine (issue 17): between the RX arbiter and the host path, beside the TX
  // engine at each port, on the DMA arbiter's engine side (NicToe).
  for ((place, reg) <- toePlace.zip(toeReg)) {
    val hostB = blocks.find(_.t == RegMap.ToeHost).get
    val engReg = NicToe.attach(p, c.addrBits, place._1, place._2, rx, dmaHost, txcOut.get, portTxIn.get, hostB,
      dmaB.hw.value("arbitration")(0), portMac.get, toeLc, toeSoft.get, tx, cpl)
    engReg.req := reg.req
    reg.resp := engReg.resp
  }

  // ---- Statistics
  private def bytes(b: RegBlock, lo: String, hi: String, ev: Seq[Valid[UInt]]): Unit = {
    val total = RegInit(0.U(64.W))
    total := total + ev.map(e => Mux(e.valid, e.bits, 0.U)).reduce(_ +& _)
    b.hw.value(lo) := total(31, 0)
    b.hw.value(hi) := total(63, 32)
  }
  private val sr = dma.stat_rd
  private val sw = dma.stat_wr
  dmaB.hw.value("max_payload") := (128.U(13.W) << cfg_max_payload)
  dmaB.hw.value("max_read_req") := (128.U(13.W) << cfg_max_read_req)
  dmaB.hw.value("rd_requests") := StatCounter(sr.req)
  dmaB.hw.value("rd_completions") := StatCounter(sr.cpl)
  dmaB.hw.value("rd_err_status") := StatCounter(sr.err_status)
  dmaB.hw.value("rd_err_poisoned") := StatCounter(sr.err_poisoned)
  dmaB.hw.value("rd_err_timeout") := StatCounter(sr.err_timeout)
  dmaB.hw.value("rd_err_malformed") := StatCounter(sr.err_malformed)
  dmaB.hw.value("rd_unexpected") := StatCounter(sr.unexpected)
  dmaB.hw.value("rd_done") := StatCounter(sr.done)
  dmaB.hw.value("rd_done_error") := StatCounter(sr.done_error)
  dmaB.hw.value("wr_requests") := StatCounter(sw.req)
  dmaB.hw.value("wr_done") := StatCounter(sw.done)
  dmaB.hw.value("wr_done_error") := StatCounter(sw.done_error)
  DmaShare.count(dmaHost, dmaB)

  txeB.hw.value("packets") := StatCounter(tx.stat_packet.map(_.valid))
  bytes(txeB, "bytes_lo", "bytes_hi", tx.stat_packet)
  txeB.hw.value("dma_errors") := StatCounter(tx.stat_dma_error)
  txeB.hw.value("bad_desc") := StatCounter(tx.stat_bad_desc)
  txeB.hw.value("csum_bad_cmd") := StatCounter(csumBad)
  txeB.hw.value("csum_drop_oversize") := StatCounter(csumDrop)
  txeB.hw.value("desc_fetch_errors") := StatCounter(txFetch.stat_error)
  txeB.hw.value("max_frame") := p.maxTxFrame.U
  tx.cfg_mtu(0) := txeB.hw.value("mtu")(15, 0)
  tx.cfg_mtu(1) := txeB.hw.value("mtu")(31, 16)
  private val fragCut = tx.stat_frag.map(f => f.valid && f.bits.fragments > 1.U)
  txeB.hw.value("frag_datagrams") := StatCounter(fragCut)
  private val fragCount = RegInit(0.U(32.W))
  fragCount := fragCount + Mux(fragCut(0), tx.stat_frag(0).bits.fragments, 0.U) +
    Mux(fragCut(1), tx.stat_frag(1).bits.fragments, 0.U)
  txeB.hw.value("frag_fragments") := fragCount
  txeB.hw.value("frag_refused") := StatCounter(tx.stat_frag.map(f => f.valid && f.bits.status =/= 0.U))
  txeB.hw.value("frag_csum_unpatched") := StatCounter(tx.stat_frag.map(f => f.valid && f.bits.csumBad))

  private val cs = cache.stats
  cacheB.hw.value("onchip_bytes") := p.cache.onchipBytes.U
  cacheB.hw.value("dram_bytes") := p.cache.dramBytes.U
  bytes(cacheB, "host_bytes_lo", "host_bytes_hi", Seq(tx.stat_host_bytes))
  bytes(cacheB, "cache_bytes_lo", "cache_bytes_hi", Seq(cs.append))
  bytes(cacheB, "insert_bytes_lo", "insert_bytes_hi", Seq(cs.insert))
  cacheB.hw.value("appends") := StatCounter(cs.append.valid)
  cacheB.hw.value("inserts") := StatCounter(cs.insert.valid)
  cacheB.hw.value("hits_onchip") := StatCounter(cs.appendOnchip)
  cacheB.hw.value("hits_dram") := StatCounter(cs.appendDram)
  cacheB.hw.value("range_errors") := StatCounter(tx.stat_cache_range)
  cacheB.hw.value("read_errors") := StatCounter(cs.readError)
  cacheB.hw.value("write_errors") := StatCounter(cs.writeError)
  cacheB.hw.value("order_waits") := StatCounter(cs.orderWait)

  rxeB.hw.value("packets") := StatCounter(rx.stat_packet.valid)
  bytes(rxeB, "bytes_lo", "bytes_hi", Seq(rx.stat_packet))
  rxeB.hw.value("drop_disabled") := StatCounter(rx.stat_drop_disabled)
  rxeB.hw.value("drop_no_desc") := StatCounter(rx.stat_drop_no_desc)
  rxeB.hw.value("drop_cq_full") := StatCounter(rx.stat_drop_cq_full)
  rxeB.hw.value("too_long") := StatCounter(rx.stat_too_long)
  rxeB.hw.value("dma_errors") := StatCounter(rx.stat_dma_error)
  rxeB.hw.value("desc_fetch_errors") := StatCounter(rxFetch.stat_error)
}

object Nic extends Elaboratable {
  def generate(p: Params): RawModule = {
    val c = DeviceRegs.params(p)
    val np = NicParams.from(p)
    val mbps = Seq(p.int("port0_mbps", 25000), p.int("port1_mbps", 25000))
    val cpu = if (p.bool("cpu", true)) Some(ControlProcessor.params(p)) else None
    new Nic(c, np, mbps, cpu)
  }
}
