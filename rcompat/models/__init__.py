"""Saved models read statically (never unpickled) and judged against a target torch: `rcompat model …`.

Readers: reader.py (format by bytes) -> torchfiles.py (torch.save zip/legacy, TorchScript), otherfiles.py
(safetensors, R torch, .rds, Keras, SavedModel), over pickles.py (the symbolic pickle machine) and
archive.py (the safe zip reader). Checks: target.py (the target torch's files as data), checks.py
(findings), inspection.py and engine.py (entry points). See docs/models.md.
"""
from rcompat.models.errors import ModelFileError

__all__ = ["ModelFileError", "inspect_models", "check_models"]


def __getattr__(name: str):
    if name in ("inspect_models", "inspection_document"):
        from rcompat.models import inspection

        return getattr(inspection, name)
    if name == "check_models":
        from rcompat.models import engine

        return engine.check_models
    raise AttributeError(name)
