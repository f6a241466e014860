"""The R engine on the root's R (R 4.5.0 on a Debian 12 host): facts, rpy2's mode, packages,
reticulate's Python, the compiler check, isolated verification with fixture packages built by that R."""
from __future__ import annotations

import json

import pytest


def findings(report: dict) -> dict:
    return {f["id"]: f for f in report["findings"]}


@pytest.fixture(scope="module")
def r_report(tier) -> dict:
    # reticulate 1.41 without RETICULATE_PYTHON discovers nothing (it would make a uv environment):
    # point it at the venv, as the R user of rcompat does
    return findings(tier.doctor_json("--only", "r", env={"RETICULATE_PYTHON": f"{tier.venv}/bin/python"}))


def test_r_version_and_rpy2_mode(r_report, tier_facts):
    expected = tier_facts["expected"]
    assert tier_facts["R"] == expected["R"]
    assert tier_facts["rpy2"].startswith(expected["rpy2"])
    version = r_report["R-VERSION"]
    assert version["status"] == "ok" and f"R version {expected['R']}" in version["title"]
    assert version["evidence"]["engine"] == "rpy2"
    rpy2 = r_report["R-RPY2"]
    assert rpy2["status"] == "ok", rpy2
    assert rpy2["title"] == f"rpy2 {tier_facts['rpy2']} embeds R {expected['R']} ({expected['mode']} mode)"
    assert rpy2["evidence"]["mode"] == {"mode": expected["mode"], "requested": "ANY", "api_error": None}


def test_libr_exports_what_rpy2_needs(tier, tier_facts):
    """R_getVar is R 4.5's (rpy2 3.6's API module needs it); initStdinHandler is gone from it."""
    proc = tier.rcompat("elf", "symbols", "--defined", "/usr/lib/R/lib/libR.so", check=True)
    names = {line.split()[-1] for line in proc.stdout.splitlines() if line.strip()}
    new_api = {"R_getVar", "R_ClosureEnv", "R_ParentEnv", "Rf_allocLang"}
    if tier_facts["expected"]["R_getVar"]:
        assert new_api <= names and "initStdinHandler" not in names
    else:
        assert not new_api & names and "initStdinHandler" in names


def test_reticulate_without_a_python_set(tier, tier_facts):
    unset = findings(tier.doctor_json("--only", "r"))["R-RETICULATE-PYTHON"]
    if tier_facts["expected"]["reticulate"] == "1.41":
        assert unset["status"] == "skip" and "managed uv environment" in unset["message"], unset
    else:
        assert unset["status"] == "ok", unset


def test_packages_python_and_compiler(tier, r_report, tier_facts):
    expected = tier_facts["expected"]
    reticulate = r_report["R-PKG-RETICULATE"]
    assert reticulate["status"] == "ok" and reticulate["title"].startswith(f"reticulate {expected['reticulate']}")
    assert r_report["R-PKG-TORCH"]["status"] == "skip"
    python = r_report["R-RETICULATE-PYTHON"]
    assert python["status"] == "ok" and f"(Python {expected['python']}" in python["title"], python
    assert f"{tier.venv}/bin/python" in python["title"], python
    c17 = r_report["R-COMPILER-C17"]
    assert c17["status"] == "ok" and "accepts C17" in c17["title"]


def test_verification_children_with_fixture_packages(tier):
    ok = tier.r_lib("ok", ("torch", "0.12.0"))
    segv = tier.r_lib("segv", ("torch-segv", "0.12.0"))
    good = tier.rcompat("r", "verify", "--lib", ok, "-p", "torch", "--format", "json")
    assert good.returncode == 0, good.stdout + good.stderr
    verdict = findings(json.loads(good.stdout))["R-TORCH-VERIFY"]
    assert verdict["status"] == "ok" and "matmul ok" in verdict["title"]
    bad = tier.rcompat("r", "verify", "--lib", segv, "-p", "torch", "--format", "json")
    assert bad.returncode == 1
    crash = findings(json.loads(bad.stdout))["R-TORCH-VERIFY"]
    assert crash["status"] == "fail" and "SIGSEGV" in crash["title"]
    assert "torch_randn(3, 3)" in crash["message"]


def test_facts_read_the_fixture_library(tier, tier_facts):
    ok = tier.r_lib("facts", ("torch", "0.12.0"), ("keras", "2.15.0"))
    proc = tier.rcompat("r", "facts", "--lib", ok, check=True)
    assert f"R version {tier_facts['expected']['R']}" in proc.stdout
    assert f"rpy2       {tier_facts['rpy2']} ok" in proc.stdout
    torch_line = next(line for line in proc.stdout.splitlines() if line.strip().startswith("torch "))
    assert "0.12.0" in torch_line and ok in torch_line


def test_rules_check_on_this_r(tier, tier_facts):
    """`r rules --check` with the R version this root's R reports: the R >= 4.5 rows fire on R 4.5.0
    only (their truth is not testable here: no real R torch or keras; see r_rules.toml's confidence)."""
    proc = tier.rcompat("r", "rules", "--format", "json", "--check", f"R={tier_facts['R']}", "torch=0.12.1",
                        "keras=2.15.0")
    assert proc.returncode in (0, 1), proc.stderr
    fired = set(findings(json.loads(proc.stdout)))
    r45_rows = {"R-R45-TORCH-TENSOR-SEGV", "R-R45-KERAS-2150-PARTIAL"}
    if tier_facts["R"].startswith("4.5"):
        assert r45_rows <= fired and proc.returncode == 1
    else:
        assert not r45_rows & fired


def test_lean_discovery_reports_what_plain_discovery_does(tier):
    """r_facts.R's `lean` (reticulate loaded with S4 dispatch off, Matrix's methods not cached) on
    R 4.5 and reticulate 1.41: the same reticulate facts as a plain child, with a Python set and without."""
    script = tier.run([f"{tier.venv}/bin/python", "-c", "from rcompat.r.scripts import scripts_dir; "
                       "print(scripts_dir() / 'r_facts.R')"], check=True).stdout.strip()
    for env in ({}, {"RETICULATE_PYTHON": f"{tier.venv}/bin/python"}):
        said = [json.loads(tier.run(["Rscript", script, "reticulate", "discover", *lean], env=env, check=True)
                           .stdout.strip().splitlines()[-1])["r_facts"]["reticulate"] for lean in ([], ["lean"])]
        assert said[0] == said[1] and said[0]["method"] == "py_discover_config", said
