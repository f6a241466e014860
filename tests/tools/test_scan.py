"""scan: deprecated/removed torch APIs in Python and R files, located to file:line:col."""
from __future__ import annotations

import json
import os
from pathlib import Path


from rcompat.model import Status
from rcompat.tools.scan import code_part, load_apis, scan

PROJECT = Path(__file__).resolve().parents[2] / "fixtures" / "scan" / "project"


def _uses(report):
    return {(Path(f.evidence["file"]).name, f.evidence["line"], f.evidence["column"], f.id)
            for f in report.findings if f.id != "SCAN-CLEAN"}


def test_finds_each_use_with_its_position():
    assert _uses(scan([str(PROJECT)])) == {
        ("train.py", 3, 1, "PY-AUTOGRAD-VARIABLE"), ("train.py", 4, 1, "PY-TORCH-SIX"),
        ("train.py", 6, 10, "PY-CUDA-AMP-GRADSCALER"), ("train.py", 11, 10, "PY-CUDA-AMP-AUTOCAST"),
        ("train.py", 13, 14, "PY-TORCH-SOLVE"), ("train.py", 16, 13, "PY-TORCH-LOAD-NO-WEIGHTS-ONLY"),
        ("model.R", 6, 8, "R-TORCH-CHOLESKY"), ("model.R", 7, 8, "R-TORCH-SYMEIG"),
        ("model.R", 9, 24, "R-KERAS-FIT-GENERATOR"),
    }


def test_removed_is_fail_deprecated_is_warn():
    report = scan([str(PROJECT)])
    by_id = {f.id: f for f in report.findings}
    assert by_id["PY-TORCH-SOLVE"].status is Status.FAIL and "removed in torch 2.0.0" in by_id["PY-TORCH-SOLVE"].message
    assert by_id["PY-CUDA-AMP-AUTOCAST"].status is Status.WARN
    assert by_id["PY-CUDA-AMP-AUTOCAST"].remedy == 'use torch.amp.autocast("cuda", ...)'
    assert report.exit_code() == 1


def test_comments_and_strings_are_not_code():
    assert code_part('x = "torch.eig(a)"  # torch.lstsq(a)').strip() == 'x = "' + " " * len("torch.eig(a)") + '"'
    assert code_part("y <- 'a # b'  # note") == "y <- '     '  "


def test_clean_file_is_ok():
    report = scan([str(PROJECT / "python" / "clean.py")])
    assert [f.id for f in report.findings] == ["SCAN-CLEAN"] and report.exit_code() == 0


def test_every_api_row_compiles_and_names_its_source():
    apis = load_apis()
    assert {a.language for a in apis} == {"python", "r"}
    assert all(a.source and a.confidence for a in apis)


def test_cli_lines_are_file_line_col(cli):
    run = cli("scan", str(PROJECT))
    assert run.returncode == 1
    assert f"{PROJECT / 'python' / 'train.py'}:13:14: fail PY-TORCH-SOLVE" in " ".join(run.stdout.split())
    assert run.stdout.strip().splitlines()[-1].startswith("scan: 3 file(s), 9 use(s)")
    missing = cli("scan", "/nonexistent/dir")
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr


def test_fifo_inside_a_scanned_directory_is_skipped_not_read_forever(cli, tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "pipe.py")  # no writer: reading it would block until the test's timeout
    out = cli("scan", str(tmp_path), "--format", "json", timeout=20)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["facts"]["scan"]["files"] == 1
