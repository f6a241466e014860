"""torch.compile for real: it compiles here (gcc is present), and with the compiler taken away in
the child's environment the failure, or the silent fallback to eager, is caught with its cause and
numbers."""
from __future__ import annotations

import json

FINDING = "COMPILE-MLP_FORWARD_F32"


def _finding(proc) -> dict:
    assert proc.stdout.startswith("{"), proc.stderr
    found = {f["id"]: f for f in json.loads(proc.stdout)["findings"]}
    return found[FINDING]


def test_the_model_compiles_here_and_matches_eager(compiled):
    f = _finding(compiled)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    assert f["status"] in ("ok", "warn"), f  # warn: compiled but slower, which a tiny MLP may be
    ev = f["evidence"]
    assert ev["status"] == "compiled" and ev["within"] is True
    assert ev["frames"]["ok"] == ev["frames"]["total"] >= 1 and ev["unique_graphs"] >= 1
    assert ev["max_rel_err"] <= ev["tolerance"]["rtol"] or ev["max_abs_err"] <= ev["tolerance"]["atol"]
    assert ev["eager_s"] > 0 and ev["compiled_s"] > 0
    assert ev["environment"]["cxx_found"]  # the compiler inductor used was found


def test_no_compiler_makes_torch_compile_raise_and_the_cause_is_named(no_compiler_raises):
    assert no_compiler_raises.returncode == 1, no_compiler_raises.stderr
    f = _finding(no_compiler_raises)
    assert f["status"] == "fail" and f["title"] == "torch.compile fails: no C++ compiler", f
    assert "InvalidCxxCompiler" in f["evidence"]["error"] and f["evidence"]["cause"] == "COMPILE-NO-CXX"
    assert f["evidence"]["environment"]["cxx"] == ["/nonexistent/g++"]
    assert "g++" in f["remedy"]


def test_suppressed_errors_fall_back_to_eager_and_are_caught_with_numbers(no_compiler_suppressed):
    assert no_compiler_suppressed.returncode == 1, no_compiler_suppressed.stderr
    f = _finding(no_compiler_suppressed)
    assert f["status"] == "fail" and f["title"] == "torch.compile fell back to eager: no C++ compiler", f
    ev = f["evidence"]
    assert ev["status"] == "fell back" and ev["environment"]["suppress_errors"] is True
    assert ev["frames"].get("ok", 0) < ev["frames"]["total"]  # dynamo's own count of the failed frame
    assert ev["eager_s"] > 0 and ev["compiled_s"] > 0 and ev["within"] is True  # eager ran, both times measured
    assert "compiled" in f["message"] and "eager" in f["message"] and "ms" in f["message"]


def test_the_doctor_runs_the_compile_area_only_when_asked():
    from rcompat.areas import AREA_MODULES, DEEP_AREAS, resolve_areas

    assert "compile" not in resolve_areas(None) and resolve_areas(None) == list(AREA_MODULES)
    assert resolve_areas(None, deep=True)[-1] == "compile" and "compile" in DEEP_AREAS
    assert resolve_areas(["compile"]) == ["compile"]


def test_doctor_compile_area_reports_the_same_failure(needs_torch_and_gcc, cli):
    proc = cli("doctor", "--only", "compile", "--format", "json",
               env={"CXX": "/nonexistent/g++", "PATH": "/nonexistent-bin"}, timeout=900)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    found = {f["id"]: f for f in doc["findings"]}
    assert found[FINDING]["area"] == "compile" and found[FINDING]["title"].endswith("no C++ compiler")
    assert doc["facts"]["compile"]["cases"][0]["case"] == "mlp_forward_f32"
