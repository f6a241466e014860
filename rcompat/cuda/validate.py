"""Check the CUDA tables against each other: `rcompat matrix validate [--tables DIR]`.

Each table is written from a different vendor document, so two rows can each be right on their own and
wrong together. A relation is checked with the same verdict functions `check_stack` uses, so a table
that validates is one whose rows `check` would not contradict:

- framework row (torch, TensorFlow) claims CUDA X with cuDNN Y, but the cuDNN table says Y's build for
  that major does not cover X                                          -> contradiction (fail)
  ... or X is newer than Y's tested range in the same major             -> tension (warn)
- framework or cuDNN row names a cuBLAS that the cuBLAS table does not pair with its CUDA
- R torch row claims a CUDA build of LibTorch L that the torch table does not list for L
- end-to-end: a framework row says it runs on driver D, while the chain framework -> CUDA X -> driver
  table says X needs more than D even with minor-version compatibility
- toolkit minimum drivers must not decrease as the toolkit version grows
- the same key with two different values in one table
Rows a relation cannot be checked for (a cuDNN version absent from the cuDNN table) are counted as
unverifiable, not reported as errors.
"""
from __future__ import annotations

from pathlib import Path

from rcompat.cuda.matrix import cublas_verdict, cudnn_verdict
from rcompat.cuda.tables import (Tables, build_tag, load_tables, major_minor, public_row, row_ref,
                                 rtorch_cuda_builds, version)
from rcompat.model import Finding, Report, Status, join_sources

AREA = "cuda"
DUPLICATE_KEYS = {
    "driver": ("cuda", "kind"), "cublas": ("cuda",), "torch": ("torch", "cuda"), "rtorch": ("rtorch",),
    "tensorflow": ("tensorflow",),
}


class _Collector:
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.checked = 0
        self.unverifiable: list[str] = []
        self.cases = {Status.FAIL: 0, Status.WARN: 0}  # contradictions, tensions (several per finding)

    def relation(self, relation: str, status: Status, message: str, rows: list[dict], remedy: str = "") -> None:
        self.checked += 1
        if status is Status.SKIP:
            self.unverifiable.append(f"{relation}: {message}")
            return
        if status is Status.OK:
            return
        kind = "contradiction" if status is Status.FAIL else "tension"
        self.cases[status] = self.cases.get(status, 0) + 1
        refs = ", ".join(row_ref(r) for r in rows if r)
        finding_id = f"CUDA-MATRIX-VALIDATE-{relation}"
        same = next((f for f in self.findings if f.id == finding_id), None)
        if same is not None:  # one finding per relation (ids unique in a report), each case in it
            if "cases" not in same.evidence:
                same.evidence["cases"], same.evidence["first"] = 1, same.title
                same.message = f"{same.title}: {same.message}"
                first_claim, _, first_verdict = same.message.partition(", but ")
                same.evidence["claim"], same.evidence["verdict"] = first_claim.split(": ", 1)[-1], first_verdict
            same.evidence["cases"] += 1
            same.evidence["rows"] += [public_row(r) for r in rows if r]
            claim, _, verdict = message.partition(", but ")
            if verdict and same.evidence.get("verdict") == verdict:  # the same table verdict: said once
                same.message = same.message.replace(f", but {verdict}", f"; {kind} between {refs}: {claim}, but {verdict}")
                same.message = same.message.replace(f": {same.evidence['claim']}, but {verdict}",
                                                    f": {same.evidence['claim']}", 1)
            else:
                same.message += f"\n{kind} between {refs}: {message}"
            same.evidence["claim"], same.evidence["verdict"] = claim, verdict
            same.title = f"{same.evidence['cases']} problems in relation {relation}"
            same.source = join_sources([same.source] + [r["source"] for r in rows if r])
            if status is Status.FAIL:
                same.status = Status.FAIL
            return
        self.findings.append(Finding(
            id=finding_id, area=AREA, status=status,
            title=f"{kind} between {refs}", message=message,
            remedy=remedy,  # the general one ("correct a row …") is the summary's, said once
            evidence={"rows": [public_row(r) for r in rows if r], "relation": relation},
            source=join_sources(r["source"] for r in rows if r)))


def validate_tables(tables_dir: "str | Path | None" = None) -> Report:
    t = load_tables(tables_dir)
    c = _Collector()
    _framework_cudnn(t, c)
    _cublas_pairs(t, c)
    _rtorch_libtorch(t, c)
    _end_to_end_driver(t, c)
    _driver_monotone(t, c)
    _duplicates(t, c)
    contradictions, tensions = range(c.cases[Status.FAIL]), range(c.cases[Status.WARN])
    rows = sum(len(getattr(t, n)) for n in ("driver", "cublas", "cudnn", "torch", "rtorch", "tensorflow"))
    summary = Finding(
        id="CUDA-MATRIX-VALIDATE", area=AREA, status=Status.FAIL if contradictions else Status.OK,
        title=(f"{len(contradictions)} contradiction(s) in the CUDA tables" if contradictions
               else "the CUDA tables are consistent with each other"),
        remedy="correct one of the rows against its source, or narrow its claim" if c.findings else "",
        message=f"{rows} rows, {c.checked} cross-table relations checked: {len(contradictions)} "
                f"contradiction(s), {len(tensions)} tension(s), {len(c.unverifiable)} unverifiable",
        evidence={"files": t.files, "unverifiable": c.unverifiable})
    report = Report(command="matrix validate", findings=c.findings + [summary])
    report.facts = {"cuda_tables": {"files": t.files, "rows": rows, "relations_checked": c.checked}}
    return report


