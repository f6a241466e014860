"""What `rcompat upgrade OLD NEW` reads on each side: one root filesystem, whatever it was given as.

    with open_source("pytorch-2.4.tar") as src:   # or an OCI layout dir, a root filesystem dir, "/"
        src.root, src.kind, src.label, src.env, src.layers, src.notes

- `/`: this machine, read in place (`env`: this process's loader-related variables, never all of them,
  so no secret reaches a report).
- a directory holding a root filesystem: read in place, never copied (`env` is empty: a directory has no
  image config).
- an image: a `docker save` / `podman save` tarball (docker-archive, docker >= 25's OCI-inside, or
  oci-archive), an OCI image layout directory, or an unpacked `docker save`. Its layers are merged into
  a temporary directory holding only what the scan reads (rcompat.upgrade_scan.image.layers), deleted when the
  `with` block ends, also on an error or Ctrl-C. `extract=DIR` materialises everything into DIR instead
  (DIR must be empty or absent) and keeps it. A tarball or layout holding several images: `FILE@TAG`
  picks one (matched as Docker matches references); without it, a UsageError lists the tags.
- a `dir:` layout (podman save --format docker-dir|oci-dir, skopeo copy dir:): manifest.json, version,
  blobs named by their hex digest.
Anything unusable (missing path, truncated tarball, not an image, a member escaping the root) raises
rcompat.errors.ImageError with one line naming the input, and leaves nothing behind.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from rcompat.errors import ImageError, UsageError
from rcompat.standins import StandIns
from rcompat.upgrade_scan.image.layers import Tally, human_size, merge_layer, read_layer
from rcompat.upgrade_scan.image.manifest import DirContainer, TarContainer, is_image_dir, read_image
from rcompat.upgrade_scan.image.safety import RootWriter, is_empty_dir

# This machine's variables that steer which libraries load (what an image's config Env would say).
HOST_ENV = ("PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
            "NVIDIA_VISIBLE_DEVICES", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX",
            "R_HOME", "R_LIBS", "R_LIBS_SITE", "R_LIBS_USER", "TORCH_HOME", "TORCH_INSTALL_PATH")
_COMPRESSED = ((b"\x1f\x8b", "gzip", "gunzip -k"), (b"\x28\xb5\x2f\xfd", "zstd", "zstd -d"),
               (b"\xfd7zXZ\x00", "xz", "xz -dk"), (b"BZh", "bzip2", "bunzip2 -k"))


@dataclass
class Source:
    root: str  # a host directory that is the merged root filesystem ("/" for this machine)
    kind: str  # "directory" | "docker-archive" | "oci-layout" | "host"
    label: str  # what findings call it: the tarball's name and tags, or the directory
    env: dict[str, str] = field(default_factory=dict)  # the image config's Env
    layers: list[dict] = field(default_factory=list)  # layer, media_type, size, members, taken
    notes: list[str] = field(default_factory=list)  # what was left out, and why


@contextmanager
def open_source(spec: str, *, extract: "str | None" = None, progress=None,
                tmpdir: "str | None" = None, stand_ins: bool = False) -> Iterator[Source]:
    """The root filesystem `spec` names (see the module doc). `progress`: a rcompat.progress.Progress
    told about each layer. `tmpdir`: where the temporary root goes (default: $TMPDIR). `stand_ins`
    (not with `extract`): the ELF objects of uncompressed layers stay in the image, the root holds
    stand-ins that only rcompat.inputs and the ELF reader read through (rcompat/standins.py)."""
    if not spec:
        raise UsageError("an empty path names no root filesystem or image")
    if os.path.normpath(spec) == "/" and "@" not in spec:
        if extract:
            raise UsageError("--extract applies to an image, not to this machine ('/')")
        yield Source("/", "host", "this machine (/)", {k: os.environ[k] for k in HOST_ENV if k in os.environ})
        return
    path, selector = _locate(spec)
    if os.path.isdir(path) and not is_image_dir(path):
        if extract or selector:
            raise UsageError(f"{spec}: a root filesystem directory is read in place: "
                             f"{'--extract' if extract else '@TAG'} applies to images only")
        yield Source(os.path.abspath(path), "directory", path)
        return
    container = DirContainer(path) if os.path.isdir(path) else _open_tarball(path)
    kept = StandIns() if stand_ins and extract is None else None
    verifier = Verifier()
    try:
        plan = read_image(container, path, selector)
        target, made = _target(extract, tmpdir)
        try:
            layers, notes = _materialise(plan, path, target, extract is not None, progress, kept, verifier)
        except BaseException:
            _discard(target, made)
            raise
        try:
            yield Source(target, plan.kind, plan.label, plan.env, layers, plan.notes + notes)
            verifier.finish(progress, plan.label)  # a layer not matching its digest ends the run here, unreported
        finally:
            verifier.cancel()
            if kept is not None:
                kept.close()
            if extract is None:  # a Ctrl-C during the removal must not leave half the root behind
                from rcompat.termination import despite_interrupts

                despite_interrupts(shutil.rmtree, target, ignore_errors=True)
    finally:  # again, for a failure before the yield: each is harmless twice
        verifier.cancel()  # before the descriptors its threads read close
        if kept is not None:
            kept.close()
        container.close()


def is_image(spec: str) -> bool:
    """Whether open_source would read `spec` as an image (merged into a temporary root, or into
    `extract`), rather than in place: "/" and root filesystem directories are read in place."""
    if os.path.normpath(spec) == "/" and "@" not in spec:
        return False
    path, _selector = _locate(spec)
    return not os.path.isdir(path) or is_image_dir(path)


def _locate(spec: str) -> tuple[str, "str | None"]:
    if os.path.lexists(spec):
        return spec, None
    path, at, selector = spec.rpartition("@")
    if at and path and selector and os.path.lexists(path):
        return path, selector
    raise ImageError(f"{spec}: no such file or directory (give a root filesystem directory, an image "
                     "tarball from docker/podman save, an OCI layout directory, or /)")


def _open_tarball(path: str) -> TarContainer:
    from rcompat.inputs import open_input

    with open_input(path, "image", "image", error=ImageError) as fh:  # a FIFO or device: refused, not read
        head = fh.read(6)
    for magic, compression, command in _COMPRESSED:
        if head.startswith(magic):
            raise ImageError(f"{path} is {compression}-compressed: decompress it first ({command} {path}) "
                             "and give the .tar")
    return TarContainer(path)


def _target(extract: "str | None", tmpdir: "str | None") -> tuple[str, "str | None"]:
    """The directory to merge into, and the outermost directory rcompat made for it (None: it was there)."""
    if extract is None:
        target = tempfile.mkdtemp(prefix="rcompat-root-", dir=tmpdir)
        return target, target
    if os.path.lexists(extract):
        if os.path.islink(extract) or not os.path.isdir(extract):
            raise UsageError(f"--extract {extract}: not a directory")
        if not is_empty_dir(extract):
            raise UsageError(f"--extract {extract}: the directory is not empty; give a new or empty one")
        return extract, None
    top = outermost_missing(extract)  # the outermost directory rcompat makes: removed whole on failure
    try:
        os.makedirs(extract, 0o755)
    except OSError as exc:
        raise UsageError(f"--extract {extract}: cannot create it: {exc.strerror or exc}") from None
    return extract, top


def outermost_missing(path: str) -> "str | None":
    """The outermost directory that creating `path` would make (None when `path` exists)."""
    top = os.path.abspath(path)
    if os.path.lexists(top):
        return None
    while not os.path.lexists(os.path.dirname(top)):
        top = os.path.dirname(top)
    return top


def discard_extracted(target: str, existed: bool) -> None:
    """Undo an --extract whose run failed after `target` was filled: remove it, or empty it when it
    was there (empty) before."""
    if existed and os.path.isdir(target):
        _discard(target, None)
    else:
        shutil.rmtree(target, ignore_errors=True)


def _materialise(plan, path: str, target: str, everything: bool, progress, stand_ins: "StandIns | None",
                 verifier: "Verifier") -> tuple[list[dict], list[str]]:
    """Read the layers in parallel threads (each blob once) and merge them in order as they finish."""
    from concurrent.futures import ThreadPoolExecutor

    tally, stop, layers = Tally(), threading.Event(), []
    stage = _staging_dir(target)
    stage_fd = os.open(stage, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    count = len(plan.layers)
    try:
        with RootWriter(target) as writer, ThreadPoolExecutor(reading_threads(count)) as pool:
            futures = [pool.submit(read_layer, layer, number, stage_fd, everything=everything, tally=tally,
                                   stop=stop, stand_ins=stand_ins) for number, layer in enumerate(plan.layers, 1)]
            try:
                for number, (layer, future) in enumerate(zip(plan.layers, futures), 1):
                    where = f"{plan.where(path)}: layer {number}/{count} ({layer.blob.name})"
                    try:
                        staged = future.result()
                        if progress is not None:
                            progress.note(f"{plan.label}: layer {number}/{count}, {human_size(layer.blob.size)}")
                        staged.description["taken"] = merge_layer(writer, staged, stage_fd, tally, everything)
                        if staged.verify is not None:
                            verifier.submit(staged.verify, where)
                    except ImageError as exc:
                        raise ImageError(f"{where}: {exc}") from None
                    layers.append(staged.description)
            except BaseException:
                stop.set()  # the other layers' threads stop at their next member
                raise
    finally:
        os.close(stage_fd)
        shutil.rmtree(stage, ignore_errors=True)
    return layers, tally.notes(everything)


class Verifier:
    """The digest checks read_layer left for later (uncompressed layers read with stand-ins): hashing
    is most of what reading such an image costs, and hashlib lets go of the GIL, so the blobs are hashed
    while the scan runs, in one pool for the process (OLD's and NEW's) of one thread fewer than the
    cores: the scan's own thread keeps a core (four hashing threads beside it on two cores left it
    two fifths of one). finish() waits for this source's checks and raises the first layer's
    ImageError; cancel() stops them (each checks between 64 MB windows) and waits, before their
    descriptors close."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._pending: list = []  # (where, check, future), in layer order

    def submit(self, check, where: str) -> None:
        self._pending.append((where, check, _digest_pool().submit(check, self.stop)))

    def finish(self, progress=None, label: str = "") -> None:
        if progress is not None and not all(future.done() for _where, _check, future in self._pending):
            progress.note(f"{label}: checking the layers' digests")
        # The scan is done, so this thread would only wait: it hashes the layers the pool has not started,
        # from the last back while the pool goes on from the first (on 2 quiet cores the pool's one thread
        # otherwise hashed alone for ~0.75 s at the end, a core idle: bench_image_read's archives 1.5x).
        failed: dict[int, ImageError] = {}
        for index in range(len(self._pending) - 1, -1, -1):
            _where, check, future = self._pending[index]
            if future.cancel():  # not started, and now never will be by the pool
                try:
                    check(self.stop)
                except ImageError as exc:
                    failed[index] = exc
        for index, (where, _check, future) in enumerate(self._pending):  # the first layer's error, as before
            try:
                if index in failed:
                    raise failed[index]
                if not future.cancelled():
                    future.result()
            except ImageError as exc:
                raise ImageError(f"{where}: {exc}") from None
        self._pending.clear()

    def cancel(self) -> None:
        from concurrent.futures import wait

        self.stop.set()
        for _where, _check, future in self._pending:
            future.cancel()  # not started yet: never will
        wait([future for _where, _check, future in self._pending])
        self._pending.clear()


