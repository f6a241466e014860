"""pytest plugin of benchmarks/suite_time.py: runs only "the same tests" as an earlier commit, and
records what each test cost.

RCOMPAT_SUITE_IDS names a file of test ids collected at that commit (one per line); the tests collected
today are matched to them (`same_tests`) and the rest deselected. RCOMPAT_SUITE_PROFILE names a
directory: each xdist worker (or the single process) appends one JSON line per test phase there (test
id, phase, start and end on the wall clock, CPU seconds of the worker and of the children it reaped),
and the controller writes summary.json (outcome counts, the ids matched and those gone).
"""
from __future__ import annotations

import json
import os
import re
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

# Tests renamed since the commit, old name -> today's (same subject, same assertions or stricter).
RENAMED = {
    "tests/race/test_maps.py::test_doctor_race_area_is_fast":
        "tests/race/test_maps.py::test_doctor_race_area_is_kept_short",
    "tests/tools/test_pattern_safety.py::test_explain_on_one_hostile_line_and_a_long_log_is_fast":
        "tests/tools/test_pattern_safety.py::test_explain_on_one_hostile_line_and_a_long_log_is_linear",
    # tests/tools/test_from_r.py ran the testthat suite of the sourced R script; the R package replaced both
    "tests/tools/test_from_r.py::test_testthat_suite_passes_from_r":
        "tests/rpkg/test_r_package.py::test_the_testthat_suite_ran_against_rcompat_not_skipped",
}
# Paths through symlinks in image layers were refused then (one test per case and extraction mode) and
# resolve inside the root now (one test per case, tests/upgrade/test_through_symlinks.py).
RENAMED.update({
    f"tests/upgrade/test_source.py::test_hostile_input_is_one_line_and_writes_nothing_outside[symlink-{case}-{mode}]":
        f"tests/upgrade/test_through_symlinks.py::test_paths_through_symlinks_resolve_inside_the_root[{case}]"
    for case in ("absolute", "relative", "non-elf", "after-skip") for mode in ("extract", "temporary")})
MOVED = {"tests/tools/test_explain.py": "tests/explain/test_explain.py",
         "tests/tools/test_explain_corpus.py": "tests/explain/test_explain_corpus.py"}


def _family(nodeid: str) -> str:
    """The id without what varies between collections: the pattern tests' hash suffix (the old ids
    used Python's per-process hash()) and the index pytest appends to a repeated parameter of the
    remedy-command tests (more rows since, so the numbering moved)."""
    nodeid = re.sub(r"(test_pattern_\w+\[[^:\]]+:[^:\]]+):\d+\]$", r"\1]", nodeid)
    return re.sub(r"(test_command_parses_with_the_real_cli\[.*?)\d+\]$", r"\1]", nodeid)


def _successors(old: str) -> list[str]:
    """Today's possible ids of an old one: moved file, renamed test; corpus cases are now split into
    a development and a held-out set."""
    path, _, name = old.partition("::")
    new = RENAMED.get(old, f"{MOVED.get(path, path)}::{name}")
    if "::test_case_is_explained[" in new:
        return [new.replace("[", f"[{split}:", 1) for split in ("dev", "held")]
    return [new]


def same_tests(old_ids: list[str], today: list[str]) -> tuple[list[str], list[str]]:
    """Today's ids for the old ones (exact, moved, renamed, or the same family, as many as there were),
    and the old ids with no successor."""
    today_set = set(today)
    by_family: dict[str, list[str]] = defaultdict(list)
    for nodeid in sorted(today):
        by_family[_family(nodeid)].append(nodeid)
    chosen: list[str] = []
    gone: list[str] = []
    pending: dict[str, int] = defaultdict(int)
    for old in old_ids:
        found = [new for new in _successors(old) if new in today_set]
        if found:
            chosen.append(found[0])
        else:
            pending[_family(_successors(old)[0])] += 1
    taken = set(chosen)
    for family, count in pending.items():
        spare = [n for n in by_family.get(family, []) if n not in taken][:count]
        if not spare and _tail(family):  # a parameter named by position in one run, spelled out in another
            spare = [n for n in today if n not in taken and _tail(n) == _tail(family)][:count]
        chosen += spare
        taken.update(spare)
        gone += [family] * (count - len(spare))
    return sorted(set(chosen)), gone


def _tail(nodeid: str) -> tuple[str, str] | None:
    """(test function, last part of its parameter id): `[content2-must be numbers]` and
    `[{"rcompat_s": "fast"}\\n-must be numbers]` are the same case of the same test."""
    head, bracket, param = nodeid.partition("[")
    return (head, param.rstrip("]").rsplit("-", 1)[-1]) if bracket and "-" in param else None


def _plain(nodeid: str) -> str:
    """The id without the "@group" that xdist's loadgroup appends (tests/conftest.py)."""
    return nodeid.rpartition("@")[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def _cpu() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


class SuitePlugin:
    def __init__(self, config):
        self.config = config
        self.worker = getattr(config, "workerinput", {}).get("workerid", "main")
        self.profile = Path(os.environ["RCOMPAT_SUITE_PROFILE"]) if os.environ.get("RCOMPAT_SUITE_PROFILE") else None
        self.outcomes: dict[str, int] = defaultdict(int)
        self.failed: list[str] = []
        self.gone: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        ids_file = os.environ.get("RCOMPAT_SUITE_IDS")
        if not ids_file:
            return
        old = [line.strip() for line in Path(ids_file).read_text().splitlines()
               if line.strip() and not line.startswith("#")]
        keep, self.gone = same_tests(old, [_plain(item.nodeid) for item in items])
        keep = set(keep)
        if self.profile:  # under xdist the workers collect, not the controller: each says what it matched
            (self.profile / f"collected-{self.worker}.json").write_text(
                json.dumps({"old": len(old), "matched": len(keep), "gone": self.gone}))
        config.hook.pytest_deselected(items=[i for i in items if _plain(i.nodeid) not in keep])
        items[:] = [i for i in items if _plain(i.nodeid) in keep]

    def _phase(self, item, phase):
        start, cpu = time.time(), _cpu()
        yield
        if self.profile:
            end, after = time.time(), _cpu()
            line = {"id": _plain(item.nodeid), "phase": phase, "worker": self.worker, "start": start, "end": end,
                    "cpu_self": after[0] - cpu[0], "cpu_children": after[1] - cpu[1]}
            with open(self.profile / f"{self.worker}.jsonl", "a") as out:
                out.write(json.dumps(line) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._phase(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._phase(item, "teardown")

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            if report.when != "call" and report.outcome == "skipped":
                self.outcomes["skipped"] += 1
            elif report.when == "call":
                self.outcomes["xfailed" if hasattr(report, "wasxfail") else report.outcome] += 1
            else:
                self.outcomes["error"] += 1
            if report.outcome == "failed":
                self.failed.append(report.nodeid)

    def pytest_sessionfinish(self, session):
        if self.worker != "main" or not self.profile:
            return
        collected = [json.loads(p.read_text()) for p in sorted(self.profile.glob("collected-*.json"))]
        summary = {"outcomes": dict(self.outcomes), "failed": self.failed,
                   "collected": collected[0] if collected else None,
                   "workers_agree": all(c == collected[0] for c in collected)}
        (self.profile / "summary.json").write_text(json.dumps(summary, indent=1))


def pytest_configure(config):
    config.pluginmanager.register(SuitePlugin(config), "rcompat-suite-timer")
