"""A trial starved of CPU is not a hang: real trial children stopped (SIGSTOP) or sharing one CPU with
busy loops run past their timeout and end well, or are reported as starved, never as RACE-HANG; a real
hang is still killed at its timeout."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from rcompat.isolate import run_child
from rcompat.model import Status
from rcompat.stall import BUSY, STALLED, STARVED, Patience, Watch, _Sample

# A window of one second to call a child stalled; the limit for a child that still makes progress is far
# enough (30 timeouts) that no machine's speed or load decides a test (a slow one only waits longer).
QUICK = Patience(window_s=1.0, limit_factor=30.0)


def _child_of_this_process(token: str, timeout: float = 60.0) -> int | None:
    """The pid of a child of this (the test) process whose command line holds `token`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmdline = fh.read()
            except (OSError, IndexError, ValueError):
                continue
            if ppid == os.getpid() and token.encode() in cmdline:
                return int(entry)
        time.sleep(0.01)
    return None


def _stop_the_child(token: str, stopped_for: float | None, log: list) -> threading.Thread:
    """SIGSTOP the child running `token` as soon as it exists; SIGCONT it after `stopped_for` s (None: never)."""
    def act() -> None:
        pid = _child_of_this_process(token)
        if pid is None:
            return
        os.kill(pid, signal.SIGSTOP)
        log.append(("stopped", pid, time.monotonic()))
        if stopped_for is not None:
            time.sleep(stopped_for)
            os.kill(pid, signal.SIGCONT)
            log.append(("continued", pid, time.monotonic()))

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


def test_a_stopped_trial_resumed_after_its_timeout_is_not_a_hang(r_and_torch):
    from rcompat.race import runner

    log: list = []
    thread = _stop_the_child(runner.WORKER_MODULE, stopped_for=8.0, log=log)
    result = runner.run(device="cpu", iterations=4, workers=2, mode="serialized", trials=1, seed=1, timeout=4)
    thread.join()
    (trial,) = result.trials
    assert [e[0] for e in log] == ["stopped", "continued"]
    assert trial.outcome == "ok", trial.failures
    assert trial.duration_s > 8 and trial.usage["stopped_s"] >= 6
    ids = {f.id: f.status for f in result.to_findings()}
    assert ids == {"RACE-SERIALIZED": Status.OK}


def test_a_trial_stopped_until_the_limit_is_starved_with_the_load_as_remedy(r_and_torch, survivors):
    from rcompat.race import runner

    thread = _stop_the_child(runner.WORKER_MODULE, stopped_for=None, log=[])
    start = time.monotonic()
    result = runner.run(device="cpu", iterations=4, workers=2, mode="serialized", trials=1, seed=1, timeout=2)
    thread.join()
    took = time.monotonic() - start
    (trial,) = result.trials
    assert trial.timed_out and trial.outcome == "starved" and not trial.failed
    assert 2 * runner.PATIENCE.limit_factor <= took < 2 * runner.PATIENCE.limit_factor + 10
    findings = {f.id: f for f in result.to_findings()}
    assert "RACE-HANG" not in findings
    assert findings["RACE-SERIALIZED"].status is Status.WARN  # no verdict, and no failure
    assert findings["RACE-STARVED"].status is Status.WARN
    assert "overloaded" in findings["RACE-STARVED"].remedy and "starved of CPU" in findings["RACE-STARVED"].message
    assert not survivors(result.config["run_id"])


def _busy_loops(n: int, cpu: int) -> list[subprocess.Popen]:
    # Each loop in a session of its own: with the kernel's autogroup scheduling (on by default) CPU time
    # is shared between sessions first, so loops sharing the test's session would together get the
    # same share as the trial (which runs in a session of its own) however many there are.
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
             for _ in range(n)]
    for p in loops:
        os.sched_setaffinity(p.pid, {cpu})
    return loops


def _trial_on_one_cpu(cpu: int, busy_loops: int, timeout: float):
    """One serialized trial pinned to `cpu` (the trial child inherits the affinity) beside `busy_loops`
    endless loops on the same CPU."""
    from rcompat.race.runner import run

    before = os.sched_getaffinity(0)
    loops = _busy_loops(busy_loops, cpu)
    try:
        os.sched_setaffinity(0, {cpu})
        return run(device="cpu", iterations=4, workers=2, mode="serialized", trials=1, seed=1, timeout=timeout)
    finally:
        os.sched_setaffinity(0, before)
        for p in loops:
            p.kill()
            p.wait()


