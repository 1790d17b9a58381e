package offnic.nic

import chisel3._
import chisel3.util._
import offnic.pcie.{DmaDesc, DmaStatus}

/** What the host programmed for one descriptor queue (from its register record). */
class QueueCfg extends Bundle {
  val base = UInt(64.W)
  val logSize = UInt(4.W)
  val enable = Bool()
  /** producer index, written by the host (the doorbell) */
  val prod = UInt(16.W)
}

/** Descriptors taken by an engine from a queue's on-chip cache. */
class DescConsume(queueBits: Int) extends Bundle {
  val queue = UInt(queueBits.W)
  val count = UInt(8.W)
}

/** Keeps up to `depth` descriptors per queue on chip, fetched from the host rings by DMA
  * reads into the descriptor RAM (queue q's descriptor of ring index i sits at byte
  * `ramBase + (q * depth + i mod depth) * 16`).
  *
  * Per queue: `cons` (taken by the engine, what the host sees as the NIC's consumer
  * index) <= `fetched` (in the cache) <= the host's `prod`. One fetch per queue is in
  * flight at a time; it reads as many descriptors as the host has posted and the cache has
  * room for, without crossing the ring's end or the cache's wrap. Queues take turns.
  *
  * Enable and disable pause and resume a queue: nothing is lost, `cons` stays. When a
  * queue is enabled its cache is refilled from `cons` (the host may have moved the ring
  * meanwhile); a fetch still in flight then is ignored when it returns. The engine says
  * which queue it is reading (`busy`), and the refill waits until it has finished with it.
  *
  * A fetch the host answers with an error sets the queue's `error` (the engine stops
  * serving it) until it is enabled again; `stat_error` pulses.
  */
class DescFetch(val n: Int, val depth: Int, val ramBase: Int, val tagBase: Int, val ramAddrBits: Int) extends Module {
  require(isPow2(n) && n <= 32 && isPow2(depth))
  private val qb = log2Ceil(n)
  private val db = log2Ceil(depth)
  private val cntW = db + 1

  val cfg = IO(Input(Vec(n, new QueueCfg)))
  val m_rd_desc = IO(Decoupled(new DmaDesc(ramAddrBits)))
  val s_rd_status = IO(Flipped(Valid(new DmaStatus)))
  val consume = IO(Flipped(Valid(new DescConsume(qb))))
  val busy = IO(Input(Valid(UInt(qb.W))))
  val cons = IO(Output(Vec(n, UInt(16.W))))
  /** descriptors in the cache, ready to take */
  val avail = IO(Output(Vec(n, UInt(cntW.W))))
  val error = IO(Output(Vec(n, Bool())))
  val fetching = IO(Output(Vec(n, Bool())))
  val stat_error = IO(Output(Bool()))

  private val fetched = RegInit(VecInit(Seq.fill(n)(0.U(16.W))))
  private val consR = RegInit(VecInit(Seq.fill(n)(0.U(16.W))))
  private val fetchEnd = Reg(Vec(n, UInt(16.W)))
  private val inflight = RegInit(VecInit(Seq.fill(n)(false.B)))
  private val stale = RegInit(VecInit(Seq.fill(n)(false.B)))
  private val err = RegInit(VecInit(Seq.fill(n)(false.B)))
  private val reinit = RegInit(VecInit(Seq.fill(n)(false.B)))
  /** A queue whose state changed last cycle: `want` (one cycle old) is not trusted yet. */
  private val justDone = RegInit(VecInit(Seq.fill(n)(false.B)))
  private val wasEnabled = RegNext(VecInit(cfg.map(_.enable)), VecInit(Seq.fill(n)(false.B)))