def _framework_cudnn(t: Tables, c: _Collector) -> None:
    for name, rows in (("torch", t.torch), ("tensorflow", t.tensorflow)):
        for row in rows:
            if not row.get("cudnn") or not row.get("cuda"):
                continue
            status, message, _, cudnn_rows = cudnn_verdict(row["cudnn"], row["cuda"], t)
            if status is Status.SKIP:
                c.relation("CUDNN", status, f"{row_ref(row)} cuDNN {row['cudnn']}", [row])
                continue
            label = f"{name} {row[name]} ({build_tag(row['cuda'])})"
            c.relation("CUDNN", status, f"{label} claims CUDA {row['cuda']} with cuDNN {row['cudnn']}, but the "
                       f"cuDNN table says: {message}", [row] + cudnn_rows)


def _cublas_pairs(t: Tables, c: _Collector) -> None:
    for row in t.torch:
        if row.get("cublas") and row.get("cuda"):
            status, message, _, rows = cublas_verdict(row["cublas"], row["cuda"], t)
            c.relation("CUBLAS", status, f"torch {row['torch']} ({build_tag(row['cuda'])}) pins cuBLAS "
                       f"{row['cublas']}: {message}", [row] + rows)
    for row in t.cudnn:
        if not row.get("cublas"):
            continue
        lo, hi = version(row["cuda_min"]), version(row["cuda_max"])
        in_range = [r for r in t.cublas if lo <= version(major_minor(r["cuda"])) <= hi]
        if not in_range:
            c.relation("CUBLAS", Status.SKIP, f"{row_ref(row)}: no cuBLAS rows for CUDA {lo}–{hi}", [row])
            continue
        fits = [r for r in in_range if cublas_verdict(row["cublas"], r["cuda"], t)[0] is Status.OK]
        c.relation("CUBLAS", Status.OK if fits else Status.FAIL,
                   f"cuDNN {row['cudnn']} says it was tested with cuBLAS {row['cublas']} on CUDA "
                   f"{row['cuda_min']}–{row['cuda_max']}, but no CUDA in that range ships that cuBLAS "
                   f"({', '.join(r['cuda'] + ' → ' + r['cublas'] for r in in_range)})", [row] + in_range)


def _rtorch_libtorch(t: Tables, c: _Collector) -> None:
    for row in t.rtorch:
        gpu = [b for b in rtorch_cuda_builds(row) if b != "cpu"]
        if not gpu:
            continue
        torch_rows = t.torch_rows(row["libtorch"])
        if not torch_rows:
            c.relation("RTORCH", Status.SKIP, f"{row_ref(row)}: LibTorch {row['libtorch']} not in the torch table",
                       [row])
            continue
        listed = {major_minor(r["cuda"]) for r in torch_rows}
        missing = [b for b in gpu if major_minor(b) not in listed]
        c.relation("RTORCH", Status.FAIL if missing else Status.OK,
                   f"R torch {row['rtorch']} claims CUDA {', '.join(missing)} build(s) of LibTorch "
                   f"{row['libtorch']}, but the torch table lists {row['libtorch']} builds "
                   f"{', '.join(sorted({build_tag(r['cuda']) for r in torch_rows}))}", [row] + torch_rows)


def _end_to_end_driver(t: Tables, c: _Collector) -> None:
    for row in t.torch:
        if not row.get("min_driver"):
            continue
        toolkit, family = t.driver_rows(row["cuda"])
        floors = [r for r in (toolkit, family) if r]
        if not floors:
            c.relation("CHAIN", Status.SKIP, f"{row_ref(row)}: no driver row for CUDA {row['cuda']}", [row])
            continue
        # The least any driver row allows: the family minimum (minor-version compatibility) or the
        # toolkit's own, whichever is lower (CUDA 11.0 predates the 11.x family minimum).
        floor = min(floors, key=lambda r: version(r["min_driver"]))
        claimed = version(row["min_driver"])
        ok = claimed >= version(floor["min_driver"])
        c.relation("CHAIN", Status.OK if ok else Status.FAIL,
                   f"torch {row['torch']} ({build_tag(row['cuda'])}) says it runs on driver {row['min_driver']}, "
                   f"but the chain torch → CUDA {row['cuda']} → driver table needs ≥ {floor['min_driver']} "
                   "even with minor-version compatibility", [row] + floors)


def _driver_monotone(t: Tables, c: _Collector) -> None:
    toolkits = sorted((r for r in t.driver if r["kind"] == "toolkit"), key=lambda r: version(r["cuda"]))
    for older, newer in zip(toolkits, toolkits[1:]):
        ok = version(newer["min_driver"]) >= version(older["min_driver"])
        c.relation("DRIVER", Status.OK if ok else Status.FAIL,
                   f"CUDA {newer['cuda']} is said to need driver ≥ {newer['min_driver']}, older than the "
                   f"{older['min_driver']} of CUDA {older['cuda']}: newer toolkits never need older drivers",
                   [older, newer])


def _duplicates(t: Tables, c: _Collector) -> None:
    for table, keys in DUPLICATE_KEYS.items():
        seen: dict[tuple, dict] = {}
        for row in getattr(t, table):
            key = tuple(_canonical(row.get(k, "")) for k in keys)
            first = seen.setdefault(key, row)
            if first is row:
                continue
            differs = [k for k in row if not k.startswith("_") and k not in keys
                       and k not in ("source", "confidence", "note") and row.get(k, "") != first.get(k, "")]
            c.relation("DUPLICATE", Status.FAIL if differs else Status.OK,
                       f"{row_ref(first)} and {row_ref(row)} give {'/'.join(keys)} "
                       f"{' '.join(row.get(k, '') for k in keys)} different {', '.join(differs)}", [first, row])


def _canonical(cell: str) -> str:
    v = version(cell)
    return str(v.release) if v is not None else cell
