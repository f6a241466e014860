"""The few Slurm commands the fleet needs, run as a user would: sinfo for the nodes of a partition
and their states, scontrol to drain a node. No Slurm library: the commands are the stable interface."""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from rcompat.errors import RcompatError, UsageError
from rcompat.fleet.hostlist import compress, natural_key

# States in which a node takes no new job step (sinfo %T, lower case; a trailing * means it does not
# respond). slurm.conf(5) and sinfo(1) "NODE STATE CODES".
UNAVAILABLE = ("down", "drained", "draining", "drain", "fail", "failing", "future", "inval", "maint",
               "powered_down", "powering_down", "powering_up", "reboot_issued", "reboot_requested", "unknown")
# HealthCheckProgram runs with almost no environment (no PATH): look where Debian and a source build put them.
FALLBACK_DIRS = ("/usr/bin", "/usr/local/bin", "/opt/slurm/bin", "/usr/sbin")
COMMAND_TIMEOUT_S = 60.0


def slurm_command(name: str) -> str:
    found = shutil.which(name) or next((os.path.join(d, name) for d in FALLBACK_DIRS
                                        if os.access(os.path.join(d, name), os.X_OK)), None)
    if not found:
        raise RcompatError(f"{name} not found: run this on a node of the Slurm cluster (a login node), "
                           "where Slurm's client commands are installed")
    return found


@dataclass(frozen=True)
class NodeState:
    node: str
    state: str      # sinfo's %T, e.g. idle, mixed, drained, down*
    reason: str     # sinfo's %E ("none" when there is none)

    @property
    def available(self) -> bool:
        base = self.state.rstrip("*~#!%$@^-+").lower()
        return not self.state.endswith("*") and not any(part in UNAVAILABLE for part in base.split("+"))

    def why(self) -> str:
        text = f"node is {self.state.upper()}"
        if self.state.endswith("*"):
            text += " (not responding)"
        return text + (f": {self.reason}" if self.reason and self.reason != "none" else "")


def node_states(nodes: list[str] | None = None, partition: str | None = None) -> list[NodeState]:
    """The state of each node named, or of every node of `partition`, in natural order."""
    argv = [slurm_command("sinfo"), "-h", "-N", "-o", "%N|%T|%E"]
    if partition:
        argv += ["-p", partition]
    if nodes:
        argv += ["-n", compress(nodes)]
    out = _run(argv)
    seen: dict[str, NodeState] = {}
    for line in out.splitlines():
        node, _, rest = line.partition("|")
        state, _, reason = rest.partition("|")
        if node.strip():
            seen.setdefault(node.strip(), NodeState(node.strip(), state.strip(), reason.strip()))
    if partition and not seen:
        raise UsageError(f"partition {partition} has no nodes (or does not exist): see `sinfo -s`")
    return sorted(seen.values(), key=lambda s: natural_key(s.node))


def drain(node: str, reason: str) -> None:
    """Set `node` DRAIN with `reason`, as NHC does (`scontrol update NodeName=… State=DRAIN Reason=…`)."""
    _run([slurm_command("scontrol"), "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"])


def _run(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RcompatError(f"{os.path.basename(argv[0])} did not answer within {COMMAND_TIMEOUT_S:g} s "
                           "(is slurmctld up?)") from None
    if proc.returncode != 0:
        detail = " ".join((proc.stderr or proc.stdout).split())[:300]
        raise RcompatError(f"{os.path.basename(argv[0])} failed (exit {proc.returncode}): {detail}")
    return proc.stdout
