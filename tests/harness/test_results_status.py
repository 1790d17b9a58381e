"""`./offnic results`: a results file is current only when the designs it records
elaborate today to the same RTL (or, for an older file, when the hash it records is
today's hardware digest: 16 hex digits or all 64), its plot goes with it, and the exit
status says whether anything is stale. The committed results/ are listed whole, but their being
stale does not fail the suite (regenerating them is a bench run, not a test)."""
import json

from offnic_sim.bench import results_status
from offnic_sim.harness import hw

NOW = "ab" * 32
OLD = "cd" * 32


def write(d, name, recs):
    (d / name).write_text(json.dumps(recs))


def test_current_stale_and_missing(tmp_path, capsys):
    write(tmp_path, "bench-base.json", [{"formula": "x"}, {"hw_sources_sha256": NOW[:16], "case": "a"}])
    (tmp_path / "bench-base.png").write_bytes(b"\x89PNG")
    write(tmp_path, "bench-toe.json", [{"hw_sources_sha256": NOW, "case": "b"}])  # the whole digest
    write(tmp_path, "bench-frag.json", [{"hw_sources_sha256": OLD[:16]}])
    write(tmp_path, "bench-cache.json", [{"case": "no hash here"}])
    write(tmp_path, "bench-short.json", [{"hw_sources_sha256": NOW[:4]}])  # too short to identify anything
    (tmp_path / "bench-lost.png").write_bytes(b"\x89PNG")  # a plot without its JSON
    (tmp_path / "bench-bad.json").write_text("{not json")
    got = {e.path.name: e for e in results_status.status(tmp_path, NOW)}
    assert {k: e.state for k, e in got.items()} == {
        "bench-base.json": "current", "bench-base.png": "current", "bench-toe.json": "current",
        "bench-frag.json": "stale", "bench-cache.json": "no hash", "bench-short.json": "stale",
        "bench-lost.png": "no hash", "bench-bad.json": "unreadable"}
    assert got["bench-frag.json"].recorded == OLD[:16]
    assert got["bench-frag.json"].command == "./offnic bench frag"
    assert got["bench-base.png"].command == "./offnic bench base"
    assert results_status.regen_command(tmp_path / "synth-nic.json") == "./offnic synth --config nic"
    assert results_status.regen_command(tmp_path / "bench-toe-nic.png") == "./offnic bench toe --part nic"
    assert results_status.main([], results_dir=tmp_path, current=NOW) == 1
    out = capsys.readouterr().out
    assert "bench-frag.json" in out and "stale" in out and "./offnic bench frag" in out


def test_all_current_exits_zero(tmp_path, capsys):
    write(tmp_path, "bench-base.json", [{}, {"hw_sources_sha256": NOW[:16]}])
    (tmp_path / "bench-base.png").write_bytes(b"\x89PNG")
    write(tmp_path, "bench-toe.json", [{"hw_sources_sha256": NOW}])
    assert results_status.main([], results_dir=tmp_path, current=NOW) == 0
    assert "all 3 files current" in capsys.readouterr().out
    # the hardware changes: every file is stale
    assert results_status.main([], results_dir=tmp_path, current=OLD) == 1


def test_judged_by_the_rtl_of_the_designs_measured(tmp_path):
    """A file naming its designs is current when each one's RTL is today's, whatever the
    hardware sources' digest says; one changed design of several makes it stale."""
    nic = {"top": "nic.Nic", "params": {"addr_bits": "24", "board_id": "0"}, "rtl_sha256": "11" * 32}
    toe = {"top": "toe.TcpOffload", "params": {"connections": "4096"}, "rtl_sha256": "22" * 32}
    write(tmp_path, "bench-base.json", [{"hw_sources_sha256": OLD[:16], "rtl_designs": [nic]}])
    write(tmp_path, "bench-toe.json", [{"hw_sources_sha256": OLD, "rtl_designs": [nic, toe]}])
    asked = []

    def rtl_of(recs):
        asked.append(len(recs))
        return {hw.Design.of("nic.Nic", addr_bits=24, board_id=0): "11" * 32,
                hw.Design.of("toe.TcpOffload", connections=4096): "33" * 32}
    got = {e.path.name: e for e in results_status.status(tmp_path, NOW, rtl_of)}
    assert got["bench-base.json"].state == "current" and got["bench-toe.json"].state == "stale"
    assert got["bench-base.json"].recorded.startswith("rtl 1111")
    assert asked == [3]  # every file's designs, asked for at once (one elaboration)


def test_committed_results_are_listed(capsys):
    """Every committed file appears with a state; stale ones are reported, not a failure."""
    results = hw.ROOT / "results"
    entries = results_status.status(results, hw.hw_sources_digest())
    assert {e.path.name for e in entries} == {p.name for p in results.iterdir() if p.is_file()}
    assert all(e.state in ("current", "stale") for e in entries), [(e.path.name, e.state) for e in entries]
    results_status.main([])
    assert "hardware sources now" in capsys.readouterr().out
