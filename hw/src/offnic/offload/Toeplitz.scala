package offnic.offload

import chisel3._
import chisel3.util._
import offnic.{Elaboratable, Params}

/** Input of [[ToeplitzHash]]: the bytes to hash and a tag that travels alongside. */
class ToeplitzIn(val inBits: Int, val tagBits: Int) extends Bundle {
  /** Input bytes, first byte in the most significant bits (as they appear on the wire). */
  val data = UInt(inBits.W)
  val tag = UInt(tagBits.W)
}

class ToeplitzOut(val tagBits: Int) extends Bundle {
  val hash = UInt(32.W)
  val tag = UInt(tagBits.W)
}

object Toeplitz {
  /** The Toeplitz hash in one combinational step, for callers that register around it:
    * output bit j is the parity of `data` AND the key bits j .. j + width(data) - 1
    * counted from the key's most significant bit. `key` needs width(data) + bits - 1 bits
    * at least. (The Reassembler's and ConnTable's hashes; RSS uses the pipelined
    * [[ToeplitzHash]] below.) */
  def window(data: UInt, key: UInt, bits: Int): UInt = {
    val n = data.getWidth
    val kb = key.getWidth
    require(kb >= n + bits - 1, s"Toeplitz: a $n-bit input and $bits output bits need ${n + bits - 1} key bits, got $kb")
    VecInit((0 until bits).map(j => (data & key(kb - 1 - j, kb - n - j)).xorR)).asUInt
  }
}

/** The Toeplitz hash of Microsoft RSS over a fixed-width input, fully parallel: one input
  * per cycle, result [[ToeplitzHash.Latency]] cycles later.
  *
  * Definition (bits numbered from the most significant, i.e. first on the wire): for every
  * input bit `i` that is set, XOR in the 32 key bits `i .. i+31`. So output bit `j` is the
  * parity of `data(i) & key(i + j)` over all `i` — a programmable key needs an AND per
  * (input bit, output bit) pair: `inBits * 32` terms.
  *
  * Why fully parallel: the RSS block must keep up with a new frame every two beats, and
  * runt frames can come every beat; a serial or per-byte form would need the key
  * recomputed into tables whenever it changes.
  *
  * Two stages: each output bit is the parity of `inBits` AND terms. Stage 1 computes the
  * parity of each group of `groupBits` terms and registers it; stage 2 takes the parity of
  * the partials. With the default of 3, a stage-1 partial is exactly one LUT6 (three AND
  * pairs) feeding its own flip-flop, and stage 2 is a 96-input parity (three LUT levels):
  * the fewest LUTs (Yosys synth_xilinx, 288-bit input: groups of 3 take 4.0K LUT + 3.1K FF,
  * of 6 5.1K + 1.6K, of 18 5.5K + 0.6K) and short paths at 250 MHz; flip-flops are the
  * cheap resource here (two per LUT).
  *
  * `key` is used in the same cycle as `in` (the caller registers it): `inBits + 31` bits,
  * first key bit in the most significant position — the last input bit meets key bits
  * `inBits - 1 .. inBits + 30`, so a key of `inBits + 32` bits (RSS's 40 bytes for 36 input
  * bytes) never uses its last bit.
  */
class ToeplitzHash(val inBits: Int, val tagBits: Int, val groupBits: Int = 3) extends Module {
  require(inBits >= 8 && inBits % 8 == 0, s"Toeplitz input must be whole bytes, got $inBits bits")
  require(tagBits >= 1, "tag width must be >= 1")
  require(groupBits >= 1, "groupBits must be >= 1")
  val keyBits: Int = inBits + 31

  val in = IO(Input(Valid(new ToeplitzIn(inBits, tagBits))))
  val key = IO(Input(UInt(keyBits.W)))
  val out = IO(Output(Valid(new ToeplitzOut(tagBits))))

  /** Bits `from until from + n` of `x` counted from its most significant bit, as a UInt
    * whose MSB is bit `from`. */
  private def msbFirst(x: UInt, width: Int, from: Int, n: Int): UInt = x(width - 1 - from, width - from - n)

  private val groups = (0 until inBits by groupBits).map(s => (s, math.min(groupBits, inBits - s)))

  // Stage 1: per output bit j, one partial parity per group of input bits.
  private val partial = Reg(Vec(32, UInt(groups.size.W)))
  private val s1Valid = RegNext(in.valid, false.B)
  private val s1Tag = RegEnable(in.bits.tag, in.valid)
  when(in.valid) {
    for (j <- 0 until 32) {
      partial(j) := VecInit(groups.map { case (start, n) =>
        (msbFirst(in.bits.data, inBits, start, n) & msbFirst(key, keyBits, start + j, n)).xorR
      }).asUInt
    }
  }

  // Stage 2: parity of the partials. Output bit j (from the MSB) is hash bit 31 - j.
  private val hash = RegEnable(VecInit((0 until 32).map(j => partial(31 - j).xorR)).asUInt, s1Valid)
  private val s2Valid = RegNext(s1Valid, false.B)
  private val s2Tag = RegEnable(s1Tag, s1Valid)

  out.valid := s2Valid
  out.bits.hash := hash
  out.bits.tag := s2Tag
}

object ToeplitzHash extends Elaboratable {
  /** Cycles from `in.valid` to `out.valid`. */
  val Latency = 2

  /** Standalone, for resource counts: `in_bits` (default 288, the IPv6 4-tuple), `tag`,
    * `group_bits` (default 3). */
  def generate(p: Params): RawModule =
    new ToeplitzHash(p.int("in_bits", 288), p.int("tag", 4), p.int("group_bits", 3))
}
