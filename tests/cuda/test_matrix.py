"""Matrix logic on fixture tables (tests/cuda/tables*) and on the packaged tables."""
from __future__ import annotations

from pathlib import Path

import pytest

from rcompat.cuda.matrix import check_stack
from rcompat.cuda.tables import (cuda_from_build_tag, libtorch_to_rtorch, load_tables, rtorch_to_libtorch)
from rcompat.cuda.validate import validate_tables
from rcompat.errors import DataError, UsageError

HERE = Path(__file__).resolve().parent
TABLES, TABLES_BAD = HERE / "tables", HERE / "tables_contradictory"


def by_id(findings):
    return {f.id: f for f in findings}


def test_issue_example_names_the_framework_layer_and_the_cu121_build():
    found = by_id(check_stack({"driver": "535.104", "cuda": "12.4", "torch": "2.3.0"}))
    assert found["CUDA-MATRIX-DRIVER"].status.value == "warn"  # 535 < 550.54.14 but ≥ 525.60.13
    assert "minor-version compatibility" in found["CUDA-MATRIX-DRIVER"].message
    summary = found["CUDA-MATRIX"]
    assert summary.status.value == "fail"
    assert summary.title == "first incompatible layer: framework build (torch)"
    assert "install the cu121 build of torch 2.3.0" in summary.remedy
    assert "torch 2.4, 2.5 or 2.6" in summary.remedy


def test_summary_is_last_and_layers_are_in_stack_order():
    ids = [f.id for f in check_stack({"tensorflow": "3.0", "torch": "7.0", "driver": "600", "cuda": "12.1",
                                      "cudnn": "8.9.2"}, TABLES)]
    assert ids == ["CUDA-MATRIX-DRIVER", "CUDA-MATRIX-CUDNN", "CUDA-MATRIX-TORCH", "CUDA-MATRIX-TENSORFLOW",
                   "CUDA-MATRIX"]


def test_driver_below_family_minimum_fails_with_upgrade_fix():
    found = by_id(check_stack({"driver": "470.82.01", "cuda": "12.1", "torch": "7.0+cu121"}, TABLES))
    assert found["CUDA-MATRIX"].status.value == "fail"
    assert found["CUDA-MATRIX"].title == "first incompatible layer: driver"
    assert found["CUDA-MATRIX"].remedy.startswith("upgrade the driver to ≥ 530.30.02")
    assert "525.60.13" in found["CUDA-MATRIX"].remedy
    assert found["CUDA-MATRIX-TORCH"].status.value == "ok"


def test_driver_at_toolkit_minimum_is_ok_and_rows_are_evidence():
    f = by_id(check_stack({"driver": "550.54.14", "cuda": "12.4"}, TABLES))["CUDA-MATRIX-DRIVER"]
    assert f.status.value == "ok"
    assert f.evidence["rows"][0]["row"] == "cuda_driver.csv:7"
    assert f.source.startswith("fixture")


def test_driver_between_toolkit_and_family_minimum():
    found = by_id(check_stack({"driver": "527.41", "torch": "7.0+cu121"}, TABLES))
    assert found["CUDA-MATRIX-DRIVER"].status.value == "warn"
    found = by_id(check_stack({"driver": "520.61.05", "torch": "7.0+cu121"}, TABLES))
    assert found["CUDA-MATRIX-DRIVER"].status.value == "fail"


def test_driver_cuda_alone_judges_the_driver_layer():
    assert by_id(check_stack({"driver_cuda": "12.4", "cuda": "12.1"}, TABLES))["CUDA-MATRIX-DRIVER"].status.value == "ok"
    assert by_id(check_stack({"driver_cuda": "12.0", "cuda": "12.1"}, TABLES))["CUDA-MATRIX-DRIVER"].status.value == "warn"
    assert by_id(check_stack({"driver_cuda": "11.8", "cuda": "12.1"}, TABLES))["CUDA-MATRIX-DRIVER"].status.value == "fail"


