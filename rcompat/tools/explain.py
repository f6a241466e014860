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

from rcompat.data.patterns import required_literal
from rcompat.errors import DataError, UsageError
from rcompat.model import Finding, Report, Status

AREA = "explain"
SYMPTOMS_FILE = "symptoms.toml"
MAX_MATCHES_PER_SYMPTOM = 20
EXCERPT_CHARS = 300
MAX_COMMANDS = 5
WINDOW = 4200  # characters a match may reach either side of its required literal
MAX_WINDOWS = 10_000


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
    literals: tuple["str | None", ...] = ()  # per pattern: text every match contains (None: unknown)
    ends: tuple[str, ...] = ()  # how a verification child ended, for which this remedy applies


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
        message = fill(s.cause, self.groups)
        if commands:
            message += "\nConfirm: " + " ; ".join(commands)
        message += f"\nMatched at {where}: {self.excerpt}"
        return Finding(
            id=f"EXPLAIN-{s.id.upper()}", area=AREA, status=s.status, title=s.title, message=message,
            remedy=fill(s.remedy, self.groups),
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
                                tuple(row.get("supersedes", ())), status, row["source"], row["confidence"],
                                tuple(required_literal(p) for p in compiled), tuple(row.get("ends", ()))))
    known = {s.id for s in symptoms}
    for s in symptoms:
        unknown = set(s.supersedes) - known
        if unknown:
            raise DataError(f"{path or SYMPTOMS_FILE}: symptom {s.id!r} supersedes unknown {sorted(unknown)}")
    return symptoms


def symptom_list(symptoms: Iterable[Symptom], columns: int = 80) -> str:
    """Each symptom's id and title; a long title wraps under itself (the reports' wrap: a word is never
    cut), so the list fits a terminal."""
    from rcompat.renderers.text import wrap

    symptoms = list(symptoms)
    width = max((len(s.id) for s in symptoms), default=0)
    hang = " " * (width + 2)
    return "".join(line + "\n" for s in symptoms for line in wrap(s.title, f"{s.id:<{width}}  ", columns, hang))


def find_matches(text: str, symptoms: Iterable[Symptom] | None = None) -> list[Match]:
    """Every symptom occurrence in `text`, in log order, generic ones hidden where a specific one explains
    the same lines."""
    symptoms = list(symptoms) if symptoms is not None else load_symptoms()
    line_starts = _line_starts(text)
    present = _LiteralIndex(text)
    matches: list[Match] = []
    for symptom in symptoms:
        matches.extend(_symptom_matches(symptom, text, line_starts, present))
    _demangle_symbols(matches)
    superseding = [m for m in matches if m.symptom.supersedes]
    kept = [m for m in matches
            if not any(m.symptom.id in s.symptom.supersedes and m.overlaps(s) for s in superseding)]
    return sorted(kept, key=lambda m: (m.first_line, m.pattern_rank))


def explain(text: str, symptoms: Iterable[Symptom] | None = None) -> Report:
    symptoms = list(symptoms) if symptoms is not None else load_symptoms()
    report = Report(command="explain")
    matches = find_matches(text, symptoms)
    report.add(_finding_of(group) for group in _by_symptom(matches))
    if not matches:
        report.add(Finding(
            id="EXPLAIN-NO-MATCH", area=AREA, status=Status.SKIP, title="no known symptom matched",
            message="None of the known symptoms matches this text (`rcompat explain --list`).",
            remedy="Run `rcompat doctor` for a full check of this machine. If the error recurs, add its "
                   "text to rcompat/data/symptoms.toml with its source.",
            evidence={"chars": len(text), "lines": text.count("\n") + 1}))
    report.facts[AREA] = {"symptoms_known": len(symptoms), "matched": [m.symptom.id for m in matches],
                          "input_lines": text.count("\n") + 1}
    return report


def _by_symptom(matches: list[Match]) -> list[list[Match]]:
    """The matches grouped by symptom, the groups in the order their first match appears in the log."""
    groups: dict[str, list[Match]] = {}
    for m in matches:
        groups.setdefault(m.symptom.id, []).append(m)
    return list(groups.values())


