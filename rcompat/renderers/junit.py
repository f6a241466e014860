"""JUnit XML for CI systems: one testsuite per area, one testcase per finding.

fail → <failure>, error → <error>, skip → <skipped>; warn passes (its text goes to <system-out>)
unless `strict`, where it is a failure, matching the exit code of `--strict`.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from rcompat.model import Report, Status


def render_junit(report: Report, strict: bool = False, **_: object) -> str:
    root = ET.Element("testsuites", name=f"rcompat {report.command}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for area in report.areas():
        findings = [f for f in report.findings if f.area == area]
        suite = ET.SubElement(root, "testsuite", name=f"rcompat.{area}", timestamp=report.generated_at)
        counts = {"tests": len(findings), "failures": 0, "errors": 0, "skipped": 0}
        for f in findings:
            case = ET.SubElement(suite, "testcase", classname=f"rcompat.{area}", name=f"{f.id}: {f.title}",
                                 time="0")
            body = _body(f)
            if f.status is Status.FAIL or (strict and f.status is Status.WARN):
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=f.message or f.title, type=f.status.value).text = body
            elif f.status is Status.ERROR:
                counts["errors"] += 1
                ET.SubElement(case, "error", message=f.message or f.title, type="error").text = body
            elif f.status is Status.SKIP:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=f.message or f.title)
            elif f.status is Status.WARN:
                ET.SubElement(case, "system-out").text = "WARN: " + body
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _body(f) -> str:
    parts = [f.message]
    if f.remedy:
        parts.append("fix: " + f.remedy)
    if f.source:
        parts.append("source: " + f.source)
    if f.evidence:
        parts.append("evidence: " + json.dumps(f.to_dict()["evidence"], indent=2))
    return "\n".join(p for p in parts if p)
