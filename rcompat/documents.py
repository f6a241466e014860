"""JSON and TOML a user hands rcompat, parsed into checked values: every bad document is one line.

Parsers recurse once per level of nesting, so `[[[[…` 100,000 deep would end in RecursionError (an
"internal error") or, in a thread, a crash; MAX_DEPTH is far deeper than any real manifest, lock file
or rule table and is checked before and after parsing. Types are checked at the boundary with `expect`,
so `"RepoTags": [1]` or `"manifests": 5` is "…: 'manifests' is a number, not a list", not a TypeError
three calls later.
"""
from __future__ import annotations

import json
import re
import sys
from typing import Any

from rcompat.errors import RcompatError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_DEPTH = 64
_DEEP = re.compile(r"(?:[\[{]\s*){%d}" % (MAX_DEPTH + 1))  # the two sets share no character: linear
_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number",
               bool: "true or false", type(None): "null"}


def parse_json(data: "bytes | str", name: str, error: type[RcompatError] = RcompatError, hint: str = "") -> Any:
    """The JSON value of `data` (the text of the file or member `name`); `error` naming it otherwise
    (`hint`, e.g. what the file should be, ends the message of text that is not JSON)."""
    hint = f"; {hint}" if hint else ""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"{name}: not a text file (byte {exc.start} is not UTF-8){hint}") from None
    _check_brackets(data, name, error)
    try:
        value = json.loads(data)
    except RecursionError:
        raise error(f"{name}: nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise error(f"{name}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}){hint}") from None
    except ValueError as exc:  # a number too long to convert
        raise error(f"{name}: not valid JSON ({_one_line(exc)}){hint}") from None
    check_depth(value, name, error)
    return value


def parse_toml(text: str, name: str, error: type[RcompatError] = RcompatError) -> dict[str, Any]:
    _check_brackets(text, name, error)
    try:
        value = tomllib.loads(text)
    except RecursionError:
        raise error(f"{name}: nested more than {MAX_DEPTH} levels deep") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{name}: not valid TOML ({_one_line(exc)})") from None
    check_depth(value, name, error)
    return value


def _check_brackets(text: str, name: str, error: type[RcompatError]) -> None:
    """Refuse a run of more than MAX_DEPTH opening brackets before the parser recurses into it. Brackets
    inside strings count too, so this errs only on text no real document holds; the exact depth is
    checked on the parsed value."""
    if _DEEP.search(text):
        raise error(f"{name}: nested more than {MAX_DEPTH} levels deep")


def check_depth(value: Any, name: str, error: type[RcompatError] = RcompatError) -> None:
    """Refuse a value nested more than MAX_DEPTH levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise error(f"{name}: nested more than {MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in children)


def type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def expect(value: Any, kind: "type | tuple[type, ...]", name: str, field: str,
           error: type[RcompatError] = RcompatError) -> Any:
    """`value` when it is a `kind` (bool is never a number); else `error` ("NAME: FIELD is X, not Y")."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return value
    wanted = " or ".join(dict.fromkeys(_TYPE_NAMES.get(k, k.__name__) for k in kinds))
    raise error(f"{name}: {field} is {type_name(value)}, not {wanted}")


def expect_list_of(value: Any, kind: "type | tuple[type, ...]", name: str, field: str,
                   error: type[RcompatError] = RcompatError) -> list:
    """`value` when it is a list of `kind`; else `error` naming the first bad item."""
    expect(value, list, name, field, error)
    for i, item in enumerate(value):
        expect(item, kind, name, f"{field}[{i}]", error)
    return value


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
