package offnic.toe

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}
import offnic.offload.Toeplitz
import offnic.util.IdPool

/** A connection's key: local IP, remote IP, local port, remote port (the receive side's
  * destination and source), 96 bits with the local IP in the most significant bits. */
object ConnKey {
  val Bits = 96
  def apply(localIp: UInt, remoteIp: UInt, localPort: UInt, remotePort: UInt): UInt =
    Cat(localIp(31, 0), remoteIp(31, 0), localPort(15, 0), remotePort(15, 0))
}

class ConnLookupReq(val tagBits: Int) extends Bundle {
  val key = UInt(ConnKey.Bits.W)
  /** Travels with the lookup (the caller's slot for the packet). */
  val tag = UInt(tagBits.W)
}

class ConnLookupResp(val idBits: Int, val tagBits: Int) extends Bundle {
  val hit = Bool()
  /** The connection's id (0 on a miss). */
  val id = UInt(idBits.W)
  val tag = UInt(tagBits.W)
}

/** Outcome of a table command (ConnRsp.status). */
object ConnStatus {
  val Ok = 0
  /** Insert: the key is already in the table (its id in the response). */
  val Exists = 1
  /** Insert: no place found within `maxKicks` moves; the table is unchanged. */
  val Full = 2
  /** Insert: every connection id is in use. */
  val NoId = 3
  /** Delete: the key is not in the table. */
  val Missing = 4
}

class ConnCmd extends Bundle {
  val delete = Bool() // else insert
  val key = UInt(ConnKey.Bits.W)
}

class ConnRsp(val idBits: Int) extends Bundle {
  val status = UInt(3.W)
  /** Insert Ok: the new connection's id; Exists: the resident's; Delete Ok: the freed id. */
  val id = UInt(idBits.W)
  /** Residents moved to place an insert (or tried, for Full). */
  val kicks = UInt(8.W)
}

/** Counters of [[ConnTable]], in register order. */
object ConnStat extends Enumeration {
  val Lookups, Hits, Inserts, InsertExists, InsertFull, InsertNoId, Deletes, DeleteMissing, Kicks = Value
}

/** The connection table of the TCP offload engine: the full 4-tuple to a connection id,
  * one lookup per clock cycle.
  *
  * Layout: two tables of `buckets` buckets of 4 slots (valid, key, id); a key may live in
  * bucket h0(key) of table 0 or bucket h1(key) of table 1, where h0 and h1 are two bit
  * fields of one Toeplitz hash of the key under a programmable secret (a remote cannot
  * pick ports that collide without knowing it). A lookup reads both buckets at once (one
  * block-RAM port each) and compares eight keys: a hit or miss for every key, every
  * cycle, result four cycles later.
  *
  * Inserts and deletes are commands, carried out by a state machine that owns the memory
  * while it works (lookups pause and the lookups in flight finish first, so no lookup ever
  * sees a half-moved key). An insert goes to the emptier of its two buckets; when both are
  * full it moves a resident to the resident's other bucket (cuckoo hashing, a random walk
  * of at most `maxKicks` moves, the victim way from an LFSR); a walk that finds no room is
  * undone move by move, so a failed insert leaves the table exactly as it was. Two choices
  * of four slots with a 64-move walk fill to about 0.94 of the slots before the first
  * failure (docs/toe.md); without moves it would be well under 0.85.
  *
  * Connection ids come from an [[IdPool]] (`connections` of them); with `buckets * 8`
  * slots at least `connections`/0.85, every id can always be placed.
  *
  * Memory: 8 * buckets slots of 1 + 96 + log2(connections) bits in block RAM (each table
  * one word of 4 slots per bucket), plus the id pool's `connections` words.
  *
  * Fairness: a command waits for at most 16 lookups once it is pending, and a command's
  * work (typically 8 cycles, a few hundred in the worst walk) pauses lookups.
  */
