#!/usr/bin/env python3
"""How long `make test` takes for the tests issue 31 timed: the goal is at most half of 8 min 16 s
(496 s, serial, 1,466 passed and 4 skipped at d972781), so at most 248 s on a warm, quiet 2-core machine.

Runs pytest exactly as `make test` does (`-n CPUs+1 --dist loadgroup`, or --workers), keeping only today's
tests for the ids collected at d972781 (benchmarks/suite_ids_d972781.txt; tests renamed or moved since
are followed, see _suite_plugin.py; --all runs every test), and reports the wall time, the CPU time of
pytest and every process it reaped (user + system), the count of each outcome and the load average.
The per-test profile (--profile DIR) says where the CPU goes: the costliest tests and modules, and what
each worker did, including the serial groups' chains (a group runs on one worker, so its chain bounds
the wall time). Not a `bench_*.py`: `make bench` does not run it (minutes of both cores).
Exit 1 when a test fails or the wall time misses --goal.

    .venv/bin/python benchmarks/suite_time.py                 # the measurement of the goal
    .venv/bin/python benchmarks/suite_time.py --workers 0     # serial, as the issue timed it
    .venv/bin/python benchmarks/suite_time.py --top 40 -- tests/elf   # extra pytest arguments after --
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BASELINE_S = 496.0  # issue 31: 8 min 16 s, serial, at d972781


def run_suite(workers: str, ids: Path | None, profile: Path, extra: list[str]) -> dict:
    env = dict(os.environ, RCOMPAT_SUITE_PROFILE=str(profile),
               PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as the Makefile: byte code written and kept
    if ids:
        env["RCOMPAT_SUITE_IDS"] = str(ids)
    argv = [sys.executable, "-m", "pytest", "-p", "_suite_plugin", "-q", "--no-header"]
    if workers != "0":
        argv += ["-n", workers, "--dist", "loadgroup"]
    log = profile / "pytest.log"
    load_before = os.getloadavg()
    start = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(argv + extra, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=_default_signals)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    summary = json.loads((profile / "summary.json").read_text()) if (profile / "summary.json").exists() else {}
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "exit": os.waitstatus_to_exitcode(status),
            "load_before": load_before, "load_after": os.getloadavg(), "log": str(log), **summary}


def _default_signals() -> None:
    """pytest gets SIGINT and SIGHUP as in a terminal, even when this script was started with them
    ignored (`nohup`, `&` in a script): tests of rcompat's signal handling send them on purpose."""
    import signal

    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def read_profile(profile: Path) -> list[dict]:
    rows = []
    for path in profile.glob("*.jsonl"):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def analyse(rows: list[dict], top: int) -> dict:
    """CPU per test and per module, each worker's busy time and its chain of serial-group tests."""
    per_test: dict[str, dict] = defaultdict(lambda: {"cpu": 0.0, "wall": 0.0, "worker": ""})
    workers: dict[str, dict] = defaultdict(lambda: {"busy": 0.0, "cpu": 0.0, "start": None, "end": 0.0})
    for row in rows:
        cpu = row["cpu_self"] + row["cpu_children"]
        test = per_test[row["id"]]
        test["cpu"] += cpu
        test["wall"] += row["end"] - row["start"]
        test["worker"] = row["worker"]
        worker = workers[row["worker"]]
        worker["busy"] += row["end"] - row["start"]
        worker["cpu"] += cpu
        worker["start"] = row["start"] if worker["start"] is None else min(worker["start"], row["start"])
        worker["end"] = max(worker["end"], row["end"])
    modules: dict[str, float] = defaultdict(float)
    for nodeid, test in per_test.items():
        modules[nodeid.split("::")[0]] += test["cpu"]
    origin = min((w["start"] for w in workers.values()), default=0.0)
    return {
        "tests": len(per_test),
        "test_cpu_s": sum(t["cpu"] for t in per_test.values()),
        "workers": {name: {"busy_s": round(w["busy"], 1), "cpu_s": round(w["cpu"], 1),
                           "first_s": round(w["start"] - origin, 1), "last_s": round(w["end"] - origin, 1)}
                    for name, w in sorted(workers.items())},
        "top_tests": sorted(((round(t["cpu"], 2), round(t["wall"], 2), n) for n, t in per_test.items()),
                            reverse=True)[:top],
        "top_modules": sorted(((round(c, 1), m) for m, c in modules.items()), reverse=True)[:top],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default=str(len(os.sched_getaffinity(0)) + 1),
                        help="pytest-xdist workers, as PYTEST_WORKERS (default: as make test, CPUs + 1; 0: serial)")
    parser.add_argument("--ids", type=Path, default=HERE / "suite_ids_d972781.txt",
                        help="test ids of the earlier commit (default: d972781's)")
    parser.add_argument("--all", action="store_true", help="every test collected today, not only the same ids")
    parser.add_argument("--profile", type=Path, help="keep the per-test profile in this directory")
    parser.add_argument("--top", type=int, default=25, help="how many of the costliest tests and modules to list")
    parser.add_argument("--goal", type=float, default=BASELINE_S / 2, help="wall seconds to stay under (248)")
    parser.add_argument("--json", type=Path, help="write the whole result here")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed on to pytest")
    args = parser.parse_args(argv)
    if not args.all and not args.ids.is_file():
        parser.error(f"no such ids file: {args.ids}")
    profile = args.profile or Path(tempfile.mkdtemp(prefix="rcompat-suite-"))
    profile.mkdir(parents=True, exist_ok=True)
    for stale in [*profile.glob("*.jsonl"), *profile.glob("*.json")]:
        stale.unlink()
    result = run_suite(args.workers, None if args.all else args.ids, profile, args.pytest_args)
    result["profile"] = analyse(read_profile(profile), args.top)
    cores = len(os.sched_getaffinity(0))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    prof = result["profile"]
    print("costliest tests (CPU s, wall s)")
    for cpu, wall, nodeid in prof["top_tests"]:
        print(f"  {cpu:7.2f} {wall:7.2f}  {nodeid}")
    print("costliest modules (CPU s)")
    for cpu, module in prof["top_modules"]:
        print(f"  {cpu:7.1f}  {module}")
    for name, worker in prof["workers"].items():
        print(f"worker {name}: busy {worker['busy_s']} s, CPU {worker['cpu_s']} s, "
              f"from {worker['first_s']} s to {worker['last_s']} s")
    collected = result.get("collected") or {}
    if collected:
        gone = collected["gone"]
        print(f"same tests: {collected['old']} ids at d972781 -> {collected['matched']} today; "
              f"{len(gone)} without a successor here: {', '.join(gone[:5]) or 'none'}{' ...' if len(gone) > 5 else ''}")
    print(f"outcomes: {result.get('outcomes')}; failed: {result.get('failed') or 'none'}")
    busy = result["cpu_s"] / (result["wall_s"] * cores)
    ok = result["exit"] == 0 and result["wall_s"] <= args.goal
    print(f"wall {result['wall_s']:.1f} s, CPU {result['cpu_s']:.1f} s ({busy:.0%} of {cores} cores), "
          f"load {result['load_before'][0]:.2f} -> {result['load_after'][0]:.2f}; goal <= {args.goal:.0f} s wall: "
          f"{'met' if result['wall_s'] <= args.goal else 'MISSED'}; pytest exit {result['exit']} (log {result['log']})")
    if os.environ.get("RCOMPAT_BENCH_OUT"):
        sys.path.insert(0, str(HERE))
        from _common import record

        record("suite_time", f"make test, the {collected.get('matched', '?')} tests of d972781, wall",
               result["wall_s"], "issue 31's serial run", BASELINE_S, goal=0.5)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
