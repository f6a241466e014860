"""The R side of `rcompat parity record --side r`: the suite through R torch, in an `Rscript` child.

R has no npz reader without extra packages (RcppCNPy is not on every machine), but a single `.npy`
file is simple: a 10-byte preamble, a Python-dict header, then the raw data. So the parent hands each
input over as WORKDIR/inputs/<name>.npy (little-endian float64, Fortran order: R's own column-major
layout), plus WORKDIR/plan.tsv (case id, case, precision: one line per case, the suite's own list),
and rcompat/r_scripts/parity.R writes each output back as WORKDIR/out/<name>.npy in the same form. Outputs come
back as float64 (R's only floating type); the parent stores them in the case's precision, which is
exact for values R torch computed in float32.
"""
from __future__ import annotations

import os
from pathlib import Path

from rcompat.errors import RcompatError, UsageError
from rcompat.isolate import ChildResult, run_child

SCRIPT = "parity.R"


def find_rscript(given: str | None) -> tuple[str, dict[str, str] | None]:
    """--rscript as given (run in this environment), else the R that rcompat.r.host.locate_r finds
    (R_HOME's bin/ first, then PATH) with the environment rcompat gives every R child."""
    from rcompat.r.facts import child_environment
    from rcompat.r.host import locate_r

    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise UsageError(f"--rscript {given}: not an executable file")
        return given, None
    install = locate_r()
    if install is None:
        raise UsageError("Rscript not found on PATH: install R (r-base-core) or pass --rscript PATH")
    return install.rscript, child_environment(install, os.environ, None)


def write_inputs(inputs: dict, work: Path) -> None:
    import numpy as np

    from rcompat.parity.suite import planned_cases

    folder = work / "inputs"
    folder.mkdir()
    for name, value in inputs.items():
        np.save(folder / f"{name}.npy", np.asfortranarray(np.asarray(value, dtype="<f8")), allow_pickle=False)
    lines = [f"{cid}\t{cid.rsplit('_', 1)[0]}\t{precision}" for cid, precision, _ in planned_cases()]
    (work / "plan.tsv").write_text("id\tcase\tprecision\n" + "\n".join(lines) + "\n")
    (work / "out").mkdir()


def run_r_side(options, inputs: dict, work: Path) -> ChildResult:
    """Run parity.R on `inputs` in `work`; the caller reads WORKDIR/out and the JSON lines."""
    from rcompat.r.scripts import scripts_dir

    if options.cases:
        raise UsageError("--cases adds Python functions; it works with --side python only")
    if options.python:
        raise UsageError("--python chooses the Python side's interpreter; with --side r use --rscript")
    rscript, env = find_rscript(options.rscript)
    script = scripts_dir() / SCRIPT
    if not script.is_file():
        raise RcompatError(f"{script} is missing: this rcompat checkout is incomplete")
    write_inputs(inputs, work)
    return run_child([rscript, str(script), str(work), options.device, str(options.threads)],
                     timeout=options.timeout, env=env)
