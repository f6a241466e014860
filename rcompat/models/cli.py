"""`rcompat model inspect | check`: argparse only here; the readers load when a command runs."""
from __future__ import annotations

import argparse

from rcompat.cli.common import add_command_group, add_quiet_option, add_report_options

_DEVICE_HELP = ("devices of the machine the model will be loaded on: auto (this machine's GPUs, through NVML; "
                "default), cpu, or a list like cuda:0,cuda:1")


def register(sub) -> None:
    group = add_command_group(
        sub, "model", metavar="MODEL_COMMAND",
        help="saved models read statically: what they hold, and whether they will load in a target torch",
        description="Read saved models without loading them (pickles are walked as opcodes, never unpickled): "
                    "torch.save zip and legacy files, TorchScript archives, safetensors, R torch files and .rds, "
                    "Keras .keras and .h5, TensorFlow SavedModel directories. See docs/models.md.")
    i = group.add_parser(
        "inspect", help="what each model file holds: format, version, tensors, devices, globals, operators",
        description="Print what each model holds, read statically: format and version, producer, tensors "
                    "(dtype, shape, bytes, saved device), pickled globals, TorchScript operators by namespace. "
                    "Directories are searched for model files. Exit 0, or 2 for a file that is not a readable "
                    "model (truncated, corrupt, hostile).",
        epilog="examples:\n  rcompat model inspect model.pt\n  rcompat model inspect checkpoints/ --format json")
    i.add_argument("paths", nargs="+", metavar="FILE|DIR")
    i.add_argument("--format", "-f", choices=("text", "json"), default="text",
                   help="text (default) or json (stable schema: docs/models.md)")
    i.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    i.add_argument("--tensors", type=int, default=10, metavar="N", help="text: list at most N tensors per file (default 10)")
    add_quiet_option(i)
    i.set_defaults(func=run_inspect)

    c = group.add_parser(
        "check", help="will each model load in the target environment, and what to do if not",
        description="Judge each model against a target: file format version vs the target torch's readable "
                    "range; pickled globals vs its weights_only allowlist (read from its own source, never "
                    "imported) and the advisories that change that verdict; saved devices vs the machine's "
                    "(with the map_location line); TorchScript operators vs the operators its libtorch registers "
                    "and extension namespaces; NumPy's numpy._core; Keras version, SavedModel and Lambda layers; "
                    "whether R torch (or Python) can read it; size vs GPU memory. Exit 0 loads, 1 a failing "
                    "finding, 2 an unreadable file.",
        epilog="examples:\n  rcompat model check model.pt\n  rcompat model check ckpt/ --python /opt/new/bin/python\n"
               "  rcompat model check ts.pt --root new-rootfs/ --device cpu")
    c.add_argument("paths", nargs="+", metavar="FILE|DIR")
    where = c.add_mutually_exclusive_group()
    where.add_argument("--python", metavar="PATH", help="the target interpreter (asked only for its site-packages)")
    where.add_argument("--root", metavar="DIR", help="an unpacked image root: its torch is read from its files, never run")
    c.add_argument("--device", default="auto", type=_device, metavar="SPEC", help=_DEVICE_HELP)
    add_report_options(c)
    add_quiet_option(c)
    c.set_defaults(func=run_check)


def _device(text: str) -> str:
    import re

    if text in ("auto", "cpu") or re.fullmatch(r"cuda:\d+(,cuda:\d+)*", text):
        return text
    raise argparse.ArgumentTypeError(f"must be auto, cpu or cuda:N[,cuda:M…], not {text!r}")


def run_inspect(args: argparse.Namespace) -> int:
    import json

    from rcompat.cli.common import write_output
    from rcompat.models.inspection import inspect_models, inspection_document
    from rcompat.models.render import inspection_text
    from rcompat.progress import progress_for

    with progress_for(args, label="rcompat model inspect") as progress:
        infos = inspect_models(args.paths, progress)
    if args.format == "json":
        text = json.dumps(inspection_document(infos), indent=2, allow_nan=False) + "\n"
    else:
        text = inspection_text(infos, max(args.tensors, 0))
    write_output(text, args.output)
    return 0


def run_check(args: argparse.Namespace) -> int:
    from rcompat.cli.common import emit_report
    from rcompat.models.engine import check_models
    from rcompat.progress import progress_for

    with progress_for(args, label="rcompat model check") as progress:
        report = check_models(args.paths, python=args.python, root=args.root, device=args.device, progress=progress)
    return emit_report(report, args)
