"""The R package (R-package/) built, checked and installed with this machine's R (4.2 on Debian 12):
`R CMD check --no-manual` with no ERROR or WARNING (every NOTE explained in docs/from-r.md), its
testthat suite run for real against this test runner's Python (RCOMPAT_PYTHON), and installed both
from the built tarball and from the checkout. R 4.5 runs the same in tests/tier/test_from_r.py."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_rcheck():
    import importlib.util

    spec = importlib.util.spec_from_file_location("rpkg_rcheck", Path(__file__).with_name("_rcheck.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_rcheck = _load_rcheck()


def _env(work: Path, **extra: str) -> dict[str, str]:
    """RCOMPAT_PYTHON: this runner's Python; R's package index an empty local one, so `checking package
    dependencies` does not wait on CRAN (unreachable here)."""
    repo = work / "empty-repo" / "src" / "contrib"
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "PACKAGES").touch()
    profile = work / "Rprofile"
    profile.write_text(f'options(repos = c(CRAN = "file://{work / "empty-repo"}"))\n')
    env = dict(os.environ, RCOMPAT_PYTHON=sys.executable, RCOMPAT_FIXTURES=str(REPO / "fixtures"),
               NOT_CRAN="true", _R_CHECK_CRAN_INCOMING_="false", R_PROFILE_USER=str(profile), **extra)
    env.pop("RCOMPAT_HOST_PID", None)
    env.pop("RETICULATE_PYTHON", None)
    return env


def _needs_r_packages(rscript: str, *packages: str) -> None:
    code = "q(status = if (all(sapply(c(%s), requireNamespace, quietly = TRUE))) 0 else 1)" % ", ".join(
        f'"{p}"' for p in packages)
    if subprocess.run([rscript, "-e", code], capture_output=True).returncode != 0:
        pytest.skip(f"R packages {', '.join(packages)} are needed (Debian: r-cran-{' r-cran-'.join(packages)})")


@pytest.fixture(scope="session")
def checked(rscript, tmp_path_factory) -> dict:
    """R CMD build, then R CMD check --no-manual of the tarball (tests and examples run for real)."""
    _needs_r_packages(rscript, "reticulate", "jsonlite", "testthat")
    work = tmp_path_factory.mktemp("rcheck")
    build = subprocess.run(["R", "CMD", "build", "--no-manual", str(_rcheck.PACKAGE)], cwd=work,
                           capture_output=True, text=True, timeout=300, env=_env(work))
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = next(work.glob("rcompat_*.tar.gz"))
    check = subprocess.run(["R", "CMD", "check", "--no-manual", tarball.name], cwd=work, capture_output=True,
                           text=True, timeout=900, env=_env(work))
    log_path = work / "rcompat.Rcheck" / "00check.log"
    log = log_path.read_text() if log_path.exists() else check.stdout
    return {"work": work, "tarball": tarball, "returncode": check.returncode, "log": log,
            "output": check.stdout + check.stderr, "rcheck": work / "rcompat.Rcheck"}


@pytest.mark.slow
def test_r_cmd_check_has_no_error_and_no_warning(checked):
    found = _rcheck.problems(checked["log"])
    testout = checked["rcheck"] / "tests" / "testthat.Rout.fail"
    detail = testout.read_text()[-3000:] if testout.exists() else checked["log"][-3000:]
    assert not found["ERROR"] and not found["WARNING"], f"{found}\n{detail}"
    assert checked["returncode"] == 0, detail
    assert "* checking tests ..." in checked["log"] and "* checking examples ... OK" in checked["log"]


@pytest.mark.slow
def test_every_note_is_explained_in_the_docs(checked):
    unexplained = set(_rcheck.problems(checked["log"])["NOTE"]) - _rcheck.explained_notes()
    assert not unexplained, f"NOTEs not explained in docs/from-r.md: {unexplained}"


@pytest.mark.slow
def test_the_testthat_suite_ran_against_rcompat_not_skipped(checked):
    """The Python tests ran (RCOMPAT_PYTHON named this runner's Python), not skipped for want of one."""
    out = (checked["rcheck"] / "tests" / "testthat.Rout").read_text()
    assert "[ FAIL 0 |" in out, out[-2000:]
    skipped = int(out.split("| SKIP ")[1].split()[0])
    passed = int(out.split("| PASS ")[1].split()[0])
    assert passed >= 60, out[-2000:]
    assert "no Python with the rcompat package" not in out
    assert skipped <= 8, out[-2000:]  # fleet/model/soak until they land, torch-only cases without torch


@pytest.mark.slow
def test_installs_from_the_tarball_and_from_the_checkout(checked, rscript, tmp_path):
    """R CMD check installed the tarball (into rcompat.Rcheck); R CMD INSTALL of the folder here."""
    lib = tmp_path / "lib"
    lib.mkdir()
    install = subprocess.run(["R", "CMD", "INSTALL", "--no-docs", "-l", str(lib), str(_rcheck.PACKAGE)],
                             capture_output=True, text=True, timeout=300, env=_env(tmp_path))
    assert install.returncode == 0, install.stdout + install.stderr
    for installed in (checked["rcheck"], lib):
        run = subprocess.run([rscript, "-e", f'library(rcompat, lib.loc = "{installed}"); '
                                             'x <- explain("all good"); cat(class(x)[1], x$id, "\\n")'],
                             capture_output=True, text=True, timeout=120, env=_env(tmp_path), cwd=tmp_path)
        assert run.stdout.split() == ["rcompat_findings", "EXPLAIN-NO-MATCH"], run.stdout + run.stderr
    assert not list(_rcheck.PACKAGE.glob("**/*.o")) and not (_rcheck.PACKAGE / "rcompat.Rcheck").exists()


@pytest.mark.slow
def test_dplyr_verbs_keep_the_result_a_data_frame(checked, rscript, tmp_path):
    _needs_r_packages(rscript, "dplyr")
    lib = checked["rcheck"]
    code = (f'library(rcompat, lib.loc = "{lib}"); library(dplyr, warn.conflicts = FALSE); '
            'm <- ci_matrix(r = c("4.4", "4.5"), torch = c("0.11.1", "0.13.0"), min_confidence = "unverified"); '
            'kept <- m %>% filter(run) %>% select(r, torch) %>% arrange(desc(r)); '
            'cat(nrow(kept), inherits(kept, "data.frame"), kept$r[1], "\\n")')
    run = subprocess.run([rscript, "-e", code], capture_output=True, text=True, timeout=120, env=_env(tmp_path), cwd=tmp_path)
    assert run.stdout.split() == ["3", "TRUE", "4.5"], run.stdout + run.stderr


def test_the_check_log_reader_sees_each_verdict():
    """The ERROR/WARNING/NOTE reader the two check tests rest on: a verdict at the end of a check's line,
    or alone on a line after its output, belongs to that check; an OK after a warning is no verdict."""
    log = ("* checking package dependencies ...Warning: unable to access index\n OK\n"
           "* checking examples ... ERROR\nRunning examples in 'rcompat-Ex.R' failed\n"
           "* checking Rd files ... NOTE\nprepare_Rd: x.Rd\n* checking tests ...\n  Running 'testthat.R'\n ERROR\n"
           "* checking whatever ... WARNING\n* checking R code for possible problems ... OK\n")
    assert _rcheck.problems(log) == {"ERROR": ["examples", "tests"], "WARNING": ["whatever"], "NOTE": ["Rd files"]}


def test_a_missing_optional_python_package_is_one_line_naming_it(monkeypatch):
    import builtins
    import json

    from rcompat.tools import from_r

    real_import = builtins.__import__

    def without_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("No module named 'pandas'", name="pandas")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_pandas)
    lib = Path(sys.executable).resolve()  # any ELF file: abi_diff builds its frame with pandas
    answer = json.loads(from_r.call("abi_diff", json.dumps({"old": str(lib), "new": str(lib)})))
    assert answer["error"].startswith("abi_diff() needs the Python package pandas"), answer


