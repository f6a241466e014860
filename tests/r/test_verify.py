"""Verification children: a segfault, a hang and an R error are findings; the tool survives."""
from __future__ import annotations

import time

from rcompat.r.facts import probe
from rcompat.r.verify import verify


def _facts(lib):
    return probe(timeout=60, lib_paths=[str(lib)], engine="rscript", discover_python=False)


def test_working_packages_verify_ok(facts_ok):
    torch = verify("torch", facts_ok, timeout=60)
    assert torch.status.value == "ok", torch.message
    assert torch.evidence["results"]["matmul_shape"] == [3, 3]
    assert torch.evidence["results"]["cuda_available"] is False
    assert "CUDA not available" in torch.title
    assert verify("keras", facts_ok, timeout=60).status.value == "ok"
    tf = verify("tensorflow", facts_ok, timeout=60)
    assert tf.status.value == "ok" and tf.evidence["results"]["matmul_sum"] == 54


def test_not_installed_is_skipped_honestly(facts_ok):
    finding = verify("keras3", facts_ok, timeout=60)
    assert finding.status.value == "skip" and "not installed" in finding.title
    assert finding.evidence == {}  # no child was started


def test_segfault_in_native_code_is_a_fail_naming_signal_step_and_output(rlibs):
    finding = verify("torch", _facts(rlibs["segv"]), timeout=60)
    assert finding.status.value == "fail"
    assert "SIGSEGV" in finding.title
    assert "torch_randn(3, 3)" in finding.message
    assert "caught segfault" in finding.message  # the last output lines
    assert finding.evidence["signal"] == "SIGSEGV"
    assert finding.evidence["last_step"] == "torch_randn(3, 3)"


def test_hang_is_a_fail_within_the_timeout_and_the_child_is_killed(rlibs):
    facts = _facts(rlibs["hang"])
    start = time.monotonic()
    finding = verify("torch", facts, timeout=5)
    elapsed = time.monotonic() - start
    assert elapsed < 10
    assert finding.status.value == "fail"
    assert finding.evidence["timed_out"] is True
    assert "hung" in finding.title and "torch_randn(3, 3)" in finding.message


def test_r_error_is_a_fail_with_the_message_and_step(rlibs):
    finding = verify("torch", _facts(rlibs["nolantern"]), timeout=60)
    assert finding.status.value == "fail"
    assert "Lantern is not loaded" in finding.message
    assert "torch_randn(3, 3)" in finding.title


def test_doctor_exits_1_on_a_segfaulting_torch_without_crashing(cli, rlibs):
    proc = cli("doctor", "--only", "r", "--format", "json", env={"R_LIBS": str(rlibs["segv"])})
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    import json

    report = json.loads(proc.stdout)
    by_id = {f["id"]: f for f in report["findings"]}
    assert by_id["R-TORCH-VERIFY"]["status"] == "fail"
    assert by_id["R-TORCH-VERIFY"]["evidence"]["signal"] == "SIGSEGV"
    assert by_id["R-VERSION"]["status"] == "ok"
    assert report["facts"]["r"]["packages"]["torch"]["path"].startswith(str(rlibs["segv"]))


def test_verify_cli_reports_a_hang(cli, rlibs):
    proc = cli("r", "verify", "--package", "torch", "--lib", str(rlibs["hang"]), "--timeout", "5")
    assert proc.returncode == 1
    assert "R-TORCH-VERIFY" in proc.stdout and "hung" in proc.stdout


def test_cuda_branch_round_trip_is_checked(rlibs):
    # The fixture pretends a GPU (RCOMPAT_FIXTURE_CUDA): exercises verify_torch.R's CUDA steps.
    good = probe(timeout=60, lib_paths=[str(rlibs["ok"])], engine="rscript", discover_python=False,
                 env={"RCOMPAT_FIXTURE_CUDA": "1"})
    finding = verify("torch", good, timeout=60)
    assert finding.status.value == "ok" and "GPU round trip ok" in finding.title
    bad = probe(timeout=60, lib_paths=[str(rlibs["ok"])], engine="rscript", discover_python=False,
                env={"RCOMPAT_FIXTURE_CUDA": "corrupt"})
    finding = verify("torch", bad, timeout=60)
    assert finding.status.value == "fail" and "came back changed" in finding.title


def test_verify_json_needs_no_jsonlite_and_keeps_scalars_scalar(rlibs, tmp_path):
    # Without jsonlite on the library path (an R_LIBS_SITE that hides site-library), the scripts'
    # JSON still unboxes one-element values: gpu_count is 0, not [0].
    facts = probe(timeout=60, lib_paths=[str(rlibs["ok"])], engine="rscript", discover_python=False,
                  env={"R_LIBS_SITE": str(tmp_path)})
    tf = verify("tensorflow", facts, timeout=60)
    assert tf.status.value == "ok", tf.message
    assert tf.evidence["results"]["gpu_count"] == 0 and tf.evidence["results"]["matmul_sum"] == 54
    assert "0 GPU(s) seen by TensorFlow" in tf.title


def test_each_failure_kind_gets_its_own_remedy_from_the_symptom_table(rlibs):
    from rcompat.explain import load_symptoms

    table = {s.id: s for s in load_symptoms()}
    segv = verify("torch", _facts(rlibs["segv"]), timeout=60)
    nolantern = verify("torch", _facts(rlibs["nolantern"]), timeout=60)
    abort = verify("torch", _facts(rlibs["abort"]), timeout=60)
    hang = verify("torch", _facts(rlibs["hang"]), timeout=5)
    kinds = {f.evidence["failure_kind"]: f for f in (segv, nolantern, abort, hang)}
    assert set(kinds) == {"SIGSEGV", "error", "SIGABRT", "hang"}, kinds.keys()
    assert nolantern.evidence["symptom"] == "lantern-not-loaded"
    assert nolantern.remedy == table["lantern-not-loaded"].remedy.replace("`rcompat elf missing`", "`rcompat elf missing`")
    assert segv.evidence["symptom"] == "r-caught-segfault"
    assert abort.evidence["symptom"] == "native-abort" and "SIGABRT" in abort.title
    assert hang.evidence["symptom"] == "child-hung"
    remedies = [f.remedy for f in (segv, nolantern, abort, hang)]
    assert len(set(remedies)) == 4, remedies
    for finding in (segv, nolantern, abort, hang):
        assert finding.source  # the table row's source travels with its remedy
        assert '{"step"' not in finding.message and '"step":' not in finding.message, finding.message


def test_protocol_lines_never_reach_the_text_report(cli, rlibs):
    proc = cli("r", "verify", "--package", "torch", "--lib", str(rlibs["segv"]))
    assert proc.returncode == 1
    assert '{"step"' not in proc.stdout and "caught segfault" in proc.stdout
