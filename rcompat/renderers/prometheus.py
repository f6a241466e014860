"""node_exporter's textfile-collector format (the Prometheus text exposition format): each finding's
status as a state set of gauges (1 for its status, 0 for the others, so an alert is
`rcompat_finding_status{status="fail"} == 1`), counts per status, the exit code, the time of the run,
and the versions that matter as labels of one info metric (the facts marked `info` in
rcompat/data/fleet_facts.toml). Written to DIR/*.prom atomically by the CLI, so node_exporter never
reads half a file. Label values are escaped as the format requires (backslash, quote, newline).
"""
from __future__ import annotations

import datetime as _dt
import re

from rcompat.model import Report, Status

_LABEL_NAME = re.compile(r"[^a-zA-Z0-9_]")


def _value(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: object) -> str:
    return "{" + ",".join(f'{_LABEL_NAME.sub("_", k)}="{_value(v)}"' for k, v in labels.items()) + "}"


def render_prometheus(report: Report, strict: bool = False, **_: object) -> str:
    lines = ["# HELP rcompat_finding_status Status of each rcompat finding: 1 for its status, 0 for the others.",
             "# TYPE rcompat_finding_status gauge"]
    seen: set[str] = set()
    for f in report.findings:
        if f.id in seen:  # one series per id, as Prometheus requires
            continue
        seen.add(f.id)
        for status in Status:
            lines.append(f"rcompat_finding_status{_labels(id=f.id, area=f.area, status=status.value)} "
                         f"{1 if f.status is status else 0}")
    lines += ["# HELP rcompat_findings Number of findings by status.", "# TYPE rcompat_findings gauge"]
    lines += [f"rcompat_findings{_labels(status=s)} {n}" for s, n in report.counts().items()]
    lines += ["# HELP rcompat_exit_code Exit code of the run: 0 all ok, 1 a failing finding.",
              "# TYPE rcompat_exit_code gauge", f"rcompat_exit_code {report.exit_code(strict=strict)}",
              "# HELP rcompat_last_run_timestamp_seconds When the report was made (Unix time).",
              "# TYPE rcompat_last_run_timestamp_seconds gauge",
              f"rcompat_last_run_timestamp_seconds {_timestamp(report.generated_at)}"]
    versions = _versions(report)
    lines += ["# HELP rcompat_versions_info Versions of the stack on this machine, as labels.",
              "# TYPE rcompat_versions_info gauge", f"rcompat_versions_info{_labels(**versions)} 1"]
    return "\n".join(lines) + "\n"


def _timestamp(text: str) -> str:
    try:
        return f"{_dt.datetime.fromisoformat(text).timestamp():.0f}"
    except (TypeError, ValueError):
        return "0"


def _versions(report: Report) -> dict[str, str]:
    """name -> value of each fact marked `info` that the report's facts hold."""
    from rcompat.fleet.facts_table import fact_table, lookup

    out = {"command": report.command}
    for fact in fact_table().named:
        if not fact.info or "*" in fact.pattern:
            continue
        try:
            value = lookup(report.facts, fact.pattern)
        except KeyError:
            continue
        if value is not None and not isinstance(value, (dict, list)):
            out[fact.name] = str(value)
    return out
