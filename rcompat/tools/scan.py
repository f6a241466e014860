"""`rcompat scan PATH…`: uses of deprecated or removed torch APIs in Python and R code.

The APIs are rows of rcompat/data/deprecated_api.toml (regex, language, replacement, since, removed_in,
source, confidence). Each line is matched after its comment is stripped, so a commented-out call is not
reported. A removed API is a `fail` finding (the code will not run on that version), a deprecated one
`warn`. The text output is one `file:line:col:` line per use, like a compiler or linter.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from rcompat.errors import DataError, RcompatError, UsageError
from rcompat.inputs import read_text_input
from rcompat.model import Finding, Report, Status

AREA = "scan"
TABLE = "deprecated_api.toml"
LANGUAGE_OF_SUFFIX = {".py": "python", ".r": "r", ".rmd": "r", ".qmd": "r"}
SKIP_DIRS = {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", "renv", "site-packages",
             ".Rproj.user", ".tox", "build", "dist"}
MAX_FILE_BYTES = 5_000_000


@dataclass(frozen=True)
class Api:
    id: str
    language: str
    pattern: re.Pattern
    replacement: str
    since: str
    removed_in: str
    package: str
    source: str
    confidence: str

    def describe(self) -> str:
        parts = []
        if self.removed_in:
            parts.append(f"removed in {self.package} {self.removed_in}")
        if self.since:
            parts.append(f"deprecated since {self.package} {self.since}")
        return ", ".join(parts) or f"deprecated in {self.package}"


def load_apis(path: "str | Path | None" = None) -> list[Api]:
    from rcompat.data import load_toml

    rows = load_toml(Path(path) if path else TABLE, "api", required=("id", "language", "pattern", "replacement", "source",
                                                     "confidence"))
    apis = []
    for row in rows:
        if row["language"] not in ("python", "r"):
            raise DataError(f"{path or TABLE}: api {row['id']}: language must be python or r")
        try:
            pattern = re.compile(row["pattern"])
        except re.error as exc:
            raise DataError(f"{path or TABLE}: api {row['id']}: bad pattern: {exc}") from exc
        apis.append(Api(row["id"], row["language"], pattern, row["replacement"], str(row.get("since", "")),
                        str(row.get("removed_in", "")), str(row.get("package", "torch")), row["source"],
                        row["confidence"]))
    return apis


def iter_source_files(paths: Iterable[str], skipped: "list[dict] | None" = None) -> Iterator[tuple[Path, str]]:
    """(path, language) of every source file under `paths`; a directory that cannot be listed is
    added to `skipped` with why."""
    def unreadable(exc: OSError) -> None:
        if skipped is not None:
            skipped.append({"file": str(exc.filename), "why": f"directory not readable: {exc.strerror}"})

    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise UsageError(f"cannot scan {raw}: no such file or directory")
        if not p.is_dir():  # a file, or a FIFO/device named on the command line (scan() names it)
            lang = LANGUAGE_OF_SUFFIX.get(p.suffix.lower())
            if lang:
                yield p, lang
            continue
        for root, dirs, files in os.walk(p, onerror=unreadable):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(files):
                lang = LANGUAGE_OF_SUFFIX.get(Path(name).suffix.lower())
                if lang:  # a FIFO named x.py is skipped (and named) by scan(), never read
                    yield Path(root, name), lang


def code_part(line: str) -> str:
    """The line with string contents blanked and a `#` comment cut (the same rule in Python and R);
    columns stay where they were, so a match reports the column of the original line."""
    out = list(line)
    quote = None
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                out[i] = " "
                if i + 1 < len(line):
                    out[i + 1] = " "
                i += 2
                continue
            if ch == quote:
                quote = None
            else:
                out[i] = " "
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "#":
            return "".join(out[:i])
        i += 1
    return "".join(out)


def scan(paths: Iterable[str], apis: list[Api] | None = None) -> Report:
    apis = apis if apis is not None else load_apis()
    by_language: dict[str, list[Api]] = {}
    for api in apis:
        by_language.setdefault(api.language, []).append(api)
    report = Report(command="scan")
    files = 0
    found: dict[str, tuple[Api, list[dict]]] = {}
    skipped: list[dict] = []
    for path, lang in iter_source_files(paths, skipped):
        files += 1
        why = _unreadable(path)
        if why is None:
            try:
                text = read_text_input(path, "log", errors="replace")
            except (OSError, RcompatError) as exc:
                why = str(exc)
        if why is not None:  # never read, and never silently: a skipped file is not a clean one
            skipped.append({"file": str(path), "why": why})
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            code = code_part(line)
            for api in by_language.get(lang, []):
                for m in api.pattern.finditer(code):
                    found.setdefault(api.id, (api, []))[1].append(
                        {"file": str(path), "line": lineno, "column": m.start() + 1, "matched": m.group(0).strip(),
                         "text": line.strip()[:200]})
    # One finding per API (its id is the API's, unique in the report), every use of it in its evidence.
    report.add([_finding(api, uses) for api, uses in found.values()])
    read = files - sum(1 for s in skipped if not s["why"].startswith("directory"))
    if not report.findings:
        report.add(Finding(id="SCAN-CLEAN", area=AREA, status=Status.OK,
                           title=f"no deprecated or removed API in {read} file(s) read",
                           message=f"Checked {len(apis)} API patterns."))
    if skipped:
        names = ", ".join(s["file"] for s in skipped[:3]) + (f" and {len(skipped) - 3} more" if len(skipped) > 3 else "")
        report.add(Finding(id="SCAN-SKIPPED", area=AREA, status=Status.WARN,
                           title=f"{len(skipped)} input(s) not scanned: {names}",
                           message="; ".join(f"{s['file']}: {s['why']}" for s in skipped[:20]),
                           remedy=f"make them readable regular files of at most {MAX_FILE_BYTES:,} bytes, or leave "
                                  "them out; --strict fails on this",
                           evidence={"skipped": skipped}))
    report.facts[AREA] = {"files": read, "skipped": len(skipped), "apis": len(apis),
                          "uses": sum(len(uses) for _, uses in found.values())}
    return report


def _unreadable(path: Path) -> str | None:
    """Why `path` is not read (not a regular file, too large), without opening it; None to read it."""
    from rcompat.inputs import file_problem, human_size

    problem = file_problem(path, "a source file")
    if problem:
        return problem
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        return f"{human_size(size)}, over the {human_size(MAX_FILE_BYTES)} a source file may have"
    return None


def _finding(api: Api, uses: list[dict]) -> Finding:
    status = Status.FAIL if api.removed_in else Status.WARN
    first = uses[0]
    where = f"{first['file']}:{first['line']}:{first['column']}"
    more = f" and {len(uses) - 1} more use(s)" if len(uses) > 1 else ""
    return Finding(
        id=api.id, area=AREA, status=status, title=f"{where}: {first['matched']} ({api.describe()}){more}",
        message=f"{first['matched']} is {api.describe()}.", remedy=f"use {api.replacement}",
        evidence={**{k: first[k] for k in ("file", "line", "column", "text")}, "uses": uses},
        source=api.source, confidence=api.confidence)


def render_text(report: Report) -> str:
    """`file:line:col: LEVEL ID message; use … [confidence]`, then a one-line summary."""
    lines = []
    from rcompat.renderers.escape import one_line
    from rcompat.renderers.text import wrap

    apis = [f for f in report.findings if f.id not in ("SCAN-CLEAN", "SCAN-SKIPPED")]
    uses = [(f, use) for f in apis for use in f.evidence.get("uses", [])]
    for f, use in uses:  # a compiler-style first line; the explanation wrapped under it
        lines.extend(wrap(one_line(f"{use['file']}:{use['line']}:{use['column']}: {f.status.value} {f.id}"), "",
                          subsequent="    "))
        lines.extend(wrap(one_line(f"{f.message} Fix: {f.remedy}. [{f.confidence}; {f.source}]"), "    "))
    facts = report.facts.get(AREA, {})
    removed = sum(1 for f, _ in uses if f.status is Status.FAIL)
    for f in report.findings:
        if f.id == "SCAN-SKIPPED":
            lines.extend(one_line(f"{s['file']}: skipped: {s['why']}") for s in f.evidence["skipped"])
    skipped = facts.get("skipped", 0)
    lines.append(f"scan: {facts.get('files', 0)} file(s), {len(uses)} use(s) of deprecated APIs"
                 f" ({removed} removed)" + (f"; {skipped} input(s) skipped, not scanned" if skipped else ""))
    return "\n".join(lines) + "\n"
