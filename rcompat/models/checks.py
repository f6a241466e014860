"""`model check`: will each model load in the target environment, and what to do if not — as findings.

Facts come from the static readers (ModelInfo) and the target (target.py: its torch's files, never
imported); knowledge from rcompat/data/model_rules.toml. One finding per question per file, ids
MODEL-FORMAT, MODEL-PICKLE, MODEL-ADVISORY, MODEL-DEVICE, MODEL-OPS, MODEL-NUMPY, MODEL-KERAS, MODEL-R,
MODEL-SIZE (docs/models.md).
"""
from __future__ import annotations

import _compat_pickle
from dataclasses import dataclass, field

from rcompat.data import cached_toml
from rcompat.model import Finding, Status
from rcompat.models import facts as F
from rcompat.models.facts import ModelInfo
from rcompat.models.target import Target, registered
from rcompat.versions import matches

AREA = "models"
RULES = "model_rules.toml"
# Modules whose globals a pickle only names to run code: flagged whatever the allowlist says.
DANGEROUS = ("os.", "posix.", "nt.", "subprocess.", "sys.", "builtins.eval", "builtins.exec", "builtins.compile",
             "builtins.__import__", "builtins.open", "builtins.getattr", "runpy.", "shutil.", "socket.", "pty.",
             "importlib.", "webbrowser.", "<dynamic", "<copyreg")
_PICKLED = (F.TORCH_ZIP, F.TORCH_LEGACY)


@dataclass
class Machine:
    """The devices a model would be loaded on: cuda indices present and their memory (MiB) where known."""
    gpus: list[int] = field(default_factory=list)
    memory_mib: dict[int, float] = field(default_factory=dict)
    how: str = ""


def normalize_global(dotted: str) -> str:
    """Python 2 names as pickle (and torch's unpickler) map them: __builtin__.set -> builtins.set."""
    module, _, name = dotted.rpartition(".")
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    else:
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    return f"{module}.{name}"


def check_model(info: ModelInfo, target: Target, machine: Machine, cache: dict) -> list[Finding]:
    out: list[Finding] = []
    for check in (_format, _pickle, _advisory, _devices, _operators, _numpy, _keras, _r, _size):
        out.extend(check(info, target, machine, cache))
    return out


def _finding(fid: str, info: ModelInfo, status: Status, title: str, message: str = "", remedy: str = "",
             source: str = "", **evidence) -> Finding:
    return Finding(fid, AREA, status, f"{info.path}: {title}", message, remedy,
                   {"file": info.path, "format": info.format, **evidence}, source)


def _format(info, target, machine, cache):
    if info.format not in (F.TORCH_ZIP, F.TORCHSCRIPT) or info.format_version is None:
        return []
    version = target.torch_version
    row = next((r for r in cached_toml(RULES, "format_range") if matches(version, r["torch"])), None)
    if row is None:
        return [_finding("MODEL-FORMAT", info, Status.SKIP, f"file format version {info.format_version}",
                         f"no readable range known for torch {version or '(not found)'} in {target.where}")]
    ok = row["min_read"] <= info.format_version <= row["max_read"]
    return [_finding("MODEL-FORMAT", info, Status.OK if ok else Status.FAIL,
                     f"file format version {info.format_version} {'within' if ok else 'outside'} torch {version}'s "
                     f"{row['min_read']}..{row['max_read']}",
                     "" if ok else f"torch {version} fails with \"Attempted to read a PyTorch file with version "
                     f"{info.format_version}, but the maximum supported version for reading is {row['max_read']}\"",
                     "" if ok else "load it with the torch that wrote it and re-save, or upgrade the target torch",
                     row["source"], version=info.format_version, readable=[row["min_read"], row["max_read"]])]


