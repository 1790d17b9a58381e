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

/** A TX or RX engine's side of its queues: their registers, the descriptor caches
  * (DescFetch) and the descriptor RAM's read port, the completion queues' room; and what the
  * engine gives back (descriptors taken, the queue it is reading, completion reservations). */
class QueueSide(val n: Int, val p: NicParams) extends Bundle {
  val cfg = Input(Vec(n, new QueueCfg))
  val avail = Input(Vec(n, UInt((log2Ceil(p.descCache) + 1).W)))
  val error = Input(Vec(n, Bool()))
  val cons = Input(Vec(n, UInt(16.W)))
  val consume = Output(Valid(new DescConsume(log2Ceil(n))))
  val busy = Output(Valid(UInt(log2Ceil(n).W)))
  val desc_rd = new offnic.pcie.DmaRamRead(p.descRamAddrBits)
  val cq_room = Input(Vec(n, Bool()))
  val reserve = Output(Valid(UInt(log2Ceil(p.cqs).W)))
}

object QueueSide {
  /** Joins an engine's side to its descriptor fetcher, descriptor RAM and completion queues. */
  def connect(side: QueueSide, fetch: DescFetch, ram: offnic.pcie.DmaRam, room: Seq[Bool], reserve: Valid[UInt]): Unit = {
    side.cfg := fetch.cfg
    side.avail := fetch.avail
    side.error := fetch.error
    side.cons := fetch.cons
    fetch.consume := side.consume
    fetch.busy := side.busy
    ram.rd <> side.desc_rd
    side.cq_room := VecInit(room)
    reserve := side.reserve
  }
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
  * index) <= `fetched` (in the cache) <= `issued` (asked for) <= the host's `prod`. Up to
  * `slots` fetches per queue may be in flight (DMA tag `tagBase + slots * q + slot`), each
  * reading up to `maxBurst` descriptors without crossing the ring's end or the cache's
  * wrap; they may return in any order, and `fetched` advances in issue order. A queue with
  * a fetch in flight asks again only for `minBurst` or more (or what is left before a
  * wrap): a round trip costs the same for 1 descriptor or 32. With a host read latency of
  * about 1 us, this keeps a queue supplied well above the 37 M descriptors/s of 64-byte
  * frames at 25G. Queues take turns.
  *
  * Enable and disable pause and resume a queue: nothing is lost, `cons` stays. When a
  * queue is enabled its cache is refilled from `cons` (the host may have moved the ring
  * meanwhile): from the cycle enable rises the queue offers nothing and asks for nothing
  * until the refill, fetches still in flight are ignored when they return (their slots stay
  * taken until then, so tags are never reused early). The engine says which queue it is
  * reading (`busy`), and the refill waits until it has finished with it.
  *
  * A fetch the host answers with an error sets the queue's `error` (the engine stops
  * serving it, and the queue's other fetches are ignored) until it is enabled again;
  * `stat_error` pulses.
  */
