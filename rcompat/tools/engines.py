"""The other engines' public functions, reached through one guarded door.

The tools combine the R rules and the CUDA tables; either engine may be absent (not built yet, or a
dependency missing). `EngineMissing` says which one, so a caller can turn it into a `skip` finding
with the reason instead of a traceback.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable

from rcompat.model import Finding


class EngineMissing(Exception):
    """An engine function the tools need cannot be imported; the message names it."""


def _function(module: str, name: str) -> Callable[..., Any]:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise EngineMissing(f"{module} is not available ({exc})") from exc
    fn = getattr(mod, name, None)
    if fn is None:
        raise EngineMissing(f"{module}.{name} is not available")
    return fn


def load_r_rules(path: "str | Path | None" = None) -> Any:
    """The R breakage rules: the packaged table, or the file `path` (fixtures, a team's own rules)."""
    load = _function("rcompat.r.rules", "load_rules")
    return load(path) if path is not None else load()


def r_rule_findings(stack: dict[str, str], rules: Any = None, area: str = "r") -> list[Finding]:
    """Findings of every R rule that `stack` ({"R": "4.5.0", "torch": "0.12.1", …}) triggers."""
    evaluate = _function("rcompat.r.rules", "evaluate")
    hits = evaluate(stack, rules) if rules is not None else evaluate(stack)
    return [_hit_to_finding(hit, area) for hit in hits]


def _hit_to_finding(hit: Any, area: str) -> Finding:
    if isinstance(hit, Finding):
        return hit
    to_finding = getattr(hit, "to_finding", None)
    if to_finding is None:
        raise EngineMissing(f"rcompat.r.rules.evaluate returned {type(hit).__name__}, not a RuleHit")
    try:
        return to_finding(area=area)
    except TypeError:  # an engine whose to_finding takes no area
        return to_finding()


def cuda_stack_findings(stack: dict[str, str], tables_dir: "str | Path | None" = None) -> list[Finding]:
    """Findings of the CUDA compatibility tables for a hypothetical stack ({"cuda": "12.4", "rtorch": …})."""
    check = _function("rcompat.cuda.matrix", "check_stack")
    return list(check(stack, tables_dir=tables_dir) if tables_dir is not None else check(stack))


def cuda_layer_findings(stack: dict[str, str], tables_dir: "str | Path | None" = None) -> list[Finding]:
    """The per-layer findings of a planned stack, without the summary (it repeats the first failing
    layer) and without the driver layer's `skip` when no driver was given (a plan has none)."""
    from rcompat.model import Status

    return [f for f in cuda_stack_findings(stack, tables_dir)
            if f.id != "CUDA-MATRIX" and not (f.id == "CUDA-MATRIX-DRIVER" and f.status is Status.SKIP
                                             and "driver" not in stack)]
