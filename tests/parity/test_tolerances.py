"""The tolerance table and the element-wise judgement, without running torch."""
from __future__ import annotations

import numpy as np

from rcompat.data import CONFIDENCE, load_toml
from rcompat.parity.comparison import array_stats
from rcompat.parity.tolerances import device_pair, environment_diff, tolerance_for


def test_every_row_has_a_source_a_confidence_and_sane_bounds():
    rows = load_toml("parity_tolerances.toml", "tolerance", required=("id", "source", "confidence", "precision",
                                                                       "devices", "rtol", "atol"))
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        assert row["confidence"] in CONFIDENCE and 0 <= row["rtol"] < 0.1 and 0 <= row["atol"] < 0.1, row


def test_float32_on_cpu_passes_thread_drift_and_fails_a_0_1_percent_drift():
    tol = tolerance_for("float32", "cpu-cpu")
    assert 1e-5 <= tol.rtol <= 1e-4 and tol.id == "float32-cpu-cpu"
    a = np.random.default_rng(1).standard_normal((32, 32)).astype(np.float32) * 10
    assert array_stats(a, a * np.float32(1 + 1.1e-6), tol)["outside"] == 0  # the largest measured drift
    assert array_stats(a, a * np.float32(1.001), tol)["outside"] > 900
    assert tolerance_for("float64", "cpu-cpu").rtol < tol.rtol < tolerance_for("float16", "cuda-cuda").rtol
    assert tolerance_for("float16", "cuda-cuda").rtol < tolerance_for("bfloat16", "cpu-cuda").rtol


def test_the_exact_device_pair_wins_over_any_and_options_override_one_bound():
    assert device_pair("cuda", "cpu") == "cpu-cuda" == device_pair("cpu", "cuda")
    assert tolerance_for("float32", "cpu-cuda").id == "float32-cpu-cuda"
    assert tolerance_for("int64", "cpu-cpu").rtol == 0 == tolerance_for("bool", "cpu-cpu").atol
    tol = tolerance_for("float32", "cpu-cpu", rtol=0.5)
    assert (tol.rtol, tol.atol) == (0.5, 1e-5) and "--rtol 0.5" in tol.source


def test_worst_element_is_the_one_furthest_past_its_bound():
    tol = tolerance_for("float64", "cpu-cpu")
    a = np.zeros((3, 4))
    b = a.copy()
    b[1, 2], b[2, 3] = 1e-3, 5e-7
    s = array_stats(a, b, tol)
    assert s["worst_index"] == [1, 2] and s["outside"] == 2 and s["max_abs"] == 1e-3
    scalar = array_stats(np.float64(2.0), np.float64(2.0), tol)
    assert scalar["worst_index"] == [] and scalar["outside"] == 0


def test_environment_differences_are_ordered_by_likely_cause():
    a = {"threads": 1, "tf32": {"matmul": False}, "torch_version": "2.13.0", "interpreter": "/a"}
    b = {"threads": 2, "tf32": {"matmul": True}, "torch_version": "2.13.0", "interpreter": "/b"}
    assert [d["field"] for d in environment_diff(a, b)] == ["tf32", "threads", "interpreter"]


def test_doctor_does_not_run_parity():
    from rcompat.areas import AREA_MODULES

    assert not any("parity" in name or "parity" in module for name, module in AREA_MODULES.items())


def test_the_child_needs_only_torch_numpy_and_light_rcompat_modules():
    """`--python` may name a venv holding torch and numpy only: the child must not import more."""
    import subprocess
    import sys

    code = ("import sys, rcompat.parity.child, rcompat.parity.suite\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'elftools', 'pandas', 'rpy2', 'pynvml', "
            "'numpy', 'torch'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
