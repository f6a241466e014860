"""Terminal text: one line per finding, grouped by area, details indented; colour only on a TTY.

Lines fit the terminal (`output_width()`: its width, 80 when the output is not a terminal). A word
longer than a line (a path, a mangled symbol) is never cut: it goes on a line of its own, so it can be
copied whole. Names are shown escaped (rcompat.renderers.escape): a newline or control byte in a name
cannot split or paint a line.
"""
from __future__ import annotations

import os

from rcompat.model import SEVERITY, Report, Status
from rcompat.renderers.escape import one_line, printable

_COLOURS = {Status.OK: "32", Status.WARN: "33", Status.FAIL: "31", Status.SKIP: "36", Status.ERROR: "35"}
_LABEL = {Status.OK: "OK", Status.WARN: "WARN", Status.FAIL: "FAIL", Status.SKIP: "SKIP", Status.ERROR: "ERROR"}
DEFAULT_WIDTH = 80
DETAIL = " " * 8
ID_COLUMN = 22


def use_colour(stream=None) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty())


def output_width(stream=None) -> int:
    """The width to wrap to: the terminal's when `stream` is one, else $COLUMNS, else 80."""
    try:
        if stream is not None and stream.isatty():
            columns = os.get_terminal_size(stream.fileno()).columns
            if columns > 0:
                return max(40, columns)
    except (AttributeError, OSError, ValueError):
        pass
    try:
        return max(40, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return DEFAULT_WIDTH


def render_text(report: Report, colour: bool = False, verbose: bool = False, width: int | None = None,
                **_: object) -> str:
    width = width or DEFAULT_WIDTH

    def paint(status: Status, text: str) -> str:
        return f"\x1b[{_COLOURS[status]}m{text}\x1b[0m" if colour else text

    lines = [f"rcompat {one_line(report.command)} — {report.generated_at}"]
    for area in report.areas():
        lines.append("")
        lines.append(f"[{one_line(area)}]")
        for f in (x for x in report.findings if x.area == area):
            lines.extend(_headline(f, width, paint))
            show_detail = verbose or f.status in (Status.WARN, Status.FAIL, Status.ERROR)
            if f.message and (show_detail or f.status is Status.SKIP) and f.message != f.title:
                lines.extend(wrap(printable(f.message), DETAIL, width))
            if f.remedy and show_detail:
                lines.extend(wrap("fix: " + printable(f.remedy), DETAIL, width))
            if verbose and f.source:
                lines.extend(wrap("source: " + printable(f.source), DETAIL, width))
            if verbose and f.evidence:
                for k, v in f.evidence.items():
                    lines.extend(wrap(f"{one_line(k)}: {printable(v)}", DETAIL + "  ", width))
    counts = report.counts()
    worst = max((f.status for f in report.findings), key=SEVERITY.get, default=Status.OK)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    lines.append("")
    lines.append(paint(worst, f"summary: {summary or 'no findings'}"))
    return "\n".join(lines) + "\n"


def _headline(f, width: int, paint) -> list[str]:
    """`  STATUS ID  title`, the title wrapped under its own column (or under the details when a long id
    leaves it too little room); the status word painted after wrapping, so colour codes take no width."""
    label = f"{_LABEL[f.status]:<5}"
    ident = one_line(f.id)
    prefix = f"  {label} {ident:<{ID_COLUMN}} "
    hang = " " * len(prefix) if len(prefix) <= width // 2 else DETAIL
    out = wrap(one_line(f.title), prefix, width, hang) if f.title else [prefix.rstrip()]
    out[0] = out[0].replace(label, paint(f.status, label), 1)
    return out


def wrap(text: str, indent: str, width: int = DEFAULT_WIDTH, subsequent: str | None = None) -> list[str]:
    """Each line of `text` that fits kept as it is (alignment survives); a longer one broken at spaces
    into lines of at most `width`, each after `indent` (the first) or `subsequent` (the rest). A word
    that fits no line is never broken: it stands alone on its line, after `subsequent`."""
    subsequent = indent if subsequent is None else subsequent
    out: list[str] = []
    for para in str(text).splitlines() or [""]:
        lead = indent if not out else subsequent
        if len(lead) + len(para) <= width:
            out.append((lead + para).rstrip())
            continue
        line, empty = lead, True
        for word in para.split():
            if len(line) + (0 if empty else 1) + len(word) <= width:
                line += word if empty else " " + word
                empty = False
                continue
            if line.strip():  # the line so far (or a headline's prefix alone) ends here
                out.append(line.rstrip())
            line, empty = subsequent, True
            if len(line) + len(word) <= width:
                line, empty = line + word, False
            else:
                out.append(subsequent + word)
        if not empty:
            out.append(line)
    return out


def wrap_page(text: str, width: int = DEFAULT_WIDTH) -> str:
    """A page of `label:   value` lines (`rcompat r facts`, `cuda probe`, `r rules`) fitted to `width`:
    a line that fits stays; a longer one continues under its value's column (or its own indent)."""
    import re

    out = []
    for line in text.split("\n"):
        lead = re.match(r"\s*(?:\S+(?: \S+)?:? {2,}(?=\S))?", line).group()
        hang = " " * len(lead) if len(lead) <= width // 2 else re.match(r"\s*", line).group() + "    "
        out.extend(wrap(line[len(lead):], lead, width, hang) if len(line) > width else [line])
    return "\n".join(out)
