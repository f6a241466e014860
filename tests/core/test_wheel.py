"""rcompat as a package: the wheel built from this checkout carries everything rcompat reads at run
time (R scripts, data tables), and the doctor runs from a fresh venv where only that wheel is."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNTIME_DIRS = ("rcompat/r_scripts", "rcompat/data")


@pytest.fixture(scope="module")
def wheel(wheel_builder, tmp_path_factory) -> Path:
    return wheel_builder(tmp_path_factory.mktemp("wheel"))


def test_wheel_carries_the_r_scripts_and_tables(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in RUNTIME_DIRS:
        expected = {str(p.relative_to(REPO)) for p in (REPO / folder).iterdir()
                    if p.is_file() and p.suffix in (".R", ".toml", ".csv")}
        assert expected and expected <= names, sorted(expected - names)


@pytest.mark.slow
def test_doctor_runs_from_a_fresh_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                              str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RCOMPAT_R_SCRIPTS"))}
    proc = subprocess.run([str(venv / "bin/rcompat"), "doctor", "--format", "json", "--no-cache", "--only", "r,python"],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path), env=env)
    assert proc.returncode in (0, 1), proc.stderr
    report = {f["id"]: f for f in json.loads(proc.stdout)["findings"]}
    assert report["R-VERSION"]["status"] == "ok", report["R-VERSION"]
    scripts = report["R-VERSION"]["evidence"]["install"]
    assert str(REPO) not in json.dumps(report), "the installed rcompat read files of the checkout"
    assert not [f for f in report.values() if f["status"] == "error"], scripts
    # without rpy2 in that venv the facts come from an Rscript child running the wheel's r_facts.R
    assert report["R-RPY2"]["status"] == "skip" and report["R-VERSION"]["evidence"]["engine"] == "rscript"
