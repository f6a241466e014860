"""What docs/parity.md promises for `record`: an interpreter that cannot run the suite is rcompat's own
error (exit 2, one line, no file), and options that cannot go together are refused, not ignored."""
from __future__ import annotations

import os
import stat

import pytest


@pytest.mark.parametrize("interpreter", ["/bin/false", "/bin/true"])
def test_a_python_that_is_not_a_python_exits_2_and_writes_nothing(ph, tmp_path, interpreter):
    out = tmp_path / "rec.npz"
    proc = ph.run_cli("parity", "record", "--python", interpreter, "--output", str(out))
    ph.assert_one_line_error(proc, f"--python {interpreter}", "did not run the parity child")
    assert os.listdir(tmp_path) == []


def test_a_python_that_is_not_executable_is_refused_before_running(ph, tmp_path):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\nexit 0\n")
    out = tmp_path / "rec.npz"
    proc = ph.run_cli("parity", "record", "--python", str(script), "--output", str(out))
    ph.assert_one_line_error(proc, f"--python {script}", "not an executable file")
    assert not out.exists()


def test_a_python_that_dies_before_speaking_names_its_last_words(ph, tmp_path):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho 'this is no python' >&2\nexit 7\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "rec.npz"
    proc = ph.run_cli("parity", "record", "--python", str(script), "--output", str(out))
    ph.assert_one_line_error(proc, "exited with status 7", "this is no python")
    assert not out.exists()


def test_an_rscript_that_is_not_r_exits_2_and_writes_nothing(ph, tmp_path):
    out = tmp_path / "rec.npz"
    proc = ph.run_cli("parity", "record", "--side", "r", "--rscript", "/bin/false", "--output", str(out))
    ph.assert_one_line_error(proc, "--rscript /bin/false", "did not run the parity child")
    assert not out.exists()


def test_seed_and_inputs_together_are_refused(ph, records, tmp_path):
    out = tmp_path / "rec.npz"
    proc = ph.run_cli("parity", "record", "--inputs", str(records["threads1"]), "--seed", "3", "--output", str(out))
    assert proc.returncode == 2 and "not allowed with argument" in proc.stderr
    assert not out.exists()
