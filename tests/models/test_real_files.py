"""Each prediction of `rcompat model inspect/check` against what the real loader does with the same file."""
from __future__ import annotations

import json

import pytest

from rcompat.models.checks import Machine, check_model
from rcompat.models.engine import check_models
from rcompat.models.reader import read_model
from rcompat.models.target import find_target

from .conftest import real_load, rcompat_cli

TORCH_LOAD_SAFE = "import torch; torch.load(path, weights_only=True)"
TORCH_LOAD_UNSAFE = "import torch; torch.load(path, weights_only=False)"


@pytest.fixture(scope="module")
def target():
    return find_target()


def _by_id(findings, fid):
    return [f for f in findings if f.id == fid]


def _check(path, target, machine=None):
    return check_model(read_model(path), target, machine or Machine([], {}, "test: cpu only"), {})


@pytest.mark.parametrize("name,loads_safely", [
    ("state_dict.pt", True), ("plain_dict.pt", True), ("legacy.pt", True), ("full_module.pt", False),
    ("numpy_array.pt", False), ("custom_class.pt", False)])
def test_weights_only_verdict_matches_torch_load(model_dir, target, name, loads_safely):
    findings = _check(model_dir / name, target)
    (verdict,) = _by_id(findings, "MODEL-PICKLE")
    real = real_load(model_dir / name, TORCH_LOAD_SAFE, model_dir)
    assert real["ok"] is loads_safely, real
    assert (verdict.status.value == "ok") is loads_safely, verdict
    if not loads_safely:
        assert "weights_only" in real["error"] or "Unsupported global" in real["error"], real
        assert real_load(model_dir / name, TORCH_LOAD_UNSAFE, model_dir)["ok"]


def test_first_refused_global_is_the_one_torch_reports(model_dir, target):
    (verdict,) = _by_id(_check(model_dir / "custom_class.pt", target), "MODEL-PICKLE")
    real = real_load(model_dir / "custom_class.pt", TORCH_LOAD_SAFE, model_dir)
    assert verdict.evidence["refused"] == ["custom_mod.Custom"]
    assert "custom_mod.Custom" in real["error"]


def test_tensors_match_the_loaded_state_dict(model_dir):
    info = read_model(model_dir / "state_dict.pt")
    real = real_load(model_dir / "state_dict.pt", "import torch, json; sd = torch.load(path); print(json.dumps("
                     "{k: [str(v.dtype).replace('torch.', ''), list(v.shape)] for k, v in sd.items()}))",
                     model_dir)
    assert real["ok"]
    assert {t.name: (t.dtype, list(t.shape)) for t in info.tensors} == {"lin.weight": ("float32", [4, 3]),
                                                                          "lin.bias": ("float32", [4])}
    assert info.format == "torch-zip" and info.format_version == 3
    legacy = read_model(model_dir / "legacy.pt")
    assert legacy.format == "torch-legacy" and [t.shape for t in legacy.tensors] == [t.shape for t in info.tensors]


def test_cuda0_file_fails_here_and_map_location_fixes_it(model_dir, target):
    path = model_dir / "saved_on_cuda0.pt"
    info = read_model(path)
    assert info.devices == ["cuda:0"] and all(t.device == "cuda:0" for t in info.tensors)
    (cpu_only,) = _by_id(check_model(info, target, Machine([], {}, "cpu"), {}), "MODEL-DEVICE")
    assert cpu_only.status.value == "fail" and "map_location=\"cpu\"" in cpu_only.remedy
    real = real_load(path, TORCH_LOAD_SAFE, model_dir)
    assert not real["ok"] and "CUDA" in real["error"], real
    remedy_call = cpu_only.remedy.replace(repr(str(path)), "path")
    assert real_load(path, f"import torch; {remedy_call}", model_dir)["ok"]
    (two_gpus,) = _by_id(check_model(info, target, Machine([0, 1], {}, "two"), {}), "MODEL-DEVICE")
    assert two_gpus.status.value == "ok"
    (other_gpu,) = _by_id(check_model(info, target, Machine([1], {}, "one"), {}), "MODEL-DEVICE")
    assert other_gpu.status.value == "fail" and '{"cuda:0": "cuda:1"}' in other_gpu.remedy


@pytest.mark.parametrize("name", ["scripted.pt", "traced.pt"])
def test_torchscript_operators_are_registered_as_the_real_runtime_says(model_dir, target, name):
    info = read_model(model_dir / name)
    assert info.format == "torchscript" and "relu" in info.operators.get("aten", [])
    (ops,) = _by_id(check_model(info, target, Machine(), {}), "MODEL-OPS")
    assert ops.status.value == "ok", ops.message
    assert real_load(model_dir / name, "import torch; torch.jit.load(path)", model_dir)["ok"]
    real_names = real_load(model_dir / name, "import torch; names = {s.name for s in torch._C._jit_get_all_schemas()}; "
                           f"missing = [o for o in {info.operators['aten']!r} if 'aten::' + o not in names]; "
                           "assert not missing, missing", model_dir)
    assert real_names["ok"], real_names


