"""explain's report: one finding per matched symptom, its texts filled with the captures and what the
classes' vocabularies add, and with `check` the verdicts of the probes that confirm it on this machine.

Every symptom that matches becomes a finding of its table status (default `fail`: the text shows that
something broke), so `rcompat explain` exits 1 when it recognised a failure; a code error (a shape
mismatch, autograd misuse, a missing R object) or an error code that points at the program is a `warn`
that says so. Text that matches nothing gives one `skip` finding, "no known symptom matched", exit 0.
"""
from __future__ import annotations

from typing import Iterable

from rcompat.explain.classes import enrich
from rcompat.explain.matching import Match, Scan, find_matches
from rcompat.explain.symptoms import Symptom, fill, load_symptoms
from rcompat.model import Finding, Report, Status

AREA = "explain"
MAX_COMMANDS = 5


def explain(text: "str | Iterable[str]", symptoms: "Iterable[Symptom] | None" = None, *,
            check: bool = False) -> Report:
    """The report for `text` (a string or its pieces in order). `check` runs the confirming probes that
    apply on this machine (library and symbol look-ups, read never loaded) and folds their verdicts in."""
    symptoms = list(symptoms) if symptoms is not None else load_symptoms()
    scan = Scan()
    if isinstance(text, str):
        from rcompat.explain.stream import clean

        text = clean(text)
    matches = [m for m in find_matches(text, symptoms, scan) if enriched(m)]
    reported = {m.symptom.id for m in matches}
    matches = [m for m in matches if m.groups.get("explained_by") not in reported]  # the row says it better
    if check:
        from rcompat.explain.confirm import confirm_all

        confirm_all(matches)
    report = Report(command="explain")
    report.add(_finding_of(group) for group in _by_symptom(matches))
    if not matches:
        report.add(Finding(
            id="EXPLAIN-NO-MATCH", area=AREA, status=Status.SKIP, title="no known symptom matched",
            message="None of the known symptoms matches this text (`rcompat explain --list`).",
            remedy="Run `rcompat doctor` for a full check of this machine. If the error recurs, add its "
                   "text to rcompat/data/symptoms.toml with its source.",
            evidence={"chars": scan.chars, "lines": scan.lines}))
    report.facts[AREA] = {"symptoms_known": len(symptoms), "matched": [m.symptom.id for m in matches],
                          "input_lines": scan.lines, "checked": check}
    return report


def enriched(match: Match) -> bool:
    """Look the match's captures up in its class's vocabulary; False when a required answer is missing
    (a code name the tables do not know places nothing)."""
    match.status = enrich(match.symptom.enrich, match.groups)
    return not match.symptom.requires or bool(match.groups.get(match.symptom.requires))


def to_finding(match: Match) -> Finding:
    s = match.symptom
    if match.status is None and s.enrich:
        enriched(match)
    status = match.status or s.status
    commands = match.confirm_commands()
    where = f"line {match.first_line}" if match.first_line == match.last_line else \
        f"lines {match.first_line}-{match.last_line}"
    message = fill(s.cause, match.groups)
    if match.notes:
        message += "\n" + "\n".join(match.notes)
    if commands:
        message += "\nConfirm: " + " ; ".join(commands)
    message += f"\nMatched at {where}: {match.excerpt}"
    source = s.source + "".join(f"; {match.groups[k]}" for k in ("provider_source", "code_source")
                                if match.groups.get(k))
    return Finding(
        id=f"EXPLAIN-{s.id.upper()}", area=AREA, status=status, title=s.title, message=message,
        remedy=fill(s.remedy, match.groups),
        evidence={"symptom": s.id, "line": match.first_line, "last_line": match.last_line,
                  "excerpt": match.excerpt, "groups": dict(match.groups), "confirm": commands,
                  "class": s.generic, "checked": list(match.notes)},
        source=source, confidence=s.confidence)


def _by_symptom(matches: list[Match]) -> list[list[Match]]:
    """The matches grouped by symptom, the groups in the order their first match appears in the log."""
    groups: dict[str, list[Match]] = {}
    for m in matches:
        groups.setdefault(m.symptom.id, []).append(m)
    return list(groups.values())


def _finding_of(group: list[Match]) -> Finding:
    """One finding per symptom (ids stay unique in the report); later occurrences in its evidence."""
    finding = to_finding(group[0])
    if len(group) == 1:
        return finding
    commands = list(dict.fromkeys(c for m in group for c in m.confirm_commands()))
    finding.evidence["confirm"] = commands[:MAX_COMMANDS]
    finding.evidence["occurrences"] = [{"line": m.first_line, "groups": dict(m.groups)} for m in group]
    head, _, matched = finding.message.partition("\nMatched at ")
    head = head.partition("\nConfirm: ")[0]
    confirm = f"\nConfirm: {' ; '.join(commands[:MAX_COMMANDS])}" if commands else ""
    finding.message = (f"{head}{confirm}\nMatched at {matched}\n"
                       f"Also at line(s) {', '.join(str(m.first_line) for m in group[1:])}.")
    return finding
