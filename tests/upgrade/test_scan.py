"""rcompat upgrade on real roots: torch 2.13.0+cpu (OLD) → torch 2.14.1+cu130 (NEW), built from the real
wheels (fixtures/upgrade/build.py, members cached outside the repository), with extensions compiled here
by g++ against OLD's libtorch. The predictions are checked against the real loader where one can be run."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rcompat.model import Status

REPO = Path(__file__).resolve().parents[2]
SITE = "/usr/local/lib/python3.11/dist-packages"
LANTERN = "/usr/local/lib/R/site-library/torch/lib/liblantern.so"
RUNTIME = ("libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2")
OLD_API, STABLE, OLD_ONLY = f"{SITE}/demo_ext/old_api.so", f"{SITE}/demo_ext/stable.so", f"{SITE}/old_only_ext/old_api.so"


@pytest.fixture(scope="session")
def builder(load_helper):
    return load_helper("upgrade_fixture_build", REPO / "fixtures/upgrade/build.py")


@pytest.fixture(scope="session")
def roots(builder, gcc, tmp_path_factory) -> dict[str, Path]:
    if not builder.WHEEL_OLD.is_file() or not builder.WHEEL_NEW.is_file():
        pytest.skip(f"the torch wheels are not on disk ({builder.WHEEL_OLD}, {builder.WHEEL_NEW})")
    if not all((builder.CUDA_TOOLKIT / m).exists() for m in builder.CUDA_RUNTIME):
        pytest.skip(f"the CUDA 13.0 runtime NEW's torch loads is not installed ({builder.CUDA_TOOLKIT})")
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not installed (make test installs it with build-essential)")
    return builder.build_scenario(tmp_path_factory.mktemp("upgrade"), gcc=gcc, gxx=gxx)


@pytest.fixture(scope="session")
def report(roots):
    import rcompat

    return rcompat.upgrade(str(roots["old"]), str(roots["new"]), driver="575.57", carry=[OLD_ONLY])


def by_id(report, fid):
    return [f for f in report.findings if f.id == fid]


def breaks(report, inside):
    return [f for f in report.findings
            if f.id.startswith("UPGRADE-CARRIED-BREAKS-") and f.evidence["object"] == inside]


def test_an_extension_using_removed_api_fails_and_names_what_old_provided(report):
    [finding] = breaks(report, OLD_API)
    assert finding.status is Status.FAIL
    assert "at::Context::ckSupported()" in finding.message
    assert "provided in OLD by libtorch_cpu.so" in finding.message
    assert f"{OLD_API}: undefined symbol: _ZN2at7Context11ckSupportedEv" in finding.message
    assert finding.evidence["undefined_symbols"][0]["old_provider"] == f"{SITE}/torch/lib/libtorch_cpu.so"
    assert finding.remedy and finding.source
    assert report.exit_code() == 1


def test_an_extension_using_stable_api_is_rebound_and_passes(report):
    carried = by_id(report, "UPGRADE-CARRIED")[0]
    assert STABLE in carried.evidence["rebound"]  # its closure changed, so it was really rebound
    assert breaks(report, STABLE) == []
    # the unchanged runtime (libc, libstdc++: same bytes, same closure) was not rebound needlessly
    assert "/usr/lib/x86_64-linux-gnu/libstdc++.so.6" not in carried.evidence["rebound"]
    assert carried.evidence["unchanged_closure"] >= 10


def test_the_real_loader_agrees(roots):
    # Load the carried extensions with ld.so itself (a child process; nothing of the roots is run, only
    # mapped): NEW's libtorch_cpu lacks the symbol, OLD's has it, and the stable one loads in both.
    code = ("import ctypes, json, sys\nout = {}\nfor p in sys.argv[1:]:\n    try:\n        ctypes.CDLL(p)\n"
            "        out[p] = 'ok'\n    except OSError as e:\n        out[p] = str(e)\nprint(json.dumps(out))")
    result = {}
    for side in ("old", "new"):  # one process per root: a second libtorch_cpu.so would be reused by soname
        paths = [str(roots[side]) + obj for obj in (STABLE, OLD_API)]
        done = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True, timeout=120)
        result.update(json.loads(done.stdout))
    assert result[str(roots["old"]) + OLD_API] == "ok"
    assert result[str(roots["old"]) + STABLE] == "ok"
    assert result[str(roots["new"]) + STABLE] == "ok"
    assert "undefined symbol: _ZN2at7Context11ckSupportedEv" in result[str(roots["new"]) + OLD_API]


def test_r_torch_lantern_next_to_new_python_torch_is_predicted_to_fail(report, roots):
    carried = by_id(report, "UPGRADE-CARRIED")[0]
    assert LANTERN not in carried.evidence["rebound"]  # alone, with its own LibTorch, it is unchanged
    [coload] = by_id(report, "UPGRADE-COLOAD")
    assert coload.status is Status.FAIL
    assert f"{LANTERN}: undefined symbol: _ZN2at7Context11ckSupportedEv" in coload.evidence["introduced"]
    # the real loader: Python torch's libtorch_cpu first, then Lantern, which reuses it by soname
    code = ("import ctypes, sys\nctypes.CDLL(sys.argv[1], ctypes.RTLD_GLOBAL)\ntry:\n    ctypes.CDLL(sys.argv[2])\n"
            "    print('ok')\nexcept OSError as e:\n    print(e)")
    seen = {}
    for side in ("old", "new"):
        done = subprocess.run([sys.executable, "-c", code, f"{roots[side]}{SITE}/torch/lib/libtorch_cpu.so",
                               f"{roots[side]}{LANTERN}"], capture_output=True, text=True, timeout=120)
        seen[side] = done.stdout.strip()
    assert seen["old"] == "ok"
    assert "undefined symbol: _ZN2at7Context11ckSupportedEv" in seen["new"]


def test_carry_maps_an_old_only_object_into_new(report):
    [finding] = breaks(report, OLD_ONLY)
    assert finding.evidence["carried"] == "--carry"
    # $ORIGIN/../torch/lib was looked up inside NEW, so NEW's libtorch_cpu was bound, not OLD's
    assert "at::Context::ckSupported()" in finding.message


def test_a_problem_present_in_both_roots_is_pre_existing_not_a_failure(report):
    [pre] = by_id(report, "UPGRADE-CARRIED-PREEXISTING")
    assert pre.status is Status.WARN and "pre-existing" in pre.title
    assert pre.evidence["objects"] == {"/opt/app/lib/libneeds_vendor.so": "cannot find libvendor.so"}
    assert not any("libneeds_vendor" in f.title + f.message for f in report.findings if f.status is Status.FAIL)


def test_new_frameworks_newly_need_cuda_libraries_new_lacks(report):
    [needed] = by_id(report, "UPGRADE-NEWLY-NEEDED")
    assert needed.status is Status.FAIL
    gaps = {g["soname"]: g["needed_by"] for g in needed.evidence["introduced"]}
    assert "libtorch_cuda.so" in gaps["libcublas.so.13"]
    assert "libcudart.so.13" not in gaps  # NEW ships it (nvidia/cu13/lib, on torch's RPATH)


def test_abi_drift_counts_only_what_hits_carried_objects(report):
    [c10] = by_id(report, "UPGRADE-ABI-LIBC10")
    assert c10.status is Status.FAIL
    assert "vtable for c10::GeneratorImpl (size: 144 → 152 bytes" in c10.message
    [cpu] = by_id(report, "UPGRADE-ABI-LIBTORCH-CPU")
    hit = {d["object"]: d["broken"] for d in cpu.evidence["dependents"]}
    assert hit[STABLE] == [] and any("ckSupported" in b for b in hit[OLD_API])
    assert cpu.evidence["counts"]["removed_functions"] > 0


def test_stacks_and_driver(report):
    from rcompat.cuda.tables import load_tables

    [torch] = by_id(report, "UPGRADE-STACK-TORCH")
    assert torch.status is Status.WARN and torch.title == "torch: 2.13.0+cpu → 2.14.1+cu130"
    [same] = by_id(report, "UPGRADE-STACK")
    assert any(s.startswith("glibc 2.") for s in same.evidence["unchanged"])
    # the general remedy of a changed component is said once; the other warnings point to it (issue 20.5)
    remedies = [f.remedy for f in report.findings if f.id.startswith("UPGRADE-STACK-") and f.remedy]
    assert sum("rebuild any that fail" in r for r in remedies) == 1
    [driver] = by_id(report, "UPGRADE-DRIVER")
    assert driver.status is Status.FAIL
    assert driver.evidence["min_driver"] == load_tables().min_driver(driver.evidence["cuda"])


def test_r_stack_read_from_description_files_matches_real_r(report, rscript):
    version = subprocess.run([rscript, "-e", "cat(as.character(getRversion()))"], capture_output=True,
                             text=True, timeout=60).stdout.strip()
    [same] = by_id(report, "UPGRADE-STACK")
    assert f"R {version}" in same.evidence["unchanged"]
    [ret] = by_id(report, "UPGRADE-STACK-R-PACKAGE-RETICULATE")
    assert ret.title.startswith("R package reticulate: added in NEW")


def test_identical_roots_introduce_nothing(roots, cli):
    done = cli("upgrade", str(roots["old"]), str(roots["old"]), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["summary"]["counts"]["fail"] == 0
    carried = next(f for f in data["findings"] if f["id"] == "UPGRADE-CARRIED")
    assert carried["status"] == "ok" and carried["evidence"]["rebound"] == []
    assert data["summary"]["exit_code_strict"] == 1  # the pre-existing warn is still reported


def test_empty_root_is_a_skip(tmp_path, roots, cli):
    (tmp_path / "empty").mkdir()
    done = cli("upgrade", str(tmp_path / "empty"), str(roots["new"]))
    assert done.returncode == 0, done.stderr
    assert "SKIP  UPGRADE-ROOTS" in done.stdout and "holds no ELF object" in done.stdout


def test_bad_carry_path_is_a_one_line_error(tmp_path, cli):
    root = tmp_path / "r"
    (root / "lib").mkdir(parents=True)
    shutil.copy("/usr/lib/x86_64-linux-gnu/libc.so.6", root / "lib")
    done = cli("upgrade", str(root), str(root), "--carry", "/opt/nothing.so")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--carry /opt/nothing.so" in done.stderr
    missing = cli("upgrade", str(tmp_path / "absent"), str(root))
    assert missing.returncode == 2 and missing.stderr.startswith("rcompat: error:")


def test_image_tarball_with_a_whiteout_layer_against_a_directory(tmp_path, roots, cli, load_helper):
    images = load_helper("upgrade_images", Path(__file__).with_name("_images.py"))
    lib = "usr/lib/x86_64-linux-gnu"
    runtime = [images.file(f"{lib}/{n}", roots["old"] / lib / n, 0o755) for n in RUNTIME]
    vendor = roots["new"] / "opt/app/lib/libneeds_vendor.so"
    base = images.write_layer(tmp_path / "l1.tar", runtime + [
        images.file("opt/app/lib/libneeds_vendor.so", vendor, 0o755),
        images.file("opt/app/lib/libgone.so", vendor, 0o755)])
    top = images.write_layer(tmp_path / "l2.tar", [images.whiteout("opt/app/lib/libgone.so")])
    tarball = images.docker_save(tmp_path / "old.tar", [([base, top], {"LD_LIBRARY_PATH": "/opt/app/lib"},
                                                          ["demo/old:1"])])
    new = tmp_path / "new"
    for name in RUNTIME:
        (new / lib).mkdir(parents=True, exist_ok=True)
        shutil.copy(roots["old"] / lib / name, new / lib / name)
    (new / "opt/app/lib").mkdir(parents=True)
    shutil.copy(vendor, new / "opt/app/lib/libneeds_vendor.so")
    done = cli("upgrade", str(tarball), str(new), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    rootsf = next(f for f in data["findings"] if f["id"] == "UPGRADE-ROOTS")
    assert rootsf["evidence"]["old_objects"] == 4 == rootsf["evidence"]["new_objects"]  # libgone.so whited out
    assert "demo/old:1" in rootsf["evidence"]["old"]
    [pre] = [f for f in data["findings"] if f["id"] == "UPGRADE-CARRIED-PREEXISTING"]
    assert list(pre["evidence"]["objects"]) == ["/opt/app/lib/libneeds_vendor.so"]

    # --extract keeps the image's merged root (only the image: NEW is a directory, read in place)
    kept = tmp_path / "kept"
    again = cli("upgrade", str(tarball), str(new), "--extract", str(kept), "--format", "json")
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in kept.iterdir()) == ["old"]
    assert (kept / "old/opt/app/lib/libneeds_vendor.so").is_file()
    assert not (kept / "old/opt/app/lib/libgone.so").exists()


def test_without_a_driver_the_driver_check_skips_with_what_to_do(roots):
    from rcompat.cuda.nvml import probe_nvml
    from rcompat.elf.link.root import Root
    from rcompat.upgrade_scan.stack import probe_stack
    from rcompat.upgrade_scan.stack_checks import driver_finding

    if probe_nvml().status == "ok":
        pytest.skip("this machine has an NVIDIA driver: test_driver_of_this_machine covers it")
    finding = driver_finding(probe_stack(Root(str(roots["new"]))), None)
    assert finding.status is Status.SKIP and "--driver VERSION" in finding.message


@pytest.mark.gpu
def test_driver_of_this_machine(roots):
    from rcompat.cuda.nvml import probe_nvml
    from rcompat.elf.link.root import Root
    from rcompat.upgrade_scan.stack import probe_stack
    from rcompat.upgrade_scan.stack_checks import driver_finding

    facts = probe_nvml()
    if facts.status != "ok":
        pytest.skip(f"no NVIDIA driver on this machine: {facts.reason}")
    finding = driver_finding(probe_stack(Root(str(roots["new"]))), None)
    assert finding.evidence["given_by"] == "NVML (this machine)"
    assert finding.evidence["driver"] == facts.driver_version
    assert finding.status in (Status.OK, Status.WARN, Status.FAIL)


def test_ids_are_unique_and_no_sentence_repeats(report):
    """docs/report-schema.md's id rule and issue 20.5, on the real upgrade report."""
    import collections

    from rcompat.renderers import render

    ids = [f.id for f in report.findings]
    assert len(ids) == len(set(ids)), {i: n for i, n in collections.Counter(ids).items() if n > 1}
    remedies = [f.remedy for f in report.findings if f.remedy]
    twice = {r for r, n in collections.Counter(remedies).items() if n > 1}
    assert not twice, f"said twice: {twice}"
    text = render(report, "text")
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in text.splitlines())
