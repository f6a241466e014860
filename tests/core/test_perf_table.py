"""scripts/perf_table.py: benchmark results (JSON lines from benchmarks/_common.record) to docs/performance.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MACHINE = {"cores": 2, "cpu": "Example CPU @ 2.0GHz", "os": "Debian GNU/Linux 12 (bookworm)", "python": "3.11.7",
           "torch": "2.13.0+cpu", "load_average": 0.5, "date": "2026-12-03 09:00 UTC"}


@pytest.fixture(scope="module")
def perf_table(load_helper):
    return load_helper("perf_table", REPO / "scripts/perf_table.py")


def record_lines(tmp_path: Path, rows: list[tuple]) -> Path:
    """Results as benchmarks/_common.record writes them, from a real call of record()."""
    out = tmp_path / "results.jsonl"
    out.write_text(json.dumps({"machine": MACHINE}) + "\n")
    code = ("import sys; sys.path.insert(0, 'benchmarks'); from _common import record\n"
            f"for row in {rows!r}:\n    record(*row)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True, text=True,
                          env=dict(os.environ, RCOMPAT_BENCH_OUT=str(out)))
    assert proc.returncode == 0, proc.stderr
    return out


def test_results_become_the_markdown_table(perf_table, tmp_path):
    results = record_lines(tmp_path, [
        ("bench_a", "symbols | text", 0.2, "nm -D", 0.125, 2, "same text"),
        ("bench_b", "diff", 0.5, "abidiff", 10.0, 0.1),
        ("bench_c", "probe", 1.5, "collect_env", 1.0),
    ])
    doc = tmp_path / "perf.md"
    assert perf_table.main(["--from", str(results), "--output", str(doc)]) == 0
    text = doc.read_text()
    assert ("| `bench_a` | symbols \\| text (same text) | 0.200 s | nm -D | 0.125 s | 1.60× | ≤ 2× | yes |\n"
            "| `bench_b` | diff | 0.500 s | abidiff | 10.000 s | 0.05× | ≤ 0.1× | yes |\n"
            "| `bench_c` | probe | 1.500 s | collect_env | 1.000 s | 1.50× | — | — |\n") in text
    assert "Every benchmark ran, and every goal was met." in text
    assert "- 2 cores: Example CPU @ 2.0GHz" in text and "torch 2.13.0+cpu" in text and "2026-12-03 09:00 UTC" in text
    assert f"python scripts/perf_table.py --from {results}" in text
    assert perf_table.main(["--from", str(results), "--output", str(doc)]) == 0
    assert doc.read_text() == text  # the same results give the same document


def test_a_missed_goal_or_failed_benchmark_is_written_and_exits_1(perf_table, tmp_path):
    results = record_lines(tmp_path, [("bench_a", "symbols", 0.3, "nm -D", 0.1, 2)])
    with open(results, "a") as fh:
        fh.write(json.dumps({"failed": ["bench_z"]}) + "\n")
    doc = tmp_path / "perf.md"
    assert perf_table.main(["--from", str(results), "--output", str(doc)]) == 1
    text = doc.read_text()
    assert "| 3.00× | ≤ 2× | **no** |" in text
    assert "`bench_z` failed" in text and "`bench_a`: symbols at 3.00× (goal ≤ 2×)" in text


def test_a_benchmark_that_exits_1_for_its_missed_goal_is_not_also_called_failed(perf_table, tmp_path):
    """A benchmark exits 1 when a row misses its goal; rows may name it without `bench_` and with `-`."""
    results = record_lines(tmp_path, [("bench_a", "symbols", 0.3, "nm -D", 0.1, 2),
                                      ("image-read", "scan", 3.0, "directories", 1.0, 1.5)])
    with open(results, "a") as fh:
        fh.write(json.dumps({"failed": ["bench_a", "bench_image_read", "bench_z"]}) + "\n")
    doc = tmp_path / "perf.md"
    assert perf_table.main(["--from", str(results), "--output", str(doc)]) == 1
    text = doc.read_text()
    assert "`bench_z` failed" in text
    assert "`bench_a` failed" not in text and "`bench_image_read` failed" not in text
    assert "`image-read`: scan at 3.00× (goal ≤ 1.5×)" in text


@pytest.mark.parametrize("content, words", [
    ("{not json\n", "not JSON"),
    ('{"benchmark": "b", "what": "w"}\n', "lacks rcompat_s"),
    ('{"benchmark": "b", "what": "w", "rcompat_s": "fast", "tool": "t", "tool_s": 1, "ratio": 1, "goal": null, '
     '"ok": true}\n', "must be numbers"),
    ("[1, 2]\n", "expected a JSON object"),
])
def test_bad_results_are_one_line_errors_and_write_nothing(tmp_path, content, words):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    doc = tmp_path / "perf.md"
    proc = subprocess.run([sys.executable, "scripts/perf_table.py", "--from", str(bad), "--output", str(doc)],
                          cwd=str(REPO), capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr
    assert "Traceback" not in proc.stderr and not doc.exists() and list(tmp_path.iterdir()) == [bad]


def test_an_unknown_benchmark_name_is_refused_before_anything_runs(tmp_path):
    doc = tmp_path / "perf.md"
    proc = subprocess.run([sys.executable, "scripts/perf_table.py", "--only", "bench_nothing", "--output", str(doc)],
                          cwd=str(REPO), capture_output=True, text=True)
    assert proc.returncode == 2 and "no such benchmark: bench_nothing" in proc.stderr and not doc.exists()
