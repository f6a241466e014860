"""`rcompat parity compare A B`: one finding per output, within tolerance or not, and why.

A is the reference (the baseline): an element passes when |B - A| <= atol + rtol·|A|. Each finding
gives the largest absolute and relative error, the tolerance and its source, the worst element (the
one furthest past its bound) and, when the manifests differ, the differences most likely to explain
a drift (another device, torch, cuDNN, TF32 setting, BLAS, thread count). A case computed on one side
only fails; a case both sides skipped (CUDA-only variants on a CPU) is one skip finding per reason.
"""
from __future__ import annotations

from typing import Any

from rcompat.model import Finding, Report, Status
from rcompat.parity.npzfile import ParityRecord, describe_side, read_record
from rcompat.parity.tolerances import Tolerance, describe_diff, device_pair, environment_diff, tolerance_for

AREA = "parity"
REMEDY_DRIFT = ("If the difference is expected (another thread count, TF32, cuDNN or BLAS), accept it with "
                "--rtol/--atol; otherwise record both environments again with the same --threads and compare "
                "one changed component at a time (--python OLD vs --python NEW).")
REMEDY_MISSING = ("The side without it recorded why (above): fix that (a torch lacking the function, a crash, a "
                  "--cases file given to one side only) and record that side again.")


def compare(path_a: str, path_b: str, rtol: float | None = None, atol: float | None = None) -> Report:
    return compare_records(read_record(path_a), read_record(path_b), rtol, atol)


def compare_records(a: ParityRecord, b: ParityRecord, rtol: float | None = None,
                    atol: float | None = None) -> Report:
    """compare() of two records already read; an input is decoded only when the two differ."""
    path_a, path_b = a.path, b.path
    diff = environment_diff(a.manifest, b.manifest)
    devices = device_pair(a.manifest.get("device"), b.manifest.get("device"))
    report = Report(command="parity compare", facts={
        "a": {"path": path_a, "environment": describe_side(a.manifest)},
        "b": {"path": path_b, "environment": describe_side(b.manifest)},
        "environment_diff": diff, "devices": devices})
    report.add(_inputs_finding(a, b))
    report.add(_environment_finding(a, b, diff))
    skipped: dict[str, list[str]] = {}
    precisions = a.output_precisions()
    for cid in _case_ids(a, b):
        ca, cb = a.manifest["cases"].get(cid, {}), b.manifest["cases"].get(cid, {})
        sa, sb = ca.get("status"), cb.get("status")
        if sa == "ok" and sb == "ok":
            for name in dict.fromkeys([*ca.get("outputs", {}), *cb.get("outputs", {})]):
                report.add(_output_finding(name, a, b, precisions, devices, diff, rtol, atol))
        elif "skip" in (sa, sb) and "error" not in (sa, sb):
            reason = (cb if sb == "skip" else ca).get("message") or "skipped"
            skipped.setdefault(reason, []).append(cid)
        else:
            report.add(_case_finding(cid, ca, cb))
    for reason, ids in skipped.items():
        report.add(Finding(id="PARITY-SKIPPED", area=AREA, status=Status.SKIP,
                           title=f"{len(ids)} case(s) not compared: {reason}",
                           message=", ".join(ids), evidence={"cases": ids}))
    return report


def _case_ids(a: ParityRecord, b: ParityRecord) -> list[str]:
    return list(dict.fromkeys([*a.manifest["cases"], *b.manifest["cases"]]))


def _inputs_finding(a: ParityRecord, b: ParityRecord) -> Finding:
    import numpy as np

    names = sorted(set(a.inputs) | set(b.inputs))
    differing = [n for n in names if n not in a.inputs or n not in b.inputs
                 or not (_same_fingerprint(a.inputs, b.inputs, n)  # the same bytes: no need to decode them
                         or np.array_equal(a.inputs[n], b.inputs[n]))]  # arrays of another shape are not equal
    seeds = (a.manifest.get("seed"), b.manifest.get("seed"))
    if not differing:
        return Finding(id="PARITY-INPUTS", area=AREA, status=Status.OK,
                       title=f"A and B computed on identical inputs ({len(names)} arrays, seed {seeds[0]})")
    return Finding(id="PARITY-INPUTS", area=AREA, status=Status.FAIL,
                   title=f"A and B were computed on different inputs ({len(differing)} of {len(names)} differ)",
                   message=f"Inputs that differ: {', '.join(differing[:8])} (seed {seeds[0]} vs {seeds[1]}); "
                           "the outputs below cannot agree.",
                   remedy=f"Record B again with `rcompat parity record --inputs {a.path} …`.",
                   evidence={"differing": differing, "seeds": list(seeds)})


