"""Any terminal, any locale, any state of the standard streams; linear work on looping or bloated inputs.

The Latin-1 locale is compiled with localedef into the test's own directory (LOCPATH), so the case
needs no root and no change to the machine; the looping ld.so.conf and the ELF with many DT_NEEDED
entries times many RUNPATH directories are written by the tests.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCES = Path("/usr/share/i18n/charmaps/ISO-8859-1.gz")


@pytest.fixture(scope="session")
def latin1(tmp_path_factory):
    if not shutil.which("localedef") or not SOURCES.exists():
        pytest.skip("localedef or the locale sources are missing (Debian package locales)")
    root = tmp_path_factory.mktemp("locales")
    subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(root / "en_US.ISO-8859-1")],
                   check=True, timeout=120, capture_output=True)
    return {"LOCPATH": str(root), "LC_ALL": "en_US.ISO-8859-1", "LANG": "en_US.ISO-8859-1",
            "PYTHONIOENCODING": "", "PYTHONUTF8": "0"}


@pytest.fixture(scope="session")
def hostile_names_lib(tmp_path_factory, gcc):
    """libx.so needing "lib<ESC>[31mred.so" (missing) with RUNPATH "/nowhere/é≥"."""
    d = tmp_path_factory.mktemp("names")
    (d / "empty.c").write_text("int f(void) { return 0; }\n")
    red = "lib\x1b[31mred.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(d / red), str(d / "empty.c")], check=True, timeout=60)
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(d / "libx.so"), str(d / "empty.c"), "-Wl,--no-as-needed",
                    f"-L{d}", "-l:" + red, "-Wl,--enable-new-dtags,-rpath,/nowhere/é≥"], check=True, timeout=60)
    (d / red).unlink()
    return d / "libx.so"


def test_a_latin1_terminal_gets_a_report_not_a_unicode_error(sentinel, latin1, hostile_names_lib):
    outcome = sentinel.run("elf", "deps", str(hostile_names_lib), env=latin1, wall_s=60)
    assert outcome.returncode == 1, outcome  # a library is missing: a finding, not an error
    assert "UnicodeEncodeError" not in outcome.stderr and "internal error" not in outcome.stderr
    # the tree's box-drawing characters do not exist in Latin-1: replaced by "?", the line still there
    assert "\x1b" not in outcome.stdout and "? lib\\x1b[31mred.so => not found" in outcome.stdout


def test_a_latin1_terminal_gets_the_doctor_report(sentinel, latin1):
    outcome = sentinel.run("doctor", "--only", "system", env=latin1, wall_s=60)
    assert outcome.returncode in (0, 1) and "summary:" in outcome.stdout, outcome
    assert "internal error" not in outcome.stderr


@pytest.mark.parametrize("command", [("elf", "missing"), ("elf", "versions")])
def test_control_characters_from_elf_strings_are_escaped(sentinel, hostile_names_lib, command):
    outcome = sentinel.run(*command, str(hostile_names_lib), wall_s=60)
    assert "internal error" not in outcome.stderr, outcome
    assert "\x1b" not in outcome.stdout


def _run_raw(harness, sentinel, *argv, **popen):
    import sys

    return subprocess.run([sys.executable, "-m", "rcompat", *argv], cwd=sentinel.work, env=sentinel.env(),
                          timeout=60, capture_output="stdout" not in popen and "stderr" not in popen, **popen)


def test_closed_stdout_is_an_error_named_exit_2(harness, sentinel):
    proc = _run_raw(harness, sentinel, "doctor", "--only", "system", stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2 and b"standard output is closed" in proc.stderr, proc.stderr


def test_full_stdout_is_an_error_named_exit_2(harness, sentinel):
    with open("/dev/full", "w") as full:
        proc = _run_raw(harness, sentinel, "doctor", "--only", "system", stdout=full, stderr=subprocess.PIPE)
    assert proc.returncode == 2 and b"No space left on device" in proc.stderr
    assert b"Exception ignored" not in proc.stderr


def test_a_full_output_file_is_named(sentinel):
    outcome = sentinel.run("doctor", "--only", "system", "-o", "/dev/full", wall_s=60)
    assert outcome.returncode == 2 and "/dev/full" in outcome.stderr and "No space left" in outcome.stderr


@pytest.mark.parametrize("stderr", ["closed", "full"])
def test_an_unwritable_stderr_keeps_exit_2(harness, sentinel, stderr):
    if stderr == "full":
        with open("/dev/full", "w") as full:
            proc = _run_raw(harness, sentinel, "elf", "deps", "/nonexistent", stdout=subprocess.PIPE, stderr=full)
    else:
        proc = _run_raw(harness, sentinel, "elf", "deps", "/nonexistent", stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, preexec_fn=lambda: os.close(2))
    assert proc.returncode == 2


def test_closed_stdin_is_an_error_named(harness, sentinel):
    proc = _run_raw(harness, sentinel, "lock", "check", "-", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    preexec_fn=lambda: os.close(0))
    assert proc.returncode == 2 and b"internal error" not in proc.stderr, proc.stderr


def test_a_self_including_ld_so_conf_is_read_once(sentinel, tmp_path, hostile_names_lib):
    root = sentinel.inputs / "root"
    (root / "etc").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "etc" / "ld.so.conf").write_text("include /etc/ld.so.conf\n" * 3 + "/opt/lib\n")
    shutil.copy(hostile_names_lib, root / "lib" / "libx.so")
    from rcompat.elf.link.ldconf import conf_dirs
    from rcompat.elf.link.root import as_root

    assert conf_dirs(as_root(str(root)))[0] == "/opt/lib"
    outcome = sentinel.run("elf", "deps", "/lib/libx.so", "--root", str(root), wall_s=60)
    assert not outcome.timed_out and outcome.returncode == 1, outcome  # libc is not in this root


@pytest.fixture(scope="session")
def many_needed(tmp_path_factory, gcc):
    """An object with 150 DT_NEEDED entries (none present) and 150 RUNPATH directories: 22,500 places."""
    d = tmp_path_factory.mktemp("needed")
    (d / "empty.c").write_text("int f(void) { return 0; }\n")
    libs = d / "libs"
    libs.mkdir()
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(libs / "libn0.so"), str(d / "empty.c")], check=True,
                   timeout=60)
    for i in range(1, 150):  # no SONAME: DT_NEEDED is the file name ld found
        os.link(libs / "libn0.so", libs / f"libn{i}.so")
    rpath = ":".join(f"/nowhere/{i}" for i in range(150))
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(d / "libmany.so"), str(d / "empty.c"), "-Wl,--no-as-needed",
                    f"-L{libs}", *[f"-ln{i}" for i in range(150)], f"-Wl,--enable-new-dtags,-rpath,{rpath}"],
                   check=True, timeout=60)
    shutil.rmtree(libs)
    return d / "libmany.so"


def test_dependency_resolution_is_bounded_by_places_with_the_limit_named(sentinel, many_needed):
    outcome = sentinel.run("elf", "deps", str(many_needed), env={"RCOMPAT_MAX_LINK_PLACES": "5000"}, wall_s=60)
    assert outcome.returncode == 2, outcome
    assert "more than 5,000 distinct (library, directory) places" in outcome.stderr
    assert "RCOMPAT_MAX_LINK_PLACES" in outcome.stderr
    within = sentinel.run("elf", "deps", str(many_needed), "--format", "json", wall_s=60)
    assert within.returncode == 1 and within.stdout.count('"libn') >= 150  # every one missing, each named


def test_scan_names_and_counts_what_it_skips_and_strict_fails(sentinel):
    (sentinel.inputs / "a.py").write_text("import torch\n")
    os.mkfifo(sentinel.inputs / "pipe.py")
    (sentinel.inputs / "big.py").write_text("#" * 6_000_000)
    outcome = sentinel.run("scan", str(sentinel.inputs), wall_s=60)
    assert outcome.returncode == 0, outcome
    assert "pipe.py: skipped: is a FIFO" in outcome.stdout and "big.py: skipped" in outcome.stdout
    assert "2 input(s) skipped" in outcome.stdout
    strict = sentinel.run("scan", "--strict", "--format", "json", str(sentinel.inputs), wall_s=60)
    assert strict.returncode == 1 and "SCAN-SKIPPED" in strict.stdout
    import json

    assert json.loads(strict.stdout)["facts"]["scan"] == {"files": 1, "skipped": 2, "apis": pytest.approx(
        json.loads(strict.stdout)["facts"]["scan"]["apis"]), "uses": 0}


@pytest.mark.parametrize("text", ["٣.١", "１２.4", "9" * 5000])
def test_versions_refuse_unicode_digits_and_never_echo_a_huge_argument(text):
    from rcompat.versions import Version

    with pytest.raises(ValueError) as info:
        Version.parse(text)
    assert len(str(info.value)) < 120 and "Exceeds the limit" not in str(info.value)


def test_patch_diff_of_a_sparse_change_keeps_a_bounded_number_of_runs(sentinel):
    import numpy as np

    from rcompat.elf.patch.results import MAX_RUNS

    size = 16 << 20
    original = np.zeros(size, np.uint8)
    patched = original.copy()
    patched[::16] = 1  # a change every 16 bytes: a million runs
    (sentinel.inputs / "a.bin").write_bytes(original.tobytes())
    (sentinel.inputs / "b.bin").write_bytes(patched.tobytes())
    outcome = sentinel.run("elf", "patch-diff", str(sentinel.inputs / "a.bin"), str(sentinel.inputs / "b.bin"),
                           "--format", "json", mem_mb=640, wall_s=120)
    assert outcome.returncode in (0, 1) and not outcome.timed_out, outcome.stderr[-2000:]
    import json

    result = json.loads(outcome.stdout)
    assert result["totals"]["runs"] == size // 16 and result["totals"]["changed_bytes"] == size // 16
    assert len(result["runs"]) == MAX_RUNS and result["totals"]["runs_not_listed"] == size // 16 - MAX_RUNS
    assert any("the rest only counted" in w for w in result["warnings"])


@pytest.mark.parametrize("argv", [("doctor", "--jobs", "٣"), ("doctor", "--timeout", "３"),
                                  ("doctor", "--jobs", "9" * 5000), ("matrix", "check", "--driver", "9" * 5000),
                                  ("r", "rules", "--check", "torch=" + "9" * 5000)])
def test_numbers_and_versions_on_the_command_line_are_ascii_and_never_echoed_whole(sentinel, harness, argv):
    outcome = sentinel.run(*argv, wall_s=60)
    line = harness.assert_refused(sentinel, outcome, usage=True)
    assert "Exceeds the limit" not in line and "9" * 100 not in line
