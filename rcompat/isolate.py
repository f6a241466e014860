"""Run whatever may crash or hang in a child process, and turn its end into facts.

Loading R torch's native code, initialising CUDA and race trials can segfault, abort or hang; in the
parent that would end the tool. Every engine uses this one helper: the child runs in its own process
group (so a timeout kills its grandchildren too), is always reaped, and reports progress as JSON lines
on stdout (`{"step": "..."}` marks where it is), so a crash can name the step it was in.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from rcompat.child_pipes import collect
from rcompat.model import Finding, Status
from rcompat.reaping import kill_tree, pipe_inode

if TYPE_CHECKING:
    from rcompat.stall import Patience

TAIL_LINES = 20
POLL_S = 0.25  # how often a patient run looks at its child


@dataclass
class ChildResult:
    argv: list[str]
    returncode: int | None
    timed_out: bool
    duration_s: float
    stdout: str
    stderr: str
    records: list[dict[str, Any]] = field(default_factory=list)
    # A patient run (rcompat.stall) only: why the child was killed (stalled, starved, busy) and what it
    # used: {"cpu_s", "waited_s", "stopped_s"}.
    timeout_reason: str | None = None
    usage: dict[str, float] | None = None
    output_cut: dict[str, int] = field(default_factory=dict)  # stream -> bytes dropped between head and tail
    timeout_s: float | None = None

    @property
    def signal(self) -> int | None:
        """The signal that ended the child (POSIX reports it as a negative return code)."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        # A shell or R wrapper reports "killed by signal N" as 128+N.
        if self.returncode is not None and 128 < self.returncode < 128 + 65 and self.stderr_mentions_signal():
            return self.returncode - 128
        return None

    @property
    def signal_name(self) -> str | None:
        sig = self.signal
        if sig is None:
            return None
        try:
            return signal.Signals(sig).name
        except ValueError:
            return f"signal {sig}"

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.returncode == 0

    @property
    def last_step(self) -> str | None:
        for rec in reversed(self.records):
            if "step" in rec:
                return str(rec["step"])
        return None

    def stderr_mentions_signal(self) -> bool:
        text = self.stderr.lower()
        return any(w in text for w in ("segmentation fault", "segfault", "aborted", "caught segfault",
                                       "killed", "bus error"))

    def tail(self, n: int = TAIL_LINES) -> str:
        lines = (self.stdout.rstrip("\n") + "\n" + self.stderr.rstrip("\n")).strip("\n").splitlines()
        return "\n".join(lines[-n:])

    def describe_end(self) -> str:
        if self.timed_out and self.timeout_reason == "starved":
            return f"starved of CPU: timed out with no result within {self.duration_s:.0f} s; killed"
        if self.timed_out:
            return f"hung: timed out with no result within {self.duration_s:.0f} s; killed"
        if self.signal_name:
            return f"killed by {self.signal_name}"
        return f"exited with status {self.returncode}"

    def to_evidence(self) -> dict[str, Any]:
        return {"command": " ".join(self.argv), "returncode": self.returncode, "signal": self.signal_name,
                "timed_out": self.timed_out, "duration_s": round(self.duration_s, 3),
                "last_step": self.last_step, "output_tail": self.tail(),
                **({"output_cut_bytes": self.output_cut} if self.output_cut else {}),
                **({"timeout_reason": self.timeout_reason, "usage": self.usage} if self.usage is not None else {})}


def run_child(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None,
              cwd: str | None = None, stdin: str | None = None, patience: "Patience | None" = None) -> ChildResult:
    """Run `argv`, kill its whole process group on timeout, parse JSON lines from stdout.

    With `patience` (rcompat.stall) the timeout is not a wall-clock limit: a child still making
    progress at the timeout (CPU time, waiting for a CPU) runs on, up to the patience's limit, and
    the result says why it was killed and what it used.

    The child gets a temporary directory of its own (TMPDIR), removed when it has ended: R creates
    /tmp/RtmpXXXXXX in every session and removes it only on a clean exit, so a child killed on a
    SIGSEGV or a timeout, or an embedded R that never runs its exit handlers, would leave one behind
    per run. A caller that sets TMPDIR itself keeps it."""
    start = time.monotonic()
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    private_tmp = None if env and "TMPDIR" in env else tempfile.mkdtemp(prefix="rcompat-child-")
    if private_tmp:
        full_env.update(TMPDIR=private_tmp, TMP=private_tmp, TEMP=private_tmp)
    started: list[int] = []  # the child's pid, once it runs
    try:
        return _run(argv, timeout, full_env, cwd, stdin, start, patience, started)
    finally:
        if private_tmp:
            from rcompat.termination import despite_interrupts

            despite_interrupts(_remove_private_tmp, private_tmp, started)