  // ---- How many descriptors each queue could fetch now (registered: one cycle old, and
  // masked with the current in-flight flag so a queue is never asked twice).
  private val want = Reg(Vec(n, UInt(cntW.W)))
  for (q <- 0 until n) {
    val size = Descriptor.ringSize(cfg(q).logSize)
    val used = fetched(q) - consR(q)
    val posted = cfg(q).prod - fetched(q)
    val room = depth.U - used(cntW - 1, 0)
    val toCacheWrap = depth.U - fetched(q)(db - 1, 0)
    val toRingEnd = size - Descriptor.ringSlot(fetched(q), cfg(q).logSize)
    // posted can only be trusted up to the ring size: a larger value is a host bug.
    val inRing = size - used
    val k0 = Mux(posted < room, posted, room.pad(16))
    val k1 = Mux(k0 < toCacheWrap, k0, toCacheWrap.pad(16))
    val k2 = Mux(k1 < toRingEnd, k1, toRingEnd(15, 0))
    val k3 = Mux(k2 < inRing, k2, inRing(15, 0))
    want(q) := Mux(cfg(q).enable && !err(q) && !reinit(q) && cfg(q).logSize =/= 0.U, k3(cntW - 1, 0), 0.U)
  }

  // ---- Issue: round robin over queues with something to fetch.
  private val out = RegInit(false.B)
  private val outBits = Reg(new DmaDesc(ramAddrBits))
  m_rd_desc.valid := out
  m_rd_desc.bits := outBits
  when(m_rd_desc.fire) { out := false.B }

  private val next = RegInit(0.U(qb.W))
  private val cand = VecInit((0 until n).map(q => want(q) =/= 0.U && !inflight(q) && !justDone(q)))
  private val order = (0 until n).map(i => (next + i.U(qb.W))(qb - 1, 0))
  private val any = cand.asUInt.orR
  private val pick = PriorityMux(order.map(i => cand(i)), order)
  private val canIssue = !out || m_rd_desc.ready
  when(canIssue && any) {
    val ringIdx = Descriptor.ringSlot(fetched(pick), cfg(pick).logSize)
    out := true.B
    outBits.host_addr := cfg(pick).base + (ringIdx << 4)
    outBits.ram_addr := (ramBase.U + ((pick * depth.U) + fetched(pick)(db - 1, 0)) * 16.U)(ramAddrBits - 1, 0)
    outBits.len := want(pick) << 4
    outBits.tag := (tagBase.U + pick)(7, 0)
    inflight(pick) := true.B
    fetchEnd(pick) := fetched(pick) + want(pick)
    next := pick + 1.U
  }

  // ---- Statuses, enable edges, consumption.
  stat_error := false.B
  for (q <- 0 until n) {
    val hit = s_rd_status.valid && s_rd_status.bits.tag === (tagBase + q).U
    when(hit) {
      inflight(q) := false.B
      stale(q) := false.B
      when(!stale(q)) {
        when(s_rd_status.bits.error =/= 0.U) { err(q) := true.B }.otherwise { fetched(q) := fetchEnd(q) }
      }
    }
    when(hit && !stale(q) && s_rd_status.bits.error =/= 0.U) { stat_error := true.B }
    when(cfg(q).enable && !wasEnabled(q)) { reinit(q) := true.B }
    justDone(q) := hit || (reinit(q) && !(busy.valid && busy.bits === q.U))
    val held = busy.valid && busy.bits === q.U
    when(reinit(q) && !held) {
      reinit(q) := false.B
      fetched(q) := consR(q)
      err(q) := false.B
      when(inflight(q) && !hit) { stale(q) := true.B }
    }
    when(consume.valid && consume.bits.queue === q.U) { consR(q) := consR(q) + consume.bits.count }
    cons(q) := consR(q)
    avail(q) := Mux(reinit(q), 0.U, (fetched(q) - consR(q))(cntW - 1, 0))
    error(q) := err(q)
    fetching(q) := inflight(q)
  }
}

object DescFetch extends offnic.Elaboratable {
  /** For the block bench: `queues` (8), `depth` (32), `ram_base` (0x20000), `tag_base`
    * (0x80), RAM address bits 18. */
  def generate(p: offnic.Params): RawModule = new DescFetch(
    p.int("queues", 8), p.int("depth", 32), p.int("ram_base", NicParams.DescRamBase), p.int("tag_base", 0x80),
    NicParams.RamAddrBits)
}
