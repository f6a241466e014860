"""CUDA libraries on disk: the real CUDA 13.0 toolkit, and gcc-built stand-ins for clashing copies."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rcompat.cuda.libs import clashes, cudnn_split, elf_identity, scan, search_locations

TOOLKIT = Path("/usr/local/cuda-13.0")
needs_toolkit = pytest.mark.skipif(not (TOOLKIT / "lib64" / "libcudart.so.13").exists(),
                                   reason="CUDA 13.0 toolkit not at /usr/local/cuda-13.0 (make test installs it)")


def _toolkit_scan():
    return scan([{"origin": "cuda-toolkit", "dir": str(TOOLKIT / "lib64")}])


@needs_toolkit
def test_real_toolkit_libraries_are_found_with_their_sonames():
    libs = {lib.family: lib for lib in _toolkit_scan().libraries}
    assert libs["libcudart"].soname == "libcudart.so.13"
    assert libs["libcupti"].soname == "libcupti.so.13"
    assert libs["libcudart"].version_nodes == ["libcudart.so.13"]
    assert libs["libcudart"].version.startswith("13.")
    if (TOOLKIT / "dist-info").is_dir():  # this toolkit was assembled from NVIDIA's wheels
        assert libs["libcudart"].version_source == "dist-info" and libs["libcudart"].version.count(".") == 2
    # libcudart.so (the development symlink) and libcudart.so.13 are one file, counted once
    assert sorted(os.path.basename(n) for n in libs["libcudart"].names) == ["libcudart.so", "libcudart.so.13"]


@needs_toolkit
def test_default_search_finds_the_toolkit_once_despite_its_symlinked_dirs():
    places = search_locations(env={})
    toolkit_dirs = [p for p in places if p["origin"] == "cuda-toolkit"]
    assert len({os.path.realpath(p["dir"]) for p in toolkit_dirs}) == len(toolkit_dirs) >= 1
    result = scan(places)
    assert sum(1 for lib in result.libraries if lib.soname == "libcudart.so.13") == 1


@needs_toolkit
def test_elf_engine_identity_agrees_with_pyelftools_object_api():
    path = str(TOOLKIT / "lib64" / "libcudart.so.13")
    assert _elf_identity_pyelftools(path) == elf_identity(path)


def _elf_identity_pyelftools(path: str) -> tuple[str | None, list[str], str | None]:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerDefSection

    soname, nodes, build_id = None, [], None
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                soname = next((t.soname for t in section.iter_tags() if t.entry.d_tag == "DT_SONAME"), soname)
            elif isinstance(section, GNUVerDefSection):
                nodes += [next(aux).name for _, aux in section.iter_versions()]
            elif section.name == ".note.gnu.build-id":
                build_id = next((n["n_desc"] for n in section.iter_notes()), None)
    return soname, list(dict.fromkeys(nodes)), build_id



def _shared_lib(gcc, directory: Path, file_name: str, soname: str, body: str, version_node: str | None = None):
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / "stub.c"
    src.write_text(f"int cudaRuntimeGetVersion(int *v) {{ *v = {body}; return 0; }}\n")
    cmd = [gcc, "-shared", "-fPIC", "-o", str(directory / file_name), str(src), f"-Wl,-soname,{soname}"]
    if version_node:
        script = directory / "stub.map"
        script.write_text(f"{version_node} {{ global: *; }};\n")
        cmd.append(f"-Wl,--version-script,{script}")
    subprocess.run(cmd, check=True, capture_output=True)
    src.unlink()
    return directory / file_name


def test_versions_from_file_name_and_soname_and_verdef(gcc, tmp_path):
    _shared_lib(gcc, tmp_path / "a", "libcudart.so.12.4.127", "libcudart.so.12", "12040", "libcudart.so.12")
    os.symlink("libcudart.so.12.4.127", tmp_path / "a" / "libcudart.so.12")
    _shared_lib(gcc, tmp_path / "a", "libnccl.so.2", "libnccl.so.2", "2")
    result = scan([{"origin": "given", "dir": str(tmp_path / "a")}])
    libs = {lib.family: lib for lib in result.libraries}
    assert (libs["libcudart"].version, libs["libcudart"].version_source) == ("12.4.127", "file name")
    assert libs["libcudart"].version_nodes == ["libcudart.so.12"]
    assert len(libs["libcudart"].names) == 2
    assert (libs["libnccl"].version, libs["libnccl"].version_source) == ("2", "SONAME")


def test_hard_links_are_one_build_but_two_builds_of_one_soname_clash(gcc, tmp_path):
    first = _shared_lib(gcc, tmp_path / "one", "libcudart.so.12", "libcudart.so.12", "12010")
    (tmp_path / "two").mkdir()
    os.link(first, tmp_path / "two" / "libcudart.so.12")
    places = [{"origin": "LD_LIBRARY_PATH", "dir": str(tmp_path / "one")},
              {"origin": "pip-wheel", "dir": str(tmp_path / "two")}]
    assert clashes(scan(places)) == []
    _shared_lib(gcc, tmp_path / "three", "libcudart.so.12", "libcudart.so.12", "12040")
    places.append({"origin": "torch-wheel", "dir": str(tmp_path / "three")})
    found = clashes(scan(places))
    assert len(found) == 1 and found[0]["family"] == "libcudart" and found[0]["same_soname"] is True
    assert sorted(o for b in found[0]["builds"] for o in b["origins"]) == ["LD_LIBRARY_PATH", "torch-wheel"]


@needs_toolkit
def test_two_cuda_majors_reachable_are_flagged_with_their_sonames(gcc, tmp_path):
    _shared_lib(gcc, tmp_path / "old", "libcudart.so.11.0", "libcudart.so.11.0", "11080")
    places = [{"origin": "cuda-toolkit", "dir": str(TOOLKIT / "lib64")},
              {"origin": "LD_LIBRARY_PATH", "dir": str(tmp_path / "old")}]
    found = clashes(scan(places))
    assert [c["sonames"] for c in found] == [["libcudart.so.11.0", "libcudart.so.13"]]
    assert found[0]["same_soname"] is False


def test_a_text_file_named_like_a_library_is_recorded_not_fatal(tmp_path):
    (tmp_path / "libcublas.so").write_text("INPUT(libcublas.so.12)\n")  # a linker script
    result = scan([{"origin": "given", "dir": str(tmp_path)}])
    assert len(result.libraries) == 1 and "not an ELF file" in result.libraries[0].error


def test_dangling_symlink_and_missing_dir_are_ignored(tmp_path):
    os.symlink("nowhere.so.1", tmp_path / "libcudnn.so.9")
    result = scan([{"origin": "given", "dir": str(tmp_path)}, {"origin": "given", "dir": str(tmp_path / "no")}])
    assert result.libraries == []


CUDNN9 = ["libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9",
          "libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9", "libcudnn_ops.so.9"]


def _cudnn(gcc, directory: Path, sonames: list[str], version: str = "90000") -> Path:
    for soname in sonames:  # as NVIDIA ships them: the file is named by its SONAME
        _shared_lib(gcc, directory, soname, soname, version)
    return directory


def test_each_cudnn_sub_library_is_its_own_family_so_one_install_is_no_clash(gcc, tmp_path):
    """cuDNN 8's *_infer/_train pairs and cuDNN 9's engines have different SONAMEs: one install of
    either used to read as 'N different builds of one library'."""
    nine = _cudnn(gcc, tmp_path / "nine", CUDNN9 + ["libcudnn_engines_tensor_ir.so.9"])
    eight = _cudnn(gcc, tmp_path / "eight", ["libcudnn_ops_infer.so.8", "libcudnn_ops_train.so.8",
                                             "libcudnn_cnn_infer.so.8", "libcudnn_cnn_train.so.8"])
    result = scan([{"origin": "given", "dir": str(nine)}, {"origin": "given", "dir": str(eight)}])
    families = {lib.family for lib in result.libraries}
    assert {"libcudnn_engines_precompiled", "libcudnn_engines_runtime_compiled", "libcudnn_engines_tensor_ir",
            "libcudnn_ops_infer", "libcudnn_ops_train", "libcudnn_cnn_train", "libcudnn_ops"} <= families
    assert clashes(result) == [] and cudnn_split(result) == []


def test_a_sub_library_missing_beside_cudnn_9_is_named_with_the_copy_the_loader_would_take(gcc, tmp_path):
    """pytorch/pytorch issue 187824's shape: the wheel's cuDNN lacks libcudnn_engines_tensor_ir.so.9 and
    a system cuDNN has one."""
    wheel = _cudnn(gcc, tmp_path / "site-packages" / "nvidia" / "cudnn" / "lib", CUDNN9, "92000")
    system = _cudnn(gcc, tmp_path / "usr-lib", CUDNN9 + ["libcudnn_engines_tensor_ir.so.9"], "92300")
    result = scan([{"origin": "pip-wheel", "dir": str(wheel)}, {"origin": "system", "dir": str(system)}])
    split = cudnn_split(result)
    assert [s["directory"] for s in split] == [str(wheel)]
    assert split[0]["origin"] == "pip-wheel" and "libcudnn_graph.so.9" in split[0]["beside"]
    assert split[0]["taken_from_elsewhere"] == [
        {"soname": "libcudnn_engines_tensor_ir.so.9", "path": str(system / "libcudnn_engines_tensor_ir.so.9"),
         "version": "9", "origin": "system"}]
    (wheel / "libcudnn_engines_tensor_ir.so.9").symlink_to(system / "libcudnn_engines_tensor_ir.so.9")
    assert cudnn_split(scan([{"origin": "pip-wheel", "dir": str(wheel)},
                             {"origin": "system", "dir": str(system)}])) == []  # beside it now, by a link


def test_the_doctor_warns_of_a_split_cudnn_on_ld_library_path(gcc, tmp_path, monkeypatch):
    from rcompat.areas import run_doctor

    wheel = _cudnn(gcc, tmp_path / "wheel", CUDNN9)
    other = _cudnn(gcc, tmp_path / "other", ["libcudnn_engines_tensor_ir.so.9"])
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{wheel}:{other}")
    report = run_doctor(["cuda"], timeout=120, options={"r_verify": False})
    split = [f for f in report.findings if f.id == "CUDA-CUDNN-SPLIT"]
    assert [f.status.value for f in split] == ["warn"]
    assert str(other / "libcudnn_engines_tensor_ir.so.9") in split[0].message
    assert "SUBLIBRARY_VERSION_MISMATCH" in split[0].message and "LD_LIBRARY_PATH" in split[0].remedy
