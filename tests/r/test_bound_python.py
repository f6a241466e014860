"""reticulate's Python judged against itself (issue 20.8): the facts below are the ones r_facts.R and
rcompat.r.runtime.bound_python gathered on a machine where a pyenv shim made py_config() report 3.11.2
beside libpython 3.11.7 and 'numpy: [NOT FOUND]'."""
import sys
from pathlib import Path

from rcompat.data import load_toml
from rcompat.r.bound_python import TABLE, disagreement, disagreement_finding, module_findings
from rcompat.r.runtime import bound_python, libpython_interpreter

SHIM_CASE = {
    "method": "py_discover_config", "python": "/root/.pyenv/shims/python3",
    "libpython": "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so",
    "pythonhome": "/root/.pyenv/versions/3.11.7:/root/.pyenv/versions/3.11.7",
    "version": "3.11", "version_string": "3.11.2 (main, Apr 28 2025, 14:11:48) [GCC 12.2.0]",
}
SHIM_PYTHON = {"python_packages": {"numpy": "2.4.6"}, "python_version": "3.11.7",
               "executable": "/root/.pyenv/versions/3.11.7/bin/python3",
               "libpython_interpreter": "/root/.pyenv/versions/3.11.7/bin/python3.11"}
ROWS = load_toml(TABLE, "module")


def test_a_python_whose_version_and_libpython_disagree_is_a_warning_naming_both_and_the_pin():
    found = disagreement(SHIM_CASE, SHIM_PYTHON)
    assert found and set(found["versions"].values()) == {"3.11.2", "3.11.7"}
    f = disagreement_finding(SHIM_CASE, SHIM_PYTHON, found)
    assert f.id == "R-RETICULATE-PYTHON" and f.status.value == "warn"
    assert "3.11.2" in f.message and "3.11.7" in f.message and SHIM_CASE["libpython"] in f.message
    assert "RETICULATE_PYTHON=/root/.pyenv/versions/3.11.7/bin/python3.11" in f.remedy


def test_agreeing_facts_raise_nothing():
    ret = {**SHIM_CASE, "version_string": "3.11.7 (main)"}
    assert disagreement(ret, SHIM_PYTHON) is None
    assert disagreement({**SHIM_CASE, "version_string": None}, {}) is None  # nothing to compare


def test_numpy_reticulate_cannot_see_is_reported_with_the_pin_and_a_missing_one_with_the_install():
    blind = module_findings(SHIM_CASE, SHIM_PYTHON, {"reticulate"}, ROWS)
    assert [f.id for f in blind] == ["R-RETICULATE-NUMPY"] and blind[0].status.value == "warn"
    assert "NOT FOUND" in blind[0].message and "Pin reticulate to /root/.pyenv/versions/3.11.7/bin/python3.11" in blind[0].remedy
    lacking = module_findings({**SHIM_CASE, "numpy": "2.4.6"}, {**SHIM_PYTHON, "python_packages": {}},
                              {"reticulate", "keras3"}, ROWS)
    assert {f.id: f.status.value for f in lacking} == {"R-RETICULATE-NUMPY": "warn", "R-KERAS3-PYTHON": "warn"}
    assert "-m pip install keras" in lacking[1].remedy
    fine = module_findings({**SHIM_CASE, "numpy": "2.4.6"}, SHIM_PYTHON, {"reticulate"}, ROWS)
    assert [f.status.value for f in fine] == ["ok"]


def test_the_interpreter_beside_a_real_libpython_is_found_and_probed():
    prefix = Path(sys.base_prefix)
    mm = f"{sys.version_info.major}.{sys.version_info.minor}"
    libpython = prefix / "lib" / f"libpython{mm}.so"
    assert libpython_interpreter(str(libpython)) == (str(prefix / "bin" / f"python{mm}")
                                                     if (prefix / "bin" / f"python{mm}").is_file() else None)
    assert libpython_interpreter("/nowhere/libc.so.6") is None
    found = bound_python({"python": sys.executable, "libpython": str(libpython)}, timeout=30)
    assert found["python_version"] == sys.version.split()[0]
    assert "numpy" in found["python_packages"]