def _same_fingerprint(a: Any, b: Any, name: str) -> bool:
    """Has input `name` the same size and CRC-32 in both records (rcompat.parity.npzmembers)? Any other
    mapping of inputs is compared as arrays."""
    members_a, members_b = getattr(a, "members", None), getattr(b, "members", None)
    return (members_a is not None and members_b is not None
            and members_a[name].fingerprint == members_b[name].fingerprint)


def _environment_finding(a: ParityRecord, b: ParityRecord, diff: list[dict[str, Any]]) -> Finding:
    title = f"A: {describe_side(a.manifest)}; B: {describe_side(b.manifest)}"
    message = (f"The manifests differ in: {describe_diff(diff, limit=len(diff))}." if diff
               else "The manifests agree on every field that changes numerics.")
    return Finding(id="PARITY-ENV", area=AREA, status=Status.OK, title=title, message=message,
                   evidence={"a": a.path, "b": b.path, "differences": diff})


def _case_finding(cid: str, ca: dict, cb: dict) -> Finding:
    """A case not computed on both sides: missing on one side fails; on neither side, skip."""
    def why(side: str, case: dict) -> str:
        if not case:
            return f"{side} has no case {cid}"
        return f"{side}: {case.get('status')}: {case.get('message') or 'no message'}"

    ok_a, ok_b = ca.get("status") == "ok", cb.get("status") == "ok"
    evidence = {"a": ca, "b": cb}
    if not ok_a and not ok_b:
        return Finding(id=f"PARITY-{cid}", area=AREA, status=Status.SKIP,
                       title=f"{cid}: computed by neither record", message=f"{why('A', ca)}; {why('B', cb)}",
                       evidence=evidence)
    missing, side_case = ("B", cb) if ok_a else ("A", ca)
    return Finding(id=f"PARITY-{cid}", area=AREA, status=Status.FAIL,
                   title=f"{cid}: missing in {missing}", message=why(missing, side_case) + ".",
                   remedy=REMEDY_MISSING, evidence=evidence)


def _output_finding(name: str, a: ParityRecord, b: ParityRecord, precisions: dict[str, str], devices: str,
                    diff: list[dict[str, Any]], rtol: float | None, atol: float | None) -> Finding:
    fid = f"PARITY-{name}"
    if name not in a.outputs or name not in b.outputs:
        missing = "A" if name not in a.outputs else "B"
        return Finding(id=fid, area=AREA, status=Status.FAIL, title=f"{name}: missing in {missing}",
                       message=f"{missing} computed the case but has no output {name}.", remedy=REMEDY_MISSING)
    x, y = a.outputs[name], b.outputs[name]
    if x.dtype != y.dtype or x.shape != y.shape:
        what = "dtype" if x.dtype != y.dtype else "shape"
        return Finding(id=fid, area=AREA, status=Status.FAIL, title=f"{name}: {what} differs",
                       message=f"A: {x.dtype} {tuple(x.shape)}; B: {y.dtype} {tuple(y.shape)}.",
                       remedy=REMEDY_DRIFT, evidence={"a": [str(x.dtype), list(x.shape)],
                                                      "b": [str(y.dtype), list(y.shape)]})
    precision = precisions.get(name, str(x.dtype))
    tol = tolerance_for(precision, devices, rtol, atol)
    stats = array_stats(x, y, tol)
    return _stats_finding(fid, name, stats, tol, precision, devices, diff)


