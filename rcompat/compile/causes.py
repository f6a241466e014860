"""Which known cause explains a torch.compile failure: the first row of
rcompat/data/compile_causes.toml whose pattern the error text matches."""
from __future__ import annotations

import re
from typing import Any

from rcompat.data import cached_toml

TABLE = "compile_causes.toml"


def rows() -> tuple[dict[str, Any], ...]:
    return cached_toml(TABLE, "cause", ("id", "cause", "patterns", "remedy", "source"))


def explain(text: str) -> dict[str, Any] | None:
    """The matching cause row, or None when no known cause matches `text`."""
    for row in rows():
        if any(re.search(pattern, text) for pattern in row["patterns"]):
            return row
    return None
