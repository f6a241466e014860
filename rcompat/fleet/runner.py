"""`rcompat fleet run`: the doctor on every node through Slurm's own srun, one JSON report per node.

One job step, one task per node (`srun -N n --ntasks-per-node=1 --label --no-kill`): each task's
output comes back through srun's I/O forwarding, labelled with its task number, so no shared
filesystem is needed. A small sh wrapper around the command prints the node's name before it and the
command's exit code after it, between marks unique to this run, so a task's lines are tied to its
node whatever srun's task order and whatever the command prints. --no-kill keeps the step running on
the other nodes when one fails. Every node asked for ends with a file `<node>.json`: its report, or a
stand-in report whose one `error` finding says why there is none (not available, node failure, no
rcompat there, rcompat's own error, timed out), written atomically.
"""
from __future__ import annotations

import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from rcompat.errors import UsageError
from rcompat.fleet.hostlist import compress, expand, natural_key
from rcompat.fleet.reader import SCHEMA_VERSION, stand_in
from rcompat.fleet.slurm import node_states, slurm_command
from rcompat.inputs import limit_bytes

WRAPPER = ('mark=$1; shift; printf "%s node %s\\n" "$mark" "${SLURMD_NODENAME:-$(hostname)}"; "$@"; rc=$?; '
           'printf "\\n%s exit %s\\n" "$mark" "$rc"; exit $rc')
_LABELLED = re.compile(r"^\s*(\d+): ?(.*)$")
_NODE_FAILURE = re.compile(r"srun: error: Node failure on (\S+)")
_TASK_END = re.compile(r"srun: error: (\S+): tasks? ([\d,-]+): (.*)")
STDERR_TAIL = 12
CANCEL_GRACE_S = 15.0
MAX_LINE = 1 << 20  # bytes of one output line held at once


@dataclass
class Task:
    """What one task (one node) sent back."""

    rank: int
    part: Path
    node: str | None = None
    exit_code: int | None = None
    size: int = 0
    oversize: bool = False
    stderr: deque = field(default_factory=lambda: deque(maxlen=STDERR_TAIL))
    handle: Any = None


@dataclass
class FleetRun:
    nodes: list[str]                       # every node asked for, in natural order
    files: list[tuple[str, Path]]          # (node, its report or stand-in)
    srun_exit: int | None = None
    cancelled: str | None = None           # "timeout" | "interrupt" | None


def default_command(only: Sequence[str] | None = None) -> list[str]:
    """The doctor with this very interpreter (the same path must exist on the nodes)."""
    argv = [sys.executable, "-m", "rcompat", "doctor", "--format", "json", "--quiet"]
    for area in only or ():
        argv += ["--only", area]
    return argv


