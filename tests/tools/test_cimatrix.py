"""ci matrix: the product minus exactly what the fixture rules and the CUDA tables mark broken."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from rcompat.cuda.matrix import check_stack
from rcompat.model import Status
from rcompat.tools.cimatrix import parse_list, plan_matrix
from rcompat.errors import UsageError

RULES = str(Path(__file__).resolve().parents[2] / "fixtures" / "lock" / "rules.toml")
R, TORCH, CUDA = ["4.3", "4.4", "4.5"], ["0.11.1", "0.12.2", "0.13.0"], ["cpu", "12.4"]

# What fixtures/lock/rules.toml marks fail: R >= 4.5 with torch < 0.12.2; torch 0.13.0 on R 4.3.
RULE_BROKEN = {(r, t) for r, t in itertools.product(R, TORCH)
               if (r == "4.5" and t == "0.11.1") or (r == "4.3" and t == "0.13.0")}


def _cuda_broken(torch: str, cuda: str) -> bool:
    if cuda == "cpu":
        return False
    return any(f.status is Status.FAIL for f in check_stack({"rtorch": torch, "cuda": cuda})
               if f.id != "CUDA-MATRIX")


def _expected_include():
    return [{"r": r, "torch": t, "cuda": c} for r, t, c in itertools.product(R, TORCH, CUDA)
            if (r, t) not in RULE_BROKEN and not _cuda_broken(t, c)]


def test_github_output_is_the_product_minus_broken_cells(cli):
    run = cli("ci", "matrix", "--r", ",".join(R), "--torch", ",".join(TORCH), "--cuda", ",".join(CUDA),
              "--rules", RULES, "--format", "github", "--min-confidence", "unverified")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert list(doc) == ["include"]
    assert doc["include"] == _expected_include()
    assert len(run.stdout.strip().splitlines()) == 1  # one line: fits $GITHUB_OUTPUT as matrix=<json>
    assert "excluded r=4.5 torch=0.11.1 cuda=cpu: FIX-R45-TORCH-OLD" in " ".join(run.stderr.split())
    assert all(len(line) <= 80 for line in run.stderr.splitlines())  # wrapped like every text output


def test_cuda_tables_exclude_the_builds_r_torch_does_not_have():
    # R torch 0.12.x ships CUDA 11.7/11.8 builds only (rtorch_libtorch.csv): 12.4 must go.
    assert _cuda_broken("0.12.2", "12.4")
    plan = plan_matrix({"r": ["4.4"], "torch": ["0.12.2"], "cuda": ["cpu", "12.4"]}, rules_path=RULES)
    assert plan.include == [{"r": "4.4", "torch": "0.12.2", "cuda": "cpu"}]
    assert plan.excluded[0].reasons[0]["id"] == "CUDA-MATRIX-RTORCH"


def test_json_output_names_each_exclusion_with_reason_and_source(cli):
    run = cli("ci", "matrix", "--r", ",".join(R), "--torch", ",".join(TORCH), "--cuda", "cpu",
              "--rules", RULES, "--format", "json", "--min-confidence", "unverified")
    doc = json.loads(run.stdout)
    excluded = {(e["cell"]["r"], e["cell"]["torch"]): e["reasons"] for e in doc["excluded"]}
    assert set(excluded) == RULE_BROKEN
    reason = excluded[("4.5", "0.11.1")][0]
    assert reason["id"] == "FIX-R45-TORCH-OLD" and reason["source"] == "tests/tools fixture"
    assert doc["counts"] == {"product": 9, "include": 7, "excluded": 2}
    # a warn rule never excludes; it is a note on the cell that stays
    assert any(n["id"] == "FIX-R44-WARN" and n["cell"]["r"] == "4.4" for n in doc["notes"])


def test_min_confidence_keeps_cells_only_weak_claims_exclude():
    plan = plan_matrix({"r": R, "torch": TORCH, "cuda": ["cpu"]}, rules_path=RULES, min_confidence="medium")
    excluded = {(e.cell["r"], e.cell["torch"]) for e in plan.excluded}
    assert excluded == {("4.5", "0.11.1")}  # FIX-R43-TORCH013 is low confidence
    # ... and the cell it kept says so: a low-confidence claim never removes or keeps a cell silently
    kept = [n for n in plan.notes if n["id"] == "FIX-R43-TORCH013"]
    assert {n["cell"]["torch"] for n in kept} == {"0.13.0"} and "below --min-confidence medium" in kept[0]["note"]
    assert plan_matrix({"r": R, "torch": TORCH, "cuda": ["cpu"]}, rules_path=RULES).excluded == plan.excluded


def test_every_cell_kept_without_a_verdict_is_noted_with_why(cli):
    # R torch 0.17.0 is not in rtorch_libtorch.csv: its CUDA cells cannot be judged (issue 20.7)
    run = cli("ci", "matrix", "--r", "4.5", "--torch", "0.14.2,0.16.0,0.17.0", "--cuda", "cpu,12.4,12.8",
              "--format", "json")
    doc = json.loads(run.stdout)
    noted = {tuple(n["cell"].values()): n for n in doc["notes"]}
    for cell in (("4.5", "0.17.0", "12.4"), ("4.5", "0.17.0", "12.8")):
        assert cell in noted and noted[cell]["note"].startswith("not judged: ")
        assert "0.17.0" in noted[cell]["note"]
    included = {tuple(c.values()) for c in doc["include"]}
    gpu_cells = {c for c in included if c[2] != "cpu"}
    assert gpu_cells <= set(noted) | {c for c in gpu_cells if c[1] != "0.17.0"}
    github = cli("ci", "matrix", "--r", "4.5", "--torch", "0.17.0", "--cuda", "12.4")
    assert "note r=4.5 torch=0.17.0 cuda=12.4: CUDA-MATRIX-RTORCH: not judged" in " ".join(github.stderr.split())
    assert all(len(line) <= 80 for line in github.stderr.splitlines())


def test_every_cell_excluded_exits_1(cli):
    run = cli("ci", "matrix", "--r", "4.5", "--torch", "0.11.1", "--rules", RULES)
    assert run.returncode == 1 and json.loads(run.stdout) == {"include": []}


@pytest.mark.parametrize("args", [("--r", "4.x"), ("--cuda", "gpu"), ("--os", "beos")])
def test_bad_values_are_usage_errors(cli, args):
    run = cli("ci", "matrix", "--torch", "0.13.0", *args)
    assert run.returncode == 2 and "rcompat" in run.stderr


def test_parse_list_dedupes_and_accepts_cpu():
    assert parse_list("cpu, 12.4,CPU,12.4", "cuda", allow_cpu=True) == ["cpu", "12.4"]
    with pytest.raises(UsageError):
        parse_list(" , ", "r")


def test_a_huge_product_is_refused_before_any_cell_is_judged(cli):
    # 10^5 cells used to be evaluated one by one: minutes of CPU, then megabytes of JSON
    ten = lambda major: ",".join(f"{major}.{i}" for i in range(10))  # noqa: E731
    out = cli("ci", "matrix", "--r", ten(4), "--torch", ten(0), "--keras", ten(2), "--tensorflow", ten(3),
              "--cuda", "cpu,11.8,12.1", "--os", "linux,windows,macos", timeout=30)
    assert out.returncode == 2 and "cells, more than 10000" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_missing_cuda_tables_directory_is_refused_even_without_cuda_cells(cli):
    out = cli("ci", "matrix", "--r", "4.4", "--cuda-tables", "/nonexistent/tables")
    assert out.returncode == 2 and "does not exist" in out.stderr


def test_cuda_tables_are_loaded_once_per_plan(monkeypatch, tmp_path):
    import rcompat.cuda.matrix as matrix
    import rcompat.cuda.tables as tables

    (tmp_path / "cuda_driver.csv").write_bytes((tables.DATA_DIR / "cuda_driver.csv").read_bytes())
    loads = []
    real = tables.load_tables
    counted = lambda d=None: loads.append(d) or real(d)  # noqa: E731
    monkeypatch.setattr(tables, "load_tables", counted)
    monkeypatch.setattr(matrix, "load_tables", counted)  # check_stack's own import of it
    plan = plan_matrix({"r": R, "torch": TORCH, "cuda": CUDA}, rules_path=RULES, cuda_tables=str(tmp_path))
    assert len(plan.include) + len(plan.excluded) == len(R) * len(TORCH) * len(CUDA)
    assert [d for d in loads if d is not None] == [str(tmp_path)]  # None: the packaged (cached) tables