_pool = None
_pool_lock = threading.Lock()


def _digest_pool():
    global _pool
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(max(1, reading_threads(64) - 1), thread_name_prefix="rcompat-digest")
        return _pool


def reading_threads(layers: int) -> int:
    """How many layers are read at once: one per core this process may use (RCOMPAT_IMAGE_THREADS
    overrides), never more than the layers."""
    wanted = os.environ.get("RCOMPAT_IMAGE_THREADS", "")
    cores = int(wanted) if wanted.isdigit() and int(wanted) > 0 else len(os.sched_getaffinity(0))
    return max(1, min(layers, cores, 32))


def _staging_dir(target: str) -> str:
    """Beside the root, so kept files are renamed into it, not copied; else $TMPDIR."""
    try:
        return tempfile.mkdtemp(prefix=".rcompat-layers-", dir=os.path.dirname(os.path.abspath(target)))
    except OSError:
        return tempfile.mkdtemp(prefix="rcompat-layers-")


def _discard(target: str, made: "str | None") -> None:
    """Undo a failed merge: remove what rcompat made, or empty the (empty before) --extract directory."""
    if made:
        from rcompat.termination import despite_interrupts

        despite_interrupts(shutil.rmtree, made, ignore_errors=True)
        return
    for name in os.listdir(target):
        full = os.path.join(target, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            os.unlink(full)
