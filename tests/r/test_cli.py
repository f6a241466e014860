"""`rcompat r …` as a user runs it."""
from __future__ import annotations

import json
import subprocess


def test_facts_json_matches_rscript(cli, rlibs):
    proc = cli("r", "facts", "--format", "json", "--lib", str(rlibs["ok"]), "--no-discover")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    expected = subprocess.run(["Rscript", "-e", "cat(R.version.string)"], capture_output=True,
                              text=True, check=True).stdout
    assert data["version"]["string"] == expected
    assert data["packages"]["keras"]["version"] == "2.15.0"
    assert data["engine"] == "rpy2"


def test_facts_text_lists_packages(cli, rlibs):
    proc = cli("r", "facts", "--lib", str(rlibs["dev"]), "--no-discover")
    assert proc.returncode == 0
    assert "torch       0.12.2.9000" in proc.stdout and "accepts -std=gnu17" in proc.stdout


def test_bad_arguments_exit_2_with_one_line(cli, tmp_path):
    for args in (["r", "facts", "--lib", str(tmp_path / "missing")],
                 ["r", "verify", "--timeout", "0"],
                 ["r", "rules", "--file", str(tmp_path / "none.toml")],
                 ["r", "verify", "--package", "caret"]):
        proc = cli(*args)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith(("rcompat: error:", "rcompat r "))


def test_help_texts(cli):
    for sub in ("facts", "verify", "rules"):
        proc = cli("r", sub, "--help")
        assert proc.returncode == 0 and "usage: rcompat r " + sub in proc.stdout
    assert "COMPONENT=VERSION" in cli("r", "rules", "--help").stdout
