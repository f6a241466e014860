"""`model inspect`'s engine: the facts of each file, read statically, and their JSON document. Apart from
engine.py so that inspecting imports only the readers, not the checks and the target's tables (start-up
is most of what a user waits for: docs/models.md, Speed)."""
from __future__ import annotations

from rcompat.models.facts import MODEL_SCHEMA_VERSION, ModelInfo
from rcompat.models.reader import find_models, read_model


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
