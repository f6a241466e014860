"""The doctor's trial child sets up R and torch at once (rcompat.race.worker, `overlap_setup`): torch
imports on a thread while R starts on the main thread, rpy2's R environment comes from one early R
start (rcompat.r.front_end_env), and R's facts are read while torch still imports. The trial it then
runs is the one it ran before; what changes is only when each piece of set-up happens."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from rcompat.race import worker
from rcompat.race.checks import DOCTOR_TRIAL


def _worker_records(config: dict) -> list[dict]:
    from rcompat.r.host import locate_r
    from rcompat.r.scripts import scripts_dir

    install = locate_r()
    env = dict(os.environ) | ({"R_HOME": install.r_home} if install and install.r_home else {})
    full = {"seed": 1, "device": "cpu", "iterations": 3, "workers": 2, "mode": "serialized", "jitter_s": 0.0,
            "run_id": "overlap-test", "torch_facts": True, "r_facts": str(scripts_dir() / "r_facts.R"), **config}
    out = subprocess.run([sys.executable, "-m", "rcompat.race.worker", json.dumps(full)], capture_output=True,
                         text=True, env=env, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_the_doctors_trial_asks_for_the_overlap():
    assert DOCTOR_TRIAL["overlap_setup"] is True


def test_overlapped_the_trial_and_its_facts_are_those_of_the_plain_set_up(r_and_torch):
    plain, overlapped = _worker_records({}), _worker_records({"overlap_setup": True})

    def events(records):
        return [r["ev"] for r in records if r.get("ev") in ("start", "ready", "end")]

    def ops(records):
        return [(r["worker"], r["iter"], r["phase"], r["side"], r["op"], r["size_bytes"], r["outcome"])
                for r in records if r.get("ev") == "op"]

    def said(records, key):
        return next(r for r in records if key in r)

    assert events(plain) == events(overlapped) == ["start", "ready", "end"]
    assert sorted(ops(plain)) == sorted(ops(overlapped)) and all(op[-1] == "ok" for op in ops(overlapped))
    assert said(plain, "torch_facts")["torch_facts"] == said(overlapped, "torch_facts")["torch_facts"]
    r_plain, r_overlapped = said(plain, "r_facts"), said(overlapped, "r_facts")
    assert r_plain["r_facts"]["core"].pop("pid") != r_overlapped["r_facts"]["core"].pop("pid")  # two children
    assert r_plain == r_overlapped
    # R's facts come before the trial is ready when overlapped (read while torch imported), after its end when not
    position = {id(r): i for i, r in enumerate(overlapped)}
    ready = next(i for i, r in enumerate(overlapped) if r.get("ev") == "ready")
    assert position[id(said(overlapped, "r_facts"))] < ready
    end = next(i for i, r in enumerate(plain) if r.get("ev") == "end")
    assert [i for i, r in enumerate(plain) if "r_facts" in r][0] > end


def test_torch_imported_on_a_thread_is_the_module_and_its_failure_is_raised_on_the_caller(monkeypatch):
    seen = []
    imported = worker.TorchImport(overlapped=True)
    seen.append(imported._thread.name)
    assert imported.result() is sys.modules["torch"] and seen == ["torch-import"]

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    for overlapped in (True, False):
        with pytest.raises(ImportError):
            worker.TorchImport(overlapped).result()


def test_serve_ends_when_every_worker_has_said_it_ended_not_when_its_thread_exits():
    """The serialized pattern's main thread stops serving as each worker ends (worker_finished), not at
    its next poll of the threads: here the workers' threads live on after saying so."""
    executor = worker.MainThreadR()
    release = threading.Event()
    results = []

    def body(i):
        results.append(executor.call(lambda: threading.current_thread().name) + f"/{i}")
        executor.worker_finished()
        release.wait(30)  # alive until the test ends

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    served = threading.Thread(target=executor.serve, args=(threads,), daemon=True)
    served.start()
    served.join(20)
    try:
        assert not served.is_alive(), "serve() waited for the worker threads to exit"
        assert all(t.is_alive() for t in threads)
        assert sorted(results) == [f"{served.name}/{i}" for i in range(3)]  # every R call ran on serve()'s thread
    finally:
        release.set()
