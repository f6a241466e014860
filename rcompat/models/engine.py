"""The model engine's two entry points: `inspect_models` (facts) and `check_models` (a Report)."""
from __future__ import annotations

from rcompat.model import Finding, Report, Status
from rcompat.models.checks import AREA, Machine, check_model
from rcompat.models.facts import MODEL_SCHEMA_VERSION, ModelInfo
from rcompat.models.reader import find_models, read_model
from rcompat.models.target import Target, find_target


def inspect_models(paths: "list[str]", progress=None) -> list[ModelInfo]:
    files = find_models(paths)
    out = []
    for i, path in enumerate(files, 1):
        if progress is not None:
            progress.note(f"reading {i}/{len(files)}: {path}")
        out.append(read_model(path))
    return out


def inspection_document(infos: list[ModelInfo]) -> dict:
    """The JSON of `model inspect --format json` (docs/models.md): stable keys, only ever added to."""
    from rcompat import __version__

    return {"schema_version": MODEL_SCHEMA_VERSION, "tool": {"name": "rcompat", "version": __version__},
            "command": "model inspect", "models": [i.to_dict() for i in infos]}


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
