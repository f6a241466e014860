"""Child worker: embed R through rpy2 and print its facts as JSON lines.

Run as `python -m rcompat.r.worker SCRIPT` by rcompat.r.facts, never imported by the parent: an rpy2
that fails to load (`undefined symbol: R_getVar`) or an R that aborts while starting ends this
process, not the tool. Each stage announces itself first (`{"step": ...}`) so a crash names it.
The R code is rcompat/r_scripts/r_facts.R, the same file an Rscript child runs, so both paths agree.
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


class ApiModeFailure:
    """Catches rpy2's log line when its API module fails to load and it falls back to ABI mode
    (rpy2.rinterface_lib.openrlib logs it as a warning; nothing else tells)."""

    def __init__(self) -> None:
        import logging

        self.message: str | None = None
        self.handler = logging.Handler(logging.WARNING)
        self.handler.emit = self._keep
        self.logger = logging.getLogger("rpy2.rinterface_lib.openrlib")
        self.logger.addHandler(self.handler)

    def _keep(self, record) -> None:
        text = record.getMessage()
        if "API mode" in text and self.message is None:
            self.message = text

    def close(self) -> None:
        self.logger.removeHandler(self.handler)


def rpy2_mode(api_failure: ApiModeFailure) -> dict:
    """Which of rpy2's two bindings to R is in effect: API (its compiled module, built against R's
    headers) or ABI (cffi's dlopen of libR); what was requested (RPY2_CFFI_MODE, default ANY); and
    the API module's import error when ANY fell back to ABI."""
    import importlib

    from rpy2.rinterface_lib import openrlib

    loaded = getattr(getattr(openrlib, "_rinterface_cffi", None), "__name__", "")
    mode = {"_rinterface_cffi_api": "API", "_rinterface_cffi_abi": "ABI"}.get(loaded)
    requested = getattr(openrlib, "cffi_mode_request", getattr(openrlib, "cffi_mode", None))
    api_error = api_failure.message
    if mode == "ABI" and api_error is None:
        # rpy2 3.5 falls back without a word: ask the API module itself why it does not load.
        try:
            importlib.import_module("_rinterface_cffi_api")
        except ImportError as exc:
            api_error = f"{type(exc).__name__}: {exc}"
    return {"mode": mode, "requested": getattr(requested, "value", None), "api_error": api_error}


def core_facts_json(robjects, script: str) -> str:
    """r_facts.R's core facts as R writes them ({"core": …}, JSON text), from the R that `robjects`
    (rpy2.robjects) embeds; the race trial's child asks this too, after its trial (one rpy2 start)."""
    robjects.r["source"](script)
    return str(robjects.r("rcompat_json(list(core = rcompat_core_facts()))")[0])


def _initialise(rinterface) -> None:
    # rpy2 3.5 has initr_simple() (embeds R without rpy2's own R-side start-up); rpy2 3.6 dropped it
    # and has only initr().
    init = getattr(rinterface, "initr_simple", None) or rinterface.initr
    init()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m rcompat.r.worker PATH/TO/r_facts.R\n")
        return 2
    script = argv[0]
    emit({"step": "import rpy2.rinterface"})
    api_failure = ApiModeFailure()
    try:
        import rpy2.rinterface as rinterface
    except Exception as exc:  # noqa: BLE001 - ImportError, OSError (dlopen), cffi errors alike
        return _report_rpy2_failure("import rpy2.rinterface", exc)
    finally:
        api_failure.close()
    emit({"rpy2_mode": rpy2_mode(api_failure)})
    emit({"step": "initialise embedded R"})
    try:
        _initialise(rinterface)
        import rpy2.robjects as robjects
    except Exception as exc:  # noqa: BLE001
        return _report_rpy2_failure("initialise embedded R", exc)
    emit({"step": "gather R facts"})
    try:
        text = core_facts_json(robjects, script)
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
