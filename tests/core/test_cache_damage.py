"""A damaged cache entry of any kind is a miss and is rebuilt: a directory, a FIFO, a symlink to a
device, garbage, a truncated file, a header claiming a terabyte, a file where the entry's directory
belongs. Never read forever, never an error, and the next write puts a good entry back."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rcompat import cache
from rcompat.inputs import read_if_regular

REPO = Path(__file__).resolve().parents[2]
FORMAT = 7
PAYLOAD = b"the payload " * 100


def _damage(entry: Path, kind: str) -> None:
    """Replace the (existing, good) entry by `kind` of damage."""
    good = entry.read_bytes()
    entry.unlink()
    if kind == "directory":
        entry.mkdir()
        (entry / "inside").write_bytes(good)
    elif kind == "fifo":
        os.mkfifo(entry)
    elif kind == "symlink-to-device":
        entry.symlink_to("/dev/zero")
    elif kind == "dangling-symlink":
        entry.symlink_to(entry.parent / "nowhere")
    elif kind == "garbage":
        entry.write_bytes(os.urandom(65536))
    elif kind == "truncated":
        entry.write_bytes(good[:40])
    elif kind == "huge-length":  # a right header claiming 1 TiB: refused from the header, not read whole
        entry.write_bytes(good[:12] + (1 << 40).to_bytes(8, "little") + good[20:])
    elif kind == "file-as-directory":  # the entry's directory is a file
        shutil.rmtree(entry.parent)
        entry.parent.write_bytes(b"not a directory")
    else:
        raise AssertionError(kind)


KINDS = ["directory", "fifo", "symlink-to-device", "dangling-symlink", "garbage", "truncated", "huge-length",
         "file-as-directory"]


def _within(seconds: float, fn):
    box: list = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still reading the damaged entry after {seconds} s"
    return box[0]


@pytest.fixture
def entry(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = cache.entry_path("kind", "entry")
    assert cache.write_entry(path, FORMAT, PAYLOAD) and cache.read_entry(path, FORMAT) == PAYLOAD
    return path


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_entry_is_a_miss_and_is_rebuilt(entry, kind):
    _damage(entry, kind)
    assert _within(5, lambda: cache.read_entry(entry, FORMAT)) is None
    assert cache.write_entry(entry, FORMAT, PAYLOAD)
    assert entry.is_file() and not entry.is_symlink()
    assert cache.read_entry(entry, FORMAT) == PAYLOAD


@pytest.mark.parametrize("kind", ["directory", "fifo", "garbage"])
def test_a_damaged_json_entry_reads_as_absent_and_is_rewritten(entry, kind):
    assert cache.write_json(entry, FORMAT, ["k"], {"answer": 42})
    _damage(entry, kind)
    assert _within(5, lambda: cache.read_json(entry, FORMAT, ["k"])) is None
    assert cache.write_json(entry, FORMAT, ["k"], {"answer": 42})
    assert cache.read_json(entry, FORMAT, ["k"])["answer"] == 42


def test_a_directory_the_user_named_is_never_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    blocker = tmp_path / "mine"
    blocker.write_bytes(b"my file")
    assert not cache.write_entry(blocker / "entry", FORMAT, PAYLOAD)  # outside the cache: not rcompat's
    assert blocker.read_bytes() == b"my file"


def test_read_if_regular_refuses_what_is_not_one(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2000)
    assert _within(5, lambda: read_if_regular(fifo, 1000)) is None
    assert read_if_regular(Path("/dev/zero"), 1000) is None
    assert read_if_regular(big, 1000) is None and read_if_regular(big, 2000) == b"x" * 2000
    (tmp_path / "link").symlink_to(big)  # a link planted where an entry belongs is no entry
    assert read_if_regular(tmp_path / "link", 2000) is None


def _doctor_cuda(cache_home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    env.pop("RCOMPAT_NO_CACHE", None)
    return subprocess.run([sys.executable, "-m", "rcompat", "doctor", "--only", "cuda", "--format", "json"],
                          capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)


@pytest.fixture(scope="module")
def cold_cuda_doctor(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """One cold `doctor --only cuda` and the cache it left (each test damages a copy of it)."""
    pytest.importorskip("torch")
    cache_home = tmp_path_factory.mktemp("cold-cuda-doctor")
    return _doctor_cuda(cache_home), cache_home


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_the_doctor_rebuilds_a_damaged_torch_facts_entry(tmp_path, kind, cold_cuda_doctor):
    """The reported case: the torch child's facts entry replaced by a FIFO hung the doctor; replaced
    by a directory, it was never rebuilt."""
    first, written = cold_cuda_doctor
    assert (written / "rcompat" / "torch" / "facts.json").is_file(), first.stderr
    shutil.copytree(written, tmp_path, dirs_exist_ok=True)
    entry = tmp_path / "rcompat" / "torch" / "facts.json"
    _damage(entry, kind)
    second = _doctor_cuda(tmp_path)
    assert second.returncode == first.returncode, second.stderr
    ids = lambda proc: [(f["id"], f["status"]) for f in json.loads(proc.stdout)["findings"]]  # noqa: E731
    assert ids(second) == ids(first)
    assert entry.is_file() and cache.read_entry(entry, _torch_format()) is not None


def _torch_format() -> int:
    from rcompat.cuda.torch_cache import FACTS_FORMAT

    return FACTS_FORMAT
