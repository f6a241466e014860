"""JUnit XML for CI systems: one testsuite per area, one testcase per finding.

A test case is named by the finding's id alone (unique within a report and stable across runs, so a CI
can follow one check's history), the title goes into its <properties>; `time` is the time of the check
that made it (Finding.duration_s). fail → <failure>, error → <error>, skip → <skipped>; warn passes (its
text goes to <system-out>) unless `strict`, where it is a failure, matching the exit code of `--strict`.
Every text passes through escape.xml_text: a name holding any byte still gives well-formed XML.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from rcompat.model import Report, Status
from rcompat.renderers.escape import xml_text


def render_junit(report: Report, strict: bool = False, **_: object) -> str:
    root = ET.Element("testsuites", name=f"rcompat {report.command}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for area in report.areas():
        findings = [f for f in report.findings if f.area == area]
        suite_name = xml_text(f"rcompat.{area}")
        suite = ET.SubElement(root, "testsuite", name=suite_name, timestamp=report.generated_at)
        counts = {"tests": len(findings), "failures": 0, "errors": 0, "skipped": 0}
        seconds = 0.0
        for f in findings:
            seconds += f.duration_s or 0.0
            case = ET.SubElement(suite, "testcase", classname=suite_name, name=xml_text(f.id),
                                 time=_seconds(f.duration_s))
            ET.SubElement(ET.SubElement(case, "properties"), "property", name="title", value=xml_text(f.title))
            body = xml_text(_body(f))
            summary = xml_text(f.message or f.title)
            if f.status is Status.FAIL or (strict and f.status is Status.WARN):
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=summary, type=f.status.value).text = body
            elif f.status is Status.ERROR:
                counts["errors"] += 1
                ET.SubElement(case, "error", message=summary, type="error").text = body
            elif f.status is Status.SKIP:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=summary)
            elif f.status is Status.WARN:
                ET.SubElement(case, "system-out").text = "WARN: " + body
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
        suite.set("time", _seconds(seconds))
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _seconds(value: float | None) -> str:
    return f"{value or 0.0:.3f}"


def _body(f) -> str:
    parts = [f.message]
    if f.remedy:
        parts.append("fix: " + f.remedy)
    if f.source:
        parts.append("source: " + f.source)
    if f.evidence:
        parts.append("evidence: " + json.dumps(f.to_dict()["evidence"], indent=2))
    return "\n".join(p for p in parts if p)
