"""Reading `R CMD check`'s 00check.log, shared by tests/rpkg (R 4.2 here) and tests/tier (R 4.5)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "R-package"
NOTES_DOC = REPO / "docs" / "from-r.md"


def problems(log: str) -> dict[str, list[str]]:
    """{"ERROR": [check, …], "WARNING": […], "NOTE": […]}: the checks that ended with each verdict, at
    the end of the `* checking … ...` line or on a line of its own after the check's output."""
    found: dict[str, list[str]] = {"ERROR": [], "WARNING": [], "NOTE": []}
    check = None
    for line in log.splitlines():
        started = re.match(r"\* checking (.+?) \.\.\.", line)
        if started:
            check = started.group(1)
        verdict = re.search(r"(?:^|\.\.\.| )(ERROR|WARNING|NOTE)$", line)
        if check and verdict and (started or line.strip() == verdict.group(1)):
            found[verdict.group(1)].append(check)
    return found


def explained_notes() -> set[str]:
    """The checks whose NOTE docs/from-r.md explains (its table under "R CMD check")."""
    text = NOTES_DOC.read_text()
    section = text.split("## R CMD check", 1)[-1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `checking ([^`]+)` \|", section, re.M))


def status_line(log: str) -> str:
    return next((line for line in log.splitlines() if line.startswith("Status:")), "no Status line")
