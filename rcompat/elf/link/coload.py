"""Will these libraries work together in one process? Predicted from the files, never loaded.

Modelled (glibc elf/dl-load.c, dl-deps.c, dl-lookup.c, dl-version.c):
- the process already holds LOADED (each with its dependency closure, loaded in order); THEN is
  dlopen()ed after them;
- soname reuse: a DT_NEEDED of THEN that names an already-loaded object's SONAME (or the same file)
  gets that object, whatever version it is: the cause of "undefined symbol" between frameworks;
- scopes: an undefined symbol of a newly loaded object is looked up in the global scope (objects
  loaded RTLD_GLOBAL, in load order), then in the local scope of the dlopen()ed root (its
  breadth-first closure, including reused objects); DT_SYMBOLIC objects search themselves first;
- RTLD_LOCAL vs RTLD_GLOBAL per LOADED root (`global_loaded`): R's dyn.load() of a package DLL is
  local by default (local=TRUE); R torch loads Lantern and reticulate loads libpython with
  RTLD_GLOBAL, and Python's own extension imports are local;
- symbol versions: a versioned reference needs that version node; missing version nodes fail at
  load time with `version `X' not found (required by Y)`, before any symbol is bound;
- interposition: a symbol THEN defines that an earlier global object also defines binds to the
  earlier one for every later reference; with different object sizes that is silent memory
  corruption. Protected symbols keep their own definition for references inside their object.
Not modelled: lazy binding order (RTLD_NOW is assumed, as R and Python use), IFUNC resolvers,
symbol lookups done with dlsym at run time, LD_PRELOAD, dlmopen namespaces.
With a root filesystem (`root=`), every path is in-root and resolved inside it; the prediction's
messages and evidence name in-root paths, as ld.so running in that root would.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from rcompat.elf.link.resolve import Resolution, Resolver
from rcompat.elf.link.root import Root
from rcompat.elf.read.objinfo import ObjectInfo
from rcompat.elf.read.symindex import SymbolIndex, readable_index

HAZARD_TYPES = {"OBJECT", "TLS", "COMMON"}


@dataclass
class HardFailure:
    kind: str  # "undefined symbol" | "version not found" | "library not found"
    message: str  # the text ld.so prints
    object: str
    symbol: str = ""
    demangled: str = ""


@dataclass
class Hazard:
    kind: str  # "interposition" | "duplicate runtime"
    message: str
    evidence: dict = field(default_factory=dict)


@dataclass
class CoLoadPrediction:
    loaded: list[str]
    then: list[str]
    failures: list[HardFailure]
    hazards: list[Hazard]
    reused: list[str]  # THEN's needed entries satisfied by an object of LOADED
    reverse: "CoLoadPrediction | None" = None
    matching: list[str] = field(default_factory=list)  # which versions would match, from the data tables

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def first_error(self) -> str | None:
        return self.failures[0].message if self.failures else None

    def to_dict(self) -> dict:
        out = {"loaded": self.loaded, "then": self.then, "ok": self.ok, "first_error": self.first_error,
               "failures": [f.__dict__ for f in self.failures], "hazards": [h.__dict__ for h in self.hazards],
               "reused": self.reused, "matching": self.matching}
        if self.reverse is not None:
            out["reverse"] = self.reverse.to_dict()
        return out


def coload(loaded, then, ld_library_path=None, global_loaded: "bool | list[bool]" = True,
           reverse: bool = True, versions: "dict[str, str] | None" = None, host=(),
           root: "Root | str | None" = None) -> CoLoadPrediction:
    """Predict loading `then` into a process that already loaded `loaded` (lists of paths).

    `host`: the executable/libraries the process starts with (python, libR.so), global.
    `root`: the root filesystem to resolve inside (all paths in-root); None is this machine."""
    loaded, then = [os.fspath(p) for p in _listify(loaded)], [os.fspath(p) for p in _listify(then)]
    flags = global_loaded if isinstance(global_loaded, list) else [global_loaded] * len(loaded)
    from rcompat.elf.link.hostproc import resolve_hosts
    from rcompat.elf.link.missing import implied_hosts

    resolver = Resolver(ld_library_path, root=root)
    host = (resolve_hosts([os.fspath(p) for p in _listify(host)], resolver.root) if host
            else implied_hosts(loaded + then, resolver))
    all_loaded, flags = host + loaded, [True] * len(host) + flags
    show = resolver.root.inside
    process: list[ObjectInfo] = []
    global_scope: list[ObjectInfo] = []
    for path, is_global in zip(all_loaded, flags):
        res = resolver.resolve(path, preloaded=process)
        new = [n.info for n in res.nodes[res.preloaded:]]
        process += new
        if is_global:  # RTLD_GLOBAL puts the root and its whole closure into the global scope
            global_scope += [n.info for n in _local_scope(res) if n.info not in global_scope]
    failures: list[HardFailure] = []
    hazards: list[Hazard] = []
    reused: list[str] = []
    before = list(process)
    for path in then:
        refusal = _load_refusal(resolver.read(path), process[0] if process else None, show)
        if refusal:  # dlopen() stops at the file itself; nothing of it is mapped
            failures.append(HardFailure("not loadable", refusal, path))
            continue
        res = resolver.resolve(path, preloaded=process)
        reused += [f"{e.name} => {res.display(res.nodes[e.target].path)}"
                   for i, edges in res.edges.items() for e in edges
                   if e.reused and e.target is not None and e.target < res.preloaded]
        failures += [HardFailure("library not found", f"{m.name}: cannot open shared object file: No such file "
                                 "or directory", m.needed_by) for m in res.missing]
        failures += _version_failures(res)
        scope = _scope(global_scope, res)
        failures += _symbol_failures(res, scope)
        hazards += _interpositions(res, global_scope, show)
        process = [n.info for n in res.nodes]
        global_scope += [n.info for n in res.nodes[res.preloaded:]]  # then: loaded RTLD_GLOBAL too
    reused = list(dict.fromkeys(reused))  # several objects of THEN may reuse one loaded library
    hazards += _duplicates(before, process, show)
    for f in failures:
        f.object = show(f.object)
    _demangle(failures)
    prediction = CoLoadPrediction(loaded, then, failures, hazards, reused)
    if reverse:
        prediction.reverse = coload(then, loaded, ld_library_path, global_loaded=True, reverse=False, host=host,
                                    root=resolver.root)
    prediction.matching = matching_versions(versions)
    return prediction


ET_EXEC, ET_DYN = 2, 3


def _load_refusal(info: ObjectInfo, process_kind: ObjectInfo | None, show=str) -> str | None:
    """What ld.so's open_verify says when dlopen() is given a file it will not map (glibc
    elf/dl-load.c; the class is checked before the object type, as there)."""
    if process_kind is not None and info.bits != process_kind.bits:
        return f"{show(info.path)}: wrong ELF class: ELFCLASS{info.bits}"
    if info.e_type not in (ET_EXEC, ET_DYN):
        return f"{show(info.path)}: only ET_DYN and ET_EXEC can be loaded"
    return None


def _listify(value) -> list:
    return [value] if isinstance(value, (str, os.PathLike)) else list(value)


def _local_scope(res: Resolution):
    """The dlopen()ed root's search list: itself and its breadth-first closure (reused ones too)."""
    order, seen = [res.root_index], {res.root_index}
    for i in order:
        for e in res.edges.get(i, []):
            if e.target is not None and e.target not in seen:
                seen.add(e.target)
                order.append(e.target)
    return [res.nodes[i] for i in order]