class ConnTable(val connections: Int = 4096, val buckets: Int = 1024, val maxKicks: Int = 64,
                val tagBits: Int = 8) extends Module {
  require(isPow2(connections) && connections >= 8, "connections: a power of two >= 8")
  require(isPow2(buckets) && buckets >= 2 && 2 * log2Ceil(buckets) <= 32, "buckets: a power of two, 2 .. 65536")
  require(maxKicks >= 1 && maxKicks <= 255)
  private val ways = 4
  private val idBits = log2Ceil(connections)
  private val bb = log2Ceil(buckets)
  /** The first `hashKeyBits` bits of the 127-bit secret are all a table of this size uses. */
  val hashKeyBits: Int = ConnKey.Bits + 2 * bb - 1

  val lookup_in = IO(Flipped(Decoupled(new ConnLookupReq(tagBits))))
  val lookup_out = IO(Decoupled(new ConnLookupResp(idBits, tagBits)))
  val cmd = IO(Flipped(Decoupled(new ConnCmd)))
  val rsp = IO(Decoupled(new ConnRsp(idBits)))
  /** Toeplitz key (first key bit in the MSB): the top `hashKeyBits` bits of the 127-bit
    * secret; held steady while connections are installed. */
  val cfg_hash_key = IO(Input(UInt(hashKeyBits.W)))
  val counters = IO(Output(Vec(ConnStat.maxId, UInt(32.W))))
  val status = IO(Output(new Bundle {
    val ready = Bool() // memories initialised after reset
    val entries = UInt((idBits + 1).W)
    val freeIds = UInt((idBits + 1).W)
  }))

  class Slot extends Bundle {
    val valid = Bool()
    val key = UInt(ConnKey.Bits.W)
    val id = UInt(idBits.W)
  }
  private val tables = Seq.fill(2)(SyncReadMem(buckets, Vec(ways, new Slot)))
  private val pool = Module(new IdPool(connections))
  pool.alloc := false.B
  pool.free.valid := false.B
  pool.free.bits := DontCare

  // ---- Counters
  private val stats = RegInit(VecInit(Seq.fill(ConnStat.maxId)(0.U(32.W))))
  private val statPulse = WireDefault(VecInit(Seq.fill(ConnStat.maxId)(false.B)))
  for (i <- 0 until ConnStat.maxId) when(statPulse(i)) { stats(i) := stats(i) + 1.U }
  counters := stats
  private def count(s: ConnStat.Value): Unit = statPulse(s.id) := true.B
  private val entries = RegInit(0.U((idBits + 1).W))

  // ---- The state machine's states (declared here: the lookup path pauses on them)
  private object S extends ChiselEnum {
    val Init, Idle, Drain, Hash, Read, Latch, Decide, Kick, KHash, KRead, KDecide, UndoRead, UndoFix, Respond = Value
  }
  private val st = RegInit(S.Init)
  private val fKey = Reg(UInt(ConnKey.Bits.W))
  private val fDelete = Reg(Bool())
  private val home = Reg(new Slot) // the key being placed (or, in a walk, the one displaced)

  // ---- The hash, shared: lookups in stage 1, the state machine while it owns the table.
  private val s1 = RegInit(false.B)
  private val s1Key = Reg(UInt(ConnKey.Bits.W))
  private val s1Tag = Reg(UInt(tagBits.W))
  private val hashIn = Mux(st === S.KHash, home.key, Mux(st === S.Hash, fKey, s1Key))
  private val hash = Toeplitz.window(hashIn, cfg_hash_key, 2 * bb)
  private def bucketOf(t: Int): UInt = hash((t + 1) * bb - 1, t * bb)

  // ---- Memory ports: one read and one write per table.
  private val rdEn = Wire(Vec(2, Bool()))
  private val rdAddr = Wire(Vec(2, UInt(bb.W)))
  private val rd = VecInit((0 until 2).map(t => tables(t).read(rdAddr(t), rdEn(t))))
  private val wrEn = WireDefault(VecInit(Seq.fill(2)(false.B)))
  // Every write changes one slot (or, clearing after reset, all four): a masked write of
  // one slot's bits, so the write data is a 109-bit mux, not a whole bucket's.
  private val wrAddr = Wire(Vec(2, UInt(bb.W)))
  private val wrData = Wire(Vec(2, new Slot))
  private val wrMask = Wire(Vec(2, UInt(ways.W)))
  wrAddr := DontCare
  wrData := DontCare
  wrMask := DontCare
  for (t <- 0 until 2) when(wrEn(t)) {
    tables(t).write(wrAddr(t), VecInit(Seq.fill(ways)(wrData(t))), wrMask(t).asBools)
  }
  private def write(t: UInt, addr: UInt, way: UInt, slot: Slot): Unit = {
    for (i <- 0 until 2) when(t === i.U) {
      wrEn(i) := true.B
      wrAddr(i) := addr
      wrData(i) := slot
      wrMask(i) := UIntToOH(way, ways)
    }
  }

  // ---- Lookups: s1 hash -> s2 read -> s3 compare -> s4 result into the output queue.
  private val outDepth = 6
  private val outQ = Module(new Queue(new ConnLookupResp(idBits, tagBits), outDepth))
  lookup_out <> outQ.io.deq
  private val s2 = RegInit(false.B)
  private val s2Key = Reg(UInt(ConnKey.Bits.W))
  private val s2Tag = Reg(UInt(tagBits.W))
  private val s2Bucket = Reg(Vec(2, UInt(bb.W)))
  private val s3 = RegInit(false.B)
  private val s3Key = Reg(UInt(ConnKey.Bits.W))
  private val s3Tag = Reg(UInt(tagBits.W))
  private val s4 = RegInit(false.B)
  private val s4Tag = Reg(UInt(tagBits.W))
  private val s4Match = Reg(Vec(2 * ways, Bool()))
  private val s4Ids = Reg(Vec(2 * ways, UInt(idBits.W)))
  private val inFlight = s1.asUInt +& s2.asUInt +& s3.asUInt +& s4.asUInt
  private val lookupsSinceCmd = RegInit(0.U(5.W))
  private val cmdGo = st === S.Idle && cmd.valid && (!lookup_in.valid || lookupsSinceCmd >= 16.U)
  lookup_in.ready := st === S.Idle && !cmdGo && (outQ.io.count +& inFlight) < outDepth.U
  when(lookup_in.fire) {
    s1Key := lookup_in.bits.key
    s1Tag := lookup_in.bits.tag
    when(lookupsSinceCmd =/= 16.U) { lookupsSinceCmd := lookupsSinceCmd + 1.U }
  }
  s1 := lookup_in.fire
  s2 := s1
  when(s1) {
    s2Key := s1Key
    s2Tag := s1Tag
    for (t <- 0 until 2) s2Bucket(t) := bucketOf(t)
  }
  s3 := s2
  when(s2) {
    s3Key := s2Key
    s3Tag := s2Tag
  }
  s4 := s3
  when(s3) {
    s4Tag := s3Tag
    for (t <- 0 until 2; w <- 0 until ways) {
      s4Match(t * ways + w) := rd(t)(w).valid && rd(t)(w).key === s3Key
      s4Ids(t * ways + w) := rd(t)(w).id
    }
  }
  outQ.io.enq.valid := s4
  outQ.io.enq.bits.hit := s4Match.asUInt.orR
  outQ.io.enq.bits.id := Mux1H(s4Match, s4Ids) // a key is in at most one slot
  outQ.io.enq.bits.tag := s4Tag
  when(s4) {
    count(ConnStat.Lookups)
    when(s4Match.asUInt.orR) { count(ConnStat.Hits) }
  }

  // ---- The state machine: init, insert, delete.
  private val fBucket = Reg(Vec(2, UInt(bb.W))) // the command key's buckets
  private val bk = Reg(Vec(2, Vec(ways, new Slot))) // buckets read by the state machine (registered: timing)
  private val afterLatch = Reg(S())
  private val curT = Reg(UInt(1.W))
  private val curBucket = Reg(UInt(bb.W))
  private val kicks = Reg(UInt(8.W))
  private val lfsr = RegInit(0xace1.U(16.W))
  private val path = Mem(maxKicks, UInt((1 + bb + 2).W)).suggestName("conn_path") // (table, bucket, way) per move
  private val pathLen = RegInit(0.U(8.W))
  private val undoT = Reg(UInt(1.W))
  private val undoBucket = Reg(UInt(bb.W))
  private val undoWay = Reg(UInt(2.W))
  private val res = Reg(new ConnRsp(idBits))
  private val initIx = RegInit(0.U(bb.W))

  rdEn(0) := s2
  rdEn(1) := s2
  rdAddr(0) := s2Bucket(0)
  rdAddr(1) := s2Bucket(1)
  cmd.ready := false.B
  rsp.valid := st === S.Respond
  rsp.bits := res
  status.ready := st =/= S.Init && pool.ready
  status.entries := entries
  status.freeIds := pool.count

  private def free(b: Vec[Slot]): Vec[Bool] = VecInit(b.map(!_.valid))
  private def lowestFree(b: Vec[Slot]): UInt = PriorityEncoder(free(b))
  private def respond(status: Int, id: UInt): Unit = {
    res.status := status.U
    res.id := id
    res.kicks := kicks
    st := S.Respond
  }

  // Decide: both buckets of the command's key are in bk.
  private val match0 = VecInit(bk(0).map(s => s.valid && s.key === fKey))
  private val match1 = VecInit(bk(1).map(s => s.valid && s.key === fKey))
  private val free0 = PopCount(free(bk(0)))
  private val free1 = PopCount(free(bk(1)))
  private val walkBucket = bk(curT)
  private val victimWay = lfsr(1, 0)
  private val pathTop = path.read(pathLen - 1.U)
  private val newHome = Wire(new Slot)
  newHome.valid := true.B
  newHome.key := fKey
  newHome.id := pool.head.bits

  switch(st) {
    is(S.Init) {
      for (t <- 0 until 2) {
        wrEn(t) := true.B
        wrAddr(t) := initIx
        wrData(t) := 0.U.asTypeOf(new Slot)
        wrMask(t) := ((1 << ways) - 1).U
      }
      initIx := initIx + 1.U
      // (the pool initialises itself meanwhile; connections >= buckets is not required)
      when(initIx === (buckets - 1).U) { st := S.Idle }
    }
    is(S.Idle) {
      when(cmdGo && pool.ready) {
        cmd.ready := true.B
        fKey := cmd.bits.key
        fDelete := cmd.bits.delete
        kicks := 0.U
        lookupsSinceCmd := 0.U
        st := S.Drain
      }
    }
    is(S.Drain) {
      when(inFlight === 0.U) { st := S.Hash }
    }
    is(S.Hash) {
      for (t <- 0 until 2) fBucket(t) := bucketOf(t)
      st := S.Read
    }
    is(S.Read) {
      for (t <- 0 until 2) {
        rdEn(t) := true.B
        rdAddr(t) := fBucket(t)
      }
      afterLatch := S.Decide
      st := S.Latch
    }
    is(S.Latch) {
      bk := rd
      st := afterLatch
    }
    is(S.Decide) {
      when(fDelete) {
        when(match0.asUInt.orR || match1.asUInt.orR) {
          val inT1 = !match0.asUInt.orR
          val way = Mux(inT1, PriorityEncoder(match1), PriorityEncoder(match0))
          val b = Mux(inT1, bk(1), bk(0))
          write(inT1.asUInt, Mux(inT1, fBucket(1), fBucket(0)), way, 0.U.asTypeOf(new Slot))
          pool.free.valid := true.B
          pool.free.bits := b(way).id
          entries := entries - 1.U
          count(ConnStat.Deletes)
          respond(ConnStatus.Ok, b(way).id)
        }.otherwise {
          count(ConnStat.DeleteMissing)
          respond(ConnStatus.Missing, 0.U)
        }
      }.elsewhen(match0.asUInt.orR || match1.asUInt.orR) {
        count(ConnStat.InsertExists)
        respond(ConnStatus.Exists, Mux1H(match0 ++ match1, (bk(0) ++ bk(1)).map(_.id)))
      }.elsewhen(!pool.head.valid) {
        count(ConnStat.InsertNoId)
        respond(ConnStatus.NoId, 0.U)
      }.otherwise {
        pool.alloc := true.B
        home := newHome
        when(free0 =/= 0.U && free0 >= free1) {
          write(0.U, fBucket(0), lowestFree(bk(0)), newHome)
          entries := entries + 1.U
          count(ConnStat.Inserts)
          respond(ConnStatus.Ok, newHome.id)
        }.elsewhen(free1 =/= 0.U) {
          write(1.U, fBucket(1), lowestFree(bk(1)), newHome)
          entries := entries + 1.U
          count(ConnStat.Inserts)
          respond(ConnStatus.Ok, newHome.id)
        }.otherwise {
          // Both full: walk from table 0 (the new id waits in `res` for the answer).
          res.id := newHome.id
          curT := 0.U
          curBucket := fBucket(0)
          pathLen := 0.U
          st := S.Kick
        }
      }
    }
    is(S.Kick) {
      // Put the homeless key in the victim's slot; the victim becomes homeless and heads
      // for its bucket in the other table.
      write(curT, curBucket, victimWay, home)
      path.write(pathLen, Cat(curT, curBucket, victimWay))
      pathLen := pathLen + 1.U
      home := walkBucket(victimWay)
      lfsr := Cat(lfsr(14, 0), lfsr(15) ^ lfsr(13) ^ lfsr(12) ^ lfsr(10))
      curT := ~curT
      kicks := kicks + 1.U
      count(ConnStat.Kicks)
      st := S.KHash
    }
    is(S.KHash) {
      curBucket := Mux(curT === 1.U, bucketOf(1), bucketOf(0))
      st := S.KRead
    }
    is(S.KRead) {
      for (t <- 0 until 2) when(curT === t.U) {
        rdEn(t) := true.B
        rdAddr(t) := curBucket
      }
      afterLatch := S.KDecide
      st := S.Latch
    }
    is(S.KDecide) {
      when(free(walkBucket).asUInt.orR) {
        write(curT, curBucket, lowestFree(walkBucket), home)
        entries := entries + 1.U
        count(ConnStat.Inserts)
        respond(ConnStatus.Ok, res.id)
      }.elsewhen(kicks === maxKicks.U) {
        st := S.UndoRead
      }.otherwise {
        st := S.Kick
      }
    }
    is(S.UndoRead) {
      // Walk back: each move's slot now holds the key placed there; put the homeless one
      // (the key that move displaced) back and carry the placed one on.
      undoT := pathTop(bb + 2)
      undoBucket := pathTop(bb + 1, 2)
      undoWay := pathTop(1, 0)
      for (t <- 0 until 2) when(pathTop(bb + 2) === t.U) {
        rdEn(t) := true.B
        rdAddr(t) := pathTop(bb + 1, 2)
      }
      afterLatch := S.UndoFix
      st := S.Latch
    }
    is(S.UndoFix) {
      val b = bk(undoT)
      write(undoT, undoBucket, undoWay, home)
      home := b(undoWay)
      pathLen := pathLen - 1.U
      when(pathLen === 1.U) {
        // What comes out of the first move's slot is the command's own key.
        pool.free.valid := true.B
        pool.free.bits := b(undoWay).id
        count(ConnStat.InsertFull)
        respond(ConnStatus.Full, 0.U)
      }.otherwise {
        st := S.UndoRead
      }
    }
    is(S.Respond) {
      when(rsp.ready) { st := S.Idle }
    }
  }

}

object ConnTable extends Elaboratable {
  /** `connections` (default 4096), `buckets` per table (1024: 8,192 slots), `max_kicks`
    * (64), `tag_bits` (8). */
  def generate(p: Params): RawModule = new ConnTable(
    connections = p.int("connections", 4096),
    buckets = p.int("buckets", 1024),
    maxKicks = p.int("max_kicks", 64),
    tagBits = p.int("tag_bits", 8)
  )
}
