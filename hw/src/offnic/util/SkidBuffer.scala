package offnic.util

import chisel3._
import chisel3.util._

/** Two-register skid buffer for any valid/ready stream: `in.ready`, `out.valid` and
  * `out.bits` all come from registers, at full throughput, one cycle of latency. The one
  * implementation behind AxisRegSlice and the DMA engine's input registers.
  */
class SkidBuffer[T <: Data](gen: T) extends Module {
  val in = IO(Flipped(Decoupled(gen)))
  val out = IO(Decoupled(gen))
  private val outValid = RegInit(false.B)
  private val outBits = Reg(gen)
  private val skidValid = RegInit(false.B) // a beat accepted while the output was stalled
  private val skidBits = Reg(gen)
  in.ready := !skidValid
  when(!outValid || out.ready) {
    outValid := skidValid || in.valid
    outBits := Mux(skidValid, skidBits, in.bits)
    skidValid := false.B
  }.elsewhen(in.fire) {
    skidValid := true.B
    skidBits := in.bits
  }
  out.valid := outValid
  out.bits := outBits
}
