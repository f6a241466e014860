"""snapshot: save on this machine, round-trip, and diff two fixture snapshots against the risk table."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from rcompat.model import Status
from rcompat.tools import snapdiff, snapshot

SNAPS = Path(__file__).resolve().parents[2] / "fixtures" / "snapshots"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("snap") / "now.json"
    snap = snapshot.collect(timeout=120)
    snapshot.save(path, snap)
    return path, snap


def test_save_records_the_real_stack(saved):
    import platform

    torch = pytest.importorskip("torch", reason="torch not installed: no torch==2.13.0 wheel for this Python on disk (make test installs it when there is)")
    path, snap = saved
    assert snap["errors"] == {}
    assert snap["python"]["version"] == platform.python_version()
    assert snap["python"]["packages"]["torch"] == torch.__version__
    assert snap["frameworks"]["torch"]["version"] == torch.__version__
    assert snap["frameworks"]["torch"]["cuda"] == torch.version.cuda
    libtorch = [p for p in snap["libraries"]["files"] if p.endswith("/libtorch_cpu.so")]
    assert libtorch, "torch wheel's libtorch_cpu.so not recorded"
    info = snap["libraries"]["files"][libtorch[0]]
    assert info["soname"] == "libtorch_cpu.so" and len(info["build_id"]) == 40
    assert info["size"] == Path(libtorch[0]).stat().st_size


def test_save_records_r_and_its_packages(saved, rscript):
    import subprocess

    _, snap = saved
    out = subprocess.run([rscript, "-e", 'cat(paste(R.version$major, R.version$minor, sep="."), '
                                         'as.character(packageVersion("jsonlite")))'],
                         capture_output=True, text=True, check=True).stdout.split()
    assert snap["r"]["version"] == out[0]
    assert snap["r"]["packages"]["jsonlite"]["version"] == out[1]


def test_round_trip_and_no_changes_against_itself(saved):
    path, snap = saved
    loaded = snapshot.load(path)
    assert loaded == json.loads(json.dumps(snap, sort_keys=True))
    report = snapdiff.diff(loaded, snapshot.load(path))
    assert [f.id for f in report.findings] == ["SNAP-CHANGES"] and report.exit_code() == 0
    assert report.facts["snapshot"]["changes"] == []


def test_save_is_atomic_and_leaves_no_temp_file(saved, tmp_path, cli):
    target = tmp_path / "s.json"
    run = cli("snapshot", "save", str(target), "--skip", "r", "--skip", "libraries")
    assert run.returncode == 0, run.stderr
    assert "wrote" in run.stderr and [p.name for p in tmp_path.iterdir()] == ["s.json"]
    assert "r" not in snapshot.load(target)


def test_diff_of_fixture_snapshots_flags_the_risky_changes():
    before, after = snapshot.load(SNAPS / "before.json"), snapshot.load(SNAPS / "after.json")
    report = snapdiff.diff(before, after)
    risky = {f.id for f in report.findings if f.status is Status.FAIL}
    assert risky == {"SNAP-CUDA-MAJOR", "SNAP-CUDNN-MAJOR", "SNAP-PYTORCH-MINOR", "SNAP-RTORCH-MINOR",
                     "SNAP-R-MINOR", "SNAP-LIB-BUILD-ID-SAME-SONAME"}
    assert {f.id for f in report.findings if f.status is Status.WARN} == {"SNAP-LIB-REMOVED"}
    kinds = {c["key"]: c["kind"] for c in report.facts["snapshot"]["changes"]}
    assert kinds["python/packages/numpy"] == "changed" and kinds["r/packages/jsonlite/version"] == "removed"
    assert kinds["python/packages/safetensors"] == "added"
    # patch-level changes are listed but not risky
    assert not any(f.evidence.get("key") == "r/packages/Rcpp/version" for f in report.findings)
    assert report.exit_code() == 1


def test_same_soname_rule_needs_the_soname_unchanged():
    before = snapshot.load(SNAPS / "before.json")
    after = copy.deepcopy(before)
    lib = "/home/ds/.venvs/ml/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"
    after["libraries"]["files"][lib].update({"build_id": "ff" * 20, "soname": "libtorch_cpu.so.2"})
    ids = {f.id for f in snapdiff.diff(before, after).findings}
    assert "SNAP-LIB-SONAME-CHANGED" in ids and "SNAP-LIB-BUILD-ID-SAME-SONAME" not in ids


def test_driver_downgrade_and_cpu_build_are_risky():
    before = snapshot.load(SNAPS / "before.json")
    after = copy.deepcopy(before)
    after["gpu"]["driver"] = "535.104.05"
    after["frameworks"]["torch"]["cuda"] = None
    ids = {f.id for f in snapdiff.diff(before, after).findings}
    assert {"SNAP-DRIVER-DOWNGRADED", "SNAP-TORCH-CUDA-BUILD-LOST"} <= ids


def test_cli_diff_text_and_exit_codes(cli, tmp_path):
    run = cli("snapshot", "diff", str(SNAPS / "before.json"), str(SNAPS / "after.json"))
    assert run.returncode == 1
    assert "~ r/version 4.4.1 → 4.5.0" in run.stdout and "FAIL  SNAP-R-MINOR" in run.stdout
    same = cli("snapshot", "diff", str(SNAPS / "before.json"), str(SNAPS / "before.json"), "-f", "json")
    assert same.returncode == 0 and json.loads(same.stdout)["facts"]["snapshot"]["changes"] == []
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    err = cli("snapshot", "diff", str(bad), str(SNAPS / "after.json"))
    assert err.returncode == 2 and "not an rcompat snapshot" in err.stderr
    missing = cli("snapshot", "diff", str(tmp_path / "nope.json"), str(SNAPS / "after.json"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_library_dirs_cover_the_cuda_engines_locations_and_the_libtorch_ones(tmp_path):
    """One list of CUDA library places (rcompat.cuda.libs.search_locations), plus the libtorch-only ones."""
    from rcompat.cuda.libs import search_locations

    cuda_home, torch_home, conda = tmp_path / "cuda", tmp_path / "torch_home", tmp_path / "conda"
    for d in (cuda_home / "lib64", torch_home / "lib", conda / "lib"):
        d.mkdir(parents=True)
    env = {"CUDA_HOME": str(cuda_home), "TORCH_HOME": str(torch_home), "CONDA_PREFIX": str(conda)}
    dirs = snapshot.library_dirs({}, env=env)
    engine = {str(Path(p["dir"]).resolve()) for p in search_locations(env=env)}
    assert engine <= set(dirs)
    assert str((cuda_home / "lib64").resolve()) in dirs and str((conda / "lib").resolve()) in dirs
    assert str((torch_home / "lib").resolve()) in dirs
    assert len(dirs) == len(set(dirs))
