"""`rcompat cuda probe|libs`, `rcompat matrix check|validate`, `rcompat device`.

Registration imports argparse only; each handler imports its part of the engine when it runs.
"""
from __future__ import annotations

import argparse
import json

from rcompat.cli.common import add_command_group, add_report_options, emit_report, timeout_seconds, write_output

STACK_FLAGS = (("driver", "535.104.05", "NVIDIA driver version"),
               ("driver-cuda", "12.4", "highest CUDA the driver supports (nvidia-smi's 'CUDA Version')"),
               ("cuda", "12.4", "CUDA runtime/toolkit version"),
               ("cudnn", "9.1.0", "cuDNN version"), ("cublas", "12.4.2", "cuBLAS version"),
               ("torch", "2.3.0", "PyTorch version (a local tag like +cu121 or +cpu names the build)"),
               ("rtorch", "0.14.2", "R torch package version"), ("tensorflow", "2.15", "TensorFlow version"))


def register(sub) -> None:
    cuda_sub = add_command_group(sub, "cuda", help="probe the NVIDIA driver, GPUs, torch's CUDA and CUDA libraries",
                                 description="Probe what the NVIDIA driver (NVML), Python torch (in a child "
                                             "process) and the CUDA libraries on disk say. Never loads a CUDA "
                                             "library itself.")
    probe = cuda_sub.add_parser("probe", help="print every CUDA fact of this machine",
                                description="Print the CUDA facts: driver, GPUs and their processes, torch's "
                                            "CUDA view, R torch's (through the R engine), libraries on disk.")
    probe.add_argument("--format", "-f", choices=("text", "json"), default="text")
    probe.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    probe.add_argument("--no-r", action="store_true", help="do not ask the R engine about R torch")
    probe.add_argument("--timeout", type=timeout_seconds, default=60.0, metavar="S",
                       help="seconds the torch child may take (default 60)")
    probe.set_defaults(func=run_probe)
    libs = cuda_sub.add_parser("libs", help="list CUDA libraries on disk and flag several versions of one",
                               description="Find libcudart, libcublas(Lt), libcudnn*, libnccl, libcupti, libnvrtc "
                                           "in LD_LIBRARY_PATH, /usr/local/cuda*, pip nvidia/*/lib wheels, torch's "
                                           "lib dir and system dirs; version from dist-info, version.json, file "
                                           "name or SONAME (read statically). Exit 1 with --strict when one "
                                           "library is reachable in several builds.")
    libs.add_argument("--dir", action="append", default=[], metavar="DIR", help="also search DIR (repeatable)")
    libs.add_argument("--format", "-f", choices=("text", "json"), default="text")
    libs.add_argument("--strict", action="store_true", help="exit 1 when several builds of a library are reachable")
    libs.set_defaults(func=run_libs)

    matrix_sub = add_command_group(sub, "matrix", help="check a driver/CUDA/cuDNN/framework stack against the tables",
                                   description="Evaluate a CUDA stack layer by layer (driver → CUDA runtime → "
                                               "cuDNN/cuBLAS → framework build) or validate the tables "
                                               "themselves.")
    check = matrix_sub.add_parser("check", help="evaluate the observed or a hypothetical stack",
                                  description="Without version flags: the versions observed on this machine. "
                                              "With any flag: only the stack the flags describe (ask before "
                                              "installing). Names each incompatible layer and its fix. "
                                              "Exit 1 when a layer is incompatible.")
    for flag, example, what in STACK_FLAGS:
        check.add_argument(f"--{flag}", metavar="VERSION", help=f"{what}, e.g. {example}")
    check.add_argument("--tables", metavar="DIR", help="use the tables in DIR instead of the packaged ones")
    add_report_options(check)
    check.set_defaults(func=run_matrix_check)
    validate = matrix_sub.add_parser("validate", help="check the tables against each other",
                                     description="Cross-check the CUDA tables: framework rows vs the cuDNN and "
                                                 "cuBLAS tables, R torch's LibTorch builds vs the torch table, "
                                                 "end-to-end driver claims vs the driver chain, toolkit minimum "
                                                 "order, duplicate keys. Exit 1 when rows contradict each other.")
    validate.add_argument("--tables", metavar="DIR", help="validate the tables in DIR (files it lacks: packaged)")
    add_report_options(validate)
    validate.set_defaults(func=run_matrix_validate)

    device = sub.add_parser("device", help="choose cuda or cpu for torch, with the reason",
                            description="Print 'cuda' or 'cpu' and why (no driver, CUDA_ENABLE=0, "
                                        "CUDA_VISIBLE_DEVICES, CPU-only torch, unsupported compute capability, "
                                        "matrix incompatibility). The answer is cached in "
                                        "$XDG_CACHE_HOME/rcompat/device.json until the driver, GPUs or packages "
                                        "change. Exit 0 either way.")
    device.add_argument("--no-cache", action="store_true", help="decide afresh and do not write the cache")
    device.add_argument("--cache-dir", metavar="DIR", help="keep device.json in DIR")
    device.add_argument("--format", "-f", choices=("text", "json"), default="text")
    device.add_argument("--timeout", type=timeout_seconds, default=60.0, metavar="S",
                        help="seconds the torch child may take (default 60)")
    device.set_defaults(func=run_device)


def run_probe(args: argparse.Namespace) -> int:
    from rcompat.cuda.facts import probe

    facts = probe(timeout=args.timeout, with_r=not args.no_r)
    data = facts.to_dict()
    text = json.dumps(data, indent=2, default=str) + "\n" if args.format == "json" else _probe_text(facts)
    write_output(text, args.output)
    return 0