@pytest.mark.serial  # it loads a CPU on purpose
def test_a_trial_sharing_its_cpu_with_busy_loops_is_not_a_hang(r_and_torch, survivors):
    """A trial that must wait for its CPU runs past its timeout and is not called a hang. The load is
    scaled to the trial, not to the machine: a first trial alone on one CPU measures the CPU time it
    needs (R and torch start-up: about 0.8 s on one machine, 2.5 s on another), then enough busy loops
    share that CPU with the second trial that its fair share needs at least two timeouts of wall time
    (on one CPU, with n loops each in a session of its own, wall time is about (n + 1) x CPU time),
    doubled while the counters do not show it. The kernel's counters (schedstat run
    delay) must show that it waited for the CPU, which is what the watchdog has to tell from a hang.
    The timeout stays at 4 s, so the watchdog's window (a quarter of it) is the one real runs get."""
    cpu = min(os.sched_getaffinity(0))
    alone = _trial_on_one_cpu(cpu, busy_loops=0, timeout=600)
    (calibration,) = alone.trials
    assert calibration.outcome == "ok", calibration.failures
    needs_cpu_s = calibration.usage["cpu_s"]
    assert needs_cpu_s > 0, calibration.usage
    timeout = 4.0
    # Two timeouts, not more: the loops burn that CPU for as long as the trial runs (each timeout of
    # margin costs 4 s of a CPU the other tests could use), and too few are doubled below anyway.
    loops = max(3, math.ceil(2 * timeout / needs_cpu_s) - 1)
    for _ in range(3):  # more load until the kernel's counters show the contention (a scheduler may share otherwise)
        result = _trial_on_one_cpu(cpu, busy_loops=loops, timeout=timeout)
        (trial,) = result.trials
        if trial.duration_s > timeout and trial.usage["waited_s"] > trial.usage["cpu_s"] / 2:
            break
        loops *= 2
    findings = {f.id: f for f in result.to_findings()}
    assert "RACE-HANG" not in findings, findings["RACE-HANG"].message
    assert trial.outcome in ("ok", "starved"), trial.failures
    assert trial.duration_s > timeout, (trial.duration_s, loops, trial.usage)  # it did run past it
    assert trial.usage["waited_s"] > trial.usage["cpu_s"] / 2, trial.usage  # waiting for the CPU, counted
    if trial.outcome == "ok":
        assert findings["RACE-SERIALIZED"].status is Status.OK
    assert not survivors(result.config["run_id"])
    assert not survivors(alone.config["run_id"])


# -- the judgement itself, on real processes and on made-up samples -------------------------------
def test_a_sleeping_child_is_stalled_at_its_timeout():
    start = time.monotonic()
    result = run_child(["sleep", "30"], timeout=2, patience=QUICK)
    assert result.timed_out and result.timeout_reason == STALLED
    assert time.monotonic() - start < 5
    assert result.usage["cpu_s"] < 0.1 and result.usage["stopped_s"] == 0


def test_a_child_stopped_past_its_timeout_then_resumed_ends_normally():
    script = "import time; end = time.process_time() + 1\nwhile time.process_time() < end: pass\nprint('{\"done\": true}')"
    log: list = []
    thread = _stop_the_child("time.process_time() + 1", stopped_for=2.5, log=log)  # past the 1 s timeout
    result = run_child([sys.executable, "-c", script], timeout=1, patience=QUICK)
    thread.join()
    assert [e[0] for e in log] == ["stopped", "continued"]
    assert result.ok and not result.timed_out and result.records == [{"done": True}]
    assert result.usage["stopped_s"] >= 2


def test_a_child_waiting_for_its_working_grandchild_is_not_stalled():
    """The shell sleeps in wait() while its child burns CPU: the session's work is the child's progress."""
    busy = "import time; end = time.process_time() + 2.5\nwhile time.process_time() < end: pass"
    script = f"{sys.executable} -c '{busy}'; echo '{{\"done\": true}}'"
    result = run_child(["sh", "-c", script], timeout=1, patience=QUICK)
    assert result.ok and not result.timed_out, result.timeout_reason
    assert result.records == [{"done": True}] and result.usage["cpu_s"] >= 1.0, result.usage


@pytest.mark.parametrize("cpu, waited, stopped, verdict", [
    (9.0, 1.0, 0.0, BUSY),      # ran flat out until the limit: a livelock
    (1.0, 9.0, 0.0, STARVED),   # waited for a CPU most of the time
    (0.5, 0.0, 14.0, STARVED),  # stopped most of the time
])
def test_the_limit_verdict_weighs_running_against_waiting(cpu, waited, stopped, verdict):
    watch = Watch(pid=0, timeout=5, patience=Patience(window_s=1.0, limit_factor=3.0))
    steps = 60
    for i in range(steps + 1):
        f = i / steps
        watch.samples.append(_Sample(15 * f, cpu * f, waited * f, stopped * f))
    assert watch.judge(14.9) is None  # progress in the last window: runs on
    assert watch.judge(15.0) == verdict


def test_waiting_for_the_disk_is_not_a_stall():
    watch = Watch(pid=0, timeout=5, patience=Patience(window_s=1.0, limit_factor=3.0))
    for i in range(41):  # 2 s of work, then 8 s in uninterruptible sleep ('D'): no CPU, no counters yet
        t = i * 0.25
        watch.samples.append(_Sample(t, min(t, 2.0), 0.0, 0.0, 0, max(0.0, t - 2.0)))
    assert watch.judge(10.0) is None
    assert watch.judge(15.0) == STARVED  # held at the limit: never called a hang


def test_no_progress_over_the_window_after_the_timeout_is_stalled():
    watch = Watch(pid=0, timeout=5, patience=Patience(window_s=1.0, limit_factor=3.0))
    for i in range(41):  # 4 s of work, then 6 s of nothing
        t = i * 0.25
        watch.samples.append(_Sample(t, min(t, 4.0), 0.0, 0.0))
    assert watch.judge(4.9) is None  # before the timeout nothing is judged
    assert watch.judge(10.0) == STALLED
