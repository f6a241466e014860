"""The vocabulary explain's classes look names up in, read from the tables of rcompat/data/:

- explain_sonames.csv: who provides a shared library (component, pip/conda/Debian packages), by stem;
- explain_symbol_families.csv: whose symbol an undefined one is (by C++ namespace or C prefix), and
  which side of the link is then too old;
- explain_error_codes.csv: the CUDA runtime/driver, cuBLAS, cuDNN, cuFFT, cuSPARSE, NCCL and NVML codes
  with number, message, meaning, whether they point at the environment or at the code, what to run next.

Each table is read once per process; every row keeps its `source`.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_SONAME = re.compile(r"^(?P<stem>.+?)(?:\.so(?:\.(?P<so>[\d.]+))?|\.(?P<dy>[\d.]+)\.dylib|\.dylib|\.dll|\.pyd)$",
                     re.IGNORECASE)
_WINDOWS_STEM = re.compile(r"^(?P<base>.+?)(?:64)?(?:_(?P<major>\d+))?$")


@dataclass(frozen=True)
class Library:
    name: str        # as the text named it
    stem: str        # libcudnn_cnn
    major: str       # 9 (the soname's first version number; CUDA's 110 of cudart64_110.dll is 11)
    platform: str    # linux | windows | macos
    row: "dict[str, str] | None"


@functools.lru_cache(maxsize=None)
def sonames() -> dict[str, dict[str, str]]:
    from rcompat.data import load_csv

    table: dict[str, dict[str, str]] = {}
    for row in load_csv("explain_sonames.csv", required=("stems", "component", "source", "confidence")):
        for stem in row["stems"].split("|"):
            table[stem.strip().lower()] = row
    return table


@functools.lru_cache(maxsize=None)
def symbol_families() -> list[dict[str, str]]:
    """Rows with their matches split: namespace:X and prefix:X, longest prefix first."""
    from rcompat.data import load_csv

    rows = []
    for row in load_csv("explain_symbol_families.csv", required=("match", "family", "owner", "too_old", "source")):
        for match in row["match"].split("|"):
            kind, _, text = match.partition(":")
            rows.append({**row, "kind": kind, "text": text})
    return sorted(rows, key=lambda r: (r["kind"] != "namespace", -len(r["text"])))


@functools.lru_cache(maxsize=None)
def error_codes() -> list[dict[str, str]]:
    from rcompat.data import load_csv

    return load_csv("explain_error_codes.csv", required=("family", "name", "number", "message", "kind", "source"))


def library(name: str) -> Library:
    """What the table knows of the library `name` (a file name or path: libcudnn_cnn.so.9,
    C:\\...\\cudnn_cnn64_9.dll, @rpath/libtorch_cpu.dylib)."""
    base = re.split(r"[\\/]", name.strip().strip("'\"`‘’"))[-1]
    m = _SONAME.match(base)
    stem, major = (m.group("stem"), (m.group("so") or m.group("dy") or "").split(".")[0]) if m else (base, "")
    platform = "windows" if base.lower().endswith((".dll", ".pyd")) else \
        "macos" if base.lower().endswith(".dylib") else "linux"
    table = sonames()
    if platform == "windows":
        w = _WINDOWS_STEM.match(stem)
        if w and w.group("major"):
            major = w.group("major")
            major = major[:-1] if len(major) == 3 and major.startswith("1") else major  # cudart64_110 -> 11
        base_stem = w.group("base") if w else stem
        candidates = [stem, base_stem, "lib" + base_stem, "lib" + stem]
    else:
        candidates = [stem, re.sub(r"[-.]\d[\w.]*$", "", stem)]  # libpython3.11 -> libpython3 too
    row = next((table[c.lower()] for c in candidates if c.lower() in table), None)
    if row is None:  # a sub-library the table does not list (libcudnn_engines_tensor_ir): its family's row
        row = next((table[p] for p in _prefixes(candidates[-1].lower()) if p in table), None)
    return Library(base, stem, major, platform, row)


def _prefixes(stem: str) -> list[str]:
    """libcudnn_engines_tensor_ir -> libcudnn_engines_tensor, libcudnn_engines, libcudnn."""
    parts = stem.split("_")
    return ["_".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]


def symbol_family(symbol: str, demangled: str = "") -> "dict[str, str] | None":
    """The family row of an undefined symbol: the first namespace of its demangled C++ name, else the
    longest matching C prefix (nvJitLink's entry points carry their CUDA version: __nvJitLinkCreate_12_4)."""
    readable = demangled if demangled and demangled != symbol else ""
    namespace = _first_namespace(readable) if readable else ""
    name = _plain_name(readable) if readable and not namespace else symbol
    for row in symbol_families():
        if row["kind"] == "namespace" and namespace == row["text"]:
            return row
        if row["kind"] == "prefix" and not namespace and name.startswith(row["text"]):
            return row
    return None


def _plain_name(demangled: str) -> str:
    """`cudnnGenericOpTensorNd` of `cudnnStatus_t cudnnGenericOpTensorNd<2>(cudnnContext*, ...)`."""
    head = demangled.split("(", 1)[0].split("<", 1)[0].split()
    return head[-1].lstrip("*&") if head else demangled


def required_version(symbol: str) -> str:
    """The version a versioned entry point names (__nvJitLinkAddData_12_4 -> 12.4), or ''."""
    m = re.search(r"_(\d{1,2})_(\d{1,2})$", symbol)
    return f"{m.group(1)}.{m.group(2)}" if m else ""


def _first_namespace(demangled: str) -> str:
    """`c10` of `c10::detail::torchCheckFail(...)`, also behind a return type (`void at::foo<...>()`)."""
    head = demangled.split("(", 1)[0]
    for token in head.replace("<", " ").split():
        if "::" in token:
            return token.lstrip("*&").split("::", 1)[0]
    return ""


def error_code(name: str = "", message: str = "", number: str = "", family: str = "") -> "dict[str, str] | None":
    """The row of an error code, by enumerator name (any case), by the message its library prints, or
    by family and number."""
    rows = error_codes()
    if name:
        key = name.strip().lower()
        return next((r for r in rows if r["name"].lower() == key), None)
    if message:
        key = message.strip().rstrip(".").lower()
        return next((r for r in rows if r["message"].rstrip(".").lower() == key
                     and (not family or r["family"] == family)), None)
    if number:
        return next((r for r in rows if r["number"] == number and (not family or r["family"] == family)), None)
    return None
