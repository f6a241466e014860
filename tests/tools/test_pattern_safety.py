"""Every regex of the knowledge tables runs in linear time (issue 21: one 50 KB line took explain 17 s).

Each pattern is held to the rules of rcompat/data/patterns.py and timed on hostile 1 MB lines built
from its own literals. A quadratic pattern would never finish a 1 MB line, so each line is first tried
at 16 KB, where a quadratic pattern already costs seconds and a linear one well under a millisecond.
"""
from __future__ import annotations

import re
import time

import pytest

from rcompat.data.patterns import adversarial_lines, required_literal, table_patterns, unsafe_constructs

PATTERNS = list(table_patterns())
SMALL, LARGE = 16 * 1024, 1024 * 1024
SMALL_BOUND_S = 0.05   # linear: ~0.2 ms; the quadratic patterns issue 21 found: 0.5-3 s
LARGE_BOUND_S = 1.0    # linear: 1-30 ms on a loaded 2-core machine


def _id(item):
    table, row, pattern = item
    return f"{table}:{row}:{abs(hash(pattern)) % 10_000}"


def test_every_table_with_patterns_is_covered():
    tables = {t for t, _, _ in PATTERNS}
    assert {"symptoms.toml", "race_symptoms.toml", "cuda_torch_unavailable.toml", "deprecated_api.toml",
            "maps_runtimes.toml"} <= tables
    assert len(PATTERNS) > 60


@pytest.mark.parametrize("item", PATTERNS, ids=_id)
def test_pattern_keeps_the_linear_subset(item):
    table, row, pattern = item
    assert unsafe_constructs(pattern) == [], f"{table} {row}: {pattern}"


@pytest.mark.parametrize("item", PATTERNS, ids=_id)
def test_pattern_is_linear_on_hostile_lines(item):
    table, row, pattern = item
    compiled = re.compile(pattern)
    for small in adversarial_lines(pattern, SMALL):
        elapsed = _time(compiled, small)
        assert elapsed < SMALL_BOUND_S, f"{table} {row}: {elapsed:.3f} s on 16 KB of {small[:40]!r}"
    slowest = max(_time(compiled, line) for line in adversarial_lines(pattern, LARGE))
    assert slowest < LARGE_BOUND_S, f"{table} {row}: {slowest:.3f} s on a 1 MB line"


def _time(compiled: re.Pattern, line: str) -> float:
    start = time.perf_counter()
    for _ in compiled.finditer(line):
        pass
    return time.perf_counter() - start


def test_the_rules_reject_what_was_slow():
    assert unsafe_constructs(r"(?P<lib>[^\s:]*libstdc\+\+\.so): version")  # issue 21's example
    assert unsafe_constructs(r"x(?:\.\w+)*")
    assert unsafe_constructs(r"load\((?![^)]*weights_only)")
    assert unsafe_constructs(r"(?<![^\s:])(?P<lib>[^\s:]*libstdc\+\+\.so): version") == []
    slow = re.compile(r"(?P<lib>[^\s:]*libstdc\+\+\.so): version")
    assert any(_time(slow, line) > SMALL_BOUND_S for line in adversarial_lines(slow.pattern, SMALL))


def test_required_literal_is_in_every_match():
    assert required_literal(re.compile(r"(?P<lib>lib\w+\.so): cannot open shared object file")) == \
        ": cannot open shared object file"
    assert required_literal(re.compile(r"(?i)NCCL error: (?:a|b)")) == "nccl error: "
    assert required_literal(re.compile(r"a|b")) is None
    for _, _, pattern in PATTERNS:
        compiled = re.compile(pattern)
        literal = required_literal(compiled)
        assert literal is None or literal.strip(), pattern


def test_explain_on_one_hostile_line_and_a_long_log_is_fast():
    from rcompat.explain import explain, load_symptoms

    symptoms = load_symptoms()
    line = "/a" * 256 * 1024 + " libstdc++.so.6" * 2000 + "liblantern.so" * 20000  # ~1 MB, no newline
    start = time.perf_counter()
    explain(line, symptoms)
    assert time.perf_counter() - start < 2.0  # issue 21: a 50 KB line took 17 s
    log = ("epoch 1 step 2 loss 0.1234 /data/shard-001.parquet\n" * 20_000 +
           "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\n") * 10
    start = time.perf_counter()
    report = explain(log, symptoms)  # ~10 MB
    assert time.perf_counter() - start < 3.0  # generous: benchmarks/bench_explain.py measures ~0.3 s
    assert [f.evidence["symptom"] for f in report.findings] == ["shared-library-not-found"]
