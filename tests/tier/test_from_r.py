"""rcompat from R through the root's reticulate (1.41 with Python 3.13 on a Debian 12 host), with
rcompat installed from its wheel and, separately, in editable mode (whose .pth import hooks
reticulate 1.41 on Python 3.13 loses)."""
from __future__ import annotations

import json


R_CODE = r'''
script <- system2(Sys.getenv("RETICULATE_PYTHON"), c("-c", shQuote(
  "import rcompat.r.facts as f; print(f.scripts_dir() / 'rcompat.R')")), stdout = TRUE)
source(script)
report <- rcompat_doctor("r")
rows <- report[report$id %in% c("R-VERSION", "R-RPY2"), c("id", "status", "title")]
cat(jsonlite::toJSON(list(rows = rows, host_is_r = rcompat_host_is_r(),
                          pid = Sys.getpid()), auto_unbox = TRUE), "\n")
'''


def run_from_r(tier, venv: str) -> dict:
    (tier.host_dir / "from_r.R").write_text(R_CODE)
    proc = tier.run(["Rscript", f"{tier.inside}/from_r.R"], env={"RETICULATE_PYTHON": f"{venv}/bin/python"},
                    timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_answer(answer: dict, tier_facts) -> None:
    rows = {row["id"]: row for row in answer["rows"]}
    assert rows["R-VERSION"]["status"] == "ok"
    assert f"R version {tier_facts['expected']['R']}" in rows["R-VERSION"]["title"]
    # inside R, rcompat must not embed a second R through rpy2
    assert rows["R-RPY2"]["status"] == "skip", rows["R-RPY2"]
    assert answer["host_is_r"] is True


def test_from_r_with_the_wheel_installed(tier, tier_facts):
    check_answer(run_from_r(tier, tier.venv), tier_facts)


def test_from_r_with_an_editable_install(tier_editable, tier_facts):
    venv = tier_editable.venv
    check = tier_editable.run([f"{venv}/bin/python", "-c", "import rcompat; print(rcompat.__file__)"],
                              check=True)
    assert check.stdout.strip() == f"{tier_editable.inside}/src/rcompat/__init__.py"
    check_answer(run_from_r(tier_editable, venv), tier_facts)
