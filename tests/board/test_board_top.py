"""The board top levels (hw/src/offnic/board), checked without Vivado (issue 20):

- every port of each Chisel board top is a pin of the board's facts with its direction and
  width, and the other way round; in the generated pins.xdc every port bit has a package
  pin and an I/O standard (transceiver pins take none), no pin is used twice, and every
  pin is one the shared board fact sheet (../shared/boards/) names;
- every clock input of the top has a create_clock;
- the board shell (the top without the NIC core) synthesises in Yosys (synth_xilinx
  -family xcup; the NIC core and the vendor IP as black boxes, the primitives from Yosys's
  own cell library, which checks their ports), with the hard blocks each board needs;
- the whole top, NIC included, lints clean under Verilator -Wall (./offnic lint's rules);
- the PCIe IP's MSI-X capability points at the NIC's msix block in BAR0.
The full top's Yosys resources: `./offnic synth --config board-k3pq` (heavy; not a test).
"""
import re
from pathlib import Path

import pytest

from offnic_sim.board import facts, tops
from offnic_sim.harness import hw

ROOT = Path(__file__).resolve().parents[2]
SHARED_BOARDS = ROOT.parent / "shared" / "boards"
FACT_SHEET = {"k3pq": "Nexus_K3P_Q.md", "as02mc04": "AS02MC04.md"}


@pytest.fixture(scope="module", params=facts.BOARDS)
def board(request):
    return request.param, tops.rtl(request.param)


def test_ports_are_the_boards_pins(board):
    name, r = board
    b = facts.load(name)
    got = {p.name: (p.dir, p.width) for p in tops.top_ports(r)}
    want = {p.name: (p.dir, p.width) for p in b.ports}
    assert got == want, {"top only": {k: got[k] for k in got.keys() - want.keys()},
                         "facts only": {k: want[k] for k in want.keys() - got.keys()},
                         "differ": {k: (got[k], want[k]) for k in got.keys() & want.keys() if got[k] != want[k]}}


def test_every_port_bit_has_a_pin_and_standard(board):
    name, r = board
    b = facts.load(name)
    text = (facts.CONSTRAINTS / name / "pins.xdc").read_text()
    props = {}
    for m in re.finditer(r"set_property -dict \{([^}]*)\} \[get_ports \{([^}]*)\}\]", text):
        kv = m.group(1).split()
        props[m.group(2)] = dict(zip(kv[::2], kv[1::2]))
    pins = []
    for p in tops.top_ports(r):
        gt = b.port(p.name).io == facts.GT
        for i in range(p.width):
            bit = p.name if p.width == 1 else f"{p.name}[{i}]"
            assert bit in props, f"{bit}: no PACKAGE_PIN in pins.xdc"
            assert gt or "IOSTANDARD" in props[bit], f"{bit}: no IOSTANDARD"
            pins.append(props[bit]["PACKAGE_PIN"])
    assert len(pins) == len(set(pins)), "a pin used twice"


def test_pins_are_in_the_shared_fact_sheet(board):
    """Each pin the top uses is named in ../shared/boards/ (the DDR4 byte lanes and address
    pins excepted: the K3P-Q sheet only counts them, constraints/k3pq/board.toml says where
    they come from)."""
    name, _ = board
    sheet = SHARED_BOARDS / FACT_SHEET[name]
    if not sheet.exists():
        pytest.skip(f"{sheet} not here (it lives beside the repository)")
    named = set(re.findall(r"\b(?:A[A-F]|[A-Z])\d{1,2}\b", sheet.read_text()))
    b = facts.load(name)
    missing = [(p.name, pin) for p in b.ports if not p.name.startswith("ddr4_")
               for pin in p.pins if pin not in named]
    assert missing == []
    assert any(p.name.startswith("pcie_rx") for p in b.ports)


def test_every_clock_input_is_constrained(board):
    name, r = board
    timing = (facts.CONSTRAINTS / name / "timing.xdc").read_text()
    clocks = [p for p in tops.top_ports(r) if p.dir == "in" and re.search(r"(refclk|^clk_).*_p$", p.name)]
    assert len(clocks) == 3
    for p in clocks:
        assert re.search(rf"create_clock -name \w+ -period [0-9.]+ \[get_ports \{{{p.name}\}}\]", timing), p.name


