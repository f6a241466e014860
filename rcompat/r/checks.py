"""The r area of `rcompat doctor`: R, rpy2, the deep-learning packages, reticulate's Python, the
breakage rules, and isolated verification of what is installed.

Other areas (cuda, elf) reuse the same facts through `shared_r_facts(ctx)`: R is probed once per
doctor run (ctx.memo("r.facts")), or read from the cache between runs (rcompat.r.facts_cache), and
the raw facts are recorded in ctx.facts["r"].
ctx.options read here: "r_lib_paths" (list of library dirs put first), "r_engine" (auto|rpy2|rscript),
"r_verify" (False skips the verification children).
"""
from __future__ import annotations

from typing import Iterable

from rcompat.model import Finding, Status
from rcompat.r.facts import RFacts
from rcompat.r.rpy2_fit import advise, undefined_symbol
from rcompat.versions import matches

AREA = "r"
TITLE = "R and its deep-learning packages"
INSTALL_R = "Install R: on Debian/Ubuntu `apt-get install r-base-core` (r-base-dev to build packages)."


def r_facts(ctx) -> RFacts:
    """The R facts of this run, probed once and shared by every engine."""
    def from_race_trial():  # the race area's trial child embeds R through rpy2 too: it answers for both
        from rcompat.race.checks import trial_r_facts

        return trial_r_facts(ctx)

    def produce() -> RFacts:
        from rcompat.r.facts_cache import cached_probe

        facts = cached_probe(timeout=ctx.timeout, lib_paths=ctx.options.get("r_lib_paths"),
                             engine=ctx.options.get("r_engine", "auto"), shared=from_race_trial)
        ctx.facts["r"] = facts.to_dict()
        return facts

    return ctx.memo("r.facts", produce)


def shared_r_facts(ctx) -> dict:
    """R's facts as a dict for other areas (CUDA's view of R torch, ELF co-loading), probed once per
    run whichever area asks first. A probe that fails is the r area's finding; other areas get
    {"available": False, "reason": …} and go on without R."""
    if "r" in ctx.facts:
        return ctx.facts["r"]
    try:
        return r_facts(ctx).to_dict()
    except Exception as exc:  # noqa: BLE001 - reported by the r area's own checks
        return {"available": False, "reason": f"R facts unavailable: {type(exc).__name__}: {exc}"}


def _f(id: str, status: Status, title: str, **kw) -> Finding:
    return Finding(id=id, area=AREA, status=status, title=title, **kw)


def check_version(ctx) -> Iterable[Finding]:
    facts = r_facts(ctx)
    if not facts.install:
        yield _f("R-VERSION", Status.SKIP, "R is not installed (install r-base-core)",
                 message=facts.reason, remedy=INSTALL_R)
        return
    if not facts.available:
        yield _f("R-VERSION", Status.ERROR, "R did not report its version", message=facts.reason,
                 remedy="Run `Rscript -e 'sessionInfo()'` to see R's own error; the evidence has the "
                        "child's output.",
                 evidence={"install": facts.install, "errors": facts.errors, "rpy2": facts.rpy2})
        return
    yield _f("R-VERSION", Status.OK, facts.version_string or f"R {facts.version_number}",
             message=f"R {facts.version_number} ({facts.platform}) at {facts.r_home}, facts read "
                     f"through {facts.engine}; library paths: {', '.join(facts.lib_paths)}.",
             evidence={"version": facts.version, "install": facts.install, "engine": facts.engine,
                       "lib_paths": facts.lib_paths, "host": facts.host})


