package offnic.eth

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisAsyncFifo, AxisFifo, AxisIO, AxisParams, AxisWidthConverter}

/** The port's statistics, counted in the core domain; every counter wraps (software reads
  * them periodically and takes differences, as for [[offnic.regs.StatCounter]]).
  *
  *  - `tx_frames`: frames sent whole, with their FCS (the MAC's `stat_tx_frame`);
  *  - `tx_bytes`: their bytes from the destination address to the FCS, padding to 60 bytes
  *    and FCS included (the MAC's `stat_tx_bytes` with `stat_tx_frame`);
  *  - `tx_errors`: frames not sent whole: ended by /E/ on the wire (the MAC's
  *    `stat_tx_error`; cannot happen behind the store-and-forward buffer, kept for
  *    completeness) plus frames longer than the transmit buffer, discarded unsent;
  *  - `rx_frames`, `rx_bytes`: good frames the MAC received from the wire and their bytes,
  *    FCS included (the MAC's `stat_rx_frame_good`, `stat_rx_bytes`), whether or not the
  *    receive buffer then had room for them;
  *  - `rx_fcs_errors`, `rx_runts`, `rx_oversize`, `rx_xgmii_errors`: the MAC's verdicts on
  *    bad frames (exactly one per frame, see [[EthMacRx]]); those frames never reach
  *    `m_axis`;
  *  - `rx_fifo_drops`: good frames discarded whole because the receive buffer had no room
  *    (the consumer back-pressured, or the frame is longer than the buffer). So the
  *    frames delivered on `m_axis` are exactly `rx_frames - rx_fifo_drops`.
  */
class EthPortStats extends Bundle {
  val tx_frames, tx_errors, rx_frames, rx_fcs_errors, rx_runts, rx_oversize, rx_xgmii_errors, rx_fifo_drops =
    UInt(32.W)
  val tx_bytes, rx_bytes = UInt(64.W)
}

/** Statistics increments gathered in the MAC domain since they last crossed into the core
  * domain. Exactly 128 bits, the data width of the crossing FIFO (the byte fields are wider
  * than needed so that no bit is left over).
  */
private[eth] class EthPortStatDelta extends Bundle {
  val tx_frames = UInt(8.W)
  val tx_errors = UInt(8.W)
  val rx_frames = UInt(8.W)
  val rx_fcs_errors = UInt(8.W)
  val rx_runts = UInt(8.W)
  val rx_oversize = UInt(8.W)
  val rx_xgmii_errors = UInt(8.W)
  val tx_bytes = UInt(36.W)
  val rx_bytes = UInt(36.W)
}

private[eth] object EthPortStatDelta {
  val fields: Seq[EthPortStatDelta => UInt] = Seq(_.tx_frames, _.tx_errors, _.rx_frames, _.rx_fcs_errors,
    _.rx_runts, _.rx_oversize, _.rx_xgmii_errors, _.tx_bytes, _.rx_bytes)

  /** Field by field `a + b` (never overflows: see EthPort, "Statistics"). */
  def add(a: EthPortStatDelta, b: EthPortStatDelta): EthPortStatDelta = {
    val s = Wire(new EthPortStatDelta)
    for (f <- fields) f(s) := f(a) + f(b)
    s
  }
}

/** The port's receive buffer, in the core domain: a packet FIFO that never back-pressures.
  *
  * `s_axis_tready` is always high (upstream, the MAC cannot wait). A frame becomes visible
  * on `m_axis` only once its last beat is in, so it leaves without gaps. A frame whose last
  * beat carries `tuser(0)` (the MAC's "bad frame" mark) is discarded by rewinding the write
  * pointer to the end of the last whole frame. A frame that meets a full buffer is
  * discarded the same way, the rest of it swallowed up to its `tlast`, and counted by
  * `stat_drop` (at its last beat, unless it was marked bad too: the MAC counted that one
  * already). Frames longer than the buffer end up there as well, so nothing deadlocks.
  *
  * Storage: `depth` entries of 262 bits in a `Mem` (data, the index of the last kept byte
  * in place of the 32 `tkeep` bits, which frames are packed, and `tlast`), read into one
  * output register, so synthesis puts it in block RAM (Yosys, 1024 deep: 15 RAMB18;
  * 128 deep: 4 RAMB36).
  */
