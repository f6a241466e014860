"""`rcompat elf symbols|deps|missing|versions|runtimes`: argparse only; handlers import lazily."""
from __future__ import annotations

import argparse
import sys

EXIT_OK, EXIT_FINDING = 0, 1


def register(elf_sub) -> None:
    p = elf_sub.add_parser("symbols", help="dynamic symbols like `nm -D` (read, never loaded)",
                           description="List the dynamic symbols of LIB as `nm -D` prints them (letters, "
                                       "name@@VERSION), read from .dynsym and the GNU version tables.")
    p.add_argument("lib", metavar="LIB")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--defined", action="store_true", help="only defined symbols (nm --defined-only)")
    which.add_argument("--undefined", action="store_true", help="only undefined symbols (nm --undefined-only)")
    p.add_argument("--demangle", "-C", action="store_true", help="demangle C++ names (like nm -C)")
    p.add_argument("--format", "-f", choices=("nm", "json", "csv"), default="nm",
                   help="output format (default: nm). json: an array, one object per symbol and line, in "
                        ".dynsym order; csv: one row per symbol")
    p.set_defaults(func=_symbols)

    p = elf_sub.add_parser("deps", help="dependency tree resolved like ld.so, statically",
                           description="Resolve LIB's DT_NEEDED entries the way ld.so would (RPATH, "
                                       "LD_LIBRARY_PATH, RUNPATH, ld.so.cache, default directories), without "
                                       "running anything. Exit 1 when a library is not found.")
    _resolution_options(p)
    p.add_argument("--all", action="store_true", help="also show needed entries satisfied by an already-loaded object")
    p.add_argument("--format", "-f", choices=("text", "json"), default="text")
    p.set_defaults(func=_deps)

    p = elf_sub.add_parser("missing", help="undefined symbols no loaded library provides",
                           description="Bind every undefined symbol of LIB and its dependencies in ld.so's "
                                       "lookup order, honouring symbol versions. For each one nobody provides, "
                                       "look further (--search, CUDA and pip nvidia dirs) and name the library "
                                       "that would. Exit 1 when something is missing.")
    _resolution_options(p)
    p.add_argument("--search", action="append", default=[], metavar="DIR",
                   help="another directory to look in for providers (repeatable)")
    p.add_argument("--host", action="append", default=[], metavar="HOST",
                   help="the process's executable or library providing symbols: a path, a command on PATH "
                        "(python3) or a soname (libR.so); default: the interpreter that would import an "
                        "extension module, libR.so for R API code")
    p.add_argument("--root-only", action="store_true", help="check only LIB's own undefined symbols")
    p.add_argument("--format", "-f", choices=("text", "json"), default="text")
    p.set_defaults(func=_missing)

    p = elf_sub.add_parser("versions", help="GLIBC/GLIBCXX/CXXABI version nodes needed vs provided",
                           description="Compare the symbol versions LIB and its dependencies need (verneed) "
                                       "with those their resolved providers define (verdef), and name a "
                                       "library on this machine that would satisfy them. Exit 1 when unmet.")
    _resolution_options(p)
    p.add_argument("--format", "-f", choices=("text", "json"), default="text")
    p.set_defaults(func=_versions)

    p = elf_sub.add_parser("runtimes", help="duplicate runtimes (libtorch, libc10, libstdc++, OpenMP, CUDA)",
                           description="Report runtime libraries present from two different files among the "
                                       "dependency closures of LIB... or in a live process (--pid).")
    p.add_argument("libs", nargs="*", metavar="LIB")
    p.add_argument("--pid", type=int, help="inspect /proc/PID/maps of a running process instead")
    p.add_argument("--format", "-f", choices=("text", "json"), default="text")
    p.set_defaults(func=_runtimes)


def _resolution_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("lib", metavar="LIB")
    p.add_argument("--ld-library-path", metavar="DIRS", default=None,
                   help="LD_LIBRARY_PATH to model (default: this environment's; none with --root)")
    add_root_option(p)


def add_root_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", metavar="DIR", default=None,
                   help="resolve inside DIR as if chrooted there (an unpacked image root): LIB and every "
                        "absolute path, ld.so.cache (or DIR/etc/ld.so.conf) are read inside DIR; output "
                        "names in-root paths")


def _write(text: str) -> None:
    from rcompat.cli.common import write_output

    write_output(text, None)


def _json(obj) -> None:
    import json

    _write(json.dumps(obj, indent=2, default=str) + "\n")


def _symbols(args) -> int:
    from rcompat.cli.common import end_without_teardown
    from rcompat.elf.read.symbols import symbols

    defined = True if args.defined else (False if args.undefined else None)
    syms = symbols(args.lib, defined=defined, demangle=args.demangle)
    if args.format in ("nm", "json"):
        from rcompat.renderers.escape import plain_ascii, printable

        chunks = syms.nm_chunks if args.format == "nm" else syms.json_chunks
        binary = _ascii_buffer(sys.stdout)
        for chunk in chunks(demangle=args.demangle):
            data = plain_ascii(chunk) if binary is not None else None
            if data is not None:  # the common case, encoded once
                binary.write(data)
            else:
                sys.stdout.write(printable(chunk))  # names from the file: no raw control characters
                if binary is not None:
                    sys.stdout.flush()  # before the next binary write
    else:
        import csv

        rows = syms.to_records(demangle=args.demangle)
        if rows:
            writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    end_without_teardown(syms)  # everything is written: 75k rows need not be freed one by one
    return EXIT_OK


