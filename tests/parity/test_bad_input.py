"""Unreadable or foreign files are one-line errors (exit 2); differences between valid records are
findings: shape, dtype, NaN on one side, other inputs."""
from __future__ import annotations

import numpy as np


class _CreatesFileWhenUnpickled:
    """Unpickling this calls open(path, "w"): the file's existence would prove the record was unpickled."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _compare(ph, a, b, *extra):
    return ph.run_cli("parity", "compare", str(a), str(b), *extra)


def test_truncated_file(ph, records, tmp_path):
    data = records["threads1"].read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    ph.assert_one_line_error(_compare(ph, records["threads1"], cut), str(cut), "truncated or corrupt")


def test_random_bytes(ph, records, tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(np.random.default_rng(5).bytes(4096))
    ph.assert_one_line_error(_compare(ph, junk, records["threads1"]), str(junk))


def test_pickled_object_array_is_refused_without_unpickling(ph, records, tmp_path):
    marker = tmp_path / "unpickled"
    evil = tmp_path / "evil.npz"

    with np.load(records["threads1"], allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["matmul_f32"] = np.array([_CreatesFileWhenUnpickled(marker)], dtype=object)
    with open(evil, "wb") as fh:
        np.savez(fh, **arrays)  # numpy pickles the object array
    ph.assert_one_line_error(_compare(ph, records["threads1"], evil), "pickled data", "never unpickled")
    assert not marker.exists()


def test_plain_npz_without_manifest(ph, records, tmp_path):
    plain = tmp_path / "plain.npz"
    np.savez(plain, x=np.arange(3.0))
    ph.assert_one_line_error(_compare(ph, plain, records["threads1"]), "without a 'manifest'")


def test_single_npy_file(ph, records, tmp_path):
    single = tmp_path / "single.npy"
    np.save(single, np.arange(3.0))
    ph.assert_one_line_error(_compare(ph, single, records["threads1"]), "single .npy")


def test_hand_edited_manifest_that_is_not_json(ph, records, tmp_path):
    with np.load(records["threads1"], allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    text = str(arrays["manifest"][()])
    arrays["manifest"] = np.array(text.replace('"format"', "format", 1))  # a quote lost in an editor
    edited = tmp_path / "edited.npz"
    with open(edited, "wb") as fh:
        np.savez(fh, **arrays)
    ph.assert_one_line_error(_compare(ph, records["threads1"], edited), "not valid JSON")


def test_manifest_naming_outputs_the_file_lacks(ph, records, tmp_path):
    def drop(arrays, manifest):
        del arrays["conv2d_f32"]

    cut = ph.rewrite(records["threads1"], tmp_path / "dropped.npz", drop)
    ph.assert_one_line_error(_compare(ph, records["threads1"], cut), "conv2d_f32", "incomplete")


def test_missing_file_and_directory(ph, records, tmp_path):
    ph.assert_one_line_error(_compare(ph, records["threads1"], tmp_path / "nope.npz"), "no such file")
    ph.assert_one_line_error(_compare(ph, records["threads1"], tmp_path), "is a directory")


def test_shape_and_dtype_differences_are_findings(ph, records, tmp_path):
    def reshape_and_retype(arrays, manifest):
        arrays["matmul_f32"] = arrays["matmul_f32"].T.copy()
        arrays["bmm_f32"] = arrays["bmm_f32"].astype(np.float64)
        manifest["cases"]["bmm_f32"]["outputs"]["bmm_f32"] = "float64"

    other = ph.rewrite(records["threads1"], tmp_path / "other.npz", reshape_and_retype)
    proc = _compare(ph, records["threads1"], other, "--format", "json")
    assert proc.returncode == 1
    f = ph.findings(proc)
    assert f["PARITY-matmul_f32"]["status"] == "fail" and "shape differs" in f["PARITY-matmul_f32"]["title"]
    assert "(64, 32)" in f["PARITY-matmul_f32"]["message"] and "(32, 64)" in f["PARITY-matmul_f32"]["message"]
    assert f["PARITY-bmm_f32"]["status"] == "fail" and "dtype differs" in f["PARITY-bmm_f32"]["title"]
    assert "float32" in f["PARITY-bmm_f32"]["message"] and "float64" in f["PARITY-bmm_f32"]["message"]


def test_nan_on_one_side_only_says_where(ph, records, tmp_path):
    def poison(arrays, manifest):
        arrays["softmax_f32"][3, 4] = np.nan
        arrays["layer_norm_f64"][0, 1] = np.inf

    nan = ph.rewrite(records["threads1"], tmp_path / "nan.npz", poison)
    proc = _compare(ph, records["threads1"], nan, "--format", "json")
    assert proc.returncode == 1
    f = ph.findings(proc)
    assert f["PARITY-softmax_f32"]["status"] == "fail"
    assert "NaN/Inf on one side only" in f["PARITY-softmax_f32"]["title"]
    assert "nan in B only at [3, 4]" in f["PARITY-softmax_f32"]["message"]
    assert "inf in B only at [0, 1]" in f["PARITY-layer_norm_f64"]["message"]
    same = _compare(ph, nan, nan)
    assert same.returncode == 0  # NaN at the same place on both sides is agreement


def test_other_inputs_are_a_failing_finding(ph, records, tmp_path):
    def reseed(arrays, manifest):
        arrays["input/mm_a"] = arrays["input/mm_a"] + 1.0
        manifest["seed"] = 7

    moved = ph.rewrite(records["threads1"], tmp_path / "moved.npz", reseed)
    proc = _compare(ph, records["threads1"], moved, "--format", "json")
    assert proc.returncode == 1
    inputs = ph.findings(proc)["PARITY-INPUTS"]
    assert inputs["status"] == "fail" and "mm_a" in inputs["message"] and "seed 0 vs 7" in inputs["message"]
    assert "--inputs" in inputs["remedy"]


def test_bad_options_exit_2(ph, records, tmp_path):
    out = tmp_path / "x.npz"
    for args in (["--threads", "0"], ["--inputs", str(tmp_path / "missing.npz")], ["--timeout", "nan"]):
        proc = ph.run_cli("parity", "record", "-o", str(out), *args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, args
    assert ph.run_cli("parity", "compare", str(records["threads1"]), str(records["threads1"]),
                      "--rtol", "-1").returncode == 2
    assert not out.exists()