def _probe_text(facts) -> str:
    nv, torch = facts.nvml, facts.torch
    lines = [f"driver:      {nv.driver_version or '-'}  (NVML: {nv.status}{'; ' + nv.reason if nv.reason else ''})",
             f"driver CUDA: {nv.cuda_driver_version or '-'}"]
    for g in nv.gpus:
        lines.append(f"GPU {g.index}:       {g.name} cc {g.compute_capability} {g.uuid} "
                     f"{g.memory_used_mib}/{g.memory_total_mib} MiB, {len(g.processes)} process(es)")
        lines += [f"             pid {p.pid} {p.name} {p.used_memory_mib} MiB" for p in g.processes]
    if torch.get("status") == "ok":
        lines.append(f"torch:       {torch['version']} CUDA {torch.get('cuda') or '-'} cuDNN "
                     f"{torch.get('cudnn_version') or '-'} available={torch.get('is_available')} "
                     f"arch={' '.join(torch.get('arch_list') or []) or '-'}")
    else:
        lines.append(f"torch:       {torch.get('status')}: {torch.get('reason', '')}")
    rt = facts.rtorch
    lines.append(f"R torch:     {rt.get('version') or rt.get('status')} "
                 + (f"LibTorch {rt.get('libtorch')} builds {' '.join(rt.get('cuda_builds') or [])}"
                    if rt.get("libtorch") else rt.get("reason", "")))
    lines.append(f"TensorFlow:  {facts.tensorflow or '-'}")
    lines.append(f"libraries:   {len(facts.libraries.libraries)} (rcompat cuda libs lists them)")
    lines.append("stack:       " + (", ".join(f"{k} {v}" for k, v in facts.stack().items()) or "-"))
    from rcompat.renderers.text import wrap_page

    return wrap_page("\n".join(lines)) + "\n"


def run_libs(args: argparse.Namespace) -> int:
    import os

    from rcompat.cuda.libs import clashes, scan, search_locations
    from rcompat.cuda.torch_probe import torch_distribution
    from rcompat.errors import UsageError

    for d in args.dir:
        if not os.path.isdir(d):
            raise UsageError(f"--dir {d}: no such directory")
    dist = torch_distribution()
    result = scan(search_locations(torch_location=dist["location"] if dist else None, extra_dirs=args.dir))
    found = clashes(result)
    if args.format == "json":
        write_output(json.dumps({**result.to_dict(), "clashes": found}, indent=2) + "\n", None)
    else:
        write_output("\n".join(_libs_text(result, found)) + "\n", None)
    return 1 if (found and args.strict) else 0


def _libs_text(result, found: list[dict]) -> list[str]:
    """The table of libraries fitted to the output width: a row too wide puts its PATH on the next
    line; the searched list and clash warnings wrap under their own indent."""
    import sys

    from rcompat.renderers.text import output_width, wrap

    width = output_width(sys.stdout)
    rows = [(lib.family, lib.version or "?", lib.version_source or "-", lib.soname or "-", lib.origin, lib.path)
            for lib in result.libraries]
    header = ("LIBRARY", "VERSION", "FROM", "SONAME", "ORIGIN", "PATH")
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header[:-1])]
    out = []
    for row in [header] + rows:
        columns = "  ".join(c.ljust(w) for c, w in zip(row, widths))
        if len(columns) + 2 + len(row[-1]) <= width:
            out.append(f"{columns}  {row[-1]}")
        else:
            out.extend([columns.rstrip(), "    " + row[-1]])
    if not rows:
        out.append("(no CUDA libraries found)")
    out.extend(wrap("searched: " + ", ".join(f"{p['dir']} ({p['origin']})" for p in result.searched),
                    "", width, "    "))
    for clash in found:
        out.extend(wrap(f"WARN  {clash['family']}: {len(clash['builds'])} different builds reachable: "
                        + "; ".join(f"{b['version'] or '?'} at {', '.join(b['paths'])}" for b in clash["builds"]),
                        "", width, "      "))
    return out


def run_matrix_check(args: argparse.Namespace) -> int:
    from rcompat.cuda.matrix import stack_findings
    from rcompat.model import Report

    given = {flag.replace("-", "_"): getattr(args, flag.replace("-", "_")) for flag, _, _ in STACK_FLAGS}
    given = {k: v for k, v in given.items() if v is not None}
    facts_section = {"stack": given, "observed": not given}
    if not given:
        from rcompat.cuda.facts import probe

        given = probe(with_r=False).stack()
        facts_section["stack"] = given
    report = Report(command="matrix check", findings=stack_findings(given, args.tables))
    report.facts = {"cuda_matrix": facts_section}
    return emit_report(report, args)


def run_matrix_validate(args: argparse.Namespace) -> int:
    from rcompat.cuda.validate import validate_tables

    return emit_report(validate_tables(args.tables), args)


def run_device(args: argparse.Namespace) -> int:
    from rcompat.cuda.device import choose_device

    choice = choose_device(cache_dir=args.cache_dir, use_cache=not args.no_cache, timeout=args.timeout)
    if args.format == "json":
        write_output(json.dumps(choice.to_dict(), indent=2, default=str) + "\n", None)
    else:
        write_output(f"{choice.device}: {choice.reason}\n" + (f"  fix: {choice.remedy}\n" if choice.remedy else ""),
                     None)
    return 0
