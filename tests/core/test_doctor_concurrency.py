"""The doctor runs its areas concurrently: same findings in the same order as one after the other,
facts computed once whichever thread asks first, and no deadlock on a circular probe."""
from __future__ import annotations

import importlib
import sys
import threading
import time
import types

import pytest

from rcompat.model import Finding

doctor = importlib.import_module("rcompat.areas")  # the module, not the rcompat.doctor() function


def _two_findings(name: str, shared) -> list:
    return [Finding(id=f"{name.upper()}-1", area=name, status="ok", title=f"{name} first",
                    evidence={"shared_by": shared}),
            Finding(id=f"{name.upper()}-2", area=name, status="ok", title=f"{name} second")]


def _register_area(monkeypatch, name: str, check) -> None:
    """`check` as the only check of a doctor area `name` (a module made here, removed after the test)."""
    module = types.ModuleType(f"rcompat_fake_{name}")
    module.CHECKS = [check]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(doctor.AREA_MODULES, name, module.__name__)


def _fake_area(monkeypatch, name: str, delay: float, log: list):
    def check(ctx):
        log.append((name, "start", time.monotonic()))
        time.sleep(delay)
        shared = ctx.memo("shared", lambda: (time.sleep(0.2), threading.get_ident())[1])
        log.append((name, "end", time.monotonic()))
        yield from _two_findings(name, shared)

    _register_area(monkeypatch, name, check)


def _waiting_area(monkeypatch, name: str, waits_for: list, ended: dict, saw_others_end: dict):
    """An area that, before it ends, waits for the areas `waits_for` to end (up to ended["wait_s"]):
    run one after another it waits in vain; run at once it sees them end. Ordering by events, not by
    sleeps: the wait is long enough for any machine when they run at once, and is cut short when the
    test runs them one by one, where the wait can only be in vain."""
    ended[name] = threading.Event()

    def check(ctx):
        saw_others_end[name] = all(ended[other].wait(timeout=ended["wait_s"]) for other in waits_for)
        shared = ctx.memo("shared", threading.get_ident)
        ended[name].set()
        yield from _two_findings(name, shared)

    _register_area(monkeypatch, name, check)


def test_concurrent_areas_overlap_and_keep_the_report_order(monkeypatch):
    # the first area ends last (it waits for the other two): finishing order is the reverse of the report order
    ended: dict = {"wait_s": 60.0}
    saw: dict = {}
    _waiting_area(monkeypatch, "quick", [], ended, saw)
    _waiting_area(monkeypatch, "mid", ["quick"], ended, saw)
    _waiting_area(monkeypatch, "slow", ["mid", "quick"], ended, saw)
    concurrent = doctor.run_doctor(["slow", "mid", "quick"], jobs=3)
    assert saw == {"quick": True, "mid": True, "slow": True}, "the areas did not run at once"
    for name in ("slow", "mid", "quick"):
        ended[name].clear()
    ended["wait_s"] = 0.1
    sequential = doctor.run_doctor(["slow", "mid", "quick"], jobs=1)
    assert saw["slow"] is False  # one by one, the first area cannot see the later ones end
    assert [f.id for f in concurrent.findings] == [f.id for f in sequential.findings] == [
        "SLOW-1", "SLOW-2", "MID-1", "MID-2", "QUICK-1", "QUICK-2"]
    # one thread computed the shared fact; every area got its answer
    assert len({f.evidence["shared_by"] for f in concurrent.findings if "shared_by" in f.evidence}) == 1
    assert list(concurrent.facts["timings_s"]) == ["slow", "mid", "quick"]


def test_real_doctor_sequential_and_concurrent_give_the_same_findings_in_the_same_order():
    options = {"r_verify": False}
    sequential = doctor.run_doctor(None, jobs=1, options=options)
    concurrent = doctor.run_doctor(None, options=options)
    ids = [f.id for f in sequential.findings]
    assert [f.id for f in concurrent.findings] == ids
    assert [f.status for f in concurrent.findings] == [f.status for f in sequential.findings]
    assert ids[0] == "SYS-OS" and ids[-1] == "RACE-SERIALIZED"
    assert list(concurrent.facts)[:5] == list(sequential.facts)[:5]


def test_memo_runs_the_producer_once_for_every_thread():
    ctx = doctor.Context()
    calls = []

    def produce():
        calls.append(threading.get_ident())
        time.sleep(0.2)
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(ctx.memo("k", produce))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 8 and len({id(r) for r in results}) == 1


def test_memo_gives_every_caller_the_same_exception():
    ctx = doctor.Context()
    calls = []

    def broken():
        calls.append(1)
        raise ValueError("probe failed")

    for _ in range(3):
        with pytest.raises(ValueError, match="probe failed"):
            ctx.memo("bad", broken)
    assert calls == [1]


def test_circular_memo_is_an_error_not_a_deadlock():
    ctx = doctor.Context()
    with pytest.raises(RuntimeError, match="circular"):
        ctx.memo("a", lambda: ctx.memo("a", lambda: 1))


def test_doctor_cli_refuses_a_bad_jobs_value(cli):
    out = cli("doctor", "--only", "python", "--jobs", "0")
    assert out.returncode == 2
    assert "--jobs" in out.stderr and "1 to 64" in out.stderr and "Traceback" not in out.stderr


def test_interrupt_kills_the_children_of_every_area_thread(monkeypatch, tmp_path):
    import os
    import signal

    from rcompat.isolate import run_child

    pid_file = tmp_path / "pid"

    def starts_a_long_child(ctx):
        run_child(["sh", "-c", f"echo $$ > {pid_file}; exec sleep 30"], timeout=60)
        yield Finding(id="LONG-1", area="long", status="ok", title="never reached in time")

    module = types.ModuleType("rcompat_fake_long")
    module.CHECKS = [starts_a_long_child]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(doctor.AREA_MODULES, "long", module.__name__)
    _fake_area(monkeypatch, "quick", 0.0, [])

    def interrupt_when_the_child_runs():
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text().strip():
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does; the main thread waits on the areas

    threading.Thread(target=interrupt_when_the_child_runs, daemon=True).start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        doctor.run_doctor(["long", "quick"], jobs=2)
    assert time.monotonic() - start < 15, "the doctor waited for the child instead of killing it"
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # the next run may start children again
    assert doctor.run_doctor(["quick"], jobs=2).findings
    assert run_child(["true"], timeout=10).ok
