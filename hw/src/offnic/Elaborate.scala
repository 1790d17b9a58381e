package offnic

import chisel3._
import _root_.circt.stage.ChiselStage

/** Generator parameters as they arrive from the command line (`key=value`), with typed
  * accessors. Every key a generator reads is recorded so that a misspelt key fails
  * elaboration instead of silently taking the default.
  */
final class Params(raw: Map[String, String]) {
  private val used = scala.collection.mutable.Set[String]()
  private def get(k: String): Option[String] = { used += k; raw.get(k) }

  def int(k: String, default: Int): Int = get(k).map(v => BigInt(v.replace("_", "")).toInt).getOrElse(default)
  def long(k: String, default: Long): Long = get(k).map(v => BigInt(v.replace("_", "")).toLong).getOrElse(default)
  def bool(k: String, default: Boolean): Boolean = get(k).map {
    case "1" | "true" | "True"   => true
    case "0" | "false" | "False" => false
    case v                        => throw new IllegalArgumentException(s"parameter $k: '$v' is not a boolean")
  }.getOrElse(default)
  def str(k: String, default: String): String = get(k).getOrElse(default)

  def checkAllUsed(top: String): Unit = {
    val unknown = raw.keySet -- used
    require(unknown.isEmpty, s"$top does not take parameter(s): ${unknown.mkString(", ")}")
  }
}

/** A module generator that can be elaborated as a top level by name. Each generator's
  * companion object extends this; `Elaborate` finds it by reflection, so adding a block
  * needs no registry edit.
  */
trait Elaboratable {
  def generate(p: Params): RawModule
}

/** Entry point: `Elaborate JOBFILE` where each line of JOBFILE is
  * `top<TAB>outdir<TAB>key=value...`, e.g. `axis.AxisFifo\tbuild/x\tdepth=64`.
  * One JVM elaborates many jobs, which is what makes a whole configuration cheap.
  * `Elaborate --regmap-json FILE` writes the register map (the source of truth in
  * regs/RegMap.scala) as JSON for the Python/C/Markdown generators.
  */
object Elaborate {
  val firtoolOpts: Array[String] = Array(
    "-disable-all-randomization",
    "-strip-debug-info",
    // Plain Verilog constructs that every downstream tool (Verilator, Yosys, Vivado) reads.
    "-lowering-options=disallowLocalVariables,disallowPackedArrays,locationInfoStyle=none"
  )

  def find(top: String): Elaboratable = {
    val cls = s"offnic.$top$$"
    try Class.forName(cls).getField("MODULE$").get(null).asInstanceOf[Elaboratable]
    catch {
      case _: ClassNotFoundException =>
        throw new IllegalArgumentException(s"no generator '$top' (looked for object $cls)")
    }
  }

  def elaborate(top: String, outDir: String, kv: Map[String, String]): Unit = {
    val gen = find(top)
    val params = new Params(kv)
    board.BlackBoxStubs.clear()
    var moduleName = ""
    ChiselStage.emitSystemVerilogFile(
      { val m = gen.generate(params); params.checkAllUsed(top); moduleName = m.desiredName; m },
      Array("--target-dir", outDir, "--split-verilog"),
      firtoolOpts
    )
    // The harness and the lint/synth scripts need the Verilog name of the top.
    os.write.over(os.Path(outDir, os.pwd) / "top_module", moduleName + "\n")
    // A board top's vendor blocks as interface-only modules, for Yosys and Verilator lint.
    if (board.BlackBoxStubs.ipText.nonEmpty || board.BlackBoxStubs.cellText.nonEmpty) {
      os.write.over(os.Path(outDir, os.pwd) / "ip_stubs.v", board.BlackBoxStubs.ipText)
      os.write.over(os.Path(outDir, os.pwd) / "cell_stubs.v", board.BlackBoxStubs.cellText)
    }
  }

  def main(args: Array[String]): Unit = args.toList match {
    case "--regmap-json" :: file :: Nil =>
      os.write.over(os.Path(file, os.pwd), regs.RegMapJson.render(regs.RegMap.blocks), createFolders = true)
    case jobFile :: Nil =>
      val lines = scala.io.Source.fromFile(jobFile).getLines().map(_.trim).filter(_.nonEmpty).toList
      for (line <- lines) {
        val top :: out :: kvs = line.split('\t').toList: @unchecked
        val kv = kvs.map { s =>
          val i = s.indexOf('='); require(i > 0, s"bad parameter '$s'"); s.take(i) -> s.drop(i + 1)
        }.toMap
        elaborate(top, out, kv)
      }
    case _ =>
      System.err.println("usage: Elaborate JOBFILE | --regmap-json FILE")
      sys.exit(2)
  }
}