def test_shell_synthesises(board):
    """The board shell in Yosys: it maps, and holds what the board needs: the PCIe IP, the
    transceivers, the MMCM, reference-clock buffers, the NIC core (a black box) and, on
    the K3P-Q only, the DDR4 controller and the AXI upsizer."""
    name, r = board
    cells = tops.synth_shell(name, r, hw.BUILD / "board-check")
    assert cells.get("Nic") == 1 and cells.get("pcie4_uscale_plus_0") == 1 and cells.get("eth_gty") == 1
    assert cells.get("MMCME4_BASE") == 1 and cells.get("IBUFDS_GTE4") == 2
    assert cells.get("BUFG_GT", 0) >= 3  # PCIe sys_clk and each lane's RX user clock
    dram = name == "k3pq"
    assert (cells.get("ddr4_0", 0), cells.get("axi_dram_upsizer", 0)) == ((1, 1) if dram else (0, 0))
    assert sum(n for c, n in cells.items() if re.match(r"^LUT\d$", c)) > 1000  # the PCS and adapters are in
    assert sum(n for c, n in cells.items() if re.match(r"^FD[RSCP]E$", c)) > 1000


def test_full_top_lints_clean(board):
    from offnic_sim.tasks import lint_design
    _, r = board
    assert lint_design(r) == []


def test_msix_capability_points_at_the_msix_block():
    """ip.toml's MSI-X table and PBA offsets, against the layout of the NIC's register chain
    (RegBus.layout: each block aligned to its window, in nic.Nic's order) and the msix
    block's offsets (docs/registers.md); the table size against the NIC's vectors."""
    import json
    ip = facts.vendor_ip({})["pcie"]
    regmap = json.loads((hw.BUILD / "regmap.json").read_text()) if (hw.BUILD / "regmap.json").exists() else None
    order = ["device_id", "clock", "bar_access", "dma", "tx_queues", "rx_queues", "tx_cqs", "rx_cqs", "eqs", "msix"]
    windows = {"device_id": 0x40, "clock": 0x20, "bar_access": 0x20, "dma": 0x80, "tx_queues": 0x1000,
               "rx_queues": 0x1000, "tx_cqs": 0x1000, "rx_cqs": 0x1000, "eqs": 0x400, "msix": 0x400}
    if regmap is not None:  # the windows as the register map's source of truth has them
        for blk in regmap["blocks"]:
            if blk["name"] in windows:
                windows[blk["name"]] = int(blk["window_bytes"])
    at = 0
    for n in order:
        at = (at + windows[n] - 1) // windows[n] * windows[n]
        base = at
        at += windows[n]
    assert int(ip["CONFIG.PF0_MSIX_CAP_TABLE_OFFSET"], 16) == base + 0x40
    assert int(ip["CONFIG.PF0_MSIX_CAP_PBA_OFFSET"], 16) == base + 0x10
    assert ip["CONFIG.PF0_MSIX_CAP_TABLE_BIR"] == ip["CONFIG.PF0_MSIX_CAP_PBA_BIR"] == "BAR_1:0"
    assert int(ip["CONFIG.PF0_MSIX_CAP_TABLE_SIZE"], 16) + 1 == 4  # NicParams eqs (one vector each)


def test_vivado_script_reads_the_board_top(board):
    """`./offnic vivado` (no Vivado here: it writes its scripts and says so) builds the
    elaborated board top: its module as `top`, its generated files (the NIC's among them)
    as sources, the interface stubs not."""
    from offnic_sim.board import commands, vivado
    name, r = board
    rc = commands.cmd_vivado(["--board", name, "--step", "synth"])
    run = (hw.BUILD / "vivado" / name / "run.tcl").read_text()
    assert f"set top {r.top_module}\n" in run
    assert str(r.dir / "Nic.sv") in run and str(r.dir / f"{r.top_module}.sv") in run
    assert "stubs" not in run
    if vivado.vivado() is None:
        assert rc == 1  # scripts written, Vivado missing: said, and not a success
