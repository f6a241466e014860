"""Which rpy2 fits which R, from the [[rpy2]] table of rcompat/data/r_rules.toml.

rpy2 resolves R's C API when it is imported; one built for a newer R fails with
`undefined symbol: R_getVar`. The symbol names the R API it wanted, the table names the rpy2 that
fits the R actually installed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rcompat.data import cached_toml
from rcompat.versions import matches

_UNDEFINED_SYMBOL = re.compile(r"undefined symbol:\s*([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Rpy2Advice:
    symbol: str | None
    needs: dict[str, Any] | None   # the row whose R API the failing rpy2 wanted
    fits: dict[str, Any] | None    # the row for the R installed here

    def sentence(self, r_version: str | None) -> str:
        parts = []
        if self.symbol:
            parts.append(f"undefined symbol: {self.symbol}")
        if self.needs:
            parts.append(f"{self.symbol} is R API that {self.needs['pip']} expects (R {self.needs['R']})")
        if self.fits and r_version:
            parts.append(f"for R {r_version} install {self.fits['pip']}")
        return "; ".join(parts)


def undefined_symbol(text: str) -> str | None:
    m = _UNDEFINED_SYMBOL.search(text or "")
    return m.group(1) if m else None


def rpy2_rows() -> tuple[dict[str, Any], ...]:
    return cached_toml("r_rules.toml", "rpy2")


def requirement(r_version: str) -> str:
    """The pip requirement of the rpy2 that fits R `r_version` (what `rcompat r rpy2` prints)."""
    from rcompat.errors import DataError

    row = next((row for row in rpy2_rows() if matches(r_version, row["R"])), None)
    if row is None:
        raise DataError(f"no rpy2 known to fit R {r_version}; add an [[rpy2]] row to rcompat/data/r_rules.toml")
    return row["pip"]


def advise(error_text: str, r_version: str | None) -> Rpy2Advice:
    symbol = undefined_symbol(error_text)
    rows = rpy2_rows()
    needs = next((row for row in rows if symbol and symbol in row.get("symbols", [])), None)
    fits = None
    if r_version:
        fits = next((row for row in rows if matches(r_version, row["R"])), None)
    return Rpy2Advice(symbol, needs, fits)
