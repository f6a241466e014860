"""The race reproducer on the root's R (R 4.5.0 on a Debian 12 host): embedded R through rpy2 and
Python torch in one process. The root's Python 3.13 has no torch wheel on disk, so the race runs on
the host's CPython (the one the cp311 torch wheel is for), bound read-only at its own path, in a venv
under the root's /tmp with torch from the host's wheel and rpy2 built in the root against its R,
both installed once into a cached directory the venv reads (scripts/root_python.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def race(tier, load_helper):
    root_python = load_helper("root_python", REPO / "scripts" / "root_python.py")
    try:
        python = root_python.host_python()
        wheelhouse = root_python.ensure_wheelhouse(tier.module, tier.root, python)
        site = root_python.ensure_site(tier.module, tier.root, python, wheelhouse)  # torch etc., installed once
    except root_python.PythonUnavailable as exc:
        pytest.skip(f"no Python fitting the torch wheel for the root: {exc}")
    INSIDE = tier.inside
    venv = f"{INSIDE}/venv-race"
    wheel = next((tier.host_dir / "wheels").glob("rcompat-*.whl")).name
    binds = root_python.binds(python, wheelhouse, site)

    def run(script: str, timeout: float = 300):
        return tier.module.run_in_root(tier.root, ["sh", "-c", script], read_only_binds=binds, timeout=timeout,
                                       env={"XDG_CACHE_HOME": f"{INSIDE}/cache"})

    # A venv of this session that reads torch, rpy2, numpy and pyelftools from the installed site
    # (a .pth file), with this checkout's wheel installed into it as a user would.
    pth = f"$({venv}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')/rcompat-race-site.pth"
    setup = run(f"{python.executable} -m venv {venv} && echo {site} > {pth} && "
                f"{venv}/bin/pip install -q --disable-pip-version-check --no-index --no-deps {INSIDE}/wheels/{wheel}",
                timeout=600)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    return run, venv, python


def findings(report: dict) -> dict:
    return {f["id"]: f for f in report["findings"]}


def test_race_worker_embeds_r45_beside_torch(race, tier_facts):
    """One serialized trial's own timeline: the worker process embedded the root's R and imported
    torch 2.13.0, then both allocated from threads without a failure."""
    run, venv, python = race
    config = {"mode": "serialized", "seed": 3, "device": "cpu", "iterations": 3, "workers": 2, "run_id": "tier"}
    proc = run(f"{venv}/bin/python -m rcompat.race.worker '{json.dumps(config)}'")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    ready = next(e for e in events if e["ev"] == "ready")
    assert ready["r_version"].startswith(f"R version {tier_facts['expected']['R']} ")
    assert ready["torch"].split("+")[0] == "2.13.0" and ready["device"] == "cpu"
    ops = [e for e in events if e["ev"] == "op"]
    assert {e["side"] for e in ops} == {"R", "Python"} and all(e["outcome"] == "ok" for e in ops)
    assert python.tag == "cp311"


def test_race_both_modes_on_r45(race):
    """The serialized pattern holds on R 4.5; the unsafe one's result (R's C stack check stops R
    calls from worker threads, measured: RACE-UNSAFE warn with r_cstack) is reported, not a crash
    of the tool."""
    run, venv, _ = race
    proc = run(f"{venv}/bin/rcompat race --device cpu --mode both --trials 1 --workers 2 --iterations 6 "
               "--seed 7 --timeout 60 --format json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = findings(json.loads(proc.stdout))
    serialized = found["RACE-SERIALIZED"]
    assert serialized["status"] == "ok" and serialized["evidence"]["ops_failed"] == 0, serialized
    unsafe = found["RACE-UNSAFE"]
    assert unsafe["status"] in ("ok", "warn") and unsafe["evidence"]["trials"] == 1, unsafe
    if unsafe["status"] == "warn":
        assert unsafe["evidence"]["failures_by_kind"] and "Reproduce: rcompat race" in unsafe["message"]


def test_doctor_race_and_rpy2_mode_on_r45(race, tier_facts):
    run, venv, _ = race
    expected = tier_facts["expected"]
    proc = run(f"{venv}/bin/rcompat doctor --only race,r --no-cache --format json")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    found = findings(json.loads(proc.stdout))
    rpy2 = found["R-RPY2"]
    assert rpy2["status"] == "ok", rpy2
    assert rpy2["title"].startswith(f"rpy2 {expected['rpy2']}") and f"embeds R {expected['R']}" in rpy2["title"]
    assert rpy2["evidence"]["mode"]["mode"] == expected["mode"]
    trial = found["RACE-SERIALIZED"]
    assert trial["status"] == "ok" and trial["evidence"]["ops_completed"] > 0, trial
    assert found["RACE-MAPS-MEMORY"]["status"] == "ok", found["RACE-MAPS-MEMORY"]
