"""The model verdicts inside `rcompat upgrade OLD NEW --models` (against NEW's torch, read from NEW's files)
and `rcompat doctor --models` (this machine), on model files written by the real torch this session."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from .conftest import rcompat_cli

# What model check reads of a target torch (rcompat/models/target.py): copied from the installed torch,
# so NEW holds a real torch's files without the gigabyte of its libraries.
TORCH_FILES = ("version.py", "_weights_only_unpickler.py", "__init__.py", "_C/__init__.pyi")


def _root(base: Path, with_torch: bool) -> Path:
    (base / "usr/bin").mkdir(parents=True)
    shutil.copy2("/bin/true", base / "usr/bin/true")  # one real ELF object, so the scan has something to index
    if with_torch:
        torch_dir = Path(importlib.util.find_spec("torch").origin).parent
        dest = base / "usr/local/lib/python3.12/site-packages/torch"
        for name in TORCH_FILES:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(torch_dir / name, dest / name)
    return base


def _models(report: dict) -> dict[str, dict]:
    return {(Path(f["evidence"]["file"]).name, f["id"]): f for f in report["findings"] if f["area"] == "models"}


@pytest.fixture(scope="module")
def picked(model_dir, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("picked")
    for name in ("state_dict.pt", "custom_class.pt", "saved_on_cuda0.pt"):
        shutil.copy2(model_dir / name, d / name)
    return d


def test_upgrade_checks_models_against_new_torch_read_from_its_files(picked, tmp_path):
    old, new = _root(tmp_path / "old", False), _root(tmp_path / "new", True)
    done = rcompat_cli("upgrade", str(old), str(new), "--models", str(picked), "--device", "cpu", "--format", "json")
    assert done.returncode == 2 and "--device" in done.stderr  # upgrade has no --device: the machine's own GPUs
    done = rcompat_cli("upgrade", str(old), str(new), "--models", str(picked), "--format", "json", "-q")
    report = json.loads(done.stdout)
    assert report["facts"]["models"]["target"] == f"--root {new}" and report["facts"]["models"]["side"] == "NEW"
    torch_version = (new / "usr/local/lib/python3.12/site-packages/torch/version.py").read_text()
    assert f"'{report['facts']['models']['torch']}'" in torch_version
    found = _models(report)
    assert found[("state_dict.pt", "MODEL-PICKLE")]["status"] == "ok"
    assert found[("custom_class.pt", "MODEL-PICKLE")]["status"] == "fail"
    assert found[("custom_class.pt", "MODEL-PICKLE")]["evidence"]["refused"] == ["custom_mod.Custom"]
    assert done.returncode == 1


def test_upgrade_to_a_root_without_torch_says_so_instead_of_using_this_machines(picked, tmp_path):
    old, new = _root(tmp_path / "old", True), _root(tmp_path / "new", False)
    done = rcompat_cli("upgrade", str(old), str(new), "--models", str(picked / "state_dict.pt"), "--format", "json", "-q")
    report = json.loads(done.stdout)
    verdict = _models(report)[("state_dict.pt", "MODEL-PICKLE")]
    assert verdict["status"] == "skip" and f"--root {new}" in verdict["message"]
    assert report["facts"]["models"]["torch"] is None


def test_upgrade_with_a_missing_model_path_exits_2_before_scanning(tmp_path):
    old, new = _root(tmp_path / "old", False), _root(tmp_path / "new", False)
    done = rcompat_cli("upgrade", str(old), str(new), "--models", str(tmp_path / "nope.pt"))
    assert done.returncode == 2 and done.stdout == ""
    assert "nope.pt" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_doctor_models_checks_this_machine(picked):
    done = rcompat_cli("doctor", "--only", "system", "--models", str(picked), "--format", "json", "-q")
    report = json.loads(done.stdout)
    found = _models(report)
    assert {f["area"] for f in report["findings"]} >= {"system", "models"}
    assert found[("custom_class.pt", "MODEL-PICKLE")]["status"] == "fail"
    devices = report["facts"]["models"]["devices"]
    cuda0 = found[("saved_on_cuda0.pt", "MODEL-DEVICE")]
    assert cuda0["status"] == ("ok" if "cuda:0" in devices else "fail")
    assert done.returncode == 1


def test_doctor_with_a_missing_model_path_exits_2(tmp_path):
    done = rcompat_cli("doctor", "--only", "system", "--models", str(tmp_path / "nope"))
    assert done.returncode == 2 and done.stdout == "" and "nope" in done.stderr
