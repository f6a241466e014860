"""JSON: the schema of docs/report-schema.md (schema_version, tool, summary, findings, facts)."""
from __future__ import annotations

from rcompat.model import Report


def render_json(report: Report, indent: int = 2, **_: object) -> str:
    return report.to_json(indent=indent) + "\n"