def test_cudnn_layer_ok_untested_and_wrong_major():
    assert by_id(check_stack({"cuda": "12.4", "cudnn": "9.1.0"}, TABLES))["CUDA-MATRIX-CUDNN"].status.value == "ok"
    newer = by_id(check_stack({"cuda": "12.4", "cudnn": "8.9.2"}, TABLES))["CUDA-MATRIX-CUDNN"]
    assert newer.status.value == "warn" and "use cuDNN ≥ 9.1.0" in newer.remedy
    wrong = by_id(check_stack({"cuda": "12.1", "cudnn": "8.7.0"}, TABLES))["CUDA-MATRIX-CUDNN"]
    assert wrong.status.value == "fail" and "CUDA 11.x only" in wrong.message


def test_cublas_layer():
    assert by_id(check_stack({"cuda": "12.4", "cublas": "12.4.2"}, TABLES))["CUDA-MATRIX-CUBLAS"].status.value == "ok"
    assert by_id(check_stack({"cuda": "12.4", "cublas": "12.1.3"}, TABLES))["CUDA-MATRIX-CUBLAS"].status.value == "warn"
    assert by_id(check_stack({"cuda": "12.4", "cublas": "11.11.3"}, TABLES))["CUDA-MATRIX-CUBLAS"].status.value == "fail"


def test_cpu_build_with_cuda_requested_fails_without_is_fine():
    assert by_id(check_stack({"torch": "7.0+cpu"}, TABLES))["CUDA-MATRIX"].status.value == "ok"
    f = by_id(check_stack({"torch": "7.0+cpu", "cuda": "12.1"}, TABLES))["CUDA-MATRIX-TORCH"]
    assert f.status.value == "fail" and "CPU-only build of torch 7.0" in f.message
    assert "cu121" in f.remedy


def test_torch_min_driver_end_to_end_claim():
    f = by_id(check_stack({"torch": "7.1", "cuda": "12.4", "driver": "529"}, TABLES))["CUDA-MATRIX-TORCH"]
    assert f.status.value == "fail" and "≥ 530.30.02" in f.remedy


def test_rtorch_unsupported_cuda_names_alternatives():
    f = by_id(check_stack({"rtorch": "0.50.3", "cuda": "12.4"}, TABLES))["CUDA-MATRIX-RTORCH"]
    assert f.status.value == "fail"
    assert "Unsupported CUDA version" in f.message and "CUDA=cpu" in f.remedy
    assert by_id(check_stack({"rtorch": "0.50.0.9000", "cuda": "12.1"}, TABLES))["CUDA-MATRIX-RTORCH"].status.value == "ok"
    real = by_id(check_stack({"rtorch": "0.12.0", "cuda": "12.3"}))["CUDA-MATRIX-RTORCH"]
    assert real.status.value == "fail" and "0.14.0" not in real.remedy and "11.7 or 11.8" in real.remedy


def test_tensorflow_major_mismatch_fails_minor_older_warns():
    assert by_id(check_stack({"tensorflow": "3.0.1", "cuda": "11.8"}, TABLES))["CUDA-MATRIX-TENSORFLOW"].status.value == "fail"
    assert by_id(check_stack({"tensorflow": "3.0", "cuda": "12.0"}, TABLES))["CUDA-MATRIX-TENSORFLOW"].status.value == "warn"
    assert by_id(check_stack({"tensorflow": "3.0", "cudnn": "9.1.0"}, TABLES))["CUDA-MATRIX-TENSORFLOW"].status.value == "fail"


def test_unknown_versions_are_skipped_not_guessed():
    found = by_id(check_stack({"torch": "99.0", "rtorch": "9.9.9", "tensorflow": "0.1"}, TABLES))
    assert {found[i].status.value for i in ("CUDA-MATRIX-TORCH", "CUDA-MATRIX-RTORCH", "CUDA-MATRIX-TENSORFLOW")} == {"skip"}
    assert found["CUDA-MATRIX"].status.value == "skip"


