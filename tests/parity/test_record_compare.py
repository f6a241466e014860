"""The real suite on this machine's CPU torch: thread counts agree, a 0.1% drift does not."""
from __future__ import annotations

import sys

import pytest


def test_record_writes_inputs_outputs_and_manifest(ph, records):
    import numpy as np

    m = ph.manifest(records["threads1"])
    assert m["format"] == "rcompat-parity" and m["side"] == "python" and m["seed"] == 0
    assert m["threads"] == 1 and m["device"] == "cpu" and m["torch_version"].startswith("2.")
    assert m["interpreter"] and "blas" in m and m["tf32"] == {"matmul": False, "cudnn": True}
    assert m["tf32_in_effect"] == {"matmul": False, "cudnn": False} and m["precisions"] == ["float32", "float64"]
    assert m["cases"]["matmul_f32"] == {"status": "ok", "outputs": {"matmul_f32": "float32"}}
    assert m["cases"]["matmul_f16"]["status"] == "skip" and "cuda" in m["cases"]["matmul_f16"]["message"]
    with np.load(records["threads1"], allow_pickle=False) as npz:
        assert npz["matmul_f32"].dtype == np.float32 and npz["matmul_f32"].shape == (64, 32)
        assert npz["mlp_backward_f64.grad_w1"].shape == (32, 20)
        expected = np.random.default_rng(0).standard_normal((64, 48))
        assert np.array_equal(npz["input/mm_a"], expected)


def test_records_with_one_and_two_threads_agree(ph, records):
    proc = ph.run_cli("parity", "compare", str(records["threads1"]), str(records["threads2"]), "--format", "json")
    assert proc.returncode == 0, proc.stdout
    findings = ph.findings(proc)
    assert findings["PARITY-INPUTS"]["status"] == "ok"
    assert "thread count (1 vs 2)" in findings["PARITY-ENV"]["message"]
    sum_f32 = findings["PARITY-sum_f32"]
    assert sum_f32["status"] == "ok" and sum_f32["evidence"]["rtol"] == 1e-5
    assert "parity_tolerances" not in sum_f32["source"] and "measured" in sum_f32["source"]
    assert all(f["status"] in ("ok", "skip") for f in findings.values())


def test_a_0_1_percent_drift_in_one_float32_output_fails_naming_it(ph, records, tmp_path):
    def drift(arrays, manifest):
        arrays["matmul_f32"] = (arrays["matmul_f32"] * 1.001).astype("float32")

    perturbed = ph.rewrite(records["threads1"], tmp_path / "perturbed.npz", drift)
    proc = ph.run_cli("parity", "compare", str(records["threads1"]), str(perturbed), "--format", "json")
    assert proc.returncode == 1
    findings = ph.findings(proc)
    bad = [f for f in findings.values() if f["status"] == "fail"]
    assert [f["id"] for f in bad] == ["PARITY-matmul_f32"]
    ev = bad[0]["evidence"]
    assert abs(ev["max_rel"] - 1e-3) < 1e-4 and ev["outside"] > 0 and len(ev["worst_index"]) == 2
    text = ph.run_cli("parity", "compare", str(records["threads1"]), str(perturbed))
    assert "FAIL  PARITY-matmul_f32" in text.stdout and "worst element [" in text.stdout
    loose = ph.run_cli("parity", "compare", str(records["threads1"]), str(perturbed), "--rtol", "0.01",
                    "--format", "json")
    assert loose.returncode == 0
    assert "--rtol 0.01 on the command line" in ph.findings(loose)["PARITY-matmul_f32"]["source"]


def test_drift_below_the_thread_count_bound_passes(ph, records, tmp_path):
    def drift(arrays, manifest):
        arrays["sum_f32"] = (arrays["sum_f32"] * (1 + 2e-6)).astype("float32")

    slight = ph.rewrite(records["threads1"], tmp_path / "slight.npz", drift)
    assert ph.run_cli("parity", "compare", str(records["threads1"]), str(slight)).returncode == 0


def test_a_second_interpreter_records_comparable_results(ph, records, tmp_path):
    ph.needs_torch()
    venv_python = ph.REPO / ".venv" / "bin" / "python"
    python = str(venv_python if venv_python.exists() else sys.executable)
    out = tmp_path / "other.npz"
    proc = ph.run_cli("parity", "record", "-o", str(out), "--python", python, "--inputs", str(records["threads1"]),
                   "--threads", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"interpreter {python}" in proc.stdout
    assert ph.manifest(out)["interpreter"] == python and ph.manifest(out)["inputs_from"] == str(records["threads1"])
    assert ph.run_cli("parity", "compare", str(records["threads1"]), str(out)).returncode == 0


def test_an_interpreter_without_torch_is_a_one_line_error(ph, tmp_path):
    out = tmp_path / "none.npz"
    proc = ph.run_cli("parity", "record", "-o", str(out), "--python", "/usr/bin/python3")
    probe = ph.run_cli("parity", "record", "-o", str(out), "--python", str(tmp_path / "missing-python"))
    assert probe.returncode == 2 and "no such file" in probe.stderr
    if proc.returncode == 0:  # a system Python that has torch and numpy after all
        return
    assert proc.returncode == 2 and "cannot import torch" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()


def test_cuda_without_a_gpu_records_every_case_as_skipped(ph, tmp_path):
    ph.needs_torch()
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: tests/parity/test_gpu.py covers the CUDA record")
    out = tmp_path / "cuda.npz"
    proc = ph.run_cli("parity", "record", "-o", str(out), "--device", "cuda")
    assert proc.returncode == 0 and "0 ok, 0 error" in proc.stdout
    m = ph.manifest(out)
    assert {c["status"] for c in m["cases"].values()} == {"skip"}
    assert "CUDA not available" in m["cases"]["matmul_f32"]["message"]
    cmp = ph.run_cli("parity", "compare", str(out), str(out), "--format", "json")
    assert cmp.returncode == 0
    assert {f["status"] for f in ph.findings(cmp).values() if f["id"].startswith("PARITY-S")} == {"skip"}
