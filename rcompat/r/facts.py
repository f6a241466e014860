"""`probe()`: what R is installed, with which deep-learning packages, bound to which Python.

Everything that starts R runs in a child (rcompat.isolate): the rpy2 worker (`python -m
rcompat.r.worker`) embeds R and runs rcompat/r_scripts/r_facts.R; when rpy2 is missing or fails, or when this
Python runs inside R (`host_is_r()`), an Rscript child runs the same script. reticulate's Python
discovery always runs in an Rscript child: inside rpy2's embedded R, reticulate would report the
worker's own Python ("the current process") instead of the one an R session would bind.
"""
from __future__ import annotations

import importlib.util
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from rcompat.isolate import ChildResult, run_child, run_python_child
from rcompat.r.scripts import scripts_dir
from rcompat.r.compiler import probe_compiler
from rcompat.r.host import RInstall, locate_r, r_host
from rcompat.r.runtime import bound_python, torch_runtime

DEFAULT_TIMEOUT_S = 60.0
ENGINES = ("auto", "rpy2", "rscript")
PACKAGES = ("torch", "keras", "keras3", "tensorflow", "reticulate", "RcppCNPy", "Rcpp")
_OS_NAMES = (("mingw", "windows"), ("windows", "windows"), ("darwin", "macos"), ("linux", "linux"))


@dataclass
class PackageFact:
    name: str
    status: str  # installed | absent | error
    version: str | None = None
    path: str | None = None
    built: str | None = None
    error: str | None = None
    also_in: list[str] = field(default_factory=list)

    @classmethod
    def from_r(cls, name: str, data: Mapping[str, Any]) -> "PackageFact":
        return cls(name=name, status=str(data.get("status", "error")), version=data.get("version"),
                   path=data.get("path"), built=data.get("built"), error=data.get("error"),
                   also_in=list(data.get("also_in") or []))


@dataclass
class RFacts:
    available: bool
    reason: str = ""                      # why R facts are missing, when they are
    install: dict[str, str] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)
    engine: str | None = None             # which child produced the core facts: rpy2 | rscript
    version: dict[str, Any] = field(default_factory=dict)
    platform: str | None = None
    os: str | None = None
    r_home: str | None = None
    lib_paths: list[str] = field(default_factory=list)
    packages: dict[str, PackageFact] = field(default_factory=dict)
    compiler: dict[str, Any] = field(default_factory=dict)
    torch_runtime: dict[str, Any] = field(default_factory=dict)
    reticulate: dict[str, Any] = field(default_factory=dict)
    python: dict[str, Any] = field(default_factory=dict)  # the Python reticulate binds: packages
    session: dict[str, Any] = field(default_factory=dict)  # sessionInfo()'s BLAS, LAPACK, locale
    rpy2: dict[str, Any] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    child_env: dict[str, str] = field(default_factory=dict, repr=False)  # R_LIBS/R_HOME children get

    @property
    def version_string(self) -> str | None:
        return self.version.get("string")

    @property
    def version_number(self) -> str | None:
        return self.version.get("number")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("child_env")
        return data

    def stack(self) -> dict[str, str]:
        """Component -> version, as rcompat.r.rules.evaluate takes it."""
        stack: dict[str, str] = {}
        if self.version_number:
            stack["R"] = self.version_number
        if self.os:
            stack["os"] = normalise_os(self.os)
        for name, pkg in self.packages.items():
            if pkg.status == "installed" and pkg.version:
                stack[name] = pkg.version
        for name, version in (self.python.get("python_packages") or {}).items():
            stack[f"python:{name}"] = version
        return stack


def normalise_os(r_os: str) -> str:
    low = r_os.lower()
    return next((name for prefix, name in _OS_NAMES if low.startswith(prefix)), low)