def test_bad_stack_input_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown stack key 'gpu'"):
        check_stack({"gpu": "A100"})
    with pytest.raises(UsageError, match="not a version"):
        check_stack({"driver": "latest"})
    with pytest.raises(UsageError, match="does not exist"):
        check_stack({"driver": "550"}, "/nonexistent/tables")


def test_malformed_table_is_a_data_error(tmp_path):
    (tmp_path / "cuda_driver.csv").write_text("cuda,min_driver,kind,source\n12.4,five hundred,toolkit,x\n")
    with pytest.raises(DataError, match="min_driver 'five hundred' is not a version"):
        load_tables(tmp_path)
    (tmp_path / "cuda_driver.csv").write_text("cuda,min_driver,kind,source\n12.4,550,toolkit,\n")
    with pytest.raises(DataError, match="lacks 'source'"):
        load_tables(tmp_path)


def test_validate_consistent_fixture_and_packaged_tables():
    assert validate_tables(TABLES).exit_code() == 0
    packaged = validate_tables()
    assert packaged.exit_code() == 0, [f.message for f in packaged.findings if f.status.value == "fail"]
    assert packaged.facts["cuda_tables"]["relations_checked"] > 50


def test_validate_catches_every_planted_contradiction_with_its_rows():
    report = validate_tables(TABLES_BAD)
    assert report.exit_code() == 1
    fails = [f for f in report.findings if f.status.value == "fail" and f.id != "CUDA-MATRIX-VALIDATE"]
    kinds = {f.id.rsplit("-", 1)[1] for f in fails}
    assert kinds == {"CUDNN", "CUBLAS", "RTORCH", "CHAIN", "DRIVER", "DUPLICATE"}
    chain = next(f for f in fails if f.id.endswith("CHAIN"))
    # one finding per relation (ids unique): several cases of one relation are named in its message
    assert "torch_builds.csv:4" in chain.title + chain.message and "470.57.02" in chain.message
    assert len({f.id for f in report.findings}) == len(report.findings)
    cudnn = next(f for f in fails if f.id.endswith("CUDNN") and "torch_builds.csv:3" in f.title + f.message)
    assert "CUDA 11.x only" in cudnn.message
    assert [r["row"] for r in cudnn.evidence["rows"]][0] == "torch_builds.csv:3"


def test_rtorch_libtorch_lookups_on_the_packaged_table():
    assert rtorch_to_libtorch("0.14.2") == "2.5.1"
    assert rtorch_to_libtorch("0.16.0.9000") == "2.7.1"
    assert rtorch_to_libtorch("0.15.0") is None  # not recorded: no guess
    assert libtorch_to_rtorch("2.0.1") == ["0.12.0", "0.13.0"]
    assert libtorch_to_rtorch("2.5.1+cu124") == ["0.14.0"]
    assert libtorch_to_rtorch("1.8.1") == ["0.3.0"]
    assert libtorch_to_rtorch("nonsense") == []


def test_build_tags():
    assert [cuda_from_build_tag(t) for t in ("cu121", "cu118", "cu102", "cu92", "cpu", "rocm6.0")] == \
        ["12.1", "11.8", "10.2", "9.2", None, None]


def test_a_build_tag_that_names_no_cuda_build_is_not_judged_as_fitting():
    from rcompat.cuda.matrix import check_stack

    (torch,) = [f for f in check_stack({"torch": "2.3.0+cuXYZ"}) if f.id == "CUDA-MATRIX-TORCH"]
    assert torch.status.value == "skip" and "'+cuXYZ' names no CUDA build" in torch.message
    (rocm,) = [f for f in check_stack({"torch": "2.3.0+rocm6.0", "cuda": "12.1"}) if f.id == "CUDA-MATRIX-TORCH"]
    assert rocm.status.value == "skip"
