"""Results as the JSON tables the R package turns into data.frames (see rcompat.tools.from_r)."""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from rcompat.model import Finding, Report

FINDING_COLUMNS = ["id", "area", "status", "title", "message", "remedy", "evidence", "source", "confidence"]

def report_table(report: Report) -> str:
    return findings_table(report.findings, facts=report.facts, command=report.command,
                          exit_code=report.exit_code())


def findings_table(findings: Iterable[Finding], facts: Mapping[str, Any] | None = None, command: str = "",
                   exit_code: int | None = None) -> str:
    rows = []
    for f in findings:
        d = f.to_dict() if isinstance(f, Finding) else dict(f)
        d["evidence"] = json.dumps(d.get("evidence") or {}, sort_keys=True, default=str)
        rows.append(d)
    return table(rows, FINDING_COLUMNS, facts=facts, kind="findings", command=command, exit_code=exit_code)


def frame_table(frame: Any, facts: Mapping[str, Any] | None = None, command: str = "") -> str:
    records = json.loads(frame.to_json(orient="records", default_handler=str))
    types = {str(c): _dtype_kind(frame[c].dtype) for c in frame.columns}
    return table(records, [str(c) for c in frame.columns], facts=facts, types=types, command=command)


def table(records: list[dict[str, Any]], columns: list[str], facts: Mapping[str, Any] | None = None,
          types: Mapping[str, str] | None = None, kind: str = "table", command: str = "",
          exit_code: int | None = None) -> str:
    """One JSON table; `types` names the R type (logical, integer, double) of columns that are not text."""
    from rcompat.model import jsonable

    clean = [{c: _cell(r.get(c)) for c in columns} for r in records]
    return json.dumps({"kind": kind, "command": command, "columns": columns, "types": dict(types or {}),
                       "records": clean, "facts": jsonable(dict(facts or {})), "exit_code": exit_code})


def _dtype_kind(dtype: Any) -> str:
    kind = getattr(dtype, "kind", "O")
    return {"b": "logical", "i": "integer", "u": "integer", "f": "double"}.get(kind, "character")


def _cell(value: Any) -> Any:
    """Scalars stay; lists and dicts become JSON text, so every column is atomic in R."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    return value
