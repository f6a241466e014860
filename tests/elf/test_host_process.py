"""Extension modules judged as the process that loads them would: Py* references bind to the
interpreter that imports the module (found, or named by --host as a path, a command or a soname), R
API references to libR.so. Real objects only: the torch wheel in .venv, gcc-built extensions imported
by the real python, the real libR.so."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

R_INCLUDE = Path("/usr/share/R/include")


@pytest.fixture(scope="session")
def hosted(gcc, elf_build, tmp_path_factory) -> dict[str, Path]:
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file() or not (R_INCLUDE / "Rinternals.h").is_file():
        pytest.skip(f"Python.h ({include}) or R's headers ({R_INCLUDE}) not installed (python3-dev, r-base-dev)")
    return elf_build.build_hosted(tmp_path_factory.mktemp("hosted"), include, str(R_INCLUDE))


def missing_json(cli, *args):
    done = cli("elf", "missing", *map(str, args), "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_a_healthy_torch_wheel_has_nothing_missing(cli, torch_lib):
    rc, data = missing_json(cli, torch_lib / "libtorch_python.so")
    assert rc == 0 and data["missing_symbols"] == [], data["missing_symbols"][:3]
    # the interpreter whose site-packages holds torch: this venv's python
    venv_python = Path(sys.prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    assert data["hosts"] == [str(venv_python)], data["hosts"]
    assert data["bound"] > 7000  # the 328 Py* references are bound, not skipped
    text = cli("elf", "missing", str(torch_lib / "libtorch_python.so"))
    assert text.returncode == 0 and ", 0 missing," in text.stdout.splitlines()[0]
    assert f"host: {venv_python}" in text.stdout


def test_coload_of_the_healthy_wheel_works(cli, torch_lib):
    done = cli("elf", "coload", str(torch_lib / "libtorch_cpu.so"), "--", str(torch_lib / "libtorch_python.so"))
    assert done.returncode == 0, done.stdout
    assert done.stdout.splitlines()[0].endswith(": works")
    assert "undefined symbol: Py" not in done.stdout


def test_the_real_interpreter_agrees_with_the_prediction(hosted, cli):
    for name, expect_ok in (("pyext", True), ("pyext_ghost", False)):
        ext = hosted[name]
        rc, data = missing_json(cli, ext)
        imported = subprocess.run([sys.executable, "-c", "import pyext; print(pyext.answer())"],
                                  cwd=ext.parent, capture_output=True, text=True, timeout=60)
        assert (imported.returncode == 0) is expect_ok, imported.stderr
        assert (rc == 0) is expect_ok
        if expect_ok:
            assert imported.stdout.strip() == "42" and data["missing_symbols"] == []
        else:
            [lost] = data["missing_symbols"]
            assert lost["name"] == "PyRcompat_NoSuchFunction"
            assert lost["loader_message"] in imported.stderr  # "…/pyext.so: undefined symbol: PyRcompat_…"


def test_host_takes_a_command_name_a_soname_and_a_path(hosted, cli):
    from rcompat.elf.link.hostproc import find_command

    python3 = find_command("python3")  # the first ELF python3 on PATH (a pyenv shim is a script)
    assert python3 and open(python3, "rb").read(4) == b"\x7fELF"
    for spec, expect in (("python3", python3), ("libR.so", "/lib/libR.so"), (python3, python3)):
        target = hosted["pyext"] if spec != "libR.so" else hosted["rapi"]
        rc, data = missing_json(cli, target, "--host", spec)
        assert rc == 0 and data["missing_symbols"] == [], (spec, data["missing_symbols"])
        if spec != "libR.so":
            assert data["hosts"] == [expect]
        else:
            assert os.path.realpath(data["hosts"][0]) == os.path.realpath("/usr/lib/R/lib/libR.so")


def test_both_kinds_of_python_build_provide_the_c_api(hosted, cli):
    """/usr/bin/python3.11 exports the C API from its own .dynsym (libpython linked in statically);
    pyenv's python links libpython3.11.so.1.0 (RUNPATH): either binds the extension."""
    statics = [p for p in ("/usr/bin/python3.11",) if os.path.exists(p)]
    shared = [p for p in (os.path.realpath(sys.executable),) if p not in statics]
    for python in statics + shared:
        rc, data = missing_json(cli, hosted["pyext"], "--host", python)
        assert rc == 0 and data["missing_symbols"] == [], python
    if statics:
        listing = cli("elf", "symbols", statics[0], "--defined")
        assert " T PyLong_FromLong" in listing.stdout


def test_r_api_binds_against_libR_and_a_real_gap_stays_missing(hosted, cli):
    rc, data = missing_json(cli, hosted["rapi"])
    assert rc == 0 and data["missing_symbols"] == []
    assert os.path.basename(data["hosts"][0]) == "libR.so"
    rc, data = missing_json(cli, hosted["rapi_ghost"])
    assert rc == 1 and [m["name"] for m in data["missing_symbols"]] == ["Rf_rcompatNoSuchFunction"]


def test_a_host_that_names_nothing_is_a_one_line_error(hosted, cli):
    for spec in ("no-such-interpreter-xyz", "libno-such-xyz.so", "./no/such/file"):
        done = cli("elf", "missing", str(hosted["pyext"]), "--host", spec)
        assert done.returncode == 2, (spec, done.stdout)
        assert done.stderr.count("\n") == 1 and f"--host {spec}" in done.stderr


def test_python_of_a_site_packages_layout(tmp_path):
    """The interpreter of the installation whose site-packages holds the module, inside a root."""
    from rcompat.elf.link.hostproc import python_for

    root = tmp_path / "root"
    (root / "opt/venv/bin").mkdir(parents=True)
    (root / "usr/bin").mkdir(parents=True)
    shutil.copy(sys.executable, root / "usr/bin/python3.13")
    os.symlink("/usr/bin/python3.13", root / "opt/venv/bin/python3.13")
    shutil.copy(sys.executable, root / "usr/bin/python3")
    assert python_for("/opt/venv/lib/python3.13/site-packages/torch/lib/libtorch_python.so", root) == \
        "/opt/venv/bin/python3.13"
    assert python_for("/usr/local/lib/python3.13/dist-packages/x/_x.so", root) == "/usr/bin/python3.13"
    assert python_for("/usr/lib/python3/dist-packages/x/_x.so", root) == "/usr/bin/python3"
    assert python_for("/srv/app/_x.so", root) == "/usr/bin/python3"  # not in a site dir: python3 on PATH


def test_the_doctor_binds_python_torch_against_the_interpreter_holding_it(torch_lib):
    """The doctor's ELF-UNDEFINED runs missing(path, host=fw.host) on each of torch's libraries."""
    from rcompat.elf.link.missing import missing
    from rcompat.elf.targets import python_torch

    fw = python_torch()
    assert fw.host == [str(Path(sys.prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}")]
    for path in fw.libraries.values():
        assert missing(path, host=fw.host).missing == [], path
