#!/usr/bin/env python3
"""Re-run every `$ rcompat …` sample in README.md and docs/*.md (`make docs-check`, issue 20.10).

A sample is a line `$ rcompat ARGS   # exit N, …` in a code block, followed by the output it shows. Each
is run again on this machine, in a scratch directory that sees the repository's fixtures/, tests/ and
docs/ (so files a sample writes land there, and later samples of the same page can read them), and
must:

- exit with the code its comment states (`# exit 1`; no statement: 0);
- print every finding line it shows (`  STATUS  ID …`) with the same status and id: titles carry
  counts and versions of the machine the sample was taken on, so they are not compared.

A sample that needs what the repository does not ship (a user's image tarball, an R library with a
stand-in package) is listed in NOT_RUN with the reason, and reported, never silently passed.
Exit 0 when every runnable sample holds, 1 otherwise (each failure named with its page and line).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SAMPLE = re.compile(r"^\s*\$ (rcompat\b.*?)\s*(?:#\s*(.*))?$")
FINDING = re.compile(r"^\s+(OK|WARN|FAIL|SKIP|ERROR)\s+([A-Z0-9][A-Z0-9+_.-]*[A-Z0-9+])\b")
EXIT = re.compile(r"\bexit (\d+)")
# Inputs a sample names that the repository does not hold: (page, a word of the command) -> why.
NOT_RUN = {
    ("upgrade.md", "evil.tar"): "a hostile image tarball made by hand for the page",
    ("upgrade.md", "cut.tar"): "half of a `docker save` of a real image",
    ("parity.md", "my_cases.py"): "a user's own cases file, shown above the sample",
    ("parity.md", "R_LIBS="): "an R library with a stand-in torch package",
    ("race.md", "/tmp/race-trace.json"): "a full 9.8 s race run (tests/race covers it)",
    ("parity.md", "r.npz"): "the record the R_LIBS sample above makes",
    ("elf-diff.md", "libdemo"): "libraries tests/elf/_diff_build.py compiles from fixtures/elf during the tests",
    ("elf-diff.md", "libc10.so"): "two builds of libc10.so, old/ and new/",
    ("elf.md", "--root /tmp/demo"): "a root filesystem tests/elf/test_root.py builds",
    ("elf.md", "chain/"): "libraries tests/elf compiles from fixtures/elf during the tests",
    ("elf.md", "prov/"): "libraries tests/elf compiles from fixtures/elf during the tests",
    ("elf.md", "core/v1"): "libraries tests/elf compiles from fixtures/elf during the tests",
}
TIMEOUT_S = 300


def samples(page: Path):
    """(line number, command, comment, the finding lines shown under it) of each sample."""
    lines = page.read_text().splitlines()
    for i, line in enumerate(lines):
        m = SAMPLE.match(line)
        if not m:
            continue
        shown, indented = [], line.startswith((" ", "\t"))
        for after in lines[i + 1:]:
            if SAMPLE.match(after) or after.startswith("```"):
                break
            if indented and after.strip() and not after.startswith((" ", "\t")):
                break  # an indented block ends at the next paragraph; a fenced one at its fence
            f = FINDING.match(after)
            if f:
                shown.append((f.group(1), f.group(2)))
        yield i + 1, m.group(1), m.group(2) or "", shown


def skipped(page: Path, command: str) -> str | None:
    return next((why for (name, word), why in NOT_RUN.items() if page.name == name and word in command), None)


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "", "NO_COLOR": "1"}
    command = command.replace("/work/main/", f"{REPO}/")  # samples taken in the main checkout
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def check_page(page: Path) -> tuple[list[str], list[str], int]:
    failures, not_run, ran = [], [], 0
    with tempfile.TemporaryDirectory(prefix="rcompat-docs-") as scratch:
        for name in ("fixtures", "tests", "docs", "rcompat", "scripts"):
            os.symlink(REPO / name, Path(scratch, name))
        for lineno, command, comment, shown in samples(page):
            where = f"{page.relative_to(REPO) if page.is_relative_to(REPO) else page}:{lineno}"
            why = skipped(page, command)
            if why:
                not_run.append(f"{where}: not run ({why}): {command}")
                continue
            ran += 1
            want = EXIT.search(comment)
            expected = int(want.group(1)) if want else 0
            got = run(command, Path(scratch))
            if "; echo $?" in command or "|" in command:  # the sample shows the code itself / a pipe's
                expected = got.returncode if not want else expected
            if got.returncode != expected:
                failures.append(f"{where}: exit {got.returncode}, the page says {expected}: {command}\n"
                                f"    {(got.stderr or got.stdout).strip().splitlines()[-1:] }")
                continue
            printed = {(m.group(1), m.group(2)) for m in map(FINDING.match, got.stdout.splitlines()) if m}
            missing = [f"{s} {i}" for s, i in shown if (s, i) not in printed]
            if missing:
                failures.append(f"{where}: shows {', '.join(missing)}, not printed now: {command}")
    return failures, not_run, ran


def main() -> int:
    failures, not_run, ran = [], [], 0
    for page in PAGES:
        f, n, r = check_page(page)
        failures += f
        not_run += n
        ran += r
    for line in not_run:
        print(line)
    for line in failures:
        print("FAIL " + line)
    print(f"docs-check: {ran} sample(s) re-run, {len(failures)} failing, {len(not_run)} not runnable here")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
