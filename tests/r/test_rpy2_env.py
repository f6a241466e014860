"""One Rscript answers both of rpy2's environment lookups, with what rpy2's own two would answer.

Real rpy2 and R, in a child Python (embedding R in the test process would leave it there)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from rcompat.r.rpy2_env import FrontEndEnvironment

pytest.importorskip("rpy2")

PER_SESSION = {"R_SESSION_TMPDIR"}  # every R start makes its own


def _child(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_one_run_answers_what_rpy2s_two_commands_answer():
    out = _child("""
        import json
        import rpy2.situation as situation
        from rcompat.r.rpy2_env import read_front_end_environment
        r_home = situation.get_r_home()
        shared = read_front_end_environment(r_home)
        import rpy2.rinterface as ri
        print(json.dumps({"ld_rpy2": situation.r_ld_library_path_from_subprocess(r_home),
                          "ld_shared": shared.ld_library_path(r_home),
                          "vars_rpy2": dict(ri._getrenvvars()), "vars_shared": dict(shared.differences())}))
    """)
    assert out["ld_shared"] == out["ld_rpy2"]
    assert "R_SHARE_DIR" in out["vars_rpy2"]  # what R's front end sets: the comparison is not vacuous
    same = lambda d: {k: v for k, v in d.items() if k not in PER_SESSION}  # noqa: E731
    assert same(out["vars_shared"]) == same(out["vars_rpy2"])
    assert set(out["vars_shared"]) == set(out["vars_rpy2"])


def test_embedded_r_starts_with_one_rscript_and_rpy2s_environment():
    out = _child("""
        import json, os, subprocess
        runs = []
        check_output = subprocess.check_output
        def counting(cmd, *a, **kw):
            runs.append(list(cmd))
            return check_output(cmd, *a, **kw)
        subprocess.check_output = counting
        from rcompat.r.rpy2_env import answer_environment_lookups, share_front_end_environment
        shared = share_front_end_environment()
        import rpy2.rinterface as ri
        answer_environment_lookups(ri, shared)
        ri.initr()
        print(json.dumps({"rscripts": [c for c in runs if c[0].endswith("Rscript")],
                          "version": str(ri.baseenv["R.version.string"][0]),
                          "r_share_dir": os.environ.get("R_SHARE_DIR"),
                          "ld": os.environ.get("LD_LIBRARY_PATH", "")}))
    """)
    assert len(out["rscripts"]) == 1, out["rscripts"]
    assert out["version"].startswith("R version ")
    assert out["r_share_dir"]  # copied from R's front end, as initr() does
    assert "/lib" in out["ld"]  # R's library dir, from R's front end


def test_another_r_home_is_not_answered_from_the_shared_run():
    shared = FrontEndEnvironment("/usr/lib/R", [("LD_LIBRARY_PATH", "/usr/lib/R/lib"), ("R_X", "1")])
    assert shared.ld_library_path("/usr/lib/R") == "/usr/lib/R/lib"
    assert shared.differences({"R_X": "1"}) == (("LD_LIBRARY_PATH", "/usr/lib/R/lib"),)
    with pytest.raises(LookupError):
        shared.ld_library_path("/opt/R/4.5/lib/R")
    with pytest.raises(LookupError):
        shared.differences({}, "/opt/R/4.5/lib/R")
