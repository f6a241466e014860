"""One rpy2 and R start serves the doctor's r and race areas: the race trial's child, after its trial,
reports R's core facts and rpy2's mode as the r area's rpy2 worker would (rcompat.race.checks
.trial_r_facts), so a cold doctor starts no rpy2 worker; with library paths of its own (which the
trial's child does not get) the r area still asks its own worker."""
from __future__ import annotations

import importlib

import pytest

doctor = importlib.import_module("rcompat.areas")  # the module, not the rcompat.doctor() function
CORE_FIELDS = ("version", "platform", "os", "r_home", "lib_paths", "packages", "session")


def test_r_and_race_share_the_trial_childs_r(r_and_torch, started, tmp_path):
    from rcompat.r.facts import probe

    report = doctor.run_doctor(["r", "race"], options={"r_verify": False}, use_cache=False)
    assert started.count("rcompat.race.worker") == 1 and "rcompat.r.worker" not in started, started
    shared = report.facts["r"]
    assert shared["engine"] == "rpy2" and "race trial" in shared["rpy2"]["via"]

    started.clear()
    own = probe(discover_python=False).to_dict()  # what the rpy2 worker says
    assert started == ["rcompat.r.worker"]
    different = [k for k in CORE_FIELDS if own[k] != shared[k]]
    assert different == [], {k: (own[k], shared[k]) for k in different}
    assert shared["rpy2"]["mode"] == own["rpy2"]["mode"] and own["rpy2"]["mode"]["mode"] in ("API", "ABI")
    statuses = {f.id: f.status.value for f in report.findings}
    assert statuses["R-VERSION"] == statuses["R-RPY2"] == statuses["RACE-SERIALIZED"] == "ok"


def test_with_library_paths_of_its_own_the_r_area_asks_its_rpy2_worker(r_and_torch, started, tmp_path):
    library = tmp_path / "library"
    library.mkdir()
    report = doctor.run_doctor(["r", "race"], options={"r_verify": False, "r_lib_paths": [str(library)]},
                               use_cache=False)
    assert started.count("rcompat.r.worker") == 1 and started.count("rcompat.race.worker") == 1, started
    facts = report.facts["r"]
    assert "via" not in facts["rpy2"] and str(library) in facts["lib_paths"][0]
