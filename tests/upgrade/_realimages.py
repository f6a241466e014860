"""Images written by the real tools (podman 4.3, skopeo 1.9), built offline from a small root made here.

The root: this machine's libc.so.6 and ld.so on a merged-/usr layout (lib -> usr/lib, lib64 ->
usr/lib64), the loader's configuration and its cache (ldconfig -r), and gcc-built objects from
fixtures/elf: /opt/app/lib/libleaf.so.1, libmid.so (needs libleaf.so.1) and /usr/bin/app (needs libmid.so).
OLD is that root, `podman import`ed; NEW is `FROM old` plus two COPY layers: a libtorch_cpu.so under
/opt/torch/lib that needs libcudart.so.13 (which NEW lacks), and a library copied to /lib/... (through the
lower layer's symlink). Every image lives in a private podman storage (vfs, --root/--runroot under the
session's tmp), so tests never touch the system's images and may run in parallel.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import zlib
from pathlib import Path

FORMATS = ("docker-archive", "oci-archive", "oci-dir", "docker-dir")  # podman save --format


def runroot_for(top: Path) -> Path:
    """Podman's run root for the storage under `top`: podman refuses one longer than 50 characters, and
    pytest-xdist's temporary directories (…/pytest-N/popen-gwK/podmanM) are longer, so it lives in a
    short directory of its own, named after `top` (the same storage, the same run root)."""
    return Path("/tmp") / f"rcompat-podman-{zlib.crc32(str(top).encode()):08x}"


class Podman:
    def __init__(self, top: Path) -> None:
        self.top = top
        self.base = ["podman", "--root", str(top / "storage"), "--runroot", str(runroot_for(top)),
                     "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "file"]

    def __call__(self, *args: str, cwd: "Path | None" = None) -> str:
        done = subprocess.run([*self.base, *args], capture_output=True, text=True, cwd=cwd, timeout=300)
        if done.returncode:
            raise RuntimeError(f"podman {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout.strip()


def unusable_reason(top: Path) -> "str | None":
    """Why podman cannot build here (None: it can)."""
    if not shutil.which("podman") or not shutil.which("skopeo"):
        return "podman or skopeo is not installed (scripts/ensure_system.sh installs them)"
    try:
        Podman(top)("info", "--format", "{{.Store.GraphDriverName}}")
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        return f"podman cannot run here: {exc}"
    return None


def _cc(gcc: str, *args: str) -> None:
    subprocess.run([gcc, *args], check=True, capture_output=True, text=True)


def make_root(root: Path, gcc: str, fixtures: Path, build: Path) -> None:
    for d in ("usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/bin", "etc/ld.so.conf.d", "opt/app/lib"):
        (root / d).mkdir(parents=True, exist_ok=True)
    os.symlink("usr/lib", root / "lib")
    os.symlink("usr/lib64", root / "lib64")
    shutil.copy2(os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6"), root / "usr/lib/x86_64-linux-gnu/libc.so.6")
    shutil.copy2(os.path.realpath("/lib64/ld-linux-x86-64.so.2"), root / "usr/lib64/ld-linux-x86-64.so.2")
    (root / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    (root / "etc/ld.so.conf.d/app.conf").write_text("/opt/app/lib\n")
    lib = root / "opt/app/lib"
    _cc(gcc, "-shared", "-fPIC", "-O1", "-o", str(lib / "libleaf.so.1"), str(fixtures / "leaf.c"),
        "-Wl,-soname,libleaf.so.1")
    _cc(gcc, "-shared", "-fPIC", "-O1", "-o", str(lib / "libmid.so"), str(fixtures / "mid.c"), f"-L{build}",
        "-l:libleaf.so.1", "-Wl,-soname,libmid.so")
    main = build / "app.c"
    main.write_text("extern int mid_fn(void);\nint main(void) { return mid_fn() == 12345; }\n")
    _cc(gcc, "-O1", "-o", str(root / "usr/bin/app"), str(main), f"-L{lib}", "-lmid", f"-Wl,-rpath-link,{lib}")
    subprocess.run(["ldconfig", "-r", str(root)], check=True, capture_output=True, text=True)


def build_images(top: Path, gcc: str, fixtures: Path) -> dict:
    """OLD and NEW in podman's storage, saved in every format both tools write; returns the paths."""
    podman, build = Podman(top), top / "build"
    build.mkdir()
    _cc(gcc, "-shared", "-fPIC", "-o", str(build / "libleaf.so.1"), str(fixtures / "leaf.c"),
        "-Wl,-soname,libleaf.so.1")
    root = top / "old-root"
    make_root(root, gcc, fixtures, build)
    with tarfile.open(build / "old.tar", "w") as tar:
        for entry in sorted(os.listdir(root)):
            tar.add(root / entry, arcname=entry)
    podman("import", str(build / "old.tar"), "localhost/old:latest")
    ctx = top / "ctx"
    (ctx / "torch").mkdir(parents=True)
    _cc(gcc, "-shared", "-fPIC", "-o", str(build / "libcudart.so.13"), str(fixtures / "leaf.c"),
        "-Wl,-soname,libcudart.so.13")
    _cc(gcc, "-shared", "-fPIC", "-o", str(ctx / "torch/libtorch_cpu.so"), str(fixtures / "leaf.c"),
        "-Wl,--no-as-needed", f"-L{build}", "-l:libcudart.so.13", "-Wl,-soname,libtorch_cpu.so")
    _cc(gcc, "-shared", "-fPIC", "-o", str(ctx / "libextra.so.1"), str(fixtures / "leaf.c"),
        "-Wl,-soname,libextra.so.1")
    (ctx / "Containerfile").write_text("FROM localhost/old:latest\nCOPY torch/ /opt/torch/lib/\n"
                                       "COPY libextra.so.1 /lib/x86_64-linux-gnu/libextra.so.1\n")
    podman("build", "-q", "--network", "none", "-t", "localhost/new:latest", str(ctx))
    out = {"top": top, "old-layer": build / "old.tar",
           "old-dir": Path(podman("image", "mount", "localhost/old:latest")),
           "new-dir": Path(podman("image", "mount", "localhost/new:latest"))}
    saved = top / "saved"
    saved.mkdir()
    for fmt in FORMATS:
        path = saved / f"new-{fmt}{'.tar' if fmt.endswith('archive') else ''}"
        podman("save", "--format", fmt, "-o", str(path), "localhost/new:latest")
        out[f"podman {fmt}"] = path
        if fmt == "docker-dir":  # podman 4.3: --compress only with docker-dir
            path = saved / f"new-{fmt}-compressed"
            podman("save", "--format", fmt, "--compress", "-o", str(path), "localhost/new:latest")
            out[f"podman {fmt} --compress"] = path
    out["podman save -m"] = saved / "both.tar"
    podman("save", "-m", "--format", "docker-archive", "-o", str(out["podman save -m"]),
           "localhost/old:latest", "localhost/new:latest")
    source = f"docker-archive:{out['podman docker-archive']}"
    for name, dest, extra in (("skopeo oci", f"oci:{saved / 'skopeo-oci'}:new", []),
                              ("skopeo oci-archive", f"oci-archive:{saved / 'skopeo-oci.tar'}:new", []),
                              ("skopeo docker-archive", f"docker-archive:{saved / 'skopeo.tar'}:localhost/new:latest", []),
                              ("skopeo dir", f"dir:{saved / 'skopeo-dir'}", []),
                              ("skopeo oci zstd", f"oci:{saved / 'skopeo-zstd'}:new",
                               ["--dest-compress", "--dest-compress-format", "zstd"])):
        subprocess.run(["skopeo", "--insecure-policy", "copy", "-q", *extra, source, dest], check=True,
                       capture_output=True, text=True, timeout=300)
        out[name] = Path(dest.split(":")[1])
    out["symlinked blobs"] = _symlinked_blobs(out["skopeo oci"], saved)
    return out


def _symlinked_blobs(layout: Path, saved: Path) -> Path:
    """The skopeo OCI layout with every blob moved to a shared store outside it, a symlink left behind."""
    copy, store = saved / "linked-oci", saved / "blob-store"
    shutil.copytree(layout, copy)
    store.mkdir()
    for blob in (copy / "blobs/sha256").iterdir():
        shutil.move(str(blob), store / blob.name)
        os.symlink(store / blob.name, blob)
    return copy


def loader_list(root: Path, program: str) -> str:
    """What `ldd -r PROGRAM` prints inside a chroot of `root`: the root's loader run with the variables
    ldd -r sets (LD_TRACE_LOADED_OBJECTS, LD_WARN, LD_BIND_NOW), no shell needed in the root."""
    def enter() -> None:  # in the child, before exec: the loader and everything it opens is the root's
        os.chroot(root)
        os.chdir("/")

    done = subprocess.run(["/lib64/ld-linux-x86-64.so.2", program], preexec_fn=enter, capture_output=True,
                          text=True, timeout=60,
                          env={"LD_TRACE_LOADED_OBJECTS": "1", "LD_WARN": "yes", "LD_BIND_NOW": "yes"})
    return done.stdout + done.stderr