class EthRxFifo(val depth: Int) extends Module {
  require(depth >= 2 && isPow2(depth), s"EthRxFifo depth must be a power of two >= 2, got $depth")
  val inP: AxisParams = AxisParams(32, userWidth = 1)
  val s_axis = IO(Flipped(new AxisIO(inP)))
  val m_axis = IO(new AxisIO(AxisParams(32)))
  /** One-cycle pulse: a frame the MAC found good was discarded for lack of room. */
  val stat_drop = IO(Output(Bool()))

  private val ptrBits = log2Ceil(depth) + 1
  private val ram = Mem(depth, UInt((256 + 5 + 1).W))
  private val wrPtr = RegInit(0.U(ptrBits.W)) // next slot, including an unfinished frame
  private val wrCommit = RegInit(0.U(ptrBits.W)) // end of the last whole frame
  private val rdPtr = RegInit(0.U(ptrBits.W))
  private val dropping = RegInit(false.B) // swallowing the rest of a frame that did not fit

  private val full = (wrPtr - rdPtr) === depth.U
  private val bad = s_axis.tuser.get(0)
  // The last kept byte's index is all a packed beat's tkeep says; bit 0 (byte 0 kept) is
  // implied. unused_* tells Verilator's lint so (its default --unused-regexp).
  private val unused_keep_bit0 = WireDefault(s_axis.tkeep(0))
  dontTouch(unused_keep_bit0)
  s_axis.tready := true.B
  stat_drop := false.B

  when(s_axis.tvalid) {
    when(dropping || full) {
      wrPtr := wrCommit
      dropping := !s_axis.tlast
      stat_drop := s_axis.tlast && !bad
    }.otherwise {
      ram.write(wrPtr(ptrBits - 2, 0), Cat(s_axis.tlast, Log2(s_axis.tkeep), s_axis.tdata))
      when(s_axis.tlast && bad) {
        wrPtr := wrCommit
      }.otherwise {
        wrPtr := wrPtr + 1.U
        when(s_axis.tlast) { wrCommit := wrPtr + 1.U }
      }
    }
  }

  // Output stage: one register loaded straight from the RAM (a registered read).
  private val outValid = RegInit(false.B)
  private val outEntry = Reg(UInt((256 + 5 + 1).W))
  private val load = wrCommit =/= rdPtr && (!outValid || m_axis.tready)
  when(load) {
    outEntry := ram.read(rdPtr(ptrBits - 2, 0))
    rdPtr := rdPtr + 1.U
  }
  outValid := load || (outValid && !m_axis.tready)

  private val lastByte = outEntry(260, 256)
  m_axis.tvalid := outValid
  m_axis.tdata := outEntry(255, 0)
  m_axis.tkeep := VecInit.tabulate(32)(i => i.U <= lastByte).asUInt
  m_axis.tlast := outEntry(261)
}