def check_rpy2(ctx) -> Iterable[Finding]:
    facts = r_facts(ctx)
    rpy2 = facts.rpy2
    if not facts.install:
        yield _f("R-RPY2", Status.SKIP, "rpy2 not checked: R is not installed", remedy=INSTALL_R)
        return
    if not rpy2.get("used"):
        yield _f("R-RPY2", Status.SKIP, "rpy2 not used", message=str(rpy2.get("reason", "")) +
                 "; facts were read with an Rscript child instead.",
                 remedy="pip install 'rcompat[r]' to let rcompat embed R through rpy2."
                 if rpy2.get("installed") is False else "")
        return
    if rpy2.get("ok"):
        yield _embedded_finding(rpy2, facts.version_number)
        return
    error = rpy2.get("error") or {}
    text = str(error.get("message", ""))
    if (rpy2.get("child") or {}).get("timed_out"):
        yield _f("R-RPY2", Status.FAIL, f"embedding R through rpy2 {rpy2.get('version')} hung",
                 message="the rpy2 worker timed out and was killed" + (f" in step '{error['stage']}'."
                                                                       if error.get("stage") else
                                                                       " before it reported a step."),
                 remedy="Raise --timeout if this machine is slow; otherwise run "
                        "`python -c 'import rpy2.robjects'` to see where R stops.", evidence=rpy2)
        return
    advice = advise(text, facts.version_number)
    what = advice.sentence(facts.version_number)
    stage = error.get("stage") or "start"
    yield _f("R-RPY2", Status.FAIL,
             f"rpy2 {rpy2.get('version')} cannot embed R" + (f": undefined symbol {advice.symbol}"
                                                           if advice.symbol else ""),
             message=f"rpy2 failed at '{stage}': {text.strip()[:600]}" + (f" ({what})" if what else ""),
             remedy=_rpy2_remedy(rpy2.get("version"), advice.fits)
             + "; rcompat read the R facts with Rscript meanwhile.",
             evidence={**rpy2, "symbol": advice.symbol, "fits": advice.fits},
             source=(advice.needs or advice.fits or {}).get("source", ""),
             confidence=(advice.needs or advice.fits or {}).get("confidence", ""))


def _rpy2_remedy(installed: str | None, fits: dict | None) -> str:
    """What to install, unless the table's pick is what is installed already: then reinstalling it
    against this R is the remaining move (its API module is compiled against R's headers)."""
    if fits and not (installed and matches(installed, fits["rpy2"])):
        return f"pip install '{fits['pip']}'"
    if fits:
        return (f"rpy2 {installed} is already the one the rpy2 table picks for this R ({fits['pip']}): "
                "rebuild it against this R (pip install --force-reinstall --no-cache-dir --no-binary "
                "rpy2-rinterface rpy2) and check R_HOME")
    return "Install an rpy2 built for this R (see the rpy2 table in rcompat/data/r_rules.toml)"


def _embedded_finding(rpy2: dict, r_version: str | None) -> Finding:
    """R-RPY2 when R is embedded: which of rpy2's bindings is in effect (API: its module compiled
    against R's headers; ABI: cffi's dlopen of libR) and why. A silent fallback to ABI while the
    table names another rpy2 for this R warns: that rpy2's API module does not fit this libR."""
    mode = rpy2.get("mode") or {}
    in_effect, requested, api_error = mode.get("mode"), mode.get("requested"), mode.get("api_error")
    title = f"rpy2 {rpy2.get('version')} embeds R {r_version}" + (f" ({in_effect} mode)" if in_effect else "")
    if in_effect == "API":
        why = "API mode: rpy2's compiled module for R's C API loaded against this libR."
    elif in_effect == "ABI" and requested == "ABI":
        why = "ABI mode because RPY2_CFFI_MODE=ABI asks for it."
    elif in_effect == "ABI":
        why = (f"ABI mode: rpy2 fell back to it silently because its API module does not load "
               f"({api_error or 'not built'}).")
    else:
        why = "rpy2 did not say which mode it uses."
    fits = advise("", r_version).fits
    installed = rpy2.get("version")
    if in_effect == "ABI" and requested != "ABI" and fits and installed and not matches(installed, fits["rpy2"]):
        symbol = undefined_symbol(api_error or "")
        return _f("R-RPY2", Status.WARN, title + " only through a fallback",
                  message=why + (f" {symbol} is not exported by this R's libR." if symbol else "")
                  + f" The rpy2 table picks {fits['pip']} for R {r_version}.",
                  remedy=_rpy2_remedy(installed, fits), evidence=rpy2, source=fits.get("source", ""),
                  confidence=fits.get("confidence", ""))
    return _f("R-RPY2", Status.OK, title, message=why, evidence=rpy2)


