"""Evaluate a CUDA stack layer by layer: driver -> CUDA runtime -> cuDNN/cuBLAS -> framework build.

`check_stack({"driver": "535.104", "cuda": "12.4", "torch": "2.3.0"})` returns one finding per layer
that the stack names, then a `CUDA-MATRIX` summary stating the first incompatible layer and its fix.
The stack may be observed (rcompat.cuda.probe) or hypothetical (a CI planner asking before installing).
All versions and pairings come from rcompat/data (see rcompat.cuda.tables); this module holds only the
rules for reading them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from rcompat.cuda.tables import (Tables, build_tag, cuda_from_build_tag, load_tables, major_minor,
                                 public_row, rtorch_cuda_builds, version)
from rcompat.errors import UsageError
from rcompat.model import SEVERITY, Finding, Status, join_sources
from rcompat.errors import shown

AREA = "cuda"
STACK_KEYS = ("driver", "driver_cuda", "cuda", "cudnn", "cublas", "torch", "rtorch", "tensorflow")
LAYER_NAMES = {
    "DRIVER": "driver", "CUDNN": "cuDNN", "CUBLAS": "cuBLAS", "TORCH": "framework build (torch)",
    "RTORCH": "framework build (R torch)", "TENSORFLOW": "framework build (TensorFlow)",
}
MINOR_COMPAT = ("minor-version compatibility: it runs, but without features that need the newer driver "
                "(e.g. JIT compilation of newer PTX)")


def check_stack(stack: Mapping[str, Any], tables_dir: "str | Path | Tables | None" = None) -> list[Finding]:
    """Findings for each layer `stack` names, then the CUDA-MATRIX summary (always last).

    `tables_dir`: a directory overriding the packaged tables, or tables already loaded (a caller that
    judges many stacks, like the CI planner, loads them once)."""
    s = normalise_stack(stack)
    t = tables_dir if isinstance(tables_dir, Tables) else load_tables(tables_dir)
    layers = [f for f in (_driver(s, t), _runtime_library("CUDNN", cudnn_verdict, s, t),
                          _runtime_library("CUBLAS", cublas_verdict, s, t), _torch(s, t), _rtorch(s, t),
                          _tensorflow(s, t)) if f is not None]
    return layers + [_summary(layers, s)]


def stack_findings(stack: Mapping[str, Any], tables_dir: "str | Path | Tables | None" = None) -> list[Finding]:
    """check_stack's findings as a report shows them: the CUDA-MATRIX summary only when it says
    something no layer says (all fit, or nothing could be judged). A failing or warning summary would
    repeat its first such layer's message and count one problem twice; the layers come in stack order,
    so the first failing one is still the first shown."""
    found = check_stack(stack, tables_dir)
    layers, summary = found[:-1], found[-1]
    return layers if summary.status in (Status.FAIL, Status.WARN) else found


def normalise_stack(stack: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in stack.items():
        key = str(key).strip().lower().replace("-", "_")
        if key not in STACK_KEYS:
            raise UsageError(f"unknown stack key '{key}'; use: {', '.join(STACK_KEYS)}")
        if value is None or str(value).strip() == "":
            continue
        text = str(value).strip()
        if version(text) is None:
            raise UsageError(f"{key} {shown(text)} is not a version")
        out[key] = text
    return out


def _finding(layer: str, status: Status, message: str, remedy: str = "", evidence: dict | None = None,
             rows: list[dict] = (), source: str = "") -> Finding:
    rows = [r for r in rows if r]
    sources = join_sources([source] if source else [r["source"] for r in rows])
    confidence = _weakest([r.get("confidence", "") for r in rows])
    ev = dict(evidence or {})
    if rows:
        ev["rows"] = [public_row(r) for r in rows]
    subject = _subject(layer, ev)
    return Finding(id=f"CUDA-MATRIX-{layer}", area=AREA, status=status,
                   title=f"{LAYER_NAMES[layer]}: {subject} {VERDICT[status]}", message=message, remedy=remedy,
                   evidence=ev, source=sources, confidence=confidence)


VERDICT = {Status.OK: "fits", Status.WARN: "fits with reservations", Status.FAIL: "is incompatible",
           Status.SKIP: "cannot be judged", Status.ERROR: "could not be evaluated"}


def _subject(layer: str, ev: dict) -> str:
    def cudas() -> str:
        c = ev.get("cuda")
        return ", ".join(c) if isinstance(c, list) else (c or "")

    if layer == "DRIVER":
        driver = ev.get("driver") or (f"supporting CUDA {ev['driver_cuda']}" if ev.get("driver_cuda") else "(unknown)")
        return f"driver {driver} for CUDA {cudas()}"
    if layer in ("CUDNN", "CUBLAS"):
        return f"{LAYER_NAMES[layer]} {ev.get(layer.lower())} with CUDA {cudas()}"
    name = {"TORCH": "torch", "RTORCH": "R torch", "TENSORFLOW": "TensorFlow"}[layer]
    with_cuda = f" with CUDA {cudas()}" if cudas() else ""
    return f"{name} {ev.get(layer.lower())}{with_cuda}"


def _weakest(confidences: list[str]) -> str:
    order = ["unverified", "low", "medium", "high"]
    known = [c for c in confidences if c in order]
    return min(known, key=order.index) if known else ""


def _cudas_in_play(s: dict[str, str], t: Tables) -> list[str]:
    """Every CUDA version the driver must serve: the runtime, the torch build's, TensorFlow's."""
    cudas = [s.get("cuda"), _torch_tag_cuda(s)]
    if "tensorflow" in s:
        cudas += [r["cuda"] for r in t.tensorflow_rows(s["tensorflow"])[:1]]
    seen: dict[str, None] = {}
    for c in cudas:
        if c and major_minor(c) not in {major_minor(x) for x in seen}:
            seen[c] = None
    return list(seen)


# -- layer 1: driver ------------------------------------------------------------------------------

def driver_verdict(driver: str, cuda: str, t: Tables) -> tuple[Status, str, str, list[dict]]:
    """(status, message, remedy, rows) for running CUDA `cuda` code on driver `driver`."""
    toolkit, family = t.driver_rows(cuda)
    d = version(driver)
    if toolkit is None and family is None:
        return Status.SKIP, f"no driver data for CUDA {cuda} in rcompat's table", "", []
    if toolkit and d >= version(toolkit["min_driver"]):
        return Status.OK, f"driver {driver} ≥ {toolkit['min_driver']}, the minimum for CUDA {cuda}", "", [toolkit]
    if family and d >= version(family["min_driver"]):
        if toolkit is None:
            return (Status.WARN, f"CUDA {cuda} is not in rcompat's table; driver {driver} meets the CUDA "
                    f"{version(cuda).major}.x family minimum {family['min_driver']}", "", [family])
        return (Status.WARN, f"driver {driver} is below {toolkit['min_driver']}, the minimum for CUDA {cuda}, "
                f"but ≥ {family['min_driver']} (CUDA {version(cuda).major}.x family): {MINOR_COMPAT}",
                f"upgrade the driver to ≥ {toolkit['min_driver']} for full CUDA {cuda} support",
                [toolkit, family])
    full = toolkit["min_driver"] if toolkit else family["min_driver"]
    also = (f" (≥ {family['min_driver']} runs it with minor-version compatibility)"
            if toolkit and family and version(family["min_driver"]) < version(full) else "")
    return (Status.FAIL, f"driver {driver} is too old for CUDA {cuda}, which needs ≥ {full}",
            f"upgrade the driver to ≥ {full}{also}", [toolkit, family])


def _driver(s: dict[str, str], t: Tables) -> Finding | None:
    cudas = _cudas_in_play(s, t)
    if not cudas:
        return None
    if "driver" not in s and "driver_cuda" not in s:
        return _finding("DRIVER", Status.SKIP, "no driver version known; cannot judge the driver layer",
                        "give --driver (or run where the NVIDIA driver is installed)", {"cuda": cudas})
    verdicts = []
    for cuda in cudas:
        if "driver" in s:
            verdicts.append((cuda,) + driver_verdict(s["driver"], cuda, t))
        else:
            verdicts.append((cuda,) + _driver_cuda_verdict(s["driver_cuda"], cuda))
    worst = max(verdicts, key=lambda v: SEVERITY[v[1]])
    message = "; ".join(v[2] for v in sorted(verdicts, key=lambda v: -SEVERITY[v[1]]))
    rows = [r for v in verdicts for r in v[4]]
    return _finding("DRIVER", worst[1], message, worst[3],
                    {"driver": s.get("driver"), "driver_cuda": s.get("driver_cuda"), "cuda": cudas}, rows)


def _driver_cuda_verdict(driver_cuda: str, cuda: str) -> tuple[Status, str, str, list[dict]]:
    dc, c = version(driver_cuda), version(cuda)
    if c.truncate(2) <= dc.truncate(2):
        return Status.OK, f"the driver supports CUDA up to {driver_cuda} ≥ {cuda}", "", []
    if c.major == dc.major:
        return (Status.WARN, f"the driver supports CUDA up to {driver_cuda}, below {cuda}: {MINOR_COMPAT}",
                f"upgrade the driver to one that supports CUDA {cuda}", [])
    return (Status.FAIL, f"the driver supports CUDA up to {driver_cuda}; CUDA {cuda} needs a newer driver",
            f"upgrade the driver to one that supports CUDA {cuda}", [])


# -- layer 2: cuDNN / cuBLAS against the CUDA runtime ---------------------------------------------

def cudnn_verdict(cudnn: str, cuda: str, t: Tables) -> tuple[Status, str, str, list[dict]]:
    rows = t.cudnn_rows(cudnn)
    if not rows:
        return Status.SKIP, f"cuDNN {cudnn} is not in rcompat's table", "", []
    c = version(major_minor(cuda))
    covering = [r for r in rows if version(r["cuda_min"]) <= c <= version(r["cuda_max"])]
    if covering:
        return (Status.OK, f"cuDNN {cudnn} supports CUDA {cuda} ({covering[0]['cuda_min']}–"
                f"{covering[0]['cuda_max']})", "", covering[:1])
    newer = sorted((r for r in t.cudnn if version(r["cuda_min"]) <= c <= version(r["cuda_max"])),
                   key=lambda r: version(r["cudnn"]))
    upgrade = f"use cuDNN ≥ {newer[0]['cudnn']}, whose build supports CUDA {cuda}" if newer else ""
    same_major = [r for r in rows if version(r["cuda_min"]).major == c.major]
    if same_major and all(c > version(r["cuda_max"]) for r in same_major):
        r = max(same_major, key=lambda r: version(r["cuda_max"]))
        return (Status.WARN, f"CUDA {cuda} is newer than cuDNN {cudnn}'s CUDA {c.major} build was released for "
                f"({r['cuda_min']}–{r['cuda_max']}); untested", upgrade, [r] + newer[:1])
    majors = sorted({version(r["cuda_min"]).major for r in rows})
    return (Status.FAIL, f"cuDNN {cudnn} has builds for CUDA {', '.join(f'{m}.x' for m in majors)} only "
            f"({'; '.join(r['cuda_min'] + '–' + r['cuda_max'] for r in rows)}); CUDA {cuda} needs another",
            upgrade or f"install a cuDNN built for CUDA {c.major}.x", rows + newer[:1])


def cublas_verdict(cublas: str, cuda: str, t: Tables) -> tuple[Status, str, str, list[dict]]:
    row = t.cublas_row(cuda)
    if row is None:
        return Status.SKIP, f"CUDA {cuda} is not in rcompat's cuBLAS table", "", []
    b, shipped = version(cublas), version(row["cublas"])
    if b.release[: len(shipped.release)] == shipped.release:
        return Status.OK, f"cuBLAS {cublas} is the one CUDA {cuda} ships ({row['cublas']}.x)", "", [row]
    status = Status.WARN if b.major == shipped.major else Status.FAIL
    return (status, f"cuBLAS {cublas} is not the one CUDA {cuda} ships ({row['cublas']}.x)",
            f"install the cuBLAS of CUDA {cuda} ({row['cublas']}.x)", [row])


def _runtime_library(layer: str, verdict, s: dict[str, str], t: Tables) -> Finding | None:
    """The cuDNN or cuBLAS layer: the stack's library (key `layer.lower()`) against its CUDA runtime
    (the given one, else the torch build's)."""
    key = layer.lower()
    cuda = s.get("cuda") or _torch_tag_cuda(s)
    if key not in s or not cuda:
        return None
    status, message, remedy, rows = verdict(s[key], cuda, t)
    return _finding(layer, status, message, remedy, {key: s[key], "cuda": cuda}, rows)


# -- layer 3: framework builds ---------------------------------------------------------------------

def _torch_tag_cuda(s: dict[str, str]) -> str | None:
    return cuda_from_build_tag(version(s["torch"]).local) if "torch" in s else None


def _public(text: str) -> str:
    return text.split("+")[0]


def _torch(s: dict[str, str], t: Tables) -> Finding | None:
    if "torch" not in s:
        return None
    torch, local = s["torch"], version(s["torch"]).local.lower()
    tag_cuda = _torch_tag_cuda(s)
    wanted = tag_cuda or s.get("cuda")
    rows = t.torch_rows(torch)
    ev = {"torch": torch, "cuda": s.get("cuda"), "build": local or None,
          "builds": [build_tag(r["cuda"]) for r in rows]}
    if local == "cpu":
        if s.get("cuda"):
            fix = _torch_fix(torch, s["cuda"], s.get("driver"), t)
            return _finding("TORCH", Status.FAIL, f"CPU-only build of torch {_public(torch)}; it cannot use "
                            f"CUDA {s['cuda']}", fix, ev, rows)
        return _finding("TORCH", Status.OK, f"CPU-only build of torch {_public(torch)}; no CUDA layer to match",
                        "", ev)
    if local and not tag_cuda:  # +rocm6.0, a source build's +git… tag, or a typo: no CUDA build to judge
        return _finding("TORCH", Status.SKIP, f"torch {torch}: build tag '+{version(torch).local}' names no CUDA build "
                        "(rcompat judges +cpu and +cuNNN builds)", "", ev)
    if not rows:
        what = f"; its build is for CUDA {tag_cuda}" if tag_cuda else ""
        return _finding("TORCH", Status.SKIP, f"torch {_public(torch)} is not in rcompat's table{what}", "", ev)
    builds = ", ".join(build_tag(r["cuda"]) for r in rows)
    if not wanted:
        return _finding("TORCH", Status.OK, f"torch {_public(torch)} has builds {builds}", "", ev, rows)
    match = [r for r in rows if major_minor(r["cuda"]) == major_minor(wanted)]
    if not match:
        return _finding("TORCH", Status.FAIL, f"torch {_public(torch)} has no CUDA {wanted} build "
                        f"(builds: {builds})", _torch_fix(torch, wanted, s.get("driver"), t), ev, rows)
    row = match[0]
    if row.get("min_driver") and s.get("driver") and version(s["driver"]) < version(row["min_driver"]):
        return _finding("TORCH", Status.FAIL, f"torch {_public(torch)}+{build_tag(row['cuda'])} needs driver "
                        f"≥ {row['min_driver']}; this one is {s['driver']}",
                        f"upgrade the driver to ≥ {row['min_driver']}", ev, [row])
    if s.get("cudnn") and row.get("cudnn") and version(s["cudnn"]).major != version(row["cudnn"]).major:
        return _finding("TORCH", Status.WARN, f"torch {_public(torch)}+{build_tag(row['cuda'])} ships cuDNN "
                        f"{row['cudnn']}; cuDNN {s['cudnn']} is another major, and two cuDNNs in one process "
                        "are loaded by whoever comes first", "let torch use the cuDNN of its own wheel", ev, [row])
    remedy = "" if tag_cuda else (f"install the {build_tag(row['cuda'])} build: pip install torch=="
                                  f"{_public(torch)} --index-url https://download.pytorch.org/whl/"
                                  f"{build_tag(row['cuda'])}")
    return _finding("TORCH", Status.OK, f"torch {_public(torch)} has a {build_tag(row['cuda'])} build", remedy,
                    ev, [row])


def _torch_fix(torch: str, cuda: str, driver: str | None, t: Tables) -> str:
    """Prefer another build of the same release that the driver runs fully; else a release that has cuXY."""
    rows = t.torch_rows(torch)
    c = version(cuda)

    def runs(r: dict) -> bool:
        return driver is None or driver_verdict(driver, r["cuda"], t)[0] is Status.OK

    same_major = [r for r in rows if version(r["cuda"]).major == c.major and version(r["cuda"]) <= c and runs(r)]
    usable = same_major or [r for r in rows if runs(r)]
    parts = []
    if usable:
        best = max(usable, key=lambda r: version(r["cuda"]))
        parts.append(f"install the {build_tag(best['cuda'])} build of torch {_public(torch)} (pip install "
                     f"torch=={_public(torch)} --index-url https://download.pytorch.org/whl/{build_tag(best['cuda'])})")
    having = sorted({r["torch"] for r in t.torch if major_minor(r["cuda"]) == major_minor(cuda)}, key=version)
    if having:
        releases = ", ".join(having[:-1]) + (" or " if len(having) > 1 else "") + having[-1]
        lead = "or install" if parts else "install a CUDA build of torch:"
        parts.append(f"{lead} torch {releases}, which {'has' if len(having) == 1 else 'have'} a "
                     f"{build_tag(cuda)} build")
    return " ".join(parts) or f"no torch release in rcompat's table has a {build_tag(cuda)} build"


def _rtorch(s: dict[str, str], t: Tables) -> Finding | None:
    if "rtorch" not in s:
        return None
    rtorch, cuda = s["rtorch"], s.get("cuda")
    row = t.rtorch_row(rtorch)
    if row is None:
        return _finding("RTORCH", Status.SKIP, f"R torch {rtorch} is not in rcompat's table", "",
                        {"rtorch": rtorch})
    builds = rtorch_cuda_builds(row)
    ev = {"rtorch": rtorch, "libtorch": row["libtorch"], "cuda_builds": builds, "cuda": cuda}
    if not builds:
        return _finding("RTORCH", Status.SKIP, f"R torch {rtorch} uses LibTorch {row['libtorch']}; its CUDA "
                        "builds are not recorded", "", ev, [row])
    gpu_builds = [b for b in builds if b != "cpu"]
    if not cuda:
        return _finding("RTORCH", Status.OK, f"R torch {rtorch} uses LibTorch {row['libtorch']} (builds: "
                        f"{', '.join(builds)})", "", ev, [row])
    if major_minor(cuda) in {major_minor(b) for b in gpu_builds}:
        return _finding("RTORCH", Status.OK, f"R torch {rtorch} has a CUDA {cuda} build (LibTorch "
                        f"{row['libtorch']})", "", ev, [row])
    others = [r["rtorch"] for r in t.rtorch
              if major_minor(cuda) in {major_minor(b) for b in rtorch_cuda_builds(r) if b != "cpu"}]
    remedy = f"install CUDA {' or '.join(gpu_builds)}, or set CUDA=cpu before install_torch() for the CPU build"
    if others:
        remedy += f", or use R torch {' / '.join(others)}, which has a CUDA {cuda} build"
    return _finding("RTORCH", Status.FAIL, f"R torch {rtorch} supports CUDA {', '.join(gpu_builds)} "
                    f"(LibTorch {row['libtorch']}), not {cuda}: install_torch() stops with 'Unsupported CUDA "
                    f"version'", remedy, ev, [row], source=join_sources([row["source"], "mlverse/torch 1137"]))


def _tensorflow(s: dict[str, str], t: Tables) -> Finding | None:
    if "tensorflow" not in s:
        return None
    tf = s["tensorflow"]
    rows = t.tensorflow_rows(tf)
    if not rows:
        return _finding("TENSORFLOW", Status.SKIP, f"TensorFlow {tf} is not in rcompat's table", "",
                        {"tensorflow": tf})
    row = rows[0]
    verdicts: list[tuple[Status, str, str]] = []
    for what, have, built in (("CUDA", s.get("cuda"), row["cuda"]), ("cuDNN", s.get("cudnn"), row["cudnn"])):
        if not have:
            continue
        h, b = version(have), version(built)
        if h.major != b.major:
            verdicts.append((Status.FAIL, f"TensorFlow {tf} is built for {what} {built}; {what} {have} is another "
                             f"major, whose libraries it does not load",
                             f"install {what} {b.major}.x (pip install 'tensorflow[and-cuda]=={tf}' brings the "
                             f"matching libraries)" + _tf_alternative(what, have, t)))
        elif h.truncate(2) < b.truncate(2):
            verdicts.append((Status.WARN, f"{what} {have} is older than the {built} TensorFlow {tf} was tested "
                             f"with", f"use {what} ≥ {built}"))
        else:
            verdicts.append((Status.OK, f"{what} {have} fits TensorFlow {tf} (built for {built})", ""))
    if not verdicts:
        return _finding("TENSORFLOW", Status.OK, f"TensorFlow {tf} is built for CUDA {row['cuda']}, cuDNN "
                        f"{row['cudnn']}", "", {"tensorflow": tf}, [row])
    worst = max(verdicts, key=lambda v: SEVERITY[v[0]])
    verdicts.sort(key=lambda v: -SEVERITY[v[0]])
    return _finding("TENSORFLOW", worst[0], "; ".join(v[1] for v in verdicts), worst[2],
                    {"tensorflow": tf, "cuda": s.get("cuda"), "cudnn": s.get("cudnn")}, [row])


def _tf_alternative(what: str, have: str, t: Tables) -> str:
    column = "cuda" if what == "CUDA" else "cudnn"
    fits = [r["tensorflow"] for r in t.tensorflow if version(r[column]).major == version(have).major]
    return f", or TensorFlow {' / '.join(fits)}, built for {what} {version(have).major}.x" if fits else ""


# -- summary ---------------------------------------------------------------------------------------

def _summary(layers: list[Finding], s: dict[str, str]) -> Finding:
    stack_text = ", ".join(f"{k} {v}" for k, v in s.items()) or "nothing"
    ev = {"stack": s, "layers": {f.id: f.status.value for f in layers}}
    failing = [f for f in layers if f.status is Status.FAIL]
    warning = [f for f in layers if f.status is Status.WARN]
    if failing:
        first = failing[0]
        layer = LAYER_NAMES[first.id.rsplit("-", 1)[1]]
        return Finding(id="CUDA-MATRIX", area=AREA, status=Status.FAIL,
                       title=f"first incompatible layer: {layer}", message=f"{stack_text}: {first.message}",
                       remedy=first.remedy, evidence=ev, source=first.source, confidence=first.confidence)
    if warning:
        return Finding(id="CUDA-MATRIX", area=AREA, status=Status.WARN,
                       title=f"the stack fits, with reservations at: "
                             f"{', '.join(LAYER_NAMES[f.id.rsplit('-', 1)[1]] for f in warning)}",
                       message=f"{stack_text}: " + "; ".join(f.message for f in warning),
                       remedy=warning[0].remedy, evidence=ev, source=warning[0].source)
    judged = [f for f in layers if f.status is Status.OK]
    if not judged:
        return Finding(id="CUDA-MATRIX", area=AREA, status=Status.SKIP, title="nothing in the stack could be judged",
                       message=f"{stack_text}: no layer has data in rcompat's tables" if layers
                       else "no versions given or observed", evidence=ev)
    return Finding(id="CUDA-MATRIX", area=AREA, status=Status.OK,
                   title=f"every judged layer fits ({len(judged)} of {len(layers)})",
                   message=f"{stack_text}: " + "; ".join(f.message for f in judged), evidence=ev)
