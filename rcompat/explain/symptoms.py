"""The symptom rows explain matches: rcompat/data/symptoms.toml (texts users report, each with its cause)
and rcompat/data/explain_classes.toml (structural classes: a text placed by its form, not its wording).

A class row (`generic = true`) is reported only where no specific row explains the same lines: a
specific row still wins over its class. A row with `enrich` has its captures looked up in a vocabulary
table (rcompat/explain/vocabulary.py) before its texts are filled: `soname` (who provides a library),
`symbol` (whose symbol, which side is too old), `error-code` (what a CUDA/cuBLAS/NCCL/... code means).
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from rcompat.data.patterns import required_literal
from rcompat.errors import DataError
from rcompat.model import Status

SYMPTOMS_FILE = "symptoms.toml"
CLASSES_FILE = "explain_classes.toml"
ENRICHERS = ("soname", "symbol", "error-code")


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
    generic: bool = False  # a structural class: hidden where a specific row explains the same lines
    enrich: "str | None" = None  # the vocabulary its captures are looked up in
    requires: "str | None" = None  # a group the enrichment must produce, else the match is dropped


def load_symptoms(path: "str | Path | None" = None) -> list[Symptom]:
    """rcompat's symptom rows and classes, or only the rows of `path`; every regex compiled (a bad one
    is a DataError naming the row)."""
    if path is not None:
        return _checked_rows(_load_rows(Path(path)), str(path))
    return _checked_rows(_load_rows(SYMPTOMS_FILE) + _load_rows(CLASSES_FILE), SYMPTOMS_FILE)


def _load_rows(path: "str | Path") -> list[tuple[dict, str]]:
    from rcompat.data import load_toml

    rows = load_toml(path, "symptom",
                     required=("id", "title", "patterns", "cause", "confirm", "remedy", "source", "confidence"))
    return [(row, str(path)) for row in rows]


def _checked_rows(rows: list[tuple[dict, str]], name: str) -> list[Symptom]:
    symptoms, seen = [], set()
    for row, where in rows:
        sid = row["id"]
        if sid in seen:
            raise DataError(f"{where}: symptom id {sid!r} appears twice")
        seen.add(sid)
        symptoms.append(_symptom(row, f"{where}: symptom {sid!r}"))
    known = {s.id for s in symptoms}
    for s in symptoms:
        unknown = set(s.supersedes) - known
        if unknown:
            raise DataError(f"{name}: symptom {s.id!r} supersedes unknown {sorted(unknown)}")
    return symptoms


def _symptom(row: dict, where: str) -> Symptom:
    patterns = row["patterns"] if isinstance(row["patterns"], list) else [row["patterns"]]
    try:
        compiled = tuple(re.compile(p) for p in patterns)
    except (re.error, TypeError) as exc:  # TypeError: a pattern that is not a string
        raise DataError(f"{where} has a bad pattern: {exc}") from exc
    try:
        status = Status(row.get("status", "fail"))
    except ValueError as exc:
        raise DataError(f"{where}: {exc}") from exc
    enrich = row.get("enrich")
    if enrich is not None and enrich not in ENRICHERS:
        raise DataError(f"{where}: enrich {enrich!r} is not one of {', '.join(ENRICHERS)}")
    confirm = row["confirm"] if isinstance(row["confirm"], list) else [row["confirm"]]
    for template in (row["cause"], row["remedy"], *confirm):
        _check_template(template, where)
    return Symptom(row["id"], row["title"], compiled, row["cause"], tuple(confirm), row["remedy"],
                   tuple(row.get("supersedes", ())), status, row["source"], row["confidence"],
                   tuple(required_literal(p) for p in compiled), tuple(row.get("ends", ())),
                   bool(row.get("generic", False)), enrich, row.get("requires"))


def symptom_list(symptoms: Iterable[Symptom], columns: int = 80) -> str:
    """Each symptom's id and title; a long title wraps under itself (the reports' wrap: a word is never
    cut), so the list fits a terminal."""
    from rcompat.renderers.text import wrap

    symptoms = list(symptoms)
    width = max((len(s.id) for s in symptoms), default=0)
    hang = " " * (width + 2)
    return "".join(line + "\n" for s in symptoms for line in wrap(s.title, f"{s.id:<{width}}  ", columns, hang))


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


def placeholders(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


def fill(template: str, groups: dict[str, Any]) -> str:
    """Substitute captures; an uncaptured one becomes empty (the texts are written to read well so)."""
    text = template.format_map(_Blank(groups))
    text = re.sub(r" {2,}", " ", text)
    return re.sub(r" ([.,])(?=\s|$)", r"\1", text)
