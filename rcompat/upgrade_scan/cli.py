"""`rcompat upgrade OLD NEW`: argument parsing only; the scan is rcompat.upgrade_scan.scan."""
from __future__ import annotations

from rcompat.cli.common import add_quiet_option, add_report_options


def register(sub) -> None:
    p = sub.add_parser(
        "upgrade", help="before moving from image/root OLD to NEW: what breaks (carried extensions, R torch, CUDA)",
        description="Compare two root filesystems without running anything from either: the stack on both sides "
                    "(glibc, libstdc++, Python, torch and its CUDA build, CUDA runtime/cuDNN/cuBLAS/NCCL, R and its "
                    "torch/keras3/tensorflow/reticulate); every carried object (an ELF object both hold with "
                    "identical bytes, or one named with --carry) rebound against NEW's libraries as ld.so would; "
                    "sonames NEW's own frameworks need but NEW lacks; ABI drift of the libraries carried objects "
                    "link. Only what the upgrade introduces fails; a problem OLD had too is a warn marked "
                    "pre-existing. OLD and NEW are each a directory holding an unpacked root filesystem, an image "
                    "tarball (docker save / podman save, docker-archive or oci-archive), an OCI image layout "
                    "directory, a dir: layout (podman save --format docker-dir|oci-dir, skopeo copy dir:), or / "
                    "for this machine; layers uncompressed, gzip or zstd. FILE@TAG picks one image of several "
                    "(matched as Docker matches: NAME is NAME:latest).",
        epilog="examples: rcompat upgrade old-root/ new.tar; rcompat upgrade images.tar@app:1 images.tar@app:2 "
               "--strict; rcompat upgrade / new-oci-dir/ --format json -o upgrade.json. "
               "Exit codes: 0 nothing introduced, 1 the upgrade breaks something (warn too with --strict), "
               "2 unusable input (a damaged or unreadable image, named by its whole path; an archive of several "
               "images without @TAG).")
    p.add_argument("old", metavar="OLD", help="the root or image in use now")
    p.add_argument("new", metavar="NEW", help="the root or image to move to")
    p.add_argument("--driver", metavar="VERSION",
                   help="the NVIDIA driver NEW will run on (default: this machine's, through NVML)")
    p.add_argument("--carry", metavar="PATH", action="append", default=[],
                   help="an ELF object inside OLD (in-root path) that you will copy into NEW: its dependencies are "
                        "searched inside NEW ($ORIGIN: its directory in OLD, looked up in NEW); repeatable")
    p.add_argument("--extract", metavar="DIR",
                   help="materialise the images' root filesystems under DIR/old and DIR/new instead of a temporary "
                        "directory (DIR/old and DIR/new must not exist or be empty); images only, and a run that "
                        "fails removes what it extracted")
    p.add_argument("--models", metavar="FILE|DIR", action="append", default=[],
                   help="saved models (torch, TorchScript, safetensors, R torch, Keras; directories searched) to "
                        "check against NEW's torch, read from NEW's files (rcompat model check --root); repeatable")
    add_report_options(p)
    add_quiet_option(p)
    p.set_defaults(func=_run)


def _run(args) -> int:
    from rcompat.cli.common import emit_report
    from rcompat.progress import progress_for
    from rcompat.upgrade_scan.scan import upgrade

    with progress_for(args, "rcompat upgrade") as prog:
        report = upgrade(args.old, args.new, driver=args.driver, carry=args.carry, extract=args.extract,
                         models=args.models, progress=prog)
    return emit_report(report, args)
