"""The process an object is loaded into: the executable or library that provides the symbols an
extension does not link (Python's C API, R's API; rcompat/data/elf_host_symbols.toml).

A Python extension module (libtorch_python.so, `_C.cpython-311-x86_64-linux-gnu.so`) has no DT_NEEDED
on libpython: its Py* references bind to whatever the importing interpreter exports. That is the
`python3` executable itself when Python is linked statically with libpython (Debian's, python.org's
builds: the executable's .dynsym holds the C API), or the libpython3.X.so it links (conda, some
distributions); resolving the interpreter as a host covers both, since its closure is preloaded.

Which interpreter: the one whose site-packages / dist-packages directory holds the object (a venv's
bin/python3.X, /usr/bin/python3 for Debian's dist-packages, /usr/bin/python3.X for pip's
/usr/local/lib/python3.X/dist-packages); otherwise this machine's running interpreter, or in a root the
first python3 on the usual PATH. An R package's library that does not link libR.so (R built without
--enable-R-shlib links packages against nothing) gets the libR.so the loader finds.
"""
from __future__ import annotations

import os
import posixpath
import re
import sys

from rcompat.elf.errors import ElfError
from rcompat.elf.link.root import Root, as_root
from rcompat.elf.read.files import is_elf_file
from rcompat.errors import UsageError

# What a login shell's PATH holds (Debian's /etc/profile for root): where a command named inside a root is looked for.
ROOT_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
_PYDIR = re.compile(r"python(\d+)(\.\d+)?t?$")
PYTHON_ROW, R_ROW = "python-c-api", "r-api"
R_LIBRARY = "libR.so"


def resolve_host(spec: str, root: "Root | str | None" = None) -> str:
    """The in-root path of what `--host SPEC` names: a path (absolute, or relative to the current
    directory), a command found on PATH (`python3`; in a root, on ROOT_PATH inside it), or a soname
    found through the loader's search (`libR.so`: the root's ld.so.cache, then its default
    directories). UsageError when it names none of these."""
    fs = as_root(root)
    if "/" in spec:
        inside = fs.locate(spec)
        if _exists(fs, inside):
            return inside
        raise UsageError(f"--host {spec}: no such file" + ("" if fs.is_host else f" in the root {fs.path}"))
    if ".so" in spec:
        found = find_library(spec, fs)
        if found:
            return found
    found = find_command(spec, fs)
    if found:
        return found
    if fs.is_host and os.path.exists(spec):
        return os.path.abspath(spec)
    where = "on PATH or through the loader's search" if fs.is_host else f"inside the root {fs.path}"
    raise UsageError(f"--host {spec}: not a file, and no command or library of that name was found {where} "
                     "(give a path, a command like python3, or a soname like libR.so)")


def resolve_hosts(specs, root: "Root | str | None" = None) -> list[str]:
    return [resolve_host(os.fspath(s), root) for s in specs]


def find_command(name: str, root: "Root | str | None" = None) -> str | None:
    """The first ELF executable `name` on PATH (in a root: on ROOT_PATH inside it). Wrapper scripts
    (pyenv's shims, `#!` launchers) are passed over: what they exec is not known without running them."""
    fs = as_root(root)
    dirs = os.environ.get("PATH", "").split(":") if fs.is_host else ROOT_PATH
    for d in dirs:
        inside = posixpath.join(os.path.abspath(d) if fs.is_host else d, name)
        try:
            host = fs.host(inside)
        except ElfError:
            continue
        if os.path.isfile(host) and os.access(host, os.X_OK) and is_elf_file(host):
            return inside
    return None


def find_library(soname: str, root: "Root | str | None" = None) -> str | None:
    """Where the loader would find `soname` for a process of this machine's kind: the root's
    ld.so.cache (x86-64 entries first, as the cache orders them), then the default directories."""
    fs = as_root(root)
    for entry in fs.ld_cache().lookup(soname):
        if _exists(fs, entry.path):
            return entry.path
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"):
        inside = posixpath.join(d, soname)
        if _exists(fs, inside):
            return inside
    return None


def _exists(fs: Root, inside: str) -> bool:
    try:
        return os.path.isfile(fs.host(inside))
    except ElfError:
        return False


def python_for(inside: str, root: "Root | str | None" = None) -> str | None:
    """The interpreter that would import the module at in-root path `inside` (see the module's doc)."""
    fs = as_root(root)
    parts = inside.split("/")
    for i in range(len(parts) - 1, 1, -1):
        if parts[i] not in ("site-packages", "dist-packages"):
            continue
        version = _PYDIR.match(parts[i - 1])
        if not version:
            continue
        prefix = "/".join(parts[:i - 2]) or "/"
        names = [parts[i - 1], f"python{version.group(1)}", "python"]
        candidates = [posixpath.join(prefix, "bin", n) for n in names]
        if prefix == "/usr/local" or parts[i - 1] == "python3":  # Debian: /usr/bin's interpreter reads both
            candidates += [posixpath.join("/usr/bin", n) for n in names]
        found = next((c for c in candidates if _exists(fs, c)), None)
        if found:
            return found
    if fs.is_host:
        return os.path.realpath(sys.executable)
    return find_command("python3", fs)


def r_library(root: "Root | str | None" = None) -> str | None:
    fs = as_root(root)
    return find_library(R_LIBRARY, fs) or next((p for p in ("/usr/lib/R/lib/libR.so", "/usr/local/lib/R/lib/libR.so")
                                                if _exists(fs, p)), None)


def host_provider(name: str) -> dict | None:
    """The host-process row (rcompat/data/elf_host_symbols.toml) whose prefix `name` has."""
    from rcompat.data import cached_toml

    for row in cached_toml("elf_host_symbols.toml", "host"):
        if any(name.startswith(p) for p in row["prefixes"]):
            return row
    return None


def host_for_row(row_id: str, objects, root: "Root | str | None" = None) -> str | None:
    """The host of elf_host_symbols.toml row `row_id` for the objects (in-root paths) that need it:
    the interpreter that would import the first of them, or the libR.so the loader finds."""
    if row_id == PYTHON_ROW:
        return next((found for obj in sorted(objects) if (found := python_for(obj, root))), None)
    if row_id == R_ROW:
        return r_library(root)
    return None


def hosts_for(needers: "dict[str, set[str]]", root: "Root | str | None" = None) -> tuple[list[str], set[str]]:
    """(hosts, rows without one): `needers` maps each host row id to the in-root paths of the objects
    whose undefined references call for it (needs_by_row)."""
    hosts, unfound = [], set()
    for row_id, objects in sorted(needers.items()):
        found = host_for_row(row_id, objects, root)
        if found is None:
            unfound.add(row_id)
        elif found not in hosts:
            hosts.append(found)
    return hosts, unfound


def needs_by_row(missing_symbols) -> dict[str, set[str]]:
    """Host row id -> in-root paths of the objects that lack a symbol of that row (MissingSymbols)."""
    out: dict[str, set[str]] = {}
    for m in missing_symbols:
        row = host_provider(m.name)
        if row is not None:
            out.setdefault(row["id"], set()).add(m.display(m.needed_by))
    return out
