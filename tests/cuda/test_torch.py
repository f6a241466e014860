"""Python torch probe with the real CPU wheel, in a real child process."""
from __future__ import annotations

import importlib.metadata

import pytest

from rcompat.cuda.torch_probe import (arch_support, decode_cudnn_version, devices_hidden, explain_unavailable,
                                      probe_torch, public_version)

try:
    TORCH_VERSION = importlib.metadata.version("torch")
except importlib.metadata.PackageNotFoundError:
    TORCH_VERSION = None

needs_torch = pytest.mark.skipif(TORCH_VERSION is None, reason="torch not installed (make test installs the CPU wheel)")


@pytest.fixture(scope="module")
def torch_facts():
    if TORCH_VERSION is None:
        pytest.skip("torch not installed (make test installs the CPU wheel)")
    return probe_torch(timeout=120)


@needs_torch
def test_cpu_wheel_is_explained_as_cpu_only_build(torch_facts):
    if "+cpu" not in TORCH_VERSION:
        pytest.skip(f"torch {TORCH_VERSION} is not a CPU wheel")
    assert torch_facts["status"] == "ok"
    assert torch_facts["is_available"] is False and torch_facts["cuda"] is None
    assert torch_facts["cudnn_version"] is None and torch_facts["arch_list"] == []
    why = explain_unavailable(torch_facts)
    assert why["id"] == "cpu-build"
    assert why["message"] == f"CPU-only build of torch {public_version(TORCH_VERSION)}"
    if TORCH_VERSION.startswith("2.13.0"):
        assert why["message"] == "CPU-only build of torch 2.13.0"


@needs_torch
def test_child_timeout_is_reported_not_raised():
    facts = probe_torch(timeout=0.05)
    assert facts["status"] == "failed"
    assert "hung" in facts["reason"] and facts["child"]["timed_out"] is True


@needs_torch
def test_hidden_devices_are_recorded_from_the_child_environment(torch_facts):
    import os

    env = dict(os.environ, CUDA_VISIBLE_DEVICES="-1")
    facts = probe_torch(timeout=120, env=env)
    assert facts["cuda_visible_devices"] == "-1"
    # a CPU build stays explained as a CPU build: the first rule that applies wins
    assert explain_unavailable(facts)["id"] == ("cpu-build" if facts["cuda"] is None else "devices-hidden")


def _cuda_build_facts(**kw):
    base = {"status": "ok", "version": "2.3.0+cu121", "cuda": "12.1", "hip": None, "is_available": False,
            "messages": [], "cuda_visible_devices": None}
    base.update(kw)
    return base


def test_driver_too_old_message_is_decoded_and_names_the_minimum_driver():
    text = ("CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). Please "
            "update your GPU driver by downloading and installing a new version from the URL")
    why = explain_unavailable(_cuda_build_facts(messages=[text]), lambda cuda: {"12.1": "530.30.02"}[cuda])
    assert why["id"] == "driver-too-old"
    assert why["message"] == ("the NVIDIA driver is too old for torch 2.3.0 (built for CUDA 12.1): "
                              "it supports CUDA 11.4")
    assert why["remedy"].startswith("Upgrade the driver to ≥ 530.30.02")


def test_no_driver_hidden_devices_and_unknown_reasons():
    assert explain_unavailable(_cuda_build_facts(messages=["Found no NVIDIA driver on your system. Please check"])
                               )["id"] == "no-driver"
    assert explain_unavailable(_cuda_build_facts(cuda_visible_devices=""))["id"] == "devices-hidden"
    assert explain_unavailable(_cuda_build_facts(messages=["something new"]))["id"] == "unknown"
    assert explain_unavailable(_cuda_build_facts(is_available=True)) is None


def test_devices_hidden_values():
    assert [devices_hidden(v) for v in (None, "", "-1", "-1,0", "0", "GPU-abc", " 1")] == \
        [False, True, True, True, False, False, False]


def test_cudnn_integer_decoding_both_schemes():
    assert decode_cudnn_version(8902) == "8.9.2"
    assert decode_cudnn_version(8700) == "8.7.0"
    assert decode_cudnn_version(90100) == "9.1.0"
    assert decode_cudnn_version(90501) == "9.5.1"
    assert decode_cudnn_version(None) is None


@pytest.mark.parametrize("cc,ok,how", [
    ("8.6", True, "sm_86 is compiled in"),
    ("8.9", True, "sm_86 cubins run on 8.9"),
    ("9.0", True, "sm_90 is compiled in"),
    ("10.0", True, "compute_90 PTX"),
    ("3.7", False, "below the oldest compiled target sm_50"),
])
def test_arch_support_rules(cc, ok, how):
    arch = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "compute_90"]
    got_ok, got_how = arch_support(arch, cc)
    assert got_ok is ok and how in got_how


def test_arch_specific_targets_do_not_run_elsewhere():
    assert arch_support(["sm_90a"], "9.0")[0] is True  # arch-specific: runs on exactly 9.0
    assert arch_support(["sm_90a"], "9.1")[0] is False
