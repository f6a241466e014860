"""A driver that hangs, crashes or lies: NVML is asked in a child, so each is an NVML error, never a hang,
a crash of rcompat, or "no driver".

Each case compiles its own libnvidia-ml.so.1 (tests/hostile/_fake_nvml.py) and puts it first on
LD_LIBRARY_PATH, where pynvml's dlopen finds it. On a machine with a real driver that directory still
comes first, so the fake is what is probed.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
pytest.importorskip("pynvml")


@pytest.fixture(scope="session")
def fake_nvml(load_helper, tmp_path_factory, gcc):
    module = load_helper("hostile_fake_nvml", HERE / "_fake_nvml.py")
    root = tmp_path_factory.mktemp("fake-nvml")
    built = {mode: module.build(root / mode, mode) for mode in module.MODES}
    built["truncated"] = module.truncated(root / "truncated")
    return built


def _probe(monkeypatch, directory: Path, timeout: float = 3.0):
    from rcompat.cuda.nvml import probe_nvml

    monkeypatch.setenv("LD_LIBRARY_PATH", str(directory))
    return probe_nvml(timeout=timeout)


def test_the_fake_answers_like_a_driver_when_it_is_well(fake_nvml, monkeypatch):
    facts = _probe(monkeypatch, fake_nvml["ok"], timeout=30)
    assert (facts.status, facts.driver_version, facts.cuda_driver_version, len(facts.gpus)) == \
        ("ok", "535.104.05", "12.2", 1)


def test_a_wedged_nvml_init_is_a_time_out_not_absence(fake_nvml, monkeypatch):
    facts = _probe(monkeypatch, fake_nvml["hang"], timeout=2)
    assert facts.status == "error"
    assert "timed out" in facts.error and "nvmlInit" in facts.error
    assert "not found" not in facts.reason and "no NVIDIA driver" not in facts.reason


def test_a_library_that_crashes_when_loaded_is_a_signal_named(fake_nvml, monkeypatch):
    facts = _probe(monkeypatch, fake_nvml["crash"], timeout=30)
    assert facts.status == "error" and "SIGSEGV" in facts.error and "SIGSEGV" in facts.reason


def test_four_billion_gpus_are_refused_not_looped_over(fake_nvml, monkeypatch):
    facts = _probe(monkeypatch, fake_nvml["many"], timeout=30)
    assert facts.status == "error" and "4000000000" in facts.reason and facts.gpus == []


def test_an_unreadable_driver_string_is_an_nvml_error(fake_nvml, monkeypatch):
    facts = _probe(monkeypatch, fake_nvml["driver"], timeout=30)
    assert facts.status == "error" and "not a version number" in facts.reason
    assert facts.driver_version is None


def test_a_truncated_library_is_not_reported_as_not_found(fake_nvml, monkeypatch):
    facts = _probe(monkeypatch, fake_nvml["truncated"], timeout=30)
    assert facts.status == "error", facts
    assert "cannot be loaded" in facts.reason and "libnvidia-ml.so.1" in facts.reason


def test_device_ends_at_its_timeout_with_a_report(fake_nvml, sentinel):
    outcome = sentinel.run("device", "--timeout", "2", "--format", "json", wall_s=60,
                           env={"LD_LIBRARY_PATH": str(fake_nvml["hang"])})
    assert not outcome.timed_out and outcome.returncode == 0, outcome
    assert '"device": "cpu"' in outcome.stdout and "timed out" in outcome.stdout


def test_device_crashing_nvml_leaves_a_report(fake_nvml, sentinel):
    outcome = sentinel.run("device", "--format", "json", wall_s=60,
                           env={"LD_LIBRARY_PATH": str(fake_nvml["crash"])})
    assert outcome.returncode == 0 and "SIGSEGV" in outcome.stdout, outcome
    assert not list(sentinel.tmp.iterdir())


def _children_of_session(sid: int) -> list[int]:
    """The NVML probe children of rcompat process `sid` (each in a session of its own)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2:].split()
            if int(fields[3]) != sid and int(fields[1]) == sid:  # a child that made its own session
                try:
                    if b"rcompat.cuda.nvml_child" in Path(f"/proc/{name}/cmdline").read_bytes():
                        found.append(int(name))
                except OSError:
                    continue
    return found


def _only_waiting_on(pid: int, children: list[int]) -> bool:
    """Whether rcompat `pid` has nothing left to do but wait for `children`: no other child of its
    own, and every thread of it asleep (a thread that is runnable but not given a CPU reads R)."""
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in children:
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            if int(stat[stat.rfind(b")") + 2:].split()[1]) == pid:
                return False
    try:
        states = [Path(f"/proc/{pid}/task/{tid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
                  for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return False
    return all(state == b"S" for state in states)


def _terminated_while_nvml_hangs(fake_nvml, sentinel, *argv, settled: bool = False):
    """Run rcompat `argv` on the hanging NVML, SIGTERM it once the NVML child runs (and, `settled`,
    once rcompat does nothing but wait for it, twice in a row: the doctor starts NVML's child before
    its area threads, so the other areas may not have finished when it appears); (returncode, stdout,
    stderr, the children it had)."""
    env = {**sentinel.env(), "LD_LIBRARY_PATH": str(fake_nvml["hang"])}
    proc = subprocess.Popen([sys.executable, "-m", "rcompat", *argv], cwd=sentinel.work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _children_of_session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the NVML child runs (in a session of its own)
        children = _children_of_session(proc.pid)
        assert children, "the NVML child never started"
        quiet = 0
        while settled and quiet < 2 and time.monotonic() < deadline:
            quiet = quiet + 1 if _only_waiting_on(proc.pid, children) else 0
            time.sleep(0.05)
        assert quiet >= 2 or not settled, "rcompat never settled into waiting for the NVML child"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, out, err, children


def test_sigterm_ends_device_waiting_on_a_wedged_nvml(fake_nvml, sentinel):
    returncode, _out, err, children = _terminated_while_nvml_hangs(fake_nvml, sentinel, "device", "--timeout", "120")
    assert returncode == 128 + signal.SIGTERM, err
    assert "terminated by SIGTERM" in err
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()], "the NVML child outlived rcompat"


def test_sigterm_during_the_doctor_reports_what_finished(fake_nvml, sentinel):
    returncode, out, err, children = _terminated_while_nvml_hangs(
        fake_nvml, sentinel, "doctor", "--only", "system,cuda", "--timeout", "120", "--format", "json", settled=True)
    assert returncode == 128 + signal.SIGTERM and "terminated by SIGTERM" in err, err
    import json

    findings = {f["id"]: f for f in json.loads(out)["findings"]}
    assert findings["SYS-OS"]["status"] == "ok"  # the system area had finished: its answer is kept
    assert findings["CUDA-INTERRUPTED"]["status"] == "error" and "CUDA-DRIVER" not in findings
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]
    assert not list(sentinel.tmp.iterdir())


@pytest.mark.gpu
def test_the_real_driver_answers_through_the_child():
    from rcompat.cuda.nvml import probe_nvml

    facts = probe_nvml(timeout=60)
    if facts.status == "no-driver":
        pytest.skip("no NVIDIA driver on this machine")
    assert facts.status == "ok", facts.reason
    assert facts.gpus and all(g.uuid for g in facts.gpus) and facts.driver_version
