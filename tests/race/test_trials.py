"""Race trials for real: embedded R (rpy2) + torch CPU in child processes, unsafe vs serialized."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from rcompat.errors import UsageError
from rcompat.model import Status
from rcompat.race.classify import kinds

REPO = Path(__file__).resolve().parents[2]

WORKERS, ITERATIONS, TRIALS = 3, 6, 2
OPS_PER_ITERATION = 4  # R alloc, Python alloc, and a release of each


@pytest.fixture(scope="module")
def unsafe(r_and_torch):
    from rcompat.race.runner import run

    return run(device="cpu", iterations=ITERATIONS, workers=WORKERS, mode="unsafe", trials=TRIALS, seed=101,
               timeout=60)


@pytest.fixture(scope="module")
def serialized(r_and_torch, tmp_path_factory):
    from rcompat.race.runner import run

    trace = tmp_path_factory.mktemp("trace") / "race.json"
    result = run(device="cpu", iterations=ITERATIONS, workers=WORKERS, mode="serialized", trials=TRIALS,
                 seed=101, timeout=60, trace=str(trace))
    return result, trace


def test_unsafe_mode_is_detected_as_named_failures(unsafe):
    assert len(unsafe.trials_of("unsafe")) == TRIALS
    by_kind = unsafe.failures_by_kind("unsafe")
    assert set(by_kind) <= set(kinds()), f"unnamed failure kind in {by_kind}"
    # R keeps its C stack check (as when R hosts Python through reticulate): every call from a worker
    # thread's stack trips it, in every trial.
    assert by_kind.get("r_cstack") == TRIALS
    first = unsafe.summary("unsafe")["first_failure"]
    assert first["kind"] in kinds()
    assert first["interleaving"] and first["interleaving"][-1]["t_ms"] == first["t_ms"]
    assert "--mode unsafe" in first["reproduce"] and "--seed 101" in first["reproduce"]
    (finding,) = [f for f in unsafe.to_findings() if f.id == "RACE-UNSAFE"]
    assert finding.status is Status.WARN and "r_cstack" in finding.title


def test_unsafe_without_stack_check_fails_by_name_or_is_consistent(r_and_torch):
    from rcompat.race.runner import run

    result = run(device="cpu", iterations=5, workers=3, mode="unsafe", trials=1, seed=7, timeout=60,
                 r_stack_check=False)
    (trial,) = result.trials
    if trial.failed:
        assert set(trial.kind_counts) <= set(kinds())
        assert trial.first_failure["kind"] in kinds()
    else:  # it may pass: then every planned op must be in the timeline, complete and ordered
        assert len(trial.ops) == 3 * 5 * OPS_PER_ITERATION
        assert not trial.in_flight
        assert all(op["t1_ns"] >= op["t0_ns"] and op["outcome"] == "ok" for op in trial.ops)
        assert [f.status for f in result.to_findings() if f.id == "RACE-UNSAFE"] == [Status.OK]


def test_serialized_mode_completes_every_trial_without_failure(serialized):
    result, _ = serialized
    trials = result.trials_of("serialized")
    assert [t.outcome for t in trials] == ["ok"] * TRIALS
    for t in trials:
        assert t.returncode == 0 and not t.in_flight
        assert len(t.ops) == WORKERS * ITERATIONS * OPS_PER_ITERATION
        r_ops = [op for op in t.ops if op["side"] == "R"]
        py_ops = [op for op in t.ops if op["side"] == "Python"]
        assert {op["thread"] for op in r_ops} == {"MainThread"}
        assert {op["requested_by"] for op in r_ops} == {f"worker-{i}" for i in range(WORKERS)}
        assert {op["thread"] for op in py_ops} == {f"worker-{i}" for i in range(WORKERS)}
    (finding,) = [f for f in result.to_findings() if f.id == "RACE-SERIALIZED"]
    assert finding.status is Status.OK


def test_summary_frames(serialized):
    result, _ = serialized
    frame = result.to_frame()
    assert list(frame["mode"]) == ["serialized"] * TRIALS
    assert list(frame["ops"]) == [WORKERS * ITERATIONS * OPS_PER_ITERATION] * TRIALS
    assert (frame["r_ops"] == frame["python_ops"]).all()
    timeline = result.timeline_frame()
    assert len(timeline) == sum(frame["ops"])
    assert set(timeline["side"]) == {"R", "Python"} and set(timeline["phase"]) == {"alloc", "release"}


def test_chrome_trace_has_the_documented_fields(serialized):
    result, trace = serialized
    data = json.loads(trace.read_text())
    assert [p.name for p in trace.parent.iterdir()] == ["race.json"]  # atomic: no temp file left
    events = data["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == sum(len(t.ops) for t in result.trials)
    for e in complete:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["ts"] >= 0 and e["dur"] >= 0
        assert {"size_bytes", "device", "outcome", "seq"} <= set(e["args"])
    names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert len(names) == TRIALS and all(n.startswith("serialized trial") for n in names)
    assert data["otherData"]["config"]["seed"] == 101


def test_sigsegv_in_a_native_call_is_a_crash_with_the_last_events(r_and_torch, null_deref_lib, survivors):
    from rcompat.race.runner import run

    result = run(device="cpu", iterations=10, workers=1, mode="serialized", trials=1, seed=3, timeout=60,
                 hooks={"crash_after_events": 6, "crash_lib": null_deref_lib})
    (trial,) = result.trials
    assert trial.outcome == "crash" and trial.signal == "SIGSEGV" and trial.returncode == -11
    assert len(trial.ops) == 6  # all events before the crash survived it
    crash = [f for f in result.to_findings() if f.id == "RACE-CRASH"]
    assert crash and crash[0].status is Status.FAIL  # the serialized pattern crashed
    assert crash[0].evidence["signal"] == "SIGSEGV"
    assert crash[0].evidence["last_events"][-1]["what"].startswith("crash: killed by SIGSEGV")
    assert len(crash[0].evidence["last_events"]) > 1
    assert not survivors(result.config["run_id"])


def test_hang_is_killed_reaped_and_reported(r_and_torch, survivors):
    from rcompat.race.runner import run

    result = run(device="cpu", iterations=10, workers=2, mode="unsafe", trials=1, seed=3, timeout=10,
                 r_stack_check=False, hooks={"hang_after_events": 3})
    (trial,) = result.trials
    assert trial.timed_out and trial.outcome == "hang"
    assert len(trial.ops) >= 3
    assert [f.id for f in result.to_findings() if f.id == "RACE-HANG"] == ["RACE-HANG"]
    assert not survivors(result.config["run_id"])


def test_no_trial_child_survives_a_run(unsafe, serialized, survivors):
    for result in (unsafe, serialized[0]):
        assert not survivors(result.config["run_id"])


@pytest.mark.parametrize("kwargs", [{"mode": "sometimes"}, {"device": "tpu"}, {"iterations": 0},
                                    {"workers": 65}, {"trials": 0}, {"timeout": 0}, {"hooks": {"boom": 1}}])
def test_bad_arguments_are_usage_errors(kwargs):
    from rcompat.race.runner import run

    with pytest.raises(UsageError):
        run(**kwargs)


def test_cuda_requested_without_cuda_is_a_setup_skip(r_and_torch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here; the setup-skip path needs a machine without it")
    from rcompat.race.runner import run

    result = run(device="cuda", iterations=2, workers=1, mode="both", trials=3, seed=1, timeout=60)
    assert len(result.trials) == 1  # the first setup failure stops the run
    (finding,) = result.to_findings()
    assert finding.id == "RACE-SETUP" and finding.status is Status.SKIP
    assert "torch.cuda.is_available() is False" in finding.message


def test_cli_runs_both_modes_side_by_side(cli, r_and_torch):
    text = cli("race", "--device", "cpu", "--iterations", "3", "--workers", "2", "--trials", "1", "--seed", "5")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    first_row = next(i for i, line in enumerate(lines) if line.startswith("  ") and "unsafe" in line)
    assert lines[first_row].split() == ["unsafe", "serialized"]  # after the (wrapped) heading
    assert "first failing interleaving (unsafe" in text.stdout and "reproduce: rcompat race --mode unsafe" in text.stdout


def test_cli_output_dash_is_stdout(cli, r_and_torch):
    out = cli("race", "--device", "cpu", "--mode", "serialized", "--iterations", "1", "--workers", "1",
              "--trials", "1", "--seed", "5", "--output", "-")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("rcompat race") and "RACE-SERIALIZED" in out.stdout
    assert not (REPO / "-").exists()


def test_cli_json_and_errors(cli, r_and_torch, tmp_path):
    out = cli("race", "--device", "cpu", "--mode", "serialized", "--iterations", "2", "--workers", "1",
              "--trials", "1", "--seed", "5", "--format", "json", "--trace", str(tmp_path / "t.json"))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["command"] == "race"
    assert report["facts"]["race"]["modes"]["serialized"]["failed"] == 0
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    for args in (["--iterations", "0"], ["--workers", "999"], ["--timeout", "-1"],
                 ["--trace", str(tmp_path / "missing-dir" / "t.json"), "--trials", "1", "--iterations", "1"]):
        bad = cli("race", "--device", "cpu", *args)
        assert bad.returncode == 2, (args, bad.stdout)
        assert len(bad.stderr.strip().splitlines()) <= 2 and "Traceback" not in bad.stderr


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
@pytest.mark.skipif(importlib.util.find_spec("rpy2") is None,
                    reason="rpy2 not installed: the trial embeds R (seen on a GPU machine without R)")
def test_cuda_serialized_pins_the_context_and_sees_no_switch():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and driver (none here): cuCtxGetCurrent has no context to report")
    from rcompat.race.runner import run

    result = run(device="cuda", iterations=5, workers=3, mode="serialized", trials=1, seed=1, timeout=120)
    (trial,) = result.trials
    assert trial.device == "cuda:0" and trial.outcome == "ok"
    assert all(op.get("ctx_after") for op in trial.ops if op["side"] == "Python")
    assert not any(op.get("ctx_switch") for op in trial.ops)
