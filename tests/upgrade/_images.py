"""Build container images with Python's tarfile, in the layouts the real tools write them.

- docker_save(): what `docker save` (before 25) and `podman save` write: manifest.json listing Config,
  RepoTags and `<id>/layer.tar`, the config `<id>.json` with `config.Env` and `rootfs.diff_ids`;
- oci_layout(): an OCI image layout directory (oci-layout, index.json, blobs/sha256/...), the layers
  stored as given (gzip-compressed, as registries ship them, or not); tar_of() makes an oci-archive of it;
- docker25_save(): docker >= 25's save: that OCI layout in a tar plus a manifest.json naming its blobs.
A layer is a list of entries: file(), directory(), symlink(), hardlink(), fifo(), whiteout(), opaque().
Used by tests/upgrade and by the upgrade benchmark (loaded by path: tests are not a package).
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Callable, Iterable

Entry = Callable[[tarfile.TarFile], None]


def _info(name: str, kind: bytes, **extra) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mtime = 1700000000
    for key, value in extra.items():
        setattr(info, key, value)
    return info


def file(name: str, data: "bytes | Path", mode: int = 0o644) -> Entry:
    def add(tar: tarfile.TarFile) -> None:
        if isinstance(data, Path):
            with data.open("rb") as fh:
                tar.addfile(_info(name, tarfile.REGTYPE, size=data.stat().st_size, mode=mode), fh)
        else:
            tar.addfile(_info(name, tarfile.REGTYPE, size=len(data), mode=mode), io.BytesIO(data))
    return add


def directory(name: str) -> Entry:
    return lambda tar: tar.addfile(_info(name, tarfile.DIRTYPE, mode=0o755))


def symlink(name: str, target: str) -> Entry:
    return lambda tar: tar.addfile(_info(name, tarfile.SYMTYPE, linkname=target, mode=0o777))


def hardlink(name: str, target: str) -> Entry:
    return lambda tar: tar.addfile(_info(name, tarfile.LNKTYPE, linkname=target, mode=0o644))


def fifo(name: str) -> Entry:
    return lambda tar: tar.addfile(_info(name, tarfile.FIFOTYPE, mode=0o644))


def whiteout(path: str) -> Entry:
    """`.wh.NAME` next to NAME: the layer deletes NAME."""
    parent, _, name = path.rpartition("/")
    return file(f"{parent}/.wh.{name}" if parent else f".wh.{name}", b"")


def opaque(directory_path: str) -> Entry:
    """`.wh..wh..opq` in a directory: the lower layers' contents of it are gone."""
    return file(f"{directory_path}/.wh..wh..opq", b"")


def write_layer(path: Path, entries: Iterable[Entry], compress: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = open(path, "wb")
    stream = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if compress else raw
    with tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for add in entries:
            add(tar)
    if compress:
        stream.close()
    raw.close()
    return path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _config(env: dict[str, str], diff_ids: list[str]) -> bytes:
    return json.dumps({"architecture": "amd64", "os": "linux",
                       "config": {"Env": [f"{k}={v}" for k, v in env.items()]},
                       "rootfs": {"type": "layers", "diff_ids": [f"sha256:{d}" for d in diff_ids]}}).encode()


def docker_save(out: Path, images: "list[tuple[list[Path], dict[str, str], list[str]]]") -> Path:
    """A `docker save` tarball of several images: each (uncompressed layer tars, Env, RepoTags)."""
    manifest = []
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        written: set[str] = set()
        for layers, env, tags in images:
            ids = [sha256(layer) for layer in layers]
            for layer_id, layer in zip(ids, layers):
                if layer_id not in written:
                    tar.add(str(layer), arcname=f"{layer_id}/layer.tar")
                    written.add(layer_id)
            config = _config(env, ids)
            config_name = f"{hashlib.sha256(config).hexdigest()}.json"
            tar.addfile(_info(config_name, tarfile.REGTYPE, size=len(config), mode=0o644), io.BytesIO(config))
            manifest.append({"Config": config_name, "RepoTags": tags,
                             "Layers": [f"{layer_id}/layer.tar" for layer_id in ids]})
        data = json.dumps(manifest).encode()
        tar.addfile(_info("manifest.json", tarfile.REGTYPE, size=len(data), mode=0o644), io.BytesIO(data))
    return out


def oci_layout(out: Path, layers: list[Path], env: dict[str, str], tag: str) -> Path:
    """An OCI image layout directory; `layers` are stored as given (gzip or plain: the media type says)."""
    blobs = out / "blobs/sha256"
    blobs.mkdir(parents=True, exist_ok=True)

    def put(data: bytes) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"digest": f"sha256:{digest}", "size": len(data)}

    descriptors = []
    diff_ids = []
    for layer in layers:
        data = layer.read_bytes()
        gz = data[:2] == b"\x1f\x8b"
        diff_ids.append(hashlib.sha256(gzip.decompress(data) if gz else data).hexdigest())
        media = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if gz else "")
        descriptors.append({"mediaType": media, **put(data)})
    config = {"mediaType": "application/vnd.oci.image.config.v1+json", **put(_config(env, diff_ids))}
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": config, "layers": descriptors}
    entry = {"mediaType": "application/vnd.oci.image.manifest.v1+json", **put(json.dumps(manifest).encode()),
             "annotations": {"org.opencontainers.image.ref.name": tag}}
    (out / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    (out / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [entry]}))
    return out


def docker25_save(out: Path, layers: list[Path], env: dict[str, str], tag: str) -> Path:
    """What `docker save` writes since docker 25: an OCI layout in a tar, plus a manifest.json whose
    Config and Layers name the blobs (uncompressed layers)."""
    layout = oci_layout(out.with_suffix(".layout"), layers, env, tag)
    index = json.loads((layout / "index.json").read_text())
    manifest = json.loads((layout / "blobs/sha256" / index["manifests"][0]["digest"].split(":")[1]).read_text())
    blob = lambda descriptor: "blobs/sha256/" + descriptor["digest"].split(":")[1]
    (layout / "manifest.json").write_text(json.dumps([{"Config": blob(manifest["config"]), "RepoTags": [tag],
                                                       "Layers": [blob(d) for d in manifest["layers"]]}]))
    return tar_of(layout, out)


def tar_of(directory: Path, out: Path) -> Path:
    """A directory as a tarball, members relative to it (an oci-archive from an OCI layout)."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(directory.rglob("*")):
            tar.add(str(path), arcname=str(path.relative_to(directory)), recursive=False)
    return out
