"""The regular expressions of the knowledge tables, and why each runs in linear time.

Python's `re` backtracks, so a pattern like `[^\\s:]*libfoo\\.so: x` is quadratic on a long line without
the text: every start position rescans the run (a 50 KB line took 17 s in `rcompat explain`). google-re2
would guarantee linear time, but it is a compiled dependency the CLI would import on every explain; the
tables are instead written in a subset whose cost is linear in Python's engine, and `unsafe_constructs`
states that subset so a test holds every table to it:

- no unbounded quantifier inside another quantifier (`(a+)*`, `(?:\\.\\w+)*`);
- a pattern does not start with an unbounded run unless a lookbehind lets it start only where such a
  run begins (`(?<![^\\s:])[^\\s:]*`), so each run is scanned from one start only;
- lookarounds hold no unbounded quantifier (`(?![^)]*x)` rescans to the next `)` at every match).

`adversarial_lines` builds the hostile inputs the test times each pattern on (1 MB each).
`required_literal` gives explain a text every match must contain, so a 10 MB log is searched only by
the patterns whose literal occurs in it.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

PATTERN_KEYS = ("pattern", "patterns")
_LONG_RUN = 4096
_LEADING_RUN = 64  # a longer run at the start costs that much at every start position


def table_patterns(data_dir: "Path | None" = None) -> Iterator[tuple[str, str, str]]:
    """(table file, row id, pattern) for every regex in every TOML table of rcompat/data."""
    import tomllib

    data_dir = data_dir or Path(__file__).parent
    for path in sorted(data_dir.glob("*.toml")):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        for rows in doc.values():
            if not isinstance(rows, list):
                continue
            for row in rows:
                if not isinstance(row, dict):
                    continue
                for key in PATTERN_KEYS:
                    value = row.get(key)
                    for pattern in (value if isinstance(value, list) else [value] if value else []):
                        yield path.name, str(row.get("id", "?")), pattern


def required_literal(pattern: "re.Pattern[str]") -> str | None:
    """The longest text every match contains (lower-cased for (?i) patterns), or None when none is known."""
    from re import _parser  # noqa: PLC2701 - the parser of re itself; no public API exposes its tree

    try:
        tree = _parser.parse(pattern.pattern, pattern.flags)
    except re.error:
        return None
    best = max(_required_runs(tree), key=len, default="")
    if len(best) < 3:
        return None
    return best.lower() if pattern.flags & re.IGNORECASE else best


def unsafe_constructs(pattern: str) -> list[str]:
    """Why `pattern` may take more than linear time in Python's re (empty when it keeps the rules above)."""
    from re import _parser  # noqa: PLC2701

    tree = _parser.parse(pattern)
    problems: list[str] = []
    _walk(tree, problems, inside_repeat=False, inside_lookaround=False)
    first = _first_consuming(tree)
    if first is not None and _is_unbounded_repeat(first) and not _starts_with_lookbehind(tree):
        problems.append("starts with an unbounded run and no lookbehind: every start position rescans it")
    return problems


def adversarial_lines(pattern: str, size: int) -> list[str]:
    """Lines of `size` characters built to make `pattern` backtrack: its own literals repeated without
    the text that would complete a match, followed by long runs of what its classes accept."""
    from re import _parser  # noqa: PLC2701

    pieces = [p for p in _all_literal_runs(_parser.parse(pattern)) if p] or ["a"]
    fillers = ("a", "a/", " ", "0.", "/a.so", "lib", "_Z3a", "\t", "x:", "é")
    lines = [_fill(f, size) for f in fillers]
    for piece in dict.fromkeys(pieces):
        lines.append(_fill(piece, size))
        for filler in (" ", "a", "0", "/", ".", "\n"):
            lines.append(_fill(piece + filler, size))
            lines.append(piece + _fill(filler, size - len(piece)))
    for cut in range(1, len(pieces)):
        lines.append(_fill("a".join(pieces[:cut]) + "a", size))
    return lines


def _fill(unit: str, size: int) -> str:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def _required_runs(tree) -> Iterator[str]:
    """Literal runs every match of `tree` contains, in order (groups entered, optional parts skipped)."""
    from re import _constants as c  # noqa: PLC2701

    run: list[str] = []
    for op, arg in tree:
        if op is c.LITERAL:
            run.append(chr(arg))
            continue
        if op is c.SUBPATTERN:
            # a (?i:...) group matches other cases than its literals spell: nothing required from it
            inner = [] if arg[1] & c.SRE_FLAG_IGNORECASE else list(_required_runs(arg[-1]))
            yield "".join(run)
            run = []
            yield from inner
            continue
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) and arg[0] >= 1:
            yield "".join(run)
            run = []
            yield from _required_runs(arg[2])
            continue
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            continue  # zero-width: the literal run goes on
        yield "".join(run)
        run = []
    yield "".join(run)


def _all_literal_runs(tree) -> Iterator[str]:
    """Every literal run anywhere in `tree`, in pattern order (alternatives and optional parts too)."""
    from re import _constants as c  # noqa: PLC2701

    run: list[str] = []
    for op, arg in tree:
        if op is c.LITERAL:
            run.append(chr(arg))
            continue
        yield "".join(run)
        run = []
        for sub in _subtrees(op, arg):
            yield from _all_literal_runs(sub)
    yield "".join(run)


def _subtrees(op, arg) -> list:
    from re import _constants as c  # noqa: PLC2701

    if op is c.SUBPATTERN:
        return [arg[-1]]
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        return [arg[2]]
    if op is c.BRANCH:
        return list(arg[1])
    if op in (c.ASSERT, c.ASSERT_NOT):
        return [arg[1]]
    if op is c.ATOMIC_GROUP:
        return [arg]
    return []


def _walk(tree, problems: list[str], inside_repeat: bool, inside_lookaround: bool) -> None:
    from re import _constants as c  # noqa: PLC2701

    for op, arg in tree:
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            unbounded = arg[1] > _LONG_RUN
            if unbounded and inside_repeat:
                problems.append("an unbounded quantifier inside another quantifier")
            if unbounded and inside_lookaround:
                problems.append("an unbounded quantifier inside a lookaround")
            _walk(arg[2], problems, inside_repeat or unbounded, inside_lookaround)
            continue
        lookaround = op in (c.ASSERT, c.ASSERT_NOT)
        for sub in _subtrees(op, arg):
            _walk(sub, problems, inside_repeat, inside_lookaround or lookaround)


def _first_consuming(tree):
    """The first item of `tree` that consumes text (groups entered), or None."""
    from re import _constants as c  # noqa: PLC2701

    for op, arg in tree:
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            continue
        if op is c.SUBPATTERN:
            inner = _first_consuming(arg[-1])
            if inner is not None:
                return inner
            continue
        return op, arg
    return None


def _is_unbounded_repeat(item) -> bool:
    from re import _constants as c  # noqa: PLC2701

    op, arg = item
    return op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) and arg[1] > _LEADING_RUN


def _starts_with_lookbehind(tree) -> bool:
    from re import _constants as c  # noqa: PLC2701

    for op, arg in tree:
        if op in (c.ASSERT, c.ASSERT_NOT) and arg[0] < 0:
            return True
        if op is c.SUBPATTERN:
            return _starts_with_lookbehind(arg[-1])
        if op is not c.AT:
            return False
    return False
