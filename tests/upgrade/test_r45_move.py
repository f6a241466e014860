"""The Debian 12 -> 13 move for real: an R package with compiled code built here under R 4.2 and
carried into the Debian 13 root's R 4.5 (the R 4.5 tier, scripts/debian_root.py). `rcompat upgrade`
must FAIL it on the entry point R 4.5's libR.so no longer exports, and the real R 4.5 in the root must
refuse `library()` on the same symbol. The same for a Python extension built here for Python 3.11
and imported by the root's Python 3.13: its Py* references bind against NEW's interpreter."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rcompat.model import Status

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "fixtures/rpkgs/legacyapi"
REMOVED_IN_45 = ("MISSING", "Rf_isFree", "SET_PRINTNAME")  # measured: 164 of R 4.2.2's exports are gone


def r_version(argv: list[str], run=subprocess.run) -> str:
    done = run(argv + ["--version"])
    match = re.search(r"R version (\d+\.\d+\.\d+)", done.stdout)
    return match.group(1) if match else ""


@pytest.fixture(scope="session")
def tier(load_helper):
    builder = REPO / "scripts/debian_root.py"
    if not builder.is_file():
        pytest.skip(f"{builder.relative_to(REPO)} (the R 4.5 tier's root builder) is not in this checkout")
    module = load_helper("debian_root", builder)
    try:
        root = module.ensure_root()
    except module.RootUnavailable as exc:
        pytest.skip(f"the R 4.5 tier cannot run here: {exc}")
    return module, Path(root)


@pytest.fixture(scope="session")
def r45_root(tier, rscript) -> Path:
    module, root = tier
    host = r_version(["R"], lambda a: subprocess.run(a, capture_output=True, text=True, timeout=60))
    inside = r_version(["R"], lambda a: module.run_in_root(root, a, timeout=120))
    if not (host.startswith("4.2.") and inside.startswith("4.5.")):
        pytest.skip(f"this move builds under the host's R 4.2 and carries into the root's R 4.5; here the host "
                    f"has R {host or 'none'} and the root R {inside or 'none'}")
    return root


@pytest.fixture(scope="session")
def carried(r45_root, r_install, gcc, tmp_path_factory) -> dict[str, Path]:
    """legacyapi installed by the host's R 4.2 (it calls MISSING()); rapi.so, R API code linked with
    -lR and RUNPATH /usr/lib/R/lib (so the two objects reach libR.so under two paths)."""
    base = tmp_path_factory.mktemp("r42-build")
    src = base / "src" / "legacyapi"
    shutil.copytree(PACKAGE, src)
    lib = r_install(base / "lib", src)
    rapi = base / "rapi" / "rapi.so"
    rapi.parent.mkdir()
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-o", str(rapi), str(REPO / "fixtures/elf/rapi.c"),
                    "-I/usr/share/R/include", "-L/usr/lib/R/lib", "-lR", "-Wl,-rpath,/usr/lib/R/lib"],
                   check=True, capture_output=True, text=True)
    return {"lib": lib, "so": lib / "legacyapi/libs/legacyapi.so", "rapi": rapi}


@pytest.fixture(scope="session")
def move(carried, r45_root):
    import rcompat

    return rcompat.upgrade("/", str(r45_root), carry=[str(carried["so"]), str(carried["rapi"])])


def by_id(report, fid):
    return [f for f in report.findings if f.id == fid]


def breaks_of(report):
    """The per-object UPGRADE-CARRIED-BREAKS-<OBJECT> findings (one id per carried object)."""
    return [f for f in report.findings if f.id.startswith("UPGRADE-CARRIED-BREAKS-")]


def test_libR_of_r45_lacks_the_entry_points(r45_root):
    from rcompat.elf.read.symbols import symbols

    def exported(path):
        return {s.name for s in symbols(path, defined=True)}

    gone = exported("/usr/lib/R/lib/libR.so") - exported(str(r45_root / "usr/lib/R/lib/libR.so"))
    assert set(REMOVED_IN_45) <= gone and len(gone) > 100, sorted(gone)[:20]


def test_upgrade_fails_the_package_on_the_removed_symbol(move, carried):
    [carried_summary] = by_id(move, "UPGRADE-CARRIED")
    assert carried_summary.status is Status.FAIL, carried_summary.title
    # the root's own R packages byte-identical to this machine's (rappdirs) are carried too, and bind
    assert re.fullmatch(r"1 of \d+ carried objects fail to load in NEW", carried_summary.title), carried_summary.title
    breaks = {f.evidence["object"]: f for f in breaks_of(move)}
    assert set(breaks) == {str(carried["so"])}
    finding = breaks[str(carried["so"])]
    assert "MISSING (provided in OLD by libR.so)" in finding.message
    assert f"{carried['so']}: undefined symbol: MISSING" in finding.message
    assert [u["name"] for u in finding.evidence["undefined_symbols"]] == ["MISSING"]


def test_libR_drift_is_one_finding_with_one_verdict(move, carried):
    [drift] = by_id(move, "UPGRADE-ABI-LIBR")
    assert drift.status is Status.FAIL
    users = {d["object"]: d for d in drift.evidence["dependents"]}
    assert {str(carried["so"]), str(carried["rapi"])} <= set(users)  # via /lib/libR.so and /usr/lib/R/lib
    assert any(b.startswith("MISSING ") for b in users[str(carried["so"])]["broken"])
    assert all(not d["broken"] for obj, d in users.items() if obj != str(carried["so"]))


def test_real_r45_refuses_the_package_on_the_same_symbol(move, carried, tier, r45_root):
    module, _ = tier
    lib = str(carried["lib"])
    done = module.run_in_root(r45_root, ["Rscript", "-e", f"library(legacyapi, lib.loc = '{lib}')"],
                              binds={lib: lib}, timeout=300)
    assert done.returncode != 0, done.stdout
    loader = re.search(r"(\S+legacyapi\.so): undefined symbol: (\w+)", done.stderr)
    assert loader, done.stderr
    [finding] = breaks_of(move)
    assert f"ld.so would say: {loader.group(1)}: undefined symbol: {loader.group(2)}" in finding.message
    # and R 4.2 on this machine loads the very same build
    here = subprocess.run(["Rscript", "-e", f"library(legacyapi, lib.loc = '{lib}'); cat(legacy_missing())"],
                          capture_output=True, text=True, timeout=300)
    assert here.returncode == 0 and here.stdout.strip() == "FALSE", here.stderr


def test_the_cli_exits_1_naming_symbol_and_library(carried, r45_root, cli):
    done = cli("upgrade", "/", str(r45_root), "--carry", str(carried["so"]))
    assert done.returncode == 1, done.stderr
    text = " ".join(done.stdout.split())  # wrapped at 80 columns
    assert f"{carried['so']}: undefined symbol: MISSING" in text and "provided in OLD by libR.so" in text


@pytest.fixture(scope="session")
def extensions(r45_root, gcc, load_helper, tmp_path_factory) -> dict[str, Path]:
    import sysconfig

    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        pytest.skip(f"Python.h not installed ({include}): python3-dev")
    build = load_helper("elf_fixture_build", REPO / "fixtures/elf/build.py")
    return build.build_hosted(tmp_path_factory.mktemp("py311-ext"), include, "/usr/share/R/include")


def test_a_python_311_extension_in_313_fails_on_the_removed_c_api(extensions, tier, r45_root):
    import rcompat

    removed, kept = extensions["pyext_removed"], extensions["pyext"]
    report = rcompat.upgrade("/", str(r45_root), carry=[str(removed), str(kept)])
    breaks = {f.evidence["object"]: f for f in breaks_of(report)}
    assert set(breaks) == {str(removed)}  # pyext.so's PyModule_Create2/PyLong_FromLong bind in 3.13
    finding = breaks[str(removed)]
    assert [u["name"] for u in finding.evidence["undefined_symbols"]] == ["PyUnicode_AsUnicode"]
    assert "PyUnicode_AsUnicode (provided in OLD by libpython3.11" in finding.message or \
        "PyUnicode_AsUnicode (provided in OLD by python3.11" in finding.message, finding.message
    module, _ = tier
    where = str(removed.parent)
    done = module.run_in_root(r45_root, ["python3", "-c", f"import sys; sys.path.insert(0, {where!r}); import pyext"],
                              binds={where: where}, timeout=120)
    assert done.returncode != 0
    assert f"{removed}: undefined symbol: PyUnicode_AsUnicode" in done.stderr, done.stderr