def check_packages(ctx) -> Iterable[Finding]:
    facts = r_facts(ctx)
    if not facts.available:
        return
    for name, pkg in facts.packages.items():
        fid = f"R-PKG-{name.upper()}"
        evidence = {"path": pkg.path, "built": pkg.built, "also_in": pkg.also_in}
        if pkg.status == "installed":
            shadow = f"; also in {', '.join(pkg.also_in)} (shadowed)" if pkg.also_in else ""
            yield _f(fid, Status.OK, f"{name} {pkg.version}", message=f"{name} {pkg.version} at "
                     f"{pkg.path} (built: {pkg.built or 'unknown'}){shadow}.", evidence=evidence)
        elif pkg.status == "error":
            yield _f(fid, Status.ERROR, f"{name}: DESCRIPTION unreadable",
                     message=f"{pkg.path}: {pkg.error}",
                     remedy=f"Reinstall {name} (remove {pkg.path} first if a failed install left it).",
                     evidence=evidence)
        else:
            # No message: the library paths searched are R-VERSION's, and would repeat once per package.
            yield _f(fid, Status.SKIP, f"{name} not installed in R's library paths",
                     evidence={"lib_paths": list(facts.lib_paths)})


def check_compiler(ctx) -> Iterable[Finding]:
    facts = r_facts(ctx)
    if not facts.available:
        return
    cc = facts.compiler
    if cc.get("accepts_c17") is None:
        yield _f("R-COMPILER-C17", Status.SKIP, "no C compiler configured for R",
                 message=str(cc.get("error", "")), remedy="Install r-base-dev (or build-essential).",
                 evidence=cc)
    elif cc["accepts_c17"]:
        yield _f("R-COMPILER-C17", Status.OK, f"R's compiler '{cc.get('cc17') or cc.get('cc')}' accepts C17",
                 message=f"`{cc.get('command')}` compiled a C17 test file.", evidence=cc)
    else:
        yield _f("R-COMPILER-C17", Status.WARN,
                 f"R's compiler '{cc.get('cc17') or cc.get('cc')}' rejects {cc.get('flag')}",
                 message="Source installs of packages that require C17 will fail ('C17 standard "
                         f"required'). Compiler said: {cc.get('error', '')}",
                 remedy="Install a gcc >= 8 or clang >= 7 and point CC (or CC17 on R >= 4.3) at it in "
                        "~/.R/Makevars.",
                 source="R Installation and Administration, 'C standards' (CC17/C17FLAGS from R 4.3.0)",
                 evidence=cc)


def check_reticulate_python(ctx) -> Iterable[Finding]:
    facts = r_facts(ctx)
    if not facts.available:
        return
    ret = facts.reticulate
    if ret.get("child_error"):  # a time-out or crash of the discovery: unknown, never "not installed"
        yield _f("R-RETICULATE-PYTHON", Status.ERROR, f"reticulate's Python unknown: {ret['note']}",
                 message=f"{ret['child_error']}.",
                 remedy="Raise --timeout if this machine is slow; otherwise run "
                        "`Rscript -e 'reticulate::py_discover_config()'` to see where it stops.",
                 evidence={"reticulate": ret})
        return
    if ret.get("method") == "none" or not ret:
        yield _f("R-RETICULATE-PYTHON", Status.SKIP, "reticulate not installed",
                 message=str(ret.get("note", "no reticulate facts")))
        return
    env = {k: v for k, v in (ret.get("env") or {}).items() if v}
    if ret.get("discover_error"):
        yield _f("R-RETICULATE-PYTHON", Status.FAIL, "reticulate cannot find the Python it is told to use",
                 message=str(ret["discover_error"]),
                 remedy="Fix or unset RETICULATE_PYTHON / RETICULATE_PYTHON_ENV.",
                 evidence={"reticulate": ret})
        return
    python = ret.get("python")
    if not python:
        chosen = ", ".join(f"{k}={v}" for k, v in env.items()) or "nothing set"
        yield _f("R-RETICULATE-PYTHON", Status.SKIP, "reticulate's Python not determined",
                 message=f"{ret.get('note', '')} Environment: {chosen}.".strip(),
                 evidence={"reticulate": ret})
        return
    from rcompat.r.bound_python import disagreement, disagreement_finding, full_version

    contradiction = disagreement(ret, facts.python)
    if contradiction:
        yield disagreement_finding(ret, facts.python, contradiction)
        return
    packages = facts.python.get("python_packages") or {}
    listed = ", ".join(f"{k} {v}" for k, v in sorted(packages.items())) or "none of tensorflow, keras, torch"
    how = ret.get("forced") or "reticulate's discovery order"
    shown = full_version(ret.get("version_string")) or ret.get("version")
    yield _f("R-RETICULATE-PYTHON", Status.OK, f"reticulate would bind {python} (Python {shown})",
             message=f"chosen by {how}; libpython {ret.get('libpython')}; packages: {listed}. "
                     "Found with py_discover_config() in an Rscript child, Python not initialised.",
             evidence={"reticulate": ret, "python": facts.python})


