"""The vocabulary tables (error codes, sonames, symbol families) and the classes that read them: every
row cited, the names resolved the way the libraries spell them on Linux, Windows and macOS."""
from __future__ import annotations

import re

import pytest

from rcompat.explain import explain, load_symptoms, vocabulary
from rcompat.explain.classes import enrich
from rcompat.model import Status

SYMPTOMS = load_symptoms()


def test_every_row_cites_a_source_file_or_report():
    for rows in (vocabulary.error_codes(), vocabulary.symbol_families(), list(vocabulary.sonames().values())):
        for row in rows:
            assert re.search(r"[\w.-]+/[\w.-]+ [\w./-]+", row["source"]), row  # owner/repo path
            assert row.get("confidence") in ("high", "medium", "low")


def test_error_codes_cover_each_library_with_unique_numbers():
    families = {}
    for row in vocabulary.error_codes():
        assert row["kind"] in ("environment", "resource", "code", "transient"), row
        assert row["number"].isdigit() and row["meaning"] and row["message"]
        key = (row["family"], row["number"])
        assert key not in families, key
        families[key] = row["name"]
    assert {f for f, _ in families} == {"cudaError", "CUresult", "cublasStatus", "cudnnStatus", "cufftResult",
                                        "cusparseStatus", "ncclResult", "nvmlReturn"}
    assert families[("cudaError", "35")] == "cudaErrorInsufficientDriver"
    assert families[("cudaError", "710")] == "cudaErrorAssert"
    assert families[("cublasStatus", "13")] == "CUBLAS_STATUS_EXECUTION_FAILED"


def test_every_runtime_message_the_class_matches_is_a_message_of_the_table():
    row = next(s for s in SYMPTOMS if s.id == "cuda-error-code")
    messages = {r["message"].rstrip(".").lower() for r in vocabulary.error_codes()}
    literal = [p.pattern for p in row.patterns if p.pattern.startswith("(?P<cuda_message>")]
    assert len(literal) > 10
    for pattern in literal:
        text = pattern[len("(?P<cuda_message>"):-1].replace("\\(", "(").replace("\\)", ")")
        assert text.lower() in messages, text
    referenced = {r["symptom"] for r in vocabulary.error_codes() if r["symptom"]}
    assert referenced <= {s.id for s in SYMPTOMS}


@pytest.mark.parametrize("name, component, major, platform", [
    ("libcudnn_cnn.so.9", "a cuDNN 9 sub-library", "9", "linux"),
    ("/opt/x/libcudnn_ops_infer.so.8", "a cuDNN 8 sub-library", "8", "linux"),
    ("cudnn_engines_tensor_ir64_9.dll", "cuDNN {major}", "9", "windows"),
    ("cudart64_110.dll", "CUDA runtime {major}", "11", "windows"),
    ("C:\\Python312\\Lib\\site-packages\\torch\\lib\\fbgemm.dll", "torch's FBGEMM (CPU quantized kernels)", "", "windows"),
    ("@rpath/libc10.dylib", "libtorch (Python torch or R torch's install_torch())", "", "macos"),
    ("/usr/local/opt/libomp/lib/libomp.dylib", "LLVM OpenMP runtime", "", "macos"),
    ("libnvrtc-builtins.so.12.4", "NVRTC's builtins library (CUDA {major})", "12", "linux"),
    ("libpython3.11.so.1.0", "the Python shared library", "1", "linux"),
    ("vcruntime140_1.dll", "Microsoft Visual C++ Redistributable", "1", "windows"),
])
def test_library_names_resolve_to_who_provides_them(name, component, major, platform):
    lib = vocabulary.library(name)
    assert lib.row is not None and lib.row["component"] == component
    assert (lib.major, lib.platform) == (major, platform)


def test_an_unknown_library_has_no_row_and_no_invented_provider():
    groups = {"lib": "libmyplugin.so.3"}
    enrich("soname", groups)
    assert "provider" not in groups and "component" not in groups


@pytest.mark.parametrize("symbol, family, needs", [
    ("_ZN3c106detail14torchCheckFailEPKcS2_jRKSs", "libtorch (c10)", ""),
    ("_ZNK2at10TensorBase21__dispatch_contiguousEN3c1012MemoryFormatE", "libtorch (ATen)", ""),
    ("__nvJitLinkAddData_12_1", "nvJitLink", "12.1"),
    ("cublasLtMatmulPreferenceCreate", "cuBLASLt", ""),
    ("cublasGemmEx", "cuBLAS", ""),
    ("R_getVar", "R's C API", ""),
    ("Rf_allocVector3", "R's C API", ""),
    ("PyUnicode_AsUTF8AndSize", "the Python C API", ""),
    ("_Z22cudnnGenericOpTensorNdILi2EE13cudnnStatus_tP12cudnnContext", "cuDNN", ""),
    ("__kmpc_fork_call", "LLVM/Intel OpenMP", ""),
])
def test_an_undefined_symbol_is_placed_by_its_namespace_or_prefix(symbol, family, needs):
    from rcompat.elf.read.demangle import demangle_all

    demangled = demangle_all([symbol])[0] if symbol.startswith("_Z") else symbol
    row = vocabulary.symbol_family(symbol, demangled)
    assert row is not None and row["family"] == family, (symbol, demangled)
    groups = {"symbol": symbol, "symbol_demangled": demangled, "symbol_readable": demangled}
    enrich("symbol", groups)
    assert groups["symbol_remedy"].endswith(".")
    assert (f"nvJitLink {needs} or newer" in groups["symbol_owner"]) == bool(needs)


