"""Verdicts on memory series, from bytes counted per iteration against the noise of the same series.

Rules and thresholds are rcompat/data/soak_rules.toml (each with its source); this module only
evaluates them. A series is one metric after the forced collection over the measured iterations:

- **leak**: the tail (second half) grows significantly (t statistic of its least-squares slope >=
  min_t, and at least min_units of the metric's granularity) and steadily (each half of the tail
  grows, and the tail at >= settle_ratio of the whole run's rate): CPython's -R rule that every
  delta after the warm-ups grows, with a noise margin for bytes.
- **settling**: the tail grows significantly but ever more slowly, or in one step: not yet decided.
- **plateau**: grew in the first half, not in the tail: a cache that filled.
- **flat**: no significant growth.

Separately, memory that the forced collection returns every iteration (median of before - after,
well above its own spread) is **lazy GC**: held until a collection, not leaked.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import median
from typing import Any, Sequence

from rcompat.data import cached_toml

TABLE = "soak_rules.toml"
MIN_MEASURED = 12  # below this the halves and quarters hold too few points for a slope
LEAK, SETTLING, PLATEAU, FLAT, TOO_SHORT = "leak", "settling", "plateau", "flat", "too short"


def thresholds() -> dict[str, float]:
    return {row["id"]: float(row["value"]) for row in cached_toml(TABLE, "threshold", ("id", "value", "source"))}


def metric_rows() -> dict[str, dict[str, Any]]:
    rows = cached_toml(TABLE, "metric", ("id", "granularity", "min_units", "unit", "source"))
    return {row["id"]: row for row in rows}


def combination_rows() -> tuple[dict[str, Any], ...]:
    return cached_toml(TABLE, "combination", ("id", "verdict", "status", "source"))


@dataclass
class SeriesVerdict:
    metric: str
    verdict: str
    unit: str
    measured: int
    slope: float            # per iteration, whole measured run
    tail_slope: float       # per iteration, second half
    tail_t: float           # t statistic of tail_slope
    tail_growth: float      # tail_slope x (tail length - 1)
    head_growth: float
    noise: float            # residual standard deviation about the tail's line
    first: float
    last: float
    returned: float | None = None  # median memory the forced collection returned per iteration
    lazy: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {k: (_round(v) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def judge(metric: str, after: Sequence[float], returned: Sequence[float] | None = None) -> SeriesVerdict:
    """The verdict on one metric's series after the collection; `returned`: what the collection freed
    (before - after) on the iterations sampled both ways, for lazy GC."""
    row = metric_rows()[metric]
    limits = thresholds()
    bar = float(row["granularity"]) * float(row["min_units"])
    n = len(after)
    values = [float(v) for v in after]
    if n < MIN_MEASURED:
        return SeriesVerdict(metric, TOO_SHORT, row["unit"], n, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                             values[0] if values else 0.0, values[-1] if values else 0.0)
    half = n // 2
    head, tail = values[: half + 1], values[half:]
    slope, _, _ = fit(values)
    tail_slope, tail_se, noise = fit(tail)
    head_slope, head_se, _ = fit(head)
    tail_t = _t(tail_slope, tail_se)
    tail_growth = tail_slope * (len(tail) - 1)
    head_growth = head_slope * (len(head) - 1)
    significant_tail = tail_t >= limits["min_t"] and tail_growth >= bar
    if significant_tail:
        quarter = len(tail) // 2
        q3, _, _ = fit(tail[: quarter + 1])
        q4, _, _ = fit(tail[quarter:])
        deltas = [b - a for a, b in zip(tail, tail[1:])]
        positive = sum(d > 0 for d in deltas) / len(deltas)
        ratio = limits["settle_ratio"]
        steady = (min(q3, q4) >= ratio * tail_slope and tail_slope >= ratio * slope
                  and (positive >= limits["min_fraction_positive"] or min(q3, q4) >= 0.5 * tail_slope))
        verdict = LEAK if steady else SETTLING
    elif _t(head_slope, head_se) >= limits["min_t"] and head_growth >= bar:
        verdict = PLATEAU
    else:
        verdict = FLAT
    result = SeriesVerdict(metric, verdict, row["unit"], n, slope, tail_slope, tail_t, tail_growth, head_growth,
                           noise, values[0], values[-1])
    if returned:
        typical = median(returned)
        spread = 1.4826 * median(abs(r - typical) for r in returned)
        result.returned = typical
        result.lazy = typical >= limits["lazy_gc_min_units"] * float(row["granularity"]) and \
            typical >= limits["min_t"] * spread
    return result


def fit(values: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares line through (i, values[i]): (slope, its standard error, residual deviation)."""
    n = len(values)
    if n < 3:
        return (values[-1] - values[0]) / max(n - 1, 1) if n else 0.0, math.inf, 0.0
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    sxx = sum((i - mean_x) ** 2 for i in range(n))
    slope = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values)) / sxx
    intercept = mean_y - slope * mean_x
    rss = sum((v - (intercept + slope * i)) ** 2 for i, v in enumerate(values))
    deviation = math.sqrt(rss / (n - 2))
    return slope, deviation / math.sqrt(sxx), deviation


def _t(slope: float, se: float) -> float:
    if se == 0:
        return math.inf if slope > 0 else 0.0
    return slope / se


def combine_cuda(allocated: SeriesVerdict, reserved: SeriesVerdict | None,
                 driver: SeriesVerdict | None) -> dict[str, Any] | None:
    """The first combination row (PyTorch's CudaMemoryLeakCheck rule) the three verdicts match, or
    None when no CUDA series grows steadily."""
    state = {"allocated": _state(allocated), "reserved": _state(reserved), "driver": _state(driver)}
    for row in combination_rows():
        if all(row.get(key, "any") in ("any", state[key]) for key in state):
            return row
    return None


def _state(v: SeriesVerdict | None) -> str:
    return "leak" if v is not None and v.verdict == LEAK else "flat"


def iterations_to_exhaustion(slope: float, headroom: float | None) -> int | None:
    """Iterations until `headroom` bytes are used up at `slope` bytes per iteration."""
    if headroom is None or slope <= 0:
        return None
    return int(max(headroom, 0) // slope)


def _round(value: float) -> float:
    if not math.isfinite(value):
        return value
    return round(value, 3)