def _finding_of(group: list[Match]) -> Finding:
    """One finding per symptom (ids stay unique in the report); later occurrences in its evidence."""
    finding = group[0].to_finding()
    if len(group) == 1:
        return finding
    commands = list(dict.fromkeys(c for m in group for c in m.confirm_commands()))
    finding.evidence["confirm"] = commands[:MAX_COMMANDS]
    finding.evidence["occurrences"] = [{"line": m.first_line, "groups": dict(m.groups)} for m in group]
    first, _, rest = finding.message.partition("\nConfirm: ")
    confirm = f"\nConfirm: {' ; '.join(commands[:MAX_COMMANDS])}" if commands else ""
    matched = rest.partition("\nMatched at ")[2] if rest else finding.message.partition("\nMatched at ")[2]
    if not rest:
        first = finding.message.partition("\nMatched at ")[0]
    finding.message = (f"{first}{confirm}\nMatched at {matched}\n"
                       f"Also at line(s) {', '.join(str(m.first_line) for m in group[1:])}.")
    return finding


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


class _LiteralIndex:
    """Where a pattern can match: windows around each occurrence of the literal every match contains
    (found at C speed), so a 10 MB log is searched in full only by patterns without such a literal.
    A match reaches at most WINDOW characters either side of its literal (the tables bound their runs
    to 4096); the lower-cased copy for (?i) patterns is made once."""

    def __init__(self, text: str):
        self.text, self._lower = text, None
        self._windows: dict[tuple[str, bool], list[tuple[int, int]]] = {}

    def windows(self, literal: "str | None", ignore_case: bool) -> list[tuple[int, int]]:
        if literal is None:
            return [(0, len(self.text))]
        key = (literal, ignore_case)
        if key not in self._windows:
            self._windows[key] = self._find(literal, ignore_case)
        return self._windows[key]

    def _find(self, literal: str, ignore_case: bool) -> list[tuple[int, int]]:
        if ignore_case and self._lower is None:
            self._lower = self.text.lower()
        hay = self._lower if ignore_case else self.text
        spans: list[tuple[int, int]] = []
        at = hay.find(literal)
        while at >= 0:
            start, end = max(0, at - WINDOW), min(len(hay), at + len(literal) + WINDOW)
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
            if len(spans) > MAX_WINDOWS:
                return [(0, len(hay))]  # dense: one linear scan of everything is cheaper
            at = hay.find(literal, end - len(literal) + 1 if end < len(hay) else len(hay))
        return spans


def _symptom_matches(symptom: Symptom, text: str, line_starts: list[int],
                     present: "_LiteralIndex | None" = None) -> list[Match]:
    found: list[Match] = []
    seen_groups: set[tuple] = set()
    literals = symptom.literals or (None,) * len(symptom.patterns)
    for rank, (pattern, literal) in enumerate(zip(symptom.patterns, literals)):
        spans = present.windows(literal, bool(pattern.flags & re.IGNORECASE)) if present else [(0, len(text))]
        for m in (m for start, end in spans for m in pattern.finditer(text, start, end)):
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
    starts, at = [0], text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def _demangle_symbols(matches: list[Match]) -> None:
    """A captured C++ `symbol` also as `symbol_demangled`, for the texts (one demangler call for all)."""
    mangled = sorted({m.groups["symbol"] for m in matches if m.groups.get("symbol", "").startswith("_Z")})
    if not mangled:
        return
    from rcompat.elf.read.demangle import demangle_all

    readable = dict(zip(mangled, demangle_all(mangled)))
    for m in matches:
        symbol = m.groups.get("symbol")
        if symbol in readable and readable[symbol] != symbol:
            m.groups["symbol_demangled"] = readable[symbol]
        if symbol:
            m.groups["symbol_readable"] = m.groups.get("symbol_demangled", symbol)


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


def fill(template: str, groups: dict[str, Any]) -> str:
    """Substitute captures; an uncaptured one becomes empty (the texts are written to read well so)."""
    text = template.format_map(_Blank(groups))
    text = re.sub(r" {2,}", " ", text)
    return re.sub(r" ([.,])(?=\s|$)", r"\1", text)
