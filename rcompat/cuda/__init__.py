"""CUDA engine: NVML and torch.cuda probes, CUDA libraries on disk, the driver–runtime–framework
matrix, and the device choice with CPU fallback.

    rcompat.cuda.probe(nvml=None, timeout=60, with_r=False) -> CudaFacts
    rcompat.cuda.matrix.check_stack({"driver": ..., "cuda": ..., "torch": ...}) -> list[Finding]
    rcompat.cuda.validate.validate_tables(tables_dir=None) -> Report
    rcompat.cuda.tables.rtorch_to_libtorch(version) / libtorch_to_rtorch(version)
    rcompat.device() -> DeviceChoice   (rcompat.cuda.device.choose_device)

Imports stay light: torch is only imported in a child process, pynvml when NVML is probed.
"""
from __future__ import annotations

__all__ = ["probe", "check_stack", "choose_device"]


def probe(*args, **kwargs):
    from rcompat.cuda.facts import probe as _probe

    return _probe(*args, **kwargs)


def check_stack(stack, tables_dir=None):
    from rcompat.cuda.matrix import check_stack as _check_stack

    return _check_stack(stack, tables_dir)


def choose_device(**kwargs):
    from rcompat.cuda.device import choose_device as _choose

    return _choose(**kwargs)