def _ascii_buffer(stream):
    """The binary buffer under the text stream `stream` (flushed, so bytes written to it come in order)
    when ASCII text is written to it as its ASCII bytes; else None (a StringIO, a UTF-16 stream)."""
    import codecs

    buffer = getattr(stream, "buffer", None)
    try:
        ascii_compatible = codecs.lookup(stream.encoding or "").name in ("utf-8", "ascii", "latin-1", "iso8859-1")
    except (AttributeError, LookupError, TypeError):
        return None
    if buffer is None or not ascii_compatible or not hasattr(buffer, "write"):
        return None
    stream.flush()
    return buffer


def _deps(args) -> int:
    from rcompat.elf.link.resolve import deps

    from rcompat.elf.link.cxx_abi import resolution_build_facts, string_abi_mismatches

    res = deps(args.lib, ld_library_path=args.ld_library_path, root=args.root)
    facts = resolution_build_facts(res)
    mismatches = string_abi_mismatches(res, facts)
    if args.format == "json":
        out = res.to_dict()
        for entry, built in zip(out["load_order"], facts):
            entry["build"] = built.to_dict() if built is not None else None
        out["cxx_abi_mismatches"] = [m.to_dict() for m in mismatches]
        _json(out)
    else:
        lines = res.tree_lines(show_reused=args.all) + ["", "built with:"]
        lines += [f"  {node.info.name}: {built.summary() if built else 'build notes unreadable'}"
                  for node, built in zip(res.nodes, facts)]
        lines += [f"C++ ABI MISMATCH: {m.message()}" for m in mismatches]
        _write("\n".join(lines) + "\n")
    return EXIT_FINDING if res.missing or mismatches else EXIT_OK


def _missing(args) -> int:
    from rcompat.elf.link.missing import missing

    rep = missing(args.lib, search=args.search, ld_library_path=args.ld_library_path, host=args.host,
                  root_only=args.root_only, root=args.root)
    if args.format == "json":
        _json(rep.to_dict())
        return EXIT_OK if rep.ok else EXIT_FINDING
    show = rep.resolution.display
    out = [f"{show(rep.resolution.root.path)}: {len(rep.bindings)} undefined symbols bound, "
           f"{len(rep.missing)} missing, {len(rep.weak_unresolved)} weak left unbound"]
    if rep.hosts:
        out.append("host: " + ", ".join(rep.hosts))
    for lib in rep.resolution.missing:
        out.append(f"library not found: {lib.name} (needed by {lib.needed_by}); searched: "
                   + ", ".join(lib.searched_dirs))
    for m in rep.missing:
        out.append(f"missing: {m.loader_message()}")
        out.append(f"  {m.explanation()}")
    _write("\n".join(out) + "\n")
    return EXIT_OK if rep.ok else EXIT_FINDING


def _versions(args) -> int:
    from rcompat.elf.link.verreq import versions

    rep = versions(args.lib, ld_library_path=args.ld_library_path, root=args.root)
    if args.format == "json":
        _json(rep.to_dict())
        return EXIT_OK if rep.ok else EXIT_FINDING
    out = []
    show = rep.resolution.display
    for f in rep.families:
        mark = "ok  " if f.satisfied else "FAIL"
        line = (f"{mark} {f.file} {f.family}: newest needed {f.newest_needed} (by {show(f.needed_by)}); "
                f"newest provided {f.newest_provided or 'none'} by {show(f.provider) if f.provider else 'not found'}")
        if not f.satisfied:
            where = "in the root" if rep.resolution.in_other_root else "on this machine"
            line += "; would satisfy: " + (", ".join(show(a) for a in f.alternatives) or f"no copy found {where}")
        out.append(line)
    out += [u.loader_message() for u in rep.unmet]
    _write("\n".join(out) + "\n")
    return EXIT_OK if rep.ok else EXIT_FINDING


def _runtimes(args) -> int:
    from rcompat.elf.link.runtimes import duplicate_runtimes, duplicate_runtimes_in_process
    from rcompat.errors import UsageError

    if args.pid:
        dups = duplicate_runtimes_in_process(args.pid)
    elif args.libs:
        dups = duplicate_runtimes(args.libs)
    else:
        raise UsageError("give one or more LIBs or --pid PID")
    if args.format == "json":
        _json([d.to_dict() for d in dups])
    else:
        lines = [f"{d.status}: {d.describe()}" + ("" if d.all_load else " (same soname: only the first loads)")
                 for d in dups]
        _write("\n".join(lines or ["no duplicate runtimes"]) + "\n")
    return EXIT_FINDING if any(d.status == "fail" for d in dups) else EXIT_OK
