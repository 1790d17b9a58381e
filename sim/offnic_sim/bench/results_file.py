"""Writing a bench's committed results: the JSON (with the wall time and the RTL it
measured), the plot beside it, the table on stdout."""
from __future__ import annotations

import json
import time
from pathlib import Path

from offnic_sim.harness import hw


def write(doc: dict, out: Path, designs: list, plot, table, rel, t0: float) -> None:
    """`doc` into `out` (+ wall_s since `t0` and rtl_designs of `designs`), `plot(doc, png)`
    into out's .png, then `table(doc)` and a line naming both files."""
    doc["wall_s"] = round(time.monotonic() - t0, 1)
    doc["rtl_designs"] = hw.rtl_record(designs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    png = out.with_suffix(".png")
    plot(doc, png)
    print()
    print(table(doc))
    print(f"[offnic] wrote {rel(out)} and {rel(png)} in {time.monotonic() - t0:.0f} s")
