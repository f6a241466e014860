"""rpy2 failures are findings, and the table names the rpy2 that fits."""
from __future__ import annotations

from rcompat.areas import Context
from rcompat.r import checks
from rcompat.r.facts import probe
from rcompat.r.rpy2_fit import advise

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
    facts.rpy2 = {"used": True, "installed": True, "version": "3.6.2", "ok": False,
                  "error": {"stage": "import rpy2.rinterface", "type": "OSError", "message": MEASURED_36_ON_42}}
    ctx.put("r.facts", facts)
    (finding,) = checks.check_rpy2(ctx)
    assert finding.status.value == "fail"
    assert "R_getVar" in finding.title
    assert "pip install 'rpy2==3.5.17'" in finding.remedy
    assert finding.source.startswith("measured on this machine")


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
