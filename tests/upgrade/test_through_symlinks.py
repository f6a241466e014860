"""A member whose path goes through a symlink an earlier member or layer made lands where the symlink
leads, resolved inside the root (chroot-style, as containerd applies layers and podman merges them:
tests/upgrade/test_real_images.py checks podman's own merge); never outside the root."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rcompat.upgrade_scan.image.source import open_source

ELF = Path(os.path.realpath(shutil.which("true") or "/bin/true"))


def _layer(images, case: str, outside: Path) -> list:
    i = images
    if case == "absolute":
        return [i.symlink("lib", str(outside)), i.file("lib/evil.so", ELF)]
    if case == "relative":
        return [i.directory("usr/"), i.symlink("usr/lib", "../../../outside"), i.file("usr/lib/evil.so", ELF)]
    if case == "non-elf":  # left out or not, a path through a symlink stays in the root
        return [i.symlink("lib", str(outside)), i.file("lib/notes.txt", b"x")]
    if case == "after-skip":  # lib/ was seen absent before the symlink came
        return [i.file("lib/a.txt", b"x"), i.symlink("lib", str(outside)), i.file("lib/b.so", ELF)]
    if case == "chain":  # lib -> usr/lib, usr/lib -> /opt/real: two hops, the second absolute
        return [i.symlink("lib", "usr/lib"), i.directory("usr/"), i.symlink("usr/lib", "/opt/real"),
                i.file("lib/x/deep.so", ELF)]
    raise AssertionError(case)


LANDS = {"absolute": "{outside}/evil.so", "relative": "outside/evil.so", "non-elf": None,
         "after-skip": "{outside}/b.so", "chain": "opt/real/x/deep.so"}


@pytest.mark.parametrize("case", sorted(LANDS))
def test_paths_through_symlinks_resolve_inside_the_root(case, tmp_path, load_helper):
    images = load_helper("upgrade_images", Path(__file__).with_name("_images.py"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("keep me")
    layer = images.write_layer(tmp_path / "layer.tar", _layer(images, case, outside))
    spec = images.docker_save(tmp_path / "img.tar", [([layer], {}, ["t:1"])])
    with open_source(str(spec)) as src:
        if LANDS[case]:
            assert Path(src.root, LANDS[case].format(outside=outside).lstrip("/")).read_bytes() == ELF.read_bytes()
    assert sorted(os.listdir(outside)) == ["secret"] and (outside / "secret").read_text() == "keep me"


def test_a_symlink_replaced_by_a_directory_in_a_later_layer_is_written_afresh(tmp_path, load_helper):
    """Directories reached through a symlink are cached; a later layer replacing the symlink must not
    write into the old target through that cache."""
    images = load_helper("upgrade_images", Path(__file__).with_name("_images.py"))
    lower = images.write_layer(tmp_path / "lower.tar", [images.directory("usr/"), images.directory("usr/lib/"),
                                                        images.symlink("lib", "usr/lib"),
                                                        images.file("lib/one.so", ELF)])
    upper = images.write_layer(tmp_path / "upper.tar", [images.directory("lib/"), images.file("lib/two.so", ELF)])
    spec = images.docker_save(tmp_path / "img.tar", [([lower, upper], {}, ["t:1"])])
    with open_source(str(spec)) as src:
        root = Path(src.root)
        assert (root / "usr/lib/one.so").is_file() and not (root / "usr/lib/two.so").exists()
        assert (root / "lib").is_dir() and not (root / "lib").is_symlink() and (root / "lib/two.so").is_file()
