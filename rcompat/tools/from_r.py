"""The bridge rcompat/r_scripts/rcompat.R calls through reticulate: every result as JSON table records.

R gets each answer as one JSON string `{"columns": [...], "records": [...], "facts": {...}}`, which
jsonlite turns into a data.frame with the same columns every time (nested values such as a finding's
evidence arrive as JSON text in a character column). JSON rather than reticulate's pandas conversion,
because that conversion depends on the numpy/pandas versions of the bound Python and turns nested dicts
into R environments.

Inside R, rcompat must not start a second embedded R through rpy2. rcompat.R sets RCOMPAT_HOST_PID
to its own pid before Python starts in it, and passes what R knows about itself (R.version, .libPaths(), package versions)
through `set_host_facts()`; the R engine sees host_is_r() and probes R with an Rscript child, and the
host facts are offered to it and to `snapshot` via `host_facts()`.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from rcompat.model import Finding, Report

FINDING_COLUMNS = ["id", "area", "status", "title", "message", "remedy", "evidence", "source", "confidence"]
_HOST_FACTS: dict[str, Any] | None = None


def set_host_facts(facts_json: str) -> dict[str, Any]:
    """Record the R host's facts (JSON from rcompat.R) for this Python; returns them parsed."""
    global _HOST_FACTS
    facts = json.loads(facts_json) if facts_json else {}
    if not isinstance(facts, dict):
        raise ValueError("host facts must be a JSON object")
    _HOST_FACTS = facts
    return facts


def host_facts() -> dict[str, Any] | None:
    """The R host's facts when rcompat runs inside R (set by rcompat.R), else None."""
    return _HOST_FACTS


def host_is_r() -> bool:
    """True when R embeds this Python; the R engine decides (libR mapped, or RCOMPAT_HOST_PID)."""
    from rcompat.r import host_is_r as engine_host_is_r

    return bool(engine_host_is_r())


# -- calls from R -----------------------------------------------------------------------------------

def doctor(areas: Any = None, timeout: float | None = None) -> str:
    from rcompat.areas import run_doctor

    report = run_doctor(_as_list(areas), timeout=timeout)
    _add_host_r_version(report)
    return findings_table(report.findings, facts=report.facts)


def explain(text: str) -> str:
    from rcompat.explain.report import explain as run

    return findings_table(run(text).findings)


def lock_check(path: str, rules: str | None = None) -> str:
    from rcompat.tools.lock import check_lockfile

    report = check_lockfile(path, rules_path=rules)
    return findings_table(report.findings, facts=report.facts)


def snapshot_save(path: str) -> str:
    from rcompat.tools import snapshot

    snap = snapshot.collect(host_r=host_facts())  # the R section reads its version, platform, packages
    snapshot.save(path, snap)
    return table([{"section": k, "recorded": k not in snap["errors"], "error": snap["errors"].get(k, "")}
                  for k in snapshot.SECTIONS], ["section", "recorded", "error"])


def elf_missing(path: str) -> str:
    import rcompat.elf

    result = rcompat.elf.missing(path).to_dict()
    rows = [{"kind": "library", "name": name, "version": None, "needed_by": None,
             "loader_message": f"{name}: cannot open shared object file", "explanation": "not found"}
            for name in result.get("missing_libraries", [])]
    rows += [{"kind": "symbol", "name": m["name"], "version": m.get("version"),
              "needed_by": m.get("needed_by"), "loader_message": m.get("loader_message"),
              "explanation": m.get("explanation")} for m in result.get("missing_symbols", [])]
    return table(rows, ["kind", "name", "version", "needed_by", "loader_message", "explanation"],
                 facts={"root": result.get("root"), "bound": result.get("bound")})


def abi_diff(old: str, new: str) -> str:
    import rcompat.elf

    return frame_table(rcompat.elf.abi_diff(old, new).to_frame())


def device() -> str:
    import rcompat

    choice = rcompat.device()
    d = choice.to_dict() if hasattr(choice, "to_dict") else {"device": str(choice)}
    row = {"device": d.get("device"), "reason": d.get("reason", ""), "remedy": d.get("remedy", "")}
    return table([row], ["device", "reason", "remedy"], facts=d.get("facts") or {})


def race(**kwargs: Any) -> str:
    import rcompat.race

    for key in ("iterations", "workers", "trials", "seed"):
        if isinstance(kwargs.get(key), float):  # R numbers arrive as doubles
            kwargs[key] = int(kwargs[key])
    return frame_table(rcompat.race.run(**kwargs).to_frame())


# -- conversion ---------------------------------------------------------------------------------------

def findings_table(findings: Iterable[Finding], facts: Mapping[str, Any] | None = None) -> str:
    rows = []
    for f in findings:
        d = f.to_dict()
        d["evidence"] = json.dumps(d["evidence"], sort_keys=True)
        rows.append(d)
    return table(rows, FINDING_COLUMNS, facts=facts)


def frame_table(frame: Any, facts: Mapping[str, Any] | None = None) -> str:
    records = json.loads(frame.to_json(orient="records", default_handler=str))
    return table(records, [str(c) for c in frame.columns], facts=facts)


def table(records: list[dict[str, Any]], columns: list[str], facts: Mapping[str, Any] | None = None) -> str:
    from rcompat.model import jsonable

    clean = [{c: _cell(r.get(c)) for c in columns} for r in records]
    return json.dumps({"columns": columns, "records": clean, "facts": jsonable(dict(facts or {}))})


def _cell(value: Any) -> Any:
    """Scalars stay; lists and dicts become JSON text, so every column is atomic in R."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def _as_list(areas: Any) -> list[str] | None:
    if areas is None:
        return None
    if isinstance(areas, str):
        return [areas]
    return [str(a) for a in areas]


def _add_host_r_version(report: Report) -> None:
    """When the R area could not name the version (engine missing or failed), the host R knows it."""
    facts = host_facts()
    if not facts or not facts.get("version"):
        return
    at = next((i for i, f in enumerate(report.findings) if f.id == "R-VERSION"), None)
    if at is not None and report.findings[at].status.value == "ok":
        return
    from rcompat.model import Status

    evidence = {"via": "R host", "version": facts["version"], "platform": facts.get("platform")}
    if at is not None:
        evidence["engine_said"] = f"{report.findings[at].status.value}: {report.findings[at].message}"
    finding = Finding(
        id="R-VERSION", area="r", status=Status.OK, title=facts.get("version_string") or f"R {facts['version']}",
        message="Reported by the R session that called rcompat through reticulate.", evidence=evidence)
    if at is None:
        report.findings.insert(0, finding)
    else:
        report.findings[at] = finding
