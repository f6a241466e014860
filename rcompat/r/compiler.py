"""The C compiler R builds packages with, and whether it accepts C17.

`R CMD config CC` / `CFLAGS` are what `R CMD INSTALL` uses; R >= 4.3 also has `CC17` for packages
that ask for C17. Whether the compiler accepts `-std=gnu17` is measured by compiling a file that
checks `__STDC_VERSION__`, not guessed from the compiler's name.
"""
from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Any, Mapping

from rcompat.isolate import run_child

C17_PROBE = """\
#if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201710L
#error "C17 not in effect"
#endif
int rcompat_c17_probe(void) { return 0; }
"""
C17_FLAG = "-std=gnu17"


def _config(r_front_end: str, var: str, timeout: float, env: Mapping[str, str] | None) -> str | None:
    result = run_child([r_front_end, "CMD", "config", var], timeout=timeout, env=env)
    text = result.stdout.strip()
    return text if result.ok and text else None


def probe_compiler(r_front_end: str, timeout: float = 30.0,
                   env: Mapping[str, str] | None = None) -> dict[str, Any]:
    facts: dict[str, Any] = {"cc": _config(r_front_end, "CC", timeout, env),
                             "cflags": _config(r_front_end, "CFLAGS", timeout, env),
                             "cc17": _config(r_front_end, "CC17", timeout, env),
                             "flag": C17_FLAG}
    cc = facts["cc17"] or facts["cc"]
    if not cc:
        facts.update(accepts_c17=None, error="R reports no C compiler (R CMD config CC is empty)")
        return facts
    with tempfile.TemporaryDirectory(prefix="rcompat-c17-") as tmp:
        src = Path(tmp, "c17.c")
        src.write_text(C17_PROBE, encoding="utf-8")
        argv = [*shlex.split(cc), C17_FLAG, "-c", str(src), "-o", str(Path(tmp, "c17.o"))]
        result = run_child(argv, timeout=timeout, env=env, cwd=tmp)
    facts["command"] = " ".join(argv)
    facts["accepts_c17"] = result.ok
    if not result.ok:
        facts["error"] = result.tail(6) or result.describe_end()
    return facts
