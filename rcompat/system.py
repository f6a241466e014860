"""The `system` area: what `python -m torch.utils.collect_env` and R's `sessionInfo()` print first.

OS and distribution, glibc, the C compiler, the CPU and the instruction sets torch's kernels choose
between, nvcc, the locale. Everything is read, not run, where the system says it in a file or a call:
/etc/os-release, os.confstr, /proc/cpuinfo, the CUDA toolkit's version.json, the locale variables. The
one process is `gcc -dumpfullversion` (a few ms), only when gcc is on PATH. R's BLAS, LAPACK and locale
are the r area's (R-SESSION): they are R's facts.
"""
from __future__ import annotations

import glob
import json
import os
import platform
from pathlib import Path
from typing import Any, Iterable

from rcompat.model import Finding, Status
from rcompat.reaping import find_executable

AREA = "system"
TITLE = "operating system, C library, compiler, CPU, CUDA toolkit, locale"
# CPU flags that decide which kernels torch, TensorFlow and BLAS libraries run (and which builds crash
# with "Illegal instruction" on a CPU without them).
CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile")
LOCALE_VARIABLES = ("LC_ALL", "LC_CTYPE", "LANG")
CUDA_ROOTS = ("/usr/local/cuda", "/usr/local/cuda-*", "/opt/cuda")


def os_release(root: str = "/") -> dict[str, str]:
    for name in ("etc/os-release", "usr/lib/os-release"):
        try:
            text = Path(root, name).read_text(errors="replace")
        except OSError:
            continue
        out = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() and not key.startswith("#"):
                out[key.strip()] = value.strip().strip('"').strip("'")
        return out
    return {}