def test_the_python_package_works_without_r(tmp_path):
    """rcompat's CLI and from_r bridge import and answer with no R on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("R_HOME", "RCOMPAT_HOST_PID")}
    env["PATH"] = str(Path(sys.executable).parent)
    code = ("import json; from rcompat.tools import from_r; "
            "print(json.loads(from_r.call('explain', json.dumps({'text': 'all good'})))['records'][0]['id'])")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=60)
    assert run.stdout.strip() == "EXPLAIN-NO-MATCH", run.stdout + run.stderr
    assert not shutil.which("R", path=env["PATH"])


@pytest.mark.slow
def test_install_rcompat_makes_the_virtualenv_the_package_then_uses(checked, rscript, tmp_path, wheel_builder):
    """install_rcompat(wheel) creates a virtualenv with reticulate's functions and installs the wheel
    (offline: --no-index --no-deps); a fresh R with neither RCOMPAT_PYTHON nor RETICULATE_PYTHON then
    finds it as rcompat's own virtualenv and calls rcompat there."""
    wheel = wheel_builder(tmp_path / "wheel")
    venv = tmp_path / "r-rcompat"
    base_python = Path(sys.executable).resolve()
    env = _env(tmp_path, RCOMPAT_VENV=str(venv))
    env.pop("RCOMPAT_PYTHON")
    install = subprocess.run(
        [rscript, "-e", f'rcompat::install_rcompat("{wheel}", python = "{base_python}", extras = character(), '
                        'pip_options = c("--no-index", "--no-deps"))'],
        capture_output=True, text=True, timeout=300, env={**env, "R_LIBS": str(checked["rcheck"])}, cwd=tmp_path)
    assert install.returncode == 0, install.stdout + install.stderr
    assert "the next rcompat call uses it" in install.stderr
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "freeze"],
                            capture_output=True, text=True)
    assert "rcompat==" in listed.stdout, listed.stdout + listed.stderr
    use = subprocess.run(
        [rscript, "-e", 'library(rcompat); x <- explain("all good"); cat(rcompat_python(), x$id, "\\n")'],
        capture_output=True, text=True, timeout=120, env={**env, "R_LIBS": str(checked["rcheck"])}, cwd=tmp_path)
    assert use.stdout.split() == [str(venv / "bin" / "python"), "EXPLAIN-NO-MATCH"], use.stdout + use.stderr
