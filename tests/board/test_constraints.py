"""The board flow's constraints and Tcl, checked without Vivado (issue 20): every board's
facts make valid constraints (FFVB676 pins, none used twice, known I/O standards, every
input clock constrained); the committed XDC and IP Tcl are what the facts render to, and
say what the facts say when read back; every Tcl and XDC file parses (tclint); the PCIe
IP carries the IDs the Linux driver binds; only the board with DRAM gets a DDR4 controller."""
import re
import subprocess
from pathlib import Path

import pytest

from offnic_sim.board import commands, facts

ROOT = Path(__file__).resolve().parents[2]
TCLINT = ROOT / ".venv" / "bin" / "tclint"


@pytest.mark.parametrize("board", facts.BOARDS)
def test_facts_are_valid_constraints(board):
    b = facts.load(board)
    assert b.problems() == []
    assert b.part.startswith("xcku3p-ffvb676-")
    # every clock input (a reference clock or a board clock, the P side of a pair) has a create_clock
    clocked = {c.port for c in b.clocks}
    clock_ports = {p.name for p in b.ports if p.dir == "in" and re.search(r"(refclk|^clk_).*_p$", p.name)}
    assert clock_ports and clock_ports <= clocked, clock_ports - clocked
    # the NIC's two Ethernet ports and a x8 PCIe link, each lane a differential pair
    for name, width in (("eth_rx", b.ports_used), ("eth_tx", b.ports_used), ("pcie_rx", 8), ("pcie_tx", 8)):
        assert b.port(name + "_p").width == b.port(name + "_n").width == width


def test_problems_are_found():
    """The checker itself: a reused pin, a pin the package lacks, a clock on an output."""
    b = facts.load("k3pq")
    b.ports.append(facts.Port("x", "in", ("V7",), "LVCMOS33"))        # PCIe refclk's pin
    b.ports.append(facts.Port("y", "out", ("AG1",), "LVCMOS33"))      # no row AG on FFVB676
    b.clocks.append(facts.Clock("y", "yclk", 5.0))
    bad = " ".join(b.problems())
    assert "pin V7 already used" in bad and "AG1 is not an FFVB676 pin" in bad and "y is not an input" in bad


@pytest.mark.parametrize("board", facts.BOARDS)
def test_committed_files_are_current(board):
    for path, text in commands.rendered(board).items():
        assert path.read_text() == text, f"{path.relative_to(ROOT)} is stale: run ./offnic constraints"


def _xdc_pins(text: str) -> dict[str, dict[str, str]]:
    """Read pins.xdc back: port bit -> its properties."""
    out = {}
    for m in re.finditer(r"set_property -dict \{([^}]*)\} \[get_ports \{([^}]*)\}\]", text):
        kv = m.group(1).split()
        assert m.group(2) not in out, f"{m.group(2)} constrained twice"
        out[m.group(2)] = dict(zip(kv[::2], kv[1::2]))
    return out


@pytest.mark.parametrize("board", facts.BOARDS)
def test_xdc_says_what_the_facts_say(board):
    b = facts.load(board)
    got = _xdc_pins((facts.CONSTRAINTS / board / "pins.xdc").read_text())
    want = {bit: (pin, p) for p in b.ports for bit, pin in p.bits()}
    assert set(got) == set(want)
    pins = [g["PACKAGE_PIN"] for g in got.values()]
    assert len(pins) == len(set(pins)), "a pin used twice"
    for bit, (pin, p) in want.items():
        assert got[bit]["PACKAGE_PIN"] == pin, bit
        assert got[bit].get("IOSTANDARD") == (None if p.io == facts.GT else p.io), bit
        assert ("PULLUP" in got[bit]) == p.pullup, bit
    timing = (facts.CONSTRAINTS / board / "timing.xdc").read_text()
    for c in b.clocks:
        m = re.search(rf"create_clock -name {c.name} -period ([0-9.]+) \[get_ports \{{{c.port}\}}\]", timing)
        assert m and abs(float(m.group(1)) - c.period_ns) < 1e-3, c
    for p in b.ports:   # every asynchronous pin is cut, each way it goes
        ref = re.escape(p.name + ("[*]" if p.width > 1 else ""))
        if p.async_ and p.dir in ("in", "inout"):
            assert re.search(rf"set_false_path -from \[get_ports \{{{ref}\}}\]", timing), p.name
        if p.async_ and p.dir in ("out", "inout"):
            assert re.search(rf"set_false_path -to \[get_ports \{{{ref}\}}\]", timing), p.name


