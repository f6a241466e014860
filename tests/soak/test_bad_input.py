"""Bad input to `rcompat soak`: one line on stderr, exit 2, nothing written, no child run."""
from __future__ import annotations

import pytest


def _one_line_error(proc, *needles: str) -> None:
    """rcompat's own errors are one line; argparse's come after its usage lines, as for every command."""
    assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and (len(lines) == 1 or lines[0].startswith("usage:")), proc.stderr
    for needle in needles:
        assert needle in lines[-1], lines[-1]


@pytest.mark.parametrize("args, needle", [
    (["--cases", "/nonexistent/step.py"], "--cases"),
    (["--iterations", "5"], "from 12 to"),
    (["--side", "r", "--python", "/bin/sh"], "--rscript"),
    (["--rscript", "/bin/sh"], "--side r"),
])
def test_bad_options_are_refused_before_any_child(cli, args, needle):
    _one_line_error(cli("soak", *args), needle)


def test_a_file_of_the_other_side_is_refused(cli, workloads):
    _one_line_error(cli("soak", "--cases", str(workloads["lazy.R"])), "give a .py file")
    _one_line_error(cli("soak", "--side", "r", "--cases", str(workloads["leak.py"])), "give a .R file")


def test_series_and_plot_targets_are_checked_before_the_run(cli, tmp_path, workloads):
    bad = tmp_path / "series.txt"
    _one_line_error(cli("soak", "--cases", str(workloads["leak.py"]), "--series", str(bad)), ".json or .csv")
    _one_line_error(cli("soak", "--cases", str(workloads["leak.py"]), "--plot", str(tmp_path / "p.gif")), ".png")
    assert list(tmp_path.iterdir()) == []


def test_a_cases_file_that_does_not_load_is_a_setup_error(cli, tmp_path):
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed in this interpreter")
    broken = tmp_path / "broken.py"
    broken.write_text("CASES = {'x': 1}\n")
    _one_line_error(cli("soak", "--cases", str(broken), "--iterations", "12"), "must define CASES")


def test_the_default_r_workload_without_r_torch_says_so(cli):
    import shutil

    if not shutil.which("Rscript"):
        pytest.skip("Rscript not installed")
    proc = cli("soak", "--side", "r", "--iterations", "12", env={"R_LIBS_USER": "/nonexistent"})
    _one_line_error(proc, "R side:", "torch")
