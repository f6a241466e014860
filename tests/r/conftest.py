"""Fixture R libraries, built once per test run with the real `R CMD INSTALL` (shared by the xdist workers).

Each library holds stand-ins from fixtures/rpkgs/ at the versions a test needs: the fixture is
copied, its DESCRIPTION `Version:` rewritten, and all packages of one library installed in one
`R CMD INSTALL` call (R's start-up dominates the cost).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RPKGS = REPO / "fixtures" / "rpkgs"

# library name -> [(fixture dir, version)]
LIBRARIES = {
    "ok": [("torch", "0.12.0"), ("keras", "2.15.0"), ("tensorflow", "2.16.0")],
    "dev": [("torch", "0.12.2.9000")],
    "abi": [("torch", "0.10.1"), ("keras", "2.12.0")],
    "segv": [("torch-segv", "0.12.0")],
    "hang": [("torch-hang", "0.12.0")],
    "abort": [("torch-abort", "0.12.0")],
    "nolantern": [("torch-nolantern", "0.13.0")],
    "baddesc": [("torch", "0.12.0"), ("keras", "2.15.0")],
}


def _package_name(fixture: Path) -> str:
    return re.search(r"^Package:\s*(\S+)", (fixture / "DESCRIPTION").read_text(), re.M).group(1)


def _staged(fixture: str, version: str, stage: Path) -> Path:
    src = RPKGS / fixture
    dest = stage / f"{fixture}-{version}" / _package_name(src)
    shutil.copytree(src, dest)
    desc = dest / "DESCRIPTION"
    desc.write_text(re.sub(r"^Version:.*$", f"Version: {version}", desc.read_text(), flags=re.M))
    return dest


@pytest.fixture(scope="session")
def rlibs(r_install, build_once, r_identity) -> dict[str, Path]:
    """name -> installed library dir (see LIBRARIES); installed once, kept between runs while the
    fixture packages, this file and R stay the same (tests/conftest.py: built_once)."""
    def install(root: Path) -> dict[str, Path]:
        libs = {}
        for name, packages in LIBRARIES.items():
            stage = root / f"stage-{name}"
            libs[name] = r_install(root / name, *[_staged(fixture, version, stage) for fixture, version in packages])
        # A DESCRIPTION that cannot be parsed, as after a disk error or a bad hand edit.
        (libs["baddesc"] / "torch" / "DESCRIPTION").write_bytes(bytes(range(0x80, 0x100)) * 3)
        return libs

    return build_once("rlibs", install, inputs=[RPKGS, Path(__file__), REPO / "tests" / "conftest.py", r_identity])


@pytest.fixture(scope="session")
def facts_ok(rlibs):
    from rcompat.r.facts import probe

    return probe(timeout=60, lib_paths=[str(rlibs["ok"])])