def _scope(global_scope: list[ObjectInfo], res: Resolution) -> list[tuple[ObjectInfo, SymbolIndex]]:
    ids = set()
    out = []
    for info in global_scope + [n.info for n in _local_scope(res)]:
        if info.file_id in ids:
            continue
        ids.add(info.file_id)
        idx = readable_index(info.path)
        if idx is not None:
            out.append((info, idx))
    return out


def _version_failures(res: Resolution) -> list[HardFailure]:
    from rcompat.elf.link.verreq import check_versions

    rep = check_versions(res, find_alternatives=False)
    return [HardFailure("version not found", u.loader_message(), u.required_by, u.version)
            for u in rep.unmet if not u.weak]


def _symbol_failures(res: Resolution, scope) -> list[HardFailure]:
    out = []
    # ld.so relocates dependencies before the objects that need them: reverse load order.
    for node in reversed(res.nodes[res.preloaded:]):
        own = readable_index(node.path)
        if own is None:
            continue
        search = ([(node.info, own)] if node.info.symbolic else []) + scope
        for ref in own.references:
            if ref.weak or any(idx.lookup(ref.name, ref.version) for _info, idx in search):
                continue
            out.append(HardFailure("undefined symbol", ref.loader_message(res.display(node.path)), node.path,
                                   ref.name))
    return out


