"""--plot draws a real image with matplotlib (skipped without it); --series .json holds the columns."""
from __future__ import annotations

import importlib.util
import json
import shutil

import pytest


def test_plot_writes_a_png_and_series_a_json_of_columns(cli, workloads, tmp_path):
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib not installed (pip install 'rcompat[plot]')")
    if not shutil.which("Rscript"):
        pytest.skip("Rscript not installed")
    png, series = tmp_path / "mem.png", tmp_path / "mem.json"
    proc = cli("soak", "--side", "r", "--cases", str(workloads["leak.R"]), "--iterations", "12",
               "--warmups", "1", "--plot", str(png), "--series", str(series), "--format", "json")
    assert proc.returncode == 1, proc.stderr  # the R leak
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    columns = json.loads(series.read_text())
    assert columns["iteration"] == list(range(12))
    assert len(columns["r_heap_after"]) == 12 and columns["r_heap_after"][-1] > columns["r_heap_after"][0]
    soak = json.loads(proc.stdout)["facts"]["soak"]
    assert soak["plot_file"] == str(png) and soak["series_file"] == str(series)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mem.json", "mem.png"]  # no temp file left
