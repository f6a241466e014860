"""The xdist groups of tests/conftest.py form in a real two-worker run.

Twice the groups silently stopped forming while every test still passed (docs/testing.md): the marks
were added in a trylast hook, after pytest-xdist had read them, and pytest 9.2's structured ids drop
the `@group` suffix pytest-xdist writes. So this runs pytest with two workers and `--dist loadgroup`,
as `make test` does, over a small tree whose conftest files are byte copies of the project's, and
checks on which worker each test ran (each test writes down its worker; nothing here reads wall time).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

RECORDING = '''
import os, pytest

def _record(name):
    with open(os.path.join(os.environ["GROUPS_OUT"], name), "w") as fh:
        fh.write(os.environ.get("PYTEST_XDIST_WORKER", "none"))
'''


def _tree(root: Path) -> Path:
    tests = root / "tests"
    (tests / "tier").mkdir(parents=True)
    shutil.copyfile(TESTS / "conftest.py", tests / "conftest.py")
    shutil.copyfile(TESTS / "tier" / "conftest.py", tests / "tier" / "conftest.py")
    (tests / "tier" / "test_in_root.py").write_text(RECORDING + "".join(
        f"\ndef test_tier_{i}():\n    _record('tier-{i}')\n" for i in range(6)))
    (tests / "test_owns_a_daemon.py").write_text(RECORDING + "".join(
        f"\n@pytest.mark.serial\ndef test_serial_{i}():\n    _record('serial-{i}')\n" for i in range(4)))
    for module in ("a", "b", "c"):
        (tests / f"test_plain_{module}.py").write_text(RECORDING + "".join(
            f"\ndef test_plain_{i}():\n    _record('plain-{module}-{i}')\n" for i in range(6)))
    return tests


def test_tier_and_serial_tests_each_keep_to_one_worker_of_two(tmp_path):
    pytest.importorskip("xdist")
    tests, out = _tree(tmp_path / "tree"), tmp_path / "out"
    out.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q", "-p", "no:cacheprovider",
         "--import-mode=importlib", "-W", "ignore::pytest.PytestUnknownMarkWarning", str(tests)],
        cwd=tmp_path / "tree", capture_output=True, text=True, timeout=300,
        env={**os.environ, "GROUPS_OUT": str(out)})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    workers = {f.name: f.read_text() for f in out.iterdir()}
    assert len(workers) == 6 + 4 + 18  # every test ran
    assert set(workers.values()) <= {"gw0", "gw1"}  # under xdist, not in the controller
    tier = {w for name, w in workers.items() if name.startswith("tier-")}
    serial = {w for name, w in workers.items() if name.startswith("serial-")}
    assert len(tier) == 1, f"the tier ran on {sorted(tier)}: its group did not form"
    assert len(serial) == 1, f"the serial tests ran on {sorted(serial)}: their group did not form"
