"""An image's manifest, config and layer blobs, read without a container runtime.

Four shapes hold the same three things (a manifest listing layer blobs in order, a config with `Env`,
the layer tars):
- `docker save` / `podman save` tarballs: `manifest.json` (`Config`, `RepoTags`, `Layers`) with
  `<id>/layer.tar` (legacy) or `blobs/sha256/<hex>` (docker >= 25, an OCI layout inside the tar);
- OCI archives (`podman save --format oci-archive`) and OCI image layout directories: `oci-layout`,
  `index.json`, `blobs/<alg>/<hex>`;
- a directory holding an unpacked `docker save`.
The kind is told from the content. A layer is handed on as a window (descriptor, offset, size) into the
file that holds it, so an uncompressed layer is read in place, never copied out of the tarball first.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
import tarfile
from dataclasses import dataclass, field

from rcompat.documents import type_name
from rcompat.errors import ImageError, UsageError
from rcompat.upgrade_scan.image.refs import choose, pick_platform

_END_OF_ARCHIVE = 1024  # two zero blocks end every tar archive
_DIGEST = re.compile(r"^([a-z0-9]+(?:[+._-][a-z0-9]+)*):([a-zA-Z0-9=_-]+)$")
_INDEX_TYPES = ("application/vnd.oci.image.index.v1+json",
                "application/vnd.docker.distribution.manifest.list.v2+json")


@dataclass(frozen=True)
class Blob:
    """`size` bytes at `offset` in the open file `fd`; `name` says which for messages."""

    fd: int
    offset: int
    size: int
    name: str
    digest: str = ""  # "sha256:<hex>" where the manifest names the blob by its digest: checked as it is read


@dataclass(frozen=True)
class LayerRef:
    blob: Blob
    media_type: str = ""  # from an OCI descriptor; docker's legacy manifest has none


@dataclass
class ImagePlan:
    kind: str  # "docker-archive" | "oci-layout"
    label: str
    env: dict[str, str]
    layers: list[LayerRef]
    notes: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def where(self, path: str) -> str:
        """What messages name: the whole path given, and the image's tags."""
        return f"{path} ({', '.join(self.tags)})" if self.tags else path


class TarContainer:
    """The members of a tarball, located once by walking its headers (never its data)."""

    def __init__(self, path: str) -> None:
        from rcompat.inputs import open_input

        self.path = path
        self._file = open_input(path, "image", "image", error=ImageError)
        try:
            size = os.fstat(self._file.fileno()).st_size
            with tarfile.open(fileobj=self._file, mode="r:") as tar:
                members = tar.getmembers()
                end = tar.offset
            tail = os.pread(self._file.fileno(), _END_OF_ARCHIVE, end)
            if end + _END_OF_ARCHIVE > size or tail.strip(b"\0"):
                raise ImageError(f"{path}: truncated or damaged tarball (no end-of-archive blocks after the "
                                 f"member that ends at byte {end} of {size})")
        except (tarfile.TarError, EOFError) as exc:
            self.close()
            raise ImageError(f"{path}: truncated or not a tar archive ({exc})") from None
        except BaseException:
            self.close()
            raise
        self._members = {_key(m.name): m for m in members}

    def names(self) -> set[str]:
        return set(self._members)

    def blob(self, name: str, digest: str = "") -> Blob:
        member = self._regular(name)
        if member.issparse():
            raise ImageError(f"{self.path}: member {name!r} is a sparse file, which no image writer makes")
        return Blob(self._file.fileno(), member.offset_data, member.size, name, digest or _path_digest(name))

    def _regular(self, name: str) -> tarfile.TarInfo:
        key = _key(name)
        for _hop in range(16):  # docker's legacy save links a layer shared by two images to one copy
            member = self._members.get(key)
            if member is None:
                raise ImageError(f"{self.path}: the manifest names {name!r}, which the tarball does not contain")
            if member.isreg():
                return member
            if member.issym():
                key = _key(posixpath.join(posixpath.dirname(key), member.linkname))
            elif member.islnk():
                key = _key(member.linkname)
            else:
                raise ImageError(f"{self.path}: {name!r} is not a regular file in the tarball")
            if key.startswith("../"):
                raise ImageError(f"{self.path}: {name!r} links outside the tarball")
        raise ImageError(f"{self.path}: {name!r} is a loop of links")

    def close(self) -> None:
        self._file.close()


