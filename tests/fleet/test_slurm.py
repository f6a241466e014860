"""`rcompat fleet run` and `fleet health-check` on a real Slurm (tests/fleet/conftest.py): three
nodes, n2 made to differ by a TaskProlog, n3 taken down in the middle of a run."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = pytest.mark.serial  # daemons of their own, but one Slurm state shared by these tests
REPO = Path(__file__).resolve().parents[2]


def fleet(cluster, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rcompat", "fleet", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(REPO), env={**os.environ, **cluster.env, **(env or {})})


@contextmanager
def held_run(cluster, hold: Path, *args: str):
    """A `fleet run` whose task on n3 waits in the TaskProlog: yields the process once n3 is held, and
    lets n3 go (and the process end) on the way out, whatever happened."""
    hold.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "rcompat", "fleet", "run", "-w", "n[1-3]", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO),
                            env={**os.environ, **cluster.env, "RCOMPAT_TEST_HOLD": str(hold)})
    try:
        deadline = time.monotonic() + 120
        while not (hold / "n3-held").exists():  # n3's task is held in its TaskProlog
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        yield proc
    finally:
        (hold / "release").touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _fleet_json(report_file: Path) -> dict:
    return json.loads(report_file.read_text())["facts"]["fleet"]


@pytest.fixture(scope="session")
def r_fleet_run(slurm_cluster, tmp_path_factory):
    """One run of the doctor's r area on the three nodes (R's first probe is the slow part of the session)."""
    out_dir = tmp_path_factory.mktemp("fleet-r")
    report = out_dir.parent / f"{out_dir.name}-report.json"
    proc = fleet(slurm_cluster, "run", "-w", "n[1-3]", "-o", str(out_dir / "nodes"), "--only", "r",
                 "--format", "json", "--report", str(report), timeout=600)
    return proc, out_dir / "nodes", report


def test_each_node_answers_through_srun_and_n2_is_named(r_fleet_run, slurm_cluster):
    proc, nodes, report = r_fleet_run
    assert proc.returncode == 1, proc.stderr
    assert sorted(p.name for p in nodes.iterdir()) == ["n1.json", "n2.json", "n3.json"]
    for node in ("n1", "n2", "n3"):
        data = json.loads((nodes / f"{node}.json").read_text())
        assert data["command"] == "doctor" and any(f["id"] == "R-VERSION" for f in data["findings"])
    fleet_view = _fleet_json(report)
    verify = next(r for r in fleet_view["findings"] if r["id"] == "R-TORCH-VERIFY")
    assert verify["by_status"]["fail"]["nodes"] == "n2", verify  # the torch the TaskProlog put first crashes
    assert "SIGSEGV" in verify["by_status"]["fail"]["message"] + verify["by_status"]["fail"]["title"]
    assert verify["majority"] == "skip" and verify["by_status"]["skip"]["nodes"] == "n[1,3]"
    paths = next(d for d in fleet_view["differences"] if d["path"] == "r.lib_paths")
    assert paths["outliers"][0]["nodes"] == "n2" and str(slurm_cluster.odd_r_lib) in paths["outliers"][0]["value"]
    assert paths["majority"]["nodes"] == "n[1,3]"
    torch = next(d for d in fleet_view["differences"] if d["path"] == "r.packages.torch.version")
    assert torch["must_agree"] and torch["outliers"] == [{"value": "0.12.0", "count": 1, "nodes": "n2"}]


def test_report_of_the_run_directory_says_the_same(r_fleet_run, tmp_path):
    proc, nodes, report = r_fleet_run
    again = subprocess.run([sys.executable, "-m", "rcompat", "fleet", "report", str(nodes), "--format", "json"],
                           capture_output=True, text=True, timeout=120, cwd=str(REPO))
    assert again.returncode == 1
    assert json.loads(again.stdout)["facts"]["fleet"]["differences"] == _fleet_json(report)["differences"]


def test_a_node_taken_down_mid_run_is_a_finding(slurm_cluster, tmp_path):
    out_dir, report = tmp_path / "nodes", tmp_path / "report.json"
    try:
        with held_run(slurm_cluster, tmp_path / "hold", "-o", str(out_dir), "--only", "system", "--format", "json",
                      "--report", str(report)) as proc:
            slurm_cluster.run("scontrol", "update", "NodeName=n3", "State=DOWN", "Reason=pulled-mid-run")
            stdout, stderr = proc.communicate(timeout=300)
    finally:
        slurm_cluster.resume("n3")
    assert proc.returncode == 1, stderr
    n3 = json.loads((out_dir / "n3.json").read_text())
    assert [f["id"] for f in n3["findings"]] == ["FLEET-NO-ANSWER"]
    assert "node failure" in n3["findings"][0]["title"]
    for node in ("n1", "n2"):
        assert json.loads((out_dir / f"{node}.json").read_text())["command"] == "doctor"
    view = _fleet_json(report)
    no_answer = next(r for r in view["findings"] if r["id"] == "FLEET-NO-ANSWER")
    assert no_answer["by_status"]["error"]["nodes"] == "n3"
    assert not list(out_dir.glob(".*.part"))


def test_a_drained_node_is_reported_and_not_run(slurm_cluster, tmp_path):
    slurm_cluster.run("scontrol", "update", "NodeName=n3", "State=DRAIN", "Reason=maintenance-window")
    try:
        proc = fleet(slurm_cluster, "run", "-p", "debug", "-o", str(tmp_path / "nodes"), "--only", "system",
                     "--format", "json")
    finally:
        slurm_cluster.resume("n3")
    assert proc.returncode == 1, proc.stderr
    n3 = json.loads((tmp_path / "nodes" / "n3.json").read_text())["findings"][0]
    assert n3["id"] == "FLEET-NODE-UNAVAILABLE" and "DRAINED: maintenance-window" in n3["title"]
    view = json.loads(proc.stdout)["facts"]["fleet"]
    assert view["nodes"]["hostlist"] == "n[1-3]"
    sys_os = next(r for r in view["findings"] if r["id"] == "SYS-OS")
    assert sys_os["by_status"]["ok"]["nodes"] == "n[1-2]"


def test_a_node_without_the_command_is_a_finding_not_a_crash(slurm_cluster, tmp_path):
    proc = fleet(slurm_cluster, "run", "-w", "n[1-3]", "-o", str(tmp_path / "nodes"),
                 "--command", "/nonexistent/python -m rcompat doctor --format json", "--format", "json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    row = json.loads(proc.stdout)["facts"]["fleet"]["findings"][0]
    assert row["id"] == "FLEET-NO-ANSWER" and row["by_status"]["error"]["nodes"] == "n[1-3]"
    assert "exit 127" in row["by_status"]["error"]["title"]


def test_rcompat_failing_on_a_node_is_reported_with_its_error(slurm_cluster, tmp_path):
    proc = fleet(slurm_cluster, "run", "-w", "n1", "-o", str(tmp_path / "nodes"), "--only", "no-such-area")
    assert proc.returncode == 1
    assert "exited 2 on n1" in proc.stdout and "unknown area 'no-such-area'" in proc.stdout


def _health(cluster, command: str) -> None:
    (cluster.root / "health.cmd").write_text(command + "\n")


@contextmanager
def _health_stopped(cluster):
    """Empty health.cmd, then hold every node's health-check lock for the block: a check already
    running (R's verification takes seconds) ends first, and none starts meanwhile. Emptying the file
    alone let a check started before it end after the test's resume and drain n2 again, failing the
    next test's wait for idle nodes."""
    (cluster.root / "health.cmd").write_text("")
    held = []
    try:
        for node in ("n1", "n2", "n3"):
            lock = open(cluster.root / f"health-{node}.lock", "a")
            held.append(lock)
            fcntl.flock(lock, fcntl.LOCK_EX)  # waits for the check in flight to end: an event, not a speed
        yield
    finally:
        for lock in held:
            lock.close()


def _wait_for_line(path: Path, text: str) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"{path} never said {text!r}: {path.read_text() if path.exists() else '(missing)'}")


