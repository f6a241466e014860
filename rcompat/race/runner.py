"""Parent side of the race: validate the bounds, run each trial in its own child, classify it.

Each trial is `python -m rcompat.race.worker '<json>'` through rcompat.isolate.run_python_child: its
own process group, killed as a group at the timeout, always reaped. Trials run one after another, so
at most one child (and its threads) exists at a time. Trial i of a run with seed S uses seed S+i,
which fixes each worker's plan (sizes, order of R and Python calls, jitter); the OS scheduler still
decides the exact interleaving, so a seed reproduces the workload, and usually the failure.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Mapping

from rcompat.atomic import check_writable_target
from rcompat.errors import UsageError
from rcompat.isolate import run_python_child
from rcompat.race.classify import SETUP, classify
from rcompat.race.result import MODES, RaceResult
from rcompat.stall import Patience

if TYPE_CHECKING:
    from rcompat.progress import Progress

DEVICES = ("auto", "cuda", "cpu")
LIMITS = {"iterations": (1, 10_000), "workers": (1, 64), "trials": (1, 100)}
MAX_TIMEOUT_S = 3600.0
WORKER_MODULE = "rcompat.race.worker"
# A trial still making progress at its timeout (CPU time, or waiting for a CPU on a loaded machine)
# runs on, up to 5 times the timeout: starved is not hung (rcompat.stall).
PATIENCE = Patience(window_s=5.0, limit_factor=5.0)
# Test hooks the worker understands; anything else passed as hooks is refused.
HOOKS = ("crash_after_events", "crash_lib", "hang_after_events")


def run(device: str = "auto", iterations: int = 20, workers: int = 4, mode: str = "both",
        timeout: float = 30.0, trace: str | None = None, *, trials: int = 3, seed: int | None = None,
        r_stack_check: bool = True, jitter_s: float = 0.0005,
        hooks: Mapping[str, Any] | None = None, progress: "Progress | None" = None,
        torch_facts: bool = False, r_facts: str | None = None, overlap_setup: bool = False) -> RaceResult:
    """Run `trials` trials per mode ("unsafe", "serialized" or "both") and return what they showed.

    `timeout` (seconds): a trial with no progress by then is a hang; one still progressing runs on,
    up to 5 x timeout (PATIENCE), and one starved of CPU is reported as such, not as a hang.
    `trace` writes a Chrome trace JSON file (atomically).
    `hooks` is for tests: make the worker crash (SIGSEGV) or hang after N timeline events.
    `progress` (rcompat.progress) shows which trial is running: "serialized trial 2/3".
    `torch_facts`: the first trial's child, once its trial has ended, also reports what the doctor's
    torch child would (rcompat.cuda.torch_child.torch_facts) in `result.torch_facts` (None when it
    could not), so the doctor starts torch once for both. `r_facts` (the path of r_facts.R): that child
    also reports rpy2's mode and R's core facts (rcompat.r.worker's answer) in `result.r_facts`.
    `overlap_setup`: each child imports torch on a thread while R starts on its main thread
    (rcompat.race.worker.TorchImport), rather than after R; the doctor's trial asks for it.
    """
    from rcompat.progress import disabled

    progress = progress or disabled()
    modes = _modes(mode)
    if device not in DEVICES:
        raise UsageError(f"unknown device '{device}'; choose from: {', '.join(DEVICES)}")
    for name, value in (("iterations", iterations), ("workers", workers), ("trials", trials)):
        low, high = LIMITS[name]
        if not isinstance(value, int) or not low <= value <= high:
            raise UsageError(f"{name} must be an integer from {low} to {high}, not {value!r}")
    if not (0 < float(timeout) <= MAX_TIMEOUT_S):
        raise UsageError(f"timeout must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, not {timeout!r}")
    unknown = sorted(set(hooks or {}) - set(HOOKS))
    if unknown:
        raise UsageError(f"unknown race hook(s): {', '.join(unknown)}")
    if trace:  # before the trials run, not after
        check_writable_target(trace)
    seed = int.from_bytes(os.urandom(4), "little") >> 1 if seed is None else int(seed)
    run_id = os.urandom(6).hex()  # 12 random hex digits, as uuid4's were, without importing uuid (platform)
    config = {"device": device, "iterations": iterations, "workers": workers, "trials": trials,
              "timeout": float(timeout), "seed": seed, "r_stack_check": bool(r_stack_check),
              "jitter_s": float(jitter_s), "modes": modes, "run_id": run_id}
    result = RaceResult(config=config)
    child_env = _r_home_env()
    for m in modes:
        for index in range(trials):
            trial_config = {"mode": m, "seed": seed + index, "device": device, "iterations": iterations,
                            "workers": workers, "r_stack_check": bool(r_stack_check), "jitter_s": float(jitter_s),
                            "run_id": run_id, **dict(hooks or {}),
                            **({"overlap_setup": True} if overlap_setup else {}),
                            **({"torch_facts": True} if torch_facts and not result.trials else {}),
                            **({"r_facts": str(r_facts)} if r_facts and not result.trials else {})}
            progress.note(f"{m} trial {index + 1}/{trials}")
            child = run_python_child(WORKER_MODULE, [json.dumps(trial_config)], timeout=float(timeout),
                                     patience=PATIENCE, env=child_env)
            trial = classify(child, mode=m, index=index, seed=seed + index, config=trial_config)
            if trial_config.get("torch_facts"):
                result.torch_facts = next((r["torch_facts"] for r in child.records if "torch_facts" in r), None)
                result.torch_duration_s = child.duration_s
            if trial_config.get("r_facts"):
                said = next((r for r in child.records if "r_facts" in r), None)
                core = said.get("r_facts") if said is not None else None
                result.r_facts = {"core": core.get("core"), "rpy2_mode": said.get("rpy2_mode")} \
                    if isinstance(core, dict) else None
            result.trials.append(trial)
            if trial.outcome == SETUP:  # no R, no torch or no CUDA: every further trial would say the same
                break
        if result.setup_error() is not None:
            break
    if trace:
        from rcompat.race.trace import write_chrome_trace

        write_chrome_trace(trace, result.trials, result.config)
    return result


def _r_home_env() -> dict[str, str] | None:
    """R_HOME for the trial's child when it is not set: rpy2 otherwise runs `R RHOME` to learn it (a
    shell script's start, on the way to the trial) and then sets it in the child itself, to the value
    the R front end on PATH names (what rcompat.r.host.locate_r reads from that script)."""
    from rcompat.r.host import locate_r

    if os.environ.get("R_HOME"):
        return None
    install = locate_r()
    return {"R_HOME": install.r_home} if install is not None and install.r_home else None


def _modes(mode: str) -> list[str]:
    if mode == "both":
        return list(MODES)
    if mode not in MODES:
        raise UsageError(f"unknown mode '{mode}'; choose from: unsafe, serialized, both")
    return [mode]