/** One Ethernet port of the NIC: the MAC ([[EthMac]], 64-bit XGMII) in its own clock domain
  * (`mac_clk`: 156.25 MHz for 10G, 390.625 MHz for 25G; the XGMII transmit and receive
  * clocks are both this clock) and the crossings into the core domain (the module's
  * implicit clock, 250 MHz), where frames are 256-bit AXI-Stream.
  *
  * {{{
  *  core (250 MHz)                               | MAC (mac_clk)
  *  s_axis 256 -> [AxisAsyncFifo 256 b x 16] ----+-> [AxisFifo packet, txDepth x 32 B] -> [256->64] -> EthMacTx -> xgmii_tx
  *  m_axis 256 <- [EthRxFifo, rxDepth x 32 B] <- [AxisAsyncFifo 256 b x 16] <-+- [64->256] <- EthMacRx <- xgmii_rx
  *  stats <- counters <------------------------- [AxisAsyncFifo 128 b x 4] <-+- increments <- stat pulses, TX drops
  *  cfg_* ---------------------------------------> [AxisAsyncFifo 24 b x 4] -+-> cfg registers -> EthMac
  * }}}
  *
  * '''Transmit: store and forward in the MAC domain.''' Core frames cross at full width
  * (the core supplies up to 8 GB/s; 25G needs 3.125 GB/s, more than a 64-bit crossing read
  * at 250 MHz could carry) and wait, still 256 bits wide, in a packet-mode
  * [[offnic.axis.AxisFifo]] in the MAC domain until their last beat is in. Only then does
  * the frame leave, and from there on everything is in the MAC clock domain: the FIFO's
  * output register is refilled in the cycle after each beat is taken, and the 256->64
  * converter takes the next wide beat in the cycle its last lane leaves, so the MAC gets a
  * beat in every cycle it asks for one until `tlast`. The MAC can therefore never
  * underrun, however `s_axis` pauses mid-frame; no argument about the crossing's timing
  * is needed. Line rate: the buffer is written at up to 8 GB/s (2.56x the 25G drain rate,
  * 6.4x at 10G), so it runs ahead of the MAC and frame N+1 is whole before frame N has
  * left, for any mix of sizes, as long as the core keeps up on average: a capacity of one
  * maximum frame plus a little suffices (while frame N drains, N+1 needs only the room N
  * frees). Buffer cost: `txDepth` 256-bit beats, by default one maximum frame + 16 beats
  * rounded up to a power of two: 512 x 289 bits = 16 KiB of frame for 9018 (9 RAMB18),
  * 64 for 1518 (LUT-RAM); plus 16 x 289 bits of LUT-RAM in the crossing. Latency: one frame (store
  * and forward). A frame longer than the buffer is discarded unsent and counted in
  * `tx_errors`. `s_axis` frames must be packed (full `tkeep` but on the last beat, low
  * bytes kept), as everywhere in the NIC; they carry the frame without FCS (the MAC pads
  * to 60 bytes and appends the FCS).
  *
  * '''Receive.''' EthMacRx has no `tready`. Its 64-bit beats are gathered into 256-bit
  * beats in the MAC domain (again: a 64-bit crossing read at 250 MHz could not keep up
  * with 25G) and cross in a 16-deep AxisAsyncFifo, whose output the receive buffer takes
  * every cycle. That crossing never fills, so the MAC side never stalls: a frame that
  * delivers n 64-bit beats occupies at least n + 1 words of the wire (preamble, /T/ and
  * starts in lanes 0/4 only) and yields ceil(n / 4) <= (n + 1) / 2 wide beats, so on
  * average at most one 256-bit beat is written per two MAC cycles (<= 195 M/s at
  * 390.625 MHz, in bursts of at most two) while the core reads one every cycle (250 M/s);
  * the crossing holds no more than the few beats of its pointer synchronisation latency.
  * (This needs the core clock above half the MAC clock.) The receive buffer
  * ([[EthRxFifo]], `rxDepth` 256-bit beats; default the next power of two holding two
  * maximum frames: 1024 x 32 B = 32 KiB for 9018, 15 RAMB18) never back-pressures: it
  * drops frames the MAC marked bad, and when the consumer on `m_axis` back-pressures until
  * it is full it drops whole frames (`rx_fifo_drops`); a frame is never truncated or
  * corrupted. `m_axis` carries good frames only, without FCS, packed, no `tuser`.
  *
  * '''Statistics (exact).''' The MAC's one-cycle pulses (and the transmit buffer's
  * oversize drops) are summed in the MAC domain into a 128-bit record of increments
  * (8-bit event counts, 36-bit byte counts, [[EthPortStatDelta]]). Whenever it is not zero
  * it is pushed into a 4-deep AxisAsyncFifo and cleared (in that cycle's increments kept);
  * while the FIFO is full it keeps summing. The core side takes a record every cycle and
  * adds it to the counters. Every increment thus crosses exactly once, through the
  * project's one crossing primitive, whatever the event rate (a broken link partner can
  * make the receiver give a verdict every MAC cycle, too fast for per-event toggle
  * synchronisers). The record cannot overflow: the core takes one every cycle, so the
  * FIFO stays full for at most its pointer round trip (under ten MAC cycles), and a record
  * sums the pulses of those cycles only: per cycle and field at most 2 events and one
  * frame's bytes (<= 65535), far below 255 and 2^36. `rx_fifo_drops` is counted in the
  * core domain directly.
  *
  * '''Configuration.''' `cfg_ifg` and `cfg_max_frame_len` (core domain, quasi-static) are
  * sent as one 24-bit word through a 4-deep AxisAsyncFifo whenever they differ from the
  * value last sent, and loaded into MAC-domain registers: the MAC sees each setting
  * atomically (never a mix of old and new bits), a few cycles after the change. Until the
  * first word arrives after reset, the registers hold `ifg` and `maxFrameLen`. A change
  * applies from the next frame the MAC starts; a frame under way is judged by the setting
  * it started with (receive limit) or its gap may use either (transmit).
  *
  * '''Reset.''' `reset` (core) and `mac_rst` (MAC) are synchronous to their own clocks and
  * must be asserted together, from one reset source synchronised into each domain, as for
  * every AxisAsyncFifo (each side's pointers only mean something relative to the other's).
  *
  * Cost (Yosys `synth_xilinx -family xcup`, default parameters, MAC included): about
  * 4150 LUT, 54 LUT-RAM cells, 3400 FF, 12 BRAM36 equivalents.
  *
  * CDC summary: the four AxisAsyncFifo are the only paths between the domains (Gray
  * pointers through `GraySync`, registers named `cdc_sync_*`; the RAM read paths need the
  * same `set_max_delay -datapath_only` as those FIFOs everywhere else).
  *
  * @param maxFrameLen the longest frame the buffers are sized for (FCS included) and the
  *   MAC's receive limit until `cfg_max_frame_len` arrives
  * @param ifg the MAC's inter-frame gap until `cfg_ifg` arrives
  * @param txDepthBeats transmit buffer in 256-bit beats (0: one maximum frame + 16 beats, rounded up)
  * @param rxDepthBeats receive buffer in 256-bit beats (0: two maximum frames)
  * @param cdcDepth depth of the two frame crossings (256-bit entries)
  */