def _remove_private_tmp(path: str, started: list[int]) -> None:
    """Remove a child's TMPDIR. After a kill (time-out, interrupt) the child is reaped but processes it
    started may still be exiting and writing there (SIGKILL is not instant), so a directory that
    survives the first removal is removed again once no process of the child's session still runs
    (bounded: 2 s)."""
    shutil.rmtree(path, ignore_errors=True)
    if started and os.path.exists(path):
        from rcompat.reaping import running_session_members

        deadline = time.monotonic() + 2.0
        while running_session_members(started[0]) and time.monotonic() < deadline:
            time.sleep(0.01)  # waits for an event (the session empty), bounded; not for a speed
        shutil.rmtree(path, ignore_errors=True)


def _run(argv: Sequence[str], timeout: float, full_env: dict[str, str], cwd: str | None,
         stdin: str | None, start: float, patience: "Patience | None", started: list[int]) -> ChildResult:
    global _started
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                env=full_env, cwd=cwd, start_new_session=True)
    except (OSError, ValueError) as exc:
        return ChildResult(list(argv), 127, False, 0.0, "", f"cannot start {argv[0]}: {exc}")
    started.append(proc.pid)
    _autogroup_nice(proc.pid)
    inodes = [i for i in (pipe_inode(proc.stdout.fileno()), pipe_inode(proc.stderr.fileno())) if i]
    with _live_lock:
        _live[proc] = inodes
        _started += 1
        _live_lock.notify_all()
        if _stopping.is_set():  # interrupted while this one started: it must not outlive the others
            kill_tree(proc.pid, inodes)
    got = None
    try:
        tick = None
        if patience is not None:
            from rcompat.stall import Watch

            watch = Watch(proc.pid, timeout, patience)
            watch.sample(0.0)

            def tick(elapsed: float) -> str | None:
                watch.sample(elapsed)
                return watch.judge(elapsed)
        got = collect(proc, stdin.encode("utf-8") if stdin is not None else None,
                      None if patience is not None else start + timeout, tick,
                      lambda reaped: kill_tree(proc.pid, inodes, reaped=reaped), start, POLL_S)
    finally:
        if proc.poll() is None:  # killed above, or interrupted (KeyboardInterrupt): never leave one behind
            kill_tree(proc.pid, inodes)
            proc.wait()
        for pipe in (proc.stdout, proc.stderr, proc.stdin):
            if pipe is not None:
                pipe.close()
        with _live_lock:
            _live.pop(proc, None)
    out, err = got.text("stdout"), got.text("stderr")
    return ChildResult(list(argv), proc.returncode, got.timed_out, time.monotonic() - start, out, err,
                       parse_json_lines(out), got.reason, watch.usage() if patience is not None else None,
                       output_cut=got.cut, timeout_s=timeout)


def _autogroup_nice(pid: int) -> None:
    """The child's scheduling group at the nice value of the thread that started it.

    A child starts a session of its own (start_new_session, so its whole tree can be killed), and
    where the kernel groups tasks by session (CONFIG_SCHED_AUTOGROUP, on by default in Debian's and
    most distributions' kernels: /proc/sys/kernel/sched_autogroup_enabled) the CPU is shared between
    the groups first, each group's nice value weighing it, and a task's own nice value counts only
    inside its group: a child at nice 10 alone in its session competed with the doctor's race trial
    as an equal. Its group gets the starting thread's nice value (rcompat.areas.BACKGROUND_NICE), so
    it yields as meant. Raising a nice value needs no privilege; failures (no autogroup, another
    kernel, the kernel's limit of one change per 100 ms for unprivileged callers) leave it as it was."""
    if not sys.platform.startswith("linux"):
        return
    try:
        nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        if nice > 0:
            with open(f"/proc/{pid}/autogroup", "w") as group:
                group.write(str(nice))
    except (OSError, AttributeError):
        pass