def probe(timeout: float | None = None, lib_paths: Sequence[str] | None = None,
          env: Mapping[str, str] | None = None, engine: str = "auto",
          discover_python: bool = True, shared: Callable[[], Mapping[str, Any] | None] | None = None) -> RFacts:
    """Gather R facts in isolated children. Never raises for a broken R: failures become facts.

    lib_paths are put first on R's library path (through R_LIBS) for every child, so tests and users
    can point R at another library; env adds to the children's environment. `shared()`, asked instead
    of starting the rpy2 worker, may hand over what another child that embedded this R through rpy2
    reported ({"core": r_facts.R's core facts, "rpy2_mode": …}; the doctor's race trial).
    """
    if engine not in ENGINES:
        from rcompat.errors import UsageError

        raise UsageError(f"unknown R engine {engine!r}; choose from {', '.join(ENGINES)}")
    timeout = float(timeout or DEFAULT_TIMEOUT_S)
    base_env = dict(os.environ)
    base_env.update(env or {})
    install = locate_r(base_env)
    host = r_host()
    if install is None:
        return RFacts(available=False, host=host.to_dict(),
                      reason="R is not installed: no Rscript on PATH and no R_HOME")
    child_env = {**dict(env or {}), **child_environment(install, base_env, lib_paths)}
    facts = RFacts(available=True, install=install.to_dict(), host=host.to_dict(), child_env=child_env)
    chosen = engine if engine != "auto" else ("rscript" if host.hosted_by_r else "rpy2")
    script = scripts_dir() / "r_facts.R"
    if not script.is_file():
        facts.available = False
        facts.reason = f"rcompat's R scripts are missing: {script} (set RCOMPAT_R_SCRIPTS)"
        return facts

    reticulate_parts = ["reticulate"] + (["discover"] if discover_python else [])
    if chosen != "rpy2":
        facts.rpy2 = {"used": False, "reason": "this Python runs inside R (reticulate): rpy2 must not "
                      "embed a second R here" if host.hosted_by_r else "engine 'rscript' was chosen"}
    # reticulate's discovery (the slowest child here: it runs candidate Pythons), then the packages of
    # the Python it names, and the compiler probe (four short children, one after the other) run while
    # rpy2 reads the core facts: all three start now, so none of them is left for after R has answered
    # (in the doctor, R answers when the race trial's child ends, the run's longest child).
    python = None
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="rcompat-r") as pool:
        compiler_probe = None
        if chosen == "rpy2":
            discovery = pool.submit(_discover, facts, install, script, reticulate_parts, timeout, env)
            compiler_probe = pool.submit(probe_compiler, install.r, timeout=timeout, env=child_env)
            core = _core_from_shared(facts, shared, install, lib_paths)
            if core is None:
                core = _core_through_rpy2(facts, script, timeout)
            reticulate, python = discovery.result()
            # rpy2 failed: Rscript for the core facts, unless the Rscript child just failed too
            if core is None and reticulate is not None and not reticulate.get("child_error"):
                core = _rscript_facts(facts, install, script, ["core"], timeout).get("core")
                facts.engine = "rscript" if core is not None else None
        else:
            both = _lean_rscript_facts(facts, install, script, ["core", *reticulate_parts], timeout)
            core, reticulate = both.get("core"), both.get("reticulate") or _reticulate_unknown(both.get(FAILED))
            if core is not None:
                facts.engine = "rscript"
        compiler = compiler_probe.result() if compiler_probe is not None else None
    if core is None:
        facts.available = False
        facts.reason = "R did not report its facts (see errors)"
        return facts
    _apply_core(facts, core)
    facts.reticulate = reticulate or {}
    facts.compiler = compiler or probe_compiler(install.r, timeout=timeout, env=child_env)
    torch = facts.packages.get("torch")
    facts.torch_runtime = torch_runtime(torch.path if torch and torch.status != "absent" else None,
                                        base_env)
    facts.python = python if python is not None else bound_python(facts.reticulate, timeout=timeout,
                                                                  env=dict(env or {}))
    return facts


