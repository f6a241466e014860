"""A few hundred cases of each reader's fuzzer (`make fuzz` runs 5,000 of each): every mutant of a real
record or image ends in a result or rcompat's own one-line error, within limits, with nothing left."""
from __future__ import annotations


def test_fuzzed_parity_records_only_raise_parity_file_error(harness, load_helper, tmp_path):
    fuzz = load_helper("fuzz_npz", harness.REPO / "benchmarks/fuzz_npz.py")
    result = fuzz.run(cases=400, seed=11, workdir=tmp_path)
    assert result["failures"] == []
    assert result["outcomes"]["ParityFileError"] > 100 and result["outcomes"]["ok"] > 5  # both paths exercised


def test_fuzzed_images_only_raise_rcompat_errors_and_leave_nothing(harness, load_helper, tmp_path):
    fuzz = load_helper("fuzz_image", harness.REPO / "benchmarks/fuzz_image.py")
    result = fuzz.run(cases=400, seed=11, workdir=tmp_path)
    assert result["failures"] == []
    assert result["outcomes"]["RcompatError"] > 100 and result["outcomes"]["ok"] > 20
