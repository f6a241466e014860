"""The symbol index cache: keyed by file identity, rebuilt silently when it is stale or damaged,
bypassed by --no-cache / RCOMPAT_NO_CACHE. Real libraries built with gcc (tests/elf/conftest.py)."""
from __future__ import annotations

import shutil
import struct

import pytest

from rcompat import cache
from rcompat.elf.read import symindex


def test_small_tables_are_not_cached(demo, tmp_path):
    path = tmp_path / "libdemo.so.1"
    shutil.copy(demo["v1"], path)
    symindex._cached.cache_clear()
    assert symindex.symbol_index(path).lookup("demo_stable") is not None
    assert not _entry(path).exists()  # a few symbols: decoding is cheaper than a cache file


@pytest.fixture
def lib(demo, tmp_path, monkeypatch):
    monkeypatch.setattr(symindex, "MIN_CACHED_SYMBOLS", 0)  # the fixture library is small
    path = tmp_path / "libdemo.so.1"
    shutil.copy(demo["v1"], path)
    symindex._cached.cache_clear()
    yield path
    symindex._cached.cache_clear()


@pytest.fixture
def decodes(monkeypatch):
    """Paths decoded from the ELF file (a cache hit decodes nothing)."""
    seen = []
    real = symindex._decode

    def counting(path):
        seen.append(path)
        return real(path)

    monkeypatch.setattr(symindex, "_decode", counting)
    return seen


def _entry(path):
    return symindex._entry_path(str(path.resolve()))


def _fresh(path):
    symindex._cached.cache_clear()  # a new process: only the disk cache is left
    return symindex.symbol_index(path)


def _same(a, b):
    assert dict(a.definitions.items()) == dict(b.definitions.items())
    assert a.references == b.references


def test_second_process_reads_the_index_from_disk(lib, decodes, private_cache_dir):
    first = symindex.symbol_index(lib)
    entry = _entry(lib)
    assert entry.is_file() and private_cache_dir in entry.parents
    again = _fresh(lib)
    assert decodes == [str(lib.resolve())]  # built once, then read back
    _same(first, again)
    assert again.lookup("demo_stable") is not None and "demo_stable" in again.definitions


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "other format", "empty"])
def test_damaged_entry_is_rebuilt_silently(lib, decodes, damage):
    built = symindex.symbol_index(lib)
    entry = _entry(lib)
    data = bytearray(entry.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped byte":
        data[-5] ^= 0xFF
    elif damage == "other format":
        struct.pack_into("<I", data, 8, symindex.INDEX_FORMAT + 1)
    else:
        data = bytearray()
    entry.write_bytes(bytes(data))
    rebuilt = _fresh(lib)
    assert len(decodes) == 2
    _same(built, rebuilt)
    assert cache.read_entry(entry, symindex.INDEX_FORMAT) is not None  # rewritten whole


def test_a_library_changed_after_caching_is_indexed_again(lib, demo, decodes):
    old = symindex.symbol_index(lib)
    shutil.copy(demo["v2"], lib)  # same path, new content, size and mtime
    new = _fresh(lib)
    assert len(decodes) == 2
    assert set(new.definitions) != set(old.definitions)
    assert set(new.definitions) == set(_fresh(demo["v2"]).definitions)


def test_no_cache_neither_reads_nor_writes(lib, decodes, monkeypatch):
    with cache.bypassed():
        symindex.symbol_index(lib)
    assert not _entry(lib).exists()
    monkeypatch.setenv(cache.NO_CACHE_ENV, "1")
    _fresh(lib)
    assert not _entry(lib).exists() and len(decodes) == 2


def test_unwritable_cache_dir_still_answers(lib, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert symindex.symbol_index(lib).lookup("demo_stable") is not None


def test_libtorch_cpu_index_round_trips_through_the_cache(torch_lib, decodes, tmp_path, monkeypatch):
    torch_lib = torch_lib / "libtorch_cpu.so"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cold"))  # earlier tests indexed it into the session's cache
    symindex._cached.cache_clear()
    built = symindex.symbol_index(torch_lib)
    assert len(built.definitions) > 50_000 and _entry(torch_lib).is_file()
    again = _fresh(torch_lib)
    assert len(decodes) == 1
    _same(built, again)
    symindex._cached.cache_clear()
