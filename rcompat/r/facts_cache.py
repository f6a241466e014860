"""R's facts, kept between runs: the rpy2 child and reticulate's discovery are most of a warm doctor
run's CPU time (loading reticulate alone takes ~1.6 s of CPU).

The key is deliberately wide, so an entry is dropped whenever anything R or reticulate read could have
changed: rcompat's r_facts.R; R itself (Rscript, R_HOME's Renviron/Rprofile.site/ldpaths); the user's
and the working directory's .Renviron/.Rprofile; the working directory (reticulate looks for project
environments there); every environment variable of R, reticulate, Python, conda, pyenv and virtualenv,
and PATH; the modification time of every PATH directory (a new Python on PATH); pyenv's global
version file; rpy2's version and files; and, checked after reading, the modification time of every R
library directory (installing, upgrading or removing a package changes it). Only a complete probe is
kept (R answered, no child failed). The Python reticulate binds is asked for its packages every run,
and R torch's runtime files are looked at every run: both are cheap. The file is
$XDG_CACHE_HOME/rcompat/r/facts.json behind rcompat.cache's checked header.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from rcompat import cache
from rcompat.r.facts import PackageFact, RFacts, child_environment, probe
from rcompat.r.scripts import scripts_dir
from rcompat.r.host import locate_r, r_host
from rcompat.r.runtime import bound_python, torch_runtime

FACTS_FORMAT = 1
ENV_PREFIXES = ("R_", "RETICULATE_", "PYTHON", "VIRTUAL_ENV", "CONDA", "PYENV", "WORKON_HOME", "UV_", "PIPENV",
                "POETRY", "TORCH_", "CUDA")
ENV_NAMES = ("PATH", "HOME", "LD_LIBRARY_PATH")
CACHED_FIELDS = ("engine", "version", "platform", "os", "r_home", "lib_paths", "compiler", "reticulate", "rpy2",
                 "session")


def cached_probe(timeout: float | None = None, lib_paths: Sequence[str] | None = None,
                 env: Mapping[str, str] | None = None, engine: str = "auto",
                 shared: Callable[[], Mapping[str, Any] | None] | None = None) -> RFacts:
    """probe(), answered from the cache while its key holds (facts.rpy2 then says `from_cache`);
    `shared` is probe()'s (asked only when the cache does not answer)."""
    base_env = {**os.environ, **dict(env or {})}
    install = locate_r(base_env)
    if install is None or not cache.enabled(base_env):
        return probe(timeout=timeout, lib_paths=lib_paths, env=env, engine=engine, shared=shared)
    host = r_host()
    key = facts_key(install.to_dict(), base_env, lib_paths, engine, host.hosted_by_r)
    entry = cache.entry_path("r", "facts.json")
    stored = _read(entry, key)
    if stored is not None:
        facts = RFacts(available=True, install=install.to_dict(), host=host.to_dict(),
                       child_env={**dict(env or {}), **child_environment(install, base_env, lib_paths)},
                       packages={name: PackageFact(**p) for name, p in stored["packages"].items()},
                       **{name: stored[name] for name in CACHED_FIELDS})
        facts.rpy2 = {**facts.rpy2, "from_cache": True}
        torch = facts.packages.get("torch")
        facts.torch_runtime = torch_runtime(torch.path if torch and torch.status != "absent" else None, base_env)
        facts.python = bound_python(facts.reticulate, timeout=float(timeout or 60.0), env=dict(env or {}))
        return facts
    facts = probe(timeout=timeout, lib_paths=lib_paths, env=env, engine=engine, shared=shared)
    if facts.available and not facts.errors and facts.rpy2.get("ok", True) and facts.reticulate:
        data = facts.to_dict()
        cache.write_json(entry, FACTS_FORMAT, key, {"libraries": _stamps(facts.lib_paths),
                                                    "facts": {name: data[name] for name in (*CACHED_FIELDS, "packages")}})
    return facts


def facts_key(install: Mapping[str, str], env: Mapping[str, str], lib_paths: Sequence[str] | None,
              engine: str, hosted_by_r: bool) -> dict[str, Any]:
    from importlib import metadata

    r_home = install.get("r_home") or ""
    home = env.get("HOME") or os.path.expanduser("~")
    cwd = os.getcwd()
    try:
        rpy2 = metadata.distribution("rpy2")
        rpy2_id = [rpy2.version, cache.file_stamp(str(rpy2.locate_file("rpy2")))]
    except metadata.PackageNotFoundError:
        rpy2_id = None
    files = [str(scripts_dir() / "r_facts.R"), install.get("rscript", ""), install.get("r", ""),
             *(os.path.join(r_home, "etc", n) for n in ("Renviron", "Renviron.site", "Rprofile.site", "ldpaths")),
             *(os.path.join(d, n) for d in (home, cwd) for n in (".Renviron", ".Rprofile")),
             *(env[v] for v in ("R_ENVIRON_USER", "R_PROFILE_USER") if env.get(v)),
             os.path.join(env.get("PYENV_ROOT") or os.path.join(home, ".pyenv"), "version")]
    path_dirs = [d for d in env.get("PATH", "").split(os.pathsep) if d]
    return {
        "install": dict(install), "engine": engine, "hosted_by_r": hosted_by_r, "lib_paths": list(lib_paths or []),
        "cwd": cwd, "rpy2": rpy2_id, "files": {f: cache.file_stamp(f) for f in files},
        "path_dirs": {d: cache.file_stamp(d) for d in path_dirs},
        "env": {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}}


def _stamps(dirs: Sequence[str]) -> dict[str, list[int] | None]:
    return {d: cache.file_stamp(d) for d in dirs}


def _read(entry: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    data = cache.read_json(entry, FACTS_FORMAT, key)
    if data is None:
        return None
    libraries, facts = data.get("libraries"), data.get("facts")
    if not isinstance(libraries, dict) or libraries != _stamps(list(libraries)):
        return None  # a library directory changed: a package was installed, upgraded or removed
    if not isinstance(facts, dict) or not all(name in facts for name in (*CACHED_FIELDS, "packages")):
        return None
    return facts
