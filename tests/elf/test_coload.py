"""Co-loading predictions checked against the real loader (ctypes.CDLL with RTLD_GLOBAL in a child)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from rcompat.elf import coload


def load_for_real(*paths) -> str:
    """Load `paths` in order with RTLD_GLOBAL in a child; '' when all load, else ld.so's message."""
    code = ("import ctypes, sys\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n        ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n"
            "    except OSError as e:\n        print(e); break\n")
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run([sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True, env=env,
                          timeout=60)
    return proc.stdout.strip()


def test_old_core_loaded_first_breaks_the_user_of_the_new_one(libs):
    pred = coload([libs["core_v1"]], [libs["user"]], ld_library_path="")
    assert not pred.ok
    assert [f.symbol for f in pred.failures] == ["core_new_feature"]
    assert pred.reused == [f"libcore.so => {libs['core_v1']}"]
    real = load_for_real(libs["core_v1"], libs["user"])
    assert real == pred.first_error == f"{libs['user']}: undefined symbol: core_new_feature"


def test_reverse_order_is_predicted_to_work_and_does(libs):
    pred = coload([libs["core_v1"]], [libs["user"]], ld_library_path="")
    assert pred.reverse is not None and pred.reverse.ok
    assert load_for_real(libs["user"], libs["core_v1"]) == ""
    assert [h.kind for h in pred.reverse.hazards] == ["second copy"]  # v1 loads beside v2 but binds to it


def test_local_first_load_still_reuses_the_soname(libs):
    pred = coload([libs["core_v1"]], [libs["user"]], ld_library_path="", global_loaded=False)
    assert [f.symbol for f in pred.failures] == ["core_new_feature"]


def test_interposed_object_with_other_size_is_reported(libs):
    pred = coload([libs["interpose_a"]], [libs["interpose_b"]], ld_library_path="")
    assert pred.ok
    (hazard,) = [h for h in pred.hazards if h.kind == "interposition"]
    assert hazard.evidence["symbol"] == "shared_table"
    assert (hazard.evidence["first_size"], hazard.evidence["second_size"]) == (16, 256)


def test_missing_version_node_is_a_hard_failure(libs, tmp_path):
    import shutil

    shutil.copy(libs["needs_version"], tmp_path / "libneedsversion.so")
    pred = coload([libs["versioned_old"]], [tmp_path / "libneedsversion.so"], ld_library_path="")
    assert pred.failures[0].kind == "version not found"
    assert pred.first_error == load_for_real(libs["versioned_old"], tmp_path / "libneedsversion.so")


def test_real_torch_wheel_with_itself_has_no_hazards(torch_lib):
    pred = coload([torch_lib / "libc10.so"], [torch_lib / "libtorch_python.so"],
                  host=[os.path.realpath(sys.executable)], ld_library_path="")
    assert pred.ok and pred.hazards == [] and pred.reverse.ok
    assert any(r.startswith("libc10.so => ") for r in pred.reused)


def test_cli_coload_exit_codes_and_json(cli, libs):
    bad = cli("elf", "coload", "--ld-library-path", "", str(libs["core_v1"]), "--", str(libs["user"]))
    assert bad.returncode == 1 and "undefined symbol: core_new_feature" in bad.stdout
    assert "reverse order (THEN first): works" in bad.stdout
    good = cli("elf", "coload", "-f", "json", str(libs["user"]), "--", str(libs["core_v1"]))
    assert good.returncode == 0 and json.loads(good.stdout)["ok"] is True


def test_doctor_coload_runs_on_both_frameworks(cli, torch_lib, tmp_path):
    # A stand-in "R torch" install whose libraries are the wheel's own files: one copy, both orders fine.
    lib = tmp_path / "torchhome" / "lib"
    lib.mkdir(parents=True)
    for name in ("libtorch.so", "libtorch_cpu.so", "libc10.so", "libgomp.so.1"):
        os.symlink(torch_lib / name, lib / name)
    proc = cli("doctor", "--only", "elf", "-f", "json", env={"TORCH_HOME": str(tmp_path / "torchhome")})
    report = json.loads(proc.stdout)
    (finding,) = [f for f in report["findings"] if f["id"] == "ELF-COLOAD"]
    assert finding["status"] == "ok", finding
    assert any(t["framework"] == "R torch" for t in report["facts"]["elf"]["targets"])


WHEEL_214 = "/opt/pypi-more/files/torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl"


def test_two_real_torch_builds_first_error_matches_the_real_loader(tmp_path):
    """The reticulate 1895 situation with real files: this venv's torch 2.13.0 (CPU) libtorch is in the
    process, then torch 2.14.1's libtorch_nvshmem.so (a CUDA build, from the second wheel on this disk)
    is loaded. libc10.so and libtorch_cpu.so are reused by soname from 2.13.0; the first error must be
    the one the real ld.so gives, and the c10 symbols 2.14.1 needs are predicted missing."""
    import importlib.util
    import zipfile

    import pytest

    spec = importlib.util.find_spec("torch")
    if spec is None or not os.path.exists(WHEEL_214):
        pytest.skip("needs the torch 2.13.0 install and the torch 2.14.1 wheel on this disk")
    torch_cpu = os.path.join(list(spec.submodule_search_locations)[0], "lib", "libtorch_cpu.so")
    with zipfile.ZipFile(WHEEL_214) as zf:
        zf.extract("torch/lib/libtorch_nvshmem.so", tmp_path)
    nvshmem = tmp_path / "torch" / "lib" / "libtorch_nvshmem.so"

    pred = coload([torch_cpu], [nvshmem], ld_library_path="")
    assert not pred.ok
    assert any(r.startswith("libc10.so => ") and torch_cpu.rsplit("/", 1)[0] in r for r in pred.reused)
    assert pred.first_error == load_for_real(torch_cpu, nvshmem)
    c10_missing = {f.symbol for f in pred.failures if f.kind == "undefined symbol" and f.symbol.startswith("_ZN3c10")}
    assert c10_missing, "2.14.1's c10 CUDA API is absent from 2.13.0's libraries"


def test_objects_ld_so_refuses_are_predicted_with_its_words(libs, gcc, tmp_path):
    """A relocatable .o, and a 32-bit object in a 64-bit process: dlopen() refuses the file itself."""
    src = tmp_path / "o.c"
    src.write_text("int f(void) { return 1; }\n")
    obj = tmp_path / "o.o"
    subprocess.run([gcc, "-c", "-fPIC", str(src), "-o", str(obj)], check=True)
    pred = coload([libs["core_v1"]], [obj], ld_library_path="")
    assert not pred.ok and pred.failures[0].kind == "not loadable"
    assert pred.first_error == load_for_real(libs["core_v1"], obj) == f"{obj}: only ET_DYN and ET_EXEC can be loaded"
    obj32 = tmp_path / "o32.o"
    if subprocess.run([gcc, "-m32", "-c", str(src), "-o", str(obj32)], capture_output=True).returncode == 0:
        pred32 = coload([libs["core_v1"]], [obj32], ld_library_path="")
        assert pred32.first_error == load_for_real(libs["core_v1"], obj32) == f"{obj32}: wrong ELF class: ELFCLASS32"
