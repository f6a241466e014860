"""The cuda area of `rcompat doctor`: driver, GPUs, torch's CUDA, libraries on disk, the matrix, device.

Facts are gathered once per run (ctx.memo("cuda.facts")) and recorded in ctx.facts["cuda"]; NVML's
answer is its own memo ("nvml.facts"), read by the torch cache's key and the findings alike; the torch
child's part is its own memo ("torch.facts"), started before this area waits for R's facts; when the
race area runs its trial in this run, that trial's child reports torch's facts after its trial and no
torch child of this area's own is started (one torch start, not two). R torch's
side comes from the R engine's shared facts when that engine is present; this area never starts R on
its own. ctx.options read here: "nvml" (a pynvml-like module, for tests), "cuda_tables" (a directory
overriding the packaged tables).
"""
from __future__ import annotations

from typing import Iterable

from rcompat.cuda.facts import CudaFacts, gather
from rcompat.cuda.libs import LibraryScan, clashes, cudnn_split, scan, search_locations
from rcompat.cuda.torch_probe import torch_distribution
from rcompat.cuda.nvml import NvmlFacts, probe_nvml
from rcompat.r.checks import shared_r_facts
from rcompat.model import Finding, Status

AREA = "cuda"
TITLE = "NVIDIA driver, GPUs, CUDA libraries and frameworks"
NVML_SOURCE = "NVIDIA NVML API (nvmlSystemGetCudaDriverVersion_v2; REFERENCE.md)"


def nvml_facts(ctx) -> NvmlFacts:
    """What NVML says, asked once per run: the torch cache's key and the findings read the same answer."""
    return ctx.memo("nvml.facts", lambda: probe_nvml(ctx.options.get("nvml"), timeout=ctx.timeout))


def torch_facts(ctx) -> dict:
    """The torch child's facts, once per run for every torch question (CUDA-TORCH, the matrix, the
    device choice), and from the cache between runs (rcompat.cuda.torch_cache)."""
    def from_race_trial():  # the race area's trial child imports torch too: it answers for both
        from rcompat.race.checks import trial_torch_facts

        return trial_torch_facts(ctx)

    def produce() -> dict:
        from rcompat.cuda.torch_cache import cached_probe_torch

        return cached_probe_torch(nvml_facts(ctx), timeout=ctx.timeout, shared=from_race_trial)

    return ctx.memo("torch.facts", produce)


def early_libraries(ctx) -> tuple[list[dict[str, str]], LibraryScan]:
    """(places, the CUDA libraries in them) for every place but R torch's own, which only R's facts
    name: scanned without waiting for R. cuda_facts takes this scan when R torch adds no place."""
    def produce() -> tuple[list[dict[str, str]], LibraryScan]:
        dist = torch_distribution()
        places = search_locations(torch_location=dist["location"] if dist else None)
        return places, scan(places)

    return ctx.memo("cuda.libraries.early", produce)


def cuda_facts(ctx) -> CudaFacts:
    def scanned(places: list[dict[str, str]]) -> LibraryScan:
        early_places, early = early_libraries(ctx)
        return early if places == early_places else scan(places)

    def produce() -> CudaFacts:
        torch = torch_facts(ctx)  # first: the torch child runs while the r area is still probing R
        facts = gather(nvml_facts=nvml_facts(ctx), timeout=ctx.timeout, r_facts=shared_r_facts(ctx),
                       with_torch=False, scanned=scanned)
        facts.torch = torch
        ctx.facts["cuda"] = facts.to_dict()
        return facts

    return ctx.memo("cuda.facts", produce)


def _f(id: str, status: Status, title: str, **kw) -> Finding:
    return Finding(id=id, area=AREA, status=status, title=title, **kw)


