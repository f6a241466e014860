"""The other-Debian tier: a Debian 13 root (R 4.5.0, Python 3.13) on a Debian 12 host, a Debian 12
root on a Debian 13 host, built once and cached by scripts/debian_root.py.

`tier` installs rcompat into a venv inside the root the way a user does with a wheel (`pip install
rcompat-*.whl`, not editable), with the rpy2 the root's wheelhouse was built with for its R, and
runs commands there. Every test here is marked `tier`; where the root cannot be built or entered
(not root, no debootstrap, mirror unreachable) they skip and say why.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSIDE = f"/tmp/rcompat-tier-{os.getpid()}"   # this session's directory inside the root
# What each root must show: the tier's tests assert these, not whatever the root happens to have.
EXPECTED = {
    "trixie": {"R": "4.5.0", "rpy2": "3.6.", "mode": "API", "python": "3.13", "reticulate": "1.41",
               "R_getVar": True},
    "bookworm": {"R": "4.2.2", "rpy2": "3.5.17", "mode": "API", "python": "3.11", "reticulate": "1.28",
                 "R_getVar": False},
}


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py turns the mark into an xdist group
def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.tier)


# The session's directory in the root (venvs, checkouts: ~1 GB) is removed when the last tier test of
# the run has finished, not at the session's end: the tier's chain runs first, and its removal took
# 3-24 s of wall time (disk, hardly any CPU) at the very end of a run, where no other test overlaps it.
# Counted, not guessed from the next test: where the tier's tests did not all run on this worker,
# the count never completes and the removal waits for the session's end, as before.
_TIER = {"left": None, "cleanups": []}


def pytest_collection_finish(session):
    here = Path(__file__).parent
    _TIER["left"] = sum(1 for item in session.items if here in Path(str(item.fspath)).parents)


def pytest_runtest_logfinish(nodeid, location):
    if _TIER["left"] is None:
        return
    _TIER["left"] -= 1
    if _TIER["left"] == 0:
        while _TIER["cleanups"]:
            _TIER["cleanups"].pop()()


@pytest.fixture(scope="session")
def debian_root(load_helper):
    return load_helper("debian_root", REPO / "scripts" / "debian_root.py")


@pytest.fixture(scope="session")
def tier_root(debian_root) -> Path:
    try:
        return debian_root.ensure_root("auto")
    except debian_root.RootUnavailable as exc:
        pytest.skip(f"the Debian root tier cannot run here: {exc}")


@dataclass
class Tier:
    """rcompat installed in a venv inside the root; `run` starts commands there."""
    module: object
    root: Path
    host_dir: Path                      # INSIDE, seen from the host

    venv: str = f"{INSIDE}/venv"
    inside: str = INSIDE

    def install(self, target: str) -> None:
        """A venv at self.venv with rpy2 and numpy from the root's wheelhouse, then `target` (a
        wheel, or `-e DIR`); offline."""
        pip = f"{self.venv}/bin/pip install -q --no-index --find-links {self.module.WHEELHOUSE}"
        self.sh(f"python3 -m venv {self.venv} && {pip} rpy2 numpy setuptools wheel && "
                f"{pip} --no-build-isolation {target}", timeout=600, check=True)

    def run(self, argv: list[str], env: dict | None = None, timeout: float = 300,
            check: bool = False) -> subprocess.CompletedProcess:
        proc = self.module.run_in_root(self.root, argv, env={"XDG_CACHE_HOME": f"{INSIDE}/cache",
                                                             **(env or {})}, timeout=timeout)
        if check:
            assert proc.returncode == 0, f"{argv} failed in the root ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        return proc

    def sh(self, script: str, **kw) -> subprocess.CompletedProcess:
        return self.run(["sh", "-c", script], **kw)

    def rcompat(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return self.run([f"{self.venv}/bin/rcompat", *args], **kw)

    def doctor_json(self, *args: str, **kw) -> dict:
        proc = self.rcompat("doctor", "--format", "json", "--no-cache", *args, **kw)
        assert proc.returncode in (0, 1), f"doctor exit {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        return json.loads(proc.stdout)

    def r_lib(self, name: str, *fixtures: tuple[str, str]) -> str:
        """An R library inside the root with fixture packages (fixtures/rpkgs DIR, Version) installed
        by the root's own R CMD INSTALL; its path inside the root."""
        stage = self.host_dir / "stage" / name
        for fixture, version in fixtures:
            dest = stage / fixture
            shutil.copytree(REPO / "fixtures" / "rpkgs" / fixture, dest)
            desc = dest / "DESCRIPTION"
            desc.write_text("\n".join(f"Version: {version}" if line.startswith("Version:") else line
                                      for line in desc.read_text().splitlines()) + "\n")
        inside = f"{INSIDE}/lib/{name}"
        self.sh(f"mkdir -p {inside} && R CMD INSTALL --no-docs --no-multiarch -l {inside} "
                + " ".join(f"{INSIDE}/stage/{name}/{fixture}" for fixture, _ in fixtures), check=True)
        return inside


@pytest.fixture(scope="session")
def tier(tier_root, debian_root, wheel_builder) -> Tier:
    host_dir = tier_root / INSIDE.lstrip("/")
    shutil.rmtree(host_dir, ignore_errors=True)   # a crashed earlier session's leftovers
    host_dir.mkdir(parents=True)
    made = Tier(debian_root, tier_root, host_dir)
    _TIER["cleanups"].append(lambda: shutil.rmtree(host_dir, ignore_errors=True))
    try:
        wheel = wheel_builder(host_dir)
        made.install(f"{INSIDE}/wheels/{wheel.name}")
        yield made
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def tier_facts(tier) -> dict:
    """What the root is: R's version, rpy2's version, the host codename, for assertions."""
    proc = tier.sh(f"Rscript -e 'cat(R.version$major, R.version$minor, sep=\".\")'; echo; "
                   f"{tier.venv}/bin/python -c 'import importlib.metadata as m; print(m.version(\"rpy2\"))'; "
                   ". /etc/os-release; echo $VERSION_CODENAME", check=True)
    r_version, rpy2_version, codename = proc.stdout.split()
    assert codename in EXPECTED, f"the tier root is {codename!r}: no expectations written for it"
    return {"R": r_version, "rpy2": rpy2_version, "codename": codename, "expected": EXPECTED[codename]}


@pytest.fixture(scope="session")
def tier_editable(tier) -> Tier:
    """The same checkout installed in editable mode (`pip install -e`) in a second venv."""
    from dataclasses import replace

    editable = replace(tier, venv=f"{INSIDE}/venv-editable")
    editable.install(f"-e {INSIDE}/src")
    return editable
