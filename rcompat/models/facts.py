"""What a saved model holds, as the readers find it: the facts `model check` judges and `model inspect` prints.

`ModelInfo.to_dict()` is the stable JSON form (docs/models.md, `MODEL_SCHEMA_VERSION`): R's interface and
other tools read it, so fields are only ever added.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

MODEL_SCHEMA_VERSION = 1

# Format names (ModelInfo.format), one per reader.
TORCH_ZIP = "torch-zip"
TORCH_LEGACY = "torch-legacy"
TORCHSCRIPT = "torchscript"
SAFETENSORS = "safetensors"
RTORCH = "rtorch"                  # R torch's serialization v3: safetensors + R's serialize()
RDS = "rds"                        # R's saveRDS: R torch's older form (v2) or any R object
KERAS_ZIP = "keras"
KERAS_H5 = "keras-h5"
SAVEDMODEL = "tf-savedmodel"

ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16, "uint16": 2, "uint32": 4,
            "uint64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1, "qint8": 1, "quint8": 1, "qint32": 4}


class TensorInfo(NamedTuple):
    """One tensor. A NamedTuple, not a dataclass: the bulk read (torchruns.py) makes hundreds at once with
    tuple.__new__ over zipped columns, no Python call per tensor."""
    name: str
    dtype: str
    shape: tuple[int, ...] | None
    nbytes: int | None
    device: str = "cpu"
    parameter: bool = False         # pickled as torch.nn.Parameter (R's load_state_dict refuses these)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape) if self.shape is not None else None,
                "nbytes": self.nbytes, "device": self.device, "parameter": self.parameter}


@dataclass
class ModelInfo:
    path: str
    format: str
    size_bytes: int
    format_version: int | None = None
    producer: str = ""                       # "keras 3.13.0", "R torch (serialization v3)", ...
    tensors: list[TensorInfo] = field(default_factory=list)
    globals: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    operators: dict[str, list[str]] = field(default_factory=dict)   # namespace -> names, TorchScript only
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def tensor_bytes(self) -> int:
        return sum(t.nbytes or 0 for t in self.tensors)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "format_version": self.format_version,
                "producer": self.producer, "size_bytes": self.size_bytes, "tensor_bytes": self.tensor_bytes,
                "devices": self.devices, "globals": self.globals, "operators": self.operators,
                "tensors": [t.to_dict() for t in self.tensors], "details": self.details}


def nbytes(dtype: str, shape: tuple[int, ...] | None) -> int | None:
    if shape is None or dtype not in ITEMSIZE:
        return None
    return math.prod(shape) * ITEMSIZE[dtype]