def test_registry_read_from_libtorch_matches_jit_get_all_schemas(target):
    torch = pytest.importorskip("torch")
    from rcompat.models.target import registered

    registry = target.operators()
    schemas = {s.name for s in torch._C._jit_get_all_schemas()}
    aten = [s for s in schemas if s.startswith("aten::")]
    assert all(registered(registry, *s.split("::")) for s in aten)  # every aten op of the same torch
    found = sum(registered(registry, *s.split("::")) for s in schemas)
    assert found / len(schemas) > 0.95, (found, len(schemas))
    assert not registered(registry, "torchvision", "nms") and not registered(registry, "aten", "no_such_op_xyz")


def test_allowlist_read_statically_covers_torch_own(target):
    pytest.importorskip("torch")
    from torch._weights_only_unpickler import _get_allowed_globals

    allow = target.allowlist()
    assert all(allow.allows(name) for name in _get_allowed_globals())
    assert not any(allow.allows(name) for name in ("os.system", "posix.system", "builtins.eval", "builtins.exec",
                                                   "subprocess.Popen", "numpy.core.multiarray._reconstruct"))


def test_numpy_global_is_judged_against_the_target_numpy(model_dir, target):
    (verdict,) = _by_id(_check(model_dir / "numpy_array.pt", target), "MODEL-NUMPY")
    assert verdict.status.value == "ok" and "numpy._core" in verdict.title  # numpy 2 wrote it, numpy 2 reads it


def test_r_reader_verdicts(model_dir, target):
    (sd,) = _by_id(_check(model_dir / "state_dict.pt", target), "MODEL-R")
    (plain,) = _by_id(_check(model_dir / "plain_dict.pt", target), "MODEL-R")
    assert sd.status.value == "warn" and "OrderedDict" in sd.message
    assert plain.status.value == "ok"


def test_safetensors_and_rtorch_layout(model_dir, tmp_path, target):
    info = read_model(model_dir / "weights.safetensors")
    assert info.format == "safetensors" and {t.name for t in info.tensors} == {"lin.weight", "lin.bias"}
    # R torch v3 = safetensors, then R's serialize() bytes (written here by R itself through Rscript)
    import shutil
    import subprocess

    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.skip("Rscript not on PATH")
    tail = tmp_path / "tail.bin"
    subprocess.run([rscript, "-e", f"writeBin(serialize(list(a = 1L), NULL), {str(tail)!r})"], check=True, timeout=120)
    rfile = tmp_path / "model.pt"
    rfile.write_bytes((model_dir / "weights.safetensors").read_bytes() + tail.read_bytes())
    rinfo = read_model(rfile)
    assert rinfo.format == "rtorch" and rinfo.details["r_serialization"]["version"] == 3
    (verdict,) = _by_id(check_model(rinfo, target, Machine(), {}), "MODEL-R")
    real = real_load(rfile, "import safetensors.torch; safetensors.torch.load_file(path)", tmp_path)
    assert verdict.status.value == "warn" and not real["ok"] and "not fully covered" in real["error"]


def test_keras_verdicts_match_load_model(keras_dir, target):
    for name in ("plain.keras", "lambda.keras", "plain.h5", "lambda.h5"):
        findings = _check(keras_dir / name, target)
        warns_lambda = any(f.id == "MODEL-KERAS" and "Lambda" in f.title for f in findings)
        real = real_load(keras_dir / name, "import keras; keras.saving.load_model(path)", keras_dir)
        if name.startswith("plain"):
            assert real["ok"] and not warns_lambda, (name, real)
        elif name.endswith(".keras"):
            assert not real["ok"] and "safe_mode" in real["error"] and warns_lambda, (name, real)
            assert real_load(keras_dir / name, "import keras; keras.saving.load_model(path, safe_mode=False)",
                             keras_dir)["ok"]
        else:  # legacy h5 stores the lambda as marshalled bytecode: the verdict follows what keras does
            assert warns_lambda == (not real["ok"]), (name, real, warns_lambda)


def test_savedmodel_directory_under_keras3(tmp_path, target):
    sm = tmp_path / "sm"
    (sm / "variables").mkdir(parents=True)
    (sm / "saved_model.pb").write_bytes(b"\x08\x01")
    (verdict,) = _by_id(check_models([str(sm)], target=target, device="cpu").findings, "MODEL-KERAS")
    assert verdict.status.value == "fail" and "TFSMLayer" in verdict.remedy
    real = real_load(sm, "import keras; keras.saving.load_model(path)", tmp_path)
    assert not real["ok"] and "TFSMLayer" in real["error"], real


def test_cli_json_is_stable_and_exit_codes(model_dir):
    out = rcompat_cli("model", "inspect", str(model_dir / "state_dict.pt"), "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema_version"] == 1 and doc["command"] == "model inspect"
    (model,) = doc["models"]
    assert set(model) == {"path", "format", "format_version", "producer", "size_bytes", "tensor_bytes", "devices",
                          "globals", "operators", "tensors", "details"}
    assert set(model["tensors"][0]) == {"name", "dtype", "shape", "nbytes", "device", "parameter"}
    check = rcompat_cli("model", "check", str(model_dir / "custom_class.pt"), "--device", "cpu", "--format", "json")
    assert check.returncode == 1 and json.loads(check.stdout)["command"] == "model check"
    ok = rcompat_cli("model", "check", str(model_dir / "plain_dict.pt"), "--device", "cpu")
    assert ok.returncode == 0, ok.stdout
