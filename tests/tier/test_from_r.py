"""The R package (R-package/) on the root's R (4.5 with reticulate 1.41 and Python 3.13 on a Debian 12
host): built and checked there (`R CMD check --no-manual`, no ERROR or WARNING, every NOTE explained
in docs/from-r.md), and `library(rcompat)` calling rcompat installed from its wheel and, separately,
in editable mode (whose .pth import hooks reticulate 1.41 on Python 3.13 loses)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

R_CODE = r'''
library(rcompat, lib.loc = Sys.getenv("RCOMPAT_R_LIB"))
report <- doctor("r")
rows <- as.data.frame(report)[report$id %in% c("R-VERSION", "R-RPY2"), c("id", "status", "title")]
cat(jsonlite::toJSON(list(rows = rows, host_is_r = host_is_r(), class = class(report),
                          python = rcompat_python()), auto_unbox = TRUE), "\n")
'''


@pytest.fixture(scope="module")
def rcheck_helper(load_helper):
    return load_helper("rpkg_rcheck", REPO / "tests" / "rpkg" / "_rcheck.py")


@pytest.fixture(scope="module")
def r_package(tier) -> str:
    """R-package/ and the lockfile fixtures copied into the root; the package installed there by the
    root's R CMD INSTALL; the library's path inside the root."""
    shutil.copytree(REPO / "R-package", tier.host_dir / "R-package")
    shutil.copytree(REPO / "fixtures" / "lock", tier.host_dir / "fixtures" / "lock")
    (tier.host_dir / "empty-repo" / "src" / "contrib").mkdir(parents=True)
    (tier.host_dir / "empty-repo" / "src" / "contrib" / "PACKAGES").touch()
    (tier.host_dir / "Rprofile").write_text(f'options(repos = c(CRAN = "file://{tier.inside}/empty-repo"))\n')
    tier.sh(f"mkdir -p {tier.inside}/rlib && R CMD INSTALL --no-docs -l {tier.inside}/rlib "
            f"{tier.inside}/R-package", check=True, timeout=300)
    return f"{tier.inside}/rlib"


def run_from_r(tier, r_lib: str, env: dict) -> dict:
    (tier.host_dir / "from_r.R").write_text(R_CODE)
    proc = tier.run(["Rscript", f"{tier.inside}/from_r.R"], env={"RCOMPAT_R_LIB": r_lib, **env}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_answer(answer: dict, tier_facts, python: str) -> None:
    rows = {row["id"]: row for row in answer["rows"]}
    assert rows["R-VERSION"]["status"] == "ok"
    assert f"R version {tier_facts['expected']['R']}" in rows["R-VERSION"]["title"]
    # inside R, rcompat must not embed a second R through rpy2
    assert rows["R-RPY2"]["status"] == "skip", rows["R-RPY2"]
    assert answer["host_is_r"] is True
    assert answer["class"] == ["rcompat_findings", "rcompat_result", "data.frame"]
    assert answer["python"] == python


def test_from_r_with_the_wheel_installed(tier, r_package, tier_facts):
    python = f"{tier.venv}/bin/python"
    check_answer(run_from_r(tier, r_package, {"RETICULATE_PYTHON": python}), tier_facts, python)


def test_from_r_with_an_editable_install(tier_editable, r_package, tier_facts):
    venv = tier_editable.venv
    check = tier_editable.run([f"{venv}/bin/python", "-c", "import rcompat; print(rcompat.__file__)"],
                              check=True)
    assert check.stdout.strip() == f"{tier_editable.inside}/src/rcompat/__init__.py"
    python = f"{venv}/bin/python"
    check_answer(run_from_r(tier_editable, r_package, {"RCOMPAT_PYTHON": python}), tier_facts, python)


def test_r_cmd_check_passes_on_the_roots_r(tier, r_package, tier_facts, rcheck_helper):
    """R CMD build and R CMD check --no-manual with the root's R; the testthat suite and the examples
    run against rcompat installed from its wheel there."""
    work = f"{tier.inside}/rcheck"
    env = {"RCOMPAT_PYTHON": f"{tier.venv}/bin/python", "RCOMPAT_FIXTURES": f"{tier.inside}/fixtures",
           "R_PROFILE_USER": f"{tier.inside}/Rprofile", "NOT_CRAN": "true", "_R_CHECK_CRAN_INCOMING_": "false"}
    proc = tier.sh(f"mkdir -p {work} && cd {work} && R CMD build --no-manual {tier.inside}/R-package && "
                   f"R CMD check --no-manual rcompat_*.tar.gz", env=env, timeout=900)
    log_path = tier.host_dir / "rcheck" / "rcompat.Rcheck" / "00check.log"
    log = log_path.read_text() if log_path.exists() else proc.stdout + proc.stderr
    assert f"using R version {tier_facts['expected']['R']}" in log
    found = rcheck_helper.problems(log)
    tests_out = tier.host_dir / "rcheck" / "rcompat.Rcheck" / "tests" / "testthat.Rout.fail"
    detail = tests_out.read_text()[-3000:] if tests_out.exists() else log[-3000:]
    assert not found["ERROR"] and not found["WARNING"], f"{found}\n{detail}"
    assert proc.returncode == 0, detail
    unexplained = set(found["NOTE"]) - rcheck_helper.explained_notes()
    assert not unexplained, f"NOTEs on R {tier_facts['R']} not explained in docs/from-r.md: {unexplained}"
    tests_log = (tier.host_dir / "rcheck" / "rcompat.Rcheck" / "tests" / "testthat.Rout").read_text()
    assert "[ FAIL 0 |" in tests_log and "no Python with the rcompat package" not in tests_log, tests_log[-2000:]
