"""`lock check --cuda`: a value that is not a version is refused (it was silently ignored when the
lockfile pins no torch), and a lockfile without a torch pin says --cuda was not checked."""
from __future__ import annotations

from pathlib import Path

import pytest

from rcompat.errors import UsageError
from rcompat.model import Status
from rcompat.tools.lock import check_lockfile

LOCK = Path(__file__).resolve().parents[2] / "fixtures" / "lock"
NO_TORCH = '{"R": {"Version": "4.4.1"}, "Packages": {"Rcpp": {"Package": "Rcpp", "Version": "1.0.13"}}}\n'


@pytest.mark.parametrize("lock_text", [None, NO_TORCH])
def test_cuda_that_is_not_a_version_is_refused_with_or_without_a_torch_pin(cli, tmp_path, lock_text):
    lock = LOCK / "renv.lock"
    if lock_text:
        lock = tmp_path / "renv.lock"
        lock.write_text(lock_text)
    out = cli("lock", "check", str(lock), "--cuda", "abc")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == ["rcompat: error: --cuda 'abc' is not a CUDA version (e.g. 12.4)"]
    with pytest.raises(UsageError):
        check_lockfile(lock, cuda="twelve")


def test_cuda_without_a_torch_pin_is_a_skip_that_says_so(tmp_path):
    lock = tmp_path / "renv.lock"
    lock.write_text(NO_TORCH)
    report = check_lockfile(lock, cuda="12.4")
    (skip,) = [f for f in report.findings if f.id == "LOCK-CUDA"]
    assert skip.status is Status.SKIP and "12.4 not checked" in skip.title and "torch" in skip.title
    assert report.exit_code() == 0


def test_cuda_with_a_torch_pin_still_checks_it():
    report = check_lockfile(LOCK / "renv.lock", cuda=" 12.4 ")
    assert any(f.id == "CUDA-MATRIX-RTORCH" for f in report.findings)
    assert not any(f.id == "LOCK-CUDA" for f in report.findings)
