"""`rcompat lock check FILE`: the R and package versions a lockfile pins, against the R breakage rules.

Supported formats (detected from the content, not the file name):

- renv (`renv.lock`): JSON with `R.Version` and `Packages.<name>.Version`; a `Python.Version` section
  (renv::use_python) is recorded but Python packages live in requirements.txt, which is not read.
- pak / pkgdepends (`pkg.lock`, from pak::lockfile_create()): JSON with `lockfile_version` and a
  `packages` list of {"package", "version", …}; R's version from `r_version` ("R version 4.3.1 (…)").

Anything else — invalid JSON, a JSON document of another shape — is a LockfileError (exit 2) that says
what was expected. A pin that a rule marks broken is that rule's finding (fail → exit 1).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rcompat.errors import RcompatError, UsageError
from rcompat.inputs import read_input
from rcompat.model import Finding, Report, Status
from rcompat.versions import Version, shown

AREA = "lock"
_R_VERSION = re.compile(r"([0-9]+\.[0-9]+(?:\.[0-9]+)?)")


class LockfileError(RcompatError):
    """The file is not a lockfile rcompat can read; the message says which formats it knows."""


@dataclass
class Lockfile:
    path: str
    format: str  # renv | pak
    r_version: str | None
    packages: dict[str, str] = field(default_factory=dict)
    python_version: str | None = None
    unparsed: dict[str, str] = field(default_factory=dict)  # pins whose version is not a version

    def stack(self) -> dict[str, str]:
        """What the R rules evaluate: "R" plus every package pinned with a comparable version."""
        stack = dict(self.packages)
        if self.r_version:
            stack["R"] = self.r_version
        return stack

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "r_version": self.r_version,
                "python_version": self.python_version, "packages": dict(self.packages),
                "unparsed": dict(self.unparsed)}


def read_lockfile(path: "str | Path") -> Lockfile:
    from rcompat.documents import parse_json

    doc = parse_json(read_input(path, "json", error=LockfileError), str(path), LockfileError,
                     hint="expected an renv.lock or a pak pkg.lock")
    if isinstance(doc, dict) and isinstance(doc.get("Packages"), dict):
        return _from_renv(str(path), doc)
    if isinstance(doc, dict) and "lockfile_version" in doc and isinstance(doc.get("packages"), list):
        return _from_pak(str(path), doc)
    raise LockfileError(f"{path}: unknown lockfile format; expected renv.lock (an object with "
                        "\"Packages\") or pak's pkg.lock (\"lockfile_version\" and a \"packages\" list)")


def _from_renv(path: str, doc: dict[str, Any]) -> Lockfile:
    r = doc.get("R") if isinstance(doc.get("R"), dict) else {}
    lock = Lockfile(path, "renv", _clean_r_version(r.get("Version")))
    py = doc.get("Python")
    if isinstance(py, dict) and py.get("Version"):
        lock.python_version = str(py["Version"])
    for key, record in doc["Packages"].items():
        if not isinstance(record, dict):
            raise LockfileError(f"{path}: Packages.{key} is not an object")
        _pin(lock, str(record.get("Package") or key), record.get("Version"))
    return lock


def _from_pak(path: str, doc: dict[str, Any]) -> Lockfile:
    lock = Lockfile(path, "pak", _clean_r_version(doc.get("r_version")))
    for i, record in enumerate(doc["packages"]):
        if not isinstance(record, dict) or not record.get("package"):
            raise LockfileError(f"{path}: packages[{i}] has no \"package\" name")
        _pin(lock, str(record["package"]), record.get("version"))
    return lock


def _pin(lock: Lockfile, name: str, version: Any) -> None:
    text = "" if version is None else str(version).strip()
    try:
        Version.parse(text)
    except ValueError:
        lock.unparsed[name] = text
        return
    lock.packages[name] = text


def _clean_r_version(value: Any) -> str | None:
    if value is None:
        return None
    m = _R_VERSION.search(str(value))
    return m.group(1) if m else None


def check_lockfile(path: "str | Path", rules_path: "str | Path | None" = None,
                   cuda: str | None = None, min_confidence: str = "unverified") -> Report:
    """Findings for the pins in `path`: one summary of what was read, then every rule that fires (a
    failing claim less confident than `min_confidence` is reported as a warning)."""
    from rcompat.cuda.tables import version
    from rcompat.tools.engines import below_confidence, cuda_layer_findings, load_r_rules, r_rule_findings

    if cuda is not None and version(cuda.strip()) is None:  # refused before reading, not silently ignored
        raise UsageError(f"--cuda {shown(cuda)} is not a CUDA version (e.g. 12.4)")
    lock = read_lockfile(path)
    report = Report(command="lock check")
    report.facts[AREA] = lock.to_dict()
    n = len(lock.packages) + len(lock.unparsed)
    report.add(Finding(
        id="LOCK-READ", area=AREA, status=Status.OK,
        title=f"{lock.format} lockfile: R {lock.r_version or '(not recorded)'}, {n} package(s)",
        message=f"Read {lock.path} as {lock.format}.",
        evidence={"format": lock.format, "r_version": lock.r_version, "packages": n}))
    if lock.unparsed:
        report.add(Finding(
            id="LOCK-UNPARSED-PINS", area=AREA, status=Status.WARN,
            title=f"{len(lock.unparsed)} pin(s) without a comparable version were not checked",
            message=", ".join(f"{k} {v!r}" for k, v in sorted(lock.unparsed.items())),
            remedy="Pin an exact released version so the rules can judge it.",
            evidence={"unparsed": lock.unparsed}))
    rules = load_r_rules(rules_path) if rules_path else None
    hits = below_confidence(r_rule_findings(lock.stack(), rules, area=AREA), min_confidence)
    report.add(hits)
    if not hits:
        report.add(Finding(
            id="LOCK-RULES", area=AREA, status=Status.OK, title="no R rule fires on the pinned versions",
            message=f"Checked R {lock.r_version or '?'} and {len(lock.packages)} package pin(s) against "
                    f"{'the rules in ' + str(rules_path) if rules_path else 'rcompat/data/r_rules.toml'}."))
    if cuda and "torch" in lock.packages:
        report.add(below_confidence(cuda_layer_findings({"rtorch": lock.packages["torch"], "cuda": cuda.strip()}),
                                    min_confidence))
    elif cuda:
        report.add(Finding(
            id="LOCK-CUDA", area=AREA, status=Status.SKIP,
            title=f"--cuda {cuda.strip()} not checked: the lockfile pins no R torch",
            message=f"{lock.path} pins no version of the R package torch, so there is no LibTorch build "
                    "to judge against the CUDA tables.",
            remedy="Pin torch in the lockfile, or leave out --cuda."))
    return report
