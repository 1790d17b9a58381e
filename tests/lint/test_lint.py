"""Every generated design is lint-clean (Verilator -Wall, verible) and the FIFOs'
buffers synthesise to RAM, not flip-flops."""
import pytest

from offnic_sim.harness import hw
from offnic_sim import tasks


@pytest.mark.parametrize("config", hw.config_names())
def test_lint_clean(config):
    dirty = {label: f for label, f in tasks.lint_config(config).items() if f}
    assert not dirty, "lint findings (run ./offnic lint):\n" + "\n".join(
        f"{label}: {line}" for label, lines in dirty.items() for line in lines)


@pytest.mark.parametrize("label", ["axis_fifo", "axis_fifo_packet", "axis_async_fifo"])
def test_fifo_buffers_map_to_ram(label):
    designs = {d.name: d for d in hw.load_config("blocks")}
    rtl = hw.elaborate([designs[label]])[0]
    r = tasks.synth_design(label, rtl, hw.BUILD / "synth" / "test")
    params = dict(designs[label].params)
    buffer_bits = int(params["depth"]) * int(params["bytes"]) * 9
    assert r["lut_ram_cells"] + r["bram36_equiv"] + r["uram"] > 0, f"{label}: no RAM inferred: {r['cells']}"
    assert r["ff"] < buffer_bits / 4, f"{label}: {r['ff']} flip-flops for a {buffer_bits}-bit buffer"
