"""Turn one trial child's end and its JSON-line events into a TrialResult with named failure kinds.

The kinds and the texts that reveal them are data (rcompat/data/race_symptoms.toml); this module only
applies them. A trial can show several kinds (an R stack error, then a crash); its `outcome` is the most
severe one, and `first_failure` is the earliest failure in time, which is what a reader needs to see
the interleaving that led to it.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from rcompat.data import cached_toml
from rcompat.isolate import ChildResult

SETUP = "setup"
OK = "ok"
STARVED = "starved"  # killed while waiting for a CPU: no verdict, neither a pass nor a failure
INTERLEAVING_EVENTS = 12


@dataclass(frozen=True)
class Kind:
    kind: str
    rank: int
    title: str
    source: str
    confidence: str


@functools.lru_cache(maxsize=None)
def symptom_rules() -> tuple[tuple[re.Pattern, str], ...]:
    return tuple((re.compile(row["pattern"]), row["kind"]) for row in cached_toml("race_symptoms.toml", "symptom"))


@functools.lru_cache(maxsize=None)
def kinds() -> dict[str, Kind]:
    """Every kind with its rank; the structural row wins where a symptom shares its kind."""
    table: dict[str, Kind] = {}
    for section in ("symptom", "structural"):
        for row in cached_toml("race_symptoms.toml", section):
            table[row["kind"]] = Kind(row["kind"], int(row["rank"]), row["title"], row["source"],
                                      row.get("confidence", ""))
    return table


def kind_of_text(text: str) -> str | None:
    for pattern, kind in symptom_rules():
        if pattern.search(text):
            return kind
    return None


@dataclass
class TrialResult:
    mode: str
    index: int
    seed: int
    config: dict[str, Any]
    returncode: int | None
    signal: str | None
    timed_out: bool
    duration_s: float
    ops: list[dict[str, Any]] = field(default_factory=list)
    in_flight: list[dict[str, Any]] = field(default_factory=list)
    console: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    start_ns: int | None = None
    pid: int | None = None
    device: str | None = None
    setup_error: str | None = None
    stderr_tail: str = ""
    usage: dict[str, float] | None = None  # cpu_s, waited_s, stopped_s (rcompat.stall)

    @property
    def kind_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in self.failures:
            counts[f["kind"]] = counts.get(f["kind"], 0) + 1
        return counts

    @property
    def outcome(self) -> str:
        if self.setup_error is not None:
            return SETUP
        if not self.failures:
            return OK
        table = kinds()
        return min(self.kind_counts, key=lambda k: table[k].rank if k in table else 99)

    @property
    def failed(self) -> bool:
        return self.outcome not in (OK, SETUP, STARVED)

    @property
    def first_failure(self) -> dict[str, Any] | None:
        return min(self.failures, key=lambda f: f["t_ns"]) if self.failures else None

    def interleaving(self, limit: int = INTERLEAVING_EVENTS) -> list[dict[str, Any]]:
        """The events up to and including the first failure (in time), last `limit` of them."""
        first = self.first_failure
        events = sorted(self._timeline_points(), key=lambda e: e["t_ns"])
        if first is not None:
            events = [e for e in events if e["t_ns"] <= first["t_ns"]]
        return [self._describe(e) for e in events[-limit:]]

    def _timeline_points(self) -> list[dict[str, Any]]:
        points = [{**op, "t_ns": op["t1_ns"]} for op in self.ops]
        points += [{**op, "t_ns": op["t0_ns"], "outcome": "in flight"} for op in self.in_flight]
        points += [{"ev": "r_console", **c} for c in self.console]
        points += [f for f in self.failures if f.get("structural")]
        return points

    def _describe(self, e: dict[str, Any]) -> dict[str, Any]:
        t_ms = round((e["t_ns"] - (self.start_ns or e["t_ns"])) / 1e6, 3)
        if e.get("structural"):
            return {"t_ms": t_ms, "thread": "-", "what": f"{e['kind']}: {e['detail']}"}
        if e.get("ev") == "r_console":
            return {"t_ms": t_ms, "thread": e.get("thread", "?"), "what": f"R console: {e['text'].strip()}"}
        what = f"{e['side']} {e['phase']} {e['op']} {e['size_bytes']} B on {e['device']}: {e['outcome']}"
        if e.get("error"):
            what += f" ({e.get('error_type')}: {e['error'][:120]})"
        if e.get("ctx_switch"):
            what += f" [context {e.get('ctx_before')} -> {e.get('ctx_after')}]"
        return {"t_ms": t_ms, "thread": e["thread"], "what": what}


def classify(child: ChildResult, *, mode: str, index: int, seed: int, config: dict[str, Any]) -> TrialResult:
    trial = TrialResult(mode=mode, index=index, seed=seed, config=config, returncode=child.returncode,
                        signal=child.signal_name, timed_out=child.timed_out,
                        duration_s=round(child.duration_s, 3), stderr_tail=child.tail(8), usage=child.usage)
    begun: dict[int, dict[str, Any]] = {}
    for rec in child.records:
        ev = rec.get("ev")
        if ev == "start":
            trial.start_ns = rec.get("t_ns")
            trial.pid = rec.get("pid")
        elif ev == "ready":  # times are shown from here: the workload's start, after R and torch loaded
            trial.device = rec.get("device")
            trial.start_ns = rec.get("t_ns", trial.start_ns)
        elif ev == "setup_error":
            trial.setup_error = str(rec.get("reason"))
        elif ev == "begin":
            begun[rec["seq"]] = rec
        elif ev == "op":
            begun.pop(rec["seq"], None)
            trial.ops.append(rec)
            _op_failures(trial, rec)
        elif ev == "r_console":
            trial.console.append(rec)
            kind = kind_of_text(rec.get("text", ""))
            if kind:
                trial.failures.append({"kind": kind, "t_ns": rec["t_ns"], "thread": rec.get("thread"),
                                       "detail": rec["text"].strip()[:300], "source": "r_console"})
        elif ev in ("thread_error", "worker_gave_up", "hook", "end"):
            trial.notes.append(rec)
            if ev == "thread_error":
                text = f"{rec.get('error_type')}: {rec.get('error')}"
                trial.failures.append({"kind": kind_of_text(text) or "python_exception", "t_ns": _last_t(trial),
                                       "thread": f"worker-{rec.get('worker')}", "detail": text[:300],
                                       "source": "thread"})
    trial.in_flight = sorted(begun.values(), key=lambda r: r["t0_ns"])
    if trial.setup_error is None:
        _end_failures(trial, child)
    return trial


def _op_failures(trial: TrialResult, op: dict[str, Any]) -> None:
    if op.get("outcome") == "error":
        text = f"{op.get('error_type')}: {op.get('error')}"
        kind = kind_of_text(text) or ("r_error" if op["side"] == "R" else "python_exception")
        trial.failures.append({"kind": kind, "t_ns": op["t1_ns"], "thread": op["thread"], "detail": text[:300],
                               "source": "op", "seq": op["seq"]})
    if op.get("ctx_switch"):
        trial.failures.append({"kind": "context_switch", "t_ns": op["t1_ns"], "thread": op["thread"],
                               "detail": f"{op.get('ctx_before')} -> {op.get('ctx_after')}", "source": "op",
                               "seq": op["seq"]})


def _last_t(trial: TrialResult) -> int:
    times = [op["t1_ns"] for op in trial.ops] + [c["t_ns"] for c in trial.console]
    return max(times) if times else (trial.start_ns or 0)


def _timeout_detail(child: ChildResult) -> str:
    """Why a timed-out trial was killed, with what it used (a patient run, rcompat.stall)."""
    usage = child.usage
    took = f"{child.duration_s:.1f} s"
    if usage is None:
        return f"no end within {took}; process group killed"
    used = (f"{usage['cpu_s']:.1f} s of CPU, {usage['waited_s']:.1f} s waiting for a CPU"
            + (f", {usage['stopped_s']:.1f} s stopped" if usage["stopped_s"] else ""))
    if child.timeout_reason == STARVED:
        return f"starved of CPU: no end within {took} ({used}); process group killed"
    if child.timeout_reason == "busy":
        return f"still busy, no end within {took} ({used}): a livelock, or more work than the timeout allows; process group killed"
    return f"no progress (no CPU time gained, no wait for a CPU) in its last seconds, no end within {took} ({used}); process group killed"


def _end_failures(trial: TrialResult, child: ChildResult) -> None:
    """Failures read from how the child ended: signal, timeout, exit status, and its raw stderr."""
    seen = {f["kind"] for f in trial.failures}
    for line in child.stderr.splitlines():
        kind = kind_of_text(line)
        if kind and kind not in seen:
            seen.add(kind)
            trial.failures.append({"kind": kind, "t_ns": _last_t(trial), "thread": "-", "detail": line.strip()[:300],
                                   "source": "stderr"})
    end_t = _last_t(trial) + 1  # after every recorded event: the end is what came last
    in_flight = "; ".join(f"{op['side']} {op['phase']} {op['op']} on {op['thread']}" for op in trial.in_flight)
    suffix = f" while in flight: {in_flight}" if in_flight else ""
    if child.timed_out:
        kind = STARVED if child.timeout_reason == STARVED else "hang"
        trial.failures.append({"kind": kind, "t_ns": end_t, "structural": True, "thread": "-",
                               "detail": _timeout_detail(child) + suffix})
    elif child.signal_name:
        trial.failures.append({"kind": "crash", "t_ns": end_t, "structural": True, "thread": "-",
                               "signal": child.signal_name,
                               "detail": f"killed by {child.signal_name}{suffix}"})
    elif child.returncode not in (0, None) and "r_fatal" not in seen:
        trial.failures.append({"kind": "exit_nonzero", "t_ns": end_t, "structural": True, "thread": "-",
                               "detail": f"exited with status {child.returncode}{suffix}"})
