"""Parent side of `rcompat soak`: check the options, run the workload in one isolated child, collect
its samples and judge them.

The child is `python -m rcompat.soak.child` (this interpreter, or `--python`) or `Rscript
rcompat/r_scripts/soak.R` (`--side r`). It gets a fixed glibc mmap threshold (MALLOC_MMAP_THRESHOLD_,
unless the caller set one): glibc otherwise raises the threshold after the first large free and keeps
later large blocks in its heap, so RSS would not show memory a collection frees (mallopt(3)).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rcompat.errors import RcompatError, UsageError
from rcompat.isolate import ChildResult

CHILD_MODULE = "rcompat.soak.child"
R_SCRIPT = "soak.R"
SIDES, DEVICES = ("python", "r"), ("cpu", "cuda")
LIMITS = {"iterations": (12, 100_000), "warmups": (0, 10_000)}
MMAP_THRESHOLD = "131072"  # glibc's default, fixed (its dynamic adjustment off)


@dataclass
class SoakOptions:
    side: str = "python"
    device: str = "cpu"
    iterations: int = 200
    warmups: int | None = None       # None: the table's (rcompat/data/soak_rules.toml)
    cases: str | None = None         # python: CASES file; r: a file defining soak_iteration(i)
    python: str | None = None
    rscript: str | None = None
    threads: int = 1                 # 0: torch's default (see the CLI's --threads)
    seed: int = 0
    timeout: float = 600.0


@dataclass
class SoakResult:
    options: SoakOptions
    warmups: int
    facts: dict[str, Any] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list)   # measured iterations only
    end: dict[str, Any] = field(default_factory=dict)             # limits, timing
    child: ChildResult | None = None
    failure: str | None = None                                    # the workload's own error, mid-run

    @property
    def completed(self) -> bool:
        return self.child is not None and self.child.ok and self.failure is None

    def metrics(self) -> list[str]:
        seen: dict[str, None] = {}
        for s in self.samples:
            for key in s.get("after", {}):
                seen.setdefault(key, None)
        return list(seen)

    def column(self, metric: str, when: str = "after") -> list[float]:
        return [s[when][metric] for s in self.samples if metric in s.get(when, {})]

    def returned(self, metric: str) -> list[float]:
        """before - after of the iterations sampled both ways (all of a short run, every k-th of a long one)."""
        return [s["before"][metric] - s["after"][metric] for s in self.samples
                if metric in s.get("before", {}) and metric in s.get("after", {})]


def validate(options: SoakOptions) -> None:
    if options.side not in SIDES:
        raise UsageError(f"--side: choose from {', '.join(SIDES)}")
    if options.device not in DEVICES:
        raise UsageError(f"--device: choose from {', '.join(DEVICES)}")
    for name in ("iterations", "warmups"):
        value = getattr(options, name)
        low, high = LIMITS[name]
        if value is not None and not (isinstance(value, int) and low <= value <= high):
            raise UsageError(f"--{name} must be a whole number from {low} to {high}, not {value!r}")
    if options.cases:
        from rcompat.inputs import require_file

        require_file(options.cases, "--cases")
        want = ".R" if options.side == "r" else ".py"
        if not options.cases.endswith((want, want.lower())):
            raise UsageError(f"--cases {options.cases}: with --side {options.side} give a {want} file")
    if options.side == "r" and options.python:
        raise UsageError("--python chooses the Python side's interpreter; with --side r use --rscript")
    if options.side == "python" and options.rscript:
        raise UsageError("--rscript runs the R side; add --side r")
    if options.python and not os.access(options.python, os.X_OK):
        raise UsageError(f"--python {options.python}: not an executable file")


def run(options: SoakOptions, progress=None) -> SoakResult:
    """Run the soak as `options` say; raises UsageError/RcompatError when it cannot start."""
    from rcompat.progress import showing_file
    from rcompat.soak.classify import thresholds

    validate(options)
    warmups = int(thresholds()["warmups"]) if options.warmups is None else options.warmups
    result = SoakResult(options=options, warmups=warmups)
    work = Path(tempfile.mkdtemp(prefix="rcompat-soak-"))
    try:
        child = showing_file(lambda: _run_child(options, warmups, work), work / "progress", progress,
                             first="starting the child")
        samples = work / "samples.jsonl"
        if samples.is_file():  # the Python child's samples (the R child's come on stdout)
            from rcompat.isolate import parse_json_lines

            child.records.extend(parse_json_lines(samples.read_text(errors="replace")))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result.child = child
    fatal = next((str(r["fatal"]) for r in child.records if "fatal" in r), None)
    for rec in child.records:
        if isinstance(rec.get("facts"), dict):
            result.facts.update(rec["facts"])
        elif "sample" in rec and not rec.get("warmup") and isinstance(rec.get("after"), dict):
            result.samples.append(rec)
        elif isinstance(rec.get("end"), dict):
            result.end = rec["end"]
    if fatal and not result.samples:  # it never ran an iteration we keep: a setup error
        raise RcompatError(("R side: " if options.side == "r" else "") + fatal)
    if not child.records:
        what = "--rscript" if options.side == "r" else "--python" if options.python else "the interpreter"
        tail = " ".join(child.tail(3).split())
        raise RcompatError(f"{what} {child.argv[0]} did not run the soak child: it {child.describe_end()}"
                           f"{': ' + tail[:300] if tail else ''}")
    result.failure = fatal
    return result


def child_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(base or {})
    current = {**os.environ, **env}
    if "MALLOC_MMAP_THRESHOLD_" not in current and "mmap_threshold" not in current.get("GLIBC_TUNABLES", ""):
        env["MALLOC_MMAP_THRESHOLD_"] = MMAP_THRESHOLD
    return env


def _run_child(options: SoakOptions, warmups: int, work: Path) -> ChildResult:
    progress_file = str(work / "progress")
    if options.side == "r":
        from rcompat.isolate import run_child
        from rcompat.parity.rside import find_rscript
        from rcompat.r.scripts import scripts_dir

        rscript, env = find_rscript(options.rscript)
        script = scripts_dir() / R_SCRIPT
        if not script.is_file():
            raise RcompatError(f"{script} is missing: this rcompat checkout is incomplete")
        workload = str(Path(options.cases).resolve()) if options.cases else str(scripts_dir() / "soak_workload.R")
        argv = [rscript, str(script), workload, str(options.iterations), str(warmups), options.device,
                progress_file, str(options.seed)]
        return run_child(argv, timeout=options.timeout, env=child_environment(env))
    from rcompat.isolate import run_python_child

    config = {"iterations": options.iterations, "warmups": warmups, "device": options.device,
              "threads": options.threads, "seed": options.seed, "progress": progress_file,
              "samples": str(work / "samples.jsonl"),
              "cases": str(Path(options.cases).resolve()) if options.cases else None}
    return run_python_child(CHILD_MODULE, [json.dumps(config)], timeout=options.timeout,
                            env=child_environment(), python=options.python)
