#!/usr/bin/env python3
"""Regenerate docs/performance.md from a real benchmark run: never a hand-typed figure.

Runs every benchmarks/bench_*.py (each one also runs on its own) with RCOMPAT_BENCH_OUT naming a
results file, to which each benchmark appends one JSON line per measured ratio through
benchmarks/_common.py:record(); then writes the table (benchmark, what, rcompat seconds, standard
tool and its seconds, ratio, goal, met?), the machine it ran on and the command that regenerated it,
atomically. `--from FILE` renders a results file saved earlier (`--save FILE` keeps one) instead of
running anything. Exit 1 when a benchmark failed or missed its goal (the document is written anyway,
saying so), 2 on bad input.

    .venv/bin/python scripts/perf_table.py                  # what `make bench` runs
    .venv/bin/python scripts/perf_table.py --from results.jsonl --output /tmp/perf.md
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rcompat.atomic import write_text_atomic  # noqa: E402

ROW_FIELDS = ("benchmark", "what", "rcompat_s", "tool", "tool_s", "ratio", "goal", "ok")


class ResultsError(Exception):
    """A results file that cannot be rendered (names the file and the line)."""


def machine_facts() -> dict:
    """What the figures depend on: cores, CPU, Python, torch, OS, load when the run started, date."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or "unknown")
    os_name = next((line.split("=", 1)[1].strip().strip('"') for line in _read("/etc/os-release").splitlines()
                    if line.startswith("PRETTY_NAME=")), platform.platform())
    try:
        from importlib.metadata import PackageNotFoundError, version

        torch = version("torch")
    except PackageNotFoundError:
        torch = "not installed"
    return {"cores": len(os.sched_getaffinity(0)), "cpu": cpu, "os": os_name, "python": platform.python_version(),
            "torch": torch, "load_average": round(os.getloadavg()[0], 2),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def run_benchmarks(results: Path, names: list[str] | None) -> list[str]:
    """Run the benchmarks (all, or those named) one after another; return those that failed."""
    scripts = sorted((REPO / "benchmarks").glob("bench_*.py"))
    if names:
        unknown = set(names) - {s.stem for s in scripts}
        if unknown:
            raise ResultsError(f"no such benchmark: {', '.join(sorted(unknown))} (see benchmarks/bench_*.py)")
        scripts = [s for s in scripts if s.stem in names]
    env = dict(os.environ, RCOMPAT_BENCH_OUT=str(results))
    failed = []
    for script in scripts:
        print(f"== {script.relative_to(REPO)}", flush=True)
        start = time.monotonic()
        code = subprocess.run([sys.executable, str(script)], env=env, cwd=str(REPO)).returncode
        print(f"   ({time.monotonic() - start:.0f} s, exit {code})", flush=True)
        if code != 0:
            failed.append(script.stem)
    return failed


def read_results(path: Path) -> tuple[dict | None, list[dict], list[str]]:
    """(machine facts, ratio rows, failed benchmarks) of a JSON-lines results file."""
    machine, rows, failed = None, [], []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read {path}: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(item, dict):
            raise ResultsError(f"{path}:{number}: expected a JSON object")
        if "machine" in item:
            machine = item["machine"]
        elif "failed" in item:
            failed += list(item["failed"])
        else:
            missing = [f for f in ROW_FIELDS if f not in item]
            if missing:
                raise ResultsError(f"{path}:{number}: a result row lacks {', '.join(missing)}")
            numbers = [item[f] for f in ("rcompat_s", "tool_s", "ratio")] + ([item["goal"]] if item["goal"] is not None else [])
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in numbers):
                raise ResultsError(f"{path}:{number}: rcompat_s, tool_s, ratio and goal must be numbers")
            rows.append(item)
    return machine, rows, failed


def missed_goals(rows: list[dict]) -> list[dict]:
    """The rows that have a goal and missed it."""
    return [r for r in rows if r["goal"] is not None and not r["ok"]]


