"""Terminal text: one line per finding, grouped by area, details indented; colour only on a TTY."""
from __future__ import annotations

import os
import textwrap

from rcompat.model import SEVERITY, Report, Status

_COLOURS = {Status.OK: "32", Status.WARN: "33", Status.FAIL: "31", Status.SKIP: "36", Status.ERROR: "35"}
_LABEL = {Status.OK: "OK", Status.WARN: "WARN", Status.FAIL: "FAIL", Status.SKIP: "SKIP", Status.ERROR: "ERROR"}


def use_colour(stream=None) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty())


def render_text(report: Report, colour: bool = False, verbose: bool = False, width: int = 100, **_: object) -> str:
    def paint(status: Status, text: str) -> str:
        return f"\x1b[{_COLOURS[status]}m{text}\x1b[0m" if colour else text

    lines = [f"rcompat {report.command} — {report.generated_at}"]
    for area in report.areas():
        lines.append("")
        lines.append(f"[{area}]")
        for f in (x for x in report.findings if x.area == area):
            label = paint(f.status, f"{_LABEL[f.status]:<5}")
            lines.append(f"  {label} {f.id:<22} {f.title}")
            show_detail = verbose or f.status in (Status.WARN, Status.FAIL, Status.ERROR)
            if f.message and (show_detail or f.status is Status.SKIP) and f.message != f.title:
                lines.extend(_wrap(f.message, "        ", width))
            if f.remedy and show_detail:
                lines.extend(_wrap("fix: " + f.remedy, "        ", width))
            if verbose and f.source:
                lines.extend(_wrap("source: " + f.source, "        ", width))
            if verbose and f.evidence:
                for k, v in f.evidence.items():
                    lines.extend(_wrap(f"{k}: {v}", "          ", width))
    counts = report.counts()
    worst = max((f.status for f in report.findings), key=SEVERITY.get, default=Status.OK)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    lines.append("")
    lines.append(paint(worst, f"summary: {summary or 'no findings'}"))
    return "\n".join(lines) + "\n"


def _wrap(text: str, indent: str, width: int) -> list[str]:
    out = []
    for para in str(text).splitlines() or [""]:
        out.extend(textwrap.wrap(para, width=width, initial_indent=indent, subsequent_indent=indent,
                                 break_long_words=False, break_on_hyphens=False) or [indent])
    return out
