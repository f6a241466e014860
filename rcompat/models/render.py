"""`model inspect`'s text: one block per file."""
from __future__ import annotations

from rcompat.inputs import human_size
from rcompat.models.facts import ModelInfo


def inspection_text(infos: list[ModelInfo], max_tensors: int = 10) -> str:
    lines: list[str] = []
    for info in infos:
        version = f" (format version {info.format_version})" if info.format_version is not None else ""
        lines.append(f"{info.path}: {info.format}{version}, {human_size(info.size_bytes)}")
        if info.producer:
            lines.append(f"  producer: {info.producer}")
        if info.tensors:
            lines.append(f"  tensors: {len(info.tensors)}, {human_size(info.tensor_bytes)}; devices: "
                         f"{', '.join(info.devices) or 'cpu'}")
            for t in info.tensors[:max_tensors]:
                shape = "x".join(map(str, t.shape)) if t.shape is not None else "?"
                lines.append(f"    {t.name}  {t.dtype}[{shape}]  {t.device}{'  Parameter' if t.parameter else ''}")
            if len(info.tensors) > max_tensors:
                lines.append(f"    … {len(info.tensors) - max_tensors} more")
        if info.globals:
            lines.append(f"  pickled globals: {', '.join(info.globals)}")
        for ns, ops in info.operators.items():
            lines.append(f"  operators {ns}:: {', '.join(ops)}")
        for key in ("top_level", "keras_version", "model_class", "lambda_layers", "custom_objects", "files",
                    "r_serialization"):
            if info.details.get(key) not in (None, "", [], 0):
                lines.append(f"  {key}: {info.details[key]}")
        lines.append("")
    return "\n".join(lines)