def target_nodes(nodelist: str | None, partition: str | None, inside: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """(nodes to run on, {node: why not} for nodes asked for that take no step now)."""
    in_allocation = bool(inside.get("SLURM_JOB_ID"))
    if nodelist:
        nodes = expand(nodelist)
    elif partition:
        nodes = []
    elif inside.get("SLURM_JOB_NODELIST"):
        nodes = expand(inside["SLURM_JOB_NODELIST"])
    else:
        raise UsageError("say which nodes: --partition P, --nodelist 'n[1-16]', or run inside an allocation "
                         "(salloc/sbatch), whose nodes are used")
    bad = [n for n in nodes if "/" in n or n.startswith(".")]
    if bad:
        raise UsageError(f"not a node name: {bad[0]!r}")
    if in_allocation and not partition:
        return sorted(dict.fromkeys(nodes), key=natural_key), {}
    states = node_states(nodes or None, partition)
    known = {s.node: s for s in states}
    wanted = nodes or [s.node for s in states]
    unusable = {n: (known[n].why() if n in known else "Slurm does not know this node") for n in wanted
                if n not in known or not known[n].available}
    return [n for n in sorted(dict.fromkeys(wanted), key=natural_key) if n not in unusable], unusable


def srun_argv(nodes: list[str], command: Sequence[str], mark: str, *, partition: str | None = None,
              account: str | None = None, time_limit: str | None = None, in_allocation: bool = False,
              extra: Sequence[str] = ()) -> list[str]:
    argv = [slurm_command("srun"), "--no-kill", "--label", "--kill-on-bad-exit=0", "--job-name=rcompat-fleet",
            "-N", str(len(nodes)), "--ntasks-per-node=1", f"--nodelist={compress(nodes)}"]
    if in_allocation:
        argv.append("--overlap")  # share the allocation with the steps already running in it
    for option, value in (("--partition", partition), ("--account", account), ("--time", time_limit)):
        if value:
            argv.append(f"{option}={value}")
    return [*argv, *extra, "/bin/sh", "-c", WRAPPER, "rcompat-fleet", mark, *command]


def run_fleet(out_dir: Path, *, nodelist: str | None = None, partition: str | None = None,
              account: str | None = None, time_limit: str | None = None, command: Sequence[str] | None = None,
              only: Sequence[str] | None = None, timeout: float = 900.0, srun_args: Sequence[str] = (),
              progress=None, env: dict[str, str] | None = None) -> FleetRun:
    environment = dict(os.environ if env is None else env)
    nodes, unusable = target_nodes(nodelist, partition, environment)
    everyone = sorted([*nodes, *unusable], key=natural_key)
    out_dir.mkdir(parents=True, exist_ok=True)
    command = list(command) if command else default_command(only)
    files = {node: _write_stand_in(out_dir, node, "FLEET-NODE-UNAVAILABLE", f"{node} not run: {why}", why,
                                   "Resume the node (scontrol update NodeName=… State=RESUME) once it is fixed, "
                                   "then run again.") for node, why in unusable.items()}
    run = FleetRun(nodes=everyone, files=[])
    if nodes:
        mark = f"rcompat-fleet-{secrets.token_hex(8)}"
        argv = srun_argv(nodes, command, mark, partition=partition, account=account, time_limit=time_limit,
                         in_allocation=bool(environment.get("SLURM_JOB_ID")) and not partition, extra=srun_args)
        step = _Step(argv, out_dir, mark, len(nodes), progress, environment)
        try:
            run.srun_exit, run.cancelled = step.run(timeout)
        except BaseException:  # Ctrl-C: the step is cancelled; leave no part file behind
            step.close()
            step.discard()
            raise
        step.close()
        files.update(_collect(step, nodes, out_dir, command, run.cancelled, timeout))
    run.files = [(node, files[node]) for node in everyone]
    return run


class _Step:
    """One srun: its stdout parsed line by line into per-task files, its stderr kept as a tail."""

    def __init__(self, argv: list[str], out_dir: Path, mark: str, total: int, progress, env: dict[str, str]) -> None:
        self.argv, self.out_dir, self.mark, self.total, self.progress = argv, out_dir, mark, total, progress
        self.env = env
        self.tasks: dict[int, Task] = {}
        self.node_failures: set[str] = set()
        self.task_ends: dict[str, str] = {}     # node -> srun's word on how its task ended
        self.srun_errors: deque = deque(maxlen=STDERR_TAIL)
        self.answered = 0
        self.limit = limit_bytes("json")
        self.lock = threading.Lock()

    def run(self, timeout: float) -> tuple[int | None, str | None]:
        self._note()
        proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=self.env)  # Ctrl-C reaches rcompat, which cancels
        readers = [threading.Thread(target=self._read_stdout, args=(proc.stdout,), daemon=True),
                   threading.Thread(target=self._read_stderr, args=(proc.stderr,), daemon=True)]
        for reader in readers:
            reader.start()
        cancelled = None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            cancelled = "timeout"
            _cancel(proc)
        except KeyboardInterrupt:
            _cancel(proc)
            for reader in readers:
                reader.join(timeout=CANCEL_GRACE_S)
            raise
        for reader in readers:
            reader.join(timeout=CANCEL_GRACE_S)
        return proc.returncode, cancelled

    def _note(self) -> None:
        if self.progress is not None:
            self.progress.note(f"{self.answered}/{self.total} nodes")

    def _task(self, rank: int) -> Task:
        task = self.tasks.get(rank)
        if task is None:
            part = self.out_dir / f".rcompat-fleet-task-{rank}.{os.getpid()}.part"
            task = self.tasks[rank] = Task(rank=rank, part=part, handle=open(part, "w", encoding="utf-8"))
        return task

    def _read_stdout(self, stream) -> None:
        node_mark, exit_mark = f"{self.mark} node ", f"{self.mark} exit "
        for raw in iter(lambda: stream.readline(MAX_LINE), b""):  # a longer line's rest has no label: dropped
            line = raw.decode("utf-8", "surrogateescape").rstrip("\n")
            match = _LABELLED.match(line)
            if not match:
                continue
            task = self._task(int(match.group(1)))
            text = match.group(2)
            if text.startswith(node_mark) and task.node is None:
                task.node = text[len(node_mark):].strip()
            elif text.startswith(exit_mark):
                task.exit_code = int(text[len(exit_mark):].strip() or -1)
                with self.lock:
                    self.answered += 1
                    self._note()
            elif not task.oversize:
                task.size += len(text) + 1
                task.oversize = task.size > self.limit
                task.handle.write(text + "\n")

    def _read_stderr(self, stream) -> None:
        for raw in iter(lambda: stream.readline(MAX_LINE), b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            match = _LABELLED.match(line)
            if match:
                self._task(int(match.group(1))).stderr.append(match.group(2))
                continue
            failure = _NODE_FAILURE.search(line)
            if failure:
                self.node_failures.add(failure.group(1))
            ended = _TASK_END.search(line)
            if ended:
                self.task_ends[ended.group(1)] = ended.group(3)
            if line.strip():
                self.srun_errors.append(line.strip())

    def close(self) -> None:
        for task in self.tasks.values():
            if task.handle is not None:
                task.handle.close()
                task.handle = None

    def discard(self) -> None:
        for task in self.tasks.values():
            task.part.unlink(missing_ok=True)


def _cancel(proc: subprocess.Popen) -> None:
    """Cancel the step as a user would: srun ends the step on a second SIGINT within a second."""
    for _ in range(2):
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        proc.wait(timeout=CANCEL_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _collect(step: _Step, nodes: list[str], out_dir: Path, command: list[str], cancelled: str | None,
             timeout: float) -> dict[str, Path]:
    from rcompat.documents import parse_json
    from rcompat.errors import RcompatError

    by_node = {task.node: task for task in step.tasks.values() if task.node}
    files: dict[str, Path] = {}
    for node in nodes:
        task = by_node.get(node)
        target = out_dir / f"{node}.json"
        report = None
        if task is not None and task.exit_code is not None and not task.oversize:
            try:
                report = parse_json(task.part.read_bytes(), f"output of {node}")
            except RcompatError:
                report = None
        if isinstance(report, dict) and report.get("schema_version") == SCHEMA_VERSION:
            os.replace(task.part, target)
            files[node] = target
            continue
        files[node] = _write_stand_in(out_dir, node, "FLEET-NO-ANSWER", *_why_no_report(
            node, task, step, command, cancelled, timeout))
    for task in step.tasks.values():
        task.part.unlink(missing_ok=True)
    return files


def _why_no_report(node: str, task: Task | None, step: _Step, command: list[str], cancelled: str | None,
                   timeout: float) -> tuple[str, str, str]:
    """(title, message, remedy) of a node that sent no report."""
    said = " ".join(line.strip() for line in (task.stderr if task else ()) if line.strip())[-400:]
    shown = shlex.join(command)
    if task is not None and task.exit_code is not None:
        if task.exit_code in (126, 127):
            return (f"{node}: the command could not run there (exit {task.exit_code})",
                    f"`{shown}` was not found or not executable on {node}" + (f": {said}" if said else ""),
                    "Install rcompat on the node at the same path (or a shared one), or give --command.")
        if task.oversize:
            return f"{node}: its report is over the size limit", said, "Raise RCOMPAT_MAX_JSON_MB."
        return (f"{node}: no report (exit {task.exit_code})",
                f"`{shown}` exited {task.exit_code} on {node} without a JSON report" + (f": {said}" if said else ""),
                "Run the command on the node by hand to see its error; exit 2 is rcompat's own error.")
    if node in step.node_failures:
        return (f"{node} did not answer: node failure", f"srun: node failure on {node} during the run",
                "See `scontrol show node` for why Slurm lost it.")
    if cancelled == "timeout":
        return (f"{node} did not answer within {timeout:g} s", "the step was cancelled at the time limit",
                "Raise --timeout, or look for what hangs on the node (a GPU, a filesystem).")
    ended = step.task_ends.get(node)
    detail = ended or (" ".join(step.srun_errors)[-400:] or "srun gave no reason")
    return f"{node} did not answer", f"no output came back from {node}: {detail}", ""


def _write_stand_in(out_dir: Path, node: str, fid: str, title: str, message: str, remedy: str = "") -> Path:
    import json

    from rcompat.atomic import write_text_atomic

    target = out_dir / f"{node}.json"
    write_text_atomic(target, json.dumps(stand_in(node, fid, title, message, remedy), indent=2) + "\n")
    return target
