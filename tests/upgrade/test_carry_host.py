"""`--carry PATH` when NEW is this machine (`/`): the carried bytes are OLD's, whether this machine has
nothing at PATH or a different file there. OLD is a small root built with gcc: libneeds_vendor.so
needs libvendor.so, which only OLD has."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rcompat.model import Status

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "fixtures/upgrade"
TRIPLET_LIB = "lib/x86_64-linux-gnu"


def build(gcc, out: Path, source: str, *extra: str) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-o", str(out), str(SRC / source), *extra],
                   check=True, capture_output=True, text=True)
    return out


@pytest.fixture(scope="module")
def scene(gcc, tmp_path_factory) -> dict[str, Path]:
    if not Path("/" + TRIPLET_LIB, "libc.so.6").is_file():
        pytest.skip(f"this machine keeps libc elsewhere than /{TRIPLET_LIB}")
    base = tmp_path_factory.mktemp("carry-host")
    old = base / "old"
    libdir = old / TRIPLET_LIB
    libdir.mkdir(parents=True)
    shutil.copy(f"/{TRIPLET_LIB}/libc.so.6", libdir)
    vendor = build(gcc, libdir / "libvendor.so", "vendor.c", "-Wl,-soname,libvendor.so")
    only_old = base / "only-old" / "libneeds_vendor.so"  # a host path nothing lies at on this machine
    both = base / "both" / "libneeds_vendor.so"  # here: a build without the dependency
    for path in (only_old, both):
        build(gcc, old / path.relative_to("/"), "needs_vendor.c", f"-L{vendor.parent}", "-lvendor",
              "-Wl,-soname,libneeds_vendor.so")
    build(gcc, both, "vendor.c", "-Wl,-soname,libneeds_vendor.so")
    return {"old": old, "only_old": only_old, "both": both}


@pytest.fixture(scope="module")
def report(scene):
    import rcompat

    return rcompat.upgrade(str(scene["old"]), "/", carry=[str(scene["only_old"]), str(scene["both"])])


def test_both_carried_objects_are_olds_and_fail_on_the_library_only_old_has(report, scene):
    [summary] = [f for f in report.findings if f.id == "UPGRADE-CARRIED"]
    assert summary.status is Status.FAIL and summary.title == "2 of 2 carried objects fail to load in NEW"
    breaks = {f.evidence["object"]: f for f in report.findings if f.id.startswith("UPGRADE-CARRIED-BREAKS-")}
    assert set(breaks) == {str(scene["only_old"]), str(scene["both"])}
    for finding in breaks.values():
        assert "cannot find libvendor.so (needed by libneeds_vendor.so)" in finding.message
        assert finding.evidence["missing_libraries"][0]["name"] == "libvendor.so"


def test_the_cli_reports_instead_of_an_elf_error(scene, cli):
    done = cli("upgrade", str(scene["old"]), "/", "--carry", str(scene["only_old"]))
    assert done.returncode == 1, done.stderr
    assert "libvendor.so" in done.stdout and not done.stderr.startswith("rcompat: error")
