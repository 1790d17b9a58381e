package offnic.regs

/** Renders the register map as JSON (no library needed for this fixed shape). The
  * Python/C/Markdown generators in sim/offnic_sim/regmap_codegen.py read it.
  */
object RegMapJson {
  private def q(s: String): String =
    "\"" + s.flatMap {
      case '"'  => "\\\""
      case '\\' => "\\\\"
      case '\n' => "\\n"
      case c    => c.toString
    } + "\""

  private def access(a: Access): String = a match {
    case Access.RW(reset)    => s"""{"kind": "rw", "reset": $reset}"""
    case Access.Const(value) => s"""{"kind": "const", "value": $value}"""
    case other               => s"""{"kind": "${other.name}"}"""
  }

  private def field(f: Field): String =
    s"""{"name": ${q(f.name)}, "lsb": ${f.lsb}, "width": ${f.width}, "doc": ${q(f.doc)}}"""

  private def reg(r: Reg): String =
    s"""{"name": ${q(r.name)}, "offset": ${r.offset}, "access": ${access(r.access)}, "doc": ${q(r.doc)}, """ +
      s""""fields": [${r.fields.map(field).mkString(", ")}]}"""

  private def array(a: Option[RegArray]): String = a match {
    case None => "null"
    case Some(a) =>
      s"""{"offset": ${a.offset}, "max_count": ${a.maxCount}, "stride": ${a.stride}, "doc": ${q(a.doc)},\n""" +
        s"""    "regs": [\n    ${a.regs.map(reg).mkString(",\n    ")}]}"""
  }

  private def block(b: BlockType): String =
    s"""  {"name": ${q(b.name)}, "type_id": ${b.typeId}, "version": ${b.version}, "doc": ${q(b.doc)}, """ +
      s""""window_bytes": ${b.windowBytes},\n   "regs": [\n    ${b.regs.map(reg).mkString(",\n    ")}],\n""" +
      s"""   "array": ${array(b.array)}}"""

  def render(blocks: Seq[BlockType]): String =
    s"""{"header_bytes": ${BlockType.HeaderBytes}, "blocks": [\n${blocks.map(block).mkString(",\n")}\n]}\n"""
}
