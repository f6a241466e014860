"""Is this Python inside R? Real /proc files, and a real reticulate session."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from rcompat.r.host import host_is_r, locate_r, r_host


def test_pytest_is_not_hosted_by_r():
    assert host_is_r() is False
    assert r_host().r_in_process is False


def test_libr_in_the_maps_means_r_hosts_us(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f0000000000-7f0000100000 r-xp 00000000 08:01 1234  /usr/lib/R/lib/libR.so\n")
    host = r_host(maps_path=str(maps), exe_path=str(tmp_path / "no-exe"))
    assert host.hosted_by_r and "libR.so" in host.evidence


def test_locate_r_prefers_r_home_and_reads_r_home_from_the_front_end(tmp_path):
    found = locate_r({"PATH": "/usr/bin"})
    assert found and found.found_by == "PATH" and found.r_home == "/usr/lib/R"
    assert locate_r({"PATH": str(tmp_path)}) is None
    assert locate_r({"PATH": str(tmp_path), "R_HOME": "/usr/lib/R"}).found_by == "R_HOME"


def test_called_through_reticulate_uses_rscript_not_rpy2():
    if not shutil.which("Rscript"):
        pytest.skip("Rscript not installed")
    code = ('library(reticulate); r <- import("rcompat.r"); f <- r$probe(timeout = 60, discover_python = FALSE);'
            'cat(r$host_is_r(), f$engine, f$rpy2$used, f$version_string, sep = "|")')
    proc = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "RETICULATE_PYTHON": sys.executable})
    if "there is no package called" in proc.stderr:
        pytest.skip("reticulate not installed")
    assert proc.returncode == 0, proc.stderr
    hosted, engine, used, version = proc.stdout.strip().split("|")
    assert (hosted, engine, used) == ("TRUE", "rscript", "FALSE")
    assert version.startswith("R version")


def test_rcompat_host_pid_marks_only_the_process_it_names(monkeypatch):
    import os

    from rcompat.r.host import HOST_PID_VARIABLE, r_host

    monkeypatch.setenv(HOST_PID_VARIABLE, str(os.getpid()))
    assert r_host().hosted_by_r
    monkeypatch.setenv(HOST_PID_VARIABLE, str(os.getppid()))  # a child of the R host: not hosted
    assert not r_host().hosted_by_r