def _interpositions(res: Resolution, global_scope: list[ObjectInfo], show=str) -> list[Hazard]:
    earlier = [(info, idx) for info in global_scope if (idx := readable_index(info.path)) is not None]
    out = []
    for node in res.nodes[res.preloaded:]:
        own = readable_index(node.path)
        if own is None:
            continue
        for info, idx in earlier:
            if info.soname and info.soname == node.info.soname and info.file_id != node.info.file_id:
                shared = sorted(set(idx.definitions) & set(own.definitions))
                out.append(Hazard("second copy", f"{show(node.path)} is a second copy of {info.soname} (first: "
                                  f"{show(info.path)}); {len(shared)} of its exported symbols bind to the first "
                                  "copy's code and data",
                                  {"first": show(info.path), "second": show(node.path), "shared": shared[:20],
                                   "build_ids": [info.build_id, node.info.build_id]}))
        for name, defs in own.definitions.items():
            mine = defs[0]
            if mine.type not in HAZARD_TYPES:
                continue
            for info, idx in earlier:
                theirs = idx.lookup(name, mine.version)
                if theirs is None or info.file_id == node.info.file_id:
                    continue
                if theirs.size != mine.size:
                    local = " (protected: its own code keeps its copy, other objects use the first)" \
                        if mine.visibility == "PROTECTED" else ""
                    out.append(Hazard("interposition",
                                      f"{name} is defined by {show(info.path)} ({theirs.size} bytes) and by "
                                      f"{show(node.path)} ({mine.size} bytes); the first binds for both{local}, so "
                                      f"{os.path.basename(node.path)} reads or writes an object of the wrong size",
                                      {"symbol": name, "first": show(info.path), "first_size": theirs.size,
                                       "second": show(node.path), "second_size": mine.size}))
                break
    return out


def _duplicates(before: list[ObjectInfo], after: list[ObjectInfo], show=str) -> list[Hazard]:
    from rcompat.elf.link.runtimes import group_duplicates

    objects = [(info, "loaded" if info in before else "then") for info in after]
    found = group_duplicates(objects)
    for d in found:
        for copy in d.copies:
            copy.path = show(copy.path)
    return [Hazard("duplicate runtime", d.describe() + ". " + d.why, d.to_dict()) for d in found]


def _demangle(failures: list[HardFailure]) -> None:
    names = [f.symbol for f in failures if f.kind == "undefined symbol"]
    if not names:
        return
    from rcompat.elf.read.demangle import demangle_all

    pretty = dict(zip(names, demangle_all(names)))
    for f in failures:
        if f.kind == "undefined symbol":
            f.demangled = pretty.get(f.symbol, f.symbol)


def matching_versions(versions: "dict[str, str] | None") -> list[str]:
    """What the R torch <-> LibTorch table says about the two frameworks' versions."""
    if not versions:
        return []
    from rcompat.cuda.tables import libtorch_to_rtorch, rtorch_to_libtorch

    out = []
    r_version, py_version = versions.get("R torch"), versions.get("Python torch")
    try:
        if r_version:
            lt = rtorch_to_libtorch(r_version)
            if lt:
                out.append(f"R torch {r_version} is built against LibTorch {lt}: Python torch=={lt} shares its "
                           f"runtime" + (f" (installed: {py_version})" if py_version else ""))
        if py_version:
            rt = libtorch_to_rtorch(py_version.split("+")[0])
            out.append(f"Python torch {py_version} matches R torch {', '.join(rt)}" if rt else
                       f"no R torch release is built against LibTorch {py_version.split('+')[0]} (per the table)")
    except Exception:  # noqa: BLE001 - a table problem must not hide the prediction
        return out
    return out
