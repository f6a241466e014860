"""The one result model every engine reports through.

A probe gathers facts; a check turns facts into `Finding`s; a `Report` holds the findings of a run plus
the raw facts they were derived from. Renderers (rcompat.renderers) and the pandas conversion read only
this module's types, so an engine never needs to know how its output is shown; and this module knows no
renderer (`rcompat.render(report, fmt)` renders), so the dependency runs one way: render -> model.
"""
from __future__ import annotations

import datetime as _dt
import enum
import math
import re
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping

SCHEMA_VERSION = 1


class Status(str, enum.Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"

    def __str__(self) -> str:  # "fail", not "Status.FAIL", in messages and tables
        return self.value


# Worst first: used to order findings and to compute a summary status.
SEVERITY = {Status.ERROR: 4, Status.FAIL: 3, Status.WARN: 2, Status.SKIP: 1, Status.OK: 0}


@dataclass
class Finding:
    """One statement about the machine: what was checked, how it came out, and what to do."""

    id: str
    area: str
    status: Status
    title: str
    message: str = ""
    remedy: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    confidence: str = ""
    # Seconds the check that made this finding took, shared equally among the findings it made (so a
    # suite's times add up to the run's); None when the producer was not timed.
    duration_s: float | None = None

    def __post_init__(self) -> None:
        self.status = Status(self.status)
        if not self.id or not self.area:
            raise ValueError("a Finding needs an id and an area")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": jsonable(self.id),
            "area": jsonable(self.area),
            "status": self.status.value,
            "title": jsonable(self.title),
            "message": jsonable(self.message),
            "remedy": jsonable(self.remedy),
            "evidence": jsonable(self.evidence),
            "source": jsonable(self.source),
            "confidence": jsonable(self.confidence),
            "duration_s": jsonable(self.duration_s),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Finding":
        return cls(**{k: data[k] for k in FINDING_FIELDS if k in data})


def join_sources(sources: Iterable[str]) -> str:
    """Sources as one "; "-separated text, each said once: a source already part of another kept
    one ("mlverse/torch 1137" beside "mlverse/torch 1137 (quote)") is left out."""
    parts = [p.strip() for s in sources if s for p in str(s).split("; ") if p.strip()]
    kept: list[str] = []
    for part in sorted(dict.fromkeys(parts), key=len, reverse=True):
        if not any(part in other for other in kept):
            kept.append(part)
    return "; ".join(p for p in dict.fromkeys(parts) if p in kept)


def share_duration(findings: list[Finding], seconds: float) -> None:
    """Give the findings one producer made in `seconds` their share of that time."""
    for f in findings:
        f.duration_s = round(seconds / len(findings), 6)


# The columns of a finding, in order: JSON keys, from_dict's accepted keys, to_frame's columns.
FINDING_FIELDS = tuple(f.name for f in fields(Finding))


# Lone surrogates: the bytes os.fsdecode could not decode (surrogateescape), U+DC80..U+DCFF.
_UNDECODABLE = re.compile("[\udc80-\udcff]")
_OTHER_SURROGATE = re.compile("[\ud800-\udfff]")
NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def escape_undecodable(text: str) -> str:
    """A name's undecodable bytes as `\\xNN` (the byte), so the text encodes as UTF-8 everywhere."""
    if not _OTHER_SURROGATE.search(text):
        return text
    text = _UNDECODABLE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    return _OTHER_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def jsonable(value: Any) -> Any:
    """Evidence may hold paths, enums, tuples, sets: make it JSON-safe without losing meaning.

    Strict JSON too: a non-finite float becomes the string "NaN", "Infinity" or "-Infinity" (JSON has
    no such numbers; Python would print bare NaN), undecodable bytes in a string `\\xNN`."""
    if isinstance(value, str):
        return escape_undecodable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return NON_FINITE.get(value, "NaN")
    if isinstance(value, Mapping):
        return {jsonable(str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(v) for v in value)
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # a numpy scalar: its Python value
        return jsonable(value.item())
    return escape_undecodable(str(value))


@dataclass
class Report:
    """Findings of one run plus the facts behind them."""

    findings: list[Finding] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    command: str = "doctor"
    generated_at: str = field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))

    def add(self, findings: Iterable[Finding] | Finding) -> None:
        if isinstance(findings, Finding):
            findings = [findings]
        self.findings.extend(findings)

    def by_status(self, status: Status | str) -> list[Finding]:
        status = Status(status)
        return [f for f in self.findings if f.status is status]

    def counts(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Status}
        for f in self.findings:
            counts[f.status.value] += 1
        return counts

    def exit_code(self, strict: bool = False) -> int:
        """0 all ok/skip; 1 a failing finding (warn too under --strict).

        An `error` finding is a check that could not run: it is reported, and it fails the run like a
        `fail` does, because the user cannot trust an answer that was not computed. rcompat's own errors
        (bad arguments, unreadable input) never get this far: the CLI exits 2 for them.
        """
        failing = {Status.FAIL, Status.ERROR} | ({Status.WARN} if strict else set())
        return 1 if any(f.status in failing for f in self.findings) else 0

    def areas(self) -> list[str]:
        seen: dict[str, None] = {}
        for f in self.findings:
            seen.setdefault(f.area, None)
        return list(seen)

    def to_dict(self) -> dict[str, Any]:
        from rcompat import __version__

        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "rcompat", "version": __version__},
            "command": self.command,
            "generated_at": self.generated_at,
            "summary": {"counts": self.counts(), "exit_code": self.exit_code(),
                        "exit_code_strict": self.exit_code(strict=True)},
            "findings": [f.to_dict() for f in self.findings],
            "facts": jsonable(self.facts),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Report":
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"unsupported report schema_version {data.get('schema_version')!r}")
        return cls(findings=[Finding.from_dict(f) for f in data.get("findings", [])],
                   facts=dict(data.get("facts", {})), command=data.get("command", "doctor"),
                   generated_at=data.get("generated_at", ""))

    def to_json(self, indent: int | None = 2) -> str:
        import json

        return json.dumps(self.to_dict(), indent=indent, sort_keys=False, allow_nan=False)

    def to_frame(self):
        """One row per finding; evidence stays a dict column. pandas is imported only here."""
        import pandas as pd

        return pd.DataFrame([f.to_dict() for f in self.findings], columns=list(FINDING_FIELDS))
