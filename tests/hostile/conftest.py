"""Fixtures of the adversarial suite (tests/hostile/_harness.py)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def harness(load_helper):
    return load_helper("hostile_harness", Path(__file__).with_name("_harness.py"))


@pytest.fixture
def sentinel(harness, tmp_path):
    return harness.Sentinel(tmp_path / "sentinel")
