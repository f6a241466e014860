"""From R, for real: the testthat suite in tests/testthat runs rcompat.R through reticulate, with
reticulate bound to this test runner's Python (where rcompat is installed)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _has_r_packages(rscript: str, *packages: str) -> bool:
    code = "q(status = if (all(sapply(c(%s), requireNamespace, quietly = TRUE))) 0 else 1)" % ", ".join(
        f'"{p}"' for p in packages)
    return subprocess.run([rscript, "-e", code], capture_output=True).returncode == 0


def test_testthat_suite_passes_from_r(rscript):
    if not _has_r_packages(rscript, "testthat", "reticulate", "jsonlite"):
        pytest.skip("R packages testthat, reticulate and jsonlite are needed (Debian: r-cran-testthat, "
                    "r-cran-reticulate, r-cran-jsonlite)")
    env = dict(os.environ, RETICULATE_PYTHON=sys.executable, RCOMPAT_ROOT=str(REPO), NOT_CRAN="true")
    env.pop("RCOMPAT_HOST_PID", None)
    run = subprocess.run(
        [rscript, "-e", 'testthat::test_dir("tests/testthat", stop_on_failure = TRUE, '
                        'reporter = testthat::SummaryReporter$new())'],
        cwd=str(REPO), env=env, capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-4000:]
    assert "DONE" in output or "Passed" in output or "PASS" in output, output[-2000:]


def test_rcompat_r_reports_a_missing_rcompat_python_clearly(rscript, tmp_path):
    """A Python without rcompat: one clear R error naming RETICULATE_PYTHON, not a Python traceback."""
    bare = Path("/usr/bin/python3")
    if not bare.exists():
        pytest.skip("no system python3 to stand for a Python without rcompat")
    env = dict(os.environ, RETICULATE_PYTHON=str(bare), PYTHONPATH="", PYTHONNOUSERSITE="1")
    code = (f'source("{REPO}/rcompat/r_scripts/rcompat.R"); '
            'r <- tryCatch(rcompat_doctor("r"), error = function(e) conditionMessage(e)); cat(r)')
    run = subprocess.run([rscript, "-e", code], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                         timeout=120)
    assert "cannot import rcompat" in run.stdout and "RETICULATE_PYTHON" in run.stdout, run.stdout + run.stderr
