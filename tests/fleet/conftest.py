"""A real Slurm for the fleet tests: Debian's munged, slurmctld and three slurmd on this machine.

Debian's Slurm is built with multiple-slurmd support: one NodeName per node, each with its own Port,
`%n` in the spool/pid/log paths, started as `slurmd -N nX`. Everything is private to the session:
a munge key, socket and pid file under tmp (slurm.conf's AuthInfo=socket= points Slurm at that
munged), free ports picked now, SLURM_CONF passed to every command; the system's daemons, if any,
are neither used nor touched. Daemons run in the foreground as children of this session and are
stopped by pid at its end, always.

The nodes differ through Slurm itself: a TaskProlog exports R_LIBS (a library with an R torch whose
torch_randn segfaults, fixtures/rpkgs/torch-segv) and an LD_LIBRARY_PATH on n2 only. When a step's
environment has RCOMPAT_TEST_HOLD=<dir>, the TaskProlog of n3 writes <dir>/n3-held and waits for
<dir>/release, so a test can take n3 down while its task is running.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NODES = ("n1", "n2", "n3")
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("srun", "sinfo", "scontrol")
READY_S = 90.0


@dataclass
class Cluster:
    root: Path
    conf: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen]
    odd_r_lib: Path
    odd_ld_path: Path

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, env={**os.environ, **self.env})
        if check:
            assert proc.returncode == 0, f"{argv}: {proc.stdout}{proc.stderr}"
        return proc

    def states(self) -> dict[str, str]:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %T").stdout
        return dict(line.split(None, 1) for line in out.splitlines() if line.strip())

    def wait_until(self, want: dict[str, str], what: str) -> None:
        """Wait (for an event, not a speed) until sinfo shows each node of `want` in that state."""
        deadline = time.monotonic() + READY_S
        states = {}
        while time.monotonic() < deadline:
            states = self.states()
            if all(states.get(n) == s for n, s in want.items()):
                return
            time.sleep(0.2)
        logs = "\n".join(p.read_text(errors="replace")[-1500:] for p in sorted((self.root / "log").glob("*.log")))
        raise AssertionError(f"{what}: nodes {states}, wanted {want}\n{logs}")

    def resume(self, node: str) -> None:
        self.run("scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)
        self.wait_until({node: "idle"}, f"{node} back to idle")


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _slurm_conf(root: Path, ports: list[int], host: str) -> str:
    ctld, *node_ports = ports
    nodes = "\n".join(f"NodeName={n} NodeHostname={host} NodeAddr=127.0.0.1 Port={p} CPUs=1"
                      for n, p in zip(NODES, node_ports))
    return f"""ClusterName=rcfleet
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
AuthType=auth/munge
AuthInfo=socket={root}/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
TaskProlog={root}/taskprolog.sh
HealthCheckProgram={root}/healthcheck.sh
HealthCheckInterval=2
HealthCheckNodeState=ANY
InactiveLimit=0
KillWait=2
{nodes}
PartitionName=debug Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


TASK_PROLOG = """#!/bin/sh
# n2 differs from the others: another R library first (a crashing R torch) and an extra library path.
if [ "$SLURMD_NODENAME" = n2 ]; then
  echo "export R_LIBS={odd_r_lib}"
  echo "export LD_LIBRARY_PATH={odd_ld_path}"
fi
if [ -n "$RCOMPAT_TEST_HOLD" ] && [ "$SLURMD_NODENAME" = n3 ]; then
  touch "$RCOMPAT_TEST_HOLD/n3-held"
  i=0
  while [ $i -lt 1200 ] && [ ! -e "$RCOMPAT_TEST_HOLD/release" ]; do sleep 0.1; i=$((i+1)); done
fi
"""

# slurmd runs this on every node every 2 s with only SLURMD_NODENAME set; it does nothing until a test
# writes the commands to run into health.cmd (sourced, with the node's name in $SLURMD_NODENAME).
# ulimit -c 0: slurmd raises its children's core limit, and the odd R library's verification child dies
# on SIGSEGV on purpose; each such check left a 60 MB `core` in the directory slurmd was started from.
HEALTH_CHECK = """#!/bin/sh
[ -s {root}/health.cmd ] || exit 0
ulimit -c 0
exec 9>{root}/health-$SLURMD_NODENAME.lock
flock -n 9 || exit 0  # slurmd starts one every 2 s: never two at once on a node
export SLURM_CONF={conf} PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. {root}/health.cmd >> {root}/log/health-$SLURMD_NODENAME.out 2>&1
"""


def _odd_r_lib(root: Path, r_install) -> Path:
    stage = root / "stage"
    shutil.copytree(REPO / "fixtures" / "rpkgs" / "torch-segv", stage / "torch",
                    ignore=shutil.ignore_patterns("*.o", "*.so"))
    return r_install(root / "odd-rlib", stage / "torch")


def _start(argv: list[str], log: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """A daemon started in `cwd` (the cluster's temporary root), not the checkout: what its children
    leave in their working directory stays there."""
    return subprocess.Popen(argv, stdout=log.open("ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, start_new_session=True, cwd=cwd)


def _stop(procs: dict[str, subprocess.Popen]) -> None:
    for name in reversed(list(procs)):
        proc = procs[name]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs.values():
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory, r_install):
    if os.geteuid() != 0:
        pytest.skip("Slurm's daemons need root here (slurmd runs jobs as their user); run the tests as root")
    missing = [t for t in (*DAEMONS, *CLIENTS) if not shutil.which(t) and not os.path.exists(f"/usr/sbin/{t}")]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (make test installs slurmctld slurmd slurm-client munge)")
    root = tmp_path_factory.mktemp("slurm")
    for sub in ("munge", "state", "log", *(f"spool/{n}" for n in NODES)):
        (root / sub).mkdir(parents=True)
    os.chmod(root / "munge", 0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    odd_ld = root / "odd-ld"
    odd_ld.mkdir()
    odd_r_lib = _odd_r_lib(root, r_install)
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, _free_ports(1 + len(NODES)), socket.gethostname().split(".")[0]))
    for name, text in (("taskprolog.sh", TASK_PROLOG), ("healthcheck.sh", HEALTH_CHECK)):
        (root / name).write_text(text.format(root=root, conf=conf, odd_r_lib=odd_r_lib, odd_ld_path=odd_ld))
        os.chmod(root / name, 0o755)
    env = {"SLURM_CONF": str(conf)}
    full = {**os.environ, **env}
    procs: dict[str, subprocess.Popen] = {}
    try:
        procs["munged"] = _start(["munged", "-F", "--force", f"--key-file={key}", f"--socket={root}/munge/socket",
                                  f"--pid-file={root}/munge/pid", f"--log-file={root}/log/munged.log",
                                  f"--seed-file={root}/munge/seed"], root / "log" / "munged.out", full, root)
        _wait_for(root / "munge" / "socket", procs["munged"], "munged's socket")
        procs["slurmctld"] = _start(["slurmctld", "-D", "-f", str(conf)], root / "log" / "slurmctld.out", full, root)
        for node in NODES:
            procs[f"slurmd-{node}"] = _start(["slurmd", "-D", "-N", node, "-f", str(conf)],
                                             root / "log" / f"slurmd-{node}.out", full, root)
        cluster = Cluster(root=root, conf=conf, env=env, procs=procs, odd_r_lib=odd_r_lib, odd_ld_path=odd_ld)
        cluster.wait_until({n: "idle" for n in NODES}, "the three nodes up")
        yield cluster
    finally:
        _stop(procs)


def _wait_for(path: Path, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + READY_S
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} never appeared (exit {proc.poll()})")
        time.sleep(0.05)
