"""What the tools need from the R rules and the CUDA tables, in the shape the tools use.

Lockfile checks and the CI matrix judge planned stacks (no machine behind them), so they call the
engines' table evaluations directly; these helpers only adapt the results.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rcompat.model import Finding, Status

CONFIDENCE_ORDER = ("unverified", "low", "medium", "high")
# Below this a claim does not remove a cell of `ci matrix` (the cell stays, with a note): a removed cell
# is silent, so a weak claim must not do it by default. `lock check` fails on every claim by default
# (a failure is shown, with its confidence); its --min-confidence reports weaker claims as warnings.
DEFAULT_MIN_CONFIDENCE = "medium"


def confident(finding: Finding, minimum: str) -> bool:
    """Is `finding`'s claim at least `minimum` confident? A row without a confidence counts as unverified."""
    conf = finding.confidence if finding.confidence in CONFIDENCE_ORDER else "unverified"
    return CONFIDENCE_ORDER.index(conf) >= CONFIDENCE_ORDER.index(minimum)


def below_confidence(findings: list[Finding], minimum: str) -> list[Finding]:
    """`findings` with each `fail` less confident than `minimum` turned into a `warn` that says why."""
    for f in findings:
        if f.status is Status.FAIL and not confident(f, minimum):
            f.status = Status.WARN
            f.message = (f"{f.message} (reported, not failed: a {f.confidence or 'unverified'}-confidence "
                         f"claim, below --min-confidence {minimum})").strip()
    return findings


def load_r_rules(path: "str | Path | None" = None) -> Any:
    """The R breakage rules: the packaged table, or the file `path` (fixtures, a team's own rules)."""
    from rcompat.r.rules import load_rules

    return load_rules(path)


def r_rule_findings(stack: dict[str, str], rules: Any = None, area: str = "r") -> list[Finding]:
    """Findings of every R rule that `stack` ({"R": "4.5.0", "torch": "0.12.1", …}) triggers."""
    from rcompat.r.rules import evaluate

    return [hit.to_finding(area=area) for hit in evaluate(stack, rules)]


def cuda_layer_findings(stack: dict[str, str], tables_dir: Any = None) -> list[Finding]:
    """The per-layer findings of a planned stack, without the summary (it repeats the first failing
    layer) and without the driver layer's `skip` when no driver was given (a plan has none).
    `tables_dir` as check_stack takes it: a directory, loaded Tables, or None for the packaged ones."""
    from rcompat.cuda.matrix import check_stack

    return [f for f in check_stack(stack, tables_dir=tables_dir)
            if f.id != "CUDA-MATRIX" and not (f.id == "CUDA-MATRIX-DRIVER" and f.status is Status.SKIP
                                             and "driver" not in stack)]
