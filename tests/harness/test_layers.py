"""The simulation side's layers (ARCHITECTURE.md, "The simulation side"): every import
inside sim/offnic_sim goes down or sideways within its own package, never up, and no
modules import each other in a circle. Pure Python: reads the sources, runs nothing."""
import ast
from pathlib import Path

SIM = Path(__file__).resolve().parents[2] / "sim" / "offnic_sim"

# Lower layers first. A package may import from its own package and from lower layers.
LAYERS = [
    {"net", "phy"},               # protocols as bytes: Ethernet, IPv4 fragments, TCP; the BASE-R PCS model
    {"harness"},                  # Chisel elaboration, Verilator models, cocotb runs
    {"firmware", "fw", "board"},  # the firmware's build, constants and models; the board flow's generators
    {"host", "linux"},            # the driver model and host; real Linux through TAPs
    {"fast"},                     # the fast whole-NIC harness (C++ partners through DPI-C)
    {"vm"},                       # offnic.ko in a Linux VM against the NIC: vfio-user server, QEMU pieces
    {"bench"},                    # the whole-NIC workload's machinery and reports
    {"frag", "cache", "toe"},     # each offload: models, benches, reports
    {"nic_workload", "tasks"},    # the commands and the demo's simulation
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def modules() -> dict[str, Path]:
    out = {}
    for p in SIM.rglob("*.py"):
        rel = p.relative_to(SIM.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        out[name] = p
    return out


def imports_of(path: Path, known: set[str]) -> set[str]:
    """offnic_sim modules `path` imports, anywhere in the file (function-level too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("offnic_sim"):
            assert node.level == 0, f"{path}: relative import"
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in known else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("offnic_sim")}
    return found & known


def area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: {i for i in imports_of(p, known) if i != m and area(i)} for m, p in mods.items()}


def test_every_module_has_a_layer():
    missing = sorted({area(m) for m in modules() if area(m) and area(m) not in RANK})
    assert not missing, f"add these to LAYERS (and ARCHITECTURE.md): {missing}"


def test_no_import_goes_up_or_across():
    bad = []
    for m, deps in graph().items():
        for d in deps:
            a, b = area(m), area(d)
            if a == b:
                continue
            if RANK[b] >= RANK[a]:
                bad.append(f"{m} -> {d}")
    assert not bad, "imports against the layers:\n" + "\n".join(sorted(bad))


def test_no_import_circles():
    g = graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(g.get(m, ())):
            if state.get(d) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(d):] + [d]))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)
