"""What the compile child saw, as findings: one per case (COMPILE-<CASE>), and COMPILE-RUN when the
child itself crashed or hung. A case is `ok` when it compiled, matches eager within the parity
tolerance and is not slower; `warn` when it compiled but with graph breaks or slower than eager;
`fail` when torch.compile raised, fell back to eager, or computes something else."""
from __future__ import annotations

from typing import Any

from rcompat.compile.causes import explain
from rcompat.compile.runner import CompileResult
from rcompat.data import cached_toml
from rcompat.model import Finding, Report, Status

AREA = "compile"
DYNAMO = "pytorch/pytorch torch/_dynamo/utils.py counters (frames total/ok, graph_break, stats.unique_graphs)"


def slower_margin() -> float:
    rows = cached_toml("compile_causes.toml", "threshold", ("id", "value", "source"))
    return float(next(r["value"] for r in rows if r["id"] == "slower_margin"))


def to_report(result: CompileResult, area: str = AREA) -> Report:
    report = Report(command="compile")
    report.add(findings(result, area))
    report.facts["compile"] = {"facts": result.facts, "cases": result.cases,
                               "options": {"device": result.options.device, "repeat": result.options.repeat}}
    return report


def findings(result: CompileResult, area: str = AREA) -> list[Finding]:
    out = [case_finding(case, result.facts, result.options.device, area) for case in result.cases]
    child = result.child
    if child is not None and not child.ok:
        from rcompat.isolate import child_failure

        out.append(child_failure(child, id="COMPILE-RUN", area=area, what="the torch.compile child",
                                 remedy="The compiler or torch crashed or hung while compiling: rerun the "
                                        "named case alone with TORCH_LOGS=+dynamo,+inductor to see where."))
    return out


def case_finding(case: dict[str, Any], facts: dict[str, Any], device: str, area: str = AREA) -> Finding:
    cid = str(case["case"])
    fid = f"COMPILE-{cid.upper()}"
    evidence = {k: case.get(k) for k in ("status", "frames", "graph_breaks", "unique_graphs", "compile_s",
                                         "eager_s", "compiled_s", "max_abs_err", "max_rel_err", "within", "error")
                if case.get(k) is not None}
    evidence["environment"] = {k: facts.get(k) for k in ("torch_version", "python_version", "cxx", "cxx_found",
                                                         "python_h_exists", "triton", "suppress_errors")}
    if case["status"] in ("error", "fell back"):
        return _failed(case, fid, area, evidence, facts)
    return _compiled(case, fid, area, evidence, device)


def _failed(case: dict[str, Any], fid: str, area: str, evidence: dict, facts: dict) -> Finding:
    text = "\n".join([str(case.get("error") or "")] + [str(m) for m in case.get("suppressed") or []])
    row = explain(text)
    first = next((line for line in text.splitlines() if line.strip()), "no error text")[:300]
    cause = row["cause"] if row else "an unknown cause"
    evidence.update(cause=row["id"] if row else None, error_text=text[-3000:])
    timing = _timing(case)
    if case["status"] == "error":
        title = f"torch.compile fails: {cause}"
        message = f"the compiled call raised {first}" + (f" ({timing})" if timing else "")
    else:
        title = f"torch.compile fell back to eager: {cause}"
        message = (f"dynamo suppressed the error (suppress_errors) and ran the case uncompiled: frames "
                   f"{case.get('frames')}; {first}" + (f"; {timing}" if timing else ""))
    remedy = row["remedy"] if row else ("Rerun with TORCHDYNAMO_VERBOSE=1 TORCH_LOGS=+dynamo to see the failing "
                                        "step; check the compiler (" + ", ".join(facts.get("cxx") or ["g++"]) + ").")
    return Finding(fid, area, Status.FAIL, title, message=message, remedy=remedy, evidence=evidence,
                   source="; ".join(s for s in (row["source"] if row else "", DYNAMO) if s),
                   confidence=row.get("confidence", "") if row else "")


def _compiled(case: dict[str, Any], fid: str, area: str, evidence: dict, device: str) -> Finding:
    from rcompat.parity.tolerances import device_pair, tolerance_for

    tol = tolerance_for(case.get("precision", "float32"), device_pair(device, device))
    evidence["tolerance"] = {"rtol": tol.rtol, "atol": tol.atol, "id": tol.id}
    abs_err, rel_err = case.get("max_abs_err"), case.get("max_rel_err")
    within = bool(case.get("within"))
    source = f"{DYNAMO}; rcompat/data/parity_tolerances.toml ({tol.id}): {tol.source}"
    if not within:
        return Finding(fid, area, Status.FAIL, "compiled outputs differ from eager",
                       message=f"max abs error {abs_err}, max rel error {rel_err}: elements beyond "
                               f"atol {tol.atol:g} + rtol {tol.rtol:g} x |eager|.",
                       remedy="Report it to PyTorch with the case; meanwhile keep this model eager, or try "
                              "torch.compile(mode='default', backend='aot_eager') to find the guilty stage.",
                       evidence=evidence, source=source)
    eager, compiled = case.get("eager_s"), case.get("compiled_s")
    breaks = case.get("graph_breaks") or {}
    timing = _timing(case)
    if eager and compiled and compiled > eager * (1 + slower_margin()):
        return Finding(fid, area, Status.WARN, f"compiled but slower than eager ({compiled / eager:.2f}x eager's time)",
                       message=f"{timing} per call (medians after warm-up); outputs match eager "
                               f"(max rel error {rel_err:.2g}).",
                       remedy="A small or Python-bound step gains nothing from inductor: keep it eager, or "
                              "try mode='reduce-overhead' (CUDA graphs) / mode='max-autotune'.",
                       evidence=evidence, source=source)
    if breaks:
        reasons = "; ".join(f"{k} ({v}x)" for k, v in list(breaks.items())[:3])
        return Finding(fid, area, Status.WARN, f"compiled with {sum(breaks.values())} graph break(s)",
                       message=f"parts run eagerly between graphs: {reasons}; {timing}.",
                       remedy="torch._dynamo.explain(fn)(*args) lists each break and where; move the "
                              "breaking call (.item(), print, backward inside the step) out of the compiled function.",
                       evidence=evidence, source=source)
    return Finding(fid, area, Status.OK, f"compiled ({timing})" if timing else "compiled",
                   message=f"outputs match eager (max rel error {rel_err:.2g}, rtol {tol.rtol:g}).",
                   evidence=evidence, source=source)


def _timing(case: dict[str, Any]) -> str:
    eager, compiled = case.get("eager_s"), case.get("compiled_s")
    if not eager or not compiled:
        return ""
    return f"compiled {compiled * 1e3:.3f} ms vs eager {eager * 1e3:.3f} ms"