_live: dict[subprocess.Popen, list[int]] = {}
_live_lock = threading.Condition()
_started = 0  # children this process has started


def children_started() -> int:
    """How many children this process has started so far (a count to hand wait_for_next_child)."""
    with _live_lock:
        return _started


def wait_for_next_child(count: int, thread: threading.Thread, timeout: float) -> bool:
    """Until a child beyond the first `count` has started, `thread` has ended, or `timeout` seconds;
    whether a child started: the doctor's start_early lets its first fact's thread start that fact's
    child before any other."""
    deadline = time.monotonic() + timeout
    with _live_lock:
        while _started <= count and thread.is_alive() and (left := deadline - time.monotonic()) > 0:
            _live_lock.wait(min(left, 0.01))  # a thread ending does not notify: look again soon
        return _started > count


_stopping = threading.Event()


@contextmanager
def children_stopped_on_interrupt() -> Iterator[None]:
    """For callers that wait on threads running children (the doctor): only the main thread sees a
    KeyboardInterrupt, and a child in its own session does not get the terminal's SIGINT, so on any
    exception leaving the block every running child's group is killed, and children started while the
    threads wind down are killed at once."""
    try:
        yield
    except BaseException:
        _stopping.set()
        with _live_lock:
            for proc, inodes in list(_live.items()):
                kill_tree(proc.pid, inodes)
        raise


def allow_children() -> None:
    """Children may run again (after children_stopped_on_interrupt() stopped them and its threads ended)."""
    _stopping.clear()


def parse_json_lines(text: str) -> list[dict[str, Any]]:
    """JSON objects one per line; other lines (R's chatter, warnings) are ignored, and so is a line
    nested deeper than a user's document may be (rcompat.documents), which json.loads would answer
    with a RecursionError."""
    from rcompat.documents import parse_json
    from rcompat.errors import RcompatError

    records = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                obj = parse_json(line, "a child's JSON line")
            except RcompatError:
                continue
            if isinstance(obj, dict):
                records.append(obj)
    return records


def run_python_child(module: str, args: Sequence[str] = (), *, timeout: float,
                     env: Mapping[str, str] | None = None, python: str | None = None,
                     patience: "Patience | None" = None) -> ChildResult:
    """Run `python -m module args…` with this interpreter (so the child sees the same packages), or
    with `python` (another venv's packages), and this very rcompat first on PYTHONPATH, even when it
    was put on sys.path by hand (reticulate).

    For another interpreter only rcompat itself is put on its path, through a private directory
    holding a link to the package: the directory rcompat lives in is, for a normal install, this
    environment's site-packages, and would hand the other interpreter this one's numpy and torch."""
    package = Path(__file__).resolve().parent
    inherited = (env or {}).get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    if python is None:
        return _run_with_path([sys.executable, "-m", module, *args], str(package.parent), inherited, timeout, env,
                              patience)
    with tempfile.TemporaryDirectory(prefix="rcompat-path-") as only_rcompat:
        os.symlink(package, os.path.join(only_rcompat, package.name))
        return _run_with_path([python, "-m", module, *args], only_rcompat, inherited, timeout, env, patience)


def _run_with_path(argv: list[str], first: str, inherited: str, timeout: float,
                   env: Mapping[str, str] | None, patience: "Patience | None") -> ChildResult:
    pythonpath = os.pathsep.join(p for p in (first, inherited) if p)
    return run_child(argv, timeout=timeout, env={**(env or {}), "PYTHONPATH": pythonpath}, patience=patience)


def child_failure(result: ChildResult, *, id: str, area: str, what: str, remedy: str,
                  source: str = "") -> Finding:
    """A `fail` finding for a child that crashed, hung or exited non-zero while doing `what`."""
    step = result.last_step
    where = f" during step '{step}'" if step else ""
    return Finding(id=id, area=area, status=Status.FAIL, title=f"{what}: {result.describe_end()}",
                   message=f"{what} {result.describe_end()}{where}.", remedy=remedy,
                   evidence=result.to_evidence(), source=source)


def emit(record: Mapping[str, Any]) -> None:
    """Child side: one JSON line, flushed at once so a crash right after it still leaves it behind."""
    sys.stdout.write(json.dumps(dict(record), default=str) + "\n")
    sys.stdout.flush()
