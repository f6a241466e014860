"""Chrome trace JSON (the "Trace Event Format") of a race run, for Perfetto or chrome://tracing.

One process row per trial ("unsafe trial 0 (pid 4242)"), one thread row per OS thread. Every
allocation and release is a complete event (ph "X") with ts/dur in microseconds from the first trial's
start; R console lines and failures are instant events (ph "i"); an operation that was still running
when the process died is drawn up to the trial's last event and marked "in flight". The field list is
in docs/race.md.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from rcompat.race.classify import TrialResult

OP_ARGS = ("size_bytes", "device", "outcome", "error_type", "error", "worker", "iter", "seq",
           "requested_by", "ctx_before", "ctx_after", "ctx_switch")


def write_chrome_trace(path: str, trials: Sequence[TrialResult], config: dict[str, Any]) -> str:
    """Write the trace atomically (a temp file, then rename); returns the path written."""
    from rcompat.atomic import write_text_atomic

    return str(write_text_atomic(path, json.dumps(chrome_trace(trials, config), separators=(",", ":"))))


def chrome_trace(trials: Sequence[TrialResult], config: dict[str, Any]) -> dict[str, Any]:
    starts = [t.start_ns for t in trials if t.start_ns is not None]
    origin = min(starts) if starts else 0
    events: list[dict[str, Any]] = []

    def us(t_ns: int) -> float:
        return round(max(t_ns - origin, 0) / 1000.0, 3)  # R console lines may predate the origin

    for number, trial in enumerate(trials, 1):
        pid = number  # trial rows in run order; the real pid is in the row's name
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": f"{trial.mode} trial {trial.index} (pid {trial.pid}, seed {trial.seed}, {trial.outcome})"}})
        threads = {op["tid"]: op["thread"] for op in trial.ops + trial.in_flight}
        for tid, name in threads.items():
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        end_ns = max([op["t1_ns"] for op in trial.ops] + [op["t0_ns"] for op in trial.in_flight]
                     + [trial.start_ns or origin])
        for op in trial.ops:
            events.append(_complete(op, pid, us(op["t0_ns"]), (op["t1_ns"] - op["t0_ns"]) / 1000.0))
        for op in trial.in_flight:
            ev = _complete({**op, "outcome": "in flight"}, pid, us(op["t0_ns"]), (end_ns - op["t0_ns"]) / 1000.0)
            events.append(ev)
        tid_of = {name: tid for tid, name in threads.items()}
        for line in trial.console:
            events.append({"name": "R console", "cat": "R,console", "ph": "i", "s": "t", "ts": us(line["t_ns"]),
                           "pid": pid, "tid": tid_of.get(line.get("thread"), 0),
                           "args": {"text": line.get("text", "").strip()}})
        for failure in trial.failures:
            events.append({"name": f"failure: {failure['kind']}", "cat": "failure", "ph": "i",
                           "s": "p" if failure.get("structural") else "t",
                           "ts": us(min(failure["t_ns"], end_ns + 1)), "pid": pid,
                           "tid": tid_of.get(failure.get("thread"), 0),
                           "args": {"kind": failure["kind"], "detail": failure.get("detail")}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"tool": "rcompat race", "config": config,
                          "clock": "CLOCK_MONOTONIC, microseconds from the first trial's start"}}


def _complete(op: dict[str, Any], pid: int, ts: float, dur: float) -> dict[str, Any]:
    return {"name": f"{op['side']} {op['phase']} {op['op']}", "cat": f"{op['side']},{op['phase']}", "ph": "X",
            "ts": ts, "dur": round(max(dur, 0.0), 3), "pid": pid, "tid": op["tid"],
            "args": {k: op[k] for k in OP_ARGS if k in op}}
