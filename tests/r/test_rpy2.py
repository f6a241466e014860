"""rpy2 failures are findings, and the table names the rpy2 that fits."""
from __future__ import annotations

import pytest

from rcompat.areas import Context
from rcompat.r import checks
from rcompat.r.facts import probe
from rcompat.r.rpy2_fit import advise, rpy2_rows
from rcompat.versions import matches

# Measured on this machine with rpy2 3.6.x on R 4.2.2 (see REFERENCE.md).
MEASURED_36_ON_42 = ("cannot load library '/usr/lib/R/lib/libR.so': "
                     "/work/main/.venv/lib/python3.11/site-packages/rpy2/_rinterface_cffi_api.abi3.so: "
                     "undefined symbol: R_getVar")


def test_undefined_symbol_names_the_rpy2_that_fits():
    advice = advise(MEASURED_36_ON_42, "4.2.2")
    assert advice.symbol == "R_getVar"
    assert advice.needs["pip"] == "rpy2>=3.6"
    assert advice.fits["pip"] == "rpy2==3.5.17"
    assert "install rpy2==3.5.17" in advice.sentence("4.2.2")


def test_rpy2_advice_on_r_45_points_at_36():
    assert advise(MEASURED_36_ON_42, "4.5.1").fits["pip"] == "rpy2>=3.6"


def test_symbolic_failure_becomes_a_fail_finding():
    ctx = Context(timeout=30)
    facts = probe(timeout=60, engine="rscript", discover_python=False)
    if not matches(facts.version_number or "", "<4.5"):
        pytest.skip(f"the measured failure is rpy2 3.6 on R 4.2; this R is {facts.version_number} "
                    "(tests/tier covers rpy2 on both releases)")
    facts.rpy2 = {"used": True, "installed": True, "version": "3.6.2", "ok": False,
                  "error": {"stage": "import rpy2.rinterface", "type": "OSError", "message": MEASURED_36_ON_42}}
    ctx.put("r.facts", facts)
    (finding,) = checks.check_rpy2(ctx)
    assert finding.status.value == "fail"
    assert "R_getVar" in finding.title
    assert "pip install 'rpy2==3.5.17'" in finding.remedy
    assert finding.source.startswith("measured")


def test_r_aborting_during_embedding_is_a_finding_and_rscript_takes_over(tmp_path):
    # An R_HOME whose bin/ has R's front ends but no base package: embedded R exits with
    # "Fatal error: unable to open the base package" while starting; Rscript still works.
    home = tmp_path / "rhome"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "Rscript").symlink_to("/usr/lib/R/bin/Rscript")
    (home / "bin" / "R").symlink_to("/usr/lib/R/bin/R")
    facts = probe(timeout=60, env={"R_HOME": str(home)}, discover_python=False)
    assert facts.install["found_by"] == "R_HOME"
    assert facts.rpy2["used"] and facts.rpy2["ok"] is False
    assert facts.rpy2["error"]["stage"] == "initialise embedded R"
    assert "unable to open the base package" in facts.rpy2["error"]["message"]
    assert facts.available and facts.engine == "rscript"
    ctx = Context(timeout=30)
    ctx.put("r.facts", facts)
    (finding,) = checks.check_rpy2(ctx)
    assert finding.status.value == "fail"
    assert "initialise embedded R" in finding.message
    (version,) = checks.check_version(ctx)
    assert version.status.value == "ok"


# measured in the Debian 13 root: rpy2 3.5.17's API module on R 4.5.0 (tests/tier covers the real run)
MEASURED_3517_API_ON_45 = ("/tmp/m/lib/python3.13/site-packages/_rinterface_cffi_api.abi3.so: "
                           "undefined symbol: initStdinHandler")


def test_mode_in_effect_is_said_and_a_silent_abi_fallback_warns():
    api = checks._embedded_finding({"version": "3.6.9", "mode": {"mode": "API", "requested": "ANY",
                                                                "api_error": None}}, "4.5.0")
    assert api.status.value == "ok" and api.title == "rpy2 3.6.9 embeds R 4.5.0 (API mode)"
    fallback = checks._embedded_finding({"version": "3.5.17", "mode": {
        "mode": "ABI", "requested": "ANY", "api_error": f"ImportError: {MEASURED_3517_API_ON_45}"}}, "4.5.0")
    assert fallback.status.value == "warn" and "(ABI mode) only through a fallback" in fallback.title
    assert "initStdinHandler is not exported by this R's libR" in fallback.message
    assert fallback.remedy == "pip install 'rpy2>=3.6'"
    asked = checks._embedded_finding({"version": "3.5.17", "mode": {"mode": "ABI", "requested": "ABI",
                                                                   "api_error": None}}, "4.5.0")
    assert asked.status.value == "ok" and "RPY2_CFFI_MODE=ABI" in asked.message


def test_remedy_never_asks_to_install_what_is_installed():
    fits_45 = next(row for row in rpy2_rows() if row["id"] == "RPY2-36-NEEDS-R45")
    assert checks._rpy2_remedy("3.5.17", fits_45) == "pip install 'rpy2>=3.6'"
    again = checks._rpy2_remedy("3.6.9", fits_45)
    assert "pip install 'rpy2" not in again and "already the one the rpy2 table picks" in again
