package offnic.eth

import chisel3._
import chisel3.util._

/** The Ethernet CRC-32 (IEEE 802.3 clause 3.2.9) as parallel XOR networks, one per
  * number of bytes taken in a cycle (0 to `maxBytes`).
  *
  * Conventions, the same as the wire and as zlib's crc32:
  *  - bytes go in lowest lane first (lane 0 is first on the wire), each byte least
  *    significant bit first, so the register is kept "reflected": polynomial 0xEDB88320;
  *  - the register starts at all ones ([[Init]]);
  *  - the FCS is the complement of the register, sent low byte first
  *    (FCS byte k = `~crc` bits 8k+7..8k);
  *  - a receiver that runs the data *and* the FCS through the register ends with the
  *    constant [[Residue]] exactly when the FCS is right.
  *
  * The matrices are worked out here, in Scala, when the hardware is elaborated: the
  * bit-serial LFSR is run symbolically, each register bit held as the set (a BigInt bit
  * mask) of input bits — 32 register bits, then 8 bits per data byte — whose XOR it is.
  * Each output bit of `step` is then one XOR tree over exactly those inputs.
  */
object Crc32 {
  val Poly: Long = 0xedb88320L
  val Init: Long = 0xffffffffL

  /** Bit-serial software model: the register after `bytes`, starting from `crc`. */
  def software(crc: Long, bytes: Seq[Int]): Long = bytes.foldLeft(crc) { (c0, b) =>
    (0 until 8).foldLeft(c0) { (c, i) =>
      val fb = (c ^ (b >> i)) & 1L
      (c >>> 1) ^ (if (fb == 1L) Poly else 0L)
    }
  }

  /** The register value after a frame and its own (correct) FCS: 0xDEBB20E3. */
  val Residue: Long = {
    val msg = Seq(0x12, 0x34, 0x56)
    val fcs = ~software(Init, msg) & 0xffffffffL
    software(Init, msg ++ (0 until 4).map(k => ((fcs >> (8 * k)) & 0xff).toInt))
  }

  private val memo = scala.collection.mutable.Map[Int, IndexedSeq[BigInt]]()

  /** For `nBytes` bytes of input: output bit i is the XOR of the inputs whose bits are
    * set in `matrix(nBytes)(i)`; input bit j < 32 is register bit j, input bit 32 + 8k + b
    * is bit b of data byte k.
    */
  def matrix(nBytes: Int): IndexedSeq[BigInt] = synchronized {
    require(nBytes >= 0, s"CRC step over $nBytes bytes")
    memo.getOrElseUpdate(nBytes, {
      val poly = BigInt(Poly)
      var state: IndexedSeq[BigInt] = (0 until 32).map(i => BigInt(1) << i)
      for (k <- 0 until nBytes; b <- 0 until 8) {
        val fb = state(0) ^ (BigInt(1) << (32 + 8 * k + b))
        // shift right by one, then XOR the feedback into the polynomial's taps
        state = (0 until 32).map { i =>
          val shifted = if (i == 31) BigInt(0) else state(i + 1)
          if (poly.testBit(i)) shifted ^ fb else shifted
        }
      }
      state
    })
  }

  /** Software use of the matrices (to check them against [[software]]). */
  def applyMatrix(nBytes: Int, crc: Long, bytes: Seq[Int]): Long = {
    val in = bytes.zipWithIndex.foldLeft(BigInt(crc)) { case (acc, (b, k)) => acc | (BigInt(b) << (32 + 8 * k)) }
    matrix(nBytes).zipWithIndex.foldLeft(0L) { case (acc, (m, i)) =>
      if ((m & in).bitCount % 2 == 1) acc | (1L << i) else acc
    }
  }

  // Elaboration-time self-check: the parallel matrices equal the serial LFSR, and the
  // classic check value holds (CRC-32 of "123456789" is 0xCBF43926).
  locally {
    val rnd = new scala.util.Random(1)
    for (n <- 0 to 8; _ <- 0 until 4) {
      val crc = rnd.nextLong() & 0xffffffffL
      val data = Seq.fill(n)(rnd.nextInt(256))
      require(applyMatrix(n, crc, data) == software(crc, data), s"CRC-32 matrix for $n bytes is wrong")
    }
    require((~software(Init, "123456789".map(_.toInt)) & 0xffffffffL) == 0xcbf43926L, "CRC-32 check value")
    require(Residue == 0xdebb20e3L, f"CRC-32 residue $Residue%08x")
  }

  /** The register after the low `nBytes` bytes of `data` (lane 0 first). */
  def step(crc: UInt, data: UInt, nBytes: Int): UInt = {
    crc.widthOption.foreach(w => require(w == 32, s"CRC register must be 32 bits, got $w"))
    data.widthOption.foreach(w => require(w >= 8 * nBytes, s"$w-bit data cannot hold $nBytes bytes"))
    if (nBytes == 0) crc
    else {
      val in = data(8 * nBytes - 1, 0) ## crc // input bit j as numbered by `matrix`
      VecInit(matrix(nBytes).map { m =>
        (0 until 32 + 8 * nBytes).filter(m.testBit).map(in(_)).reduce(_ ^ _)
      }).asUInt
    }
  }

  /** The register after the low `n` bytes of `data`, `n` from 0 to `maxBytes` (a
    * run-time value): every fixed-length network, then a one-hot select.
    */
  def stepN(crc: UInt, data: UInt, n: UInt, maxBytes: Int): UInt =
    Mux1H((0 to maxBytes).map(k => (n === k.U) -> step(crc, data, k)))

  /** The register after the low `n` (0..8, a run-time value) bytes of 64-bit `data`,
    * through two register stages: the result belongs to the inputs of two cycles before.
    * Cheaper than [[stepN]] over 8 bytes (nine networks of up to 96 inputs): stage 1 takes
    * the first 4 bytes if `n >= 4`, stage 2 the remaining 0..4 bytes, five networks of up
    * to 64 inputs. Neither stage loops, so it sits beside a running CRC to finish a frame.
    */
  def stepNPiped(crc: UInt, data: UInt, n: UInt): UInt = {
    val upper = n >= 4.U
    val c1 = Reg(UInt(32.W))
    val d1 = Reg(UInt(32.W))
    val r1 = Reg(UInt(3.W))
    c1 := Mux(upper, step(crc, data, 4), crc)
    d1 := Mux(upper, data(63, 32), data(31, 0))
    r1 := Mux(upper, n - 4.U, n)(2, 0) // 0..4
    val c2 = Reg(UInt(32.W))
    c2 := stepN(c1, d1, r1, 4)
    c2
  }

  /** FCS byte k (0..3, byte 0 sent first) for register value `crc`. */
  def fcsByte(crc: UInt, k: Int): UInt = (~crc)(8 * k + 7, 8 * k)
}
