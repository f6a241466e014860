"""The samples of a soak run as columns, and `--series FILE` (JSON or CSV, by the file's suffix)."""
from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any

from rcompat.errors import UsageError

if TYPE_CHECKING:
    from rcompat.soak.runner import SoakResult

FORMATS = (".json", ".csv")


def columns(result: "SoakResult") -> dict[str, list[Any]]:
    """{"iteration": [...], "<metric>_after": [...], "<metric>_before": [...], "collected": [...]}: one
    entry per measured iteration; null where an iteration was not sampled that way (a long run samples
    `before` and py_blocks on every k-th iteration only)."""
    samples = result.samples
    out: dict[str, list[Any]] = {"iteration": [s["sample"] for s in samples]}
    for when in ("after", "before"):
        for metric in result.metrics():
            values = [s.get(when, {}).get(metric) for s in samples]
            if any(v is not None for v in values):
                out[f"{metric}_{when}"] = values
    if samples and all("collected" in s for s in samples):
        out["collected"] = [s["collected"] for s in samples]
    return out


def check_target(path: str) -> None:
    """Refuse a --series file of another kind before the run, not after it."""
    if not path.lower().endswith(FORMATS):
        raise UsageError(f"--series {path}: name a .json or .csv file")
    from rcompat.atomic import check_writable_target

    check_writable_target(path)


def render(result: "SoakResult", path: str) -> str:
    cols = columns(result)
    if path.lower().endswith(".json"):
        return json.dumps(cols, indent=1) + "\n"
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(list(cols))
    writer.writerows(zip(*cols.values()))
    return buffer.getvalue()


def write(result: "SoakResult", path: str) -> None:
    from rcompat.atomic import write_text_atomic

    write_text_atomic(path, render(result, path))
