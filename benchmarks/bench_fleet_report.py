"""`rcompat fleet report` over 10,000 node reports (issue 25: <= 1.5x reading the same files with
json.load alone), in bounded memory and linear time.

The reports are varied from a real doctor report made here (tests/fleet/_reports.py: every node its
own timings and GPU UUID, 1% another NVIDIA driver, 0.5% another R library first, 0.2% a failing
check), written once to a temp directory. Times, best of --repeat: json.load of every file alone (the
floor: any reader must parse them), rcompat's reader + aggregator + fleet view in process, and the
whole `rcompat fleet report DIR --format json` process. Memory: the peak RSS of that process at 1,000
and at --nodes reports (os.wait4's ru_maxrss), and its time at both, to show both grow with the files,
not faster. Asserts the outliers are found.

    .venv/bin/python benchmarks/bench_fleet_report.py [--nodes 10000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import best_of, record  # benchmarks/ is sys.path[0] when a benchmark runs

REPO = Path(__file__).resolve().parent.parent


def _reports_helper():
    spec = importlib.util.spec_from_file_location("fleet_reports", REPO / "tests" / "fleet" / "_reports.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(directory: Path, base: dict, count: int, helper) -> None:
    odd = {"odd_driver": set(range(37, count + 1, 100)), "odd_lib": set(range(11, count + 1, 200)),
           "failing": set(range(5, count + 1, 500))}
    helper.write_fleet(directory, base, count, **odd)


def _json_load_all(directory: Path) -> None:
    for path in sorted(directory.iterdir()):
        with open(path, "rb") as fh:
            json.load(fh)


def _aggregate(directory: Path):
    from rcompat.fleet.aggregate import Aggregator
    from rcompat.fleet.reader import read_reports, report_files
    from rcompat.fleet.view import fleet_report

    agg = Aggregator()
    for node, report in read_reports(report_files([str(directory)])):
        agg.add(node, report)
    return fleet_report(agg)


def _process(directory: Path) -> tuple[float, int, str]:
    """(seconds, peak RSS in KiB, stdout) of one whole `rcompat fleet report` process."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "rcompat", "fleet", "report", str(directory), "--format",
                                 "json", "--quiet"], stdout=out, stderr=subprocess.DEVNULL, cwd=str(REPO))
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"rcompat fleet report exited {proc.returncode}")
    return elapsed, usage.ru_maxrss, text


def main() -> int:
    ap = argparse.ArgumentParser(description="rcompat fleet report over many node reports vs json.load")
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    helper = _reports_helper()
    base = helper.doctor_report(("system", "python", "r", "cuda", "elf"), timeout=600)
    size = len(json.dumps(base, indent=2))
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        _write(small, base, 1_000, helper)
        _write(large, base, args.nodes, helper)
        report = _aggregate(large)
        driver = next(d for d in report.facts["fleet"]["differences"] if d["path"] == "cuda.nvml.driver_version")
        expected = len(range(37, args.nodes + 1, 100))
        if driver["outliers"][0]["count"] != expected:
            raise SystemExit(f"found {driver['outliers']} where {expected} nodes have another driver")
        floor = best_of(args.repeat, lambda: _json_load_all(large))
        in_process = best_of(args.repeat, lambda: _aggregate(large))
        runs_small = [_process(small) for _ in range(args.repeat)]
        runs_large = [_process(large) for _ in range(args.repeat)]
    whole_small, rss_small = min(r[0] for r in runs_small), min(r[1] for r in runs_small)
    whole_large, rss_large = min(r[0] for r in runs_large), min(r[1] for r in runs_large)
    print(f"{args.nodes} reports of {size / 1024:.0f} KiB: json.load alone {floor:.2f} s; rcompat in process "
          f"{in_process:.2f} s; whole process {whole_large:.2f} s (1,000 reports {whole_small:.2f} s); "
          f"peak RSS {rss_large / 1024:.0f} MiB (1,000 reports {rss_small / 1024:.0f} MiB)")
    ok = record("fleet", f"fleet report over {args.nodes:,} node reports, in process", in_process,
                "json.load of each file", floor, goal=1.5)
    ok &= record("fleet", f"rcompat fleet report over {args.nodes:,} reports, whole process", whole_large,
                 "json.load of each file", floor,
                 note=f"peak RSS {rss_large / 1024:.0f} MiB at {args.nodes:,} reports, "
                      f"{rss_small / 1024:.0f} MiB at 1,000; {whole_small:.2f} s at 1,000")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
