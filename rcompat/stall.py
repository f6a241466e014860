"""Tell a hung child from one starved of CPU, from what the kernel counts for it, not from wall time.

Six cold doctors at once on 2 cores made their race trials miss a 20 s wall-clock deadline while
every worker was alive and runnable, and the trials were reported as hangs. A hung process spends no
CPU time and does not wait for a CPU (its threads sleep on a lock); a starved one does one or the
other, and a slow disk shows as reads and page faults. So at the deadline a child is judged over the
last `window_s` seconds: if it gained CPU time, its threads waited in the run queue, it read, wrote or
faulted pages in, or it was stopped (SIGSTOP, a debugger), the deadline moves on,
up to `limit_factor` times the timeout; otherwise it is a hang. A child still alive at that limit is
"starved" when it spent more time waiting for a CPU (or stopped) than running, else "busy" (a
livelock, or more work than the timeout allows).

Everything is summed over the child's session (it starts in one of its own): a child asleep in wait()
for a grandchild that works, or that waits for a CPU, is making progress.

Sources: /proc/PID/stat fields 3 (state), 6 (session), 12 (major faults) and 14-15 (utime, stime of all the
process's threads, in clock ticks), /proc/PID/io (rchar, wchar, read_bytes) and
/proc/PID/task/TID/schedstat (time on a CPU, time runnable but waiting in the run queue, in ns):
proc(5) and the kernel's Documentation/scheduler/sched-stats.rst. Measured: a trial child resumed
after SIGSTOP spent its next second importing torch with 0.1 s of CPU and 0.2 s of run-queue wait,
the rest in page-ins.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

from rcompat.reaping import session_members

STALLED, STARVED, BUSY = "stalled", "starved", "busy"
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
# Less CPU than this in a window is no progress: a hung serialized trial's main thread still wakes
# 50 times a second to poll its queue (about 1 ms of CPU per second, measured).
MIN_CPU_S = 0.1


@dataclass(frozen=True)
class Patience:
    """How a child's deadline is judged: progress over the last `window_s` seconds extends it, up to
    `limit_factor` times the timeout."""
    window_s: float = 5.0
    limit_factor: float = 5.0

    def window_for(self, timeout: float) -> float:
        return max(0.5, min(self.window_s, timeout / 4))


@dataclass
class _Sample:
    t: float
    cpu_s: float
    waited_s: float
    stopped_s: float
    io: int = 0  # bytes read and written, bytes fetched from storage, major faults: any growth is progress
    blocked_s: float = 0.0  # in uninterruptible sleep ('D': a page fault or read waiting for the disk)


@dataclass
class Watch:
    """Samples one process (`pid`) while it runs; `judge(elapsed)` says when to kill it and why."""
    pid: int
    timeout: float
    patience: Patience = field(default_factory=Patience)
    samples: deque = field(default_factory=lambda: deque(maxlen=4096))
    _task_waits: dict = field(default_factory=dict)
    _waited_s: float = 0.0
    _stopped_s: float = 0.0
    _blocked_s: float = 0.0
    _cpu_s: float = 0.0
    _last_t: float | None = None

    def sample(self, elapsed: float) -> None:
        stat = _read_stat(self.pid)
        if stat is None:  # ended between two looks: communicate() sees it next
            return
        state, cpu_s, major_faults = stat
        members = session_members(self.pid)
        # The child's whole session counts: a child waiting (asleep) for a grandchild that is starved
        # of CPU is not hung (seen: a trial at 0.2 s of CPU, asleep, under a CPU hog on every core).
        # CPU time is kept from falling when a member ends before its parent has reaped it.
        for member in members:
            other = _read_stat(member)
            if other is not None:
                cpu_s += other[1]
                major_faults += other[2]
                state = "D" if other[0] == "D" else state
        cpu_s = self._cpu_s = max(cpu_s, self._cpu_s)
        if self._last_t is not None and state in ("T", "t"):
            self._stopped_s += elapsed - self._last_t
        if self._last_t is not None and state == "D":
            # Waiting for the disk is the machine's load, not the child's hang: a busy disk held a
            # child that had just been resumed in 'D' for over a window (seen under load 35), and
            # its read and fault counters grow only when the read completes.
            self._blocked_s += elapsed - self._last_t
        self._last_t = elapsed
        self._waited_s += self._run_queue_wait_since_last([self.pid, *members])
        self.samples.append(_Sample(elapsed, cpu_s, self._waited_s, self._stopped_s,
                                    major_faults + _io_bytes(self.pid), self._blocked_s))

    def _run_queue_wait_since_last(self, pids: list[int]) -> float:
        """New run-queue wait of the threads of `pids`; a thread that ended keeps what it had."""
        grown = 0.0
        for pid in pids:
            for tid, wait_ns in _task_run_delays(pid).items():
                grown += max(0, wait_ns - self._task_waits.get(tid, 0)) / 1e9
                self._task_waits[tid] = wait_ns
        return grown

    def judge(self, elapsed: float) -> str | None:
        """None: let it run on. STALLED: no progress over the last window after the timeout.
        STARVED / BUSY: still progressing at the limit (timeout x limit_factor)."""
        if elapsed < self.timeout or not self.samples:
            return None
        if elapsed >= self.timeout * self.patience.limit_factor:
            usage = self.usage()
            held = usage["waited_s"] + usage["stopped_s"] + self.samples[-1].blocked_s
            return STARVED if held >= usage["cpu_s"] else BUSY
        window = self.patience.window_for(self.timeout)
        last = self.samples[-1]
        first = next((s for s in reversed(self.samples) if last.t - s.t >= window), None)
        if first is None:  # not a window of samples yet (a timeout shorter than the window)
            return None
        progressed = (last.cpu_s - first.cpu_s >= MIN_CPU_S
                      or last.waited_s - first.waited_s >= window / 2
                      or last.stopped_s > first.stopped_s
                      or last.blocked_s > first.blocked_s
                      or last.io > first.io)
        return None if progressed else STALLED

    def usage(self) -> dict[str, float]:
        """CPU seconds used, seconds waited for a CPU (summed over threads), seconds stopped."""
        if not self.samples:
            return {"cpu_s": 0.0, "waited_s": 0.0, "stopped_s": 0.0}
        last = self.samples[-1]
        return {"cpu_s": round(last.cpu_s, 3), "waited_s": round(last.waited_s, 3),
                "stopped_s": round(last.stopped_s, 3)}


def _read_stat(pid: int) -> tuple[str, float, int] | None:
    """(state, CPU seconds of all threads, major faults)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the name in parentheses may hold spaces
    try:
        return fields[0], (int(fields[11]) + int(fields[12])) * _TICK_S, int(fields[9])
    except (IndexError, ValueError):
        return None


def _io_bytes(pid: int) -> int:
    """rchar + wchar + read_bytes of /proc/PID/io (0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/io", "rb") as fh:
            counters = dict(line.split(b":", 1) for line in fh.read().splitlines() if b":" in line)
        return sum(int(counters.get(key, b"0")) for key in (b"rchar", b"wchar", b"read_bytes"))
    except (OSError, ValueError):
        return 0


def _task_run_delays(pid: int) -> dict[int, int]:
    """Thread id -> ns it has spent runnable but waiting for a CPU (empty without schedstats)."""
    delays = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return delays
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as fh:
                delays[int(tid)] = int(fh.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return delays
