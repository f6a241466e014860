#!/usr/bin/env python3
"""A Python that fits the torch wheel on disk, inside the Debian root (the race reproducer on R 4.5).

    host_python() -> HostPython                        the CPython the host's torch wheel is for
    ensure_wheelhouse(debian_root, root, python) -> Path   its cp3XY wheels, built once and cached
    ensure_site(debian_root, root, python, wheelhouse) -> Path   those wheels installed, once and cached
    binds(python, *directories) -> dict                 read-only binds for run_in_root

The root's own Python 3.13 has no torch 2.13.0 wheel on disk (the cp313 one is a multi-GB CUDA
download), so the race reproducer -- embedded R through rpy2 and Python torch in one process --
runs on the host's CPython instead (pyenv's 3.11 here): its install is bind-mounted read-only at
the same path inside the root (glibc 2.41 there >= the 2.36 it was built on), and a venv in the
root's /tmp gets torch from the host's own wheel (`pip download --no-deps`, which reads the on-disk
pip cache / find-links) and an rpy2 compiled inside the root against the root's R with that
Python's headers. The wheels are cached next to the root, keyed by the root, the Python's version
and prefix and the requirements, built in a temporary directory and renamed when complete. So are
they installed (`pip install --target`, a directory a venv reads through a .pth file): unpacking
torch is most of making the race's venv (about 25 s of CPU), and it is the same every time.

Standard library only, like debian_root.py.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

WHEELHOUSE_VERSION = "1"
TORCH_REQUIREMENT = "torch==2.13.0"
BUILD_INSIDE = "/tmp/rcompat-python-wheels"   # where the temporary wheelhouse is bound while built
SITE_INSIDE = "/tmp/rcompat-python-site"         # where the temporary site is bound while built
COMPLETE = ".rcompat-wheels-complete"
SITE_PACKAGES = ("torch", "rpy2", "numpy", "pyelftools")  # what the race's venv needs besides rcompat


class PythonUnavailable(RuntimeError):
    """No host Python with headers and a torch wheel on disk: the race tier skips, saying why."""


class HostPython(NamedTuple):
    prefix: str          # the install, bound at the same path inside the root
    executable: str      # prefix/bin/pythonX.Y
    version: str         # 3.11.7
    tag: str             # cp311


def host_python() -> HostPython:
    """The CPython running this (its base install, not a venv): the one whose torch wheel lies on
    disk, since `make setup` installed torch into it. RCOMPAT_TIER_PYTHON names another prefix."""
    prefix = os.environ.get("RCOMPAT_TIER_PYTHON") or sys.base_prefix
    exe = Path(prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    if os.environ.get("RCOMPAT_TIER_PYTHON"):
        found = sorted(Path(prefix, "bin").glob("python3.*[0-9]"))
        exe = found[0] if found else exe
    if not exe.is_file():
        raise PythonUnavailable(f"no Python executable under {prefix}/bin")
    if prefix.startswith(("/usr", "/bin", "/lib", "/etc")) and prefix != "/usr/local":
        raise PythonUnavailable(f"the host Python ({prefix}) lives in the system directories, which "
                                "cannot be bound into the root over its own (use a pyenv/built one)")
    out = subprocess.run([str(exe), "-c", "import sys, sysconfig; v = sys.version_info; "
                          "print(f'{v.major}.{v.minor}.{v.micro}', sysconfig.get_paths()['include'])"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise PythonUnavailable(f"{exe} does not run: {out.stderr.strip()[-200:]}")
    version, include = out.stdout.split()
    if not (Path(include) / "Python.h").is_file():
        raise PythonUnavailable(f"{exe} has no headers ({include}/Python.h): rpy2 cannot be built for it")
    major, minor = version.split(".")[:2]
    return HostPython(prefix=str(Path(prefix).resolve()), executable=str(exe), version=version,
                      tag=f"cp{major}{minor}")


def binds(python: HostPython, *directories: Path) -> dict:
    """Read-only binds: the Python at its own path, the wheelhouse (and site) at the same path too."""
    return {python.prefix: python.prefix, **{str(d): str(d) for d in directories}}


def wheelhouse_path(root: Path, python: HostPython, rpy2: str) -> Path:
    text = "\n".join([WHEELHOUSE_VERSION, root.name, python.prefix, python.version, TORCH_REQUIREMENT, rpy2])
    return root.parent / f"{root.name}-{python.tag}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def rpy2_requirement(debian_root, root: Path) -> str:
    """What the [[rpy2]] table picks for the root's R (the same rows the root's own wheelhouse used)."""
    proc = debian_root.run_in_root(root, ["Rscript", "-e", "cat(R.version$major, R.version$minor, sep='.')"],
                                   timeout=120)
    if proc.returncode != 0:
        raise debian_root.RootError(f"the root's R does not start: {proc.stderr.strip()[-300:]}")
    script = Path(__file__).resolve().parent / "rpy2_requirement.py"
    return subprocess.run([sys.executable, str(script), proc.stdout.strip()], capture_output=True, text=True,
                          check=True, timeout=60).stdout.strip()


def ensure_wheelhouse(debian_root, root: Path, python: HostPython) -> Path:
    """torch (the host's wheel) and its dependencies, numpy, and rpy2 built inside the root against
    the root's R for `python`: a directory next to the root, made once."""
    rpy2 = rpy2_requirement(debian_root, root)
    return _made_once(wheelhouse_path(root, python, rpy2), f"{python.version} {TORCH_REQUIREMENT} {rpy2}",
                      lambda tmp: _build(debian_root, root, python, rpy2, tmp))


def ensure_site(debian_root, root: Path, python: HostPython, wheelhouse: Path) -> Path:
    """SITE_PACKAGES and their dependencies installed from the wheelhouse and the root's own one, for
    `python`, in a directory next to the wheelhouse (made once): a venv in the root that names it in
    a .pth file imports them from there (bind it read-only at its own path)."""
    own = sorted(w.name for w in (root / debian_root.WHEELHOUSE.lstrip("/")).glob("*.whl"))
    key = "\n".join([wheelhouse.name, *sorted(w.name for w in wheelhouse.glob("*.whl")), *own, *SITE_PACKAGES])
    final = wheelhouse.parent / f"{wheelhouse.name}-site-{hashlib.sha256(key.encode()).hexdigest()[:12]}"

    def install(tmp: Path) -> None:
        links = f"--find-links {wheelhouse} --find-links {debian_root.WHEELHOUSE}"
        script = (f"set -e; {python.executable} -m venv {SITE_INSIDE}/.venv; {SITE_INSIDE}/.venv/bin/pip install "
                  f"-q --disable-pip-version-check --no-index {links} --target {SITE_INSIDE}/site "
                  f"{' '.join(SITE_PACKAGES)}; rm -rf {SITE_INSIDE}/.venv")
        proc = debian_root.run_in_root(root, ["sh", "-c", script], timeout=900, binds={str(tmp): SITE_INSIDE},
                                       read_only_binds=binds(python, wheelhouse))
        if proc.returncode != 0:
            raise debian_root.RootError(f"installing {', '.join(SITE_PACKAGES)} for {python.tag} in {root} "
                                        f"failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-600:]}")

    return _made_once(final, key, install) / "site"


def _made_once(final: Path, stamp: str, build) -> Path:
    """`final`, made by build(tmp) in a temporary directory beside it and renamed when complete, under
    a lock (other sessions of this machine may want it at the same time)."""
    if (final / COMPLETE).is_file():
        return final
    import fcntl

    with open(final.parent / f".{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / COMPLETE).is_file():
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{final.name}-", dir=final.parent))
        try:
            build(tmp)
            (tmp / COMPLETE).write_text(stamp + "\n")
            if final.exists():
                shutil.rmtree(final)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final


def _build(debian_root, root: Path, python: HostPython, rpy2: str, tmp: Path) -> None:
    # On the host: the torch wheel from the pip cache / find-links this machine has (never an index's
    # multi-GB build: --only-binary and the exact pin), its dependencies and numpy for this Python.
    host_pip = [python.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                "--only-binary", ":all:", "-d", str(tmp)]
    torch = subprocess.run(host_pip + ["--no-deps", TORCH_REQUIREMENT], capture_output=True, text=True, timeout=600)
    if torch.returncode != 0 or not list(tmp.glob(f"torch-*-{python.tag}-*.whl")):
        raise PythonUnavailable(f"no {TORCH_REQUIREMENT} wheel for {python.tag} on disk: "
                                f"{(torch.stderr or torch.stdout).strip()[-300:]}")
    deps = subprocess.run(host_pip + [TORCH_REQUIREMENT, "numpy", "cffi", "setuptools", "wheel"],
                          capture_output=True, text=True, timeout=600)
    if deps.returncode != 0:
        raise debian_root.RootError(f"pip download of torch's dependencies failed: {deps.stderr.strip()[-300:]}")
    # In the root: rpy2's compiled part against the root's R (r-base-dev's headers, libR) and this
    # Python's headers; rpy2's sdist from the index, the rest from what was just downloaded.
    # Pinned to the rpy2 the root's own wheelhouse holds, so the cp311 and cp313 venvs run the same rpy2.
    pins = sorted({"{}=={}".format(*w.name.split("-")[:2])
                   for w in (root / debian_root.WHEELHOUSE.lstrip("/")).glob("rpy2*.whl")})
    (tmp / "constraints.txt").write_text("".join(f"{pin}\n" for pin in pins))
    links = f"--find-links {BUILD_INSIDE} --find-links {debian_root.WHEELHOUSE} -c {BUILD_INSIDE}/constraints.txt"
    script = (f"set -e; {python.executable} -m venv {BUILD_INSIDE}/.venv; "
              f"{BUILD_INSIDE}/.venv/bin/pip wheel -q --disable-pip-version-check {links} "
              f"-w {BUILD_INSIDE} '{rpy2}'; rm -rf {BUILD_INSIDE}/.venv")
    proc = debian_root.run_in_root(root, ["sh", "-c", script], timeout=900, binds={str(tmp): BUILD_INSIDE},
                                   read_only_binds={python.prefix: python.prefix},
                                   env={"XDG_CACHE_HOME": f"{BUILD_INSIDE}/.cache",
                                        "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt"})
    if proc.returncode != 0:
        raise debian_root.RootError(f"building {rpy2} for {python.tag} in {root} failed "
                                    f"(exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-600:]}")
    shutil.rmtree(tmp / ".cache", ignore_errors=True)
    if not list(tmp.glob(f"rpy2_rinterface-*-{python.tag}-*.whl")):
        raise debian_root.RootError(f"building {rpy2} for {python.tag} produced no rpy2_rinterface wheel")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import debian_root as _debian_root

    try:
        print(ensure_wheelhouse(_debian_root, _debian_root.ensure_root("auto"), host_python()))
    except (PythonUnavailable, _debian_root.RootUnavailable, _debian_root.RootError) as exc:
        print(f"root_python: {exc}", file=sys.stderr)
        sys.exit(2)
