"""`rcompat upgrade OLD.tar NEW.tar` on a pair of multi-GB images, against the floor of reading them:
issue 28's goals, measured side by side in one run.

1. gzip layers: the whole scan (a fresh process) against `sha256sum` + `gzip -dc > /dev/null` over the
   same layer blobs (what verifying and inflating them once costs the standard tools, one after the
   other as a shell runs them). Goal <= 0.5x: rcompat reads each blob once, hashes it while inflating,
   inflates the layers in parallel threads with the fastest library installed (zlib-ng here), and
   materialises only the ELF objects and metadata it reads.
2. uncompressed layers: the scan of the archives against the scan of the same roots as directories.
   Goal <= 1.5x: the ELF objects are read in place from the archive (rcompat/standins.py), and the
   layers' digests (every byte hashed) are checked in threads beside the scan, on the cores it leaves.

Each side runs ROUNDS times (RCOMPAT_BENCH_IMAGE_ROUNDS, default 2), alternating, best kept; the CPU time
(user + system) of each side is recorded too, with the load average: on a machine whose cores other work
takes, the wall-time ratio tends to the CPU ratio, since the threads find no free core.

The images: the two torch roots of benchmarks/bench_upgrade.py (fixtures/upgrade/build.py: torch 2.13.0+cpu
and 2.14.1+cu130 with the host runtime), each with BULK_MB of incompressible data files beside them (model
weights, wheels' data: what the scan skips but must still read), split into LAYERS layers per image and
written as docker-archive tarballs. Built once and cached under $XDG_CACHE_HOME/rcompat-bench-images
(~/.cache), never in the repository; RCOMPAT_BENCH_IMAGE_BULK_MB scales them down for a quick check.

Run: .venv/bin/python benchmarks/bench_image_read.py
"""
from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import random
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import record  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BULK_MB = int(os.environ.get("RCOMPAT_BENCH_IMAGE_BULK_MB", "600"))
LAYERS = 6
ROUNDS = int(os.environ.get("RCOMPAT_BENCH_IMAGE_ROUNDS", "2"))


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _layer_files(root: Path) -> list[list[Path]]:
    """The root's entries (files, symlinks, directories) in LAYERS groups of about equal bytes."""
    entries = sorted(root.rglob("*"))
    sizes = [(p, p.lstat().st_size if p.is_file() and not p.is_symlink() else 0) for p in entries]
    budget = sum(s for _p, s in sizes) / LAYERS + 1
    groups, current, used = [], [], 0
    for path, size in sizes:
        current.append(path)
        used += size
        if used >= budget and len(groups) < LAYERS - 1:
            groups.append(current)
            current, used = [], 0
    return groups + [current]


