"""Model files written during the run by the real libraries (torch 2.13.0, safetensors, keras 3 with its
torch backend), once per session; each test checks rcompat's prediction against the real loader."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = '''
import torch

class Custom:  # a pickled instance of this class needs the module importable and weights_only=False
    def __init__(self):
        self.weight = torch.ones(2, 2)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)).sum(dim=1)
'''


def _write_torch_files(d: Path) -> None:
    import numpy as np
    import safetensors.torch
    import torch

    sys.path.insert(0, str(d))
    import custom_mod

    net = custom_mod.Net()
    torch.save(net.state_dict(), d / "state_dict.pt")
    torch.save({k: v.detach() for k, v in net.state_dict().items()}, d / "plain_dict.pt")
    torch.save(net.state_dict(), d / "legacy.pt", _use_new_zipfile_serialization=False)
    torch.save(net, d / "full_module.pt")
    torch.save({"array": np.arange(6, dtype=np.float32)}, d / "numpy_array.pt")
    torch.save(custom_mod.Custom(), d / "custom_class.pt")
    torch.jit.save(torch.jit.script(net), d / "scripted.pt")
    torch.jit.save(torch.jit.trace(net, torch.ones(2, 3)), d / "traced.pt")
    safetensors.torch.save_file({k: v.contiguous() for k, v in net.state_dict().items()}, d / "weights.safetensors")
    # A checkpoint whose storages record cuda:0, written by torch.save itself on a CPU-only machine:
    # torch.serialization.register_package adds a location tagger, consulted before the built-in ones
    # (lower priority number first), that names every storage "cuda:0". The bytes are torch's own; only
    # the location string differs from a real GPU save, which is all a loader reads of the device.
    torch.serialization.register_package(1, lambda storage: "cuda:0", lambda storage, location: None)
    torch.save(net.state_dict(), d / "saved_on_cuda0.pt")


def _write_keras_files(d: Path) -> None:
    code = f"""
import os
os.environ["KERAS_BACKEND"] = "torch"
import keras
plain = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
plain.save({str(d / 'plain.keras')!r}); plain.save({str(d / 'plain.h5')!r})
lam = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Lambda(lambda x: x * 2)])
lam.save({str(d / 'lambda.keras')!r}); lam.save({str(d / 'lambda.h5')!r})
"""
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=300)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    d = tmp_path_factory.mktemp("models")
    (d / "custom_mod.py").write_text(MODULE)
    # In a child, so the location tagger registered for the cuda:0 file does not leak into this process.
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import conftest; conftest._write_torch_files(__import__('pathlib').Path({str(d)!r}))"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=300)
    return d


@pytest.fixture(scope="session")
def keras_dir(tmp_path_factory) -> Path:
    import importlib.util

    if importlib.util.find_spec("keras") is None or importlib.util.find_spec("h5py") is None:
        pytest.skip("keras and h5py are not installed (pip install keras h5py)")
    d = tmp_path_factory.mktemp("keras")
    _write_keras_files(d)
    return d


def real_load(path: Path, call: str, cwd: Path) -> dict:
    """What the real loader does with `path`, in a fresh child: {"ok": bool, "error": str}."""
    code = f"""
import json, os, sys
os.environ.setdefault("KERAS_BACKEND", "torch")
sys.path.insert(0, {str(cwd)!r})
path = {str(path)!r}
try:
    {call}
    print(json.dumps({{"ok": True, "error": ""}}))
except Exception as exc:
    print(json.dumps({{"ok": False, "error": type(exc).__name__ + ": " + str(exc)[:3000]}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd)
    return json.loads(out.stdout.strip().splitlines()[-1])


def rcompat_cli(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "rcompat", *argv], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)
