"""Does the Python reticulate would bind agree with itself, and has it what R's packages import?

reticulate reports a Python (`python`, `version`) and the libpython it would load; they can belong to
two interpreters (a pyenv shim resolves per directory and environment: py_config() then shows version
3.11.2 beside libpython 3.11.7). The R session gets the libpython's interpreter, with the other one's
view in every report. These functions read facts already gathered (r_facts.R, rcompat.r.runtime
.bound_python): nothing is run here.
"""
from __future__ import annotations

from typing import Any, Mapping

from rcompat.model import Finding, Status

AREA = "r"
TABLE = "reticulate_modules.toml"


def full_version(version_string: str | None) -> str | None:
    """"3.11.2 (main, Apr 28 2025, …)" -> "3.11.2"."""
    words = (version_string or "").split()
    return words[0] if words else None


def disagreement(ret: Mapping[str, Any], python: Mapping[str, Any]) -> dict[str, Any] | None:
    """The versions that contradict each other, or None when they agree (or cannot be compared)."""
    reported = full_version(ret.get("version_string"))
    named_now = python.get("python_version")
    embedded = (python.get("libpython_python") or {}).get("python_version") or (
        named_now if python.get("libpython_interpreter") else None)
    seen = {"reported by py_discover_config()": reported, f"of {ret.get('python')} run now": named_now,
            f"of the libpython's interpreter ({python.get('libpython_interpreter')})": embedded}
    known = {how: v for how, v in seen.items() if v}
    if len(set(known.values())) < 2:
        return None
    return {"versions": known, "libpython": ret.get("libpython"),
            "interpreter": python.get("libpython_interpreter") or ret.get("python")}


def disagreement_finding(ret: Mapping[str, Any], python: Mapping[str, Any], found: dict[str, Any]) -> Finding:
    versions = "; ".join(f"{v} {how}" for how, v in found["versions"].items())
    interpreter = found["interpreter"]
    return Finding(
        id="R-RETICULATE-PYTHON", area=AREA, status=Status.WARN,
        title=f"reticulate's Python {ret.get('python')} disagrees with itself",
        message=f"Python versions: {versions}; libpython {found['libpython']}. The R session would "
                "embed the libpython's interpreter while py_config() and package checks describe another "
                "(a pyenv shim or PATH resolving differently in R).",
        remedy=f"Pin one interpreter: add RETICULATE_PYTHON={interpreter} to ~/.Renviron (or call "
               f"reticulate::use_python(\"{interpreter}\", required = TRUE) before Python starts).",
        evidence={"reticulate": dict(ret), "python": dict(python)},
        source="reticulate py_config() / py_discover_config(): python, libpython and version are "
               "reported separately (rstudio/reticulate)", confidence="high")


def module_findings(ret: Mapping[str, Any], python: Mapping[str, Any], installed: set[str],
                    rows: list[dict[str, Any]]) -> list[Finding]:
    """One finding per table row whose R package is installed: is its Python module in the Python the
    R session would embed?"""
    effective = python.get("libpython_python") or python
    packages = effective.get("python_packages") or {}
    where = effective.get("executable") or ret.get("python")
    out = []
    for row in rows:
        if row["r_package"] not in installed:
            continue
        module = row["python"]
        version = packages.get(module)
        reticulate_blind = module == "numpy" and ret.get("method") == "py_discover_config" and not ret.get("numpy")
        common = {"id": f"R-{row['id']}", "area": AREA, "source": row["source"],
                  "confidence": row.get("confidence", ""),
                  "evidence": {"module": module, "python": where, "found": version,
                               "reticulate_numpy": ret.get("numpy"), "r_package": row["r_package"]}}
        if version and not reticulate_blind:
            out.append(Finding(status=Status.OK, title=f"{module} {version} in reticulate's Python",
                               message=f"{where} has {module} {version}, which R {row['r_package']} uses.", **common))
            continue
        if version:
            message = (f"py_discover_config() found no {module} for {ret.get('python')} (py_config() prints "
                       f"'{module}: [NOT FOUND]'), while {where}, whose libpython R would load, has {module} "
                       f"{version}: the two are different Pythons (see R-RETICULATE-PYTHON).")
        else:
            message = f"{where} has no {module}; R {row['r_package']} needs it through reticulate."
        pin = python.get("libpython_interpreter") or where  # the interpreter R-RETICULATE-PYTHON pins
        remedy = (f"Pin reticulate to {pin} (RETICULATE_PYTHON, see R-RETICULATE-PYTHON)." if version
                  else row["remedy"].format(python=where))
        out.append(Finding(status=Status.WARN, title=f"reticulate's Python lacks {module}", message=message,
                           remedy=remedy, **common))
    return out
