"""The R side through the torch-parity stand-in, user cases (good, raising, crashing), and CUDA."""
from __future__ import annotations

import pytest

USER_CASES = '''
import torch


def doubled(x):
    return x["mm_a"] * 2


def parts(x):
    return {"rowsum": x["ln_x"].sum(dim=1), "count": torch.tensor(x["ln_x"].numel())}


def raises(x):
    raise RuntimeError("this case is broken on purpose")


CASES = {"doubled": doubled, "parts": parts, "raises": raises}
'''


def test_r_side_through_the_stand_in_agrees_with_pytorch(ph, records, stand_in_lib, tmp_path):
    out = tmp_path / "r.npz"
    proc = ph.run_cli("parity", "record", "--side", "r", "--inputs", str(records["threads1"]), "-o", str(out),
                      env={"R_LIBS": str(stand_in_lib)})
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the stand-in lacks conv2d and autograd
    assert 'could not find function "nnf_conv2d"' in proc.stdout
    m = ph.manifest(out)
    assert m["side"] == "r" and m["interpreter"].endswith("Rscript") and m["torch_version"] == "0.13.0"
    assert m["cases"]["matmul_f32"]["status"] == "ok" and m["cases"]["conv2d_f64"]["status"] == "error"
    assert m["cases"]["matmul_tf32"]["status"] == "skip"
    cmp = ph.run_cli("parity", "compare", str(records["threads1"]), str(out), "--format", "json")
    assert cmp.returncode == 1
    f = ph.findings(cmp)
    implemented = ["matmul_f32", "bmm_f32", "softmax_f32", "log_softmax_f64", "layer_norm_f32",
                   "mlp_forward_f64", "sum_f32", "sum_f64"]
    for name in implemented:
        assert f[f"PARITY-{name}"]["status"] == "ok", f[f"PARITY-{name}"]
    assert f["PARITY-sum_f32"]["evidence"]["max_rel"] < 1e-5
    assert f["PARITY-conv2d_f32"]["status"] == "fail" and "missing in B" in f["PARITY-conv2d_f32"]["title"]
    assert "side (R torch vs PyTorch) (python vs r)" in f["PARITY-ENV"]["message"]


@pytest.mark.usefixtures("rscript")
def test_r_side_without_torch_is_a_one_line_error(ph, records, tmp_path):
    out = tmp_path / "none.npz"
    proc = ph.run_cli("parity", "record", "--side", "r", "-o", str(out), env={"R_LIBS": str(tmp_path)})
    if proc.returncode == 1:  # this machine has a real R torch after all
        return
    ph.assert_one_line_error(proc, "library(torch) failed")
    assert not out.exists()


def test_user_cases_good_and_raising(ph, records, tmp_path):
    ph.needs_torch()
    cases = tmp_path / "cases.py"
    cases.write_text(USER_CASES)
    out = tmp_path / "user.npz"
    proc = ph.run_cli("parity", "record", "--cases", str(cases), "--inputs", str(records["threads1"]),
                      "-o", str(out))
    assert proc.returncode == 1 and "raises: RuntimeError: this case is broken on purpose" in proc.stdout
    m = ph.manifest(out)
    assert m["cases"]["doubled"] == {"status": "ok", "outputs": {"doubled": "float64"}}
    assert m["cases"]["parts"]["outputs"] == {"parts.rowsum": "float64", "parts.count": "int64"}
    assert m["cases"]["raises"]["status"] == "error"
    assert m["cases"]["matmul_f32"]["status"] == "ok"  # the built-in suite still ran
    cmp = ph.run_cli("parity", "compare", str(out), str(out), "--format", "json")
    f = ph.findings(cmp)
    assert f["PARITY-doubled"]["status"] == "ok" and f["PARITY-parts.count"]["evidence"]["atol"] == 0
    assert f["PARITY-raises"]["status"] == "skip"  # neither side computed it
    assert cmp.returncode == 0
    without = ph.run_cli("parity", "compare", str(records["threads1"]), str(out), "--format", "json")
    assert without.returncode == 1 and ph.findings(without)["PARITY-doubled"]["title"] == "doubled: missing in A"


def test_a_case_that_kills_the_child_is_recorded_not_fatal(ph, tmp_path):
    ph.needs_torch()
    cases = tmp_path / "crash.py"
    cases.write_text("import os, signal\n"
                     "def crash(x):\n    os.kill(os.getpid(), signal.SIGSEGV)\n"
                     "CASES = {'crash': crash}\n")
    out = tmp_path / "crash.npz"
    proc = ph.run_cli("parity", "record", "--cases", str(cases), "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    m = ph.manifest(out)
    assert m["cases"]["crash"] == {"status": "error", "outputs": {},
                                   "message": "the child killed by SIGSEGV while running this case"}
    assert m["cases"]["sum_f64"]["status"] == "ok" and m["child"]["end"] == "killed by SIGSEGV"


def test_a_bad_cases_file_is_a_one_line_error(ph, tmp_path):
    ph.needs_torch()
    cases = tmp_path / "bad.py"
    cases.write_text("CASES = 3\n")
    out = tmp_path / "bad.npz"
    proc = ph.run_cli("parity", "record", "--cases", str(cases), "-o", str(out))
    ph.assert_one_line_error(proc, "--cases", "CASES = {'name': function(inputs) -> tensor}")
    assert not out.exists()


@pytest.mark.gpu
def test_cuda_record_compares_with_the_cpu_record(ph, records, tmp_path):
    ph.needs_torch()
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and driver (none here): the float16/bfloat16/TF32 variants and "
                    "the CPU-vs-CUDA tolerances are untested on this machine")
    out = tmp_path / "cuda.npz"
    proc = ph.run_cli("parity", "record", "--device", "cuda", "--inputs", str(records["threads1"]), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = ph.manifest(out)
    assert m["device"] == "cuda" and m["device_name"] and m["cases"]["matmul_tf32"]["status"] == "ok"
    assert m["cases"]["matmul_bf16"]["outputs"] == {"matmul_bf16": "bfloat16"}
    same = ph.run_cli("parity", "compare", str(out), str(out))
    assert same.returncode == 0, same.stdout
    cross = ph.run_cli("parity", "compare", str(records["threads1"]), str(out), "--format", "json")
    f = ph.findings(cross)
    assert f["PARITY-matmul_f64"]["status"] == "ok" and f["PARITY-matmul_f32"]["evidence"]["devices"] == "cpu-cuda"


def test_a_hanging_case_is_killed_at_the_timeout_and_recorded(ph, tmp_path):
    ph.needs_torch()
    cases = tmp_path / "hang.py"
    cases.write_text("import time\ndef hang(x):\n    time.sleep(600)\nCASES = {'hang': hang}\n")
    out = tmp_path / "hang.npz"
    proc = ph.run_cli("parity", "record", "--cases", str(cases), "--timeout", "20", "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    m = ph.manifest(out)
    assert m["cases"]["hang"]["status"] == "error" and "hung" in m["cases"]["hang"]["message"]
    assert m["cases"]["matmul_f64"]["status"] == "ok" and m["child"]["last_step"] == "hang"
