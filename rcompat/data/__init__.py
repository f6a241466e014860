"""Knowledge tables: which versions break, which pair with which.

Code evaluates these tables; it does not contain versions. Every row must name its `source`, so a
maintainer can check a claim and a user can see where it came from. Loaders validate the columns and
raise DataError naming the file and row, so a broken edit is caught by `make test`, not by a user.
"""
from __future__ import annotations

import csv
import os
import functools
from pathlib import Path
from typing import Any, Iterable

from rcompat.errors import DataError

DATA_DIR = Path(__file__).resolve().parent
CONFIDENCE = ("high", "medium", "low", "unverified")


def data_path(name: str) -> Path:
    """The packaged table `name`: never a file of that name in the working directory."""
    return DATA_DIR / name


def load_toml(path: "str | Path", table: str, required: Iterable[str] = ("id", "source")) -> list[dict[str, Any]]:
    """Rows of the array-of-tables `table` in a TOML file, each checked for `required` keys."""
    from rcompat.documents import parse_toml
    from rcompat.inputs import read_text_input

    path = _resolve(path)
    doc = parse_toml(read_text_input(path, "table", "table", error=DataError), str(path), DataError)
    rows = doc.get(table)
    if not isinstance(rows, list):
        raise DataError(f"{path}: expected an array of tables [[{table}]]")
    return [_checked(path, i, row, required) for i, row in enumerate(rows, 1)]


def load_csv(path: "str | Path", required: Iterable[str] = ("source",)) -> list[dict[str, str]]:
    """Rows of a CSV table (header line first; lines starting with # are comments)."""
    from rcompat.inputs import read_text_input

    path = _resolve(path)
    text = read_text_input(path, "table", "table", error=DataError)
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    reader = csv.DictReader(lines)
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}")
    rows = []
    for i, row in enumerate(reader, 2):
        extra = row.pop(None, None)  # DictReader's list of the cells past the header's last column
        if extra is not None:
            raise DataError(f"{path}: row {i} has {len(extra)} more field(s) than the header")
        rows.append(_checked(path, i, {k: (v or "").strip() for k, v in row.items()}, required))
    return rows


def _resolve(path: "str | Path") -> Path:
    """A bare name as a str ("r_rules.toml") is a packaged table; a Path, or a str with a directory
    part, is a file the caller named and is read as given. So a file in the working directory never
    stands in for a packaged table, and a user's table never silently falls back to the packaged one."""
    if isinstance(path, str) and os.sep not in path and (os.altsep or os.sep) not in path:
        return DATA_DIR / path
    return Path(path)


def _checked(path: Path, index: int, row: Any, required: Iterable[str]) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise DataError(f"{path}: row {index} is not a table")
    for key in required:
        if row.get(key) in (None, ""):
            raise DataError(f"{path}: row {index} ({row.get('id', '?')}) lacks '{key}'")
    conf = row.get("confidence")
    if conf and conf not in CONFIDENCE:
        raise DataError(f"{path}: row {index} has confidence {conf!r}; use one of {', '.join(CONFIDENCE)}")
    return row


@functools.lru_cache(maxsize=None)
def cached_toml(name: str, table: str, required: tuple[str, ...] = ("id", "source")) -> tuple[dict[str, Any], ...]:
    """Rows of the packaged table `name`, each checked for `required` keys, loaded once per process."""
    return tuple(load_toml(data_path(name), table, required))