def check_driver(ctx) -> Iterable[Finding]:
    nv = cuda_facts(ctx).nvml
    if nv.status == "no-driver":
        yield _f("CUDA-DRIVER", Status.SKIP, nv.reason, message=f"NVML: {nv.error}", source=NVML_SOURCE,
                 remedy="Nothing to do on a machine without an NVIDIA GPU; otherwise install the NVIDIA driver.")
    elif nv.status == "no-pynvml":
        yield _f("CUDA-DRIVER", Status.SKIP, nv.reason, remedy="pip install nvidia-ml-py")
    elif nv.status != "ok":
        yield _f("CUDA-DRIVER", Status.ERROR, f"NVML error: {nv.error}", message=nv.reason,
                 remedy="Check the driver with `nvidia-smi`; a driver/library version mismatch needs a reboot "
                        "or reloading the kernel module.", evidence=nv.to_dict(), source=NVML_SOURCE)
    else:
        yield _f("CUDA-DRIVER", Status.OK,
                 f"NVIDIA driver {nv.driver_version} (CUDA driver API {nv.cuda_driver_version or '?'}), "
                 f"{len(nv.gpus)} GPU(s)", evidence={"errors": nv.errors}, source=NVML_SOURCE)


def check_gpus(ctx) -> Iterable[Finding]:
    nv = cuda_facts(ctx).nvml
    for gpu in nv.gpus:
        procs = [f"{p.name or '?'} (pid {p.pid}, {p.used_memory_mib if p.used_memory_mib is not None else '?'} MiB)"
                 for p in gpu.processes]
        kinds = {_runtime(p.name) for p in gpu.processes}
        memory = (f"{gpu.memory_used_mib:.0f} of {gpu.memory_total_mib:.0f} MiB used"
                  if gpu.memory_total_mib is not None and gpu.memory_used_mib is not None else "memory unknown")
        title = f"GPU {gpu.index}: {gpu.name or '?'}, compute capability {gpu.compute_capability or '?'}, {memory}"
        evidence = {"uuid": gpu.uuid, "processes": procs, "errors": gpu.errors}
        if {"R", "python"} <= kinds:
            yield _f(f"CUDA-GPU-{gpu.index}", Status.WARN, title,
                     message="An R and a Python process both hold a CUDA context on this GPU: "
                             + "; ".join(procs),
                     remedy="Two runtimes sharing one GPU race for its memory; `rcompat race` reproduces it. "
                            "Give each its own GPU (CUDA_VISIBLE_DEVICES) or run them one after the other.",
                     evidence=evidence, source=NVML_SOURCE)
        elif gpu.errors:
            yield _f(f"CUDA-GPU-{gpu.index}", Status.WARN, title,
                     message="NVML could not answer: " + "; ".join(f"{k}: {v}" for k, v in gpu.errors.items()),
                     evidence=evidence, source=NVML_SOURCE)
        else:
            yield _f(f"CUDA-GPU-{gpu.index}", Status.OK, title,
                     message=("processes holding a context: " + "; ".join(procs)) if procs else "no compute process",
                     evidence=evidence, source=NVML_SOURCE)


def _runtime(name: str | None) -> str:
    n = (name or "").lower()
    return "R" if n in ("r", "rsession", "rscript") else ("python" if n.startswith("python") else n)


