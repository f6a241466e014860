"""Does the installed torch / keras / tensorflow actually run? Ask a child Rscript.

rcompat/r_scripts/verify_torch.R and verify_keras.R print `{"step": ...}` before each step and results
after. The child runs through rcompat.isolate.run_child with a timeout, so a segfault in LibTorch
or a hung CUDA initialisation ends the child, and here becomes a `fail` finding that names the
signal, the step and the last lines of output. Packages that are not installed are not verified.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rcompat.isolate import ChildResult, child_failure, run_child
from rcompat.model import Finding, Status
from rcompat.r.facts import RFacts
from rcompat.r.scripts import scripts_dir
from rcompat.r.verify_remedy import diagnose, user_output

AREA = "r"
TAIL_IN_MESSAGE = 8


@dataclass(frozen=True)
class Verifier:
    package: str
    finding_id: str
    script: str
    args: tuple[str, ...]
    what: str
    remedy: str


VERIFIERS: dict[str, Verifier] = {v.package: v for v in (
    Verifier("torch", "R-TORCH-VERIFY", "verify_torch.R", (), "R torch verification",
             "Reinstall torch's native part in a fresh R session (torch::install_torch()); "
             "check the torch rules above and `rcompat cuda probe` for the CUDA side."),
    Verifier("keras", "R-KERAS-VERIFY", "verify_keras.R", ("keras",), "R keras verification",
             "Check the Python reticulate binds (R-RETICULATE-PYTHON) has TensorFlow/Keras of a "
             "version this keras supports."),
    Verifier("keras3", "R-KERAS3-VERIFY", "verify_keras.R", ("keras3",), "R keras3 verification",
             "Check the Python reticulate binds (R-RETICULATE-PYTHON) has Keras 3 and a backend; "
             "keras3::install_keras() creates one."),
    Verifier("tensorflow", "R-TF-VERIFY", "verify_keras.R", ("tensorflow",),
             "R tensorflow verification",
             "Check the Python reticulate binds (R-RETICULATE-PYTHON) has TensorFlow; "
             "tensorflow::install_tensorflow() creates one."),
)}


def run_verification(verifier: Verifier, facts: RFacts, timeout: float) -> ChildResult:
    script = scripts_dir() / verifier.script
    return run_child([facts.install["rscript"], str(script), *verifier.args], timeout=timeout,
                     env=facts.child_env)


def verify(package: str, facts: RFacts, timeout: float = 60.0) -> Finding:
    """One finding for `package`: ok, fail (crash, hang, R error) or skip (not installed)."""
    verifier = VERIFIERS[package]
    base = {"id": verifier.finding_id, "area": AREA}
    if not facts.available:
        return Finding(**base, status=Status.SKIP, title=f"{verifier.what}: R not available",
                       message=facts.reason)
    pkg = facts.packages.get(package)
    if pkg is None or pkg.status == "absent":
        return Finding(**base, status=Status.SKIP, title=f"{verifier.what}: not installed",
                       message=f"nothing to verify (see R-PKG-{package.upper()}).")
    if pkg.status == "error":
        return Finding(**base, status=Status.SKIP, title=f"{verifier.what}: not attempted",
                       message=f"{package}'s DESCRIPTION is unreadable (see R-PKG-{package.upper()}).")
    result = run_verification(verifier, facts, timeout)
    return _finding_from_child(verifier, pkg.version, result)


def _finding_from_child(verifier: Verifier, version: str | None, result: ChildResult) -> Finding:
    results = _merged_results(result)
    evidence = {**result.to_evidence(), "results": results}
    if result.ok and results.get("done"):
        if results.get("cuda_roundtrip_ok") is False:
            return Finding(id=verifier.finding_id, area=AREA, status=Status.FAIL,
                           title=f"{verifier.package} {version}: a tensor moved to the GPU came back changed",
                           message=f"{verifier.what}: the CUDA round trip returned different values.",
                           remedy=verifier.remedy, evidence=evidence)
        return Finding(id=verifier.finding_id, area=AREA, status=Status.OK,
                       title=f"{verifier.package} {version} runs: {_summary(results)}",
                       message=f"{verifier.what} completed every step.", evidence=evidence)
    error = next((r for r in reversed(result.records) if "error" in r), None)
    diagnosis = diagnose(result, str(error["error"]) if error else "")
    evidence.update({"failure_kind": diagnosis.kind, "symptom": diagnosis.symptom})
    remedy = diagnosis.remedy or verifier.remedy
    why = f"\n{diagnosis.cause}" if diagnosis.cause else ""
    if error and not result.timed_out and result.signal is None:
        return Finding(id=verifier.finding_id, area=AREA, status=Status.FAIL,
                       title=f"{verifier.what}: R error in step '{error.get('step')}'",
                       message=f"{verifier.what} stopped in step '{error.get('step')}' with: "
                               f"{error['error']}{why}",
                       remedy=remedy, evidence=evidence, source=diagnosis.source or "")
    finding = child_failure(result, id=verifier.finding_id, area=AREA, what=verifier.what,
                            remedy=remedy, source=diagnosis.source or "")
    tail = crash_excerpt(result)
    if tail:
        finding.message += f" Last output:\n{tail}"
    finding.message += why
    finding.evidence = evidence
    return finding


def crash_excerpt(result: ChildResult, lines: int = TAIL_IN_MESSAGE) -> str:
    """The last output lines, with R's crash report kept and its deeper traceback frames dropped.

    R prints `*** caught segfault ***`, the cause, then one frame per call; frame 1 is the call that
    crashed, the rest is the verification script's own plumbing.
    """
    text = user_output(result.tail(60)).splitlines()
    start = next((i for i, line in enumerate(text) if line.lstrip().startswith("*** caught")), None)
    if start is None:
        return "\n".join(text[-lines:])
    kept = [line for line in text[start:] if line.strip() and not _DEEP_FRAME.match(line)]
    return "\n".join(kept[-lines:])


_DEEP_FRAME = re.compile(r"^\s*(?:[2-9]|\d{2,}): ")


def _merged_results(result: ChildResult) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for record in result.records:
        merged.update({k: v for k, v in record.items() if k != "step"})
    return merged


def _summary(results: dict[str, Any]) -> str:
    parts = []
    if "matmul_shape" in results:
        parts.append("matmul ok")
    if "matmul_sum" in results:
        parts.append("tf$matmul ok")
    if "keras_available" in results:
        parts.append(f"keras available: {str(results['keras_available']).lower()}")
    if "cuda_available" in results:
        parts.append("CUDA available" if results["cuda_available"] else "CUDA not available (CPU only)")
    if results.get("cuda_roundtrip_ok") is not None:
        parts.append("GPU round trip ok" if results["cuda_roundtrip_ok"] else "GPU round trip WRONG")
    if "gpu_count" in results:
        parts.append(f"{results['gpu_count']} GPU(s) seen by TensorFlow")
    return ", ".join(parts) or "all steps ran"
