"""reticulate's discovery loaded lean (r_facts.R's `lean`, issue 31): reticulate's namespace loaded
with S4 dispatch off, so loadNamespace() does not cache Matrix's S4 methods (reticulate Imports
Matrix). Asserted on the real reticulate: the same facts as a plain child, dispatch really off in
the lean one, and a lean child's error asked again without `lean` (starts counted)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from rcompat.r import facts as r_facts

SCRIPT = r_facts.scripts_dir() / "r_facts.R"


@pytest.fixture(scope="module")
def rscript() -> str:
    path = shutil.which("Rscript")
    if path is None:
        pytest.skip("R is not installed (no Rscript on PATH)")
    return path


def _reticulate(rscript: str, *args: str, env: dict | None = None) -> dict:
    out = subprocess.run([rscript, str(SCRIPT), "reticulate", "discover", *args], capture_output=True,
                         text=True, timeout=120, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["r_facts"]["reticulate"]


def test_lean_and_plain_discovery_report_the_same(rscript):
    plain, lean = _reticulate(rscript), _reticulate(rscript, "lean")
    assert lean == plain
    if plain["method"] == "none":
        pytest.skip("reticulate is not installed: nothing was loaded either way")
    assert plain["method"] == "py_discover_config"


def test_the_lean_child_loads_reticulate_with_dispatch_off(rscript):
    # loadNamespace() caches a namespace's S4 methods only while dispatch is on (R's namespace.R)
    code = (f"sys.source('{SCRIPT}', envir = globalenv()); "
            "if (!nzchar(system.file(package = 'reticulate'))) {{ cat('absent'); quit() }}; "
            "invisible(rcompat_reticulate_namespace(lean = {lean})); "
            "cat(.isMethodsDispatchOn(), isNamespaceLoaded('Matrix'))")
    said = {lean: subprocess.run([rscript, "-e", code.format(lean=lean)], capture_output=True, text=True,
                                 timeout=120, check=True).stdout for lean in ("TRUE", "FALSE")}
    if said["TRUE"] == "absent":
        pytest.skip("reticulate is not installed")
    assert said == {"TRUE": "FALSE TRUE", "FALSE": "TRUE TRUE"}


def test_a_lean_discovery_error_is_asked_again_without_lean(rscript, tmp_path, monkeypatch):
    starts: list[list[str]] = []
    real = r_facts.run_child

    def spy(argv, **kwargs):
        starts.append([str(a) for a in argv])
        return real(argv, **kwargs)

    monkeypatch.setattr(r_facts, "run_child", spy)
    missing = str(tmp_path / "nope" / "python")
    facts = r_facts.probe(timeout=60, env={"RETICULATE_PYTHON": missing}, engine="rscript")
    discovery = [a[2:] for a in starts if a[1:2] == [str(SCRIPT)]]
    if facts.reticulate.get("method") == "none":
        pytest.skip("reticulate is not installed")
    assert discovery == [["core", "reticulate", "discover", "lean"], ["core", "reticulate", "discover"]]
    plain = _reticulate(rscript, env={**os.environ, "RETICULATE_PYTHON": missing})
    assert facts.reticulate["discover_error"] == plain["discover_error"] and "does not exist" in plain["discover_error"]
