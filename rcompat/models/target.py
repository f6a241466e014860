"""The torch (and numpy, keras) a model will be loaded by, read from its files: never imported, never run.

`--python PATH` asks that interpreter only where its site-packages are (`sysconfig`, no import of
torch); `--root DIR` searches an unpacked image for `site-packages/torch` and runs nothing of it; by
default this interpreter's own paths are searched (`importlib.util.find_spec`, which imports nothing).
Then, all as data:
- the version from `torch/version.py` (`__version__ = '…'`, read with `ast`);
- the `weights_only` allowlist from `torch/_weights_only_unpickler.py`: string keys and `torch.…`
  attribute chains of `_get_allowed_globals` and `_tensor_rebuild_functions`, plus the families that
  function builds in a loop (dtypes named in `torch/_C/__init__.pyi`, storage classes defined in
  `torch/__init__.py`, tensor classes);
- the operator registry: the schema strings (`name.overload(args) -> ret`) in libtorch's `.rodata`,
  found around each `) -> `; names without a namespace are registered under `aten`.
"""
from __future__ import annotations

import ast
import json
import mmap
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rcompat.errors import UsageError

_SCHEMA_NAME = re.compile(rb"(?:([a-z_][A-Za-z0-9_]*)::)?([A-Za-z_][A-Za-z0-9_]*)(?:\.[A-Za-z0-9_]+)?\(")
_REGISTRY_LIBS = ("libtorch_cpu.so", "libtorch_python.so", "libtorch_cuda.so")
_ROOT_GLOBS = ("usr/lib/python3*/site-packages", "usr/lib/python3*/dist-packages", "usr/local/lib/python3*/site-packages",
               "usr/local/lib/python3*/dist-packages", "opt/conda/lib/python3*/site-packages",
               "opt/*/lib/python3*/site-packages", "root/.local/lib/python3*/site-packages",
               "opt/venv/lib/python3*/site-packages", "*/venv/lib/python3*/site-packages")


@dataclass
class Target:
    where: str                                 # how the target was named, for messages
    site_packages: list[Path] = field(default_factory=list)
    torch_dir: Path | None = None

    @property
    def torch_version(self) -> str | None:
        return _version_file(self.torch_dir / "version.py") if self.torch_dir else None

    def package_version(self, name: str) -> str | None:
        """A distribution's version from its dist-info METADATA (never by importing it)."""
        for sp in self.site_packages:
            for meta in sorted(sp.glob(f"{name}-*.dist-info/METADATA")):
                for line in meta.read_text("utf-8", "replace").splitlines()[:20]:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
        return None

    def allowlist(self) -> "Allowlist | None":
        if not self.torch_dir or not (self.torch_dir / "_weights_only_unpickler.py").is_file():
            return None
        return read_allowlist(self.torch_dir)

    def operators(self) -> "set[tuple[str, str]] | None":
        libs = [self.torch_dir / "lib" / n for n in _REGISTRY_LIBS] if self.torch_dir else []
        libs = [p for p in libs if p.is_file()]
        return read_registry(libs) if libs else None


@dataclass
class Allowlist:
    exact: set[str]
    families: list[re.Pattern]

    def allows(self, dotted: str) -> bool:
        return dotted in self.exact or any(p.fullmatch(dotted) for p in self.families)


def find_target(python: str | None = None, root: str | None = None) -> Target:
    if python:
        return _from_python(python)
    if root:
        return _from_root(root)
    import importlib.util
    import sys

    spec = importlib.util.find_spec("torch")  # locates, imports nothing
    torch_dir = Path(spec.origin).parent if spec and spec.origin else None
    paths = [Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    return Target(f"this interpreter ({sys.executable})", paths, torch_dir)


def _from_python(python: str) -> Target:
    code = "import json, site, sysconfig; print(json.dumps([sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib']] + site.getsitepackages()))"
    try:
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=30, check=True).stdout
        paths = [Path(p) for p in dict.fromkeys(json.loads(out)) if Path(p).is_dir()]
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise UsageError(f"--python {python}: cannot ask it for its site-packages ({type(exc).__name__})") from None
    return Target(f"--python {python}", paths, _torch_in(paths))


def _from_root(root: str) -> Target:
    base = Path(root)
    if not base.is_dir():
        raise UsageError(f"--root {root}: not a directory")
    paths = [p for pattern in _ROOT_GLOBS for p in sorted(base.glob(pattern)) if p.is_dir() and not p.is_symlink()]
    return Target(f"--root {root}", paths, _torch_in(paths))


def _torch_in(paths: list[Path]) -> Path | None:
    return next((p / "torch" for p in paths if (p / "torch" / "version.py").is_file()), None)


def _version_file(path: Path) -> str | None:
    try:
        tree = ast.parse(path.read_text("utf-8", "replace"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets):
                return str(node.value.value)
    return None


def read_allowlist(torch_dir: Path) -> Allowlist:
    source = (torch_dir / "_weights_only_unpickler.py").read_text("utf-8", "replace")
    tree = ast.parse(source)
    exact: set[str] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name in ("_get_allowed_globals", "_tensor_rebuild_functions"):
            for node in ast.walk(fn):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[A-Za-z_][\w.]*\.\w+", node.value):
                    exact.add(node.value)
                elif isinstance(node, ast.Attribute):
                    chain = _chain(node)
                    if chain and chain.startswith("torch.") and chain.count(".") >= 1:
                        exact.add(chain)
    families: list[re.Pattern] = []
    if "_dtype_to_storage_type_map" in source or "_new_dtypes" in source:
        dtypes = _dtype_names(torch_dir)
        if dtypes:
            families.append(re.compile(r"torch\.(?:%s)" % "|".join(map(re.escape, sorted(dtypes)))))
    if 'f"uint{x}"' in source:  # the sub-byte integer dtypes, added by a loop over range(1, 8)
        families.append(re.compile(r"torch\.u?int[1-7]"))
    if "_storage_classes" in source:
        storages = set(re.findall(r"^class (\w+Storage)\(", _read(torch_dir / "__init__.py"), re.M))
        storages |= {"TypedStorage", "UntypedStorage"}
        families.append(re.compile(r"torch\.(?:cuda\.|storage\.)?(?:%s)" % "|".join(sorted(storages))))
    if "_tensor_classes" in source:
        families.append(re.compile(r"torch\.(?:cuda\.)?(?:sparse\.)?[A-Z]\w*Tensor"))
    return Allowlist(exact, families)


def _chain(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _dtype_names(torch_dir: Path) -> set[str]:
    return set(re.findall(r"^(\w+): dtype = ", _read(torch_dir / "_C" / "__init__.pyi"), re.M))


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8", "replace")
    except OSError:
        return ""


def read_registry(libs: list[Path]) -> set[tuple[str, str]]:
    """(namespace, name) of every operator schema string in `libs`; namespace '' where the string has
    none (registered inside a TORCH_LIBRARY(ns, m) block, mostly aten's: `registered` accepts them for any ns)."""
    names: set[tuple[str, str]] = set()
    for lib in libs:
        with open(lib, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            i = 0
            while (i := data.find(b") -> ", i)) >= 0:
                start = data.rfind(b"\x00", max(0, i - 20000), i) + 1
                end = data.find(b"\x00", i)
                end = len(data) if end < 0 else end
                m = _SCHEMA_NAME.match(data, start, end)
                if m:
                    names.add(((m.group(1) or b"").decode(), m.group(2).decode()))
                i = end
    return names


def registered(registry: set[tuple[str, str]], namespace: str, name: str) -> bool:
    return (namespace, name) in registry or ("", name) in registry
