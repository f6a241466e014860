"""`rcompat fleet report` over real doctor reports varied like a cluster's nodes."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from rcompat.fleet.aggregate import Aggregator
from rcompat.fleet.reader import read_reports, report_files


@pytest.fixture(scope="session")
def base_report(load_helper):
    from pathlib import Path

    helper = load_helper("fleet_reports", Path(__file__).with_name("_reports.py"))
    return helper, helper.doctor_report()


@pytest.fixture
def fleet_dir(tmp_path, base_report):
    helper, base = base_report
    helper.write_fleet(tmp_path / "fleet", base, 64, odd_driver={17}, odd_lib={3, 40}, failing={18})
    return tmp_path / "fleet"


def _json(cli, *args):
    out = cli("fleet", "report", *args, "--format", "json")
    return out, json.loads(out.stdout)


def test_the_minority_is_named_and_the_majority_counted(cli, fleet_dir, base_report):
    out, data = _json(cli, str(fleet_dir))
    assert out.returncode == 1, out.stderr  # a node fails, and the driver must agree
    fleet = data["facts"]["fleet"]
    assert fleet["nodes"] == {"count": 64, "hostlist": "n[1-64]"}
    driver = next(d for d in fleet["differences"] if d["path"] == "cuda.nvml.driver_version")
    assert driver["must_agree"] and driver["label"] == "NVIDIA driver"
    assert driver["majority"] == {"value": "550.54.14", "count": 63, "nodes": "n[1-16,18-64]"}
    assert driver["outliers"] == [{"value": "535.104.05", "count": 1, "nodes": "n17"}]
    lib = next(d for d in fleet["differences"] if d["path"] == "r.lib_paths")
    assert not lib["must_agree"] and lib["outliers"][0]["nodes"] == "n[3,40]"
    # timings and GPU UUIDs differ on every node, and are not differences between nodes
    assert {d["path"] for d in fleet["differences"]} == {"cuda.nvml.driver_version", "r.lib_paths"}
    first_id = base_report[1]["findings"][0]["id"]
    row = next(r for r in fleet["findings"] if r["id"] == first_id)
    assert row["by_status"]["fail"]["nodes"] == "n18" and row["by_status"]["fail"]["message"] == "node 18 fails"
    assert row["majority"] == "ok" and row["by_status"]["ok"]["count"] == 63
    statuses = {f["id"]: f["status"] for f in data["findings"]}
    assert statuses["FACT:cuda.nvml.driver_version"] == "fail" and statuses["FACT:r.lib_paths"] == "warn"
    assert len(fleet["groups"]) == 2  # n18's row of statuses, everyone else's


def test_text_says_which_nodes_differ_in_one_line_each(cli, fleet_dir):
    out = cli("fleet", "report", str(fleet_dir), env={"COLUMNS": "200"})
    assert out.returncode == 1
    assert "n17: NVIDIA driver 535.104.05; the other 63 node(s): 550.54.14" in out.stdout
    assert "fail on n18; ok on the other 63 node(s)" in out.stdout


def test_a_difference_that_need_not_agree_passes_unless_strict(cli, tmp_path, base_report):
    helper, base = base_report
    helper.write_fleet(tmp_path / "f", base, 5, odd_lib={2})
    assert cli("fleet", "report", str(tmp_path / "f")).returncode == 0
    assert cli("fleet", "report", str(tmp_path / "f"), "--strict").returncode == 1


def test_junit_has_one_case_per_node_and_finding(cli, fleet_dir, base_report):
    out = cli("fleet", "report", str(fleet_dir), "--format", "junit")
    root = ET.fromstring(out.stdout)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites][:3] == ["n1", "n2", "n3"] and len(suites) == 64
    per_node = len(base_report[1]["findings"])
    assert int(root.get("tests")) == 64 * per_node
    failed = [(s.get("name"), c.get("name")) for s in suites for c in s.findall("testcase") if c.find("failure") is not None]
    assert failed == [("n18", base_report[1]["findings"][0]["id"])]


def test_markdown_and_html_render(cli, fleet_dir):
    md = cli("fleet", "report", str(fleet_dir), "--format", "markdown")
    assert md.returncode == 1 and "n17" in md.stdout
    page = cli("fleet", "report", str(fleet_dir), "--format", "html")
    assert page.stdout.startswith("<!DOCTYPE html>") and "<td>n[1-17,19-64]</td><td>63</td>" in page.stdout
    assert "<script" not in page.stdout and "http" not in page.stdout.split("<body>")[1]


def test_an_unreadable_report_is_a_finding_not_a_crash(cli, tmp_path, base_report):
    helper, base = base_report
    helper.write_fleet(tmp_path / "f", base, 3)
    (tmp_path / "f" / "n4.json").write_text("{not json")
    (tmp_path / "f" / "n5.json").write_text('{"something": "else"}')
    out, data = _json(cli, str(tmp_path / "f"))
    assert out.returncode == 1
    row = next(r for r in data["facts"]["fleet"]["findings"] if r["id"] == "FLEET-UNREADABLE")
    assert row["by_status"]["error"]["nodes"] == "n[4-5]"


@pytest.mark.parametrize("setup, message", [
    (lambda d: None, "cannot read report"),
    (lambda d: d.mkdir(), "no reports (*.json) in directory"),
])
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, setup, message):
    target = tmp_path / "missing"
    setup(target)
    out = cli("fleet", "report", str(target))
    assert out.returncode == 2 and out.stdout == ""
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_memory_grows_with_differences_not_with_nodes(tmp_path, base_report):
    """600 nodes alike but two: the state kept is a handful of ranges, counted, not a list per node."""
    helper, base = base_report
    directory = tmp_path / "many"
    helper.write_fleet(directory, base, 600, odd_driver={200}, odd_lib={450})
    agg = Aggregator()
    for node, report in read_reports(report_files([str(directory)])):
        agg.add(node, report)
    kept_ranges = sum(len(ns.ranges) for fv in agg.differences.values() for ns in fv.values.values())
    assert set(agg.differences) == {("cuda", "nvml", "driver_version"), ("r", "lib_paths")}
    assert kept_ranges == 2  # the two outliers; the majorities are implied by the reference
    assert sum(len(ns.ranges) for ns in agg.groups.values()) == 1 and len(agg.nodes) == 600
