// Mill 0.12.3 build: the Chisel hardware in hw/src, elaborated by offnic.Elaborate.
// Versions come from pins.toml (the project's single pin file).
import mill._, scalalib._

object pins {
  private val text = os.read(mill.api.WorkspaceRoot.workspaceRoot / "pins.toml")
  private def in(table: String, key: String): String = {
    val body = text.split("""(?m)^\[""").find(_.startsWith(table + "]")).getOrElse(
      sys.error(s"pins.toml has no [$table] table"))
    ("""(?m)^""" + key + """\s*=\s*"([^"]+)"""").r.findFirstMatchIn(body)
      .getOrElse(sys.error(s"pins.toml [$table] has no $key")).group(1)
  }
  val chisel = in("chisel", "version")
  val scala = in("chisel", "scala")
}

object hw extends ScalaModule {
  def scalaVersion = pins.scala
  def ivyDeps = Agg(ivy"org.chipsalliance::chisel:${pins.chisel}")
  def scalacPluginIvyDeps = Agg(ivy"org.chipsalliance:::chisel-plugin:${pins.chisel}")
  def scalacOptions = Seq("-deprecation", "-feature", "-language:reflectiveCalls", "-Ymacro-annotations")
  def mainClass = Some("offnic.Elaborate")
}
