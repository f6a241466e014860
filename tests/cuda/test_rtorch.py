"""R torch's CUDA view, through the R engine's real facts: a fixture R torch 0.14.2 installed with
`R CMD INSTALL`, carrying gcc-built stand-ins for Lantern and the CUDA runtime in its lib/ dir."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rcompat.areas import run_doctor

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rtorch_lib(tmp_path_factory, gcc, r_install):
    root = tmp_path_factory.mktemp("rtorch")
    pkg = root / "stage" / "torch"
    shutil.copytree(REPO / "fixtures" / "rpkgs" / "torch", pkg)
    desc = pkg / "DESCRIPTION"
    desc.write_text(re.sub(r"^Version:.*$", "Version: 0.14.2", desc.read_text(), flags=re.M))
    libdir = pkg / "inst" / "lib"
    libdir.mkdir(parents=True)
    src = root / "stub.c"
    src.write_text("int rcompat_stub(void) { return 0; }\n")
    for name, soname in (("liblantern.so", "liblantern.so"), ("libcudart.so.12.4.127", "libcudart.so.12")):
        subprocess.run([gcc, "-shared", "-fPIC", "-o", str(libdir / name), str(src), f"-Wl,-soname,{soname}"],
                       check=True, capture_output=True)
    return r_install(root / "lib", pkg)


def test_doctor_reads_r_torch_from_the_r_engine_and_finds_its_cuda_runtime(rtorch_lib, nvml_fake):
    report = run_doctor(["cuda"], timeout=120, options={"r_lib_paths": [str(rtorch_lib)], "r_verify": False,
                                                         "nvml": nvml_fake.Nvml(driver="550.54.14")})
    found = {f.id: f for f in report.findings}
    rt = found["CUDA-RTORCH"]
    assert rt.status.value == "ok", rt
    assert rt.title == "R torch 0.14.2: LibTorch 2.5.1, CUDA builds cpu, 11.8, 12.4"
    facts = report.facts["cuda"]
    assert facts["rtorch"]["lib_dirs"] == [str(rtorch_lib / "torch" / "lib")]
    runtime = [lib for lib in facts["libraries"]["libraries"] if lib["origin"] == "r-torch"]
    assert [(lib["soname"], lib["version"]) for lib in runtime] == [("libcudart.so.12", "12.4.127")]
    assert facts["stack"]["rtorch"] == "0.14.2"
    assert found["CUDA-MATRIX-RTORCH"].status.value == "ok"
    assert facts["rtorch"]["status"] == "installed" and facts["rtorch"]["lantern_installed"] is True