class DirContainer:
    """An OCI layout directory or an unpacked `docker save`: blobs are files under it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._real = os.path.realpath(path)
        self._fds: list[int] = []

    def names(self) -> set[str]:
        return {n for n in ("manifest.json", "index.json", "oci-layout", "version")
                if os.path.isfile(os.path.join(self.path, n))}

    def blob(self, name: str, digest: str = "") -> Blob:
        digest = digest or _path_digest(name)
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if name.startswith("/") or ".." in parts or not parts:
            raise ImageError(f"{self.path}: the manifest names {name!r}, outside the image directory")
        shown = os.path.join(self.path, *parts)
        full = os.path.realpath(shown)
        if not full.startswith(self._real + os.sep) and not digest:
            # A symlinked blob (a layout sharing a blob store) is read wherever it points only when its
            # digest is known and checked: then its bytes are the ones the manifest names.
            raise ImageError(f"{shown} is a symlink to {full}, outside the image directory, and has no "
                             "digest to check it against")
        try:  # O_NONBLOCK: a FIFO put there is refused below, never waited on
            fd = os.open(full, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
        except FileNotFoundError:
            what = f"a symlink to {full}, which does not exist" if os.path.islink(shown) else "missing"
            raise ImageError(f"{shown}: the manifest names this blob, but it is {what}") from None
        except OSError as exc:
            raise ImageError(f"{shown}: cannot read it: {exc.strerror or exc}") from None
        self._fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            from rcompat.inputs import kind_of_mode

            raise ImageError(f"{shown} is {kind_of_mode(st.st_mode)}, not a regular file")
        return Blob(fd, 0, st.st_size, name, digest)

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()


def is_image_dir(path: str) -> bool:
    """Whether the directory `path` is an image layout rather than a root filesystem. A directory that
    holds a layout's files but not a root's top directories counts as a layout even when those files are
    damaged: reading it then fails (exit 2), where reading it as a root would find nothing and pass."""
    names = DirContainer(path).names()
    if {"oci-layout", "index.json"} <= names or _is_dir_transport(path, names):
        return True
    if not names & {"manifest.json", "index.json", "oci-layout"}:
        return False
    if not _looks_like_root(path):
        return True
    if "manifest.json" not in names:
        return False
    data = _manifest_or_none(path)
    # a root filesystem may hold an unrelated /manifest.json: only docker's list of images counts
    return isinstance(data, list) and bool(data) and all(isinstance(e, dict) and "Layers" in e for e in data)


def _looks_like_root(path: str) -> bool:
    return any(os.path.isdir(os.path.join(path, d)) for d in ("usr", "etc", "bin", "lib", "opt", "var"))


def _manifest_or_none(path: str):
    from rcompat.documents import parse_json
    from rcompat.errors import RcompatError
    from rcompat.inputs import read_input

    try:
        return parse_json(read_input(os.path.join(path, "manifest.json"), "json"), "manifest.json")
    except RcompatError:
        return None


def _is_dir_transport(path: str, names: set) -> bool:
    """containers/image's `dir:` layout (podman save --format docker-dir|oci-dir, skopeo copy dir:):
    a `version` file saying so, beside manifest.json. Told by the version file alone, so a damaged
    manifest is refused (exit 2), never read as an empty root filesystem."""
    if "version" not in names:
        return False
    try:
        with open(os.path.join(path, "version"), "rb") as fh:
            return fh.read(64).startswith(b"Directory Transport Version")
    except OSError:
        return False


def read_image(container: "TarContainer | DirContainer", name: str, selector: "str | None") -> ImagePlan:
    """`name`: the path the user gave, named by every message (the label uses its last component)."""
    names = container.names()
    if isinstance(container, DirContainer) and _is_dir_transport(container.path, names):
        return _dir_transport(container, name, selector)
    if "manifest.json" in names:
        return _docker_archive(container, name, selector)
    if "index.json" in names:
        return _oci_layout(container, name, selector)
    raise ImageError(f"{name}: not an image: no manifest.json (docker/podman save) or index.json (OCI "
                     "layout) in it")


def _dir_transport(container: "DirContainer", name: str, selector: "str | None") -> ImagePlan:
    """The `dir:` layout: manifest.json is the image manifest itself (or an index whose instances are
    `<hex>.manifest.json`), every blob a file named by its hex digest."""
    if selector:
        raise UsageError(f"{name}@{selector}: a dir: layout holds one image and no tags; give {name}")
    notes: list[str] = []
    manifest = _platform_manifest(container, _json(container, "manifest.json"), name, notes,
                                  lambda d: f"{_hex(d, name)}.manifest.json")
    if manifest.get("schemaVersion") != 2:
        raise ImageError(f"{name}/manifest.json: schema version {manifest.get('schemaVersion')!r}; rcompat reads "
                         "schema 2 (docker v2s2 or OCI) manifests: copy the image again with skopeo or podman")
    return _from_manifest(container, name, manifest, [], notes, "dir", lambda d: _hex(d, name))


def _hex(descriptor: dict, name: str) -> str:
    match = _DIGEST.match(str(descriptor.get("digest", "")))
    if not match:
        raise ImageError(f"{name}: malformed digest {descriptor.get('digest')!r} in a descriptor")
    return match.group(2)


def _docker_archive(container, name: str, selector: "str | None") -> ImagePlan:
    manifest = _json(container, "manifest.json")
    if not isinstance(manifest, list) or not manifest or not all(isinstance(e, dict) for e in manifest):
        raise ImageError(f"{name}: manifest.json is not a list of images")
    tagged = [(entry, _strings(entry.get("RepoTags") or [], name, "manifest.json's RepoTags")) for entry in manifest]
    entry, tags, notes = choose(name, tagged, selector)
    config_name, layer_names = entry.get("Config"), entry.get("Layers")
    if not isinstance(config_name, str) or not isinstance(layer_names, list) \
            or not all(isinstance(n, str) for n in layer_names):
        raise ImageError(f"{name}: manifest.json entry without a Config name and a list of Layers")
    layers = [LayerRef(container.blob(layer)) for layer in layer_names]
    env = _env(_json(container, config_name), name)
    return ImagePlan("docker-archive", _label(name, tags), env, layers, notes, tags)


def _oci_layout(container, name: str, selector: "str | None") -> ImagePlan:
    index = _json(container, "index.json")
    descriptors = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(descriptors, list) or not descriptors or not all(isinstance(d, dict) for d in descriptors):
        raise ImageError(f"{name}: index.json lists no manifests")
    tagged = [(d, [t for t in (_annotation(d, "org.opencontainers.image.ref.name"),
                               _annotation(d, "io.containerd.image.name")) if t]) for d in descriptors]
    descriptor, tags, notes = choose(name, tagged, selector)
    manifest = _platform_manifest(container, _json(container, _blob_path(descriptor, name), _digest(descriptor)),
                                  name, notes, lambda d: _blob_path(d, name))
    return _from_manifest(container, name, manifest, tags, notes, "oci-layout", lambda d: _blob_path(d, name))


def _platform_manifest(container, manifest, name: str, notes: list, where) -> dict:
    """The image manifest itself: through a multi-platform index (an index of manifests, one per
    platform), this machine's; `where(descriptor)` names a manifest's blob."""
    for _level in range(4):
        if not isinstance(manifest, dict):
            raise ImageError(f"{name}: an image manifest is {type_name(manifest)}, not an object")
        if manifest.get("mediaType") not in _INDEX_TYPES and "manifests" not in manifest:
            return manifest
        descriptor, note = pick_platform(manifest, name)
        notes.append(note)
        manifest = _json(container, where(descriptor), _digest(descriptor))
    raise ImageError(f"{name}: image indexes nested more than 4 deep")


def _from_manifest(container, name: str, manifest: dict, tags: list, notes: list, kind: str, where) -> ImagePlan:
    """The plan an image manifest (OCI or docker v2s2) describes; `where(descriptor)`: its blob's name."""
    config, layer_descriptors = manifest.get("config"), manifest.get("layers")
    if not isinstance(config, dict) or not isinstance(layer_descriptors, list):
        raise ImageError(f"{name}: image manifest without a config and a list of layers")
    layers = []
    for layer in layer_descriptors:
        if not isinstance(layer, dict):
            raise ImageError(f"{name}: a layer descriptor is not an object")
        blob = container.blob(where(layer), _digest(layer))
        expected = layer.get("size")
        if isinstance(expected, int) and expected != blob.size:
            raise ImageError(f"{name}: layer {layer.get('digest')} is {blob.size} bytes where the manifest "
                             f"says {expected}: truncated or corrupt")
        layers.append(LayerRef(blob, str(layer.get("mediaType") or "")))
    env = _env(_json(container, where(config), _digest(config)), name)
    return ImagePlan(kind, _label(name, tags), env, layers, notes, tags)


