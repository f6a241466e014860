"""Where R is: on disk (R_HOME, Rscript) and whether it already runs in this process.

Two facts other engines need before they touch R:

- `locate_r()` finds the R installation a user's `R` would start, without starting it.
- `host_is_r()` tells whether this Python runs inside an R process (reticulate called rcompat). Then
  rpy2 must not start a second embedded R here, and `sys.executable` may not even be a Python that
  can be launched as a child, so the R engine gathers its facts with an `Rscript` child instead.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from rcompat.reaping import find_executable, is_executable_file

# Executables that are R itself; RStudio's rsession and R's own binary embed libR.
R_EXECUTABLES = frozenset({"R", "Rterm", "rsession", "Rgui"})


@dataclass(frozen=True)
class RInstall:
    r_home: str
    rscript: str
    r: str  # the `R` front end, for `R CMD config`
    found_by: str

    def to_dict(self) -> dict[str, str]:
        return {"r_home": self.r_home, "rscript": self.rscript, "r": self.r, "found_by": self.found_by}


@dataclass(frozen=True)
class RHost:
    """Whether R is loaded in this process, and who put it there."""

    r_in_process: bool
    hosted_by_r: bool  # R started first and embedded Python (reticulate)
    evidence: str

    def to_dict(self) -> dict[str, object]:
        return {"r_in_process": self.r_in_process, "hosted_by_r": self.hosted_by_r,
                "evidence": self.evidence}


def locate_r(env: Mapping[str, str] | None = None) -> RInstall | None:
    """R_HOME's bin/ first (what rpy2 and reticulate honour), else Rscript/R on PATH."""
    env = os.environ if env is None else env
    r_home = env.get("R_HOME", "").strip()
    if r_home:
        rscript, r = Path(r_home, "bin", "Rscript"), Path(r_home, "bin", "R")
        if is_executable_file(rscript):
            return RInstall(r_home, str(rscript), str(r), "R_HOME")
    path = env.get("PATH", os.defpath)
    rscript_on_path = find_executable("Rscript", path)
    if not rscript_on_path:
        return None
    real = Path(rscript_on_path).resolve()
    r_on_path = find_executable("R", path) or str(real.with_name("R"))
    return RInstall(_home_of(r_on_path) or "", rscript_on_path, r_on_path, "PATH")


def _home_of(r_front_end: str) -> str | None:
    """R's front end is a shell script that sets R_HOME_DIR; read it rather than run R (opened only if
    a regular file, never waiting on a FIFO, and only its first 64 KB)."""
    from rcompat.inputs import read_if_regular

    data = read_if_regular(os.path.realpath(r_front_end), 1 << 20)
    if data is None:
        return None
    for line in data[:1 << 16].decode("utf-8", "replace").splitlines():
        if line.startswith("R_HOME_DIR="):
            return line.split("=", 1)[1].strip().strip("'\"")
    return None


HOST_PID_VARIABLE = "RCOMPAT_HOST_PID"


def r_host(maps_path: str = "/proc/self/maps", exe_path: str = "/proc/self/exe") -> RHost:
    """Look at this process: libR mapped, or the executable being R."""
    exe = ""
    try:
        exe = os.path.basename(os.readlink(exe_path))
    except OSError:
        pass
    if exe in R_EXECUTABLES:
        return RHost(True, True, f"this process's executable is {exe}")
    # the R package (R-package/R/python.R) names its own pid before reticulate starts Python in that very process; a
    # pid, unlike a plain flag, is not true in the children R starts (they inherit the environment).
    if os.environ.get(HOST_PID_VARIABLE) == str(os.getpid()):
        return RHost(True, True, f"{HOST_PID_VARIABLE} names this process (set by the rcompat R package)")
    lib_r = _mapped_lib_r(maps_path)
    if lib_r is None:
        return RHost(False, False, "libR is not loaded in this process")
    if "rpy2.rinterface" in sys.modules or "_rinterface_cffi_api" in sys.modules:
        return RHost(True, False, f"{lib_r} was loaded by rpy2 in this Python")
    return RHost(True, True, f"{lib_r} is loaded and rpy2 did not load it (R embeds this Python)")


def _mapped_lib_r(maps_path: str) -> str | None:
    try:
        with open(maps_path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.rsplit(None, 1)[-1] if "/" in line else ""
                name = os.path.basename(path)
                if name == "libR.so" or name.startswith("libR.so.") or name == "libR.dylib":
                    return path
    except OSError:
        return None
    return None


def host_is_r() -> bool:
    """True when R started this process and embedded Python: never start embedded R here."""
    return r_host().hosted_by_r
