"""R's BLAS, LAPACK and locale, as sessionInfo() shows them, in R's facts and the R-SESSION finding."""
import json
import subprocess

import pytest


def test_r_session_facts_are_what_r_itself_reports(cli):
    rscript = subprocess.run(["Rscript", "-e", 'cat(extSoftVersion()[["BLAS"]], La_version(), sep="\\n")'],
                             capture_output=True, text=True, timeout=60)
    if rscript.returncode != 0:
        pytest.skip("no Rscript on this machine")
    blas, lapack_version = rscript.stdout.splitlines()
    facts = json.loads(cli("r", "facts", "--format", "json", "--no-discover").stdout)
    assert facts["session"]["blas"] == blas and facts["session"]["lapack_version"] == lapack_version
    doctor = json.loads(cli("doctor", "--only", "r", "--format", "json", env={"RCOMPAT_NO_CACHE": "1"}).stdout)
    session = next(f for f in doctor["findings"] if f["id"] == "R-SESSION")
    assert blas.rsplit("/", 1)[-1] in session["title"] and f"LAPACK {lapack_version}" in session["title"]