def _blob_path(descriptor: dict, name: str) -> str:
    match = _DIGEST.match(str(descriptor.get("digest", "")))
    if not match:
        raise ImageError(f"{name}: malformed digest {descriptor.get('digest')!r} in a descriptor")
    return f"blobs/{match.group(1)}/{match.group(2)}"


def _json(container, member: str, digest: str = ""):
    from rcompat.documents import parse_json
    from rcompat.inputs import size_problem

    blob = container.blob(member, digest)
    problem = size_problem(blob.size, "json")
    if problem:
        raise ImageError(f"{container.path}: {member}: {problem}")
    data = os.pread(blob.fd, blob.size, blob.offset)
    if len(data) != blob.size:
        raise ImageError(f"{container.path}: {member} ends early: truncated")
    check_digest(new_hasher(blob.digest), data, blob.digest, f"{container.path}: {member}")
    return parse_json(data, f"{container.path}: {member}", ImageError)


def check_digest(hasher, data: bytes, digest: str, where: str) -> None:
    """Refuse `data` (the whole blob, or its last chunk fed to `hasher`) unless it hashes to `digest`."""
    if hasher is None:
        return
    hasher.update(data)
    if hasher.hexdigest() != digest.partition(":")[2]:
        what = f"{where}: content" if where else "content"  # a layer's message is prefixed by its caller
        raise ImageError(f"{what} does not match its digest {digest[:19]}…: corrupt or tampered with")


