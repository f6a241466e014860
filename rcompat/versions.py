"""Version numbers as R, CRAN, PyPI, NVIDIA and CUDA write them, and specifiers over them.

R package versions are `major.minor[.patch[.dev]]` with `.` or `-` separators (`0.12.2.9000`, `1.2-3`,
`1.28`); Python ones may carry a local part (`2.13.0+cpu`) or a pre-release (`2.16.0rc1`); driver
versions have three numeric fields (`535.104.05`). packaging.version rejects `1.2-3`, so comparison is
done here: numeric fields compare as numbers, missing trailing fields count as 0, and a textual
pre-release tail sorts before the release it precedes.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from rcompat.errors import shown  # noqa: F401 - also for callers quoting versions

_SPLIT = re.compile(r"[.\-]")
# ASCII digits only, at most 12 to a field: `\d` would also take "٣" or "３" (which int() reads as 3), so
# one command could accept a version another refuses; a 5,000-digit field is no version either.
_PRE = re.compile(r"^([0-9]{1,12})(?:[-_.]?(a|alpha|b|beta|rc|c|pre|preview|dev)[-_.]?([0-9]{0,12}))?$",
                  re.I | re.A)
_TAG_ONLY = re.compile(r"^(a|alpha|b|beta|rc|c|pre|preview|dev)([0-9]{0,12})$", re.I | re.A)
_PRE_RANK = {"dev": -4, "a": -3, "alpha": -3, "b": -2, "beta": -2, "pre": -1, "preview": -1,
             "c": -1, "rc": -1}


@functools.total_ordering
@dataclass(frozen=True)
class Version:
    text: str
    release: tuple[int, ...]
    pre: tuple[int, int] | None = None  # (rank, number); None for a final release
    local: str = ""

    @classmethod
    def parse(cls, text: "str | Version") -> "Version":
        if isinstance(text, Version):
            return text
        raw = str(text).strip()
        body, _, local = raw.lstrip("vV").partition("+")
        if not body:
            raise ValueError(f"not a version: {shown(text)}")
        release: list[int] = []
        pre = None
        parts = _SPLIT.split(body)
        for i, part in enumerate(parts):
            tag = _TAG_ONLY.match(part)
            if tag and release and i == len(parts) - 1:  # "2.0.0.dev1": the tag is its own field
                pre = (_PRE_RANK[tag.group(1).lower()], int(tag.group(2) or 0))
                break
            m = _PRE.match(part)
            if not m:
                raise ValueError(f"not a version: {shown(text)}")
            release.append(int(m.group(1)))
            if m.group(2):
                if i != len(parts) - 1:
                    raise ValueError(f"not a version: {shown(text)}")
                pre = (_PRE_RANK[m.group(2).lower()], int(m.group(3) or 0))
        return cls(raw, tuple(release), pre, local)

    def _key(self, width: int) -> tuple:
        padded = self.release + (0,) * (width - len(self.release))
        return padded + ((1, 0) if self.pre is None else (0,) + self.pre)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            try:
                other = Version.parse(other)  # type: ignore[arg-type]
            except (ValueError, TypeError):
                return NotImplemented
        w = max(len(self.release), len(other.release))
        return self._key(w) == other._key(w)

    def __lt__(self, other: "Version | str") -> bool:
        other = Version.parse(other)
        w = max(len(self.release), len(other.release))
        return self._key(w) < other._key(w)

    def __hash__(self) -> int:
        trimmed = list(self.release)
        while len(trimmed) > 1 and trimmed[-1] == 0:
            trimmed.pop()
        return hash((tuple(trimmed), self.pre))

    def __str__(self) -> str:
        return self.text

    @property
    def major(self) -> int:
        return self.release[0]

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) > 1 else 0

    def truncate(self, n: int) -> "Version":
        return Version.parse(".".join(str(p) for p in (self.release + (0,) * n)[:n]))


_CLAUSE = re.compile(r"^\s*(==|!=|>=|<=|>|<|~=)?\s*([^\s,]+)\s*$")


@dataclass(frozen=True)
class Specifier:
    """A comma-separated conjunction such as `>=4.5, <0.12.2` or `==2.15.*`; empty matches all."""

    text: str

    def clauses(self) -> list[tuple[str, str]]:
        out = []
        for piece in (p for p in self.text.split(",") if p.strip()):
            m = _CLAUSE.match(piece)
            if not m:
                raise ValueError(f"bad version specifier {shown(self.text)}")
            out.append((m.group(1) or "==", m.group(2)))
        return out

    def contains(self, version: "Version | str") -> bool:
        v = Version.parse(version)
        return all(_match(op, target, v) for op, target in self.clauses())

    def __str__(self) -> str:
        return self.text


def _match(op: str, target: str, v: Version) -> bool:
    if target.endswith(".*"):
        prefix = Version.parse(target[:-2]).release
        hit = v.release[: len(prefix)] == prefix or (
            len(v.release) < len(prefix) and v.release + (0,) * (len(prefix) - len(v.release)) == prefix)
        if op == "==":
            return hit
        if op == "!=":
            return not hit
        raise ValueError(f"wildcard only with == or !=: {op}{target}")
    t = Version.parse(target)
    if op == "==":
        return v == t
    if op == "!=":
        return v != t
    if op == ">=":
        return v >= t
    if op == "<=":
        return v <= t
    if op == ">":
        return v > t
    if op == "<":
        return v < t
    if op == "~=":  # compatible release, as PEP 440: ~=2.2 means >=2.2, ==2.*
        upper = t.release[:-1] if len(t.release) > 1 else t.release
        return v >= t and v.release[: len(upper)] == upper
    raise ValueError(f"unknown operator {op}")


def matches(version: "str | Version | None", spec: str | None) -> bool:
    """True when `version` satisfies `spec`; a missing version satisfies nothing but an empty spec."""
    if spec is None or not str(spec).strip():
        return True
    if version is None or str(version).strip() == "":
        return False
    return Specifier(str(spec)).contains(version)