def _pickle(info, target, machine, cache):
    if info.format not in _PICKLED:
        return []
    names = [normalize_global(g) for g in info.globals]
    danger = [g for g in names if g.startswith(DANGEROUS)]
    allow = cache.setdefault("allowlist", target.allowlist())
    version = target.torch_version
    if danger:
        return [_finding("MODEL-PICKLE", info, Status.FAIL, "the pickle would run code when loaded",
                         f"it names {', '.join(danger[:5])}: loading it with weights_only=False (or with a torch "
                         "whose weights_only can be bypassed) runs that code. rcompat read it without unpickling.",
                         "do not load this file; get the weights as safetensors or a state_dict from a trusted source",
                         "pytorch/pytorch torch/_weights_only_unpickler.py", globals=danger)]
    if allow is None:
        return [_finding("MODEL-PICKLE", info, Status.SKIP, "weights_only verdict",
                         f"no torch/_weights_only_unpickler.py in {target.where} (torch {version or 'not found'})")]
    refused = [g for g in names if not allow.allows(g)]
    default_safe = matches(version, ">=2.6")
    if not refused:
        return [_finding("MODEL-PICKLE", info, Status.OK, f"loads with weights_only=True (torch {version})",
                         f"every pickled global ({len(names)}) is on torch {version}'s weights_only allowlist",
                         source="pytorch/pytorch torch/_weights_only_unpickler.py (_get_allowed_globals)",
                         globals=names)]
    listed = ", ".join(refused[:6]) + (f" and {len(refused) - 6} more" if len(refused) > 6 else "")
    message = (f"torch.load with weights_only=True refuses it: {listed} not on torch {version}'s allowlist; "
               + ("weights_only=True is the default since torch 2.6, so a plain torch.load(path) fails"
                  if default_safe else f"torch {version} defaults to weights_only=False and would import and run them"))
    remedy = (f"if the file is trusted: torch.serialization.add_safe_globals([{', '.join(refused[:6])}]) before "
              "torch.load, or torch.load(path, weights_only=False); better: re-save only the state_dict")
    return [_finding("MODEL-PICKLE", info, Status.FAIL if default_safe else Status.WARN,
                     "needs code execution to load (weights_only=True refuses it)", message, remedy,
                     "pytorch/pytorch torch/_weights_only_unpickler.py; torch 2.6 release notes (weights_only default)",
                     refused=refused, globals=names)]


def _advisory(info, target, machine, cache):
    if info.format not in _PICKLED or not target.torch_version:
        return []
    hits = [r for r in cached_toml(RULES, "advisory") if matches(target.torch_version, r["torch"])]
    if not hits:
        return []
    return [_finding("MODEL-ADVISORY", info, Status.WARN,
                     f"torch {target.torch_version}'s weights_only is not a safety boundary",
                     "; ".join(f"{r['id']} ({r['cve']}, torch {r['torch']}): {r['effect']}" for r in hits),
                     "upgrade the target torch past the advisories, or load only files you trust",
                     "; ".join(r["source"] for r in hits), advisories=[r["id"] for r in hits])]


def _devices(info, target, machine, cache):
    saved = [d for d in info.devices if d not in ("cpu", "meta")]
    if not saved:
        return []
    missing = [d for d in saved if not _present(d, machine)]
    if not missing:
        return [_finding("MODEL-DEVICE", info, Status.OK, f"saved on {', '.join(saved)}, present here",
                         machine.how, devices=saved)]
    have = [f"cuda:{i}" for i in machine.gpus]
    mapping = "\"cpu\"" if not have else "{" + ", ".join(f'"{d}": "{have[0]}"' for d in missing) + "}"
    return [_finding("MODEL-DEVICE", info, Status.FAIL, f"saved on {', '.join(missing)}, not on this machine",
                     f"its storages record {', '.join(missing)}; this machine has {', '.join(have) or 'no GPU'} "
                     f"({machine.how}). torch.load without map_location fails (\"Attempting to deserialize object "
                     "on a CUDA device\" / \"on CUDA device N but torch.cuda.device_count() is M\")",
                     f"torch.load({info.path!r}, map_location={mapping})",
                     "pytorch/pytorch torch/serialization.py (validate_cuda_device)", devices=saved, machine=have)]