def _write_layer(root: Path, files: list[Path], out: Path, compress: bool) -> Path:
    import zlib_ng.gzip_ng as fast_gzip  # the benchmark machine has it (rcompat[images])

    opener = (lambda: fast_gzip.open(out, "wb", compresslevel=6)) if compress else (lambda: open(out, "wb"))
    with opener() as fh, tarfile.open(fileobj=fh, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in files:
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
    return out


def _image(root: Path, out: Path, tag: str, compress: bool) -> Path:
    """A docker-archive of `root` (docker save's layout, diff_ids in the config)."""
    work = Path(tempfile.mkdtemp(dir=out.parent))
    layers = [_write_layer(root, group, work / f"{k}.tar{'.gz' if compress else ''}", compress)
              for k, group in enumerate(_layer_files(root))]
    names = []
    with tarfile.open(out.with_suffix(".partial"), "w") as tar:
        for layer in layers:
            digest = hashlib.sha256(layer.read_bytes()).hexdigest()
            names.append(f"blobs/sha256/{digest}")
            tar.add(layer, arcname=names[-1])
        config = json.dumps({"config": {"Env": ["PATH=/usr/bin"]}, "rootfs": {"type": "layers"}}).encode()
        config_name = f"blobs/sha256/{hashlib.sha256(config).hexdigest()}"
        manifest = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": names}]).encode()
        for name, data in ((config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    os.replace(out.with_suffix(".partial"), out)
    for layer in layers:
        layer.unlink()
    work.rmdir()
    return out


def _bulk(root: Path, megabytes: int, seed: int) -> None:
    target = root / "opt/models"
    target.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for k in range(max(1, megabytes // 100)):
        with open(target / f"weights-{k}.bin", "wb") as fh:
            for _ in range(min(100, megabytes)):
                fh.write(rng.randbytes(1 << 20))


def _images(cache: Path) -> dict[str, Path]:
    cache.mkdir(parents=True, exist_ok=True)
    want = {f"{side}-{kind}": cache / f"{side}-{kind}-{BULK_MB}.tar"
            for side in ("old", "new") for kind in ("gzip", "plain")}
    roots = cache / f"roots-{BULK_MB}"
    if not (roots / "done").exists():
        built = _module("upgrade_fixture_build", REPO / "fixtures/upgrade/build.py").build_scenario(roots, libs=None)
        for seed, side in enumerate(("old", "new")):
            _bulk(built[side], BULK_MB, seed)
        (roots / "done").write_text("")
    for name, path in want.items():
        if not path.exists():
            side, kind = name.split("-")
            print(f"writing {path} (once; cached)", file=sys.stderr)
            _image(roots / side, path, f"bench/{side}:1", compress=kind == "gzip")
    return {**want, "old-dir": roots / "old", "new-dir": roots / "new"}


def _blobs(archive: Path, into: Path) -> list[Path]:
    """The layer blobs of `archive` as files (what the standard tools are given)."""
    out = []
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.name.startswith("blobs/") and member.size > 4096:
                tar.extract(member, into)
                out.append(into / member.name)
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _measured(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child processes, user + system) of one call of `fn`."""
    cpu, start = _children_cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - start, _children_cpu() - cpu


def _scan(old: Path, new: Path) -> None:
    env = {**os.environ, "RCOMPAT_NO_CACHE": "1"}
    done = subprocess.run([sys.executable, "-m", "rcompat", "upgrade", str(old), str(new), "--driver", "580.65.06",
                           "--format", "json", "--quiet"], capture_output=True, text=True, env=env, cwd=str(REPO))
    if done.returncode not in (0, 1):
        raise SystemExit(f"rcompat upgrade failed: {done.stderr[-2000:]}")


def _floor(blobs: list[Path]) -> None:
    subprocess.run(["sha256sum", *map(str, blobs)], stdout=subprocess.DEVNULL, check=True)
    for blob in blobs:
        subprocess.run(["gzip", "-dc", str(blob)], stdout=subprocess.DEVNULL, check=True)


def _warm(paths: list[Path]) -> None:
    for path in paths:
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)


def _alternating(ours, theirs) -> tuple[tuple[float, float], tuple[float, float]]:
    """Best (wall, CPU) of ROUNDS runs of each side, A B A B: a loaded machine slows both alike."""
    mine, other = [], []
    for _ in range(ROUNDS):
        mine.append(_measured(ours))
        other.append(_measured(theirs))
    return min(mine), min(other)


def main() -> int:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rcompat-bench-images"
    images = _images(cache)
    gz = [images["old-gzip"], images["new-gzip"]]
    plain = [images["old-plain"], images["new-plain"]]
    size = sum(p.stat().st_size for p in gz + plain)
    print(f"images: {size / 1e9:.2f} GB in all (gzip and uncompressed pairs); load average {_load_average()}")
    note = f"{LAYERS} layers an image, {BULK_MB} MB of data each beside the torch roots; {os.cpu_count()} cores"
    with tempfile.TemporaryDirectory(prefix="bench-blobs-", dir=cache) as tmp:
        blobs = [b for archive in gz for b in _blobs(archive, Path(tmp) / archive.stem)]
        _warm(blobs + gz)
        (ours, ours_cpu), (floor, floor_cpu) = _alternating(lambda: _scan(*gz), lambda: _floor(blobs))
    ok = record("image-read", "upgrade scan of two gzip-layer images vs sha256sum + gzip -dc of their blobs", ours,
                "sha256sum + gzip -dc", floor, goal=0.5, note=f"{note}; load {_load_average()}")
    record("image-read", "the same, CPU time (user + system)", ours_cpu, "sha256sum + gzip -dc", floor_cpu,
           note="what a machine without a free core would see")
    _warm(plain)
    (archives, archives_cpu), (directories, directories_cpu) = _alternating(
        lambda: _scan(*plain), lambda: _scan(images["old-dir"], images["new-dir"]))
    ok &= record("image-read", "upgrade scan of two uncompressed image archives vs the same roots as directories",
                 archives, "rcompat upgrade on directories", directories, goal=1.5, note=f"{note}; load {_load_average()}")
    record("image-read", "the same, CPU time (user + system)", archives_cpu, "rcompat upgrade on directories",
           directories_cpu, note="the archives' extra is hashing every byte (sha256, the layers' digests)")
    return 0 if ok else 1


def _load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    raise SystemExit(main())