def check_torch(ctx) -> Iterable[Finding]:
    from rcompat.cuda.tables import load_tables
    from rcompat.cuda.torch_probe import explain_unavailable, public_version

    facts = cuda_facts(ctx)
    torch, nv = facts.torch, facts.nvml
    if torch["status"] == "not-installed":
        yield _f("CUDA-TORCH", Status.SKIP, "torch is not installed in this Python", remedy="pip install torch")
        return
    if torch["status"] in ("failed", "import-error"):
        yield _f("CUDA-TORCH", Status.FAIL, f"torch could not be probed: {torch.get('reason')}",
                 remedy="Run `python -c 'import torch'` to see the error; a hang here is usually CUDA "
                        "initialisation on a broken driver.", evidence=torch.get("child", {}))
        return
    label = f"torch {torch['version']} (CUDA {torch.get('cuda') or 'none'}, cuDNN {torch.get('cudnn_version') or 'none'})"
    if torch.get("is_available"):
        yield _f("CUDA-TORCH", Status.OK, f"{label}: CUDA available, {len(torch.get('devices') or [])} device(s)",
                 evidence={"devices": torch.get("devices"), "arch_list": torch.get("arch_list")})
        return
    why = explain_unavailable(torch, load_tables(ctx.options.get("cuda_tables")).min_driver)
    gpus_present = nv.status == "ok" and bool(nv.gpus)
    status = Status.FAIL if gpus_present else Status.OK
    context = "" if gpus_present else " (this machine has no usable NVIDIA GPU, so nothing is lost)"
    yield _f("CUDA-TORCH", status, f"torch.cuda.is_available() is False: {why['message']}",
             message=f"{label}{context}", remedy=why["remedy"] if gpus_present else "",
             evidence={"explanation": why["id"], "torch_messages": why["evidence_text"],
                       "version": public_version(torch.get("version"))},
             source=why["source"], confidence=why["confidence"])


def check_torch_arch(ctx) -> Iterable[Finding]:
    from rcompat.cuda.torch_probe import arch_support

    facts = cuda_facts(ctx)
    arch = facts.torch.get("arch_list") or []
    gpus = [g for g in facts.nvml.gpus if g.compute_capability]
    if facts.torch.get("status") != "ok" or not facts.torch.get("cuda"):
        return  # no CUDA build of torch: nothing compiled to compare
    if not gpus or not arch:
        yield _f("CUDA-TORCH-ARCH", Status.SKIP, "no GPU compute capability or compiled arch list to compare",
                 evidence={"arch_list": arch})
        return
    for gpu in gpus:
        ok, how = arch_support(arch, gpu.compute_capability)
        yield _f("CUDA-TORCH-ARCH", Status.OK if ok else Status.FAIL,
                 f"GPU {gpu.index} ({gpu.name}, cc {gpu.compute_capability}) vs torch {facts.torch['version']}: {how}",
                 remedy="" if ok else "Install a torch build compiled for this compute capability.",
                 evidence={"arch_list": arch, "gpu": gpu.index},
                 source="CUDA C Programming Guide: binary and PTX compatibility")


def check_libs(ctx) -> Iterable[Finding]:
    on_disk = cuda_facts(ctx).libraries
    if not on_disk.libraries:
        yield _f("CUDA-LIBS", Status.SKIP, "no CUDA libraries found on disk",
                 evidence={"searched": on_disk.searched})
    else:
        summary = ", ".join(f"{lib.soname or lib.family} {lib.version or '?'} ({lib.origin})" for lib in on_disk.libraries)
        yield _f("CUDA-LIBS", Status.OK, f"{len(on_disk.libraries)} CUDA librar{'y' if len(on_disk.libraries) == 1 else 'ies'}"
                 " found on disk", message=summary,
                 evidence={"libraries": [f"{lib.path} ({lib.soname}, {lib.version or '?'} from "
                                         f"{lib.version_source or '-'})" for lib in on_disk.libraries],
                           "searched": [p["dir"] for p in on_disk.searched]})
    found = clashes(on_disk)
    if not found and on_disk.libraries:
        yield _f("CUDA-LIBS-DUPLICATE", Status.OK, "one build of each CUDA library is reachable")
    for clash in found:
        builds = "; ".join(f"{b['version'] or '?'} at {', '.join(b['paths'])}" for b in clash["builds"])
        same = clash["same_soname"]
        yield _f("CUDA-LIBS-DUPLICATE", Status.WARN,
                 f"{len(clash['builds'])} different builds of {clash['family']} are reachable",
                 message=builds + (". They share the SONAME " + clash["sonames"][0] + ": the first one the loader "
                                   "finds serves every user in the process" if same else
                                   ". Different SONAMEs (" + ", ".join(clash["sonames"]) + ") can both load into one "
                                   "process, each for the framework built against it"),
                 remedy="Make sure each framework finds the one it was built for (RPATH, LD_LIBRARY_PATH order); "
                        "remove stale copies from LD_LIBRARY_PATH.", evidence=clash)


