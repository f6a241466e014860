"""abi-diff against gcc-built fixture libraries with known changes, and against abidiff on libc10.so
from two real torch wheels."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rcompat.elf import ElfError, abi_diff
from rcompat.elf.abi.render import abi_findings, render_abi


@pytest.fixture(scope="session")
def libc10_pair(tmp_path_factory, diff_build):
    for wheel in (diff_build.WHEEL_OLD, diff_build.WHEEL_NEW):
        if not wheel.exists():
            pytest.skip(f"torch wheel {wheel} not on this machine")
    where = tmp_path_factory.mktemp("c10")
    return (diff_build.extract_from_wheel(diff_build.WHEEL_OLD, "torch/lib/libc10.so", where / "old" / "libc10.so"),
            diff_build.extract_from_wheel(diff_build.WHEEL_NEW, "torch/lib/libc10.so", where / "new" / "libc10.so"))


def abidiff_sets(old: Path, new: Path) -> dict[str, set[str]]:
    """Removed/added function and variable symbols as abidiff lists them ('[D] name@@VER, aliases …')."""
    tool = shutil.which("abidiff")
    if not tool:
        pytest.skip("abidiff not installed (Debian abigail-tools)")
    out = subprocess.run([tool, "--no-show-locs", str(old), str(new)], capture_output=True, text=True).stdout
    sets = {k: set() for k in ("removed_functions", "added_functions", "removed_variables", "added_variables")}
    current = None
    for line in out.splitlines():
        m = re.match(r"\d+ (Removed|Added) (function|variable) symbols? not referenced by debug info", line)
        if m:
            current = f"{m[1].lower()}_{m[2]}s"
            continue
        m = re.match(r"  \[[AD]\] ([^\s,]+)", line)
        if m and current:
            sets[current].add(m[1])
    return sets


def our_sets(diff) -> dict[str, set[str]]:
    return {f"{change}_{kind}s": {c.symbol.label for c in getattr(diff, change) if c.kind == kind}
            for change in ("removed", "added") for kind in ("function", "variable")}


def test_every_fixture_change_is_reported_and_nothing_else(demo):
    diff = abi_diff(demo["v1"], demo["v2"])
    assert (diff.old_soname, diff.new_soname) == ("libdemo.so.1", "libdemo.so.2")
    assert [(c.symbol.name, c.symbol.version, c.kind) for c in diff.removed] == [("demo_old_api", "DEMO_1.0", "function")]
    assert [(c.symbol.name, c.symbol.version, c.kind) for c in diff.added] == [("demo_new_api", "DEMO_2.0", "function")]
    assert sorted((c.symbol.name, c.change, c.detail) for c in diff.changed) == [
        ("demo_config", "size", "8 → 40 bytes"), ("demo_hook", "binding", "GLOBAL → WEAK")]
    assert diff.versions_added == ["DEMO_2.0"] and diff.versions_removed == []
    assert diff.needed_added == ["libm.so.6"] and diff.needed_removed == []
    assert diff.exit_code == 12 and diff.verdict == "incompatible ABI change"
    size_change = next(c for c in diff.changed if c.change == "size")
    assert size_change.incompatible and (size_change.old.size, size_change.new.size) == (8, 40)


def test_same_sets_as_abidiff_on_the_fixture(demo):
    assert our_sets(abi_diff(demo["v1"], demo["v2"])) == abidiff_sets(demo["v1"], demo["v2"])


def test_same_sets_as_abidiff_on_libc10_from_two_torch_wheels(libc10_pair):
    old, new = libc10_pair
    ours, theirs = our_sets(abi_diff(old, new)), abidiff_sets(old, new)
    assert ours == theirs
    assert sum(map(len, ours.values())) > 0  # the pair really differs (13 added, 3 removed in 2.13→2.14.1)


def test_cxx_names_are_demangled_and_grouped_by_namespace_and_class(libc10_pair):
    diff = abi_diff(*libc10_pair)
    by_name = {c.symbol.name: c for c in diff.symbol_changes()}
    activate = by_name["_ZN3c104impl17FakeTensorModeTLS8activateEv"]
    assert activate.demangled == "c10::impl::FakeTensorModeTLS::activate()"
    assert (activate.namespace, activate.scope) == ("c10", "c10::impl::FakeTensorModeTLS")
    text = render_abi(diff, "text", demangle=True)
    assert "  c10:: (" in text and "    c10::impl::FakeTensorModeTLS (6)" in text


def test_filter_restricts_symbol_changes_to_the_public_api(libc10_pair):
    diff = abi_diff(*libc10_pair, filter=r"^c10::impl::")
    assert diff.symbol_changes() and all(c.demangled.startswith("c10::impl::") for c in diff.symbol_changes())
    assert diff.exit_code == 4  # only additions are left: compatible


def test_dependent_importing_the_removed_function_is_broken_the_other_is_not(demo):
    diff = abi_diff(demo["v1"], demo["v2"], used_by=[demo["user_old_api"], demo["user_stable"]])
    broken, stable = diff.dependents
    assert broken.broken and [(p.name, p.version, p.change) for p in broken.broken_imports] == [
        ("demo_old_api", "DEMO_1.0", "removed")]
    assert not stable.broken and stable.broken_imports == [] and stable.imports_checked == 1
    assert "libdemo.so.2" in stable.soname_note  # the SONAME bump is explained, not counted as breakage
    assert diff.removed[0].breaking_for == [str(demo["user_old_api"])]
    assert diff.exit_code == 12
    only_stable = abi_diff(demo["v1"], demo["v2"], used_by=[demo["user_stable"]])
    assert only_stable.exit_code == 4 and "compatible with the given dependents" in only_stable.verdict


def test_identical_libraries_have_no_change(demo):
    diff = abi_diff(demo["v1"], demo["v1"])
    assert not diff.has_changes and diff.exit_code == 0 and diff.symbol_changes() == []


def test_frame_has_one_row_per_symbol_change(demo):
    frame = abi_diff(demo["v1"], demo["v2"]).to_frame()
    assert sorted(zip(frame["name"], frame["change"])) == [
        ("demo_config", "size"), ("demo_hook", "binding"), ("demo_new_api", "added"), ("demo_old_api", "removed")]
    assert frame.loc[frame["name"] == "demo_config", "new_size"].item() == 40


def test_findings_name_each_kind_of_change(demo):
    ids = {f.id: f.status.value for f in abi_findings(abi_diff(demo["v1"], demo["v2"], used_by=[demo["user_old_api"]]))}
    assert ids["abi.verdict"] == "fail" and ids["abi.soname"] == "fail" and ids["abi.removed"] == "fail"
    assert ids["abi.size"] == "fail" and ids["abi.binding"] == "warn" and ids["abi.needed"] == "warn"
    assert ids["abi.used_by.libuser_old_api.so"] == "fail"


def test_cli_exit_bitmask_and_formats(cli, demo):
    done = cli("elf", "abi-diff", str(demo["v1"]), str(demo["v2"]), "--used-by", str(demo["user_old_api"]))
    assert done.returncode == 12, done.stderr
    assert "[D] demo_old_api@@DEMO_1.0  ← breaks libuser_old_api.so" in done.stdout
    assert "SONAME changed: libdemo.so.1 → libdemo.so.2" in done.stdout
    data = json.loads(cli("elf", "abi-diff", str(demo["v1"]), str(demo["v2"]), "--format", "json").stdout)
    assert data["exit_code"] == 12 and data["counts"]["removed_functions"] == 1
    md = cli("elf", "abi-diff", str(demo["v1"]), str(demo["v2"]), "--format", "markdown")
    assert md.returncode == 12 and "| `demo_old_api@@DEMO_1.0` | removed |" in md.stdout
    assert cli("elf", "abi-diff", str(demo["v1"]), str(demo["v1"])).returncode == 0


@pytest.mark.parametrize("bad", ["missing", "directory", "text"])
def test_bad_input_is_one_line_exit_2(cli, demo, tmp_path, bad):
    path = {"missing": tmp_path / "nope.so", "directory": tmp_path,
            "text": tmp_path / "notes.txt"}[bad]
    if bad == "text":
        path.write_text("not a library\n")
    with pytest.raises(ElfError):
        abi_diff(demo["v1"], path)
    done = cli("elf", "abi-diff", str(demo["v1"]), str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and str(path) in done.stderr
    assert "Traceback" not in done.stderr
    used_by = cli("elf", "abi-diff", str(demo["v1"]), str(demo["v2"]), "--used-by", str(path))
    assert used_by.returncode == 2 and len(used_by.stderr.strip().splitlines()) == 1


def test_bad_filter_is_a_usage_error(cli, demo):
    done = cli("elf", "abi-diff", str(demo["v1"]), str(demo["v2"]), "--filter", "(")
    assert done.returncode == 2 and "regular expression" in done.stderr
