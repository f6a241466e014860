"""The doctor's serialized trial is kept between runs while what it ran on is unchanged
(rcompat.race.trial_cache): a passing trial runs once, anything else runs every time, --no-cache and
a changed key run it again."""
from __future__ import annotations

from rcompat import cache
from rcompat.areas import Context
from rcompat.model import Finding, Status
from rcompat.race.checks import DOCTOR_TRIAL, check_serialized_trial
from rcompat.race.trial_cache import cached_trial, trial_key


def _counting(status: Status, calls: list):
    def run():
        calls.append(1)
        return [Finding(id="RACE-SERIALIZED", area="race", status=status, title="trial")], {"summary": {}}
    return run


def test_the_real_trial_runs_once_then_is_read_back(r_and_torch, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first_ctx, second_ctx = Context(), Context()
    first = list(check_serialized_trial(first_ctx))
    second = list(check_serialized_trial(second_ctx))
    assert [(f.id, f.status, f.title) for f in second] == [(f.id, f.status, f.title) for f in first]
    assert first[0].status is Status.OK and "from_cache" not in first[0].evidence
    assert "ran_at" in second[0].evidence["from_cache"] and "--no-cache runs it again" in second[0].message
    assert second_ctx.facts["race"]["serialized_trial"]["summary"] == first_ctx.facts["race"]["serialized_trial"]["summary"]
    assert (tmp_path / "rcompat" / "race" / "serialized.json").is_file()


def test_only_a_passing_trial_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls: list = []
    for _ in range(2):
        findings, _ = cached_trial(DOCTOR_TRIAL, _counting(Status.WARN, calls))
        assert findings[0].status is Status.WARN and "from_cache" not in findings[0].evidence
    assert len(calls) == 2
    calls.clear()
    for _ in range(3):
        cached_trial(DOCTOR_TRIAL, _counting(Status.OK, calls))
    assert len(calls) == 1


def test_no_cache_and_a_changed_key_run_the_trial_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls: list = []
    cached_trial(DOCTOR_TRIAL, _counting(Status.OK, calls))
    with cache.bypassed():
        cached_trial(DOCTOR_TRIAL, _counting(Status.OK, calls))
    assert len(calls) == 2
    monkeypatch.setenv("R_LIBS_USER", str(tmp_path / "another-library"))  # R reads it: another key
    cached_trial(DOCTOR_TRIAL, _counting(Status.OK, calls))
    assert len(calls) == 3
    cached_trial({**DOCTOR_TRIAL, "iterations": 8}, _counting(Status.OK, calls))
    assert len(calls) == 4


def test_the_key_names_what_the_trial_loads(monkeypatch, tmp_path):
    import os

    key = trial_key(DOCTOR_TRIAL, dict(os.environ))
    assert set(key["packages"]) >= {"torch", "rpy2", "numpy"} and key["trial"] == DOCTOR_TRIAL
    assert key["code"]["worker.py"] is not None  # rcompat's own race code is part of it
    assert trial_key(DOCTOR_TRIAL, {**os.environ, "OMP_NUM_THREADS": "3"}) != key
