"""The classifier on child ends as the isolate helper reports them (records as a worker writes them)."""
from __future__ import annotations

from rcompat.isolate import ChildResult, parse_json_lines
from rcompat.race import cudactx
from rcompat.race.classify import classify, kind_of_text, kinds

WORKER_OUTPUT = "\n".join([
    '{"ev": "start", "pid": 42, "mode": "unsafe", "seed": 1, "t_ns": 1000}',
    '{"ev": "ready", "device": "cpu", "t_ns": 2000000}',
    '{"ev": "begin", "phase": "alloc", "side": "R", "op": "r_matrix", "size_bytes": 8192, "device": "cpu", '
    '"thread": "worker-0", "tid": 7, "worker": 0, "iter": 0, "seq": 1, "t0_ns": 3000000}',
    '{"ev": "begin", "phase": "alloc", "side": "Python", "op": "torch.randn", "size_bytes": 8192, '
    '"device": "cpu", "thread": "worker-1", "tid": 8, "worker": 1, "iter": 0, "seq": 2, "t0_ns": 3100000}',
    '{"ev": "op", "phase": "alloc", "side": "Python", "op": "torch.randn", "size_bytes": 8192, '
    '"device": "cpu", "thread": "worker-1", "tid": 8, "worker": 1, "iter": 0, "seq": 2, "t0_ns": 3100000, '
    '"t1_ns": 3200000, "outcome": "ok"}',
    '{"ev": "r_console", "stream": "stderr", "text": "Error: C stack usage  7971 is too close to the limit\\n", '
    '"thread": "worker-0", "t_ns": 4000000}',
    "R noise that is not JSON",
])


def child(returncode, stdout=WORKER_OUTPUT, stderr="", timed_out=False):
    return ChildResult(["python", "-m", "rcompat.race.worker"], returncode, timed_out, 1.5, stdout, stderr,
                       parse_json_lines(stdout))


def test_r_stack_error_then_fatal_exit():
    trial = classify(child(2, stderr="Fatal error: unable to initialize the JIT\n"), mode="unsafe", index=0,
                     seed=1, config={})
    assert trial.kind_counts == {"r_cstack": 1, "r_fatal": 1}
    assert trial.outcome == "r_fatal"  # ranked more severe than the stack error that came first
    assert trial.first_failure["kind"] == "r_cstack"
    assert [op["seq"] for op in trial.in_flight] == [1]
    steps = trial.interleaving()
    assert [s["t_ms"] for s in steps] == [1.0, 1.2, 2.0]  # from "ready", in time order, up to the failure
    assert steps[0]["what"] == "R alloc r_matrix 8192 B on cpu: in flight"


def test_signal_and_timeout_are_structural_kinds():
    crashed = classify(child(-11), mode="serialized", index=0, seed=1, config={})
    assert crashed.outcome == "crash" and crashed.signal == "SIGSEGV"
    assert "while in flight: R alloc r_matrix on worker-0" in crashed.failures[-1]["detail"]
    hung = classify(child(-9, timed_out=True), mode="serialized", index=0, seed=1, config={})
    assert hung.outcome == "hang"
    clean = classify(child(0, stdout=WORKER_OUTPUT.rsplit("\n", 2)[0]), mode="serialized", index=0, seed=1,
                     config={})
    assert clean.outcome == "ok" and not clean.failed


def test_every_symptom_kind_has_a_rank_and_a_source():
    assert kind_of_text("Warning: stack imbalance in '{', 9 then 11") == "r_stack_imbalance"
    assert kind_of_text("RuntimeError: CUDA error: an illegal memory access was encountered") == "cuda_error"
    assert kind_of_text("all fine") is None
    assert all(k.source and isinstance(k.rank, int) for k in kinds().values())


def test_context_reader_without_a_driver_is_absent():
    assert cudactx.load("libcuda-that-does-not-exist.so.1") is None
