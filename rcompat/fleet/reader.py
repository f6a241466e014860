"""Which reports `fleet report` reads, and reading each: a directory's *.json files or the files
named, each node named by its file (`n17.json` -> n17), read in natural node order (n2 before n10)."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Iterable, Iterator

from rcompat.errors import RcompatError, UsageError
from rcompat.fleet.hostlist import natural_key
from rcompat.inputs import file_problem, kind_of_mode, limit_bytes, size_problem

SCHEMA_VERSION = 1  # rcompat.model.SCHEMA_VERSION, the only report schema a node writes


def report_files(inputs: Iterable[str]) -> list[tuple[str, Path]]:
    """(node, path) for every report named or in a directory named; UsageError for a missing input, a
    directory without reports or two files for one node."""
    found: dict[str, Path] = {}
    for given in inputs:
        path = Path(given)
        if path.is_dir():
            files = [Path(entry.path) for entry in os.scandir(path)
                     if entry.name.endswith(".json") and not entry.name.startswith(".")]
            if not files:
                raise UsageError(f"no reports (*.json) in directory {given}")
        else:
            problem = file_problem(path)
            if problem:
                raise UsageError(f"cannot read report {given}: {problem}")
            files = [path]
        for file in files:
            node = file.name[: -len(".json")] if file.name.endswith(".json") else file.name
            if node in found and found[node] != file:
                raise UsageError(f"two reports for node {node}: {found[node]} and {file}")
            found[node] = file
    if not found:
        raise UsageError("no reports given")
    return sorted(found.items(), key=lambda item: natural_key(item[0]))


def read_reports(files: list[tuple[str, Path]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(node, report) in order; a report that cannot be read or is not an rcompat report becomes a
    stand-in report with one `error` finding saying why, so the node is never a silent gap."""
    limit = limit_bytes("json")
    for node, path in files:
        try:
            report = json.loads(_read(path, limit))
        except RcompatError as exc:
            yield node, stand_in(node, "FLEET-UNREADABLE", f"report of {node} unreadable", str(exc))
            continue
        except (ValueError, RecursionError) as exc:
            yield node, stand_in(node, "FLEET-UNREADABLE", f"report of {node} is not JSON",
                                 f"{path}: not valid JSON ({' '.join(str(exc).split())[:200]})")
            continue
        if not isinstance(report, dict) or report.get("schema_version") != SCHEMA_VERSION:
            yield node, stand_in(node, "FLEET-UNREADABLE", f"report of {node} is not an rcompat report",
                                 f"{path}: no schema_version {SCHEMA_VERSION} object (is it an rcompat JSON report?)")
            continue
        yield node, report


def _read(path: Path, limit: int) -> bytes:
    """The bytes of one report: opened without blocking (a FIFO put in its place is refused, never
    waited on), checked to be a regular file within the JSON size limit on the open descriptor, read
    with no file object in between (10,000 of these are most of `fleet report`'s time)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise RcompatError(f"cannot read report {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RcompatError(f"cannot read report {path}: is {kind_of_mode(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise RcompatError(f"cannot read report {path}: {size_problem(st.st_size, 'json')}")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, max(st.st_size + 1 - total, 1 << 16))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise RcompatError(f"cannot read report {path}: {size_problem(total, 'json')}")
    except OSError as exc:
        raise RcompatError(f"cannot read report {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def stand_in(node: str, fid: str, title: str, message: str, remedy: str = "",
             evidence: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report of a node that gave none: one `error` finding, no facts."""
    return {"schema_version": SCHEMA_VERSION, "command": "fleet", "node": node,
            "findings": [{"id": fid, "area": "fleet", "status": "error", "title": title, "message": message,
                          "remedy": remedy, "evidence": evidence or {}, "source": "", "confidence": "",
                          "duration_s": None}],
            "facts": {}}
