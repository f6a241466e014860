import pytest

from rcompat.versions import Specifier, Version, matches


@pytest.mark.parametrize("low, high", [
    ("0.12.1", "0.12.2"), ("0.12.2", "0.12.2.9000"), ("1.9", "1.28"), ("4.2.2", "4.5"),
    ("2.16.0rc1", "2.16.0"), ("2.13.0", "2.14.1+cpu"), ("1.2-3", "1.2-10"), ("535.54.03", "535.104.05"),
    ("2.0.0.dev1", "2.0.0a1"),
])
def test_ordering(low, high):
    assert Version.parse(low) < Version.parse(high)
    assert not Version.parse(high) < Version.parse(low)


def test_trailing_zeros_and_local_tags_compare_equal():
    assert Version.parse("4.5") == Version.parse("4.5.0")
    assert Version.parse("2.13.0+cpu") == Version.parse("2.13.0")
    assert hash(Version.parse("4.5")) == hash(Version.parse("4.5.0"))


@pytest.mark.parametrize("version, spec, expected", [
    ("4.5.1", ">=4.5", True), ("4.4.3", ">=4.5", False),
    ("0.12.2.9000", "<0.12.2", False), ("0.12.1", ">=0.10, <0.12.2", True),
    ("2.15.0", "==2.15.*", True), ("2.16.1", "==2.15.*", False), ("2.15", "==2.15.*", True),
    ("1.28", "~=1.20", True), ("2.0", "~=1.20", False), ("0.10.1", "!=0.10.1", False),
    ("12.4", "", True),
])
def test_specifiers(version, spec, expected):
    assert matches(version, spec) is expected


def test_missing_version_matches_only_empty_spec():
    assert matches(None, "") is True
    assert matches(None, ">=1") is False


@pytest.mark.parametrize("bad", ["", "abc", "1..2x", "v"])
def test_bad_versions_raise(bad):
    with pytest.raises(ValueError):
        Version.parse(bad)


def test_bad_specifier_raises():
    with pytest.raises(ValueError):
        Specifier(">>1").contains("1.0")
