"""What a race run found: trials per mode, failures by kind, the first failing interleaving, findings."""
from __future__ import annotations

import shlex
import statistics
from dataclasses import dataclass, field
from typing import Any

from rcompat.model import Finding, Report, Status
from rcompat.race.classify import SETUP, STARVED, TrialResult, kinds

AREA = "race"
MODES = ("unsafe", "serialized")
STARVED_REMEDY = ("The machine was overloaded, not the trial hung: its workers were alive and waiting for a "
                  "CPU. Rerun when fewer jobs share the CPUs (fewer parallel doctors or CI jobs), or raise "
                  "--timeout.")
SAFE_PATTERN = ("Call R only from the thread that started it: hand R work to that thread through a queue "
                "(or one lock held for every R call, on one thread), keep Python/torch allocations on the "
                "others, and on CUDA pin every thread to the same context (torch.cuda.set_device before "
                "work). From R with reticulate: never call back into R from Python threads.")


@dataclass
class RaceResult:
    config: dict[str, Any]
    trials: list[TrialResult] = field(default_factory=list)
    # torch's facts as the first trial's child reported them after its trial (run(torch_facts=True)),
    # and how long that child ran: the doctor's torch facts without a torch child of their own.
    torch_facts: dict[str, Any] | None = None
    torch_duration_s: float = 0.0
    # R's core facts and rpy2's mode as that child reported them after its trial (run(r_facts=SCRIPT)):
    # {"core": …, "rpy2_mode": …}, or None.
    r_facts: dict[str, Any] | None = None

    # -- per mode ---------------------------------------------------------------------------------
    def modes(self) -> list[str]:
        return [m for m in MODES if any(t.mode == m for t in self.trials)]

    def trials_of(self, mode: str) -> list[TrialResult]:
        return [t for t in self.trials if t.mode == mode]

    def failed_trials(self, mode: str) -> list[TrialResult]:
        return [t for t in self.trials_of(mode) if t.failed]

    def starved_trials(self, mode: str) -> list[TrialResult]:
        """Trials killed while starved of CPU, with no other failure: they give no verdict."""
        return [t for t in self.trials_of(mode) if t.outcome == STARVED]

    def failures_by_kind(self, mode: str) -> dict[str, int]:
        """Kind -> number of trials of `mode` that showed it (a trial may show several kinds)."""
        counts: dict[str, int] = {}
        for t in self.trials_of(mode):
            for kind in t.kind_counts:
                counts[kind] = counts.get(kind, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def first_failure(self, mode: str) -> TrialResult | None:
        failed = self.failed_trials(mode)
        return failed[0] if failed else None

    def setup_error(self) -> str | None:
        for t in self.trials:
            if t.outcome == SETUP:
                return t.setup_error
        return None

    def reproduce_command(self, trial: TrialResult) -> str:
        c = trial.config
        argv = ["rcompat", "race", "--mode", trial.mode, "--device", str(self.config["device"]),
                "--workers", str(c["workers"]), "--iterations", str(c["iterations"]), "--trials", "1",
                "--seed", str(trial.seed), "--timeout", f"{self.config['timeout']:g}"]
        if not c.get("r_stack_check", True):
            argv.append("--no-r-stack-check")
        return shlex.join(argv)

    def summary(self, mode: str) -> dict[str, Any]:
        trials = self.trials_of(mode)
        first = self.first_failure(mode)
        durations = [t.duration_s for t in trials]
        out: dict[str, Any] = {
            "trials": len(trials), "failed": len(self.failed_trials(mode)),
            "starved": len(self.starved_trials(mode)),
            "failures_by_kind": self.failures_by_kind(mode),
            "signals": sorted({t.signal for t in trials if t.signal}),
            "ops_completed": sum(len(t.ops) for t in trials),
            "ops_failed": sum(1 for t in trials for op in t.ops if op.get("outcome") == "error"),
            "median_trial_s": round(statistics.median(durations), 3) if durations else None,
            "devices": sorted({t.device for t in trials if t.device}),
            "usage": [t.usage for t in trials],
        }
        if first is not None:
            f = first.first_failure or {}
            out["first_failure"] = {"trial": first.index, "seed": first.seed, "kind": f.get("kind"),
                                    "thread": f.get("thread"), "detail": f.get("detail"),
                                    "t_ms": round((f.get("t_ns", 0) - (first.start_ns or 0)) / 1e6, 3),
                                    "interleaving": first.interleaving(),
                                    "in_flight": [_op_label(op) for op in first.in_flight],
                                    "reproduce": self.reproduce_command(first)}
        return out

    # -- tables -----------------------------------------------------------------------------------
    def to_frame(self):
        """One row per trial (pandas imported here only)."""
        import pandas as pd

        rows = []
        for t in self.trials:
            f = t.first_failure or {}
            rows.append({"mode": t.mode, "trial": t.index, "seed": t.seed, "device": t.device,
                         "outcome": t.outcome, "kinds": ",".join(t.kind_counts), "returncode": t.returncode,
                         "signal": t.signal, "timed_out": t.timed_out, "duration_s": t.duration_s,
                         "ops": len(t.ops), "r_ops": sum(op["side"] == "R" for op in t.ops),
                         "python_ops": sum(op["side"] == "Python" for op in t.ops),
                         "ops_failed": sum(op.get("outcome") == "error" for op in t.ops),
                         "in_flight": len(t.in_flight), "first_failure": f.get("detail")})
        return pd.DataFrame(rows, columns=["mode", "trial", "seed", "device", "outcome", "kinds", "returncode",
                                           "signal", "timed_out", "duration_s", "ops", "r_ops", "python_ops",
                                           "ops_failed", "in_flight", "first_failure"])

    def timeline_frame(self):
        """One row per allocation/release event of every trial (in-flight ones have no end)."""
        import pandas as pd

        cols = ["mode", "trial", "seq", "t0_ns", "t1_ns", "thread", "tid", "side", "phase", "op",
                "size_bytes", "device", "outcome", "error", "ctx_before", "ctx_after", "ctx_switch"]
        rows = []
        for t in self.trials:
            for op in t.ops + [{**o, "outcome": "in flight"} for o in t.in_flight]:
                rows.append({"mode": t.mode, "trial": t.index, **{c: op.get(c) for c in cols[2:]}})
        return pd.DataFrame(rows, columns=cols)

    # -- findings ---------------------------------------------------------------------------------
    def to_findings(self) -> list[Finding]:
        setup = self.setup_error()
        if setup is not None:
            return [Finding(id="RACE-SETUP", area=AREA, status=Status.SKIP,
                            title=f"race trials did not run (device {self.config.get('device', '?')})",
                            message=setup,
                            remedy="The race needs rpy2 with a working R, and torch (with CUDA for --device cuda).",
                            evidence={"config": self.config}, source="rcompat.race.worker setup")]
        findings = []
        if "unsafe" in self.modes():
            findings.append(self._unsafe_finding())
        if "serialized" in self.modes():
            findings.append(self._serialized_finding())
        findings.extend(self._structural_findings())
        return findings

    def _evidence(self, mode: str, summary: dict[str, Any]) -> dict[str, Any]:
        return {"mode": mode, **summary, "config": self.config}

    def _unsafe_finding(self) -> Finding:
        s = self.summary("unsafe")
        if s["failed"]:
            first = s["first_failure"]
            return Finding(
                id="RACE-UNSAFE", area=AREA, status=Status.WARN,
                title=f"R called from {self.config['workers']} worker thread(s) failed in "
                      f"{s['failed']}/{s['trials']} trials ({_kinds_text(s['failures_by_kind'])})",
                message=f"First failure: trial {first['trial']} at {first['t_ms']} ms, {first['kind']} on "
                        f"{first['thread']}: {first['detail']}. Reproduce: {first['reproduce']}",
                remedy=SAFE_PATTERN, evidence=self._evidence("unsafe", s), source=_sources(s["failures_by_kind"]),
                confidence="high")
        return Finding(id="RACE-UNSAFE", area=AREA, status=Status.OK,
                       title=f"unsafe pattern not reproduced in {s['trials'] - s['starved']} trials",
                       message="No failure seen; R is still not thread-safe, so this is luck, not safety. "
                               "Raise --iterations/--trials or pass --no-r-stack-check to look harder.",
                       evidence=self._evidence("unsafe", s), source="issue 8")

    def _serialized_finding(self) -> Finding:
        s = self.summary("serialized")
        if s["failed"]:
            first = s["first_failure"]
            return Finding(
                id="RACE-SERIALIZED", area=AREA, status=Status.FAIL,
                title=f"the recommended serialized pattern failed in {s['failed']}/{s['trials']} trials "
                      f"({_kinds_text(s['failures_by_kind'])})",
                message=f"First failure: trial {first['trial']}, {first['kind']}: {first['detail']}. "
                        f"Reproduce: {first['reproduce']}",
                remedy="R confined to one thread still fails: the fault is not the threading. Check the "
                       "duplicate runtimes (rcompat maps, rcompat doctor --only elf) and the driver.",
                evidence=self._evidence("serialized", s), source=_sources(s["failures_by_kind"]))
        judged = s["trials"] - s["starved"]
        if not judged:
            return Finding(id="RACE-SERIALIZED", area=AREA, status=Status.WARN,
                           title=f"serialized pattern not judged: {s['trials']} trial(s) starved of CPU",
                           message="Every trial was killed still waiting for a CPU, so none could show whether "
                                   "the pattern works; see RACE-STARVED.", remedy=STARVED_REMEDY,
                           evidence=self._evidence("serialized", s), source=kinds()[STARVED].source)
        starved = f" ({s['starved']} more starved of CPU, not judged)" if s["starved"] else ""
        return Finding(id="RACE-SERIALIZED", area=AREA, status=Status.OK,
                       title=f"serialized pattern: {judged}/{judged} trials, 0 failures, "
                             f"{s['ops_completed']} allocations/releases{starved}",
                       message="All R calls on the thread that started R, Python allocations on workers.",
                       evidence=self._evidence("serialized", s), source="issue 8")

    def _structural_findings(self) -> list[Finding]:
        out = []
        for kind, fid, what in (("crash", "RACE-CRASH", "crashed"), ("hang", "RACE-HANG", "hung"),
                                ("context_switch", "RACE-CONTEXT", "saw a CUDA context switch"),
                                (STARVED, "RACE-STARVED", "were starved of CPU")):
            hit = [t for t in self.trials if kind in t.kind_counts]
            if not hit:
                continue
            serialized = [t for t in hit if t.mode == "serialized"]
            first = (serialized or hit)[0]
            detail = next(f for f in first.failures if f["kind"] == kind)
            if kind == STARVED:  # no verdict: a warning whatever the mode, and the load is the remedy
                status, remedy = Status.WARN, STARVED_REMEDY
            else:
                status = Status.FAIL if serialized else Status.WARN
                remedy = SAFE_PATTERN if not serialized else "Rerun with --trace and read the last events."
            out.append(Finding(
                id=fid, area=AREA, status=status,
                title=f"{len(hit)} trial(s) {what} ({', '.join(sorted({t.mode for t in hit}))})",
                message=f"Trial {first.index} ({first.mode}): {detail['detail']}.",
                remedy=remedy,
                evidence={"mode": first.mode, "trial": first.index, "signal": first.signal,
                          "returncode": first.returncode, "usage": first.usage, "last_events": first.interleaving(),
                          "in_flight": [_op_label(op) for op in first.in_flight],
                          "stderr_tail": first.stderr_tail, "reproduce": self.reproduce_command(first)},
                source=kinds()[kind].source, confidence=kinds()[kind].confidence))
        return out

    def to_report(self) -> Report:
        report = Report(command="race")
        report.add(self.to_findings())
        report.facts = {"race": {"config": self.config, "modes": {m: self.summary(m) for m in self.modes()}}}
        return report


def _op_label(op: dict[str, Any]) -> str:
    return f"{op['side']} {op['phase']} {op['op']} {op['size_bytes']} B on {op['thread']}"


def _kinds_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in counts.items())


def _sources(counts: dict[str, int]) -> str:
    table = kinds()
    return "; ".join(sorted({table[k].source for k in counts if k in table}))
