"""ELF engine fixtures: the C sources in fixtures/elf compiled once per test session."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TORCH_LIB = REPO / ".venv/lib/python3.11/site-packages/torch/lib"


@pytest.fixture(scope="session")
def elf_build(load_helper):
    return load_helper("elf_fixture_build", REPO / "fixtures/elf/build.py")


@pytest.fixture(scope="session")
def diff_build(load_helper):
    """tests/elf/_diff_build.py: the abi-diff/patch-diff fixtures and the torch wheels they read."""
    return load_helper("_diff_build", Path(__file__).with_name("_diff_build.py"))


@pytest.fixture(scope="session")
def demo(gcc, tmp_path_factory, diff_build) -> dict[str, Path]:
    """libdemo builds for abi-diff and patch-diff, compiled once per session (tests copy, never modify)."""
    return diff_build.build_demo(gcc, tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="session")
def libs(gcc, tmp_path_factory, elf_build) -> dict[str, Path]:
    return elf_build.build_all(tmp_path_factory.mktemp("elf-fixtures"))


@pytest.fixture(scope="session")
def lib32(gcc, tmp_path_factory, elf_build) -> Path:
    path = elf_build.build_m32(tmp_path_factory.mktemp("elf-m32"))
    if path is None:
        pytest.skip("gcc -m32 cannot build a 32-bit shared object here (no multilib gcc)")
    return path


@pytest.fixture(scope="session")
def torch_lib() -> Path:
    from rcompat.elf.targets import python_torch

    fw = python_torch()
    if fw is None or "libtorch_cpu" not in fw.libraries:
        pytest.skip("the torch wheel is not installed in this environment")
    return Path(fw.lib_dir)


