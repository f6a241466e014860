"""lock check: renv and pak lockfiles, a broken pin, corrupt and unknown files."""
from __future__ import annotations

from pathlib import Path

import pytest

from rcompat.model import Status
from rcompat.tools.lock import LockfileError, check_lockfile, read_lockfile

LOCK = Path(__file__).resolve().parents[2] / "fixtures" / "lock"
RULES = str(LOCK / "rules.toml")


def test_renv_lockfile_is_read():
    lock = read_lockfile(LOCK / "renv.lock")
    assert lock.format == "renv" and lock.r_version == "4.4.1"
    assert lock.packages == {"Rcpp": "1.0.13", "reticulate": "1.39.0", "torch": "0.13.0"}


def test_pak_lockfile_is_read_with_r_from_its_version_string():
    lock = read_lockfile(LOCK / "pkg.lock")
    assert lock.format == "pak" and lock.r_version == "4.4.1"
    assert lock.packages == {"torch": "0.13.0", "Rcpp": "1.0.13"}


@pytest.mark.parametrize("name", ["renv.lock", "pkg.lock"])
def test_valid_lockfiles_pass(name):
    report = check_lockfile(LOCK / name, rules_path=RULES)
    assert report.exit_code() == 0
    assert [f.id for f in report.findings] == ["LOCK-READ", "LOCK-RULES"]


@pytest.mark.parametrize("name", ["renv-broken.lock", "pkg-broken.lock"])
def test_broken_pin_is_a_fail_from_the_rule(name):
    report = check_lockfile(LOCK / name, rules_path=RULES)
    fails = report.by_status(Status.FAIL)
    assert [f.id for f in fails] == ["FIX-R45-TORCH-OLD"]
    assert fails[0].area == "lock" and report.exit_code() == 1


def test_the_packaged_rules_catch_the_broken_renv_pin():
    report = check_lockfile(LOCK / "renv-broken.lock")
    assert "R-R45-TORCH-TENSOR-SEGV" in {f.id for f in report.by_status(Status.FAIL)}


def test_pin_without_a_version_is_reported_not_crashed():
    report = check_lockfile(LOCK / "renv-broken.lock", rules_path=RULES)
    unparsed = [f for f in report.findings if f.id == "LOCK-UNPARSED-PINS"]
    assert unparsed and unparsed[0].evidence["unparsed"] == {"mytools": ""}


def test_cuda_option_checks_the_torch_pin_against_the_cuda_tables():
    broken = LOCK / "renv.lock"
    report = check_lockfile(broken, rules_path=RULES, cuda="12.4")
    rtorch = [f for f in report.findings if f.id == "CUDA-MATRIX-RTORCH"]
    assert rtorch, [f.id for f in report.findings]


@pytest.mark.parametrize("name, message", [("corrupt.lock", "not valid JSON"),
                                           ("unknown-format.lock", "unknown lockfile format"),
                                           ("missing.lock", "no such file")])
def test_unreadable_lockfiles_raise_a_clear_error(name, message):
    with pytest.raises(LockfileError, match=message):
        read_lockfile(LOCK / name)


def test_cli_exit_codes(cli):
    ok = cli("lock", "check", str(LOCK / "pkg.lock"), "--rules", RULES)
    assert ok.returncode == 0 and "pak lockfile: R 4.4.1, 2 package(s)" in ok.stdout
    broken = cli("lock", "check", str(LOCK / "renv-broken.lock"), "--rules", RULES, "-f", "junit")
    assert broken.returncode == 1 and "FIX-R45-TORCH-OLD" in broken.stdout and "<failure" in broken.stdout
    corrupt = cli("lock", "check", str(LOCK / "corrupt.lock"))
    assert corrupt.returncode == 2 and corrupt.stderr.count("\n") == 1 and "not valid JSON" in corrupt.stderr