def cpu_info(path: str = "/proc/cpuinfo") -> dict[str, Any]:
    model, flags = None, set()
    try:
        with open(path, errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Hardware", "cpu model") and model is None:
                    model = value.strip()
                elif key in ("flags", "Features"):
                    flags = set(value.split())
                    if model is not None:
                        break  # the first processor says it for all
    except OSError:
        pass
    return {"model": model, "logical_cpus": os.cpu_count(), "machine": platform.machine(),
            "flags": {flag: flag in flags for flag in CPU_FLAGS}, "flags_read": bool(flags)}


def glibc_version() -> str | None:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (ValueError, OSError, AttributeError):
        return None


def compiler() -> dict[str, Any]:
    gcc = find_executable("gcc") or find_executable("cc")
    out: dict[str, Any] = {"path": gcc, "python_built_with": platform.python_compiler()}
    if gcc:
        from rcompat.isolate import run_child

        result = run_child([gcc, "-dumpfullversion", "-dumpversion"], timeout=10)
        out["version"] = result.stdout.strip() if result.returncode == 0 else None
    return out


def nvcc() -> dict[str, Any]:
    """The CUDA toolkit's nvcc: on PATH, else the usual install roots. Its version from the toolkit's
    version.json, else from `nvcc --version` (a toolkit installed from wheels has no version.json)."""
    found = find_executable("nvcc")
    candidates = [found] if found else []
    for pattern in CUDA_ROOTS:
        candidates += sorted(glob.glob(os.path.join(pattern, "bin", "nvcc")), reverse=True)
    if not candidates:
        return {}
    path = candidates[0]
    version = _toolkit_version(Path(path).resolve().parent.parent)
    if version is None:
        import re

        from rcompat.isolate import run_child

        result = run_child([path, "--version"], timeout=10)
        match = re.search(r"release [\d.]+, V([\d.]+)", result.stdout)
        version = match.group(1) if match else None
    return {"path": path, "version": version, "on_path": bool(found), "others": candidates[1:]}


def _toolkit_version(root: Path) -> str | None:
    try:
        data = json.loads((root / "version.json").read_text())
        return (data.get("cuda_nvcc") or data.get("cuda") or {}).get("version")
    except (OSError, ValueError, AttributeError):
        return None


def locale_facts() -> dict[str, Any]:
    import locale

    chosen = {name: os.environ[name] for name in LOCALE_VARIABLES if os.environ.get(name)}
    return {"variables": chosen, "encoding": locale.getpreferredencoding(False),
            "filesystem_encoding": os.sys.getfilesystemencoding()}


def system_facts() -> dict[str, Any]:
    release = os_release()
    return {"os": {"pretty_name": release.get("PRETTY_NAME"), "id": release.get("ID"),
                   "version_id": release.get("VERSION_ID"), "kernel": platform.release(),
                   "machine": platform.machine()},
            "glibc": glibc_version(), "compiler": compiler(), "cpu": cpu_info(), "nvcc": nvcc(),
            "locale": locale_facts()}


def _facts(ctx) -> dict[str, Any]:
    facts = ctx.memo("system.facts", system_facts)
    ctx.facts["system"] = facts
    return facts


def _f(id: str, status: Status, title: str, **kw) -> Finding:
    return Finding(id=id, area=AREA, status=status, title=title, **kw)


def check_os(ctx) -> Iterable[Finding]:
    facts = _facts(ctx)
    o, glibc = facts["os"], facts["glibc"]
    yield _f("SYS-OS", Status.OK, f"{o['pretty_name'] or 'unknown distribution'}, Linux {o['kernel']} "
             f"({o['machine']}), {glibc or 'C library: not glibc'}", evidence={"os": o, "glibc": glibc})


def check_compiler(ctx) -> Iterable[Finding]:
    c = _facts(ctx)["compiler"]
    if not c.get("path"):
        yield _f("SYS-COMPILER", Status.SKIP, "no C compiler on PATH",
                 message=f"Python was built with {c['python_built_with']}; R packages with native code need "
                         "one to install from source.", evidence=c)
        return
    yield _f("SYS-COMPILER", Status.OK, f"gcc {c.get('version') or '?'} at {c['path']}; Python built with "
             f"{c['python_built_with']}", evidence=c)


def check_cpu(ctx) -> Iterable[Finding]:
    cpu = _facts(ctx)["cpu"]
    flags = [name for name, present in cpu["flags"].items() if present]
    missing = [name for name in ("avx2", "avx512f") if not cpu["flags"].get(name)]
    shown = ", ".join(f for f in flags if f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")) or "none"
    yield _f("SYS-CPU", Status.OK, f"{cpu['model'] or cpu['machine']}, {cpu['logical_cpus']} logical CPUs; "
             f"AVX2/AVX-512 class: {shown}",
             message=("without " + ", ".join(missing) + ": libraries pick slower kernels, and builds compiled "
                      "for them stop with 'Illegal instruction'") if missing and cpu["flags_read"] else "",
             evidence=cpu)


def check_nvcc(ctx) -> Iterable[Finding]:
    n = _facts(ctx)["nvcc"]
    if not n:
        yield _f("SYS-NVCC", Status.SKIP, "no CUDA toolkit (nvcc) found",
                 message="not on PATH nor under /usr/local/cuda*; only needed to build CUDA code from source")
        return
    where = "" if n["on_path"] else " (not on PATH)"
    yield _f("SYS-NVCC", Status.OK, f"nvcc {n['version'] or '?'} at {n['path']}{where}", evidence=n)


def check_locale(ctx) -> Iterable[Finding]:
    loc = _facts(ctx)["locale"]
    variables = ", ".join(f"{k}={v}" for k, v in loc["variables"].items()) or "no LC_ALL/LC_CTYPE/LANG set"
    utf8 = str(loc["encoding"]).lower().replace("-", "") == "utf8"
    yield _f("SYS-LOCALE", Status.OK if utf8 else Status.WARN, f"locale encoding {loc['encoding']} ({variables})",
             message="" if utf8 else "not UTF-8: non-ASCII paths, package names and messages can break in R "
                                     "and Python alike",
             remedy="" if utf8 else "export LANG=C.UTF-8 (or another UTF-8 locale)", evidence=loc)


CHECKS = [check_os, check_compiler, check_cpu, check_nvcc, check_locale]
for _check, _id in zip(CHECKS, ("SYS-OS", "SYS-COMPILER", "SYS-CPU", "SYS-NVCC", "SYS-LOCALE")):
    _check.check_id = _id
