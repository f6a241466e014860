"""R's front-end environment read once, for the children that embed R through rpy2's initr().

rpy2 3.5 starts R twice only to read environment variables: importing rpy2.rinterface runs
`Rscript -e 'cat(Sys.getenv("LD_LIBRARY_PATH"))'` (rpy2.situation.r_ld_library_path_from_subprocess,
called by rinterface_lib.openrlib), and initr() runs `Rscript -e '...write.csv(y)'` (rinterface's
_getrenvvars) to copy what R's front-end script sets (R_LIBS_SITE, R_SHARE_DIR, LD_LIBRARY_PATH, ...)
into the process. Each is a whole R start, about 0.2 s of CPU. Both ask the same Rscript (R_HOME's)
from the same environment, so `share_front_end_environment()` runs the second command once, before
rpy2.rinterface is imported, and `answer_environment_lookups()` answers both from its output: the
process ends up with the environment rpy2 alone would give it. When the command fails, or rpy2 lacks
these functions (another version), nothing is replaced and rpy2 runs its own commands.
"""
from __future__ import annotations

import csv
import os
import subprocess
from typing import Any

# rpy2.rinterface._getrenvvars's command, verbatim: the same R code prints the same environment.
ENVIRONMENT_CODE = "x<-Sys.getenv();y<-as.character(x);names(y)<-names(x);write.csv(y)"


class FrontEndEnvironment:
    """What R_HOME's Rscript sees in its environment, as (name, value) rows in R's order."""

    def __init__(self, r_home: str, rows: list[tuple[str, str]]) -> None:
        self.r_home = r_home
        self.rows = rows
        self.values = dict(rows)

    def ld_library_path(self, r_home: str) -> str:
        """rpy2.situation.r_ld_library_path_from_subprocess(r_home): what `cat()` would print."""
        if r_home != self.r_home:
            raise LookupError(r_home)
        return self.values.get("LD_LIBRARY_PATH", "")

    def differences(self, baseline: Any = None, r_home: str | None = None) -> tuple[tuple[str, str], ...]:
        """rpy2.rinterface._getrenvvars(baseline, r_home): the variables R sets or changes."""
        if r_home is not None and r_home != self.r_home:
            raise LookupError(r_home)
        baseline = os.environ if baseline is None else baseline
        return tuple((k, v) for k, v in self.rows if k not in baseline or baseline[k] != v)


def read_front_end_environment(r_home: str) -> FrontEndEnvironment:
    """Run R_HOME's Rscript once and parse its environment the way rpy2 does (csv, header skipped)."""
    text = subprocess.check_output((os.path.join(r_home, "bin", "Rscript"), "-e", ENVIRONMENT_CODE),
                                   universal_newlines=True, stderr=subprocess.PIPE)
    reader = csv.reader(row for row in text.split(os.linesep) if row != "")
    next(reader)
    return FrontEndEnvironment(r_home, [(row[0], row[1]) for row in reader])


def share_front_end_environment() -> FrontEndEnvironment | None:
    """Before `import rpy2.rinterface`: read R's environment once and let rpy2's import-time
    LD_LIBRARY_PATH lookup use it. Returns it for answer_environment_lookups(), or None (nothing
    replaced) when rpy2.situation has no such lookup or the Rscript cannot be run."""
    import rpy2.situation as situation

    original = getattr(situation, "r_ld_library_path_from_subprocess", None)
    r_home = situation.get_r_home() if original is not None else None
    if not r_home:
        return None
    try:
        environment = read_front_end_environment(r_home)
    except (OSError, subprocess.SubprocessError, StopIteration, IndexError, UnicodeError):
        return None

    def ld_library_path(home: str) -> str:
        try:
            return environment.ld_library_path(home)
        except LookupError:
            return original(home)

    situation.r_ld_library_path_from_subprocess = ld_library_path
    return environment


def answer_environment_lookups(rinterface: Any, environment: FrontEndEnvironment | None) -> None:
    """After `import rpy2.rinterface`, before initr(): its copy of R's environment comes from the
    same run (when R_HOME is still the one that run asked)."""
    original = getattr(rinterface, "_getrenvvars", None)
    if environment is None or original is None:
        return

    def getrenvvars(baselinevars: Any = None, r_home: str | None = None) -> tuple[tuple[str, str], ...]:
        home = r_home if r_home is not None else getattr(rinterface.openrlib, "R_HOME", None)
        try:
            return environment.differences(baselinevars, home)
        except LookupError:
            return original(baselinevars, r_home)

    rinterface._getrenvvars = getrenvvars