class EthPort(
    val maxFrameLen: Int = 9018,
    val ifg: Int = 12,
    txDepthBeats: Int = 0,
    rxDepthBeats: Int = 0,
    val cdcDepth: Int = 16)
    extends Module {
  require(maxFrameLen >= 64 && maxFrameLen <= 65535, s"max frame length must be 64..65535, got $maxFrameLen")
  require(ifg >= 8 && ifg <= 255, s"ifg must be 8..255 bytes, got $ifg")
  private val maxPayload = maxFrameLen - Xgmii.FcsBytes
  private def ceilDiv(a: Int, b: Int): Int = (a + b - 1) / b
  val txDepth: Int = if (txDepthBeats > 0) txDepthBeats else 1 << log2Ceil(ceilDiv(maxPayload, 32) + 16)
  val rxDepth: Int = if (rxDepthBeats > 0) rxDepthBeats else 1 << log2Ceil(2 * ceilDiv(maxPayload, 32))
  require(isPow2(txDepth) && txDepth * 32 >= maxPayload,
    s"transmit buffer of $txDepth x 32 B cannot hold a $maxFrameLen-byte frame")
  require(isPow2(rxDepth) && rxDepth >= 2 * ceilDiv(maxPayload, 32),
    s"receive buffer of $rxDepth x 32 B cannot hold two $maxFrameLen-byte frames")
  require(isPow2(cdcDepth) && cdcDepth >= 8, s"cdcDepth must be a power of two >= 8, got $cdcDepth")

  val mac_clk = IO(Input(Clock()))
  val mac_rst = IO(Input(Bool()))
  val s_axis = IO(Flipped(new AxisIO(AxisParams(32))))
  val m_axis = IO(new AxisIO(AxisParams(32)))
  val xgmii_txd = IO(Output(UInt(64.W)))
  val xgmii_txc = IO(Output(UInt(8.W)))
  val xgmii_rxd = IO(Input(UInt(64.W)))
  val xgmii_rxc = IO(Input(UInt(8.W)))
  val cfg_ifg = IO(Input(UInt(8.W)))
  val cfg_max_frame_len = IO(Input(UInt(16.W)))
  val stats = IO(Output(new EthPortStats))

  private val wideP = AxisParams(32)
  private val wideUserP = AxisParams(32, userWidth = 1)
  private val cfgP = AxisParams(2, userWidth = 8) // tdata: max frame length, tuser: ifg
  private val statP = AxisParams(16) // tdata: EthPortStatDelta

  private def crossing(p: AxisParams, depth: Int, fromMac: Boolean): AxisAsyncFifo = {
    val f = Module(new AxisAsyncFifo(p, depth))
    f.s_clk := (if (fromMac) mac_clk else clock)
    f.s_rst := (if (fromMac) mac_rst else reset.asBool)
    f.m_clk := (if (fromMac) clock else mac_clk)
    f.m_rst := (if (fromMac) reset.asBool else mac_rst)
    f
  }
  private val txCross = crossing(wideP, cdcDepth, fromMac = false)
  private val rxCross = crossing(wideUserP, cdcDepth, fromMac = true)
  private val cfgCross = crossing(cfgP, 4, fromMac = false)
  private val statCross = crossing(statP, 4, fromMac = true)

  // ------------------------------------------------------------------ core domain
  txCross.s_axis <> s_axis

  private val rxFifo = Module(new EthRxFifo(rxDepth))
  rxFifo.s_axis <> rxCross.m_axis
  m_axis <> rxFifo.m_axis

  // Configuration: send the pair whenever it differs from what was sent last.
  private val cfgNow = Cat(cfg_ifg, cfg_max_frame_len)
  private val cfgSent = RegInit(false.B)
  private val cfgLast = Reg(UInt(24.W))
  cfgCross.s_axis.tvalid := !cfgSent || cfgNow =/= cfgLast
  cfgCross.s_axis.tdata := cfg_max_frame_len
  cfgCross.s_axis.tuser.get := cfg_ifg
  cfgCross.s_axis.tkeep := 3.U
  cfgCross.s_axis.tlast := true.B
  when(cfgCross.s_axis.fire) {
    cfgSent := true.B
    cfgLast := cfgNow
  }
  // The framing of the one-beat records that cross for configuration and statistics
  // (constant tkeep, tlast) means nothing at the far side.
  private val unused_stat_framing = WireDefault(Cat(statCross.m_axis.tkeep, statCross.m_axis.tlast))
  dontTouch(unused_stat_framing)

  // Counters: a record of MAC-domain increments every cycle one arrives.
  private val counts = RegInit(0.U.asTypeOf(new EthPortStats))
  statCross.m_axis.tready := true.B
  private val delta = Mux(statCross.m_axis.tvalid, statCross.m_axis.tdata, 0.U).asTypeOf(new EthPortStatDelta)
  counts.tx_frames := counts.tx_frames + delta.tx_frames
  counts.tx_errors := counts.tx_errors + delta.tx_errors
  counts.tx_bytes := counts.tx_bytes + delta.tx_bytes
  counts.rx_frames := counts.rx_frames + delta.rx_frames
  counts.rx_fcs_errors := counts.rx_fcs_errors + delta.rx_fcs_errors
  counts.rx_runts := counts.rx_runts + delta.rx_runts
  counts.rx_oversize := counts.rx_oversize + delta.rx_oversize
  counts.rx_xgmii_errors := counts.rx_xgmii_errors + delta.rx_xgmii_errors
  counts.rx_bytes := counts.rx_bytes + delta.rx_bytes
  counts.rx_fifo_drops := counts.rx_fifo_drops + rxFifo.stat_drop
  stats := counts

  // ------------------------------------------------------------------- MAC domain
  withClockAndReset(mac_clk, mac_rst) {
    val mac = Module(new EthMac(cfgPorts = true, ifg = ifg, maxFrameLen = maxFrameLen))
    xgmii_txd := mac.xgmii_txd
    xgmii_txc := mac.xgmii_txc
    mac.xgmii_rxd := xgmii_rxd
    mac.xgmii_rxc := xgmii_rxc

    // Configuration registers.
    val macIfg = RegInit(ifg.U(8.W))
    val macMaxLen = RegInit(maxFrameLen.U(16.W))
    cfgCross.m_axis.tready := true.B
    when(cfgCross.m_axis.tvalid) {
      macMaxLen := cfgCross.m_axis.tdata
      macIfg := cfgCross.m_axis.tuser.get
    }
    val unused_cfg_framing = WireDefault(Cat(cfgCross.m_axis.tkeep, cfgCross.m_axis.tlast))
    dontTouch(unused_cfg_framing)
    mac.cfg_ifg.get := macIfg
    mac.cfg_max_frame_len.get := macMaxLen

    // Transmit: whole frames only, then 256 -> 64 bits.
    val txFifo = Module(new AxisFifo(wideP, txDepth, packet = true))
    txFifo.s_axis <> txCross.m_axis
    val down = Module(new AxisWidthConverter(wideP, 8))
    down.s_axis <> txFifo.m_axis
    mac.s_axis.tvalid := down.m_axis.tvalid
    mac.s_axis.tdata := down.m_axis.tdata
    mac.s_axis.tkeep := down.m_axis.tkeep
    mac.s_axis.tlast := down.m_axis.tlast
    mac.s_axis.tuser.get := 0.U // never aborted: s_axis has no tuser
    down.m_axis.tready := mac.s_axis.tready

    // Receive: 64 -> 256 bits, into the crossing. Its tready is always high (see above).
    val up = Module(new AxisWidthConverter(Xgmii.axisParams, 32))
    up.s_axis.tvalid := mac.m_axis.tvalid
    up.s_axis.tdata := mac.m_axis.tdata
    up.s_axis.tkeep := mac.m_axis.tkeep
    up.s_axis.tlast := mac.m_axis.tlast
    up.s_axis.tuser.get := mac.m_axis.tuser
    rxCross.s_axis <> up.m_axis

    // Statistics: sum the pulses, push the sums across whenever there are any.
    val inc = Wire(new EthPortStatDelta)
    inc.tx_frames := mac.stat_tx_frame
    inc.tx_errors := mac.stat_tx_error +& txFifo.stat_drop_oversize
    inc.tx_bytes := Mux(mac.stat_tx_frame, mac.stat_tx_bytes, 0.U)
    inc.rx_frames := mac.stat_rx_frame_good
    inc.rx_fcs_errors := mac.stat_rx_fcs_error
    inc.rx_runts := mac.stat_rx_runt
    inc.rx_oversize := mac.stat_rx_oversize
    inc.rx_xgmii_errors := mac.stat_rx_xgmii_error
    inc.rx_bytes := Mux(mac.stat_rx_frame_good, mac.stat_rx_bytes, 0.U)
    val pending = RegInit(0.U.asTypeOf(new EthPortStatDelta))
    val sum = EthPortStatDelta.add(pending, inc)
    statCross.s_axis.tvalid := pending.asUInt.orR || inc.asUInt.orR
    statCross.s_axis.tdata := sum.asUInt
    statCross.s_axis.tkeep := Fill(16, 1.U(1.W))
    statCross.s_axis.tlast := true.B
    pending := Mux(statCross.s_axis.fire, 0.U.asTypeOf(new EthPortStatDelta), sum)
  }
}

object EthPort extends Elaboratable {
  def generate(p: Params): RawModule = new EthPort(
    maxFrameLen = p.int("max_frame_len", 9018),
    ifg = p.int("ifg", 12),
    txDepthBeats = p.int("tx_depth", 0),
    rxDepthBeats = p.int("rx_depth", 0),
    cdcDepth = p.int("cdc_depth", 16)
  )
}
