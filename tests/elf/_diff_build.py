"""Build the abi-diff/patch-diff fixture libraries from fixtures/elf/abi with gcc (see its README)."""
from __future__ import annotations

import subprocess
import zipfile
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "elf" / "abi"
WHEEL_OLD = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
WHEEL_NEW = Path("/opt/pypi-more/files/torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl")


def _gcc(gcc: str, out: Path, *args: str) -> Path:
    subprocess.run([gcc, "-shared", "-fPIC", "-O2", "-o", str(out), *args], check=True, capture_output=True, text=True)
    return out


def build_demo(gcc: str, where: Path) -> dict[str, Path]:
    where.mkdir(parents=True, exist_ok=True)
    f = FIXTURES
    v1 = _gcc(gcc, where / "libdemo.so.1", str(f / "demo_v1.c"), f"-Wl,--version-script={f / 'demo_v1.map'}",
              "-Wl,-soname,libdemo.so.1")
    v2 = _gcc(gcc, where / "libdemo.so.2", str(f / "demo_v2.c"), f"-Wl,--version-script={f / 'demo_v2.map'}",
              "-Wl,-soname,libdemo.so.2", "-Wl,--no-as-needed", "-lm", "-Wl,--as-needed")
    inserted = _gcc(gcc, where / "libdemo_insert.so.1", "-DDEMO_INSERT", str(f / "demo_v1.c"),
                    f"-Wl,--version-script={f / 'demo_v1.map'}", "-Wl,-soname,libdemo.so.1")
    user_old = _gcc(gcc, where / "libuser_old_api.so", str(f / "user_old_api.c"), str(v1))
    user_stable = _gcc(gcc, where / "libuser_stable.so", str(f / "user_stable.c"), str(v1))
    return {"v1": v1, "v2": v2, "inserted": inserted, "user_old_api": user_old, "user_stable": user_stable}


def extract_from_wheel(wheel: Path, member: str, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf, zf.open(member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, 4 << 20)
    return dest
