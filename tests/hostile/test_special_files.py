"""Special files where a regular one belongs: never waited on, never read, never replaced.

Each case runs the real CLI under the harness's limits (tests/hostile/_harness.py): a FIFO with no
writer would block a plain open() forever, a character device would be read until memory runs out.
"""
from __future__ import annotations

import os
import stat
import subprocess
import threading

import pytest


def _char_device(path) -> None:
    """A /dev/zero of our own (major 1, minor 5) where the case needs one: mknod needs root."""
    if os.geteuid() != 0:
        pytest.skip("making a character device needs root")
    os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 5))


@pytest.mark.parametrize("argv, needle", [
    (("r", "rules", "--file", "{fifo}"), "is a FIFO, not a regular file"),
    (("r", "rules", "--file", "/dev/zero"), "is a character device"),
    (("explain", "--from-file", "{fifo}"), "is a FIFO"),
    (("explain", "--from-file", "/dev/zero"), "is a character device"),
    (("lock", "check", "{fifo}"), "is a FIFO"),
    (("snapshot", "diff", "{fifo}", "{fifo}"), "is a FIFO"),
    (("parity", "compare", "{fifo}", "{fifo}"), "is a FIFO"),
    (("parity", "compare", "/dev/zero", "/dev/zero"), "is a character device"),
    (("upgrade", "{fifo}", "{empty}"), "is a FIFO"),
    (("upgrade", "/dev/zero", "{empty}"), "is a character device"),
])
def test_a_fifo_or_device_given_as_input_is_refused_at_once(sentinel, harness, argv, needle):
    fifo = sentinel.inputs / "input.fifo"
    os.mkfifo(fifo)
    empty = sentinel.inputs / "empty-root"
    empty.mkdir()
    argv = [a.format(fifo=fifo, empty=empty) for a in argv]
    outcome = sentinel.run(*argv, wall_s=30)
    line = harness.assert_refused(sentinel, outcome, needle)
    assert str(fifo) in line or "/dev/zero" in line  # the message names the file


def test_a_fifo_as_an_oci_blob_is_refused(sentinel, harness, tmp_path, load_helper):
    images = load_helper("upgrade_images", harness.REPO / "tests/upgrade/_images.py")
    layer = images.write_layer(tmp_path / "layer.tar", [images.file("etc/os-release", b"ID=debian\n")])
    layout = images.oci_layout(sentinel.inputs / "oci", [layer], {}, "t")
    blob = next(p for p in (layout / "blobs/sha256").iterdir() if p.read_bytes() == layer.read_bytes())
    blob.unlink()
    os.mkfifo(blob)
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(layout), str(sentinel.inputs / "new"), wall_s=30)
    harness.assert_refused(sentinel, outcome, blob.name, "is a FIFO")


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_a_special_file_at_a_roots_loader_cache_is_refused(sentinel, harness, make):
    root = sentinel.inputs / "old"
    (root / "etc").mkdir(parents=True)
    cache = root / "etc/ld.so.cache"
    os.mkfifo(cache) if make == "fifo" else _char_device(cache)
    (sentinel.inputs / "new").mkdir()
    # 512 MB of address space: reading a device into memory would fail, and must not exit 0
    outcome = sentinel.run("upgrade", str(root), str(sentinel.inputs / "new"), mem_mb=768, wall_s=30)
    harness.assert_refused(sentinel, outcome, str(cache), "not a regular file")


def test_a_fifo_at_a_roots_ld_so_conf_is_skipped_as_ldconfig_would(sentinel, harness):
    root = sentinel.inputs / "old"
    (root / "etc").mkdir(parents=True)
    os.mkfifo(root / "etc/ld.so.conf")
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(root), str(sentinel.inputs / "new"), wall_s=30)
    assert not outcome.timed_out and outcome.returncode in (0, 1), outcome.stderr
    assert not list(sentinel.tmp.iterdir()) and sentinel.changes() == []


def test_a_cache_entry_replaced_by_a_fifo_is_rebuilt_not_waited_on(sentinel, harness):
    lib = "/lib/x86_64-linux-gnu/libc.so.6"
    if not os.path.exists(lib):
        pytest.skip(f"{lib} not here")
    first = sentinel.run("elf", "missing", lib, wall_s=60)
    assert first.returncode in (0, 1), first.stderr
    entries = [p for p in sentinel.cache.rglob("*") if p.is_file()]
    assert entries, "the symbol index was not cached"
    for entry in entries:
        entry.unlink()
        os.mkfifo(entry)
    second = sentinel.run("elf", "missing", lib, wall_s=60)
    assert not second.timed_out and second.returncode == first.returncode and second.stdout == first.stdout
    assert all(p.is_file() for p in entries)  # rewritten as regular files
    assert not list(sentinel.tmp.iterdir())


def test_output_onto_a_device_is_written_through_never_replaced(sentinel, harness):
    device = sentinel.work / "null"
    _char_device(device)  # reads as /dev/zero, writes are discarded
    outcome = sentinel.run("r", "rules", "-o", str(device))
    assert outcome.returncode == 0, outcome.stderr
    assert stat.S_ISCHR(os.lstat(device).st_mode)  # as root, -o /dev/null used to replace the device
    assert not list(sentinel.tmp.iterdir())


def test_output_onto_a_fifo_without_a_reader_is_refused_and_with_one_written_through(sentinel, harness):
    fifo = sentinel.work / "out.fifo"
    os.mkfifo(fifo)
    outcome = sentinel.run("r", "rules", "-o", str(fifo), wall_s=30)
    harness.assert_refused(sentinel, outcome, "a FIFO with no reader")
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    outcome = sentinel.run("r", "rules", "-o", str(fifo), wall_s=30)
    reader.join(10)
    assert outcome.returncode == 0 and b"R-" in got[0] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_through_a_link_to_stdout_reaches_stdout_and_keeps_the_link(sentinel):
    link = sentinel.work / "out"
    link.symlink_to("/proc/self/fd/1")
    outcome = sentinel.run("r", "rules", "-o", str(link))
    assert outcome.returncode == 0 and "R-" in outcome.stdout, outcome.stderr
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


def test_output_dash_is_stdout(sentinel):
    outcome = sentinel.run("r", "rules", "-o", "-")
    assert outcome.returncode == 0 and "R-" in outcome.stdout and not (sentinel.work / "-").exists()


def test_stdin_is_read_where_documented(sentinel):
    outcome = sentinel.run("explain", "--from-file", "-", stdin=subprocess.PIPE)
    assert outcome.returncode == 2 and "no error text given" in outcome.stderr
