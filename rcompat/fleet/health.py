"""`rcompat fleet health-check`: a fast subset of the doctor within a time budget, for Slurm's
HealthCheckProgram (killed after 60 s; slurm.conf(5)) or a cron job.

Exit 0 healthy, 1 a failing finding, 2 rcompat's own failure (it timed out, could not run, gave no
report). One line on stdout says why. With --drain, and only when slurmd started this as its
HealthCheckProgram (SLURMD_NODENAME set, no SLURM_JOB_ID: slurmd gives the program no other
environment), a `fail` finding drains the node through scontrol with that line as the reason, as NHC
does. rcompat's own failure (exit 2) and `error` findings (a check that could not run) never drain:
a bug in rcompat must not take nodes out of service.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Sequence

from rcompat.model import Report, Status

DEFAULT_AREAS = ("system", "python", "cuda")
DEFAULT_BUDGET_S = 45.0     # under HealthCheckProgram's 60 s, leaving time for scontrol
DRAIN_MARGIN_S = 5.0
REASON_CHARS = 200
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class HealthResult:
    exit_code: int
    reason: str
    report: Report | None = None
    drained: bool = False
    drain_note: str = ""


def run_as_health_check_program(env: dict[str, str]) -> str | None:
    """None when slurmd started us as HealthCheckProgram; else why not (for the note)."""
    if env.get("SLURM_JOB_ID"):
        return "inside a job (SLURM_JOB_ID is set): Prolog/Epilog and jobs must not call scontrol"
    if not env.get("SLURMD_NODENAME"):
        return "not started by slurmd (SLURMD_NODENAME is not set)"
    return None


def health_check(areas: Sequence[str] = DEFAULT_AREAS, budget: float = DEFAULT_BUDGET_S, strict: bool = False,
                 drain: bool = False, env: dict[str, str] | None = None) -> HealthResult:
    import os

    from rcompat.isolate import run_child

    environment = dict(os.environ if env is None else env)
    environment.setdefault("PATH", SAFE_PATH)  # slurmd gives HealthCheckProgram no PATH: R, gcc, nvcc need one
    argv = [sys.executable, "-m", "rcompat", "doctor", "--format", "json", "--quiet"]
    for area in areas:
        argv += ["--only", area]
    child = run_child(argv, timeout=max(1.0, budget - DRAIN_MARGIN_S), env=environment)
    if child.timed_out:
        return HealthResult(2, f"rcompat: health check did not finish within {budget:g} s (not draining)")
    report = _report(child.stdout)
    if report is None or child.returncode not in (0, 1):
        said = " ".join(child.stderr.split())[-160:] or f"exit {child.returncode}"
        return HealthResult(2, f"rcompat: health check could not run: {said} (not draining)")
    failing = {Status.FAIL, Status.ERROR} | ({Status.WARN} if strict else set())
    bad = [f for f in report.findings if f.status in failing]
    if not bad:
        return HealthResult(0, f"rcompat: healthy ({len(report.findings)} checks of {', '.join(areas)})", report)
    worst = sorted(bad, key=lambda f: f.status is not Status.FAIL)
    reason = f"rcompat: {worst[0].status.value.upper()} {worst[0].id}: {worst[0].title}"
    if len(bad) > 1:
        reason += f" (+{len(bad) - 1} more)"
    reason = " ".join(reason.split())[:REASON_CHARS]
    result = HealthResult(1, reason, report)
    drains = [f for f in bad if f.status is Status.FAIL or (strict and f.status is Status.WARN)]
    if drain:
        result.drained, result.drain_note = _drain(environment, reason, bool(drains))
    return result


def _report(stdout: str) -> Report | None:
    import json

    try:
        data: Any = json.loads(stdout)
        return Report.from_dict(data) if isinstance(data, dict) else None
    except (ValueError, TypeError, KeyError):
        return None


def _drain(env: dict[str, str], reason: str, any_fail: bool) -> tuple[bool, str]:
    from rcompat.errors import RcompatError
    from rcompat.fleet.slurm import drain

    if not any_fail:
        return False, "not draining: only error findings (checks that could not run), no fail"
    why_not = run_as_health_check_program(env)
    if why_not:
        return False, f"not draining: {why_not}"
    try:
        drain(env["SLURMD_NODENAME"], reason)
    except RcompatError as exc:
        return False, f"could not drain {env['SLURMD_NODENAME']}: {exc}"
    return True, f"drained {env['SLURMD_NODENAME']}"
