"""The model engine's two entry points: `inspect_models` (facts, inspection.py) and `check_models` (a Report)."""
from __future__ import annotations

from rcompat.model import Finding, Report, Status
from rcompat.models.checks import AREA, Machine, check_model
from rcompat.models.inspection import inspect_models, inspection_document
from rcompat.models.target import Target, find_target

__all__ = ["inspect_models", "inspection_document", "check_models", "machine_devices", "add_model_verdicts"]


def machine_devices(spec: str = "auto") -> Machine:
    """`cpu`, `cuda:0,cuda:1` (exactly those), or `auto`: this machine's GPUs through NVML."""
    if spec == "cpu":
        return Machine([], {}, "--device cpu")
    if spec != "auto":
        indices = sorted({int(part.split(":", 1)[1]) for part in spec.split(",")})
        return Machine(indices, {}, f"--device {spec}")
    from rcompat.cuda.nvml import probe_nvml

    facts = probe_nvml()
    if facts.status != "ok":
        return Machine([], {}, f"NVML: {facts.reason or facts.error or facts.status}")
    gpus = [g.index for g in facts.gpus]
    memory = {g.index: g.memory_total_mib for g in facts.gpus if g.memory_total_mib}
    return Machine(gpus, memory, f"NVML: {len(gpus)} GPU(s)")


def check_models(paths: "list[str]", *, python: str | None = None, root: str | None = None,
                 device: str = "auto", target: Target | None = None, progress=None) -> Report:
    target = target or find_target(python=python, root=root)
    machine = machine_devices(device)
    infos = inspect_models(paths, progress)
    report = Report(command="model check")
    report.facts["models"] = {"target": target.where, "torch": target.torch_version,
                              "numpy": target.package_version("numpy"), "keras": target.package_version("keras"),
                              "devices": [f"cuda:{i}" for i in machine.gpus] or ["cpu"],
                              "files": [i.to_dict() for i in infos]}
    if not infos:
        report.add(Finding("MODEL-FILES", AREA, Status.SKIP, "no model files found", f"in {', '.join(paths)}"))
    cache: dict = {}
    for info in infos:
        report.add(check_model(info, target, machine, cache) or
                   [Finding("MODEL-READ", AREA, Status.OK, f"{info.path}: {info.format}", "read; nothing to check")])
    return report


def add_model_verdicts(report: Report, paths: "list[str]", *, root: str | None = None, device: str = "auto",
                       label: str = "", progress=None) -> None:
    """The hooks of `rcompat upgrade --models` (root: NEW's, read from its files, never run) and `rcompat
    doctor --models` (this machine): the model-check findings and facts appended to another report."""
    checked = check_models(paths, root=root, device=device, progress=progress)
    report.add(checked.findings)
    report.facts["models"] = {**checked.facts["models"], **({"side": label} if label else {})}