def test_a_code_error_code_is_a_warn_that_says_so_and_names_the_next_step():
    report = explain("RuntimeError: CUDA error: an illegal memory access was encountered\n"
                     "CUDA kernel errors might be asynchronously reported at some other API call", SYMPTOMS)
    finding = report.findings[0]
    assert finding.id == "EXPLAIN-CUDA-ERROR-CODE" and finding.status is Status.WARN
    assert "cudaErrorIllegalAddress (700" in finding.message and "not at how the environment" in finding.message
    assert "CUDA_LAUNCH_BLOCKING=1" in finding.remedy and report.exit_code() == 0


def test_an_environment_code_from_a_third_party_kernel_fails_with_its_meaning():
    report = explain("mmcv/ops/csrc: CUBLAS_STATUS_EXECUTION_FAILED when calling cublasSgemm( handle, opa, opb)",
                     SYMPTOMS)
    finding = report.findings[0]
    assert finding.status is Status.FAIL and "CUBLAS_STATUS_EXECUTION_FAILED (13" in finding.message
    assert "cupy/cupy cupy_backends/cuda/libs/cublas.pyx" in finding.source


@pytest.mark.parametrize("code, number, status", [
    ("CUDNN_STATUS_NOT_SUPPORTED_SHAPE", "3002", Status.WARN),               # the program's shapes: code
    ("CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART", "3006", Status.FAIL),  # two CUDA majors mixed
    ("CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER", "2003", Status.WARN),
])
def test_cudnn_9_renumbered_codes_are_read_with_their_cudnn_9_numbers(code, number, status):
    """cuDNN 9 renumbered cudnnStatus_t (1001, 2000, 3000, ...) and split the old codes into specific ones;
    a cuDNN 9 code is explained with the number cudnn_graph.h gives it, kind deciding WARN or FAIL."""
    finding = explain(f"RuntimeError: cuDNN error: {code}", SYMPTOMS).findings[0]
    assert finding.id == "EXPLAIN-CUDA-ERROR-CODE" and finding.status is status
    assert f"{code} ({number}," in finding.message and "cudnn_graph.h" in finding.source


def test_a_cudnn_8_code_says_what_cudnn_9_numbers_it():
    row = vocabulary.error_code(name="CUDNN_STATUS_NOT_INITIALIZED")
    assert row["number"] == "1" and "cuDNN 9 1001" in row["meaning"]


def test_an_unknown_code_name_places_nothing():
    assert [f.id for f in explain("cudaErrorSomethingNew happened", SYMPTOMS).findings] == ["EXPLAIN-NO-MATCH"]


def test_a_specific_row_wins_over_its_class_and_over_the_code_it_explains():
    text = ("cudaGetDeviceProperties returned 35\n-> CUDA driver version is insufficient for CUDA runtime version\n"
            "CUDA error at bandwidthTest.cu:255 code=35(cudaErrorInsufficientDriver)\n")
    assert [f.evidence["symptom"] for f in explain(text, SYMPTOMS).findings] == ["cuda-driver-insufficient"]


@pytest.mark.parametrize("text, finding_id", [
    ('OSError: [WinError 126] The specified module could not be found. Error loading '
     '"C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.',
     "EXPLAIN-WINDOWS-DLL-MISSING"),
    ("dlopen(/Library/Frameworks/R.framework/Versions/4.4/Resources/library/torch/lib/liblantern.dylib, 6): "
     "Library not loaded: @rpath/libomp.dylib", "EXPLAIN-MACOS-LIBRARY-MISSING"),
    ("NotImplementedError: The operator 'aten::_linalg_solve_ex.result' is not currently implemented for the MPS "
     "device.", "EXPLAIN-MPS-OPERATOR-MISSING"),
])
def test_windows_and_macos_texts_get_a_cause_and_say_the_probes_need_linux(text, finding_id):
    finding = explain(text, SYMPTOMS).findings[0]
    assert finding.id == finding_id and finding.remedy
    assert "need Linux" in finding.message
