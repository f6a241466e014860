"""rcompat.r.front_end_env: R's front-end environment asked once, early, for rpy2.

Each claim is checked against rpy2 itself, in children (rpy2 is never imported by the tests' process):
what rpy2 puts in os.environ before embedding R is the same with the early answer as without it,
and the one R start replaces rpy2's two.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# Runs in a child: R's environment as rpy2 leaves it after initr(), with or without the early answer,
# and the R commands run meanwhile (subprocess.Popen and check_output are counted).
CHILD = r"""
import json, os, subprocess, sys
started = []
real_popen_init = subprocess.Popen.__init__
def counting(self, args, *a, **k):
    if isinstance(args, (list, tuple)) and args and str(args[0]).endswith("Rscript"):
        started.append(list(map(str, args)))
    return real_popen_init(self, args, *a, **k)
subprocess.Popen.__init__ = counting
early = sys.argv[1] == "early"
if early:
    from rcompat.r.front_end_env import FrontEndEnvironment
    FrontEndEnvironment().install()
import rpy2.rinterface as ri
ri.initr()
# a new directory per R start, and rpy2's note of this process's pid
env = {k: v for k, v in os.environ.items() if k not in ("R_SESSION_TMPDIR", "PYTHON_SESSION_INITIALIZED")}
print(json.dumps({"env": env, "started": started, "r_version": str(ri.baseenv["R.version.string"][0])}))
sys.stdout.flush()
os._exit(0)
"""


@pytest.fixture(scope="module")
def r_home() -> str:
    import importlib.util

    from rcompat.r.host import locate_r

    if importlib.util.find_spec("rpy2") is None:
        pytest.skip("rpy2 not installed (make test installs it into .venv)")
    install = locate_r()
    if install is None or not install.r_home:
        pytest.skip("R not installed (make test installs r-base-core)")
    return install.r_home


def _child(how: str, r_home: str, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "R_DEFAULT_PACKAGES"} | {"R_HOME": r_home, **extra}
    out = subprocess.run([sys.executable, "-c", CHILD, how], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_rpy2_embeds_r_in_the_same_environment_with_one_r_start_instead_of_two(r_home):
    plain = _child("plain", r_home)
    early = _child("early", r_home)
    assert [cmd[1:2] for cmd in plain["started"]] == [["-e"], ["-e"]], plain["started"]  # rpy2 3.5's two
    assert len(early["started"]) == 1, early["started"]
    different = sorted(k for k in set(plain["env"]) | set(early["env"]) if plain["env"].get(k) != early["env"].get(k))
    assert different == [], {k: (plain["env"].get(k), early["env"].get(k)) for k in different}
    assert "R_DEFAULT_PACKAGES" not in early["env"]  # the lean start's own setting is not reported
    assert early["env"]["LD_LIBRARY_PATH"].startswith(os.path.join(r_home, "lib"))  # R's ldpaths, first
    assert early["r_version"] == plain["r_version"]


def test_a_users_own_default_packages_are_kept_and_reported(r_home):
    from rcompat.r.front_end_env import FrontEndEnvironment

    pairs = dict(FrontEndEnvironment({**os.environ, "R_HOME": r_home, "R_DEFAULT_PACKAGES": "datasets"}).pairs())
    assert pairs["R_DEFAULT_PACKAGES"] == "datasets"
    assert pairs["R_HOME"] == r_home


def test_without_r_home_nothing_starts_and_rpy2_is_left_alone():
    from rcompat.r.front_end_env import FrontEndEnvironment

    env = {k: v for k, v in os.environ.items() if k != "R_HOME"}
    front_end = FrontEndEnvironment(env)
    assert front_end._process is None and front_end.pairs() is None
    front_end.install()  # returns before importing rpy2
    assert "rpy2.situation" not in sys.modules or \
        sys.modules["rpy2.situation"].r_ld_library_path_from_subprocess.__module__ == "rpy2.situation"


def _with_fake_rscript(tmp_path, script: str):
    """A FrontEndEnvironment whose R_HOME holds only bin/Rscript, the shell `script`; and that home."""
    from rcompat.r.front_end_env import FrontEndEnvironment

    fake_home = tmp_path / "R"
    (fake_home / "bin").mkdir(parents=True)
    rscript = fake_home / "bin" / "Rscript"
    rscript.write_text("#!/bin/sh\n" + script)
    rscript.chmod(0o755)
    return FrontEndEnvironment({"R_HOME": str(fake_home), "PATH": os.environ["PATH"]}), fake_home


def test_a_failed_command_leaves_rpy2_asking_its_own(tmp_path):
    front_end, fake_home = _with_fake_rscript(tmp_path, "echo 'Error: no R here' >&2\nexit 1\n")
    assert front_end.pairs() is None
    asked = []
    ld_path = front_end._ld_library_path(lambda home: asked.append(home) or "asked")
    variables = front_end._variables(lambda base, home: asked.append(home) or ("asked",))
    assert ld_path(str(fake_home)) == "asked" and variables(None, None) == ("asked",)
    assert asked == [str(fake_home), None]


def test_rows_are_read_as_rpy2_reads_them(tmp_path):
    """Quoted values with commas and quotes, and the diff against the baseline rpy2 makes."""
    front_end, fake_home = _with_fake_rscript(
        tmp_path, 'printf \'"","x"\\n"A","1"\\n"B","x, ""y"""\\n"R_DEFAULT_PACKAGES","NULL"\\n\'\n')
    assert front_end.pairs() == [("A", "1"), ("B", 'x, "y"')]
    variables = front_end._variables(lambda base, home: pytest.fail("rpy2 asked"))
    assert variables({"A": "1"}, None) == (("B", 'x, "y"'),)
    assert variables({"A": "2", "B": 'x, "y"'}, str(fake_home)) == (("A", "1"),)
    ld_path = front_end._ld_library_path(lambda home: pytest.fail("rpy2 asked"))
    assert ld_path(str(fake_home)) == ""  # no LD_LIBRARY_PATH row: what cat(Sys.getenv(...)) prints
