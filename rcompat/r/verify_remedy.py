"""Why a verification child failed, and what to do: the same knowledge as `rcompat explain`.

The child's error text and its last output lines are matched against rcompat/data/symptoms.toml; a
symptom found there gives the cause and the remedy (Lantern not loaded, a missing libcudart, two
libtorch copies...). A child that ended without telling text is placed by how it ended (the table's
`ends` column): SIGSEGV, SIGABRT, a hang (no CPU used), a timeout (still working) or CPU starvation.
The child's JSON protocol lines ({"step": ...}) are rcompat's plumbing and never shown.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from rcompat.isolate import ChildResult

# Generic symptoms: reported only when nothing more specific explains the failure.
GENERIC = ("r-package-load-failed", "undefined-symbol", "shared-library-not-found")


@dataclass(frozen=True)
class Diagnosis:
    kind: str          # error, SIGSEGV, SIGABRT, signal, hang, timeout, starved, exit
    symptom: str | None
    cause: str | None
    remedy: str | None
    source: str | None


def end_kind(result: ChildResult, has_error: bool) -> str:
    if result.timed_out:
        return {"starved": "starved", "busy": "timeout"}.get(result.timeout_reason or "", "hang")
    if result.signal_name:
        return result.signal_name if result.signal_name in ("SIGSEGV", "SIGBUS", "SIGABRT") else "signal"
    return "error" if has_error else "exit"


def user_output(text: str) -> str:
    """`text` without the child's protocol lines."""
    return "\n".join(line for line in text.splitlines() if not _is_protocol(line))


def diagnose(result: ChildResult, error_text: str = "") -> Diagnosis:
    from rcompat.explain.matching import find_matches
    from rcompat.explain.report import enriched, to_finding
    from rcompat.explain.symptoms import fill, load_symptoms

    kind = end_kind(result, bool(error_text))
    symptoms = load_symptoms()
    text = "\n".join(t for t in (error_text, user_output(result.stdout + "\n" + result.stderr)) if t)
    matches = [m for m in find_matches(text, symptoms) if enriched(m)]  # a class's unknown code places nothing
    specific = [m for m in matches if m.symptom.id not in GENERIC and not m.symptom.generic] or matches
    if specific:
        finding = to_finding(specific[0])
        return Diagnosis(kind, specific[0].symptom.id, finding.message.split("\nConfirm: ")[0].split("\nMatched at")[0],
                         finding.remedy, finding.source)
    row = next((s for s in symptoms if kind in s.ends), None)
    if row is None:
        return Diagnosis(kind, None, None, None, None)
    return Diagnosis(kind, row.id, fill(row.cause, {}), fill(row.remedy, {}), row.source)


def _is_protocol(line: str) -> bool:
    stripped = line.strip()
    if not stripped.startswith("{"):
        return False
    try:
        record = json.loads(stripped)
    except ValueError:
        return False
    return isinstance(record, dict)
