"""What a cold doctor starts, counted (issue 31): one race trial child, started first and at the
normal priority (it embeds R and imports torch, and serves the r and cuda areas' R and torch facts),
one Rscript for reticulate's discovery, loaded lean and started at BACKGROUND_NICE like the other
early facts' children; no rpy2 worker, no torch child, and no child started twice."""
from __future__ import annotations

import importlib
import os
import threading

import pytest

doctor = importlib.import_module("rcompat.areas")  # the module, not the rcompat.doctor() function


@pytest.fixture
def children(monkeypatch) -> list[dict]:
    """Every child the run starts (rcompat.isolate._run is the one place that starts them): its argv
    and the nice value of the thread that started it, which the child inherits."""
    from rcompat import isolate

    seen: list[dict] = []
    real = isolate._run

    def spy(argv, *args, **kwargs):
        seen.append({"argv": [str(a) for a in argv],
                     "nice": os.getpriority(os.PRIO_PROCESS, threading.get_native_id())})
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(isolate, "_run", spy)
    return seen


def _rscript_facts(children: list[dict]) -> list[dict]:
    """The Rscript children running r_facts.R (the rpy2 worker gets the script's path too)."""
    return [c for c in children if os.path.basename(c["argv"][0]) == "Rscript" and _named([c], "r_facts.R")]


def _named(children: list[dict], *parts: str) -> list[dict]:
    """The children whose argv holds each of `parts` as a whole argument or as an argument's file name."""
    return [c for c in children if all(any(p in (a, os.path.basename(a)) for a in c["argv"]) for p in parts)]


def test_a_cold_doctor_starts_each_slow_child_once_the_trial_first(r_and_torch, children):
    report = doctor.run_doctor(None, options={"r_verify": False}, use_cache=False)
    statuses = {f.id: f.status.value for f in report.findings}
    assert statuses["RACE-SERIALIZED"] == statuses["R-VERSION"] == statuses["CUDA-TORCH"] == "ok", statuses

    trial = _named(children, "rcompat.race.worker")
    assert len(trial) == 1 and children[0] is trial[0], [c["argv"][-3:] for c in children]
    assert _named(children, "rcompat.r.worker") == [] and _named(children, "rcompat.cuda.torch_child") == []
    assert "race trial" in report.facts["r"]["rpy2"]["via"]  # R's facts came from the trial's R

    # R started once more, by one lean discovery child (R's core facts came from the trial's R)
    assert [c["argv"][-3:] for c in _rscript_facts(children)] == [["reticulate", "discover", "lean"]]
    # the trial keeps its priority; the early facts after it (discovery, the compiler probe, NVML) yield
    assert trial[0]["nice"] == 0
    later = _rscript_facts(children) + _named(children, "CMD", "config") + _named(children, "rcompat.cuda.nvml_child")
    assert later and {c["nice"] for c in later} == {doctor.BACKGROUND_NICE}, [(c["argv"][-2:], c["nice"]) for c in later]
    assert len({tuple(c["argv"]) for c in children if "c17" not in " ".join(c["argv"])}) == \
        len([c for c in children if "c17" not in " ".join(c["argv"])]), "a child was started twice"


def test_with_one_job_nothing_is_started_early_or_niced(r_and_torch, children):
    doctor.run_doctor(["r", "race"], options={"r_verify": False}, use_cache=False, jobs=1)
    assert {c["nice"] for c in children} == {0}
    assert len(_named(children, "rcompat.race.worker")) == 1 and _named(children, "rcompat.r.worker") == []


def test_with_the_trial_from_the_cache_nothing_is_niced(r_and_torch, children, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    doctor.run_doctor(["r", "race"], options={"r_verify": False})  # runs the trial, fills the cache
    children.clear()
    report = doctor.run_doctor(["r", "race"], options={"r_verify": False})
    assert _named(children, "rcompat.race.worker") == [] and children, children  # bound Python's child ran
    assert {c["nice"] for c in children} == {0}
    assert {f.id: f.status.value for f in report.findings}["RACE-SERIALIZED"] == "ok"


def test_without_the_race_area_the_torch_child_keeps_its_priority(r_and_torch, children):
    """Then the torch child is the run's longest: cuda's START fact comes first (START_ORDER)."""
    doctor.run_doctor(["r", "cuda"], options={"r_verify": False}, use_cache=False)
    (torch_child,) = _named(children, "rcompat.cuda.torch_child")
    (discovery,) = _rscript_facts(children)
    assert (torch_child["nice"], discovery["nice"]) == (0, doctor.BACKGROUND_NICE)
    assert _named(children, "rcompat.r.worker") != []  # no trial: R's core facts from the rpy2 worker


def test_work_in_this_process_is_never_the_critical_path(r_and_torch, children, monkeypatch):
    """--only elf: its START fact reads ELF files here; no child of it is waited for before the area
    threads start, and nothing is niced."""
    waits: list[object] = []
    real = doctor.wait_for_next_child

    def spy(*args):
        waits.append(args)
        return real(*args)

    monkeypatch.setattr(doctor, "wait_for_next_child", spy)
    report = doctor.run_doctor(["elf", "system"], use_cache=False)
    assert waits == [] and {c["nice"] for c in children} == {0}  # system's children
    assert {f.id: f.status.value for f in report.findings}["ELF-DEPS-PYTORCH"] == "ok"