def new_hasher(digest: str):
    """A hashlib object for `digest`'s algorithm, or None when there is nothing to check."""
    return hashlib.new(digest.partition(":")[0]) if digest else None


def _path_digest(name: str) -> str:
    """The digest a content-addressed path spells (blobs/sha256/<hex>), else ""."""
    match = re.fullmatch(r"(?:\./)?blobs/(sha256|sha512)/([0-9a-f]{64,128})", name)
    return f"{match.group(1)}:{match.group(2)}" if match else ""


def _digest(descriptor: dict) -> str:
    """The descriptor's digest where rcompat can check it (sha256, sha512), else ""."""
    alg, _, hexdigest = str(descriptor.get("digest", "")).partition(":")
    return f"{alg}:{hexdigest}" if alg in ("sha256", "sha512") and re.fullmatch(r"[0-9a-f]{64,128}", hexdigest) else ""


def _strings(value, name: str, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ImageError(f"{name}: {field} is not a list of strings")
    return value


def _env(config, name: str) -> dict[str, str]:
    if not isinstance(config, dict):
        raise ImageError(f"{name}: the image config is {type_name(config)}, not an object")
    settings = config.get("config") or {}
    if not isinstance(settings, dict):
        raise ImageError(f"{name}: the image config's 'config' is {type_name(settings)}, not an object")
    variables = settings.get("Env") or []
    if not isinstance(variables, list):
        raise ImageError(f"{name}: the image config's Env is not a list")
    return dict(str(v).partition("=")[::2] for v in variables)


def _annotation(descriptor: dict, key: str) -> str:
    annotations = descriptor.get("annotations")
    return str(annotations.get(key, "")) if isinstance(annotations, dict) else ""


def _label(name: str, tags: list[str]) -> str:
    name = os.path.basename(os.path.normpath(name))
    return f"{name} ({', '.join(tags)})" if tags else name


def _key(name: str) -> str:
    """A member name as the manifest would spell it ('./a//b' -> 'a/b'); one that climbs out starts '..'."""
    return posixpath.normpath(name).lstrip("/")
