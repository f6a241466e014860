"""The bridge the R package (R-package/, `library(rcompat)`) calls through reticulate.

R calls one function, `call(name, args_json)`, and gets one JSON string back: either a table
`{"kind", "command", "columns", "types", "records", "facts"}`, which the R package turns into a
data.frame with the same columns every time (also with zero rows; nested values such as a finding's
evidence arrive as JSON text in a character column), or `{"error": "one line"}` for rcompat's own
errors (bad input, a missing file), which R raises as one R error: never a Python traceback. JSON
rather than reticulate's pandas conversion, because that conversion depends on the numpy/pandas
versions of the bound Python and turns nested dicts into R environments; arguments travel as JSON too,
so R's doubles arrive as Python ints where they are whole.

Inside R, rcompat must not start a second embedded R through rpy2. The R package sets RCOMPAT_HOST_PID
to its own pid before Python starts in it, and passes what R knows about itself (R.version,
.libPaths(), package versions) through `set_host_facts()`; the R engine sees host_is_r() and probes R
with an Rscript child, and the host facts are offered to it and to `snapshot` via `host_facts()`.
The commands other engines add to the CLI (fleet report, model inspect/check, soak) are reached
through the CLI itself (`cli_report`), with `--format json`, so the R package needs no change when their
options grow.
"""
from __future__ import annotations

import json
from typing import Callable

from rcompat.tools.from_r.calls import CALLS
from rcompat.tools.from_r.host import host_facts, set_host_facts

__all__ = ["call", "host_facts", "host_is_r", "set_host_facts"]


def host_is_r() -> bool:
    """True when R embeds this Python; the R engine decides (libR mapped, or RCOMPAT_HOST_PID)."""
    from rcompat.r import host_is_r as engine_host_is_r

    return bool(engine_host_is_r())


def call(name: str, args_json: str = "{}") -> str:
    """Run the call `name` of CALLS with the keyword arguments in `args_json`; a table, or {"error": …}."""
    from rcompat.errors import RcompatError

    function: Callable[..., str] | None = CALLS.get(name)
    if function is None:
        return json.dumps({"error": f"rcompat has no call {name!r} (the R package is newer than the "
                                    "Python package: upgrade it with rcompat::install_rcompat())"})
    try:
        kwargs = json.loads(args_json or "{}")
        if not isinstance(kwargs, dict):
            raise ValueError("the arguments must be a JSON object")
        return function(**{k: v for k, v in kwargs.items() if v is not None})
    except ImportError as exc:  # an optional package (pandas, torch) this call needs
        import sys

        return json.dumps({"error": f"{name}() needs the Python package {exc.name or exc}, not installed in "
                                    f"rcompat's Python ({sys.executable}): pip install it there, or rerun "
                                    "rcompat::install_rcompat()"})
    except (RcompatError, OSError, ValueError, TypeError) as exc:
        return json.dumps({"error": _one_line(exc)})
    except KeyboardInterrupt:
        return json.dumps({"error": "interrupted"})
    except Exception as exc:  # noqa: BLE001 - R gets one line, never a traceback
        return json.dumps({"error": f"internal error: {type(exc).__name__}: {_one_line(exc)}"})


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
