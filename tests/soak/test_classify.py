"""The rules on series shaped as the workloads shape them (the real runs are in test_verdicts.py):
a single step late in the run is not a leak, noise is not growth, a staircase is."""
from __future__ import annotations

import random

from rcompat.soak.classify import LEAK, PLATEAU, SETTLING, FLAT, fit, judge

MIB = 1 << 20


def test_fit_recovers_an_exact_slope():
    slope, se, deviation = fit([5.0 + 3.0 * i for i in range(20)])
    assert abs(slope - 3.0) < 1e-12 and se == 0 and deviation == 0


def test_noise_around_a_level_is_flat():
    rng = random.Random(1)
    values = [200 * MIB + rng.randrange(-64, 64) * 4096 for _ in range(100)]
    assert judge("rss", values).verdict == FLAT


def test_one_late_step_is_settling_not_a_leak():
    values = [100 * MIB] * 80 + [150 * MIB] * 20
    assert judge("rss", values).verdict == SETTLING


def test_a_staircase_of_cache_segments_that_never_stops_is_a_leak():
    values = [(i // 10) * 2 * MIB for i in range(200)]  # a 2 MiB segment every 10 iterations
    assert judge("cuda_reserved", values).verdict == LEAK


def test_growth_that_stops_is_a_plateau():
    values = [min(i, 30) * MIB for i in range(100)]
    assert judge("rss", values).verdict == PLATEAU


def test_memory_returned_by_each_collection_is_lazy():
    after = [50 * MIB] * 40
    before = [a + 8 * MIB for a in after]
    verdict = judge("rss", after, [b - a for b, a in zip(before, after)])
    assert verdict.lazy and verdict.returned == 8 * MIB and verdict.verdict == FLAT
