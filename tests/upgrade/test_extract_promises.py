"""`upgrade --extract DIR`: refused when no input is an image (it was silently ignored), and a run that
fails after DIR/old was extracted removes it (it was kept, and blocked the rerun: "not empty")."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rcompat.errors import UsageError
from rcompat.upgrade_scan.scan import upgrade

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def image(tmp_path_factory, gcc, load_helper) -> Path:
    images = load_helper("upgrade_images", Path(__file__).with_name("_images.py"))
    out = tmp_path_factory.mktemp("extract-image")
    lib = out / "libleaf.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(REPO / "fixtures/elf/leaf.c")], check=True)
    layer = images.write_layer(out / "l1.tar", [images.directory("usr/"), images.directory("usr/lib/"),
                                                images.file("usr/lib/libleaf.so", lib, 0o755)])
    return images.docker_save(out / "img.tar", [([layer], {"PATH": "/usr/bin"}, ["demo:1"])])


def test_extract_with_two_directories_is_refused(cli, tmp_path):
    old, new = tmp_path / "old-root", tmp_path / "new-root"
    old.mkdir()
    new.mkdir()
    out = cli("upgrade", str(old), str(new), "--extract", str(tmp_path / "x"), "--driver", "550.54.14")
    assert out.returncode == 2 and out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("rcompat: error: --extract") and "images only" in line
    assert not (tmp_path / "x").exists()


def test_extract_with_one_image_extracts_that_one(tmp_path, image):
    root = tmp_path / "root"
    root.mkdir()
    upgrade(str(image), str(root), extract=str(tmp_path / "x"), driver="550.54.14")
    assert (tmp_path / "x" / "old" / "usr/lib/libleaf.so").is_file() and not (tmp_path / "x" / "new").exists()


@pytest.mark.parametrize("dir_exists", [False, True])
def test_a_failed_new_removes_the_extracted_old(cli, tmp_path, image, dir_exists):
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"this is not a tarball at all" * 40)
    target = tmp_path / "x"
    if dir_exists:
        target.mkdir()
    out = cli("upgrade", str(image), str(bad), "--extract", str(target), "--driver", "550.54.14")
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    if dir_exists:
        assert target.is_dir() and list(target.iterdir()) == []  # the user's directory stays, emptied
    else:
        assert not target.exists()
    again = cli("upgrade", str(image), str(image), "--extract", str(target), "--driver", "550.54.14")
    assert again.returncode in (0, 1), again.stderr  # the rerun is not refused as "not empty"
    assert (target / "old" / "usr/lib/libleaf.so").is_file() and (target / "new" / "usr/lib/libleaf.so").is_file()


def test_an_empty_old_that_was_there_is_emptied_not_removed(tmp_path, image):
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"junk" * 400)
    (tmp_path / "x" / "old").mkdir(parents=True)
    with pytest.raises(Exception) as caught:
        upgrade(str(image), str(bad), extract=str(tmp_path / "x"), driver="550.54.14")
    assert not isinstance(caught.value, UsageError) or "not empty" not in str(caught.value)
    assert (tmp_path / "x" / "old").is_dir() and list((tmp_path / "x" / "old").iterdir()) == []


def test_a_non_empty_target_is_refused_and_left_alone(tmp_path, image):
    keep = tmp_path / "x" / "new" / "mine.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        upgrade(str(image), str(image), extract=str(tmp_path / "x"), driver="550.54.14")
    assert keep.read_text() == "mine"
    assert not (tmp_path / "x" / "old").exists()  # OLD was extracted before NEW was refused: removed