def render(machine: dict | None, rows: list[dict], failed: list[str], command: str) -> str:
    """docs/performance.md: the ratios table, the machine, the regenerating command."""
    out = ["# Performance", "",
           f"Generated by `scripts/perf_table.py` from one run of `benchmarks/`; regenerate with `{command}`, "
           "do not edit by hand.", "",
           "Each row is a ratio measured in the same run on the same input: rcompat's time divided by the "
           "standard tool's, best of several runs each (lower is better; below 1 rcompat is faster). "
           "Whole processes, interpreter start-up included, unless the row says otherwise. A loaded machine "
           "slows both sides, so the ratio moves much less than the seconds; each benchmark's docstring "
           "says what it also asserts (same symbols, same sets, same versions).", "",
           "| benchmark | what | rcompat | standard tool | tool | ratio | goal | met? |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        goal = f"≤ {r['goal']:g}×" if r["goal"] is not None else "—"
        met = "—" if r["goal"] is None else ("yes" if r["ok"] else "**no**")
        what = r["what"] + (f" ({r['note']})" if r.get("note") else "")
        out.append(f"| `{r['benchmark']}` | {_cell(what)} | {r['rcompat_s']:.3f} s | {_cell(r['tool'])} | "
                   f"{r['tool_s']:.3f} s | {r['ratio']:.2f}× | {goal} | {met} |")
    if not rows:
        out.append("| — | no results | | | | | | |")
    missed = missed_goals(rows)
    # a benchmark exits 1 when one of its rows misses its goal: that is said by the row, not as a failure
    # (rows name their benchmark either by the script's stem or by it without `bench_`, `-` for `_`)
    missed_by = {r["benchmark"] for r in missed}
    failed = [b for b in failed if not {b, b.removeprefix("bench_").replace("_", "-")} & missed_by]
    out += [""]
    if failed or missed:
        out.append("**Not all met:** " + "; ".join(
            [f"`{b}` failed (an assertion or an error; see its output)" for b in failed]
            + [f"`{r['benchmark']}`: {r['what']} at {r['ratio']:.2f}× (goal ≤ {r['goal']:g}×)" for r in missed]) + ".")
    else:
        out.append("Every benchmark ran, and every goal was met.")
    out += ["", "## Machine", ""]
    if machine:
        out += [f"- {machine.get('cores', '?')} cores: {machine.get('cpu', '?')}",
                f"- {machine.get('os', '?')}, Python {machine.get('python', '?')}, torch {machine.get('torch', '?')}",
                f"- load average {machine.get('load_average', '?')} when the run started",
                f"- {machine.get('date', '?')}"]
    else:
        out.append("- not recorded in the results file")
    out += ["", "## Regenerate", "", "```", command, "```",
            "", "Each benchmark also runs on its own, e.g. `.venv/bin/python benchmarks/bench_elf_symbols.py`; "
            "see [benchmarks/README.md](../benchmarks/README.md).", ""]
    return "\n".join(out)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run the benchmarks and write docs/performance.md from their results.")
    ap.add_argument("--from", dest="source", metavar="FILE", type=Path,
                    help="render this JSON-lines results file instead of running the benchmarks")
    ap.add_argument("--save", metavar="FILE", type=Path, help="also keep the results of this run in FILE")
    ap.add_argument("--output", "-o", metavar="FILE", type=Path, default=REPO / "docs/performance.md",
                    help="where to write the document (default: docs/performance.md)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these benchmarks (e.g. bench_elf_symbols)")
    args = ap.parse_args(argv)
    try:
        if args.source is not None:
            machine, rows, failed = read_results(args.source)
            command = f"python scripts/perf_table.py --from {args.source}"
        else:
            with tempfile.TemporaryDirectory(prefix="rcompat-bench-") as tmp:
                results = Path(tmp) / "results.jsonl"
                results.write_text(json.dumps({"machine": machine_facts()}) + "\n", encoding="utf-8")
                failed_now = run_benchmarks(results, args.only)
                with open(results, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"failed": failed_now}) + "\n")
                if args.save:
                    write_text_atomic(args.save, results.read_text(encoding="utf-8"))
                machine, rows, failed = read_results(results)
            command = "make bench" if not args.only else "python scripts/perf_table.py --only " + " ".join(args.only)
        write_text_atomic(args.output, render(machine, rows, failed, command))
    except (ResultsError, OSError) as exc:
        sys.stderr.write(f"perf_table: error: {exc}\n")
        return 2
    print(f"wrote {args.output}")
    return 1 if failed or missed_goals(rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
