"""`rcompat explain`: match pasted error output against the known-symptom table.

The table (rcompat/data/symptoms.toml) holds the texts users report, why they happen, the rcompat
command that confirms the cause and the remedy. Named regex groups (the library, the symbol, the CUDA
version) are substituted into those texts, so the confirming command names the file from the log.

Every symptom that matches becomes a finding of its table status (default `fail`: the text shows that
something broke), so `rcompat explain` exits 1 when it recognised a failure. Text that matches no
symptom gives one `skip` finding, "no known symptom matched", and exit 0: rcompat has nothing to add.
A more specific symptom `supersedes` a generic one where both match the same lines of the log.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from rcompat.errors import DataError, UsageError
from rcompat.model import Finding, Report, Status

AREA = "explain"
SYMPTOMS_FILE = "symptoms.toml"
MAX_MATCHES_PER_SYMPTOM = 20
EXCERPT_CHARS = 300


@dataclass(frozen=True)
class Symptom:
    id: str
    title: str
    patterns: tuple[re.Pattern, ...]
    cause: str
    confirm: tuple[str, ...]
    remedy: str
    supersedes: tuple[str, ...]
    status: Status
    source: str
    confidence: str


@dataclass
class Match:
    symptom: Symptom
    groups: dict[str, str]
    first_line: int  # 1-based line numbers of the matched text in the input
    last_line: int
    excerpt: str
    pattern_rank: int = 0

    def overlaps(self, other: "Match") -> bool:
        return self.first_line <= other.last_line and other.first_line <= self.last_line

    def confirm_commands(self) -> list[str]:
        """The table's commands with captures filled in; one that needs an uncaptured group is dropped."""
        out = []
        for template in self.symptom.confirm:
            names = _placeholders(template)
            if all(self.groups.get(n) for n in names):
                out.append(template.format_map(self.groups))
        return out

    def to_finding(self) -> Finding:
        s = self.symptom
        commands = self.confirm_commands()
        where = f"line {self.first_line}" if self.first_line == self.last_line else \
            f"lines {self.first_line}-{self.last_line}"
        message = _fill(s.cause, self.groups)
        if commands:
            message += "\nConfirm: " + " ; ".join(commands)
        message += f"\nMatched at {where}: {self.excerpt}"
        return Finding(
            id=f"EXPLAIN-{s.id.upper()}", area=AREA, status=s.status, title=s.title, message=message,
            remedy=_fill(s.remedy, self.groups),
            evidence={"symptom": s.id, "line": self.first_line, "last_line": self.last_line,
                      "excerpt": self.excerpt, "groups": dict(self.groups), "confirm": commands},
            source=s.source, confidence=s.confidence)


def load_symptoms(path: "str | Path | None" = None) -> list[Symptom]:
    """The symptom table, with every regex compiled (a bad one is a DataError naming the row)."""
    from rcompat.data import load_toml

    rows = load_toml(Path(path) if path else SYMPTOMS_FILE, "symptom",
                     required=("id", "title", "patterns", "cause", "confirm", "remedy", "source", "confidence"))
    symptoms, seen = [], set()
    for row in rows:
        sid = row["id"]
        if sid in seen:
            raise DataError(f"{path or SYMPTOMS_FILE}: symptom id {sid!r} appears twice")
        seen.add(sid)
        patterns = row["patterns"] if isinstance(row["patterns"], list) else [row["patterns"]]
        try:
            compiled = tuple(re.compile(p) for p in patterns)
        except (re.error, TypeError) as exc:  # TypeError: a pattern that is not a string
            raise DataError(f"{path or SYMPTOMS_FILE}: symptom {sid!r} has a bad pattern: {exc}") from exc
        try:
            status = Status(row.get("status", "fail"))
        except ValueError as exc:
            raise DataError(f"{path or SYMPTOMS_FILE}: symptom {sid!r}: {exc}") from exc
        confirm = row["confirm"] if isinstance(row["confirm"], list) else [row["confirm"]]
        for template in (row["cause"], row["remedy"], *confirm):
            _check_template(template, f"{path or SYMPTOMS_FILE}: symptom {sid!r}")
        symptoms.append(Symptom(sid, row["title"], compiled, row["cause"], tuple(confirm), row["remedy"],
                                tuple(row.get("supersedes", ())), status, row["source"], row["confidence"]))
    known = {s.id for s in symptoms}
    for s in symptoms:
        unknown = set(s.supersedes) - known
        if unknown:
            raise DataError(f"{path or SYMPTOMS_FILE}: symptom {s.id!r} supersedes unknown {sorted(unknown)}")
    return symptoms


