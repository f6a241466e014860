"""scripts/docs_check.py (`make docs-check`) re-runs documented samples; it must catch a stale one."""
from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _checker():
    spec = importlib.util.spec_from_file_location("docs_check", REPO / "scripts" / "docs_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_stale_sample_fails_and_a_true_one_passes(tmp_path):
    checker = _checker()
    page = tmp_path / "page.md"
    page.write_text(
        "A true sample:\n\n"
        "    $ rcompat lock check fixtures/lock/pkg-broken.lock      # exit 1\n"
        "      OK    LOCK-READ              pak lockfile\n\n"
        "A stale one (a finding the command no longer prints, and a wrong exit code):\n\n"
        "    $ rcompat matrix check --driver 535.104 --cuda 12.4 --torch 2.3.0   # exit 1\n"
        "      FAIL  CUDA-MATRIX            first incompatible layer\n\n"
        "    $ rcompat matrix check --driver 550.54.14 --cuda 12.4 --torch 2.4.1   # exit 1\n")
    failures, not_run, ran = checker.check_page(page)
    assert ran == 3 and not not_run
    assert len(failures) == 2
    assert "shows FAIL CUDA-MATRIX, not printed now" in failures[0]
    assert "exit 0, the page says 1" in failures[1]
