"""R facts from real R: embedded through the rpy2 worker, or read by an Rscript child."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rcompat.areas import Context
from rcompat.r import checks
from rcompat.r.facts import probe


def _rscript(expr: str) -> str:
    return subprocess.run(["Rscript", "-e", expr], capture_output=True, text=True, timeout=60,
                          check=True).stdout


def test_reported_version_is_what_rscript_says(facts_ok):
    assert facts_ok.available, facts_ok.reason
    assert facts_ok.engine == "rpy2"
    assert facts_ok.version_string == _rscript("cat(R.version.string)")
    assert facts_ok.version["svn_rev"] == _rscript('cat(R.version[["svn rev"]])')
    assert facts_ok.version_number == _rscript("cat(paste(R.version$major, R.version$minor, sep='.'))")
    assert facts_ok.platform == _rscript("cat(R.version$platform)")
    assert facts_ok.r_home == _rscript("cat(R.home())")


def test_probe_sees_exactly_the_fixture_versions(facts_ok, rlibs):
    pk = facts_ok.packages
    assert (pk["torch"].version, pk["keras"].version, pk["tensorflow"].version) == ("0.12.0", "2.15.0", "2.16.0")
    assert Path(pk["torch"].path) == rlibs["ok"] / "torch"
    assert pk["keras3"].status == "absent" and pk["keras3"].version is None
    assert facts_ok.lib_paths[0] == str(rlibs["ok"])
    assert facts_ok.stack()["torch"] == "0.12.0"


def test_development_versions_are_kept_verbatim(rlibs):
    facts = probe(timeout=60, lib_paths=[str(rlibs["dev"])], discover_python=False)
    assert facts.packages["torch"].version == "0.12.2.9000"


def test_rpy2_and_rscript_engines_agree(rlibs, facts_ok):
    by_rscript = probe(timeout=60, lib_paths=[str(rlibs["ok"])], engine="rscript")
    assert by_rscript.engine == "rscript" and by_rscript.rpy2["used"] is False
    assert by_rscript.version == facts_ok.version
    assert by_rscript.lib_paths == facts_ok.lib_paths
    assert {n: p.version for n, p in by_rscript.packages.items()} == \
        {n: p.version for n, p in facts_ok.packages.items()}


def test_r_libs_from_the_environment_is_honoured(rlibs):
    facts = probe(timeout=60, env={"R_LIBS": str(rlibs["abi"])}, discover_python=False)
    assert facts.packages["torch"].version == "0.10.1"
    assert facts.packages["keras"].version == "2.12.0"


def test_unreadable_description_is_an_error_for_that_package_only(rlibs):
    ctx = Context(timeout=60, options={"r_lib_paths": [str(rlibs["baddesc"])]})
    facts = checks.r_facts(ctx)
    assert facts.packages["torch"].status == "error"
    assert "malformed" in facts.packages["torch"].error
    assert facts.packages["keras"].version == "2.15.0"
    by_id = {f.id: f for f in checks.check_packages(ctx)}
    assert by_id["R-PKG-TORCH"].status.value == "error"
    assert by_id["R-PKG-KERAS"].status.value == "ok"
    assert by_id["R-PKG-RETICULATE"].status.value == "ok"
    verify = {f.id: f for f in checks.check_verify(ctx)}
    assert verify["R-TORCH-VERIFY"].status.value == "skip"
    assert "unreadable" in verify["R-TORCH-VERIFY"].message
    assert ctx.facts["r"]["packages"]["torch"]["status"] == "error"


def test_compiler_facts_come_from_r_cmd_config(facts_ok):
    cc = subprocess.run(["R", "CMD", "config", "CC"], capture_output=True, text=True, check=True).stdout.strip()
    assert facts_ok.compiler["cc"] == cc
    # gcc 12 of Debian 12 accepts C17; the probe compiled a file that #errors without it.
    assert facts_ok.compiler["accepts_c17"] is True
    assert "-std=gnu17" in facts_ok.compiler["command"]


def test_compiler_that_rejects_c17_is_a_warning(tmp_path, rlibs, monkeypatch):
    # A real compiler driver that refuses -std=gnu17 the way an old gcc does.
    old_cc = tmp_path / "oldcc"
    old_cc.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = -std=gnu17 ] && '
                      '{ echo "error: unrecognized command-line option -std=gnu17" >&2; exit 1; }; done\n'
                      'exec gcc "$@"\n')
    old_cc.chmod(0o755)
    makevars = tmp_path / "Makevars"
    # CC17 too: R >= 4.5 configures CC as gnu23 and the C17 check compiles with CC17
    makevars.write_text(f"CC={old_cc}\nCC17={old_cc} -std=gnu17\n")
    ctx = Context(timeout=60, options={"r_lib_paths": [str(rlibs["dev"])]})
    monkeypatch.setenv("R_MAKEVARS_USER", str(makevars))
    findings = list(checks.check_compiler(ctx))
    assert findings[0].status.value == "warn"
    assert "rejects -std=gnu17" in findings[0].title


def test_r_absent_is_a_skip_naming_r_base_core(tmp_path):
    facts = probe(timeout=30, env={"PATH": str(tmp_path), "R_HOME": ""})
    assert not facts.available and not facts.install
    ctx = Context(timeout=30)
    ctx.put("r.facts", facts)
    (finding,) = checks.check_version(ctx)
    assert finding.status.value == "skip"
    assert "r-base-core" in finding.remedy


def test_reticulate_python_is_found_without_initialising_python(facts_ok):
    ret = facts_ok.reticulate
    if ret.get("method") == "none":
        pytest.skip("reticulate not installed")
    assert ret["method"] == "py_discover_config"
    assert ret["python_initialized"] is False
    expected = _rscript("cat(reticulate::py_discover_config()$python)")
    assert ret["python"] == expected
    assert facts_ok.python.get("python_version")


def test_reticulate_python_env_var_wins(rlibs, tmp_path):
    import sys

    facts = probe(timeout=60, env={"RETICULATE_PYTHON": sys.executable}, engine="rscript")
    assert facts.reticulate["env"]["RETICULATE_PYTHON"] == sys.executable
    assert facts.reticulate["forced"] == "RETICULATE_PYTHON"
    # With torch in this venv, its version is what python:torch rules see.
    torch = pytest.importorskip("torch", reason="torch not installed: no torch==2.13.0 wheel for this Python on disk (make test installs it when there is)")

    assert facts.stack()["python:torch"] == torch.__version__


def test_reticulate_python_that_does_not_exist_fails(tmp_path):
    ctx = Context(timeout=60)
    facts = probe(timeout=60, env={"RETICULATE_PYTHON": str(tmp_path / "nope" / "python")})
    ctx.put("r.facts", facts)
    (finding,) = checks.check_reticulate_python(ctx)
    assert finding.status.value == "fail"
    assert "does not exist" in finding.message


def test_package_lists_written_twice_agree():
    # The argparse-only CLI and r_facts.R cannot import the Python lists, so they repeat them.
    import re

    from rcompat.r import cli, facts, verify

    r_code = (facts.scripts_dir() / "r_facts.R").read_text()
    listed = re.search(r"^rcompat_packages <- c\(([^)]*)\)", r_code, re.M).group(1)
    assert tuple(re.findall(r'"([^"]+)"', listed)) == facts.PACKAGES
    assert cli.VERIFY_PACKAGES == tuple(verify.VERIFIERS)


def test_a_hanging_rscript_is_waited_for_once(tmp_path):
    # Core and reticulate facts come from one Rscript child; when it hangs, none is started again.
    # Counted, not timed: each start of the fake R appends a line to a log.
    home = tmp_path / "rhome"
    starts = tmp_path / "starts.log"
    (home / "bin").mkdir(parents=True)
    for name in ("Rscript", "R"):
        (home / "bin" / name).write_text(f"#!/bin/sh\necho {name} >> {starts}\nexec sleep 30\n")
        (home / "bin" / name).chmod(0o755)
    facts = probe(timeout=2, env={"R_HOME": str(home)}, engine="rscript")
    assert not facts.available and facts.reason == "R did not report its facts (see errors)"
    assert [e["timed_out"] for e in facts.errors] == [True]
    assert len(starts.read_text().splitlines()) == 1, starts.read_text()
