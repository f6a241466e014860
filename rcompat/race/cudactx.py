"""The CUDA driver's current context of the calling thread, read through ctypes on libcuda.so.1.

Two runtimes in one process (R torch's LibTorch and Python's) each bind a context to the threads they
run on; an allocation made while the thread's current context is not the one the allocator expects is
the "fighting over the context" failure. `cuCtxGetCurrent` answers which context a thread has without
initialising anything, so it can be asked before and after every allocation. Without a driver (this
module's `load()` returns None) the race runs with no context columns.
"""
from __future__ import annotations

import ctypes
from typing import Optional

CUDA_SUCCESS = 0


class DriverContext:
    """Thin ctypes wrapper; one per process (the library handle is shared by every thread)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib
        self._get = lib.cuCtxGetCurrent
        self._get.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self._get.restype = ctypes.c_int
        self._set = lib.cuCtxSetCurrent
        self._set.argtypes = [ctypes.c_void_p]
        self._set.restype = ctypes.c_int

    def current(self) -> Optional[str]:
        """Hex address of this thread's current context; None when none is bound or the call fails."""
        handle = ctypes.c_void_p()
        if self._get(ctypes.byref(handle)) != CUDA_SUCCESS or not handle.value:
            return None
        return hex(handle.value)

    def pin(self, context_hex: str) -> int:
        """Bind `context_hex` to the calling thread (the serialized pattern); returns the CUresult."""
        return int(self._set(ctypes.c_void_p(int(context_hex, 16))))


def load(libname: str = "libcuda.so.1") -> Optional[DriverContext]:
    try:
        return DriverContext(ctypes.CDLL(libname))
    except (OSError, AttributeError):
        return None
