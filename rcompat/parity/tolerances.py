"""Which tolerance applies to an output, and which environment differences may explain a drift.

Tolerances live in rcompat/data/parity_tolerances.toml (precision × pair of devices, each row with its
source); this module only picks the row. The environment facts come from the two manifests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from rcompat.data import cached_toml

TABLE = "parity_tolerances.toml"
# Manifest fields that change numerics, most likely cause first, with the words a message uses.
ENVIRONMENT_FIELDS = (
    ("device", "device"), ("side", "side (R torch vs PyTorch)"), ("torch_version", "torch version"),
    ("torch_cuda", "torch's CUDA build"), ("cudnn_version", "cuDNN version"),
    ("tf32_in_effect", "TF32 in effect for float32"), ("tf32", "TF32 setting"),
    ("blas", "BLAS"), ("threads", "thread count"), ("device_name", "device model"),
    ("numpy_version", "numpy version"), ("r_version", "R version"), ("python_version", "Python version"),
    ("interpreter", "interpreter"),
)


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    id: str
    source: str
    confidence: str = ""


def precision_class(precision: str) -> str:
    """float64/float32/tfloat32/float16/bfloat16 as they are; any integer or bool dtype is 'integer'."""
    if precision.startswith(("int", "uint")) or precision == "bool":
        return "integer"
    return precision


def device_pair(device_a: Any, device_b: Any) -> str:
    return "-".join(sorted((str(device_a or "cpu"), str(device_b or "cpu"))))


def load_rows() -> tuple[dict[str, Any], ...]:
    return cached_toml(TABLE, "tolerance", ("id", "source", "precision", "devices", "rtol", "atol"))


def tolerance_for(precision: str, devices: str, rtol: float | None = None,
                  atol: float | None = None) -> Tolerance:
    """The table's row for (precision, devices) — the exact device pair before "any" — with
    --rtol/--atol overriding whichever of the two was given."""
    klass = precision_class(precision)
    rows = [r for r in load_rows() if r["precision"] == klass]
    row = next((r for r in rows if r["devices"] == devices), None) or \
        next((r for r in rows if r["devices"] == "any"), None)
    if row is None:  # an output of a precision the table does not know: the strictest float row
        row = next(r for r in load_rows() if r["precision"] == "float64")
    chosen = Tolerance(float(row["rtol"]), float(row["atol"]), row["id"], row["source"], row.get("confidence", ""))
    if rtol is None and atol is None:
        return chosen
    given = " and ".join(f"--{n} {v:g}" for n, v in (("rtol", rtol), ("atol", atol)) if v is not None)
    return Tolerance(chosen.rtol if rtol is None else rtol, chosen.atol if atol is None else atol,
                     f"{chosen.id}+override", f"{given} on the command line (else: {chosen.source})", "")


def environment_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The numerics-relevant manifest fields whose values differ, most likely cause first. A field only
    one side records (R's version in an R record, numpy's in a Python one) is no difference."""
    return [{"field": key, "what": words, "a": a.get(key), "b": b.get(key)}
            for key, words in ENVIRONMENT_FIELDS if key in a and key in b
            if a.get(key) != b.get(key)]


def describe_diff(diff: list[dict[str, Any]], limit: int = 5) -> str:
    """`thread count (1 vs 2); TF32 setting (…)`, or '' when the environments agree."""
    parts = [f"{d['what']} ({_short(d['a'])} vs {_short(d['b'])})" for d in diff[:limit]]
    if len(diff) > limit:
        parts.append(f"{len(diff) - limit} more")
    return "; ".join(parts)


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_short(v)}" for k, v in value.items())
    text = "none" if value is None else str(value)
    return text if len(text) <= 60 else text[:57] + "…"