def check_cudnn_split(ctx) -> Iterable[Finding]:
    on_disk = cuda_facts(ctx).libraries
    if not any(lib.family == "libcudnn" for lib in on_disk.libraries):
        return
    splits = cudnn_split(on_disk)
    if not splits:
        yield _f("CUDA-CUDNN-SPLIT", Status.OK, "each cuDNN 9 finds its sub-libraries beside itself")
    for split in splits:
        taken = "; ".join(f"{s['soname']} from {s['path']} ({s['version'] or '?'}, {s['origin']})"
                          for s in split["taken_from_elsewhere"])
        yield _f("CUDA-CUDNN-SPLIT", Status.WARN,
                 f"cuDNN {split['version'] or '9'} in {split['directory']} would load sub-libraries of another install",
                 message=(f"Missing beside libcudnn.so.9 ({split['origin']}), found elsewhere: {taken}. cuDNN 9 loads "
                          "these by name at the first operation that needs them; a copy from another build fails "
                          "with CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (or _LOADING_FAILED)."),
                 remedy=("Install a cuDNN that ships every sub-library in one directory (for torch: a newer "
                         "nvidia-cudnn-cu13/-cu12 wheel), or remove the other cuDNN's directory from "
                         "LD_LIBRARY_PATH or its package, so the two cannot mix."),
                 evidence=split, source="pytorch/pytorch issues 185512, 187824, 188892; symptoms.toml "
                                        "cudnn-sublibrary-mismatch")


def check_rtorch(ctx) -> Iterable[Finding]:
    view = cuda_facts(ctx).rtorch
    if view.get("status") != "installed":
        yield _f("CUDA-RTORCH", Status.SKIP, f"R torch's CUDA view: {view.get('reason', 'unknown')}")
        return
    builds = ", ".join(view.get("cuda_builds") or []) or "not recorded"
    yield _f("CUDA-RTORCH", Status.OK if view.get("lantern_installed") else Status.WARN,
             f"R torch {view.get('version')}: LibTorch {view.get('libtorch', '?')}, CUDA builds {builds}",
             message=("Lantern/LibTorch installed in " + ", ".join(view.get("lib_dirs") or []))
             if view.get("lantern_installed") else "Lantern is not installed: R torch cannot use any device yet",
             remedy="" if view.get("lantern_installed") else "In R: torch::install_torch() (CUDA=cpu for the CPU build)",
             evidence=view, source="rtorch_libtorch.csv (R torch NEWS.md, R/install.R)")


def check_matrix(ctx) -> Iterable[Finding]:
    from rcompat.cuda.matrix import stack_findings

    stack = cuda_facts(ctx).stack()
    yield from stack_findings(stack, ctx.options.get("cuda_tables"))


def check_device(ctx) -> Iterable[Finding]:
    import os

    from rcompat.cuda.device import decide

    facts = cuda_facts(ctx)
    choice = decide(facts.nvml, facts.torch, ctx.options.get("cuda_tables"), env=os.environ)
    yield _f("CUDA-DEVICE", Status.OK, f"rcompat.device() would choose {choice.device}: {choice.reason}",
             remedy=choice.remedy, evidence=choice.facts)


CHECKS = [check_driver, check_gpus, check_torch, check_torch_arch, check_libs, check_cudnn_split, check_rtorch,
          check_matrix, check_device]
early_libraries.in_process = True  # type: ignore[attr-defined]  # no child: never the critical path
START = (torch_facts, early_libraries)  # NVML's child, the torch child unless the race trial's serves
for _fn, _id in zip(CHECKS, ("CUDA-DRIVER", "CUDA-GPU", "CUDA-TORCH", "CUDA-TORCH-ARCH", "CUDA-LIBS",
                             "CUDA-CUDNN-SPLIT", "CUDA-RTORCH", "CUDA-MATRIX", "CUDA-DEVICE")):
    _fn.check_id = _id
