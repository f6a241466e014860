"""R's front-end environment for rpy2, asked once and early.

Before embedding R, rpy2 3.5 starts R twice to learn what R's front-end script (`bin/R`, run by
Rscript) puts in R's environment: `rpy2.situation.r_ld_library_path_from_subprocess` runs
`Rscript -e 'cat(Sys.getenv("LD_LIBRARY_PATH"))'` when rpy2.rinterface is imported, and
`rpy2.rinterface._getrenvvars` runs `Rscript -e 'x<-Sys.getenv();…;write.csv(y)'` in initr(). The
two run one after the other on the thread that starts R, each a whole R start (~0.12 s of CPU and
~0.2 s of wall here, with the shell script's sed and uname children).

`FrontEndEnvironment` starts the second command (the first's answer is one of its variables) as
soon as it is made, in the background, and `install()` has rpy2 use its output: the same command
in the same environment (but for R's default packages, see ENVIRONMENT_EXPR), parsed the way rpy2
parses it, so rpy2 sets the same variables. Where R's
home is not known beforehand (no R_HOME), the command fails, or this rpy2 lacks either function,
rpy2 runs its own commands, as without this.
"""
from __future__ import annotations

import csv
import os
import subprocess
from typing import Callable, Mapping

# rpy2.rinterface._getrenvvars's R expression (rpy2 3.5), with utils:: named: the child starts without
# R's default packages (R_DEFAULT_PACKAGES=NULL, unless the user set it), a third of an R start's CPU
# (0.04 s against 0.12 s here). Startup still reads every Renviron file and runs the profiles, where
# the variables come from; only attaching methods, utils, stats, … is skipped, and none sets one.
ENVIRONMENT_EXPR = "x<-Sys.getenv();y<-as.character(x);names(y)<-names(x);utils::write.csv(y)"
LEAN_START = ("R_DEFAULT_PACKAGES", "NULL")


class FrontEndEnvironment:
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.r_home = env.get("R_HOME") or None
        self._process: subprocess.Popen | None = None
        self._pairs: list[tuple[str, str]] | None = None
        name, value = LEAN_START
        self._added = None if name in env else name  # the user's own choice of packages is kept, and reported
        if self.r_home:
            try:
                self._process = subprocess.Popen(
                    [os.path.join(self.r_home, "bin", "Rscript"), "-e", ENVIRONMENT_EXPR],
                    env={**env, name: value} if self._added else dict(env),
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
            except OSError:
                self._process = None

    def pairs(self) -> list[tuple[str, str]] | None:
        """R's environment variables in the order R wrote them, or None when the command failed."""
        if self._process is not None:
            out, _ = self._process.communicate()
            if self._process.returncode == 0:
                # as rpy2 reads it: lines split first, empty ones dropped, the header skipped
                rows = list(csv.reader(row for row in out.split(os.linesep) if row != ""))[1:]
                self._pairs = [(row[0], row[1]) for row in rows if len(row) == 2 and row[0] != self._added]
            self._process = None
        return self._pairs

    def install(self) -> None:
        """Point rpy2's two questions at this answer; call before rpy2.rinterface is first imported."""
        if not self.r_home:
            return
        import rpy2.situation as situation

        ask_ld_path = getattr(situation, "r_ld_library_path_from_subprocess", None)
        if ask_ld_path is not None:
            situation.r_ld_library_path_from_subprocess = self._ld_library_path(ask_ld_path)
        import rpy2.rinterface as rinterface

        ask_variables = getattr(rinterface, "_getrenvvars", None)
        if ask_variables is not None:
            rinterface._getrenvvars = self._variables(ask_variables)

    def _ld_library_path(self, ask: Callable[[str], str]) -> Callable[[str], str]:
        def ld_library_path(r_home: str) -> str:
            pairs = self.pairs() if r_home == self.r_home else None
            if pairs is None:
                return ask(r_home)
            return dict(pairs).get("LD_LIBRARY_PATH", "")  # unset: Sys.getenv() gives "", as cat() prints
        return ld_library_path

    def _variables(self, ask: Callable) -> Callable:
        def variables(baselinevars=None, r_home=None):
            pairs = self.pairs() if r_home in (None, self.r_home) else None
            if pairs is None:
                return ask(baselinevars, r_home)
            base = os.environ if baselinevars is None else baselinevars
            return tuple((k, v) for k, v in pairs if k not in base or base[k] != v)
        return variables
