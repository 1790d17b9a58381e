package offnic.offload

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.axis.{AxisFifo, AxisIO, AxisParams}

/** The per-frame result stream: tvalid/tready/tdata only, one transfer per frame.
  * `tdata` is `{queue, hash[31:0], hash_type[3:0]}` (hash_type in the low bits), padded with
  * zeros at the top to whole bytes (AXI-Stream TDATA is a whole number of bytes).
  */
class RssResultIO(val queueBits: Int) extends Bundle {
  val tvalid = Output(Bool())
  val tready = Input(Bool())
  val tdata = Output(UInt((RssHash.resultBytes(queueBits) * 8).W))
  def fire: Bool = tvalid && tready
}

/** Receive-side scaling: a Toeplitz hash (Microsoft RSS) of each frame's IPv4/IPv6 addresses
  * and TCP/UDP ports, and the receive queue it selects through an indirection table.
  *
  * Frames pass from `s_axis` to `m_axis` unchanged, through a small FIFO (2 cycles). Each
  * frame also yields exactly one result on `m_axis_rss`, in frame order (bad or truncated
  * frames too, so the consumer can pair results with frames by counting):
  * `{queue, hash, hash_type}` with `queue = table[hash mod tableSize]`; a frame that is not
  * hashed ([[RssParser]] lists the rules) has type 0, hash 0 and gets `table[0]`.
  *
  * Pipeline. The parser needs bytes 12 until 82 (`RssParser.HdrEnd`): the first three
  * beats at 32 bytes per beat. They are copied into a header register as they pass; the
  * beat that completes that window (beat 2, or the last beat of a shorter frame) is the
  * frame's "header beat". Counting from the cycle it is accepted (t0), fixed latency:
  *   t1-t2 [[RssParser]] (the header register is read in t1, before the next frame's
  *         first beat can overwrite it: only one beat is accepted per cycle),
  *   t3-t4 [[ToeplitzHash]], t5 indirection table read, result written to the result queue,
  *   t6    result valid on `m_axis_rss` (from the queue's LUT-RAM, not a register).
  * For a 64-byte frame the header beat is its last beat, so the result comes 6 cycles after
  * the frame's last input beat and 4 after its last output beat. Every stage takes a new
  * frame every cycle, so back-to-back frames of any length, runts of one beat included,
  * go through at one beat per cycle.
  *
  * Flow control. The pipeline never stalls: a frame may start (its first beat be accepted)
  * only when the result queue has room for its result (`outstanding` counts results
  * promised and not yet taken), so `s_axis_tready` depends on state only. A consumer may
  * take each result before its frame's data or only after the frame's last beat, without
  * deadlock either way: only a frame's first beat waits for result room, and then every
  * pending result belongs to an earlier frame that is wholly inside (its data can leave);
  * and the data FIFO (5 beats at 32 bytes) holds a whole header window, so a header beat
  * gets in while `m_axis` waits for that frame's result.
  *
  * Configuration: `cfg_key` (first key byte in bits 319:312) and the `cfg_enable_*` bits
  * are sampled for a frame two cycles after its header beat (t2); the indirection table
  * (written through `cfg_indir_*`, read at t5) is a `Mem`: LUT-RAM, not reset. So a change
  * applies to whole frames, from the first frame whose header beat comes after it (frames
  * in the pipeline then may see either value; change them while traffic is stopped to
  * switch at a known frame).
  *
  * Assumes packed frames (full `tkeep` except on the last beat, low bytes first), as every
  * source in the NIC produces: the frame length is counted from `tkeep` on the last beat.
  */
class RssHash(val p: AxisParams, val tableSize: Int = 128, val queueBits: Int = 8) extends Module {
  import RssParser.{HdrEnd, HdrFirst}
  require(tableSize >= 2 && isPow2(tableSize), s"RSS indirection table size must be a power of two >= 2, got $tableSize")
  require(queueBits >= 1 && queueBits <= 32, s"queue number width must be 1..32 bits, got $queueBits")
  require(p.dataBytes >= 2, "RssHash needs at least 2 bytes per beat (the VLAN TPID must arrive in one beat)")

  private val w = p.dataBytes
  /** Beats that hold the header window. */
  private val hdrBeats = (HdrEnd + w - 1) / w
  private val lenBits = log2Ceil(hdrBeats * w + 1)
  private val resultDepth = RssHash.ResultDepth

  val s_axis = IO(Flipped(new AxisIO(p)))
  val m_axis = IO(new AxisIO(p))
  val m_axis_rss = IO(new RssResultIO(queueBits))
  /** Toeplitz key, 40 bytes, key byte 0 in bits 319:312. */
  val cfg_key = IO(Input(UInt(320.W)))
  val cfg_enable_ipv4 = IO(Input(Bool()))
  val cfg_enable_ipv6 = IO(Input(Bool()))
  val cfg_enable_tcp = IO(Input(Bool()))
  val cfg_enable_udp = IO(Input(Bool()))
  /** Indirection table write port: `table[cfg_indir_addr] := cfg_indir_data` when `cfg_indir_wr_en`. */
  val cfg_indir_wr_en = IO(Input(Bool()))
  val cfg_indir_addr = IO(Input(UInt(log2Ceil(tableSize).W)))
  val cfg_indir_data = IO(Input(UInt(queueBits.W)))