def _present(device: str, machine: Machine) -> bool:
    if device == "cuda":
        return bool(machine.gpus)
    if device.startswith("cuda:"):
        return device[5:].isdigit() and int(device[5:]) in machine.gpus
    return False  # mps, xla, …: not on a Linux machine rcompat checks


def _operators(info, target, machine, cache):
    if info.format != F.TORCHSCRIPT:
        return []
    extensions = {r["namespace"]: r for r in cached_toml(RULES, "extension", ("namespace", "package", "source"))}
    if "registry" not in cache:
        cache["registry"] = target.operators()
    registry = cache["registry"]
    out = []
    for ns in sorted(info.operators):
        if ns in extensions:
            row = extensions[ns]
            version = target.package_version(row["package"]) or target.package_version(row["package"].replace("_", "-"))
            out.append(_finding("MODEL-OPS", info, Status.WARN if version else Status.FAIL,
                                f"{len(info.operators[ns])} {ns}:: operator(s) need {row['package']}",
                                f"{', '.join(info.operators[ns][:8])}: torch.jit.load fails with \"Unknown builtin op: "
                                f"{ns}::{info.operators[ns][0]}\" unless {row['package']} is imported first"
                                + (f" ({row['package']} {version} is installed)" if version else
                                   f"; {row['package']} is not installed in {target.where}"),
                                f"import {row['package']} before torch.jit.load (C++: link its library)",
                                row["source"], namespace=ns, operators=info.operators[ns]))
    if registry is None:
        out.append(_finding("MODEL-OPS", info, Status.SKIP, "TorchScript operators",
                            f"no libtorch in {target.where} to read the operator registry from"))
        return out
    unknown = [f"{ns}::{op}" for ns, ops in info.operators.items() if ns not in extensions for op in ops
               if not registered(registry, ns, op)]
    total = sum(len(v) for ns, v in info.operators.items() if ns not in extensions)
    out.append(_finding("MODEL-OPS", info, Status.FAIL if unknown else Status.OK,
                        f"{len(unknown)} of {total} TorchScript operator(s) unknown to torch {target.torch_version}"
                        if unknown else f"all {total} TorchScript operator(s) registered in torch {target.torch_version}",
                        f"torch.jit.load would fail with \"Unknown builtin op: {unknown[0]}\"" if unknown else "",
                        "load it with the torch that saved it, or re-export from source against the target torch"
                        if unknown else "", "schema strings in libtorch (torch/csrc/jit/frontend/schema_matching.cpp "
                        "raises Unknown builtin op)", unknown=unknown))
    return out


def _numpy(info, target, machine, cache):
    out = []
    for row in cached_toml(RULES, "moved_module"):
        used = [g for g in info.globals if g.startswith(row["module"] + ".")]
        if not used:
            continue
        version = target.package_version(row["package"])
        fits = version is not None and matches(version, row["needs"])
        status = Status.OK if fits else (Status.WARN if row.get("soft") and version else Status.FAIL)
        out.append(_finding("MODEL-NUMPY", info, status, f"pickles {row['module']} ({row['package']} {version or 'absent'})",
                            row["message"] + ("" if version else f"; {row['package']} is not installed in {target.where}"),
                            "" if status is Status.OK else f"install {row['package']}{row['needs']} or re-save the "
                            "arrays as tensors", row["source"], globals=used))
    return out


