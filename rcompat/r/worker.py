"""Child worker: embed R through rpy2 and print its facts as JSON lines.

Run as `python -m rcompat.r.worker SCRIPT` by rcompat.r.facts, never imported by the parent: an rpy2
that fails to load (`undefined symbol: R_getVar`) or an R that aborts while starting ends this
process, not the tool. Each stage announces itself first (`{"step": ...}`) so a crash names it.
The R code is r-scripts/r_facts.R, the same file an Rscript child runs, so both paths agree.
"""
from __future__ import annotations

import sys

from rcompat.isolate import emit

EXIT_RPY2_FAILED = 3


def _rpy2_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("rpy2")
    except metadata.PackageNotFoundError:
        return None


def _report_rpy2_failure(stage: str, exc: BaseException) -> int:
    emit({"rpy2_error": {"stage": stage, "type": type(exc).__name__, "message": str(exc),
                         "rpy2_version": _rpy2_version()}})
    return EXIT_RPY2_FAILED


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m rcompat.r.worker PATH/TO/r_facts.R\n")
        return 2
    script = argv[0]
    emit({"step": "import rpy2.rinterface"})
    try:
        import rpy2.rinterface as rinterface
    except Exception as exc:  # noqa: BLE001 - ImportError, OSError (dlopen), cffi errors alike
        return _report_rpy2_failure("import rpy2.rinterface", exc)
    emit({"step": "initialise embedded R"})
    try:
        rinterface.initr_simple()
        import rpy2.robjects as robjects
    except Exception as exc:  # noqa: BLE001
        return _report_rpy2_failure("initialise embedded R", exc)
    emit({"step": "gather R facts"})
    try:
        robjects.r["source"](script)
        text = robjects.r("rcompat_json(list(core = rcompat_core_facts()))")[0]
    except Exception as exc:  # noqa: BLE001 - an R error inside the facts script
        emit({"r_error": {"type": type(exc).__name__, "message": str(exc)}})
        return 1
    # Already JSON from R: splice it in rather than round-trip it through Python objects. (The
    # parent knows rpy2's version already: rcompat.r.facts looked it up before starting this child.)
    sys.stdout.write('{"r_facts": %s}\n' % text)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
