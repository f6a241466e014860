"""Reading `R CMD check`'s 00check.log, shared by tests/rpkg (R 4.2 here) and tests/tier (R 4.5)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "R-package"
NOTES_DOC = REPO / "docs" / "from-r.md"


def problems(log: str) -> dict[str, list[str]]:
    """{"ERROR": [check, …], "WARNING": […], "NOTE": […]}: the checks that ended with each verdict."""
    found: dict[str, list[str]] = {"ERROR": [], "WARNING": [], "NOTE": []}
    for match in re.finditer(r"^\* checking (.+?) \.\.\.(?:.|\n)*?(ERROR|WARNING|NOTE)$", log, re.M):
        check, verdict = match.group(1), match.group(2)
        if "\n* " not in match.group(0)[2:]:  # the verdict belongs to this check, not a later one
            found[verdict].append(check)
    return found


def explained_notes() -> set[str]:
    """The checks whose NOTE docs/from-r.md explains (its table under "R CMD check")."""
    text = NOTES_DOC.read_text()
    section = text.split("## R CMD check", 1)[-1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `checking ([^`]+)` \|", section, re.M))


def status_line(log: str) -> str:
    return next((line for line in log.splitlines() if line.startswith("Status:")), "no Status line")
