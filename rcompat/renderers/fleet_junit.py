"""JUnit XML of a fleet report: one test suite per node, one test case per node and finding, so a CI
or a dashboard shows which node failed which check. Nodes come from the report's groups (hostlists
of nodes sharing one row of statuses), so the XML is written from the compact view."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from rcompat.model import Report
from rcompat.renderers.escape import xml_text


def render_fleet_junit(report: Report, strict: bool = False, **_: object) -> str:
    from rcompat.fleet.hostlist import expand, natural_key

    fleet = report.facts.get("fleet") or {}
    rows = {row["id"]: row for row in fleet.get("findings", [])}
    per_node: dict[str, dict[str, str]] = {}
    for group in fleet.get("groups", []):
        for node in expand(group["nodes"]):
            per_node[node] = group["statuses"]
    root = ET.Element("testsuites", name=f"rcompat {report.command}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for node in sorted(per_node, key=natural_key):
        suite = ET.SubElement(root, "testsuite", name=xml_text(node), timestamp=report.generated_at)
        counts = dict.fromkeys(totals, 0)
        for fid, status in per_node[node].items():
            row = rows.get(fid, {})
            detail = row.get("by_status", {}).get(status, {})
            case = ET.SubElement(suite, "testcase", classname=xml_text(f"rcompat.{node}"), name=xml_text(fid))
            summary = xml_text(detail.get("title") or row.get("title", ""))
            counts["tests"] += 1
            if status == "fail" or (strict and status == "warn"):
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=summary, type=status).text = xml_text(detail.get("message", ""))
            elif status == "error":
                counts["errors"] += 1
                ET.SubElement(case, "error", message=summary, type="error").text = xml_text(detail.get("message", ""))
            elif status == "skip":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=summary)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