  // ---- Frame data: through a FIFO that holds at least the header beats (see "Flow control").
  private val data = Module(new AxisFifo(p, depth = math.max(2, 1 << log2Ceil(hdrBeats))))
  m_axis <> data.m_axis

  /** Results promised (a frame started) and not yet taken from m_axis_rss. */
  private val outstanding = RegInit(0.U(log2Ceil(resultDepth + 1).W))
  /** Beat index within the frame, saturating at hdrBeats ("past the header window"). */
  private val beatIdx = RegInit(0.U(log2Ceil(hdrBeats + 1).W))
  private val frameStart = beatIdx === 0.U
  private val mayTake = !frameStart || outstanding =/= resultDepth.U

  data.s_axis.tvalid := s_axis.tvalid && mayTake
  data.s_axis.setBeat(s_axis.beat)
  s_axis.tready := data.s_axis.tready && mayTake
  private val fire = s_axis.fire

  when(fire) {
    beatIdx := Mux(s_axis.tlast, 0.U, Mux(beatIdx === hdrBeats.U, beatIdx, beatIdx + 1.U))
  }

  // ---- Header capture: byte k of the frame arrives in beat k / w, lane k % w.
  private val hdr = Reg(Vec(HdrEnd - HdrFirst, UInt(8.W)))
  private val lane = s_axis.tdata.asTypeOf(Vec(w, UInt(8.W)))
  for (k <- HdrFirst until HdrEnd) {
    when(fire && beatIdx === (k / w).U) { hdr(k - HdrFirst) := lane(k % w) }
  }
  private val vlan = Reg(Bool())
  when(fire && beatIdx === (13 / w).U) {
    vlan := Cat(lane(12 % w), lane(13 % w)) === RssParser.EtherVlan.U
  }

  private val headerBeat = fire && beatIdx < hdrBeats.U && (s_axis.tlast || beatIdx === (hdrBeats - 1).U)
  private val beatBytes = Mux(s_axis.tlast, PopCount(s_axis.tkeep), w.U)
  private val hdrValid = RegNext(headerBeat, false.B)
  // At most hdrBeats * w, which lenBits holds.
  private val hdrLen = RegEnable(((beatIdx * w.U) +& beatBytes)(lenBits - 1, 0), headerBeat)

  // ---- Parse (t1, t2), hash (t3, t4).
  private val parser = Module(new RssParser(lenBits))
  parser.in.valid := hdrValid
  parser.in.bits.bytes := hdr
  parser.in.bits.len := hdrLen
  parser.in.bits.vlan := vlan
  parser.enable.ipv4 := cfg_enable_ipv4
  parser.enable.ipv6 := cfg_enable_ipv6
  parser.enable.tcp := cfg_enable_tcp
  parser.enable.udp := cfg_enable_udp

  private val toeplitz = Module(new ToeplitzHash(RssParser.TupleBytes * 8, RssHashType.Width))
  toeplitz.in.valid := parser.out.valid
  toeplitz.in.bits.data := parser.out.bits.data
  toeplitz.in.bits.tag := parser.out.bits.hashType
  // Sampled in t2, alongside the tuple (the hash's first stage uses both in t3). The key's
  // last bit never reaches a 36-byte input's hash (ToeplitzHash.keyBits); a wire named
  // unused_* tells Verilator's lint so (its default --unused-regexp), no waiver needed.
  toeplitz.key := RegNext(cfg_key(319, 320 - toeplitz.keyBits))
  private val unused_key_bits = WireDefault(cfg_key(319 - toeplitz.keyBits, 0))
  dontTouch(unused_key_bits)

  // ---- Indirection table (t5) and the result queue.
  // Named "ram" so that firtool's wrapper module is ram_*, the name the lint waiver for a
  // Mem's unused read clock (hw/lint/verilator.vlt) covers.
  private val table = Mem(tableSize, UInt(queueBits.W)).suggestName("ram")
  when(cfg_indir_wr_en) { table.write(cfg_indir_addr, cfg_indir_data) }
  private val hashOut = toeplitz.out.bits
  private val queue = table.read(hashOut.hash(log2Ceil(tableSize) - 1, 0))

  private val results = Module(new Queue(UInt((queueBits + 32 + RssHashType.Width).W), resultDepth))
  results.io.enq.valid := toeplitz.out.valid // always has room: `outstanding` reserved it
  results.io.enq.bits := Cat(queue, hashOut.hash, hashOut.tag)
  m_axis_rss.tvalid := results.io.deq.valid
  m_axis_rss.tdata := results.io.deq.bits
  results.io.deq.ready := m_axis_rss.tready

  outstanding := outstanding + (fire && frameStart).asUInt - m_axis_rss.fire.asUInt
}

object RssHash extends Elaboratable {
  /** Result queue entries: more than the frames the pipeline can hold between a frame's first
    * beat and its result (7 at one frame per cycle), so it never throttles a ready consumer. */
  val ResultDepth = 16

  def resultBytes(queueBits: Int): Int = (queueBits + 32 + RssHashType.Width + 7) / 8

  /** `bytes` (default 32), `user`, `id`, `dest`: the stream; `table_size` (default 128):
    * indirection table entries, a power of two; `queue_bits` (default 8): queue number width. */
  def generate(p: Params): RawModule = new RssHash(
    AxisParams.from(p, bytes = 32, user = 1),
    tableSize = p.int("table_size", 128),
    queueBits = p.int("queue_bits", 8)
  )
}
