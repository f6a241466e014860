"""Verdicts of real soak runs: a workload that keeps tensors leaks, one that fills a cache passes, an
R workload whose memory a forced gc() returns is lazy GC and not a leak."""
from __future__ import annotations

import csv
import json

MIB = 1 << 20


def report(proc) -> dict:
    assert proc.stdout.startswith("{"), proc.stderr
    return json.loads(proc.stdout)


def by_id(doc: dict) -> dict[str, dict]:
    return {f["id"]: f for f in doc["findings"]}


def test_tensors_kept_in_a_global_list_are_a_leak_with_a_slope_and_a_projection(python_leak):
    proc, series = python_leak
    assert proc.returncode == 1, proc.stderr
    doc = report(proc)
    host = by_id(doc)["SOAK-HOST"]
    assert host["status"] == "fail" and host["title"].startswith("leak")
    rss = host["evidence"]["rss"]
    assert rss["verdict"] == "leak"
    assert 0.9 * MIB <= rss["tail_slope"] <= 1.2 * MIB  # 1 MiB of float32 per iteration, counted
    assert host["evidence"]["py_blocks"]["verdict"] == "leak"  # one tensor object per iteration
    left = host["evidence"]["projected_iterations"]
    available = doc["facts"]["soak"]["limits"]["host_available"]
    assert left == int(available // rss["tail_slope"])
    assert by_id(doc)["SOAK-RUN"]["status"] == "ok"
    assert by_id(doc)["SOAK-LAZY-GC"]["status"] == "ok"
    with open(series, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 24 and [int(r["iteration"]) for r in rows] == list(range(24))
    grown = int(rows[-1]["rss_after"]) - int(rows[0]["rss_after"])
    assert 23 * MIB <= grown <= 23 * 1.2 * MIB
    assert doc["facts"]["soak"]["series"]["rss_after"] == [int(r["rss_after"]) for r in rows]


def test_a_cache_that_fills_then_stays_is_a_plateau_and_passes(python_cache):
    assert python_cache.returncode == 0, python_cache.stdout + python_cache.stderr
    doc = report(python_cache)
    host = by_id(doc)["SOAK-HOST"]
    assert host["status"] == "ok" and "plateau" in host["title"], host
    rss = host["evidence"]["rss"]
    assert rss["verdict"] == "plateau"
    assert rss["head_growth"] >= 5 * MIB       # the cache's 8 MiB fill in the first half
    assert abs(rss["tail_growth"]) < 1 * MIB   # and nothing after


def test_memory_a_forced_gc_returns_in_r_is_lazy_gc_not_a_leak(r_lazy):
    assert r_lazy.returncode == 0, r_lazy.stdout + r_lazy.stderr
    found = by_id(report(r_lazy))
    lazy = found["SOAK-LAZY-GC"]
    assert lazy["status"] == "warn" and lazy["title"].startswith("R's lazy GC"), lazy
    returned = lazy["evidence"]["rss"]["returned_per_iteration"]
    assert 7.5e6 <= returned <= 8.5e6  # numeric(1e6): 8 MB, freed by each gc()
    assert found["SOAK-HOST"]["status"] == "ok" and found["SOAK-HOST"]["evidence"]["rss"]["verdict"] != "leak"
    assert found["SOAK-R-HEAP"]["status"] == "ok"
    assert "threshold_call_gc" in lazy["remedy"]


def test_r_objects_kept_in_an_environment_are_a_leak_of_r_heap(r_leak):
    assert r_leak.returncode == 1, r_leak.stderr
    found = by_id(report(r_leak))
    heap = found["SOAK-R-HEAP"]
    assert heap["status"] == "fail"
    assert 0.95 * MIB <= heap["evidence"]["r_heap"]["tail_slope"] <= 1.1 * MIB  # 131072 doubles
    assert found["SOAK-LAZY-GC"]["status"] == "ok"


def test_json_facts_keep_the_documented_shape(python_cache):
    soak = report(python_cache)["facts"]["soak"]
    assert set(soak) >= {"options", "warmups", "child", "limits", "timing", "verdicts", "series"}
    assert soak["options"]["iterations"] == 30 and soak["warmups"] == 0
    assert set(soak["series"]) >= {"iteration", "rss_after", "rss_before", "py_blocks_after", "collected"}
    assert all(len(col) == 30 for col in soak["series"].values())
    assert soak["verdicts"]["rss"]["verdict"] == "plateau"
    json.dumps(soak)  # plain JSON all through


def test_the_default_r_workload_runs_through_the_r_torch_api(stand_in_torch, cli):
    """soak_workload.R against rcompat's stand-in for R torch (fixtures/rpkgs/torch-parity: plain R,
    not torch): every call it makes exists, and nothing it computes is kept."""
    proc = cli("soak", "--side", "r", "--iterations", "12", "--warmups", "1", "--format", "json",
               env={"R_LIBS": str(stand_in_torch)})
    doc = report(proc)
    found = by_id(doc)
    assert found["SOAK-RUN"]["status"] == "ok", found["SOAK-RUN"]
    assert doc["facts"]["soak"]["child"]["workload"].endswith("soak_workload.R")
    assert found["SOAK-R-HEAP"]["evidence"]["r_heap"]["verdict"] != "leak"
