"""Structural classes: a row whose `enrich` names a vocabulary gets its captures looked up there, and the
answers become groups its cause and remedy name ({provider}, {symbol_owner}, {code_meaning}, ...).

- soname: the library a text names -> its component and the pip/conda/Debian packages that install it;
  a Windows DLL or macOS dylib also gets {platform_note} (the cause holds; the probes need Linux).
- symbol: an undefined symbol -> its family (c10/at/torch, cuBLASLt, nvJitLink, Py*, R_/Rf_, ...), read
  from the demangled namespace or the C prefix, and which side of the link is too old.
- error-code: a CUDA/cuBLAS/cuDNN/cuFFT/cuSPARSE/NCCL/NVML code, by name, message or number -> meaning and
  what to run next. A code that points at the program, not the environment (a device-side assert, an
  illegal address, an invalid argument) makes the finding a `warn` that says so, never a `fail`.
"""
from __future__ import annotations

from rcompat.explain import vocabulary
from rcompat.model import Status

SIDES = {
    "provider": "the {owner} found at run time is older than (or another build than) the one {who} was built against",
    "requirer": "{who} was built for another {owner} than the one loaded",
    "either": "{who} and the {owner} loaded come from different releases",
}
NOT_LINUX = {"windows": "a Windows", "macos": "a macOS"}


def enrich(kind: "str | None", groups: dict[str, str]) -> "Status | None":
    """Add the vocabulary's answers to `groups`; a status that replaces the row's, or None."""
    if kind == "soname":
        _soname(groups)
    elif kind == "symbol":
        _symbol(groups)
    elif kind == "error-code":
        return _error_code(groups)
    return None


def _soname(groups: dict[str, str]) -> None:
    name = groups.get("lib") or groups.get("library") or groups.get("dll") or ""
    if not name:
        return
    lib = vocabulary.library(name)
    if lib.platform in NOT_LINUX:
        groups["platform_note"] = (f"This is {NOT_LINUX[lib.platform]} text: the cause and remedy hold there, "
                                   f"but rcompat's confirming probes (doctor, elf) need Linux.")
    row = lib.row
    if row is None:
        return
    major = lib.major or "12"
    filled = {k: (v or "").replace("{major}", major) for k, v in row.items()}
    packages = "; ".join(f"{where}: {filled[where]}" for where in ("pip", "conda", "debian") if filled.get(where))
    groups["component"] = filled["component"]
    groups["provider"] = (f"{lib.name} is {_article(filled['component'])}{filled['component']}"
                          + (f" (installed by {packages})" if packages else "") + ".")
    if filled.get("note"):
        groups["provider_note"] = sentence(filled["note"])
    groups["provider_source"] = filled["source"]


def _symbol(groups: dict[str, str]) -> None:
    symbol = groups.get("symbol", "")
    if not symbol:
        return
    row = vocabulary.symbol_family(symbol, groups.get("symbol_demangled", ""))
    if row is None:
        return
    library = groups.get("library") or groups.get("side") or ""
    who = library.rsplit("/", 1)[-1] if library else "the failing library"
    side = SIDES.get(row["too_old"], SIDES["either"]).format(owner=row["owner"], who=who)
    needs = vocabulary.required_version(symbol) if row["family"] == "nvJitLink" else ""
    groups["symbol_owner"] = (f"{groups.get('symbol_readable', symbol)} belongs to {row['family']} ({row['owner']}): "
                              f"{side}" + (f"; it needs nvJitLink {needs} or newer" if needs else "") + ".")
    groups["symbol_remedy"] = sentence(row["remedy"])
    groups["symbol_family"] = row["family"]


def _error_code(groups: dict[str, str]) -> "Status | None":
    row = (vocabulary.error_code(name=groups.get("code", ""))
           or vocabulary.error_code(message=groups.get("cuda_message", ""))
           or vocabulary.error_code(message=groups.get("nccl_message", ""), family="ncclResult")
           or vocabulary.error_code(message=groups.get("nvml_message", ""), family="nvmlReturn")
           or vocabulary.error_code(number=groups.get("number", ""), family=groups.get("family", "cudaError")))
    if row is None:
        return None
    groups["code_name"] = row["name"]
    groups["code_meaning"] = f"{row['name']} ({row['number']}, \"{row['message']}\"): {row['meaning']}."
    groups["code_next"] = sentence(row["next"]) if row["next"] else ""
    groups["code_source"] = row["source"]
    if row.get("symptom"):
        groups["explained_by"] = row["symptom"]
    if row["kind"] == "code":
        groups["code_kind_note"] = ("This code points at the program or its inputs (or a library bug), not at "
                                    "how the environment is installed.")
        return Status.WARN
    if row["kind"] == "resource":
        groups["code_kind_note"] = "This is a resource limit of the GPU at that moment, not a broken install."
    return None


def sentence(text: str) -> str:
    """`text` as a sentence: a capital first letter unless its first word has its own case (cuDNN,
    nvJitLink), and a full stop."""
    first = text.split(" ", 1)[0]
    if first.islower():
        text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def _article(noun: str) -> str:
    if noun.lower().startswith(("the ", "a ", "an ")) or noun[:1].isdigit():
        return ""
    return "an " if noun[:1].lower() in "aeiou" else "a "