def _keras(info, target, machine, cache):
    if info.format not in (F.KERAS_ZIP, F.KERAS_H5, F.SAVEDMODEL):
        return []
    version = target.package_version("keras")
    if info.format == F.SAVEDMODEL:
        refuses = matches(version, ">=3")
        return [_finding("MODEL-KERAS", info, Status.FAIL if refuses else Status.OK,
                         "a TensorFlow SavedModel directory" + (f": keras {version}'s load_model refuses it" if refuses else ""),
                         "Keras 3 loads only .keras and .h5 files" if refuses else "",
                         "keras.layers.TFSMLayer(path, call_endpoint='serving_default') for inference, or load it with "
                         "tf.keras 2 (TensorFlow < 2.16) and re-save as .keras" if refuses else "",
                         "keras/src/saving/saving_api.py (load_model); rstudio/keras3 PR 1434", keras=version)]
    out = []
    saved = str(info.details.get("keras_version") or "")
    if version is None:
        out.append(_finding("MODEL-KERAS", info, Status.SKIP, f"saved by keras {saved or '?'}",
                            f"keras is not installed in {target.where}"))
    else:
        newer = matches(version, "<3") and saved.startswith("3")
        out.append(_finding("MODEL-KERAS", info, Status.FAIL if newer else Status.OK,
                            f"saved by keras {saved or '?'}, target keras {version}",
                            "a Keras 3 file under Keras 2" if newer else "", "install keras>=3" if newer else "",
                            "keras/src/saving/saving_lib.py", keras=version, saved=saved))
    if info.details.get("lambda_layers"):
        out.append(_finding("MODEL-KERAS", info, Status.WARN, f"{info.details['lambda_layers']} Lambda layer(s): code in the file",
                            "keras.saving.load_model refuses Lambda layers' pickled code by default (safe_mode=True)",
                            "if the file is trusted: keras.saving.load_model(path, safe_mode=False)",
                            "keras/src/layers/core/lambda_layer.py; keras/src/saving/saving_lib.py (safe_mode)"))
    return out


def _r(info, target, machine, cache):
    if info.format == F.TORCH_ZIP:
        why = []
        if info.details.get("top_level") != "dict":
            why.append(f"its top level is {info.details.get('top_level')}, not a plain dict")
        if any(t.parameter for t in info.tensors):
            why.append("it pickles nn.Parameter objects")
        return [_finding("MODEL-R", info, Status.WARN if why else Status.OK,
                         "R torch's load_state_dict() " + ("cannot read it" if why else "can read it"),
                         "; ".join(why) + ("; R fails with \"Expected GenericDict but got None\"" if why else ""),
                         "in Python: torch.save({k: v.detach() for k, v in model.state_dict().items()}, path) "
                         "(a plain dict of tensors), or save with safetensors" if why else "",
                         "mlverse/torch 1064; R torch vignette python-to-r")]
    if info.format == F.TORCH_LEGACY:
        return [_finding("MODEL-R", info, Status.WARN, "R torch cannot read the legacy format",
                         "R torch's load_state_dict() reads torch.save zip files only",
                         "re-save in Python with torch.save(state_dict, path) (zip, the default since 1.6)",
                         "mlverse/torch 1064; R torch vignette python-to-r")]
    if info.format == F.RTORCH:
        return [_finding("MODEL-R", info, Status.WARN, "an R torch file (serialization v3): Python readers refuse it",
                         "safetensors.torch.load_file fails (\"incomplete metadata, file not fully covered\"): R's "
                         "serialize() data follows the tensors",
                         "in R: safetensors::safe_save_file(model$state_dict(), path) for Python readers",
                         "R torch PR 1071 (serialization v3); safetensors' full-coverage check")]
    if info.format == F.RDS:
        return [_finding("MODEL-R", info, Status.WARN, "an R .rds file: only R reads it",
                         "R torch's older form (serialization v2, raw vectors) or any R object",
                         "in R: torch_save() with the default serialization v3, or safetensors::safe_save_file()",
                         "R torch PR 1071 (options(torch.serialization_version = 2))")]
    return []


def _size(info, target, machine, cache):
    need = info.tensor_bytes
    memory = max(machine.memory_mib.values(), default=None)
    if not need or memory is None or not any(d.startswith("cuda") for d in info.devices):
        return []
    fits = need <= memory * (1 << 20)
    return [_finding("MODEL-SIZE", info, Status.OK if fits else Status.WARN,
                     f"{need / (1 << 30):.2f} GiB of tensors vs {memory / 1024:.1f} GiB of GPU memory",
                     "" if fits else "loading it onto one GPU runs out of memory",
                     "" if fits else "torch.load(path, map_location='cpu', mmap=True), then move parts",
                     "NVML memory total", tensor_bytes=need)]
