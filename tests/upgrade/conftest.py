"""Fixtures of the image-reading tests: the writer of hand-made layers (_images.py) and the ELF objects
they carry, compiled once from fixtures/elf."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def images(load_helper):
    return load_helper("upgrade_images", Path(__file__).with_name("_images.py"))


@pytest.fixture(scope="session")
def objs(gcc, tmp_path_factory) -> dict[str, Path]:
    """libleaf.so, libmid.so (needs libleaf) and leaf.o (ELF, but relocatable) from fixtures/elf."""
    out = tmp_path_factory.mktemp("upgrade-objs")
    src = REPO / "fixtures/elf"

    def cc(*args: str) -> None:
        subprocess.run([gcc, *args], check=True, capture_output=True, text=True)

    cc("-shared", "-fPIC", "-O1", "-o", str(out / "libleaf.so"), str(src / "leaf.c"), "-Wl,-soname,libleaf.so.1")
    cc("-shared", "-fPIC", "-O1", "-o", str(out / "libmid.so"), str(src / "mid.c"), f"-L{out}", "-lleaf",
       "-Wl,-soname,libmid.so")
    cc("-c", "-fPIC", "-o", str(out / "leaf.o"), str(src / "leaf.c"))
    return {"leaf": out / "libleaf.so", "mid": out / "libmid.so", "obj": out / "leaf.o"}