def find_matches(text: str, symptoms: Iterable[Symptom] | None = None) -> list[Match]:
    """Every symptom occurrence in `text`, in log order, generic ones hidden where a specific one explains
    the same lines."""
    symptoms = list(symptoms) if symptoms is not None else load_symptoms()
    line_starts = _line_starts(text)
    matches: list[Match] = []
    for symptom in symptoms:
        matches.extend(_symptom_matches(symptom, text, line_starts))
    superseding = [m for m in matches if m.symptom.supersedes]
    kept = [m for m in matches
            if not any(m.symptom.id in s.symptom.supersedes and m.overlaps(s) for s in superseding)]
    return sorted(kept, key=lambda m: (m.first_line, m.pattern_rank))


def explain(text: str, symptoms: Iterable[Symptom] | None = None) -> Report:
    symptoms = list(symptoms) if symptoms is not None else load_symptoms()
    report = Report(command="explain")
    matches = find_matches(text, symptoms)
    report.add(m.to_finding() for m in matches)
    if not matches:
        report.add(Finding(
            id="EXPLAIN-NO-MATCH", area=AREA, status=Status.SKIP, title="no known symptom matched",
            message=f"None of the {len(symptoms)} known symptoms matches this text.",
            remedy="Run `rcompat doctor` for a full check of this machine. If the error recurs, add its "
                   "text to rcompat/data/symptoms.toml with its source.",
            evidence={"chars": len(text), "lines": text.count("\n") + 1}))
    report.facts[AREA] = {"symptoms_known": len(symptoms), "matched": [m.symptom.id for m in matches],
                          "input_lines": text.count("\n") + 1}
    return report


def read_text(texts: list[str] | None, from_file: str | None, stdin=None) -> str:
    """The error text from the arguments, a file, or stdin ('-'); empty input is a usage error."""
    import sys

    parts: list[str] = []
    if from_file:
        if from_file == "-":
            parts.append((stdin or sys.stdin).read())
        else:
            from rcompat.inputs import read_text_input

            parts.append(read_text_input(from_file, "log", errors="replace"))
    for t in texts or []:
        parts.append((stdin or sys.stdin).read() if t == "-" else t)
    text = "\n".join(parts)
    if not text.strip():
        raise UsageError("no error text given: pass it as an argument, with --from-file FILE, or '-' for stdin")
    return text


def _symptom_matches(symptom: Symptom, text: str, line_starts: list[int]) -> list[Match]:
    found: list[Match] = []
    seen_groups: set[tuple] = set()
    for rank, pattern in enumerate(symptom.patterns):
        for m in pattern.finditer(text):
            first = _line_of(line_starts, m.start())
            last = _line_of(line_starts, max(m.start(), m.end() - 1))
            candidate = Match(symptom, {k: v for k, v in m.groupdict().items() if v}, first, last,
                              _excerpt(text, line_starts, first, m), rank)
            if any(candidate.overlaps(f) for f in found if f.pattern_rank < rank):
                continue  # a more precise pattern of this symptom already explains these lines
            key = tuple(sorted(candidate.groups.items()))
            if key in seen_groups:
                continue
            seen_groups.add(key)
            found.append(candidate)
            if len(found) >= MAX_MATCHES_PER_SYMPTOM:
                return found
    return found


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, ch in enumerate(text) if ch == "\n")
    return starts


def _line_of(line_starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(line_starts, offset)


def _excerpt(text: str, line_starts: list[int], line: int, m: re.Match) -> str:
    start = line_starts[line - 1]
    end = text.find("\n", m.start())
    end = len(text) if end < 0 else end
    snippet = text[start:end].strip()
    return snippet if len(snippet) <= EXCERPT_CHARS else snippet[:EXCERPT_CHARS] + "…"


def _check_template(template: Any, where: str) -> None:
    """Only {name} placeholders: a stray brace or {0}/{a.b} would fail at match time, as an internal error."""
    try:
        fields = list(string.Formatter().parse(template)) if isinstance(template, str) else None
    except ValueError as exc:
        raise DataError(f"{where}: bad placeholder in {template!r}: {exc}") from None
    if fields is None:
        raise DataError(f"{where}: expected text, got {template!r}")
    for _, name, _, _ in fields:
        if name is not None and not name.isidentifier():
            raise DataError(f"{where}: placeholder {{{name}}} in {template!r} is not a capture group name")


def _placeholders(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


def _fill(template: str, groups: dict[str, Any]) -> str:
    """Substitute captures; an uncaptured one becomes empty (the texts are written to read well so)."""
    text = template.format_map(_Blank(groups))
    return re.sub(r" {2,}", " ", text).replace(" .", ".").replace(" ,", ",")
