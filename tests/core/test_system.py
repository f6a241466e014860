"""The facts collect_env and sessionInfo() users look for first (issue 20.9), read without heavy tools,
checked against a second source each, and present in every format."""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess

import pytest

from rcompat.system import cpu_info, glibc_version, nvcc, os_release, system_facts


def test_os_release_matches_the_standard_library_reader():
    assert os_release() == {k: v for k, v in platform.freedesktop_os_release().items()}


def test_glibc_is_the_version_the_loader_reports():
    lib, version = platform.libc_ver()
    assert lib == "glibc" and glibc_version() == f"glibc {version}"


def test_cpu_flags_are_the_kernels():
    flags = set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    info = cpu_info()
    assert info["flags"]["avx2"] == ("avx2" in flags) and info["flags"]["avx512f"] == ("avx512f" in flags)
    assert info["model"] and info["logical_cpus"] == os.cpu_count()


def test_a_missing_cpuinfo_gives_no_flags_not_an_error(tmp_path):
    info = cpu_info(str(tmp_path / "none"))
    assert info["flags_read"] is False and not any(info["flags"].values())


def test_nvcc_version_is_what_nvcc_itself_says():
    found = nvcc()
    if not found:
        pytest.skip("no CUDA toolkit on this machine")
    said = subprocess.run([found["path"], "--version"], capture_output=True, text=True, timeout=30).stdout
    assert f"V{found['version']}" in said


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "junit"])
def test_every_format_shows_the_system_facts(cli, fmt):
    run = cli("doctor", "--only", "system", "--format", fmt)
    assert run.returncode == 0, run.stderr
    for finding_id in ("SYS-OS", "SYS-COMPILER", "SYS-CPU", "SYS-NVCC", "SYS-LOCALE"):
        assert finding_id in run.stdout
    assert glibc_version() in run.stdout
    if fmt == "json":
        facts = json.loads(run.stdout)["facts"]["system"]
        assert facts["os"]["id"] == os_release().get("ID")
        assert facts == json.loads(json.dumps(system_facts()))  # the same reading, every run


def test_the_compiler_is_the_one_on_path():
    facts = system_facts()["compiler"]
    gcc = shutil.which("gcc") or shutil.which("cc")
    assert facts["path"] == gcc
    if gcc:
        assert facts["version"] == subprocess.run([gcc, "-dumpfullversion", "-dumpversion"], capture_output=True,
                                                  text=True).stdout.strip()
