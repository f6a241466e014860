"""The fleet report's HTML page opened in a real headless Chromium (Debian's package), screenshotted,
and the status colours of its grid found in the screenshot's pixels."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rcompat.renderers.html import COLOURS

CHROMIUM = "/usr/bin/chromium"


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


@pytest.fixture(scope="module")
def chromium():
    path = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if not path:
        pytest.skip("chromium not installed (make test installs Debian's chromium)")
    return path


def test_the_page_shows_the_grid_in_status_colours(cli, chromium, tmp_path, load_helper):
    reports = load_helper("fleet_reports_html", Path(__file__).with_name("_reports.py"))
    png = load_helper("fleet_png", Path(__file__).with_name("_png.py"))
    base = reports.doctor_report()
    reports.write_fleet(tmp_path / "fleet", base, 12, odd_driver={5}, failing={7})
    page, shot = tmp_path / "fleet.html", tmp_path / "fleet.png"
    out = cli("fleet", "report", str(tmp_path / "fleet"), "--format", "html", "-o", str(page))
    assert out.returncode == 1 and page.stat().st_size > 0
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                           "--force-color-profile=srgb", f"--user-data-dir={tmp_path / 'profile'}",
                           f"--screenshot={shot}", "--window-size=900,600", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    seen = png.colours(shot.read_bytes())
    assert len(seen) > 20  # a rendered page, not a blank one
    for status in ("ok", "fail"):  # the grid's cells: most nodes ok, n7 failing, the driver difference
        assert _rgb(COLOURS[status]) in seen, status
