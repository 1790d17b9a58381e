package offnic.util

import chisel3._
import chisel3.util._

/** A pool of `n` small integer ids (0 .. n-1), all free after reset: a stack in block RAM
  * with its top held in a register, so an id is ready to take at any time the pool is
  * not empty.
  *
  * Why a stack in SyncReadMem and not a `Queue`: a Queue's memory is read
  * combinationally, which becomes LUT RAM — 768 LUTs for 4,096 ids of 12 bits — where a
  * synchronous read fits one block RAM. The price is a refill read after each `alloc`:
  * the next id is ready two cycles later, which the callers (command state machines)
  * never notice.
  *
  * After reset the stack is written with every id, one per cycle (`n` cycles; `ready`
  * low until then). The first ids handed out are n-1, n-2, ... (the top of the stack).
  * `free` of an id that is already free is the caller's bug; nothing checks it.
  */
class IdPool(val n: Int) extends Module {
  require(n >= 2 && isPow2(n), "IdPool: n must be a power of two >= 2")
  private val b = log2Ceil(n)

  /** The id `alloc` would take; valid when the pool has one ready. */
  val head = IO(Output(Valid(UInt(b.W))))
  /** Take `head` (only when head.valid). */
  val alloc = IO(Input(Bool()))
  /** Give an id back (at most one per cycle; not in the cycle of an `alloc`). */
  val free = IO(Flipped(Valid(UInt(b.W))))
  /** Initialised after reset. */
  val ready = IO(Output(Bool()))
  /** Free ids, the head included. */
  val count = IO(Output(UInt((b + 1).W)))

  private val stack = SyncReadMem(n, UInt(b.W))
  private val init = RegInit(true.B)
  private val initIx = RegInit(0.U(b.W))
  private val depth = RegInit(0.U((b + 1).W)) // ids in the stack (below the head)
  private val top = RegInit(0.U.asTypeOf(Valid(UInt(b.W))))
  private val refilling = RegInit(false.B) // a read of the stack's top is in flight to the head

  ready := !init
  head.valid := top.valid && !init
  head.bits := top.bits
  count := depth + top.valid.asUInt + refilling.asUInt

  private val rdEn = WireDefault(false.B)
  private val rd = stack.read(depth - 1.U, rdEn)
  // One write port: the init fill and pushes never meet.
  private val wrEn = WireDefault(false.B)
  private val wrAddr = WireDefault(initIx)
  private val wrData = WireDefault(initIx)
  when(wrEn) { stack.write(wrAddr, wrData) }

  // After this cycle the head would be empty with nothing on its way to it.
  private val headEmpties = (!top.valid || alloc) && !refilling
  private val freeToHead = free.valid && headEmpties
  private val push = free.valid && !freeToHead

  when(init) {
    wrEn := true.B
    initIx := initIx + 1.U
    when(initIx === (n - 1).U) {
      init := false.B
      depth := n.U
    }
  }.otherwise {
    // Refill only in a cycle without a free (which would have filled the head instead),
    // so a push and a refill read never meet.
    rdEn := headEmpties && !free.valid && depth =/= 0.U
    refilling := rdEn
    when(alloc) { top.valid := false.B }
    when(refilling) {
      top.valid := true.B
      top.bits := rd
    }
    when(freeToHead) {
      top.valid := true.B
      top.bits := free.bits
    }
    when(push) {
      wrEn := true.B
      wrAddr := depth
      wrData := free.bits
    }
    depth := depth + push.asUInt - rdEn.asUInt
  }
}
