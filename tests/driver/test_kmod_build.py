"""offnic.ko builds against Debian's kernel headers with W=1 and sparse (C=2) without a
single warning, and checkpatch.pl --strict --no-tree finds nothing in any of its
sources (what `./offnic driver` runs). The checkers themselves are shown to bite: a file
with known faults gives findings. The headers and checkpatch are the project's own
dependencies (`./offnic setup` installs both): missing, they fail the test, not skip it."""
import pytest

from offnic_sim.harness import kdriver


def _need(fn):
    try:
        return fn()
    except RuntimeError as e:
        pytest.fail(f"{e} (./offnic setup installs it)")


def test_module_builds_clean_under_w1_and_sparse():
    _need(kdriver.kernel_dir)
    b = kdriver.build_module()
    assert b.ok, b.log[-4000:]
    assert b.files_checked >= 10, f"sparse checked {b.files_checked} files:\n{b.log[-2000:]}"
    assert not b.findings, "\n".join(b.findings)
    assert kdriver.MODULE.stat().st_size > 0


def test_checkpatch_strict_is_clean():
    _need(kdriver.checkpatch_script)
    findings, n = kdriver.checkpatch()
    assert n >= 15
    assert not findings, "\n".join(findings)


def test_checkpatch_reports_faults(tmp_path):
    _need(kdriver.checkpatch_script)
    bad = tmp_path / "bad.c"
    bad.write_text("// SPDX-License-Identifier: GPL-2.0\n#include <linux/types.h>\n"
                   "int f(int *x){\n  if (x == NULL) { return 1; }\n  return 0;\n}\n")
    findings, _ = kdriver.checkpatch([bad])
    kinds = {line.split(": ")[1].split(":")[0] for line in findings}
    assert {"ERROR", "WARNING", "CHECK"} <= kinds, findings


def test_compiler_findings_are_recognised():
    log = ("  CC [M]  /x/offnic_tx.o\n/x/offnic_tx.c:12:5: warning: unused variable 'a' [-Wunused-variable]\n"
           "/x/offnic_rx.c:3:1: warning: incorrect type in assignment (different base types)\n"
           "Skipping BTF generation for /x/offnic.ko due to unavailability of vmlinux\n")
    assert [line for line in log.splitlines() if kdriver._DIAG.search(line) and "Skipping BTF" not in line] == \
        log.splitlines()[1:3]
