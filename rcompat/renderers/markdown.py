"""Markdown to paste into a GitHub issue: a summary table, then details for what is not ok."""
from __future__ import annotations

import json

from rcompat.model import Report, Status
from rcompat.renderers.escape import one_line, printable

_ICON = {Status.OK: "✅ ok", Status.WARN: "⚠️ warn", Status.FAIL: "❌ fail", Status.SKIP: "⏭️ skip",
         Status.ERROR: "💥 error"}


def _cell(text: str) -> str:
    return one_line(text).replace("|", "\\|")


def render_markdown(report: Report, **_: object) -> str:
    from rcompat import __version__

    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n) or "no findings"
    out = [f"### rcompat {report.command} report", "",
           f"rcompat {__version__}, {report.generated_at}: {counts}", "",
           "| status | check | area | finding |", "|---|---|---|---|"]
    for f in report.findings:
        out.append(f"| {_ICON[f.status]} | `{_cell(f.id)}` | {_cell(f.area)} | {_cell(f.title)} |")
    details = [f for f in report.findings if f.status in (Status.WARN, Status.FAIL, Status.ERROR)]
    for f in details:
        out += ["", f"#### `{_cell(f.id)}` — {_cell(f.title)}", ""]
        if f.message:
            out.append(printable(f.message))
        if f.remedy:
            out += ["", f"**Fix:** {printable(f.remedy)}"]
        if f.source:
            out += ["", f"Source: {printable(f.source)}" + (f" (confidence: {f.confidence})" if f.confidence else "")]
        if f.evidence:
            out += ["", "<details><summary>evidence</summary>", "", "```json",
                    json.dumps(f.to_dict()["evidence"], indent=2), "```", "", "</details>"]
    return "\n".join(out) + "\n"
