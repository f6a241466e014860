"""R's facts from the cache between runs: the real R and rpy2 of this machine, fixture packages
installed with R CMD INSTALL (tests/r/conftest.py); any change R would see probes again."""
from __future__ import annotations

import shutil

import pytest

from rcompat import cache
from rcompat.r import facts_cache


@pytest.fixture
def probes(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    seen = []
    real = facts_cache.probe

    def counting(**kwargs):
        seen.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(facts_cache, "probe", counting)
    return seen


@pytest.fixture
def lib(rlibs, tmp_path):
    lib = tmp_path / "lib"
    shutil.copytree(rlibs["dev"], lib)
    return lib


def _without_cache_marks(facts) -> dict:
    data = facts.to_dict()
    data["rpy2"].pop("from_cache", None)
    return data


def test_second_probe_reads_the_cache_with_the_same_facts(lib, probes):
    first = facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
    assert first.available and first.packages["torch"].version == "0.12.2.9000"
    second = facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
    assert len(probes) == 1 and second.rpy2["from_cache"] is True
    assert _without_cache_marks(second) == _without_cache_marks(first)
    assert second.child_env == first.child_env  # R_LIBS for the verification children


def test_installing_or_replacing_a_package_probes_again(lib, rlibs, probes):
    facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
    shutil.copytree(rlibs["ok"] / "keras", lib / "keras")  # a package installed since
    added = facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
    assert len(probes) == 2 and added.packages["keras"].status == "installed"
    shutil.rmtree(lib / "torch")
    shutil.copytree(rlibs["ok"] / "torch", lib / "torch")  # torch "upgraded" in place
    replaced = facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
    assert len(probes) == 3 and replaced.packages["torch"].version == "0.12.0"


def test_a_changed_environment_or_damaged_entry_probes_again(lib, probes, monkeypatch, tmp_path):
    facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
    monkeypatch.setenv("RETICULATE_PYTHON_FALLBACK", "/nonexistent/python")
    facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
    assert len(probes) == 2
    entry = tmp_path / "cache" / "rcompat" / "r" / "facts.json"
    entry.write_bytes(entry.read_bytes()[:-10])
    again = facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
    assert len(probes) == 3 and "from_cache" not in again.rpy2


def test_no_cache_probes_every_time(lib, probes):
    with cache.bypassed():
        facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
        facts_cache.cached_probe(timeout=60, lib_paths=[str(lib)])
    assert len(probes) == 2


def test_an_incomplete_probe_is_not_kept(tmp_path, probes):
    home = tmp_path / "rhome"
    (home / "bin").mkdir(parents=True)
    for name in ("Rscript", "R"):
        (home / "bin" / name).write_text("#!/bin/sh\nexit 3\n")
        (home / "bin" / name).chmod(0o755)
    broken = facts_cache.cached_probe(timeout=10, env={"R_HOME": str(home)}, engine="rscript")
    assert not broken.available
    assert not (tmp_path / "cache" / "rcompat" / "r" / "facts.json").exists()