class DescFetch(val n: Int, val depth: Int, val ramBase: Int, val tagBase: Int, val ramAddrBits: Int,
                val maxBurst: Int = 32, val slots: Int = 4, val minBurst: Int = 8) extends Module {
  require(isPow2(n) && n <= 16 && isPow2(depth) && isPow2(maxBurst) && maxBurst <= depth)
  require(isPow2(slots) && slots >= 2 && minBurst >= 1 && minBurst <= maxBurst)
  require(tagBase % 64 == 0 && n * slots <= 64, "tags tagBase + slots*q + slot must fit in 6 bits")
  private val qb = log2Ceil(n)
  private val db = log2Ceil(depth)
  private val cntW = db + 1
  private val sb = log2Ceil(slots)

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

  private def zeros(w: Int) = RegInit(VecInit(Seq.fill(n)(0.U(w.W))))
  private def falses = RegInit(VecInit(Seq.fill(n)(false.B)))
  private def slotFlags = RegInit(VecInit(Seq.fill(n)(VecInit(Seq.fill(slots)(false.B)))))
  // `fetched` and the fetch ends only ever matter relative to `cons` (at most `depth`
  // apart), so they keep the low cntW bits of the ring index.
  private val fetched = zeros(cntW)
  private val issued = zeros(16)
  private val consR = zeros(16)
  private val err = falses
  private val reinit = falses
  /** Per queue, the fetches in flight are a FIFO of slots: issued at `wr`, retired in
    * issue order at `rd` once their status is in (`done`). A `stale` fetch (from before a
    * refill or an error) is retired without effect. */
  private val sEnd = Reg(Vec(n, Vec(slots, UInt(cntW.W))))
  private val sDone = slotFlags
  private val sStale = slotFlags
  private val wr = zeros(sb + 1)
  private val rd = zeros(sb + 1)
  private val wasEnabled = RegNext(VecInit(cfg.map(_.enable)), VecInit(Seq.fill(n)(false.B)))
  private val enEdge = VecInit((0 until n).map(q => cfg(q).enable && !wasEnabled(q)))
  /** A queue whose `issued` moved or that was refilled last cycle: its `want` (one cycle
    * old) is not trusted yet. */
  private val changed = falses
  private def inFlight(q: Int): UInt = wr(q) - rd(q)

  // ---- How many descriptors each queue could ask for now (registered for timing). Small
  // fetches waste a slot's round trip, so with a fetch already in flight a queue waits
  // until `minBurst` can go in one.
  private val want = Reg(Vec(n, UInt(cntW.W)))
  for (q <- 0 until n) {
    val size = Descriptor.ringSize(cfg(q).logSize)
    val used = issued(q) - consR(q) // cached and in flight
    val posted = cfg(q).prod - issued(q)
    val room = depth.U - used(cntW - 1, 0)
    val toCacheWrap = depth.U - issued(q)(db - 1, 0)
    val toRingEnd = size - Descriptor.ringSlot(issued(q), cfg(q).logSize)
    // posted can only be trusted up to the ring size: a larger value is a host bug.
    val inRing = size - used
    val k0 = Mux(posted < room, posted, room.pad(16))
    val k1 = Mux(k0 < toCacheWrap, k0, toCacheWrap.pad(16))
    val k2 = Mux(k1 < toRingEnd, k1, toRingEnd(15, 0))
    val k3 = Mux(k2 < inRing, k2, inRing(15, 0))
    val k4 = Mux(k3 < maxBurst.U, k3, maxBurst.U)
    // The cache wrap or the ring end cut it short: as much as there is is all there can be.
    val cut = k3 < posted && (k1 === toCacheWrap || k2 === toRingEnd(15, 0))
    val worth = inFlight(q) === 0.U || k4 >= minBurst.U || cut
    want(q) := Mux(cfg(q).enable && !err(q) && !reinit(q) && cfg(q).logSize =/= 0.U && worth, k4(cntW - 1, 0), 0.U)
  }

  // ---- Issue: round robin over queues with something to fetch and a free slot.
  private val out = RegInit(false.B)
  private val outBits = Reg(new DmaDesc(ramAddrBits))
  m_rd_desc.valid := out
  m_rd_desc.bits := outBits
  when(m_rd_desc.fire) { out := false.B }

  // Statuses (decoded here because a failing fetch stops its queue in the same cycle).
  private val stTag = s_rd_status.bits.tag
  private val stOk = s_rd_status.bits.error === 0.U
  private val stQ = stTag(qb + sb - 1, sb)
  private val stS = stTag(sb - 1, 0)
  private val stMine = s_rd_status.valid && stTag(7, qb + sb) === (tagBase >> (qb + sb)).U
  private val failing = VecInit((0 until n).map(q => stMine && stQ === q.U && !stOk && !sStale(q)(stS)))
  /** Fetches from before a refill or an error still in flight (they are the oldest): their
    * data may still land in the cache slots a new fetch would use, so none is issued until
    * they are back. */
  private val staleInFlight = VecInit((0 until n).map(q => inFlight(q) =/= 0.U && sStale(q)(rd(q)(sb - 1, 0))))

  private val next = RegInit(0.U(qb.W))
  private val cand = VecInit((0 until n).map { q =>
    want(q) =/= 0.U && inFlight(q) =/= slots.U && !changed(q) && !enEdge(q) && cfg(q).enable &&
      !err(q) && !failing(q) && !staleInFlight(q)
  })
  private val order = (0 until n).map(i => (next + i.U(qb.W))(qb - 1, 0))
  private val any = cand.asUInt.orR
  private val pick = PriorityMux(order.map(i => cand(i)), order)
  private val wrSlot = VecInit(wr.map(_(sb - 1, 0)))
  private val pickSlot = wrSlot(pick)
  private val issue = (!out || m_rd_desc.ready) && any
  when(issue) {
    val ringIdx = Descriptor.ringSlot(issued(pick), cfg(pick).logSize)
    out := true.B
    outBits.host_addr := cfg(pick).base + (ringIdx << 4)
    outBits.ram_addr := (ramBase.U + ((pick * depth.U) + issued(pick)(db - 1, 0)) * 16.U).pad(ramAddrBits)
    outBits.len := want(pick) << 4
    outBits.tag := (tagBase.U + Cat(pick, pickSlot))(7, 0)
    next := pick + 1.U
  }

  // ---- Statuses, retirement in issue order, enable edges, consumption.
  stat_error := false.B
  for (q <- 0 until n) {
    val mine = issue && pick === q.U
    val hit = stMine && stQ === q.U
    val held = busy.valid && busy.bits === q.U
    val refill = reinit(q) && !held
    changed(q) := mine || refill || enEdge(q) || failing(q)

    // A status marks its fetch done; a failed live one puts the queue in error, which
    // makes every fetch of the queue stale.
    when(hit) { sDone(q)(stS) := true.B }
    when(failing(q)) {
      err(q) := true.B
      stat_error := true.B
      for (s <- 0 until slots) { sStale(q)(s) := true.B }
    }

    // Retire the oldest fetch once its status is in.
    val head = rd(q)(sb - 1, 0)
    val occupied = inFlight(q) =/= 0.U
    val retire = occupied && sDone(q)(head)
    when(retire) {
      rd(q) := rd(q) + 1.U
      sDone(q)(head) := false.B
      when(!sStale(q)(head) && !err(q) && !failing(q)) { fetched(q) := sEnd(q)(head) }
    }

    when(mine) {
      sDone(q)(pickSlot) := false.B
      sStale(q)(pickSlot) := false.B
      sEnd(q)(pickSlot) := (issued(q) + want(q))(cntW - 1, 0)
      issued(q) := issued(q) + want(q)
      wr(q) := wr(q) + 1.U
    }

    when(enEdge(q)) { reinit(q) := true.B }
    when(refill) {
      reinit(q) := false.B
      fetched(q) := consR(q)(cntW - 1, 0)
      issued(q) := consR(q)
      err(q) := false.B
      // Fetches in flight (and any not yet retired) are no longer wanted; their slots
      // stay taken until they return, so a tag is never reused early.
      for (s <- 0 until slots) { sStale(q)(s) := true.B }
    }
    when(consume.valid && consume.bits.queue === q.U) { consR(q) := consR(q) + consume.bits.count }
    cons(q) := consR(q)
    avail(q) := Mux(reinit(q) || enEdge(q), 0.U, fetched(q) - consR(q)(cntW - 1, 0))
    error(q) := err(q)
    fetching(q) := occupied
  }
}

object DescFetch extends offnic.Elaboratable {
  /** For the block bench: `queues` (8), `depth` (64), `ram_base` (0x80000), `tag_base`
    * (0x80), `max_burst` (32), `slots` (4), `min_burst` (8), RAM address bits 18. */
  def generate(p: offnic.Params): RawModule = new DescFetch(
    p.int("queues", 8), p.int("depth", 64), p.int("ram_base", NicParams.DescRamBase), p.int("tag_base", 0x80),
    NicParams.RamAddrBits, p.int("max_burst", 32), p.int("slots", 4), p.int("min_burst", 8))
}