def _discover(facts: RFacts, install: RInstall, script: Path, parts: list[str], timeout: float,
              env: Mapping[str, str] | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """reticulate's discovery (an Rscript child), then the packages of the Python it names (None when
    it names none: R did not answer)."""
    found = _lean_rscript_facts(facts, install, script, parts, timeout)
    reticulate = found.get("reticulate") or _reticulate_unknown(found.get(FAILED))
    python = bound_python(reticulate, timeout=timeout, env=dict(env or {})) if reticulate else None
    return reticulate, python


def child_environment(install: RInstall, base_env: Mapping[str, str], lib_paths: Sequence[str] | None) -> dict[str, str]:
    env: dict[str, str] = {}
    if install.r_home:
        env["R_HOME"] = install.r_home
    if lib_paths:
        existing = base_env.get("R_LIBS", "")
        env["R_LIBS"] = os.pathsep.join([*map(str, lib_paths), *([existing] if existing else [])])
    elif "R_LIBS" in base_env:
        env["R_LIBS"] = base_env["R_LIBS"]
    return env


def _rpy2_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("rpy2")
    except metadata.PackageNotFoundError:
        return None


def _core_from_shared(facts: RFacts, shared: Callable[[], Mapping[str, Any] | None] | None, install: RInstall,
                      lib_paths: Sequence[str] | None) -> dict[str, Any] | None:
    """The core facts another rpy2 child reported, when it embedded this very R (same R_HOME) in its
    own library paths; else None, and the rpy2 worker runs."""
    given = shared() if shared is not None and not lib_paths else None
    core = given.get("core") if isinstance(given, Mapping) else None
    if not isinstance(core, dict) or not core.get("r_home"):
        return None
    if install.r_home and os.path.realpath(install.r_home) != os.path.realpath(str(core["r_home"])):
        return None
    facts.engine = "rpy2"
    facts.rpy2 = {"used": True, "installed": True, "version": _rpy2_version(), "ok": True,
                  "via": "the race trial's child (one rpy2 start serves both areas)"}
    if isinstance(given.get("rpy2_mode"), dict):
        facts.rpy2["mode"] = given["rpy2_mode"]
    return core


def _core_through_rpy2(facts: RFacts, script: Path, timeout: float) -> dict[str, Any] | None:
    version = _rpy2_version()
    if version is None or importlib.util.find_spec("rpy2") is None:
        facts.rpy2 = {"used": False, "installed": False, "reason": "rpy2 is not installed in this Python"}
        return None
    result = run_python_child("rcompat.r.worker", [str(script)], timeout=timeout,
                              env={**facts.child_env, "PYTHONFAULTHANDLER": "1"})
    facts.rpy2 = {"used": True, "installed": True, "version": version}
    for record in result.records:
        if "rpy2_mode" in record:
            facts.rpy2["mode"] = record["rpy2_mode"]
        if "r_facts" in record and "core" in record["r_facts"]:
            facts.engine = "rpy2"
            facts.rpy2["ok"] = True
            return record["r_facts"]["core"]
        if "rpy2_error" in record:
            facts.rpy2.update(ok=False, error=record["rpy2_error"], child=result.to_evidence())
            return None
    facts.rpy2.update(ok=False, child=result.to_evidence(),
                      error={"stage": result.last_step, "type": "child",
                             "message": f"the rpy2 worker {result.describe_end()}: {result.tail(4)}"})
    return None


def _rscript_facts(facts: RFacts, install: RInstall, script: Path, parts: list[str],
                   timeout: float, errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """r_facts.R's answer for `parts`; a child that gave none is recorded in `errors` (default
    facts.errors) and answers {FAILED: …}."""
    result: ChildResult = run_child([install.rscript, str(script), *parts],
                       timeout=timeout, env=facts.child_env)
    for record in result.records:
        if "r_facts" in record:
            return record["r_facts"]
    (facts.errors if errors is None else errors).append({"what": f"Rscript r_facts.R {' '.join(parts)}", **result.to_evidence()})
    return {FAILED: {"end": result.describe_end(), "timed_out": result.timed_out, "parts": parts}}


FAILED = "_child_failed"


def _lean_rscript_facts(facts: RFacts, install: RInstall, script: Path, parts: list[str],
                        timeout: float) -> dict[str, Any]:
    """_rscript_facts with reticulate's namespace loaded lean (r_facts.R's `lean`: S4 dispatch off,
    which spares loading Matrix's S4 methods, most of a discovery child's CPU). A lean child that
    reports a discovery error, or ends without an answer other than by its timeout, is asked again
    without `lean`, so what is reported is what a plain R session says."""
    if "discover" not in parts:
        return _rscript_facts(facts, install, script, parts, timeout)
    lean_errors: list[dict[str, Any]] = []
    found = _rscript_facts(facts, install, script, [*parts, "lean"], timeout, errors=lean_errors)
    failed = found.get(FAILED)
    if (found.get("reticulate") or {}).get("discover_error") or (failed and not failed.get("timed_out")):
        return _rscript_facts(facts, install, script, parts, timeout)
    facts.errors.extend(lean_errors)
    return found


def _reticulate_unknown(failure: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The reticulate facts of a discovery child that failed: never "not installed" (a time-out or a
    crash says nothing about whether reticulate is there)."""
    if not failure or "reticulate" not in failure.get("parts", []):
        return None
    what = "timed out" if failure.get("timed_out") else "failed"
    return {"method": "unknown", "child_error": f"reticulate's discovery (an Rscript child) {failure['end']}",
            "timed_out": bool(failure.get("timed_out")), "note": f"reticulate's discovery {what}"}


def _apply_core(facts: RFacts, core: Mapping[str, Any]) -> None:
    facts.version = dict(core.get("version") or {})
    facts.platform = core.get("platform")
    facts.os = core.get("os")
    facts.r_home = core.get("r_home")
    facts.lib_paths = list(core.get("lib_paths") or [])
    facts.session = dict(core.get("session") or {})
    packages = core.get("packages") or {}
    facts.packages = {name: PackageFact.from_r(name, packages.get(name, {"status": "absent"}))
                      for name in PACKAGES}