def test_tcl_and_xdc_parse():
    """tclint exits 0 on style findings and 2 on syntax errors: both must be absent."""
    files = sorted(str(p) for p in facts.CONSTRAINTS.rglob("*") if p.suffix in (".tcl", ".xdc"))
    assert len(files) >= 13
    r = subprocess.run([str(TCLINT), "-c", str(facts.CONSTRAINTS / "tclint.toml"), *files],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "" and r.stderr.strip() == "", r.stdout + r.stderr
    bad = facts.CONSTRAINTS / "common" / "flow.tcl"
    r = subprocess.run([str(TCLINT), "-"], input=bad.read_text() + "\nset x {", capture_output=True, text=True)
    assert r.returncode != 0 and "syntax error" in r.stdout + r.stderr


def _ip_config(board: str) -> dict[str, dict[str, str]]:
    """ip.tcl read back: IP name -> {module, CONFIG.*}."""
    text = (facts.CONSTRAINTS / board / "ip.tcl").read_text()
    out = {}
    for m in re.finditer(r"create_ip -name (\S+) .*?-module_name (\S+).*?\n(.*?)\] \[get_ips \2\]", text, re.S):
        cfg = dict(re.findall(r"(CONFIG\.\S+) \{([^}]*)\}", m.group(3)))
        out[m.group(2)] = {"module": m.group(1), **cfg}
    return out


@pytest.mark.parametrize("board", facts.BOARDS)
def test_vendor_ip(board):
    b = facts.load(board)
    ip = _ip_config(board)
    driver = (ROOT / "sw-driver" / "linux" / "offnic_main.c").read_text()
    vendor = re.search(r"OFFNIC_PCI_VENDOR 0x([0-9a-f]+)", driver).group(1)
    device = re.search(r"OFFNIC_PCI_DEVICE 0x([0-9a-f]+)", driver).group(1)
    pcie = ip["pcie4_uscale_plus_0"]
    assert pcie["module"] == "pcie4_uscale_plus"
    assert (pcie["CONFIG.vendor_id"], pcie["CONFIG.PF0_DEVICE_ID"]) == (vendor, device)
    assert (pcie["CONFIG.PL_LINK_CAP_MAX_LINK_SPEED"], pcie["CONFIG.PL_LINK_CAP_MAX_LINK_WIDTH"]) == ("8.0_GT/s", "X8")
    assert (pcie["CONFIG.axisten_if_width"], pcie["CONFIG.axisten_freq"]) == ("256_bit", "250")
    assert pcie["CONFIG.pf0_bar0_size"] == "16" and pcie["CONFIG.pf0_msix_enabled"] == "true"
    gt = ip["eth_gty"]
    assert len(gt["CONFIG.CHANNEL_ENABLE"].split()) == b.ports_used
    assert gt["CONFIG.TX_LINE_RATE"] == "25.78125" and gt["CONFIG.SECONDARY_QPLL_LINE_RATE"] == "10.3125"
    assert gt["CONFIG.TX_DATA_ENCODING"] == "RAW"      # 64b/66b is offnic's own PCS
    ref = {"k3pq": "161.1328125", "as02mc04": "156.25"}[board]
    assert gt["CONFIG.TX_REFCLK_FREQUENCY"] == ref
    assert ("ddr4_0" in ip) == b.dram
    if b.dram:
        assert ip["ddr4_0"]["CONFIG.C0.DDR4_AxiDataWidth"] == "512"
        assert ip["ddr4_0"]["CONFIG.C0.DDR4_DataWidth"] == "72"
        assert b.port("ddr4_dq").width == 72 and b.port("ddr4_dqs_t").width == 9


@pytest.mark.parametrize("board", facts.BOARDS)
def test_vivado_entry_script(board, tmp_path, capsys):
    """Without Vivado (and, today, without a board top) `./offnic vivado` still writes its
    entry script, which parses and names every constraint file, and then says why it stops."""
    from offnic_sim.board import vivado
    src = tmp_path / "top.sv"
    src.write_text("module offnic_top; endmodule\n")
    text = vivado.run_tcl(facts.load(board), "offnic_top", [src], tmp_path, "bit")
    r = subprocess.run([str(TCLINT), "-c", str(facts.CONSTRAINTS / "tclint.toml"), "-"], input=text,
                       capture_output=True, text=True)
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout
    for name in vivado.BOARD_XDC + vivado.COMMON_XDC:
        assert name in text
    assert f"set part {facts.load(board).part}" in text and str(src) in text
    if vivado.vivado() is None:
        assert commands.cmd_vivado(["--board", board, "--step", "synth", "--sources", str(src)]) == 1
        assert "Vivado is not on PATH" in capsys.readouterr().out