def array_stats(x, y, tol: Tolerance) -> dict[str, Any]:
    """Errors of y against the reference x: max abs/rel error, elements past the bound, the worst one,
    and positions where NaN/Inf appear on one side only."""
    import numpy as np

    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    fin_a, fin_b = np.isfinite(a), np.isfinite(b)
    same_special = ~fin_a & ~fin_b & ((np.isnan(a) & np.isnan(b)) | (a == b))
    one_sided = ~(fin_a & fin_b) & ~same_special
    both = fin_a & fin_b
    err = np.where(both, np.abs(b - a), 0.0)
    bound = tol.atol + tol.rtol * np.abs(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(both & (err > 0), err / np.abs(a), 0.0)
    excess = np.where(both, err - bound, -np.inf)
    worst = np.unravel_index(int(np.argmax(excess)), a.shape) if a.size else ()
    stats = {"size": int(a.size), "outside": int(np.count_nonzero(excess > 0)),
             "max_abs": float(err.max()) if a.size else 0.0, "max_rel": float(rel.max()) if a.size else 0.0,
             "worst_index": [int(i) for i in worst], "one_sided_nonfinite": int(np.count_nonzero(one_sided))}
    if a.size:
        stats.update(worst_a=float(a[worst]), worst_b=float(b[worst]))
    if stats["one_sided_nonfinite"]:
        first = np.unravel_index(int(np.argmax(one_sided)), a.shape)
        side = "B" if fin_a[first] else "A"
        stats["nonfinite"] = {"index": [int(i) for i in first], "side": side,
                              "value": float((b if side == "B" else a)[first]),
                              "in_a_only": int(np.count_nonzero(one_sided & ~fin_a)),
                              "in_b_only": int(np.count_nonzero(one_sided & ~fin_b))}
    return stats


def _stats_finding(fid: str, name: str, s: dict[str, Any], tol: Tolerance, precision: str, devices: str,
                   diff: list[dict[str, Any]]) -> Finding:
    where = _index_text(s["worst_index"])
    evidence = {**s, "rtol": tol.rtol, "atol": tol.atol, "tolerance": tol.id, "precision": precision,
                "devices": devices}
    tol_text = f"rtol {tol.rtol:g}, atol {tol.atol:g}"
    detail = (f"max abs error {s['max_abs']:.3g}, max rel error {s['max_rel']:.3g}; tolerance {tol_text} "
              f"({tol.id}: {precision}, {devices})")
    if "worst_a" in s:
        detail += f"; worst element {where}: A={s['worst_a']:.9g}, B={s['worst_b']:.9g}"
    common = dict(id=fid, area=AREA, evidence=evidence, source=tol.source, confidence=tol.confidence)
    cause = (f" Likely cause, the manifests differ in: {describe_diff(diff)}." if diff else
             " The manifests agree on device, torch, BLAS, cuDNN, TF32 and threads: the computation itself "
             "changed (another kernel, or a wrong result).")
    if s["one_sided_nonfinite"]:
        nf = s["nonfinite"]
        return Finding(**common, status=Status.FAIL,
                       title=f"{name}: {s['one_sided_nonfinite']} NaN/Inf on one side only",
                       message=f"{nf['value']} in {nf['side']} only at {_index_text(nf['index'])} "
                               f"({nf['in_a_only']} in A only, {nf['in_b_only']} in B only); elsewhere {detail}."
                               + cause, remedy=REMEDY_DRIFT)
    if s["outside"]:
        return Finding(**common, status=Status.FAIL,
                       title=f"{name}: {s['outside']} of {s['size']} element(s) outside {tol_text} "
                             f"(max rel error {s['max_rel']:.3g})",
                       message=detail[0].upper() + detail[1:] + "." + cause, remedy=REMEDY_DRIFT)
    return Finding(**common, status=Status.OK,
                   title=f"{name}: max abs {s['max_abs']:.3g}, max rel {s['max_rel']:.3g} within {tol_text}",
                   message=detail[0].upper() + detail[1:] + ".")


def _index_text(index: list[int]) -> str:
    return "[" + ", ".join(map(str, index)) + "]" if index else "[] (a scalar)"
