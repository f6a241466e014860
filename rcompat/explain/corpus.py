"""explain measured like a model: the corpus of real error texts split into a development part and a
held-out part by the source each text came from, and the rate of texts each part places.

The split is by source, not by text, so two reports from one project fall on the same side: the key is
the GitHub owner/repository of the source URL (or its host, or the "owner/repo" a citation names), and
a text is held out when the first two hex digits of SHA-256(key), read as a number, are below
HELD_OUT_BELOW (256ths). Rules are written from the development part only; the held-out rate is the
figure to push, and a new rule that raises the development rate but not the held-out one is fitting.

A case is placed when every symptom or class it expects is reported for it, and, for a code error
(`kind = "code"`), when nothing is `fail` (the environment is not blamed).
"""
from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

HELD_OUT_BELOW = 38  # of 256: 15% of the sources, 37% of the cases (mlverse/torch, pytorch, rpy2 among them)
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "explain"
SETS = {
    "corpus": "corpus.toml",          # split into development and held-out by source
    "new": "new_cases.toml",          # collected after the rules were written: held out as a whole
    "code": "code_errors.toml",       # user-code errors: never `fail`
}


@dataclass(frozen=True)
class Rate:
    placed: int
    total: int
    missed: tuple[str, ...] = ()  # sources of the cases not placed

    @property
    def percent(self) -> float:
        return 100.0 * self.placed / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{self.placed}/{self.total} ({self.percent:.1f}%)"


def split_key(source: str) -> str:
    m = re.search(r"github\.com/([\w.-]+/[\w.-]+)", source)
    if m:
        return m.group(1).lower()
    m = re.search(r"https?://([^/\s]+)", source)
    if m:
        return m.group(1).lower()
    m = re.search(r"([\w.-]+/[\w.-]+)", source)
    return (m.group(1) if m else source).lower()


def is_held_out(source: str) -> bool:
    return int(hashlib.sha256(split_key(source).encode()).hexdigest()[:2], 16) < HELD_OUT_BELOW


def load_cases(name: str = "corpus", directory: "Path | None" = None) -> list[dict]:
    path = (directory or FIXTURES) / SETS.get(name, name)
    return tomllib.loads(path.read_text(encoding="utf-8"))["case"]


def split(cases: Iterable[dict]) -> tuple[list[dict], list[dict]]:
    """(development, held-out)."""
    dev, held = [], []
    for case in cases:
        (held if is_held_out(case["source"]) else dev).append(case)
    return dev, held


def placed(case: dict, report) -> bool:
    got = {f.evidence.get("symptom") for f in report.findings}
    if case.get("kind") == "code":
        return not any(str(f.status) == "fail" for f in report.findings) and set(case["expect"]) <= got
    if not set(case["expect"]) <= got:
        return False
    text = " ".join(f"{f.message} {f.remedy}" for f in report.findings).lower()
    return all(word.lower() in text for word in case.get("mentions", ()))


def rate(cases: Iterable[dict], symptoms=None) -> Rate:
    from rcompat.explain.report import explain

    hits, total, missed = 0, 0, []
    for case in cases:
        total += 1
        if placed(case, explain(case["text"], symptoms)):
            hits += 1
        else:
            missed.append(case["source"])
    return Rate(hits, total, tuple(missed))


def rates(symptoms=None, directory: "Path | None" = None) -> dict[str, Rate]:
    """The rate of each part: corpus development, corpus held-out, the new texts, the code errors."""
    from rcompat.explain.symptoms import load_symptoms

    symptoms = symptoms if symptoms is not None else load_symptoms()
    dev, held = split(load_cases("corpus", directory))
    out = {"corpus development": rate(dev, symptoms), "corpus held-out": rate(held, symptoms)}
    for name, label in (("new", "new texts (held-out)"), ("code", "code errors (never fail)")):
        path = (directory or FIXTURES) / SETS[name]
        if path.exists():
            out[label] = rate(load_cases(name, directory), symptoms)
    return out
