package offnic.board

import chisel3._
import chisel3.reflect.DataMirror
import scala.collection.mutable

/** Interface-only Verilog of the vendor blocks a board top instantiates, for the tools
  * that check the board without Vivado: Yosys (the vendor IP, `ip_stubs.v`; its own cell
  * library has the primitives) and Verilator lint (both, plus `cell_stubs.v`). Written by
  * Elaborate next to the generated RTL; Vivado never reads them (it has the real IP and
  * cells). Each stub is made from the BlackBox's own ports, so it cannot drift from them.
  */
object BlackBoxStubs {
  private val ip = mutable.LinkedHashMap[String, String]()
  private val cells = mutable.LinkedHashMap[String, String]()

  /** Record `bb` (its ports, and its parameters as untyped ones) once per module name. */
  def record[T <: ExtModule](bb: T, cell: Boolean = false): T = {
    val params = bb.params
    val name = bb.desiredName
    val table = if (cell) cells else ip
    if (!table.contains(name)) {
      val io = bb.getClass.getMethod("io").invoke(bb).asInstanceOf[Record]
      val ports = io.elements.toSeq.reverse.map { case (n, d) =>
        val dir = DataMirror.specifiedDirectionOf(d) match {
          case SpecifiedDirection.Input | SpecifiedDirection.Flip => "input"
          case SpecifiedDirection.Output => "output"
          case _ => "inout"
        }
        val w = d.getWidth
        s"  $dir ${if (w > 1) s"[${w - 1}:0] " else ""}$n"
      }
      val ps = params.keys.toSeq.sorted.map { k =>
        params(k) match {
          case _: DoubleParam => s"  parameter real $k = 0.0;\n"
          case _ => s"  parameter $k = 0;\n"
        }
      }.mkString
      table(name) = s"(* blackbox *)\nmodule $name (\n${ports.mkString(",\n")}\n);\n$ps  endmodule\n"
    }
    bb
  }

  /** A cell whose stub is written by hand (the bidirectional pad: it has behaviour to lint). */
  def cell(name: String, text: String): Unit = if (!cells.contains(name)) cells(name) = text

  def ipText: String = ip.values.mkString("\n")
  def cellText: String = cells.values.mkString("\n")
  def clear(): Unit = { ip.clear(); cells.clear() }
}
