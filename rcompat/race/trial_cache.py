"""The doctor's serialized race trial, kept between runs while nothing it ran on has changed.

The trial (rcompat.race.checks.DOCTOR_TRIAL: embedded R next to Python torch, R calls handed to R's
own thread) shows that the recommended pattern works with this R, rpy2, numpy and torch. Starting R
and importing torch in its child is most of a warm doctor run: measured here, the trial took 2.2 s of
CPU of a warm run's 3.0 s, against 3.0 s for `collect_env` + `sessionInfo()` (benchmarks/bench_doctor.py).
Its answer depends only on what it loads, so a trial whose every finding was `ok` is kept, keyed by:
the trial's settings and rcompat's race code; the interpreter; torch's, rpy2's and numpy's versions
and files; R (its front ends, libR, R_HOME's, the home's and the working directory's start-up
files); and the environment variables R, Python
and the loader read. Anything else (a failure, a starved or hung trial) runs again next time, as does
`--no-cache`. The file is $XDG_CACHE_HOME/rcompat/race/serialized.json behind rcompat.cache's header.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Mapping

from rcompat import cache
from rcompat.model import Finding, Status

FORMAT = 1
ENV_PREFIXES = ("R_", "PYTHON", "OMP_", "MKL_", "OPENBLAS_", "TORCH_", "CUDA", "LD_")
DISTRIBUTIONS = ("torch", "rpy2", "rpy2-rinterface", "rpy2-robjects", "numpy")
RACE_CODE = ("worker.py", "runner.py", "classify.py", "result.py")


def cached_trial(trial: Mapping[str, Any], run: Callable[[], tuple[list[Finding], dict[str, Any]]],
                 env: Mapping[str, str] | None = None) -> tuple[list[Finding], dict[str, Any]]:
    """(findings, facts) of `run()`, or of the last run while its key holds; the facts then say
    `from_cache` (when it ran) and every finding's evidence `from_cache` too."""
    env = dict(os.environ if env is None else env)
    if not cache.enabled(env):
        return run()
    key = trial_key(trial, env)
    entry = cache.entry_path("race", "serialized.json")
    data = cache.read_json(entry, FORMAT, key)
    if data is not None and isinstance(data.get("findings"), list) and isinstance(data.get("facts"), dict):
        try:
            findings = [Finding.from_dict(f) for f in data["findings"]]
        except (TypeError, ValueError):
            findings = []
        if findings:
            ran = data.get("ran_at")
            for f in findings:
                f.evidence = {**f.evidence, "from_cache": {"ran_at": ran}}
                f.message = (f"{f.message} " if f.message else "") + (
                    f"(The trial of {ran}, kept while R, rpy2, numpy and torch are unchanged; --no-cache "
                    "runs it again.)")
            return findings, {**data["facts"], "from_cache": {"ran_at": ran}}
    findings, facts = run()
    if findings and all(f.status is Status.OK for f in findings):
        cache.write_json(entry, FORMAT, key, {"findings": [f.to_dict() for f in findings], "facts": facts,
                                              "ran_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return findings, facts


def trial_key(trial: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """Everything the trial's answer depends on (see the module's docstring)."""
    from importlib import metadata

    from rcompat import __version__
    from rcompat.r.host import locate_r

    race_dir = os.path.dirname(os.path.abspath(__file__))
    packages: dict[str, Any] = {}
    for name in DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
            continue
        top = name.split("-")[0]
        packages[name] = [dist.version, cache.file_stamp(str(dist.locate_file(top))),
                          cache.file_stamp(str(dist.locate_file(os.path.join(top, "lib"))))]
    install = locate_r(env)
    r = install.to_dict() if install is not None else {}
    r_home = r.get("r_home") or ""
    home = env.get("HOME") or os.path.expanduser("~")
    r_files = [r.get("rscript", ""), r.get("r", ""), os.path.join(r_home, "lib", "libR.so"),
               *(os.path.join(r_home, "etc", n) for n in ("Renviron", "Renviron.site", "Rprofile.site", "ldpaths")),
               *(os.path.join(d, n) for d in (home, os.getcwd()) for n in (".Renviron", ".Rprofile"))]
    return {"trial": dict(trial), "rcompat": __version__,
            "code": {n: cache.file_stamp(os.path.join(race_dir, n)) for n in RACE_CODE},
            "python": [sys.executable, sys.version], "packages": packages, "r": r,
            "r_files": {f: cache.file_stamp(f) for f in r_files if f},
            "env": {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES) or k == "PATH"}}