def check_session(ctx) -> Iterable[Finding]:
    """What sessionInfo() shows first: the BLAS and LAPACK R uses, and its locale."""
    facts = r_facts(ctx)
    session = facts.session if facts.available else {}
    if not session:
        return
    from pathlib import PurePath

    blas, lapack = session.get("blas") or "", session.get("lapack") or ""
    ctype = next((part.split("=", 1)[1] for part in str(session.get("locale") or "").split(";")
                  if part.startswith("LC_CTYPE=")), session.get("locale") or "?")
    lapack_text = f"LAPACK {session.get('lapack_version') or '?'} ({PurePath(lapack).name or '?'})"
    yield _f("R-SESSION", Status.OK, f"BLAS {PurePath(blas).name or '(built in)'}, {lapack_text}, locale {ctype}",
             message=f"BLAS: {blas or 'R internal'}; LAPACK: {lapack or 'R internal'}; locale: {session.get('locale')}"
                     + ("" if session.get("utf8") else " (not UTF-8: non-ASCII paths and messages may break)"),
             evidence={"session": session})


def check_reticulate_modules(ctx) -> Iterable[Finding]:
    """The Python modules installed R packages import through reticulate (reticulate_modules.toml)."""
    from rcompat.data import load_toml
    from rcompat.r.bound_python import TABLE, module_findings

    facts = r_facts(ctx)
    if not facts.available or not facts.reticulate.get("python"):
        return
    installed = {name for name, pkg in facts.packages.items() if pkg.status == "installed"}
    yield from module_findings(facts.reticulate, facts.python, installed, load_toml(TABLE, "module"))


def check_rules(ctx) -> Iterable[Finding]:
    from rcompat.r.rules import evaluate

    facts = r_facts(ctx)
    if not facts.available:
        return
    for hit in evaluate(facts.stack()):
        yield hit.to_finding(AREA)


def check_verify(ctx) -> Iterable[Finding]:
    from rcompat.r.verify import VERIFIERS, verify

    facts = r_facts(ctx)
    if not facts.available or ctx.options.get("r_verify") is False:
        return
    for package in VERIFIERS:
        yield verify(package, facts, timeout=ctx.timeout)


for _check, _id in ((check_version, "R-VERSION"), (check_rpy2, "R-RPY2"), (check_packages, "R-PKG"),
                    (check_compiler, "R-COMPILER-C17"), (check_reticulate_python, "R-RETICULATE-PYTHON"),
                    (check_reticulate_modules, "R-RETICULATE-MODULES"), (check_session, "R-SESSION"),
                    (check_rules, "R-RULES"), (check_verify, "R-VERIFY")):
    _check.check_id = _id

CHECKS = [check_version, check_rpy2, check_packages, check_compiler, check_reticulate_python,
          check_reticulate_modules, check_session, check_rules, check_verify]
START = (r_facts,)  # reticulate's discovery and the compiler probe start before the area threads