def test_health_check_program_drains_the_failing_node_only(slurm_cluster, private_cache_dir):
    cluster = slurm_cluster
    logs = cluster.root / "log"
    _health(cluster, f'export HOME=/root XDG_CACHE_HOME={private_cache_dir}\n'
                     f'[ "$SLURMD_NODENAME" = n2 ] && export R_LIBS={cluster.odd_r_lib}\n'
                     f'{sys.executable} -m rcompat fleet health-check --drain --only r --budget 50')
    try:
        cluster.wait_until({"n2": "drained"}, "n2 drained by its health check")
        _wait_for_line(logs / "health-n1.out", "rcompat: healthy")
        reason = cluster.run("sinfo", "-h", "-N", "-n", "n2", "-o", "%E").stdout.strip()
        assert reason.startswith("rcompat: FAIL R-TORCH-VERIFY"), reason
        assert cluster.states()["n1"] == "idle" and cluster.states()["n3"] == "idle"
    finally:
        with _health_stopped(cluster):
            cluster.resume("n2")


def test_rcompat_own_failure_never_drains(slurm_cluster):
    cluster = slurm_cluster
    out = cluster.root / "log" / "health-n1.out"
    marker = f"own-failure-{time.monotonic_ns()}"
    _health(cluster, f'[ "$SLURMD_NODENAME" = n1 ] || exit 0\necho {marker}\n'
                     f'{sys.executable} -m rcompat fleet health-check --drain --only no-such-area; echo "exit $?"')
    try:
        _wait_for_line(out, marker)
        _wait_for_line(out, "exit 2")
        text = out.read_text()
        assert "health check could not run" in text[text.index(marker):]
        assert cluster.states()["n1"] == "idle"
    finally:
        with _health_stopped(cluster):
            pass


def test_ctrl_c_cancels_the_step_and_leaves_no_part_file(slurm_cluster, tmp_path):
    import signal

    out_dir = tmp_path / "nodes"
    with held_run(slurm_cluster, tmp_path / "hold", "-o", str(out_dir), "--only", "system", "--quiet") as proc:
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in stderr, stderr
    assert stdout == "" and not list(out_dir.glob(".*.part"))
    deadline = time.monotonic() + 60  # the step is gone: Slurm lists no job of ours
    while slurm_cluster.run("squeue", "-h", "-n", "rcompat-fleet", "-o", "%i").stdout.strip():
        assert time.monotonic() < deadline, "the rcompat-fleet job is still in squeue"
        time.sleep(0.2)
    slurm_cluster.wait_until({n: "idle" for n in ("n1", "n2", "n3")}, "nodes idle after the cancel")


def test_drain_is_refused_outside_health_check_program(slurm_cluster):
    """A failing check with --drain from inside a job (SLURM_JOB_ID set, as in a Prolog) drains nothing."""
    env = {**os.environ, **slurm_cluster.env, "R_LIBS": str(slurm_cluster.odd_r_lib), "SLURMD_NODENAME": "n1",
           "SLURM_JOB_ID": "12345"}
    proc = subprocess.run([sys.executable, "-m", "rcompat", "fleet", "health-check", "--drain", "--only", "r"],
                          capture_output=True, text=True, timeout=300, cwd=str(REPO), env=env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("rcompat: FAIL R-TORCH-VERIFY") and len(proc.stdout.splitlines()) == 1
    assert "not draining: inside a job" in proc.stderr
    assert slurm_cluster.states()["n1"] == "idle"
